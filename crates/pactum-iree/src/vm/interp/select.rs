//! `select.*` and `switch.*`.

use super::fault::{Fault, type_mismatch};
use super::instance::Instance;
use super::registers::Registers;
use crate::vm::code::{FunctionCode, RefReg, Reg, Reg64, Span};
use crate::vm::value::{VmType, type_check};

#[inline(always)]
pub(super) fn select32(r: &mut Registers, c: Reg, t: Reg, f: Reg, d: Reg) {
    let v = if r.i32(c) != 0 { r.i32(t) } else { r.i32(f) };
    r.set_i32(d, v);
}

#[inline(always)]
pub(super) fn select64(r: &mut Registers, c: Reg, t: Reg64, f: Reg64, d: Reg64) {
    let v = if r.i32(c) != 0 { r.i64(t) } else { r.i64(f) };
    r.set_i64(d, v);
}

/// `select.ref`: the picked value is type-checked; the other operand is released when it
/// carries MOVE.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn select_ref(
    r: &mut Registers,
    instance: &Instance,
    c: Reg,
    ty: u32,
    t: RefReg,
    f: RefReg,
    d: RefReg,
) -> Result<(), Fault> {
    let (pick, other) = if r.i32(c) != 0 { (t, f) } else { (f, t) };
    let ty = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(r.peek(pick), ty) {
        return Err(type_mismatch(r.peek(pick), ty));
    }
    let v = r.read_ref(pick);
    if other.is_move() && other.index() != d.index() {
        r.put(other, None);
    }
    r.put(d, v);
    Ok(())
}

/// The register `index` selects from `values`, if in range.
#[inline(always)]
fn pick(r: &Registers, code: &FunctionCode, index: Reg, values: Span) -> Option<u16> {
    let list = &code.regs[values.range()];
    usize::try_from(r.i32(index) as i32)
        .ok()
        .and_then(|i| list.get(i))
        .copied()
}

#[inline(always)]
pub(super) fn switch32(
    r: &mut Registers,
    code: &FunctionCode,
    index: Reg,
    default: Reg,
    values: Span,
    d: Reg,
) {
    let v = match pick(r, code, index, values) {
        Some(slot) => r.slot(slot),
        None => r.i32(default),
    };
    r.set_i32(d, v);
}

/// `switch.i64`: a selected value is read as its low 32 bits sign-extended (3.13).
#[inline(always)]
pub(super) fn switch_i64(
    r: &mut Registers,
    code: &FunctionCode,
    index: Reg,
    default: Reg64,
    values: Span,
    d: Reg64,
) {
    let v = match pick(r, code, index, values) {
        Some(slot) => r.slot(slot) as i32 as i64 as u64,
        None => r.i64(default),
    };
    r.set_i64(d, v);
}

/// `switch.f64`: full 64 bits.
#[inline(always)]
pub(super) fn switch64(
    r: &mut Registers,
    code: &FunctionCode,
    index: Reg,
    default: Reg64,
    values: Span,
    d: Reg64,
) {
    let v = match pick(r, code, index, values) {
        Some(slot) => r.slot64(slot),
        None => r.i64(default),
    };
    r.set_i64(d, v);
}

#[inline(always)]
pub(super) fn switch_ref(
    r: &mut Registers,
    instance: &Instance,
    code: &FunctionCode,
    table: u32,
) -> Result<(), Fault> {
    let s = &code.switch_refs[table as usize];
    let i = r.i32(s.index) as i32;
    let pick = usize::try_from(i)
        .ok()
        .and_then(|i| s.values.get(i))
        .copied()
        .unwrap_or(s.default);
    let ty = instance.types.get(s.ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(r.peek(pick), ty) {
        return Err(type_mismatch(r.peek(pick), ty));
    }
    let v = r.read_ref(pick);
    r.put(s.result, v);
    Ok(())
}
