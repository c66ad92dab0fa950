//! The VM's only unchecked access: the fast loop's instruction fetch.
//!
//! A function's instructions are kept as a [`Program`]: the pre-decoded instructions, then
//! `Inst::End`s (which nothing decodes to) up to a power of two of slots, at least one. A
//! [`Cursor`] reads the instruction at its index modulo the slot count (a mask), so every
//! index reads a slot and the read needs no bounds check, whoever moves the cursor and
//! wherever to. This is the whole proof, and it is this module's alone: the slot count and the
//! mask are private and fixed when the program is built.
//!
//! The mask costs one `and` per instruction, where the bounds check it replaces cost a compare
//! and a branch; a jump needs neither a check nor a clamp. The mask never changes an index the
//! loop can reach: the verifier proves every branch target to be an instruction of the
//! function (rule `BranchTarget`) and every block to end with a terminator (rule
//! `Terminator`), so the fast loop only ever reaches an instruction or, at worst, the first
//! `End`, where it stops (the main loop then reports running past the end, as it did before).
//! The cursor's `debug_assert!` checks exactly that the mask changed nothing.

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
    /// The program of `insts`.
    pub fn new(mut insts: Vec<T>) -> Program<T> {
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
        Cursor {
            slots: &self.slots,
            mask: self.slots.len() - 1,
            ip: ip.min(self.len),
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

/// A position in a [`Program`]. Any index is safe: the instruction read is the one at the
/// index modulo the slot count, a power of two.
pub(in crate::vm) struct Cursor<'p, T> {
    /// The program's slots: a power of two of them.
    slots: &'p [T],
    /// `slots.len() - 1`.
    mask: usize,
    /// The instruction index (below `slots.len()` unless a jump left the program, which the
    /// verifier rules out).
    ip: usize,
}

impl<'p, T> Cursor<'p, T> {
    /// The index of the instruction under the cursor.
    #[inline(always)]
    pub(in crate::vm) fn ip(&self) -> usize {
        self.ip
    }

    /// The instruction under the cursor.
    #[inline(always)]
    pub(in crate::vm) fn inst(&self) -> &'p T {
        debug_assert!(
            self.ip < self.slots.len(),
            "instruction {} out of range",
            self.ip
        );
        // SAFETY: `slots.len()` is a power of two (`Program::new`) and `mask` is
        // `slots.len() - 1`, so `ip & mask < slots.len()`.
        unsafe { self.slots.get_unchecked(self.ip & self.mask) }
    }

    /// Moves to the next instruction.
    #[inline(always)]
    pub(in crate::vm) fn step(&mut self) {
        self.ip += 1;
    }

    /// Moves to instruction `target`.
    #[inline(always)]
    pub(in crate::vm) fn jump(&mut self, target: usize) {
        self.ip = target;
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
            assert_eq!(program.clone().into_insts(), ops);
        }
    }
}
