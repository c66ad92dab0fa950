//! `list.*`: lists of values and references.

use std::sync::Arc;

use super::fault::{Fault, trap};
use super::instance::Instance;
use super::registers::Registers;
use crate::memory_budget::MemoryBudget;
use crate::vm::code::{RefReg, Reg, Reg64};
use crate::vm::error::TrapKind;
use crate::vm::value::{ElementType, Ref, VmList, VmType, type_check};

/// The list in a register, borrowed: an access needs no reference count of its own (only
/// `list.set.ref`, which may overwrite the register it reads the list from, holds one).
#[inline(always)]
fn list_of(value: Option<&Ref>) -> Result<&Arc<VmList>, Fault> {
    match value {
        Some(Ref::List(l)) => Ok(l),
        Some(other) => Err(trap(
            TrapKind::TypeMismatch,
            format!("expected a vm.list, got a {}", other.type_name()),
        )),
        None => Err(trap(TrapKind::NullReference, "null list")),
    }
}

/// The list in register `list` of `refs`, when it holds one: the fast loop's access to
/// lists, which reads reference registers through a shared borrow only. A `list.get`/`set`
/// of a value there runs the same [`VmList`] method as below (its result converted the same
/// way) and leaves anything that fails to the main loop, which runs it again and reports it
/// (a failed access changes nothing).
#[inline(always)]
pub(super) fn peek_list(refs: &[Option<Ref>], list: RefReg) -> Option<&VmList> {
    match refs.get(list.index()) {
        Some(Some(Ref::List(l))) => Some(l),
        _ => None,
    }
}

#[inline(always)]
pub(super) fn alloc(
    r: &mut Registers,
    instance: &Instance,
    memory: Option<&Arc<MemoryBudget>>,
    ty: u32,
    capacity: Reg,
    d: RefReg,
) -> Result<(), Fault> {
    let element = match instance.types.get(ty as usize) {
        Some(VmType::Value(v)) => ElementType::Value(*v),
        Some(VmType::Ref(r)) => ElementType::Ref(r.clone()),
        _ => ElementType::Variant,
    };
    let list = VmList::new(element, r.i32(capacity) as usize, memory)?;
    r.put(d, Some(Ref::List(Arc::new(list))));
    Ok(())
}

#[inline(always)]
pub(super) fn reserve(r: &Registers, list: RefReg, n: Reg) -> Result<(), Fault> {
    Ok(list_of(r.peek(list))?.reserve(r.i32(n) as usize)?)
}

#[inline(always)]
pub(super) fn size(r: &mut Registers, list: RefReg, d: Reg) -> Result<(), Fault> {
    let len = list_of(r.peek(list))?.len();
    r.set_i32(d, len as u32);
    Ok(())
}

#[inline(always)]
pub(super) fn resize(r: &Registers, list: RefReg, n: Reg) -> Result<(), Fault> {
    Ok(list_of(r.peek(list))?.resize(r.i32(n) as usize)?)
}

#[inline(always)]
pub(super) fn get_i32(r: &mut Registers, list: RefReg, i: Reg, d: Reg) -> Result<(), Fault> {
    let v = list_of(r.peek(list))?.get_i32(r.i32(i))? as u32;
    r.set_i32(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn set_i32(r: &Registers, list: RefReg, i: Reg, v: Reg) -> Result<(), Fault> {
    Ok(list_of(r.peek(list))?.set_i32(r.i32(i), r.i32(v) as i32)?)
}

#[inline(always)]
pub(super) fn get_i64(r: &mut Registers, list: RefReg, i: Reg, d: Reg64) -> Result<(), Fault> {
    let v = list_of(r.peek(list))?.get_i64(r.i32(i))? as u64;
    r.set_i64(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn set_i64(r: &Registers, list: RefReg, i: Reg, v: Reg64) -> Result<(), Fault> {
    Ok(list_of(r.peek(list))?.set_i64(r.i32(i), r.i64(v) as i64)?)
}

#[inline(always)]
pub(super) fn get_f32(r: &mut Registers, list: RefReg, i: Reg, d: Reg) -> Result<(), Fault> {
    let v = list_of(r.peek(list))?.get_f32(r.i32(i))?.to_bits();
    r.set_i32(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn set_f32(r: &Registers, list: RefReg, i: Reg, v: Reg) -> Result<(), Fault> {
    Ok(list_of(r.peek(list))?.set_f32(r.i32(i), r.f32(v))?)
}

#[inline(always)]
pub(super) fn get_f64(r: &mut Registers, list: RefReg, i: Reg, d: Reg64) -> Result<(), Fault> {
    let v = list_of(r.peek(list))?.get_f64(r.i32(i))?.to_bits();
    r.set_i64(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn set_f64(r: &Registers, list: RefReg, i: Reg, v: Reg64) -> Result<(), Fault> {
    Ok(list_of(r.peek(list))?.set_f64(r.i32(i), r.f64(v))?)
}

/// `list.get.ref`: an element of the wrong type reads as null.
#[inline(always)]
pub(super) fn get_ref(
    r: &mut Registers,
    instance: &Instance,
    list: RefReg,
    i: Reg,
    ty: u32,
    d: RefReg,
) -> Result<(), Fault> {
    let v = list_of(r.peek(list))?.get_ref(r.i32(i), d.is_move())?;
    let ok = instance
        .types
        .get(ty as usize)
        .is_some_and(|t| type_check(v.as_ref(), t));
    r.put(d, if ok { v } else { None });
    Ok(())
}

#[inline(always)]
pub(super) fn set_ref(r: &mut Registers, list: RefReg, i: Reg, v: RefReg) -> Result<(), Fault> {
    // Held by a count of its own: reading `v` with its MOVE bit may take the list out of
    // its register.
    let l = Arc::clone(list_of(r.peek(list))?);
    let value = r.read_ref(v);
    let index = r.i32(i);
    if let Err(e) = l.set_ref(index, value.clone()) {
        // Nothing changes on failure: put a moved value back.
        if v.is_move() {
            r.put(v, value);
        }
        return Err(Fault::from(e));
    }
    Ok(())
}
