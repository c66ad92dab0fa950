//! Floating-point arithmetic and comparisons. Operands and results are flushed to zero when
//! subnormal if the limits say so (`Limits::flush_denormals`); `abs` and `neg` are sign-bit
//! operations, which flushing leaves alone.

use super::registers::Registers;
use crate::vm::code::{FBin, FCmp, FUn, Reg, Reg64};
use crate::vm::ops;

/// `v`, flushed when `ftz`.
#[inline(always)]
pub(super) fn fz32(ftz: bool, v: f32) -> f32 {
    if ftz { ops::flush_f32(v) } else { v }
}

/// `v`, flushed when `ftz`.
#[inline(always)]
pub(super) fn fz64(ftz: bool, v: f64) -> f64 {
    if ftz { ops::flush_f64(v) } else { v }
}

#[inline(always)]
pub(super) fn bin_f32(r: &mut Registers, ftz: bool, op: FBin, a: Reg, b: Reg, d: Reg) {
    let v = ops::bin_f32(op, fz32(ftz, r.f32(a)), fz32(ftz, r.f32(b)));
    r.set_i32(d, fz32(ftz, v).to_bits());
}

#[inline(always)]
pub(super) fn bin_f64(r: &mut Registers, ftz: bool, op: FBin, a: Reg64, b: Reg64, d: Reg64) {
    let v = ops::bin_f64(op, fz64(ftz, r.f64(a)), fz64(ftz, r.f64(b)));
    r.set_i64(d, fz64(ftz, v).to_bits());
}

#[inline(always)]
pub(super) fn un_f32(r: &mut Registers, ftz: bool, op: FUn, a: Reg, d: Reg) {
    let v = match op {
        FUn::Abs | FUn::Neg => ops::un_f32(op, r.f32(a)),
        _ => fz32(ftz, ops::un_f32(op, fz32(ftz, r.f32(a)))),
    };
    r.set_i32(d, v.to_bits());
}

#[inline(always)]
pub(super) fn un_f64(r: &mut Registers, ftz: bool, op: FUn, a: Reg64, d: Reg64) {
    let v = match op {
        FUn::Abs | FUn::Neg => ops::un_f64(op, r.f64(a)),
        _ => fz64(ftz, ops::un_f64(op, fz64(ftz, r.f64(a)))),
    };
    r.set_i64(d, v.to_bits());
}

/// Unfused, as the reference's x86-64 build.
#[inline(always)]
pub(super) fn fma_f32(r: &mut Registers, ftz: bool, a: Reg, b: Reg, c: Reg, d: Reg) {
    let product = fz32(ftz, fz32(ftz, r.f32(a)) * fz32(ftz, r.f32(b)));
    r.set_i32(d, fz32(ftz, product + fz32(ftz, r.f32(c))).to_bits());
}

/// Unfused, as the reference's x86-64 build.
#[inline(always)]
pub(super) fn fma_f64(r: &mut Registers, ftz: bool, a: Reg64, b: Reg64, c: Reg64, d: Reg64) {
    let product = fz64(ftz, fz64(ftz, r.f64(a)) * fz64(ftz, r.f64(b)));
    r.set_i64(d, fz64(ftz, product + fz64(ftz, r.f64(c))).to_bits());
}

#[inline(always)]
pub(super) fn cmp_f32(r: &mut Registers, ftz: bool, op: FCmp, a: Reg, b: Reg, d: Reg) {
    let v = ops::cmp_f32(op, fz32(ftz, r.f32(a)), fz32(ftz, r.f32(b)));
    r.set_i32(d, u32::from(v));
}

#[inline(always)]
pub(super) fn cmp_f64(r: &mut Registers, ftz: bool, op: FCmp, a: Reg64, b: Reg64, d: Reg) {
    let v = ops::cmp_f64(op, fz64(ftz, r.f64(a)), fz64(ftz, r.f64(b)));
    r.set_i32(d, u32::from(v));
}

/// `fpowi.f32`: the exponent is the 32 bits at its register, as the reference reads it (the
/// low half when the compiler names an i64 pair).
#[inline(always)]
pub(super) fn powi_f32(r: &mut Registers, ftz: bool, a: Reg, n: Reg, d: Reg) {
    let v = ops::powi_f32(r.f32(a), r.i32(n) as i32, |x| fz32(ftz, x));
    r.set_i32(d, v.to_bits());
}

/// `fpowi.f64`: the exponent is the low 32 bits of its i64 register, as the reference reads it.
#[inline(always)]
pub(super) fn powi_f64(r: &mut Registers, ftz: bool, a: Reg64, n: Reg64, d: Reg64) {
    let v = ops::powi_f64(r.f64(a), r.i64(n) as i32, |x| fz64(ftz, x));
    r.set_i64(d, v.to_bits());
}
