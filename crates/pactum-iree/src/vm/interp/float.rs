//! Floating-point arithmetic and comparisons. Operands and results are flushed to zero when
//! subnormal if the limits say so (`Limits::flush_denormals`), as IREE's local devices run
//! dispatches: with the FPU's flush (x86's FTZ and DAZ). `abs` and `neg` are sign-bit
//! operations, which flushing leaves alone.
//!
//! Two ways to flush ([`Flush`]): in software (each operand, then the result), or by the FPU.
//! They differ in one narrow band: a result whose exact value is below the smallest normal but
//! rounds up to it (the FPU flushes it, as IREE's results show; the software flush keeps it). So
//! the FPU's flush is the one that matches IREE for the operations that are one FPU instruction
//! (add, sub, mul, div, and `fma`, which the reference runs unfused). Everything else flushes
//! in software under either mode (minimum, maximum, compares and conversions, where this
//! changes nothing under the FPU's flush), and the operations that call the C maths library
//! (`rem`, `atan2`, `pow`) run with the FPU's flush turned off, as they always have here.

use super::registers::Registers;
use crate::fpu::FlushDenormals;
use crate::vm::code::{FBin, FCmp, FUn, Reg, Reg64};
use crate::vm::ops;

/// How float operations flush subnormal operands and results to zero.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Flush {
    /// They do not.
    Off,
    /// In software, with the FPU's flush off.
    Software,
    /// The FPU's flush is on (the caller holds a [`FlushDenormals::on`]): one-instruction
    /// arithmetic needs nothing more.
    Hardware,
}

impl Flush {
    /// The mode for `flush_denormals` (of the limits) outside the fast path.
    pub(super) fn software_if(flush_denormals: bool) -> Flush {
        if flush_denormals {
            Flush::Software
        } else {
            Flush::Off
        }
    }
}

/// `v`, flushed in software when `flush` is on at all.
#[inline(always)]
pub(super) fn fz32(flush: Flush, v: f32) -> f32 {
    if flush == Flush::Off {
        v
    } else {
        ops::flush_f32(v)
    }
}

/// `v`, flushed in software when `flush` is on at all.
#[inline(always)]
pub(super) fn fz64(flush: Flush, v: f64) -> f64 {
    if flush == Flush::Off {
        v
    } else {
        ops::flush_f64(v)
    }
}

/// Whether `op` is one FPU instruction (flushed exactly as IREE flushes under the FPU's flush).
#[inline(always)]
fn is_one_instruction(op: FBin) -> bool {
    matches!(op, FBin::Add | FBin::Sub | FBin::Mul | FBin::Div)
}

/// Whether `op` calls the C maths library (whose inner steps must not be flushed).
#[inline(always)]
fn calls_libm(op: FBin) -> bool {
    matches!(op, FBin::Rem | FBin::Atan2 | FBin::Pow)
}

#[inline(always)]
pub(super) fn bin_f32(r: &mut Registers, flush: Flush, op: FBin, a: Reg, b: Reg, d: Reg) {
    let (x, y) = (r.f32(a), r.f32(b));
    let v = if flush == Flush::Hardware && is_one_instruction(op) {
        ops::bin_f32(op, x, y)
    } else if flush == Flush::Hardware && calls_libm(op) {
        let _exact = FlushDenormals::off();
        // The compiler does not know that the FPU's mode orders float operations: the
        // opaque `black_box`es keep the operation after the switch above and its result
        // computed before `_exact` switches back.
        let (x, y) = std::hint::black_box((x, y));
        std::hint::black_box(fz32(
            flush,
            ops::bin_f32(op, fz32(flush, x), fz32(flush, y)),
        ))
    } else {
        fz32(flush, ops::bin_f32(op, fz32(flush, x), fz32(flush, y)))
    };
    r.set_i32(d, v.to_bits());
}

#[inline(always)]
pub(super) fn bin_f64(r: &mut Registers, flush: Flush, op: FBin, a: Reg64, b: Reg64, d: Reg64) {
    let (x, y) = (r.f64(a), r.f64(b));
    let v = if flush == Flush::Hardware && is_one_instruction(op) {
        ops::bin_f64(op, x, y)
    } else if flush == Flush::Hardware && calls_libm(op) {
        let _exact = FlushDenormals::off();
        // The compiler does not know that the FPU's mode orders float operations: the
        // opaque `black_box`es keep the operation after the switch above and its result
        // computed before `_exact` switches back.
        let (x, y) = std::hint::black_box((x, y));
        std::hint::black_box(fz64(
            flush,
            ops::bin_f64(op, fz64(flush, x), fz64(flush, y)),
        ))
    } else {
        fz64(flush, ops::bin_f64(op, fz64(flush, x), fz64(flush, y)))
    };
    r.set_i64(d, v.to_bits());
}

#[inline(always)]
pub(super) fn un_f32(r: &mut Registers, flush: Flush, op: FUn, a: Reg, d: Reg) {
    let v = match op {
        FUn::Abs | FUn::Neg => ops::un_f32(op, r.f32(a)),
        _ => fz32(flush, ops::un_f32(op, fz32(flush, r.f32(a)))),
    };
    r.set_i32(d, v.to_bits());
}

#[inline(always)]
pub(super) fn un_f64(r: &mut Registers, flush: Flush, op: FUn, a: Reg64, d: Reg64) {
    let v = match op {
        FUn::Abs | FUn::Neg => ops::un_f64(op, r.f64(a)),
        _ => fz64(flush, ops::un_f64(op, fz64(flush, r.f64(a)))),
    };
    r.set_i64(d, v.to_bits());
}

/// Unfused, as the reference's x86-64 build.
#[inline(always)]
pub(super) fn fma_f32(r: &mut Registers, flush: Flush, a: Reg, b: Reg, c: Reg, d: Reg) -> u32 {
    let v = if flush == Flush::Hardware {
        r.f32(a) * r.f32(b) + r.f32(c)
    } else {
        let product = fz32(flush, fz32(flush, r.f32(a)) * fz32(flush, r.f32(b)));
        fz32(flush, product + fz32(flush, r.f32(c)))
    };
    r.set_i32(d, v.to_bits());
    v.to_bits()
}

/// Unfused, as the reference's x86-64 build.
#[inline(always)]
pub(super) fn fma_f64(r: &mut Registers, flush: Flush, a: Reg64, b: Reg64, c: Reg64, d: Reg64) {
    let v = if flush == Flush::Hardware {
        r.f64(a) * r.f64(b) + r.f64(c)
    } else {
        let product = fz64(flush, fz64(flush, r.f64(a)) * fz64(flush, r.f64(b)));
        fz64(flush, product + fz64(flush, r.f64(c)))
    };
    r.set_i64(d, v.to_bits());
}

#[inline(always)]
pub(super) fn cmp_f32(r: &mut Registers, flush: Flush, op: FCmp, a: Reg, b: Reg, d: Reg) {
    let v = ops::cmp_f32(op, fz32(flush, r.f32(a)), fz32(flush, r.f32(b)));
    r.set_i32(d, u32::from(v));
}

#[inline(always)]
pub(super) fn cmp_f64(r: &mut Registers, flush: Flush, op: FCmp, a: Reg64, b: Reg64, d: Reg) {
    let v = ops::cmp_f64(op, fz64(flush, r.f64(a)), fz64(flush, r.f64(b)));
    r.set_i32(d, u32::from(v));
}

/// `fpowi.f32`: the exponent is the 32 bits at its register, as the reference reads it (the
/// low half when the compiler names an i64 pair).
#[inline(always)]
pub(super) fn powi_f32(r: &mut Registers, flush: Flush, a: Reg, n: Reg, d: Reg) {
    let v = ops::powi_f32(r.f32(a), r.i32(n) as i32, |x| fz32(flush, x));
    r.set_i32(d, v.to_bits());
}

/// `fpowi.f64`: the exponent is the low 32 bits of its i64 register, as the reference reads it.
#[inline(always)]
pub(super) fn powi_f64(r: &mut Registers, flush: Flush, a: Reg64, n: Reg64, d: Reg64) {
    let v = ops::powi_f64(r.f64(a), r.i64(n) as i32, |x| fz64(flush, x));
    r.set_i64(d, v.to_bits());
}
