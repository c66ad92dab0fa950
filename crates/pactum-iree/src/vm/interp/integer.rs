//! Integer arithmetic, bitwise operations and shifts.

use super::fault::{Fault, trap};
use super::registers::Registers;
use crate::vm::code::{IBin, IDiv, IUn, IUn64, Reg, Reg64, Shift};
use crate::vm::error::TrapKind;
use crate::vm::ops;

#[inline(always)]
pub(super) fn add_i32(r: &mut Registers, a: Reg, b: Reg, d: Reg) {
    r.set_i32(d, r.i32(a).wrapping_add(r.i32(b)));
}

#[inline(always)]
pub(super) fn sub_i32(r: &mut Registers, a: Reg, b: Reg, d: Reg) {
    r.set_i32(d, r.i32(a).wrapping_sub(r.i32(b)));
}

/// Also returns the sum, for a superinstruction that uses it next (reading it back from the
/// register pair would rebuild it from its two halves).
#[inline(always)]
pub(super) fn add_i64(r: &mut Registers, a: Reg64, b: Reg64, d: Reg64) -> u64 {
    let sum = r.i64(a).wrapping_add(r.i64(b));
    r.set_i64(d, sum);
    sum
}

#[inline(always)]
pub(super) fn bin32(r: &mut Registers, op: IBin, a: Reg, b: Reg, d: Reg) {
    r.set_i32(d, ops::bin_i32(op, r.i32(a) as i32, r.i32(b) as i32) as u32);
}

#[inline(always)]
pub(super) fn bin64(r: &mut Registers, op: IBin, a: Reg64, b: Reg64, d: Reg64) {
    r.set_i64(d, ops::bin_i64(op, r.i64(a) as i64, r.i64(b) as i64) as u64);
}

#[inline(always)]
pub(super) fn div32(r: &mut Registers, op: IDiv, a: Reg, b: Reg, d: Reg) -> Result<(), Fault> {
    let v = div_i32(op, r.i32(a) as i32, r.i32(b) as i32)?;
    r.set_i32(d, v as u32);
    Ok(())
}

#[inline(always)]
pub(super) fn div64(
    r: &mut Registers,
    op: IDiv,
    a: Reg64,
    b: Reg64,
    d: Reg64,
) -> Result<(), Fault> {
    let v = div_i64(op, r.i64(a) as i64, r.i64(b) as i64)?;
    r.set_i64(d, v as u64);
    Ok(())
}

#[inline(always)]
pub(super) fn fma32(r: &mut Registers, a: Reg, b: Reg, c: Reg, d: Reg) {
    r.set_i32(d, r.i32(a).wrapping_mul(r.i32(b)).wrapping_add(r.i32(c)));
}

#[inline(always)]
pub(super) fn fma64(r: &mut Registers, a: Reg64, b: Reg64, c: Reg64, d: Reg64) {
    r.set_i64(d, r.i64(a).wrapping_mul(r.i64(b)).wrapping_add(r.i64(c)));
}

#[inline(always)]
pub(super) fn un32(r: &mut Registers, op: IUn, a: Reg, d: Reg) {
    let x = r.i32(a);
    let v = match op {
        IUn::Not => !x,
        IUn::Ctlz => x.leading_zeros(),
        IUn::Abs => (x as i32).wrapping_abs() as u32,
        IUn::TruncI8 | IUn::ExtI8U => x & 0xFF,
        IUn::TruncI16 | IUn::ExtI16U => x & 0xFFFF,
        IUn::ExtI8S => x as u8 as i8 as i32 as u32,
        IUn::ExtI16S => x as u16 as i16 as i32 as u32,
    };
    r.set_i32(d, v);
}

#[inline(always)]
pub(super) fn un64(r: &mut Registers, op: IUn64, a: Reg64, d: Reg64) {
    let x = r.i64(a);
    let v = match op {
        IUn64::Not => !x,
        IUn64::Ctlz => u64::from(x.leading_zeros()),
        IUn64::Abs => (x as i64).wrapping_abs() as u64,
    };
    r.set_i64(d, v);
}

#[inline(always)]
pub(super) fn shift32(r: &mut Registers, op: Shift, a: Reg, b: Reg, d: Reg) {
    r.set_i32(
        d,
        ops::shift_i32(op, r.i32(a) as i32, r.i32(b) as i32) as u32,
    );
}

#[inline(always)]
pub(super) fn shift64(r: &mut Registers, op: Shift, a: Reg64, b: Reg, d: Reg64) {
    r.set_i64(
        d,
        ops::shift_i64(op, r.i64(a) as i64, r.i32(b) as i32) as u64,
    );
}

/// `div32` on its success path, for the fast loop: `None` (nothing written) where the
/// division traps, which the main loop then runs and reports.
#[inline(always)]
pub(super) fn try_div32(r: &mut Registers, op: IDiv, a: Reg, b: Reg, d: Reg) -> Option<()> {
    let v = checked_div_i32(op, r.i32(a) as i32, r.i32(b) as i32)?;
    r.set_i32(d, v as u32);
    Some(())
}

/// `div64` on its success path (see [`try_div32`]).
#[inline(always)]
pub(super) fn try_div64(r: &mut Registers, op: IDiv, a: Reg64, b: Reg64, d: Reg64) -> Option<()> {
    let v = checked_div_i64(op, r.i64(a) as i64, r.i64(b) as i64)?;
    r.set_i64(d, v as u64);
    Some(())
}

/// Division and remainder: division by zero and `MIN / -1` trap (undefined in the reference).
fn div_i32(op: IDiv, a: i32, b: i32) -> Result<i32, Fault> {
    checked_div_i32(op, a, b).ok_or_else(|| division_trap(op, a, b))
}

/// See [`div_i32`].
fn div_i64(op: IDiv, a: i64, b: i64) -> Result<i64, Fault> {
    checked_div_i64(op, a, b).ok_or_else(|| division_trap(op, a, b))
}

/// The result of `op`, or `None` where it traps: a zero divisor, or `MIN / -1` signed.
#[inline(always)]
fn checked_div_i32(op: IDiv, a: i32, b: i32) -> Option<i32> {
    match op {
        IDiv::DivS => a.checked_div(b),
        IDiv::RemS => a.checked_rem(b),
        IDiv::DivU => (a as u32).checked_div(b as u32).map(|v| v as i32),
        IDiv::RemU => (a as u32).checked_rem(b as u32).map(|v| v as i32),
    }
}

/// See [`checked_div_i32`].
#[inline(always)]
fn checked_div_i64(op: IDiv, a: i64, b: i64) -> Option<i64> {
    match op {
        IDiv::DivS => a.checked_div(b),
        IDiv::RemS => a.checked_rem(b),
        IDiv::DivU => (a as u64).checked_div(b as u64).map(|v| v as i64),
        IDiv::RemU => (a as u64).checked_rem(b as u64).map(|v| v as i64),
    }
}

/// The trap of a division that has none: by zero, else the signed overflow.
#[cold]
#[inline(never)]
fn division_trap<T: std::fmt::Display + Default + PartialEq>(op: IDiv, a: T, b: T) -> Fault {
    if b == T::default() {
        return trap(TrapKind::DivisionByZero, format!("{a} / 0"));
    }
    let sign = match op {
        IDiv::DivS | IDiv::DivU => '/',
        IDiv::RemS | IDiv::RemU => '%',
    };
    trap(TrapKind::DivisionOverflow, format!("{a} {sign} {b}"))
}
