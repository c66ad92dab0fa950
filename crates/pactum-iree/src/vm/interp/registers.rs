//! A frame's registers, as the handlers see them.

use crate::vm::code::{RefReg, Reg, Reg64};
use crate::vm::value::Ref;

/// Slots of the i32 bank a frame's register window spans: every `u16` register index and
/// the high half of a 64-bit pair at the last one. The window is a fixed-size array of this
/// length, so register accesses need no bounds checks (a `u16` is always in range).
pub(super) const WINDOW: usize = (1 << 16) + 1;

/// The registers of the running frame: its window of the i32 bank and its ref slots. Register
/// operands are frame-relative.
///
/// Handlers take `&mut Registers` and are `#[inline(always)]`, so the loop keeps the two
/// slices in machine registers; a function that is not inlined gets a [`reborrow`]ed view by
/// value instead.
///
/// [`reborrow`]: Registers::reborrow
pub(super) struct Registers<'f> {
    pub(super) i32s: &'f mut [u32; WINDOW],
    pub(super) refs: &'f mut [Option<Ref>],
}

impl Registers<'_> {
    /// The 32-bit value of `r`.
    #[inline(always)]
    pub(super) fn i32(&self, r: Reg) -> u32 {
        self.i32s[usize::from(r.0)]
    }

    #[inline(always)]
    pub(super) fn set_i32(&mut self, r: Reg, v: u32) {
        self.i32s[usize::from(r.0)] = v;
    }

    /// The 64-bit value of the pair `r`.
    #[inline(always)]
    pub(super) fn i64(&self, r: Reg64) -> u64 {
        read64(self.i32s, usize::from(r.0))
    }

    #[inline(always)]
    pub(super) fn set_i64(&mut self, r: Reg64, v: u64) {
        write64(self.i32s, usize::from(r.0), v);
    }

    #[inline(always)]
    pub(super) fn f32(&self, r: Reg) -> f32 {
        f32::from_bits(self.i32(r))
    }

    #[inline(always)]
    pub(super) fn f64(&self, r: Reg64) -> f64 {
        f64::from_bits(self.i64(r))
    }

    /// Slot `slot` of the i32 bank, for operands whose kind is only known at run time (call
    /// arguments and results, remaps, register lists).
    #[inline(always)]
    pub(super) fn slot(&self, slot: u16) -> u32 {
        self.i32s[usize::from(slot)]
    }

    #[inline(always)]
    pub(super) fn set_slot(&mut self, slot: u16, v: u32) {
        self.i32s[usize::from(slot)] = v;
    }

    /// The pair at base slot `slot` (see [`slot`](Self::slot)).
    #[inline(always)]
    pub(super) fn slot64(&self, slot: u16) -> u64 {
        read64(self.i32s, usize::from(slot))
    }

    #[inline(always)]
    pub(super) fn set_slot64(&mut self, slot: u16, v: u64) {
        write64(self.i32s, usize::from(slot), v);
    }

    /// The reference in `r`, left in place.
    #[inline(always)]
    pub(super) fn peek(&self, r: RefReg) -> Option<&Ref> {
        self.refs[r.index()].as_ref()
    }

    /// Stores `v` in `r`, releasing what it held.
    #[inline(always)]
    pub(super) fn put(&mut self, r: RefReg, v: Option<Ref>) {
        self.refs[r.index()] = v;
    }

    /// The reference in `r`: taken out with the MOVE bit, retained (cloned) without.
    #[inline(always)]
    pub(super) fn read_ref(&mut self, r: RefReg) -> Option<Ref> {
        read_ref(self.refs, r)
    }

    /// A view of the same registers, to pass by value to a function that is not inlined
    /// (passing `&mut self` would take the address of the loop's view and keep its fields in
    /// memory).
    #[inline(always)]
    pub(super) fn reborrow(&mut self) -> Registers<'_> {
        Registers {
            i32s: &mut *self.i32s,
            refs: &mut *self.refs,
        }
    }
}

/// The reference in `r` of `refs`: taken out with the MOVE bit, retained (cloned) without.
#[inline]
pub(super) fn read_ref(refs: &mut [Option<Ref>], r: RefReg) -> Option<Ref> {
    let slot = &mut refs[r.index()];
    if r.is_move() {
        slot.take()
    } else {
        slot.clone()
    }
}

/// The 64-bit value whose low half is at `at`.
#[inline]
pub(super) fn read64(regs: &[u32], at: usize) -> u64 {
    u64::from(regs[at]) | (u64::from(regs[at + 1]) << 32)
}

/// Stores `v` at `at` (low half) and `at + 1`.
#[inline]
pub(super) fn write64(regs: &mut [u32], at: usize, v: u64) {
    regs[at] = v as u32;
    regs[at + 1] = (v >> 32) as u32;
}
