//! Integer comparisons.
//!
//! The compares that a fused compare-and-branch also runs return their result, so that the
//! branch tests it without reading the register back.

use super::registers::Registers;
use crate::vm::code::{ICmp, Reg, Reg64};
use crate::vm::ops;

#[inline(always)]
pub(super) fn eq_i32(r: &mut Registers, a: Reg, b: Reg, d: Reg) {
    r.set_i32(d, u32::from(r.i32(a) == r.i32(b)));
}

#[inline(always)]
pub(super) fn lt_i32_s(r: &mut Registers, a: Reg, b: Reg, d: Reg) -> bool {
    let v = (r.i32(a) as i32) < (r.i32(b) as i32);
    r.set_i32(d, u32::from(v));
    v
}

#[inline(always)]
pub(super) fn lt_i64_s(r: &mut Registers, a: Reg64, b: Reg64, d: Reg) -> bool {
    let v = (r.i64(a) as i64) < (r.i64(b) as i64);
    r.set_i32(d, u32::from(v));
    v
}

#[inline(always)]
pub(super) fn nz_i32(r: &mut Registers, a: Reg, d: Reg) {
    r.set_i32(d, u32::from(r.i32(a) != 0));
}

#[inline(always)]
pub(super) fn cmp32(r: &mut Registers, op: ICmp, a: Reg, b: Reg, d: Reg) -> bool {
    let v = test32(r, op, a, b);
    r.set_i32(d, u32::from(v));
    v
}

#[inline(always)]
pub(super) fn cmp64(r: &mut Registers, op: ICmp, a: Reg64, b: Reg64, d: Reg) -> bool {
    let v = test64(r, op, a, b);
    r.set_i32(d, u32::from(v));
    v
}

/// The i32 comparison `op` of `a` and `b`, written nowhere.
#[inline(always)]
pub(super) fn test32(r: &Registers, op: ICmp, a: Reg, b: Reg) -> bool {
    ops::cmp_i32(op, r.i32(a) as i32, r.i32(b) as i32)
}

/// The i64 comparison `op` of `a` and `b`, written nowhere.
#[inline(always)]
pub(super) fn test64(r: &Registers, op: ICmp, a: Reg64, b: Reg64) -> bool {
    ops::cmp_i64(op, r.i64(a) as i64, r.i64(b) as i64)
}
