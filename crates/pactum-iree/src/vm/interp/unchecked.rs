//! The VM's only unchecked access: the fast loop's instruction fetch.
//!
//! A function's instructions are kept as a [`Program`]: the pre-decoded instructions, then
//! `Inst::End`s (which nothing decodes to) up to a power of two of slots, at least one. A
//! [`Cursor`] holds the byte offset of its slot, kept masked: every move (a step, a skip, a
//! jump) stores the new offset ANDed with `(slots - 1) * size`, a multiple of the slot size
//! below the slots' byte length (both the slot count and the slot size are powers of two). So
//! every offset the cursor can hold is the start of a slot, and the fetch reads there with no
//! check at all, whoever moves the cursor and wherever to. This is the whole proof, and it is
//! this module's alone: the slot count, the mask and the offset are private, and the mask is
//! fixed when the program is built.
//!
//! The fetch is then one load at `base + offset` (the operands of the instruction are read at
//! the same address plus their field's place), and a step is an `add` and an `and` on a value
//! the loop keeps in a register: no scaling of an index per instruction, and no bounds check.
//! The mask never changes an offset the loop can reach: the verifier proves every branch
//! target to be an instruction of the function (rule `BranchTarget`) and every block to end
//! with a terminator (rule `Terminator`), so a step only ever leaves an instruction for the
//! next one or, at worst, for the first `End`, where the loop stops (the main loop then
//! reports running past the end, as it did before), and a superinstruction skips only the
//! instructions of its own sequence (`fuse.rs`), which are there. The cursor's
//! `debug_assert!`s check exactly that the mask changed nothing.

/// A slot type with a value that pads a [`Program`] (for instructions, the `End` that stops
/// the fast loop).
pub trait Slot: Copy {
    /// The padding.
    const END: Self;
}

/// A function's instructions followed by [`Slot::END`]s, a power of two of slots in all.
///
/// Dereferences to the instructions alone (without the padding).
#[derive(Clone, Debug, PartialEq)]
pub struct Program<T> {
    /// The instructions, then `END`s up to a power of two (at least one `END`).
    slots: Vec<T>,
    /// The number of instructions.
    len: usize,
}

impl<T: Slot> Program<T> {
    /// The size of a slot in bytes: a power of two, so that masking a byte offset with
    /// `(slots - 1) * SLOT_SIZE` gives the start of a slot (checked when the program is made).
    const SLOT_SIZE: usize = std::mem::size_of::<T>();

    /// The program of `insts`.
    pub fn new(mut insts: Vec<T>) -> Program<T> {
        const {
            assert!(
                std::mem::size_of::<T>().is_power_of_two(),
                "a slot's size must be a power of two"
            )
        };
        let len = insts.len();
        insts.resize((len + 1).next_power_of_two(), T::END);
        Program { slots: insts, len }
    }

    /// The instructions, without the padding (to rewrite them and make a new program).
    pub fn into_insts(mut self) -> Vec<T> {
        self.slots.truncate(self.len);
        self.slots
    }

    /// A cursor at instruction `ip` (at the first `END` when `ip` is past the last
    /// instruction).
    #[inline(always)]
    pub(in crate::vm) fn cursor(&self, ip: usize) -> Cursor<'_, T> {
        let mask = (self.slots.len() - 1) * Self::SLOT_SIZE;
        Cursor {
            slots: &self.slots,
            mask,
            // `ip.min(self.len) < slots.len()`, so the product is at most `mask` and the mask
            // changes nothing; it is applied anyway, as on every move.
            offset: (ip.min(self.len) * Self::SLOT_SIZE) & mask,
        }
    }
}

impl<T: Slot> Default for Program<T> {
    fn default() -> Program<T> {
        Program::new(Vec::new())
    }
}

impl<T> std::ops::Deref for Program<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.slots[..self.len]
    }
}

/// A position in a [`Program`]: the byte offset of a slot, masked on every move. Any move is
/// safe: it lands on the slot at the index modulo the slot count, a power of two.
pub(in crate::vm) struct Cursor<'p, T> {
    /// The program's slots: a power of two of them, each a power of two of bytes.
    slots: &'p [T],
    /// `(slots.len() - 1) * size_of::<T>()`.
    mask: usize,
    /// The byte offset of the slot under the cursor: always `offset & mask`, so a multiple of
    /// the slot size below the slots' byte length.
    offset: usize,
}

impl<'p, T: Slot> Cursor<'p, T> {
    /// The index of the instruction under the cursor.
    #[inline(always)]
    pub(in crate::vm) fn ip(&self) -> usize {
        self.offset / Program::<T>::SLOT_SIZE
    }

    /// The instruction under the cursor.
    #[inline(always)]
    pub(in crate::vm) fn inst(&self) -> &'p T {
        debug_assert!(
            self.offset & !self.mask == 0
                && self.offset < self.slots.len() * Program::<T>::SLOT_SIZE
        );
        // `offset` is always stored masked (`cursor`, `step`, `skip`, `jump`): `mask` is
        // `(slots.len() - 1) * size_of::<T>()` with both factors' sizes powers of two
        // (`Program::new`), so `offset` is a multiple of `size_of::<T>()` and at most
        // `(slots.len() - 1) * size_of::<T>()`: the start of a slot of `slots`, aligned for
        // `T` (the slots are a `[T]`), initialised, and borrowed for `'p`.
        // SAFETY: the masked offset is the start of an initialised slot, as shown above.
        unsafe { &*self.slots.as_ptr().byte_add(self.offset) }
    }

    /// Moves to the next instruction (from the last slot, to the first: the verifier's
    /// terminator rule means the loop never steps from an `END`).
    #[inline(always)]
    pub(in crate::vm) fn step(&mut self) {
        debug_assert!(
            self.offset < self.mask,
            "stepped past the last slot from instruction {}",
            self.ip()
        );
        self.offset = self.offset.wrapping_add(Program::<T>::SLOT_SIZE) & self.mask;
    }

    /// Moves `n` instructions on (a superinstruction moving past its sequence, whose
    /// instructions are all there, so it lands at most on the first `END`).
    #[inline(always)]
    pub(in crate::vm) fn skip(&mut self, n: usize) {
        debug_assert!(
            self.offset + n * Program::<T>::SLOT_SIZE <= self.mask,
            "skipped past the last slot from instruction {}",
            self.ip()
        );
        self.offset = self
            .offset
            .wrapping_add(n.wrapping_mul(Program::<T>::SLOT_SIZE))
            & self.mask;
    }

    /// Moves to instruction `target` (modulo the slot count: the verifier proves every branch
    /// target an instruction of the function).
    #[inline(always)]
    pub(in crate::vm) fn jump(&mut self, target: usize) {
        debug_assert!(
            target <= self.mask / Program::<T>::SLOT_SIZE,
            "jump to instruction {target} out of range"
        );
        self.offset = target.wrapping_mul(Program::<T>::SLOT_SIZE) & self.mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Op {
        Nop(usize),
        End,
    }

    impl Slot for Op {
        const END: Op = Op::End;
    }

    /// A program is a power of two of slots, its instructions then at least one `END`; a
    /// cursor starting past the last instruction starts at the first `END`.
    #[test]
    fn a_program_is_its_instructions_then_ends() {
        for n in [0, 1, 3, 4, 7, 8, 100] {
            let ops: Vec<Op> = (0..n).map(Op::Nop).collect();
            let program = Program::new(ops.clone());
            assert_eq!(*program, ops);
            assert!(program.slots.len().is_power_of_two() && program.slots.len() > n);
            assert!(program.slots[n..].iter().all(|op| *op == Op::End));
            let mut cursor = program.cursor(usize::MAX);
            assert_eq!((cursor.ip(), *cursor.inst()), (n, Op::End));
            cursor.jump(0);
            for i in 0..n {
                assert_eq!((cursor.ip(), *cursor.inst()), (i, Op::Nop(i)));
                cursor.step();
            }
            assert_eq!(*cursor.inst(), Op::End);
            cursor.jump(0);
            cursor.skip(n);
            assert_eq!((cursor.ip(), *cursor.inst()), (n, Op::End));
            assert_eq!(program.clone().into_insts(), ops);
        }
    }
}
