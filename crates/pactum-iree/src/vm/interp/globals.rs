//! `global.*`: loads and stores of a module's value and ref globals.

use super::fault::{Fault, trap, type_mismatch};
use super::instance::Instance;
use super::registers::Registers;
use crate::vm::code::{RefReg, Reg, Reg64};
use crate::vm::error::TrapKind;
use crate::vm::value::{Ref, VmType, type_check};

// Direct offsets were checked against the module's global bytes by the verifier.

#[inline(always)]
pub(super) fn load32(r: &mut Registers, instance: &Instance, offset: u32, d: Reg) {
    let v = instance
        .globals
        .load::<4>(offset as usize)
        .unwrap_or_default();
    r.set_i32(d, u32::from_le_bytes(v));
}

#[inline(always)]
pub(super) fn store32(r: &Registers, instance: &Instance, offset: u32, s: Reg) {
    instance
        .globals
        .store(offset as usize, r.i32(s).to_le_bytes());
}

#[inline(always)]
pub(super) fn load64(r: &mut Registers, instance: &Instance, offset: u32, d: Reg64) {
    let v = instance
        .globals
        .load::<8>(offset as usize)
        .unwrap_or_default();
    r.set_i64(d, u64::from_le_bytes(v));
}

#[inline(always)]
pub(super) fn store64(r: &Registers, instance: &Instance, offset: u32, s: Reg64) {
    instance
        .globals
        .store(offset as usize, r.i64(s).to_le_bytes());
}

#[inline(always)]
pub(super) fn load_indirect32(
    r: &mut Registers,
    instance: &Instance,
    o: Reg,
    d: Reg,
) -> Result<(), Fault> {
    let offset = r.i32(o);
    let Some(v) = instance.globals.load::<4>(offset as usize) else {
        return Err(global_range(offset, 4, instance));
    };
    r.set_i32(d, u32::from_le_bytes(v));
    Ok(())
}

#[inline(always)]
pub(super) fn store_indirect32(
    r: &Registers,
    instance: &Instance,
    o: Reg,
    s: Reg,
) -> Result<(), Fault> {
    let offset = r.i32(o);
    match instance
        .globals
        .store(offset as usize, r.i32(s).to_le_bytes())
    {
        Some(()) => Ok(()),
        None => Err(global_range(offset, 4, instance)),
    }
}

#[inline(always)]
pub(super) fn load_indirect64(
    r: &mut Registers,
    instance: &Instance,
    o: Reg,
    d: Reg64,
) -> Result<(), Fault> {
    let offset = r.i32(o);
    let Some(v) = instance.globals.load::<8>(offset as usize) else {
        return Err(global_range(offset, 8, instance));
    };
    r.set_i64(d, u64::from_le_bytes(v));
    Ok(())
}

#[inline(always)]
pub(super) fn store_indirect64(
    r: &Registers,
    instance: &Instance,
    o: Reg,
    s: Reg64,
) -> Result<(), Fault> {
    let offset = r.i32(o);
    match instance
        .globals
        .store(offset as usize, r.i64(s).to_le_bytes())
    {
        Some(()) => Ok(()),
        None => Err(global_range(offset, 8, instance)),
    }
}

#[inline(always)]
pub(super) fn load_ref(
    r: &mut Registers,
    instance: &Instance,
    global: u32,
    ty: u32,
    d: RefReg,
) -> Result<(), Fault> {
    let v = load_global_ref(instance, global, ty, d.is_move())?;
    r.put(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn load_indirect_ref(
    r: &mut Registers,
    instance: &Instance,
    o: Reg,
    ty: u32,
    d: RefReg,
) -> Result<(), Fault> {
    let global = r.i32(o);
    load_ref(r, instance, global, ty, d)
}

#[inline(always)]
pub(super) fn store_ref(
    r: &mut Registers,
    instance: &Instance,
    global: u32,
    ty: u32,
    s: RefReg,
) -> Result<(), Fault> {
    store_global_ref(instance, r.refs, global, ty, s)
}

#[inline(always)]
pub(super) fn store_indirect_ref(
    r: &mut Registers,
    instance: &Instance,
    o: Reg,
    ty: u32,
    s: RefReg,
) -> Result<(), Fault> {
    let global = r.i32(o);
    store_global_ref(instance, r.refs, global, ty, s)
}

fn global_range(offset: u32, size: u32, instance: &Instance) -> Fault {
    trap(
        TrapKind::OutOfRange,
        format!(
            "global bytes {offset}..{offset}+{size} are outside the module's {} bytes",
            instance.globals.bytes.len()
        ),
    )
}

fn load_global_ref(
    instance: &Instance,
    global: u32,
    ty: u32,
    take: bool,
) -> Result<Option<Ref>, Fault> {
    let mut slots = instance.globals.refs();
    let count = slots.len();
    let Some(slot) = slots.get_mut(global as usize) else {
        return Err(trap(
            TrapKind::OutOfRange,
            format!("ref global {global} is outside the module's {count}"),
        ));
    };
    let ty = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(slot.as_ref(), ty) {
        return Err(type_mismatch(slot.as_ref(), ty));
    }
    Ok(if take { slot.take() } else { slot.clone() })
}

fn store_global_ref(
    instance: &Instance,
    refs: &mut [Option<Ref>],
    global: u32,
    ty: u32,
    s: RefReg,
) -> Result<(), Fault> {
    let ty = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(refs[s.index()].as_ref(), ty) {
        return Err(type_mismatch(refs[s.index()].as_ref(), ty));
    }
    let old;
    {
        let mut slots = instance.globals.refs();
        let count = slots.len();
        let Some(slot) = slots.get_mut(global as usize) else {
            return Err(trap(
                TrapKind::OutOfRange,
                format!("ref global {global} is outside the module's {count}"),
            ));
        };
        let value = super::registers::read_ref(refs, s);
        old = std::mem::replace(slot, value);
    }
    drop(old);
    Ok(())
}
