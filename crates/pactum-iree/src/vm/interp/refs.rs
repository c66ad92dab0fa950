//! References: comparisons, releases, assignment and checked casts.

use super::fault::{Fault, type_mismatch};
use super::instance::Instance;
use super::registers::Registers;
use crate::vm::code::{FunctionCode, RefReg, Reg, Span};
use crate::vm::value::{VmType, type_check};

#[inline(always)]
pub(super) fn cmp_eq(r: &mut Registers, a: RefReg, b: RefReg, d: Reg) {
    r.set_i32(d, u32::from(r.peek(a) == r.peek(b)));
}

#[inline(always)]
pub(super) fn cmp_ne(r: &mut Registers, a: RefReg, b: RefReg, d: Reg) {
    r.set_i32(d, u32::from(r.peek(a) != r.peek(b)));
}

#[inline(always)]
pub(super) fn cmp_nz(r: &mut Registers, a: RefReg, d: Reg) {
    r.set_i32(d, u32::from(r.peek(a).is_some()));
}

/// `trace`/`print`: the listed refs that carry MOVE are released.
#[inline(always)]
pub(super) fn release_moved(r: &mut Registers, code: &FunctionCode, regs: Span) {
    for &reg in &code.regs[regs.range()] {
        if reg & 0xC000 == 0xC000 {
            r.put(RefReg(reg), None);
        }
    }
}

#[inline(always)]
pub(super) fn discard(r: &mut Registers, code: &FunctionCode, regs: Span) {
    for &reg in &code.regs[regs.range()] {
        r.put(RefReg(reg), None);
    }
}

#[inline(always)]
pub(super) fn assign(r: &mut Registers, s: RefReg, d: RefReg) {
    if s.index() != d.index() {
        let v = r.read_ref(s);
        r.put(d, v);
    }
}

#[inline(always)]
pub(super) fn cast_any(
    r: &mut Registers,
    instance: &Instance,
    s: RefReg,
    ty: u32,
    d: RefReg,
) -> Result<(), Fault> {
    let t = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(r.peek(s), t) {
        return Err(type_mismatch(r.peek(s), t));
    }
    assign(r, s, d);
    Ok(())
}
