//! Constants and register copies (`const.*`, `bitcast.*`).

use super::instance::Instance;
use super::registers::Registers;
use crate::vm::code::{RefReg, Reg, Reg64};
use crate::vm::value::Ref;

#[inline(always)]
pub(super) fn const32(r: &mut Registers, value: u32, d: Reg) {
    r.set_i32(d, value);
}

#[inline(always)]
pub(super) fn const64(r: &mut Registers, lo: u32, hi: u32, d: Reg64) {
    r.set_i64(d, u64::from(lo) | (u64::from(hi) << 32));
}

#[inline(always)]
pub(super) fn const_ref_zero(r: &mut Registers, d: RefReg) {
    r.put(d, None);
}

/// The rodata segment's buffer: the same object on every execution.
#[inline(always)]
pub(super) fn const_ref_rodata(r: &mut Registers, instance: &Instance, segment: u32, d: RefReg) {
    let buffer = instance.rodata.get(segment as usize).cloned();
    r.put(d, buffer.map(Ref::Buffer));
}

#[inline(always)]
pub(super) fn copy32(r: &mut Registers, s: Reg, d: Reg) {
    r.set_i32(d, r.i32(s));
}

#[inline(always)]
pub(super) fn copy64(r: &mut Registers, s: Reg64, d: Reg64) {
    r.set_i64(d, r.i64(s));
}
