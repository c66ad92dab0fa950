//! Superinstructions: a peephole pass over a verified function's [`Inst`]s that rewrites the
//! most frequent pairs and forms of tight loops into variants the interpreter runs in one
//! dispatch, with their edges (target, fuel cost, copies) in the instruction instead of the
//! function's side tables.
//!
//! - A compare (`cmp.lt.i32.s`, `cmp.lt.i64.s`, the other i32 and i64 compares) whose
//!   destination is the condition of the `cond_br` right after it, when neither edge copies
//!   anything, becomes a compare-and-branch that still writes the destination (no liveness
//!   analysis needed). The `cond_br` stays at the next index: nothing branches there (it is
//!   not the first instruction of a block) and the fused instruction always branches, so it
//!   is never run, while every instruction keeps its index, its byte offset (trap and fuel
//!   locations) and the segment costs the verifier computed on the bytecode's instructions.
//! - A `br` whose remap is empty, or one or two i32-bank copies, carries them in the
//!   instruction; two copies that move one 64-bit pair become one 64-bit copy; three or four
//!   copies between registers under 256 are held as bytes (a loop's back edge that passes its
//!   state to the head, as `vm_scalars.spin`'s does). A `br` with more i32-bank copies (and
//!   no reference copy) carries its target, cost and the range of its copies, so it skips the
//!   edge table.
//!
//! - Straight-line sequences of a vmvx workgroup's inner loop become one instruction each (a
//!   second pass, over the first pass's result): an `add.i64` into the offset of the 4-byte
//!   `buffer.load` after it, two `add.i64`s then that load, any two `add.i64`s, a multiply-add
//!   into memory (load, `fma.f32` on what it loaded, store of the result where it was
//!   loaded), and a loop's increment with the `br` after it (a `BrShort`, a `BrMove64`
//!   that copies the increment to the block argument, or a `BrMove1`), or an `add.i32` with
//!   the `br` after it that holds its copies as bytes (a `BrMove4`). Pairs of register
//!   operations of scalar loops are one instruction too: a shift then an xor (a xorshift's
//!   step), a zero extension then an i64 add, an `and` then an int-to-float cast. The
//!   superinstruction replaces the sequence's first instruction and leaves the others in
//!   place, as the `cond_br` of a compare-and-branch; each is made from the instructions at
//!   the indices after it as the first pass left them, which do what the unfused
//!   instructions do. A sequence never spans a terminator except as its last instruction,
//!   so its instructions always run one after the other: running them at once is running
//!   them in order, whatever branches to the first of them.
//!
//! Only edges whose target index and cost fit in 16 bits are held in an instruction; others
//! stay as they are. The passes run after the fuel costs are charged and change no index, so
//! they change no observable behaviour: registers, results, traps, fuel and locations are
//! those of the unfused instructions.

use super::code::{ByteMove, ByteReg, FunctionCode, ICmp, Inst, Program, Reg, Reg64, ShortEdge};

/// Rewrites `code`'s instructions into superinstructions where they apply.
pub fn fuse(code: &mut FunctionCode) {
    let mut insts = std::mem::take(&mut code.insts).into_insts();
    for i in 0..insts.len() {
        let fused = match insts[i] {
            Inst::CmpLtI32S { a, b, d } => compare_and_branch(code, &insts, i, d)
                .map(|(t, f)| Inst::BrLtI32S { a, b, d, t, f }),
            Inst::CmpEqI32 { a, b, d } => {
                compare_and_branch(code, &insts, i, d).map(|(t, f)| Inst::BrCmp32 {
                    op: ICmp::Eq,
                    a,
                    b,
                    d,
                    t,
                    f,
                })
            }
            Inst::Cmp32 { op, a, b, d } => compare_and_branch(code, &insts, i, d)
                .map(|(t, f)| Inst::BrCmp32 { op, a, b, d, t, f }),
            Inst::Cmp64 {
                op: ICmp::LtS,
                a,
                b,
                d,
            } => compare_and_branch(code, &insts, i, d).map(|(t, f)| Inst::BrLtI64S {
                a,
                b,
                d,
                t,
                f,
            }),
            Inst::Cmp64 { op, a, b, d } => compare_and_branch(code, &insts, i, d)
                .map(|(t, f)| Inst::BrCmp64 { op, a, b, d, t, f }),
            Inst::Br { edge } => branch(code, edge),
            _ => None,
        };
        if let Some(inst) = fused {
            insts[i] = inst;
        }
    }
    fuse_sequences(&mut insts);
    code.insts = Program::new(insts);
}

/// Replaces the first instruction of each straight-line sequence of `insts` that has a
/// superinstruction with it. The sequences are read from a copy of `insts` made before any
/// replacement, so that each is made of instructions that do what the bytecode's do (a
/// superinstruction does more than its first instruction: it would not do as a part).
fn fuse_sequences(insts: &mut [Inst]) {
    let before = insts.to_vec();
    for (i, inst) in insts.iter_mut().enumerate() {
        if let Some(fused) = sequence(&before[i..]) {
            *inst = fused;
        }
    }
}

/// The superinstruction of the sequence that `insts` starts with, if it has one.
fn sequence(insts: &[Inst]) -> Option<Inst> {
    match *insts {
        [
            Inst::AddI64 { a: x, b: y, d: t },
            Inst::AddI64 { a, b, d: o },
            Inst::BufferLoad32 {
                b: buffer,
                o: at,
                d,
            },
            ..,
        ] if at == o && (a == t || b == t) => {
            // The second add reads `t` and one other operand, in either order (the sum is
            // the same).
            let z = if a == t { b } else { a };
            Some(Inst::AddAddLoad32 {
                x,
                y,
                t,
                z,
                o,
                b: buffer,
                d,
            })
        }
        [
            Inst::AddI64 { a: x, b: y, d: o },
            Inst::BufferLoad32 { b, o: at, d },
            ..,
        ] if at == o => Some(Inst::AddLoad32 { x, y, o, b, d }),
        [Inst::AddI64 { a: x, b: y, d }, Inst::BrShort { to }, ..] => {
            Some(Inst::AddBr { x, y, d, to })
        }
        [
            Inst::AddI64 { a: x, b: y, d },
            Inst::BrMove64 { to, s, d: dst },
            ..,
        ] if s == d => Some(Inst::AddBrMove64 { x, y, d, to, dst }),
        [Inst::AddI32 { a, b, d }, Inst::BrMove4 { to, moves }, ..] => Some(Inst::AddI32BrMove4 {
            a: ByteReg::new(a)?,
            b: ByteReg::new(b)?,
            d: ByteReg::new(d)?,
            to,
            moves,
        }),
        [
            Inst::AddI64 { a: x, b: y, d },
            Inst::BrMove1 { to, src, dst },
            ..,
        ] => Some(Inst::AddBrMove1 {
            x,
            y,
            d,
            to,
            src,
            dst,
        }),
        [
            Inst::ShlI32 { a, b: s, d: t },
            Inst::XorI32 { a: x, b: y, d },
            ..,
        ] => Some(Inst::ShlXorI32 { a, s, t, x, y, d }),
        [
            Inst::ShrI32U { a, b: s, d: t },
            Inst::XorI32 { a: x, b: y, d },
            ..,
        ] => Some(Inst::ShrUXorI32 { a, s, t, x, y, d }),
        [
            Inst::ExtI32I64U { a, d: e },
            Inst::AddI64 { a: x, b: y, d },
            ..,
        ] => Some(Inst::ExtUAddI64 { a, e, x, y, d }),
        [
            Inst::AndI32 { a, b, d: t },
            Inst::CastSi32F32 { a: c, d },
            ..,
        ] => Some(Inst::AndCastF32 { a, b, t, c, d }),
        [
            Inst::MulI64 { a, b, d: t },
            Inst::XorI64 { a: x, b: y, d },
            ..,
        ] => Some(Inst::MulXorI64 { a, b, t, x, y, d }),
        [
            Inst::FmaF32 { a, b, c, d },
            Inst::AddI64 { a: x, b: y, d: e },
            Inst::BrMove1 { to, src, dst },
            ..,
        ] if e == x && src == d && d.0 != x.0 && d.0 != x.0 + 1 => Some(Inst::FmaAddBrMove1 {
            a: ByteReg::new(a)?,
            b: ByteReg::new(b)?,
            c: ByteReg::new(c)?,
            d: ByteReg::new(d)?,
            x,
            y,
            to,
            dst: ByteReg::new(dst)?,
        }),
        [
            Inst::AddI64 {
                a: a0,
                b: b0,
                d: d0,
            },
            Inst::AddI64 {
                a: a1,
                b: b1,
                d: d1,
            },
            ..,
        ] => Some(Inst::AddAddI64 {
            a0,
            b0,
            d0,
            a1,
            b1,
            d1,
        }),
        [
            Inst::BufferLoad32 { b, o, d: v },
            Inst::FmaF32 { a: x, b: y, c, d },
            Inst::BufferStore32 {
                b: stored_to,
                o: stored_at,
                v: stored,
            },
            ..,
        ] if c == v && stored_to == b && stored_at == o && stored == d => {
            Some(Inst::LoadFmaStore32 { b, o, v, x, y, d })
        }
        _ => None,
    }
}

/// The two edges of the `cond_br` after instruction `i`, when it branches on `d` (the
/// compare's result) and neither edge copies anything.
fn compare_and_branch(
    code: &FunctionCode,
    insts: &[Inst],
    i: usize,
    d: Reg,
) -> Option<(ShortEdge, ShortEdge)> {
    let Some(&Inst::CondBr { c, t, f }) = insts.get(i + 1) else {
        return None;
    };
    if c != d {
        return None;
    }
    let (t, t_moves) = short_edge(code, t)?;
    let (f, f_moves) = short_edge(code, f)?;
    (t_moves.is_empty() && f_moves.is_empty()).then_some((t, f))
}

/// `br` over `edge` as a superinstruction: without copies, with its one or two i32-bank
/// copies in the instruction (one 64-bit copy when they move a pair), three or four copies
/// between registers under 256 as bytes (`BrMove4`), or with the range of its copies.
fn branch(code: &FunctionCode, edge: u32) -> Option<Inst> {
    let (to, moves) = short_edge(code, edge)?;
    match *moves {
        [] => Some(Inst::BrShort { to }),
        [(src, dst)] => Some(Inst::BrMove1 { to, src, dst }),
        [(s0, d0), (s1, d1)] if moves_one_pair(s0, d0, s1, d1) => Some(Inst::BrMove64 {
            to,
            s: Reg64(s0.0),
            d: Reg64(d0.0),
        }),
        [(s0, d0), (s1, d1)] => Some(Inst::BrMove2 { to, s0, d0, s1, d1 }),
        _ => match byte_moves(moves) {
            Some(moves) => Some(Inst::BrMove4 { to, moves }),
            None => Some(Inst::BrMoves {
                to,
                moves: code.edges[edge as usize].moves,
            }),
        },
    }
}

/// Three or four copies as a [`Inst::BrMove4`]'s, when all their registers are under 256
/// (three padded with a repeat of the third, which changes nothing).
fn byte_moves(moves: &[(Reg, Reg)]) -> Option<[ByteMove; 4]> {
    let byte = |&(src, dst): &(Reg, Reg)| ByteMove::new(src, dst);
    match moves {
        [m0, m1, m2] => Some([byte(m0)?, byte(m1)?, byte(m2)?, byte(m2)?]),
        [m0, m1, m2, m3] => Some([byte(m0)?, byte(m1)?, byte(m2)?, byte(m3)?]),
        _ => None,
    }
}

/// Whether the copies `s0 -> d0`, then `s1 -> d1` are the copy of the pair at `s0` to the
/// pair at `d0`: the second copy moves the high halves, and does not read what the first
/// wrote (`d0` is not `s0`'s high half).
fn moves_one_pair(s0: Reg, d0: Reg, s1: Reg, d1: Reg) -> bool {
    let pair_base = |r: Reg| r.0 % 2 == 0;
    let next = |r: Reg| r.0.checked_add(1);
    pair_base(s0) && pair_base(d0) && next(s0) == Some(s1.0) && next(d0) == Some(d1.0) && d0 != s1
}

/// Edge `edge` as a [`ShortEdge`] and its i32-bank copies, when its target and cost fit and
/// it copies no reference.
fn short_edge(code: &FunctionCode, edge: u32) -> Option<(ShortEdge, &[(Reg, Reg)])> {
    let e = code.edges.get(edge as usize)?;
    if e.ref_moves.len != 0 {
        return None;
    }
    let short = ShortEdge {
        target: u16::try_from(e.target).ok()?,
        cost: u16::try_from(e.cost).ok()?,
    };
    Some((short, code.moves.get(e.moves.range())?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::code::{Edge, RefReg, Reg64, Span};

    fn edge(target: u32, cost: u32, moves: Span, ref_moves: Span) -> Edge {
        Edge {
            target,
            moves,
            ref_moves,
            cost,
        }
    }

    fn span(start: u32, len: u16) -> Span {
        Span { start, len }
    }

    fn short(target: u16, cost: u16) -> ShortEdge {
        ShortEdge { target, cost }
    }

    /// A compare fuses with the `cond_br` that tests its result, which stays in place; a
    /// compare whose result the branch does not test, or whose branch copies registers, is
    /// left alone.
    #[test]
    fn a_compare_fuses_with_the_branch_on_its_result_only() {
        let (a, b, d) = (Reg(0), Reg(1), Reg(2));
        let (a64, b64) = (Reg64(4), Reg64(6));
        let cond_br = Inst::CondBr { c: d, t: 0, f: 1 };
        let copying = Inst::CondBr { c: d, t: 0, f: 2 };
        let mut code = FunctionCode {
            insts: Program::new(vec![
                Inst::CmpLtI32S { a, b, d },
                cond_br,
                Inst::Cmp64 {
                    op: ICmp::LtS,
                    a: a64,
                    b: b64,
                    d,
                },
                cond_br,
                Inst::Cmp64 {
                    op: ICmp::LtU,
                    a: a64,
                    b: b64,
                    d,
                },
                cond_br,
                Inst::CmpEqI32 { a, b, d },
                cond_br,
                Inst::CmpLtI32S { a, b, d: Reg(3) },
                cond_br,
                Inst::CmpLtI32S { a, b, d },
                copying,
            ]),
            moves: vec![(Reg(1), Reg(2))],
            edges: vec![
                edge(7, 3, span(0, 0), span(0, 0)),
                edge(9, 5, span(0, 0), span(0, 0)),
                edge(9, 5, span(0, 1), span(0, 0)),
            ],
            ..FunctionCode::default()
        };
        fuse(&mut code);
        let (t, f) = (short(7, 3), short(9, 5));
        assert_eq!(
            *code.insts,
            [
                Inst::BrLtI32S { a, b, d, t, f },
                cond_br,
                Inst::BrLtI64S {
                    a: a64,
                    b: b64,
                    d,
                    t,
                    f
                },
                cond_br,
                Inst::BrCmp64 {
                    op: ICmp::LtU,
                    a: a64,
                    b: b64,
                    d,
                    t,
                    f
                },
                cond_br,
                Inst::BrCmp32 {
                    op: ICmp::Eq,
                    a,
                    b,
                    d,
                    t,
                    f
                },
                cond_br,
                Inst::CmpLtI32S { a, b, d: Reg(3) },
                cond_br,
                Inst::CmpLtI32S { a, b, d },
                copying,
            ]
        );
    }

    /// A `br` carries its copies when it has no reference copy and a target and cost under
    /// 2^16: one or two i32-bank copies in the instruction, two that move a pair as one
    /// 64-bit copy, three or four between registers under 256 in the instruction (three with
    /// the third repeated), more (or with a larger register) as the range of the function's
    /// copies.
    #[test]
    fn a_branch_carries_its_copies() {
        let mut code = FunctionCode {
            insts: Program::new((0..13).map(|edge| Inst::Br { edge }).collect()),
            moves: vec![
                (Reg(1), Reg(2)),
                (Reg(3), Reg(4)),
                (Reg(5), Reg(6)),
                // The pair 4 to the pair 8.
                (Reg(4), Reg(8)),
                (Reg(5), Reg(9)),
                // Not a pair copy: the second reads what the first wrote (5 is 4's high half).
                (Reg(4), Reg(5)),
                (Reg(5), Reg(6)),
                // Not a pair: odd bases.
                (Reg(3), Reg(7)),
                (Reg(4), Reg(8)),
                // Five copies, the last from a register over 255.
                (Reg(1), Reg(2)),
                (Reg(3), Reg(4)),
                (Reg(5), Reg(6)),
                (Reg(7), Reg(8)),
                (Reg(256), Reg(9)),
            ],
            ref_moves: vec![(RefReg(0), RefReg(1))],
            edges: vec![
                edge(4, 2, span(0, 0), span(0, 0)),
                edge(4, 2, span(0, 1), span(0, 0)),
                edge(4, 2, span(0, 2), span(0, 0)),
                edge(4, 2, span(0, 3), span(0, 0)),
                edge(4, 2, span(0, 1), span(0, 1)),
                edge(1 << 16, 2, span(0, 0), span(0, 0)),
                edge(4, 1 << 16, span(0, 0), span(0, 0)),
                edge(4, 2, span(3, 2), span(0, 0)),
                edge(4, 2, span(5, 2), span(0, 0)),
                edge(4, 2, span(7, 2), span(0, 0)),
                edge(4, 2, span(9, 4), span(0, 0)),
                edge(4, 2, span(9, 5), span(0, 0)),
                edge(4, 2, span(11, 3), span(0, 0)),
            ],
            ..FunctionCode::default()
        };
        fuse(&mut code);
        let to = short(4, 2);
        assert_eq!(
            *code.insts,
            [
                Inst::BrShort { to },
                Inst::BrMove1 {
                    to,
                    src: Reg(1),
                    dst: Reg(2)
                },
                Inst::BrMove2 {
                    to,
                    s0: Reg(1),
                    d0: Reg(2),
                    s1: Reg(3),
                    d1: Reg(4)
                },
                Inst::BrMove4 {
                    to,
                    moves: [
                        ByteMove(1, 2),
                        ByteMove(3, 4),
                        ByteMove(5, 6),
                        ByteMove(5, 6)
                    ]
                },
                Inst::Br { edge: 4 },
                Inst::Br { edge: 5 },
                Inst::Br { edge: 6 },
                Inst::BrMove64 {
                    to,
                    s: Reg64(4),
                    d: Reg64(8)
                },
                Inst::BrMove2 {
                    to,
                    s0: Reg(4),
                    d0: Reg(5),
                    s1: Reg(5),
                    d1: Reg(6)
                },
                Inst::BrMove2 {
                    to,
                    s0: Reg(3),
                    d0: Reg(7),
                    s1: Reg(4),
                    d1: Reg(8)
                },
                Inst::BrMove4 {
                    to,
                    moves: [
                        ByteMove(1, 2),
                        ByteMove(3, 4),
                        ByteMove(5, 6),
                        ByteMove(7, 8)
                    ]
                },
                Inst::BrMoves {
                    to,
                    moves: span(9, 5)
                },
                Inst::BrMoves {
                    to,
                    moves: span(11, 3)
                },
            ]
        );
    }

    /// The pairs of `spin`'s loop (a xorshift's steps, a widening into an i64 sum, a bit
    /// turned into a float) and an increment before a one- or four-copy back edge become
    /// superinstructions at their first index, the second left in place; what reads the
    /// first's result is not required of the second (it runs after the first's write).
    #[test]
    fn register_pairs_fuse_at_their_first_instruction() {
        let (x, s13, s17, t, u, one) = (Reg(3), Reg(8), Reg(9), Reg(11), Reg(12), Reg(2));
        let (wide, sum, i, step) = (Reg64(12), Reg64(4), Reg64(16), Reg64(18));
        let body = vec![
            Inst::ShlI32 { a: x, b: s13, d: t },
            Inst::XorI32 { a: x, b: t, d: t },
            Inst::ShrI32U { a: t, b: s17, d: u },
            Inst::XorI32 { a: t, b: u, d: u },
            Inst::ExtI32I64U { a: t, d: wide },
            Inst::AddI64 {
                a: sum,
                b: wide,
                d: wide,
            },
            Inst::AndI32 { a: t, b: one, d: u },
            Inst::CastSi32F32 { a: u, d: u },
            Inst::AddI64 {
                a: i,
                b: step,
                d: i,
            },
            Inst::Br { edge: 0 },
            // Not pairs: a shift then an add, a cast without the `and`.
            Inst::ShlI32 { a: x, b: s13, d: t },
            Inst::AddI32 { a: x, b: t, d: t },
            Inst::CastSi32F32 { a: u, d: u },
        ];
        let mut code = FunctionCode {
            insts: Program::new(body.clone()),
            moves: vec![(Reg(14), Reg(6))],
            edges: vec![edge(0, 12, span(0, 1), span(0, 0))],
            ..FunctionCode::default()
        };
        fuse(&mut code);
        let to = short(0, 12);
        let mut want = body;
        want[0] = Inst::ShlXorI32 {
            a: x,
            s: s13,
            t,
            x,
            y: t,
            d: t,
        };
        want[2] = Inst::ShrUXorI32 {
            a: t,
            s: s17,
            t: u,
            x: t,
            y: u,
            d: u,
        };
        want[4] = Inst::ExtUAddI64 {
            a: t,
            e: wide,
            x: sum,
            y: wide,
            d: wide,
        };
        want[6] = Inst::AndCastF32 {
            a: t,
            b: one,
            t: u,
            c: u,
            d: u,
        };
        want[8] = Inst::AddBrMove1 {
            x: i,
            y: step,
            d: i,
            to,
            src: Reg(14),
            dst: Reg(6),
        };
        want[9] = Inst::BrMove1 {
            to,
            src: Reg(14),
            dst: Reg(6),
        };
        assert_eq!(*code.insts, want);
        // An i32 increment before a back edge of four copies, when its registers fit in a
        // byte.
        let (i, one, wide) = (Reg(1), Reg(2), Reg(256));
        let moves = vec![
            (Reg(15), Reg(6)),
            (Reg(12), Reg(4)),
            (Reg(13), Reg(5)),
            (Reg(11), Reg(3)),
        ];
        let mut code = FunctionCode {
            insts: Program::new(vec![
                Inst::AddI32 { a: i, b: one, d: i },
                Inst::Br { edge: 0 },
                Inst::AddI32 {
                    a: wide,
                    b: one,
                    d: i,
                },
                Inst::Br { edge: 0 },
            ]),
            moves,
            edges: vec![edge(0, 14, span(0, 4), span(0, 0))],
            ..FunctionCode::default()
        };
        fuse(&mut code);
        let to = short(0, 14);
        let byte_moves = [
            ByteMove(15, 6),
            ByteMove(12, 4),
            ByteMove(13, 5),
            ByteMove(11, 3),
        ];
        let back_edge = Inst::BrMove4 {
            to,
            moves: byte_moves,
        };
        assert_eq!(
            *code.insts,
            [
                Inst::AddI32BrMove4 {
                    a: ByteReg(1),
                    b: ByteReg(2),
                    d: ByteReg(1),
                    to,
                    moves: byte_moves,
                },
                back_edge,
                Inst::AddI32 {
                    a: wide,
                    b: one,
                    d: i,
                },
                back_edge,
            ]
        );
    }

    /// The sequences of a vmvx workgroup's inner loop become superinstructions at their first
    /// index, the rest left in place; a sequence whose operands do not chain (a load at
    /// another offset, an fma that does not add what was loaded, a store elsewhere) is not.
    #[test]
    fn workgroup_loop_sequences_fuse_at_their_first_instruction() {
        let (i, shift, zero, t, o) = (Reg64(0), Reg64(2), Reg64(4), Reg64(6), Reg64(8));
        let (buffer, acc) = (RefReg(0), RefReg(1));
        let (v, w, x, y) = (Reg(10), Reg(11), Reg(12), Reg(13));
        let next = Reg64(14);
        let add = |a, b, d| Inst::AddI64 { a, b, d };
        let load = |b, o, d| Inst::BufferLoad32 { b, o, d };
        let body = vec![
            add(i, shift, t),
            add(zero, t, o),
            load(buffer, o, v),
            add(i, zero, o),
            load(buffer, o, w),
            load(acc, i, x),
            Inst::FmaF32 {
                a: v,
                b: w,
                c: x,
                d: y,
            },
            Inst::BufferStore32 { b: acc, o: i, v: y },
            add(i, shift, next),
            Inst::Br { edge: 0 },
            // Not chained: the load is at `i`, not at the sum.
            add(i, shift, o),
            load(buffer, i, v),
            // Not chained: the fma adds `w`, not what was loaded; the store goes elsewhere.
            load(acc, i, x),
            Inst::FmaF32 {
                a: v,
                b: x,
                c: w,
                d: y,
            },
            Inst::BufferStore32 { b: acc, o: i, v: y },
            load(acc, i, x),
            Inst::FmaF32 {
                a: v,
                b: w,
                c: x,
                d: y,
            },
            Inst::BufferStore32 { b: acc, o, v: y },
        ];
        let mut code = FunctionCode {
            insts: Program::new(body.clone()),
            moves: vec![(Reg(14), Reg(0)), (Reg(15), Reg(1))],
            edges: vec![edge(0, 9, span(0, 2), span(0, 0))],
            ..FunctionCode::default()
        };
        fuse(&mut code);
        let to = short(0, 9);
        let mut want = body;
        want[0] = Inst::AddAddLoad32 {
            x: i,
            y: shift,
            t,
            z: zero,
            o,
            b: buffer,
            d: v,
        };
        want[1] = Inst::AddLoad32 {
            x: zero,
            y: t,
            o,
            b: buffer,
            d: v,
        };
        want[3] = Inst::AddLoad32 {
            x: i,
            y: zero,
            o,
            b: buffer,
            d: w,
        };
        want[5] = Inst::LoadFmaStore32 {
            b: acc,
            o: i,
            v: x,
            x: v,
            y: w,
            d: y,
        };
        want[8] = Inst::AddBrMove64 {
            x: i,
            y: shift,
            d: next,
            to,
            dst: i,
        };
        want[9] = Inst::BrMove64 { to, s: next, d: i };
        assert_eq!(*code.insts, want);
        // An increment into the block argument's own register, then a `br` without copies.
        let mut code = FunctionCode {
            insts: Program::new(vec![add(i, shift, i), Inst::Br { edge: 0 }]),
            edges: vec![edge(0, 9, span(0, 0), span(0, 0))],
            ..FunctionCode::default()
        };
        fuse(&mut code);
        assert_eq!(
            *code.insts,
            [
                Inst::AddBr {
                    x: i,
                    y: shift,
                    d: i,
                    to
                },
                Inst::BrShort { to }
            ]
        );
        // Two adds that feed no load are one instruction too.
        let mut code = FunctionCode {
            insts: Program::new(vec![add(i, shift, t), add(t, zero, o), add(o, o, next)]),
            ..FunctionCode::default()
        };
        fuse(&mut code);
        assert_eq!(
            code.insts[..2],
            [
                Inst::AddAddI64 {
                    a0: i,
                    b0: shift,
                    d0: t,
                    a1: t,
                    b1: zero,
                    d1: o,
                },
                Inst::AddAddI64 {
                    a0: t,
                    b0: zero,
                    d0: o,
                    a1: o,
                    b1: o,
                    d1: next,
                },
            ]
        );
    }

    /// A multiply then an xor (a hash's step) fuse; a loop's `fma` body fuses with the
    /// increment and one-copy back edge that follow when the copy moves the `fma`'s result
    /// and that result is not the counter; otherwise the body is left alone and the
    /// increment still fuses with the back edge.
    #[test]
    fn a_hash_step_and_an_fma_loop_body_fuse() {
        let (a, b, t, d) = (Reg64(0), Reg64(2), Reg64(4), Reg64(6));
        let (acc, half, x, next, dst) = (Reg(10), Reg(11), Reg(12), Reg(13), Reg(14));
        let (i, step) = (Reg64(16), Reg64(18));
        let to = short(0, 7);
        let body = |fma_into: Reg| {
            vec![
                Inst::MulI64 { a, b, d: t },
                Inst::XorI64 { a: t, b: a, d },
                Inst::FmaF32 {
                    a: acc,
                    b: half,
                    c: x,
                    d: fma_into,
                },
                Inst::AddI64 {
                    a: i,
                    b: step,
                    d: i,
                },
                Inst::Br { edge: 0 },
            ]
        };
        let fused = |fma_into: Reg| {
            let mut code = FunctionCode {
                insts: Program::new(body(fma_into)),
                moves: vec![(fma_into, dst)],
                edges: vec![edge(0, 7, span(0, 1), span(0, 0))],
                ..FunctionCode::default()
            };
            fuse(&mut code);
            code.insts.to_vec()
        };
        let got = fused(next);
        assert_eq!(
            got[0],
            Inst::MulXorI64 {
                a,
                b,
                t,
                x: t,
                y: a,
                d
            }
        );
        assert_eq!(got[1], Inst::XorI64 { a: t, b: a, d });
        assert_eq!(
            got[2],
            Inst::FmaAddBrMove1 {
                a: ByteReg::new(acc).unwrap(),
                b: ByteReg::new(half).unwrap(),
                c: ByteReg::new(x).unwrap(),
                d: ByteReg::new(next).unwrap(),
                x: i,
                y: step,
                to,
                dst: ByteReg::new(dst).unwrap(),
            }
        );
        let add_br = Inst::AddBrMove1 {
            x: i,
            y: step,
            d: i,
            to,
            src: next,
            dst,
        };
        assert_eq!(got[3], add_br);
        // The `fma` into the counter's high half: the copy would move the increment's
        // result, so only the increment fuses with the branch.
        let into_counter = Reg(17);
        let got = fused(into_counter);
        assert!(matches!(got[2], Inst::FmaF32 { .. }), "{:?}", got[2]);
        assert!(matches!(got[3], Inst::AddBrMove1 { .. }), "{:?}", got[3]);
    }
}
