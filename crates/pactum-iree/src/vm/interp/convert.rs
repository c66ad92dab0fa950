//! Conversions between integer and float kinds and widths, by the widths they read and write.

use super::float::{Flush, fz32, fz64};
use super::registers::Registers;
use crate::vm::code::{Conv32, Conv32To64, Conv64, Conv64To32, Reg, Reg64};
use crate::vm::ops;

#[inline(always)]
pub(super) fn ext_i32_i64_s(r: &mut Registers, a: Reg, d: Reg64) {
    r.set_i64(d, r.i32(a) as i32 as i64 as u64);
}

#[inline(always)]
pub(super) fn ext_i32_i64_u(r: &mut Registers, a: Reg, d: Reg64) {
    r.set_i64(d, u64::from(r.i32(a)));
}

#[inline(always)]
pub(super) fn trunc_i64_i32(r: &mut Registers, a: Reg64, d: Reg) {
    r.set_i32(d, r.i64(a) as u32);
}

#[inline(always)]
pub(super) fn cast_si32_f32(r: &mut Registers, a: Reg, d: Reg) {
    r.set_i32(d, (r.i32(a) as i32 as f32).to_bits());
}

#[inline(always)]
pub(super) fn convert32(r: &mut Registers, op: Conv32, a: Reg, d: Reg) {
    let x = r.i32(a);
    let v = match op {
        Conv32::Ui32F32 => (x as f32).to_bits(),
        Conv32::F32I32 => ops::cast_f32_i32(f32::from_bits(x)) as u32,
        Conv32::NanF32 => u32::from(f32::from_bits(x).is_nan()),
    };
    r.set_i32(d, v);
}

#[inline(always)]
pub(super) fn convert32_to_64(r: &mut Registers, flush: Flush, op: Conv32To64, a: Reg, d: Reg64) {
    let x = r.i32(a);
    let v = match op {
        Conv32To64::F32Si64 => ops::llround_f32(f32::from_bits(x)) as u64,
        Conv32To64::F32Ui64 => ops::cast_f32_ui64(f32::from_bits(x)),
        Conv32To64::F32F64 => f64::from(fz32(flush, f32::from_bits(x))).to_bits(),
        Conv32To64::Si32F64 => f64::from(x as i32).to_bits(),
        Conv32To64::Ui32F64 => f64::from(x).to_bits(),
    };
    r.set_i64(d, v);
}

#[inline(always)]
pub(super) fn convert64_to_32(r: &mut Registers, flush: Flush, op: Conv64To32, a: Reg64, d: Reg) {
    let x = r.i64(a);
    let v = match op {
        Conv64To32::NzI64 => u32::from(x != 0),
        Conv64To32::Si64F32 => (x as i64 as f32).to_bits(),
        Conv64To32::Ui64F32 => (x as f32).to_bits(),
        Conv64To32::F64F32 => fz32(flush, fz64(flush, f64::from_bits(x)) as f32).to_bits(),
        Conv64To32::F64I32 => ops::cast_f64_i32(f64::from_bits(x)) as u32,
        Conv64To32::NanF64 => u32::from(f64::from_bits(x).is_nan()),
    };
    r.set_i32(d, v);
}

#[inline(always)]
pub(super) fn convert64(r: &mut Registers, op: Conv64, a: Reg64, d: Reg64) {
    let x = r.i64(a);
    let v = match op {
        Conv64::Si64F64 => (x as i64 as f64).to_bits(),
        Conv64::Ui64F64 => (x as f64).to_bits(),
        Conv64::F64I64 => ops::llround_f64(f64::from_bits(x)) as u64,
    };
    r.set_i64(d, v);
}
