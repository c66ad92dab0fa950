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
//!   instruction; two copies that move one 64-bit pair become one 64-bit copy. A `br` with
//!   more i32-bank copies (and no reference copy) carries its target, cost and the range of
//!   its copies, so it skips the edge table.
//!
//! Only edges whose target index and cost fit in 16 bits are held in an instruction; others
//! stay as they are. The pass runs after the fuel costs are charged and changes no index, so
//! it changes no observable behaviour: registers, results, traps, fuel and locations are those
//! of the unfused instructions.

use super::code::{FunctionCode, ICmp, Inst, Program, Reg, Reg64, ShortEdge};

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
    code.insts = Program::new(insts);
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
/// copies in the instruction (one 64-bit copy when they move a pair), or with the range of
/// its copies.
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
        _ => Some(Inst::BrMoves {
            to,
            moves: code.edges[edge as usize].moves,
        }),
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
    /// 64-bit copy, more as the range of the function's copies.
    #[test]
    fn a_branch_carries_its_copies() {
        let mut code = FunctionCode {
            insts: Program::new((0..10).map(|edge| Inst::Br { edge }).collect()),
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
                Inst::BrMoves {
                    to,
                    moves: span(0, 3)
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
            ]
        );
    }
}
