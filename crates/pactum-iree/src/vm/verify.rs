//! The bytecode verifier: checks one function against every rule of the facts sheet's §7
//! (including the per-register, type-id and 64-bit global rules the 3.13 runtime skips) and
//! produces its pre-decoded [`FunctionCode`].
//!
//! Decoding is table-driven ([`isa`](super::isa)): every field of every instruction is read and
//! checked by its kind (register bank, range, alignment, MOVE bit, ordinals), then the
//! instruction is turned into an [`Inst`]. Branch targets are resolved to instruction indices
//! once the whole function has been walked.

use std::collections::{BTreeMap, BTreeSet};

use super::code::{self as c, *};
use super::error::{FunctionName, VerifyRule, VmError};
use super::isa::{self, Field, OpSet};
use super::value::VmType;
use crate::signature::cconv::CconvItem;
use crate::vmfb::{FeatureBits, FunctionDescriptor};

/// The features this VM provides: `EXT_F32 | EXT_F64 | YIELD | UNWIND`.
pub const AVAILABLE_FEATURES: u32 = 0xF;

/// A function's calling convention, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sig {
    /// Argument items.
    pub args: Vec<CconvItem>,
    /// Result items.
    pub results: Vec<CconvItem>,
}

/// What the verifier needs to know about the module around a function.
pub struct ModuleInfo<'a> {
    /// The module's name (for errors).
    pub module: &'a str,
    /// The resolved type table.
    pub types: &'a [VmType],
    /// `global_bytes_capacity`.
    pub global_bytes: u64,
    /// `global_ref_count`.
    pub global_refs: u64,
    /// Number of rodata segments.
    pub rodata_count: u64,
    /// Signatures of the internal functions, by ordinal.
    pub functions: &'a [Sig],
    /// Signatures of the imports, by import ordinal.
    pub imports: &'a [Sig],
}

/// The kind of a plain calling-convention item (`None` for a variadic span).
pub fn kind_of(item: &CconvItem) -> Option<Kind> {
    Some(match item {
        CconvItem::I32 => Kind::I32,
        CconvItem::I64 => Kind::I64,
        CconvItem::F32 => Kind::F32,
        CconvItem::F64 => Kind::F64,
        CconvItem::Ref => Kind::Ref,
        CconvItem::Variadic(_) => return None,
    })
}

/// Where the arguments of a function with these kinds go (facts sheet §3): i32-bank slots
/// in order, 64-bit values on the next even slot; refs in order. Also returns the i32 slots
/// and ref slots used.
pub fn place(kinds: &[Kind]) -> (Vec<(Kind, u16)>, u32, u32) {
    let (mut ni, mut nr) = (0u32, 0u32);
    let mut out = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        match kind {
            Kind::I32 | Kind::F32 => {
                out.push((kind, ni as u16));
                ni += 1;
            }
            Kind::I64 | Kind::F64 => {
                ni = ni.next_multiple_of(2);
                out.push((kind, ni as u16));
                ni += 2;
            }
            Kind::Ref => {
                out.push((kind, nr as u16));
                nr += 1;
            }
        }
    }
    (out, ni, nr)
}

/// The rounded register count: `pow2ceil(max(1, n))`.
fn rounded(n: i16) -> u32 {
    (n.max(1) as u32).next_power_of_two()
}

/// One decoded operand.
#[derive(Clone, Copy, Debug)]
enum Op {
    Reg(u16),
    Imm(u64),
    /// Into the scratch register list.
    List(usize, usize),
    /// Into the scratch string.
    Str,
    /// A target pc and remap (into the scratch pairs).
    Edge(u32, usize, usize),
    /// Cases: into the scratch cases.
    Cases(usize, usize),
    None,
}

struct Verifier<'a> {
    info: &'a ModuleInfo<'a>,
    ordinal: u32,
    name: Option<String>,
    code: &'a [u8],
    requirements: u32,
    ni: u32,
    nr: u32,
    out: FunctionCode,
    /// Start of the instruction being decoded.
    at: usize,
    pc: usize,
    scratch: Vec<u16>,
    pairs: Vec<(u16, u16)>,
    cases: Vec<(u32, usize, usize)>,
    text: String,
    /// (edge index, target pc, pc of the instruction).
    edge_targets: Vec<(usize, u32, usize)>,
    /// (call site index, target pc, pc of the instruction).
    call_targets: Vec<(usize, u32, usize)>,
}

type R<T> = Result<T, VmError>;

impl<'a> Verifier<'a> {
    fn error(&self, rule: VerifyRule, offset: usize, detail: impl Into<String>) -> VmError {
        VmError::Verify {
            module: self.info.module.to_owned(),
            function: match &self.name {
                Some(name) => FunctionName::Named(name.clone()),
                None => FunctionName::Ordinal(self.ordinal),
            },
            offset: offset as u32,
            rule,
            detail: detail.into(),
        }
    }

    fn fail<T>(&self, rule: VerifyRule, detail: impl Into<String>) -> R<T> {
        Err(self.error(rule, self.at, detail))
    }

    // -- Raw reads, bounded by the function.

    fn bytes<const N: usize>(&mut self) -> R<[u8; N]> {
        let end = self.pc + N;
        match self.code.get(self.pc..end) {
            Some(b) => {
                self.pc = end;
                Ok(b.try_into().unwrap_or([0; N]))
            }
            None => self.fail(
                VerifyRule::Truncated,
                format!(
                    "the instruction runs past the end of the function ({} bytes)",
                    self.code.len()
                ),
            ),
        }
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.bytes::<1>()?[0])
    }

    fn u16(&mut self) -> R<u16> {
        Ok(u16::from_le_bytes(self.bytes()?))
    }

    fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    fn align2(&mut self) -> R<()> {
        if self.pc % 2 == 1 {
            self.u8()?;
        }
        Ok(())
    }

    // -- Register checks.

    fn check_i32(&self, r: u16) -> R<u16> {
        if r & 0x8000 != 0 {
            return self.fail(
                VerifyRule::RegisterBank,
                format!("register {r:#06x} is a ref register where an i32 register is required"),
            );
        }
        if u32::from(r) >= self.ni {
            return self.fail(
                VerifyRule::RegisterRange,
                format!(
                    "register %i{r} is past the function's {} i32 registers",
                    self.ni
                ),
            );
        }
        Ok(r)
    }

    fn check_i64(&self, r: u16) -> R<u16> {
        if r & 0x8000 != 0 {
            return self.fail(
                VerifyRule::RegisterBank,
                format!("register {r:#06x} is a ref register where an i64 register is required"),
            );
        }
        if r % 2 != 0 {
            return self.fail(
                VerifyRule::RegisterAlignment,
                format!("64-bit register %i{r} is not an even register"),
            );
        }
        if u32::from(r) + 1 >= self.ni {
            return self.fail(
                VerifyRule::RegisterRange,
                format!(
                    "register %i{r}:{} is past the function's {} i32 registers",
                    r + 1,
                    self.ni
                ),
            );
        }
        Ok(r)
    }

    fn check_ref(&self, r: u16, move_ok: bool) -> R<u16> {
        if r & 0x8000 == 0 {
            return self.fail(
                VerifyRule::RegisterBank,
                format!("register %i{r} is an i32 register where a ref register is required"),
            );
        }
        if !move_ok && r & 0x4000 != 0 {
            return self.fail(
                VerifyRule::MoveBit,
                format!(
                    "ref register %r{} carries MOVE where it may not",
                    r & 0x3FFF
                ),
            );
        }
        if u32::from(r & 0x3FFF) >= self.nr {
            return self.fail(
                VerifyRule::RegisterRange,
                format!(
                    "register %r{} is past the function's {} ref registers",
                    r & 0x3FFF,
                    self.nr
                ),
            );
        }
        Ok(r)
    }

    fn check_any(&self, r: u16) -> R<u16> {
        if r & 0x8000 != 0 {
            self.check_ref(r, true)
        } else {
            self.check_i32(r)
        }
    }

    fn check_kind(&self, r: u16, kind: Kind) -> R<u16> {
        match kind {
            Kind::I32 | Kind::F32 => self.check_i32(r),
            Kind::I64 | Kind::F64 => self.check_i64(r),
            Kind::Ref => self.check_ref(r, true),
        }
    }

    fn check_ordinal(&self, value: u32, limit: u64, rule: VerifyRule, what: &str) -> R<u32> {
        if u64::from(value) >= limit {
            return self.fail(
                rule,
                format!("{what} {value} is out of range (the module has {limit})"),
            );
        }
        Ok(value)
    }

    fn target(&mut self) -> R<u32> {
        let target = self.u32()?;
        if target >= 0x00FF_FFFF || target as usize + 1 >= self.code.len() {
            return self.fail(
                VerifyRule::BranchTarget,
                format!("branch target {target:#x} is outside the function"),
            );
        }
        Ok(target)
    }

    fn remap(&mut self) -> R<(usize, usize)> {
        self.align2()?;
        let count = self.u16()?;
        let start = self.pairs.len();
        for _ in 0..count {
            let src = self.u16()?;
            let dst = self.u16()?;
            self.check_any(src)?;
            self.check_any(dst)?;
            if (src ^ dst) & 0x8000 != 0 {
                return self.fail(
                    VerifyRule::RegisterBank,
                    format!("remap copies between banks ({src:#06x} -> {dst:#06x})"),
                );
            }
            if dst & 0x4000 != 0 {
                return self.fail(VerifyRule::MoveBit, "a remap destination carries MOVE");
            }
            self.pairs.push((src, dst));
        }
        Ok((start, usize::from(count)))
    }

    // -- Fields.

    fn field(&mut self, field: Field, previous: Op) -> R<Op> {
        let info = self.info;
        Ok(match field {
            Field::RegI32 => Op::Reg(self.u16().and_then(|r| self.check_i32(r))?),
            Field::RegI64 => Op::Reg(self.u16().and_then(|r| self.check_i64(r))?),
            Field::RegRef => Op::Reg(self.u16().and_then(|r| self.check_ref(r, false))?),
            Field::RegRefMove => Op::Reg(self.u16().and_then(|r| self.check_ref(r, true))?),
            Field::ConstI32 => Op::Imm(u64::from(self.u32()?)),
            Field::ConstI64 => Op::Imm(self.u64()?),
            Field::ConstU16 => Op::Imm(u64::from(self.u16()?)),
            Field::GlobalOffset4 | Field::GlobalOffset8 => {
                let offset = self.u32()?;
                let size = if field == Field::GlobalOffset8 { 8 } else { 4 };
                if u64::from(offset) + size > info.global_bytes {
                    return self.fail(
                        VerifyRule::GlobalOffset,
                        format!(
                            "global bytes {offset}..{} are past the module's {} bytes of globals",
                            u64::from(offset) + size,
                            info.global_bytes
                        ),
                    );
                }
                Op::Imm(u64::from(offset))
            }
            Field::GlobalRef => {
                let v = self.u32()?;
                Op::Imm(u64::from(self.check_ordinal(
                    v,
                    info.global_refs,
                    VerifyRule::GlobalRef,
                    "ref global",
                )?))
            }
            Field::Rodata => {
                let v = self.u32()?;
                Op::Imm(u64::from(self.check_ordinal(
                    v,
                    info.rodata_count,
                    VerifyRule::RodataOrdinal,
                    "rodata segment",
                )?))
            }
            Field::Type => {
                let v = self.u32()?;
                Op::Imm(u64::from(self.check_ordinal(
                    v,
                    info.types.len() as u64,
                    VerifyRule::TypeId,
                    "type id",
                )?))
            }
            Field::Func => {
                let v = self.u32()?;
                if v & 0x8000_0000 != 0 {
                    self.check_ordinal(
                        v & 0x7FFF_FFFF,
                        info.imports.len() as u64,
                        VerifyRule::CalleeOrdinal,
                        "import",
                    )?;
                } else {
                    self.check_ordinal(
                        v,
                        info.functions.len() as u64,
                        VerifyRule::CalleeOrdinal,
                        "function",
                    )?;
                }
                Op::Imm(u64::from(v))
            }
            Field::Import => {
                let v = self.u32()?;
                if v & 0x8000_0000 == 0 {
                    return self.fail(
                        VerifyRule::CalleeOrdinal,
                        format!("{v:#x} is not an import ordinal (bit 31 clear)"),
                    );
                }
                self.check_ordinal(
                    v & 0x7FFF_FFFF,
                    info.imports.len() as u64,
                    VerifyRule::CalleeOrdinal,
                    "import",
                )?;
                Op::Imm(u64::from(v & 0x7FFF_FFFF))
            }
            Field::Str => {
                let len = usize::from(self.u16()?);
                let end = self.pc + len;
                let Some(bytes) = self.code.get(self.pc..end) else {
                    return self.fail(
                        VerifyRule::Truncated,
                        "a string runs past the end of the function",
                    );
                };
                self.text = String::from_utf8_lossy(bytes).into_owned();
                self.pc = end;
                Op::Str
            }
            Field::ListI32
            | Field::ListI64
            | Field::ListRefMove
            | Field::ListAny
            | Field::SegList => {
                self.align2()?;
                let count = usize::from(self.u16()?);
                let start = self.scratch.len();
                for _ in 0..count {
                    let r = self.u16()?;
                    match field {
                        Field::ListI32 => self.check_i32(r)?,
                        Field::ListI64 => self.check_i64(r)?,
                        Field::ListRefMove => self.check_ref(r, true)?,
                        Field::ListAny => self.check_any(r)?,
                        _ => r,
                    };
                    self.scratch.push(r);
                }
                Op::List(start, count)
            }
            Field::Target => {
                let target = self.target()?;
                Op::Edge(target, 0, 0)
            }
            Field::Remap => {
                let (start, count) = self.remap()?;
                match previous {
                    Op::Edge(target, _, _) => Op::Edge(target, start, count),
                    _ => Op::None,
                }
            }
            Field::Cases => {
                let Op::Imm(count) = previous else {
                    return self.fail(VerifyRule::Truncated, "br_table without a size");
                };
                let start = self.cases.len();
                for _ in 0..count {
                    let target = self.target()?;
                    let (s, n) = self.remap()?;
                    self.cases.push((target, s, n));
                }
                Op::Cases(start, count as usize)
            }
        })
    }

    // -- Building the side tables.

    fn edge(&mut self, op: Op) -> R<u32> {
        let Op::Edge(target, start, count) = op else {
            return self.fail(VerifyRule::BranchTarget, "missing branch target");
        };
        let moves_start = self.out.moves.len() as u32;
        for &(src, dst) in &self.pairs[start..start + count] {
            self.out.moves.push(if src & 0x8000 != 0 {
                Move::Ref {
                    src: RefReg(src),
                    dst: RefReg(dst),
                }
            } else {
                Move::I32 { src, dst }
            });
        }
        let index = self.out.edges.len();
        self.out.edges.push(Edge {
            target,
            moves: Span {
                start: moves_start,
                len: count as u16,
            },
            cost: 0,
        });
        self.edge_targets.push((index, target, self.at));
        Ok(index as u32)
    }

    fn list(&self, op: Op) -> &[u16] {
        match op {
            Op::List(start, count) => &self.scratch[start..start + count],
            _ => &[],
        }
    }

    fn span(&mut self, op: Op) -> Span {
        let start = self.out.regs.len() as u32;
        let regs = self.list(op).to_vec();
        let len = regs.len() as u16;
        self.out.regs.extend(regs);
        Span { start, len }
    }

    fn call_site(
        &mut self,
        callee: u32,
        segments: Option<Op>,
        operands: Op,
        results: Op,
    ) -> R<u32> {
        let info = self.info;
        let (callee, sig) = if callee & 0x8000_0000 != 0 {
            let ordinal = callee & 0x7FFF_FFFF;
            (Callee::Import(ordinal), &info.imports[ordinal as usize])
        } else {
            if segments.is_some() {
                return self.fail(VerifyRule::Variadic, "a variadic call must call an import");
            }
            (Callee::Internal(callee), &info.functions[callee as usize])
        };
        let segments: Vec<u16> = segments.map(|s| self.list(s).to_vec()).unwrap_or_default();
        let operands = self.list(operands).to_vec();
        let results = self.list(results).to_vec();
        let mut next = operands.iter().copied();
        let mut args = Vec::new();
        let plain: Vec<Kind> = sig.args.iter().filter_map(kind_of).collect();
        let (placement, _, _) = place(&plain);
        let mut placed = placement.iter();
        let mut take = |this: &Self, kind: Kind, which: &str| -> R<u16> {
            let Some(r) = next.next() else {
                return this.fail(
                    VerifyRule::CallSignature,
                    format!(
                        "the call passes {} operands, fewer than the callee's arguments ({which})",
                        operands.len()
                    ),
                );
            };
            this.check_kind(r, kind).map_err(|e| match e {
                VmError::Verify { offset, detail, .. } => this.error(
                    VerifyRule::CallSignature,
                    offset as usize,
                    format!("operand for a {} argument: {detail}", kind.name()),
                ),
                other => other,
            })
        };
        for (k, item) in sig.args.iter().enumerate() {
            match item {
                CconvItem::Variadic(inner) => {
                    let Some(&count) = segments.get(k) else {
                        return self.fail(
                            VerifyRule::Variadic,
                            format!("argument {k} is a variadic span but the call has no segment size for it"),
                        );
                    };
                    let kinds: Vec<Kind> = inner.iter().filter_map(kind_of).collect();
                    if kinds.len() != inner.len() {
                        return self.fail(
                            VerifyRule::Variadic,
                            "nested variadic spans are not supported",
                        );
                    }
                    args.push(ArgOp::Count(u32::from(count)));
                    for _ in 0..count {
                        for &kind in &kinds {
                            let src = take(self, kind, "span")?;
                            args.push(ArgOp::Value { kind, src, dst: 0 });
                        }
                    }
                }
                _ => {
                    let (kind, dst) = placed.next().copied().unwrap_or((Kind::I32, 0));
                    let src = take(self, kind, "argument")?;
                    args.push(ArgOp::Value { kind, src, dst });
                }
            }
        }
        if next.next().is_some() {
            return self.fail(
                VerifyRule::CallSignature,
                format!(
                    "the call passes {} operands, more than the callee's arguments",
                    operands.len()
                ),
            );
        }
        let mut out_results = Vec::new();
        if results.len() != sig.results.len() {
            return self.fail(
                VerifyRule::CallSignature,
                format!(
                    "the call has {} result registers but the callee returns {}",
                    results.len(),
                    sig.results.len()
                ),
            );
        }
        for (item, &r) in sig.results.iter().zip(&results) {
            let Some(kind) = kind_of(item) else {
                return self.fail(VerifyRule::Variadic, "variadic results are not supported");
            };
            self.check_kind(r, kind).map_err(|e| match e {
                VmError::Verify { offset, detail, .. } => self.error(
                    VerifyRule::CallSignature,
                    offset as usize,
                    format!("result register for a {} result: {detail}", kind.name()),
                ),
                other => other,
            })?;
            if kind == Kind::Ref && r & 0x4000 != 0 {
                return self.fail(VerifyRule::MoveBit, "a call result register carries MOVE");
            }
            out_results.push((kind, r));
        }
        let index = self.out.calls.len();
        self.out.calls.push(CallSite {
            callee,
            args: args.into(),
            results: out_results.into(),
            then: None,
            cost: 0,
        });
        Ok(index as u32)
    }

    fn build(&mut self, set: OpSet, opcode: u8, ops: &[Op]) -> R<Inst> {
        use Inst::*;
        let r = |k: usize| match ops.get(k) {
            Some(Op::Reg(r)) => *r,
            _ => 0,
        };
        let rr = |k: usize| RefReg(r(k));
        let imm = |k: usize| match ops.get(k) {
            Some(Op::Imm(v)) => *v,
            _ => 0,
        };
        let o = |k: usize| imm(k) as u32;
        let op = |k: usize| ops.get(k).copied().unwrap_or(Op::None);
        let bin32 = |op: IBin| Bin32 {
            op,
            a: r(0),
            b: r(1),
            d: r(2),
        };
        let bin64 = |op: IBin| Bin64 {
            op,
            a: r(0),
            b: r(1),
            d: r(2),
        };
        let conv = |op: c::Conv| Inst::Conv {
            op,
            a: r(0),
            d: r(1),
        };
        let load = |width: Width| BufferLoad {
            width,
            b: rr(0),
            o: r(1),
            d: r(2),
        };
        let store = |width: Width| BufferStore {
            width,
            b: rr(0),
            o: r(1),
            v: r(2),
        };
        let fill = |width: Width| BufferFill {
            width,
            b: rr(0),
            o: r(1),
            n: r(2),
            v: r(3),
        };
        let inst = match set {
            OpSet::Core => match opcode {
                0x00 => GlobalLoad32 {
                    offset: o(0),
                    d: r(1),
                },
                0x01 => GlobalStore32 {
                    offset: o(0),
                    s: r(1),
                },
                0x02 => GlobalLoadInd32 { o: r(0), d: r(1) },
                0x03 => GlobalStoreInd32 { o: r(0), s: r(1) },
                0x04 => GlobalLoad64 {
                    offset: o(0),
                    d: r(1),
                },
                0x05 => GlobalStore64 {
                    offset: o(0),
                    s: r(1),
                },
                0x06 => GlobalLoadInd64 { o: r(0), d: r(1) },
                0x07 => GlobalStoreInd64 { o: r(0), s: r(1) },
                0x08 => GlobalLoadRef {
                    global: o(0),
                    ty: o(1),
                    d: rr(2),
                },
                0x09 => GlobalStoreRef {
                    global: o(0),
                    ty: o(1),
                    s: rr(2),
                },
                0x0A => GlobalLoadIndRef {
                    o: r(0),
                    ty: o(1),
                    d: rr(2),
                },
                0x0B => GlobalStoreIndRef {
                    o: r(0),
                    ty: o(1),
                    s: rr(2),
                },
                0x0C => Const32 { value: 0, d: r(0) },
                0x0D => Const32 {
                    value: o(0),
                    d: r(1),
                },
                0x0E => Const64 {
                    lo: 0,
                    hi: 0,
                    d: r(0),
                },
                0x0F => Const64 {
                    lo: imm(0) as u32,
                    hi: (imm(0) >> 32) as u32,
                    d: r(1),
                },
                0x10 => ConstRefZero { d: rr(0) },
                0x11 => ConstRefRodata {
                    segment: o(0),
                    d: rr(1),
                },
                0x12 => ListAlloc {
                    ty: o(0),
                    capacity: r(1),
                    d: rr(2),
                },
                0x13 => ListReserve {
                    list: rr(0),
                    n: r(1),
                },
                0x14 => ListSize {
                    list: rr(0),
                    d: r(1),
                },
                0x15 => ListResize {
                    list: rr(0),
                    n: r(1),
                },
                0x16 => ListGetI32 {
                    list: rr(0),
                    i: r(1),
                    d: r(2),
                },
                0x17 => ListSetI32 {
                    list: rr(0),
                    i: r(1),
                    v: r(2),
                },
                0x18 => ListGetI64 {
                    list: rr(0),
                    i: r(1),
                    d: r(2),
                },
                0x19 => ListSetI64 {
                    list: rr(0),
                    i: r(1),
                    v: r(2),
                },
                0x1A => ListGetRef {
                    list: rr(0),
                    i: r(1),
                    ty: o(2),
                    d: rr(3),
                },
                0x1B => ListSetRef {
                    list: rr(0),
                    i: r(1),
                    v: rr(2),
                },
                0x1C => Select32 {
                    c: r(0),
                    t: r(1),
                    f: r(2),
                    d: r(3),
                },
                0x1D => Select64 {
                    c: r(0),
                    t: r(1),
                    f: r(2),
                    d: r(3),
                },
                0x1E => SelectRef {
                    c: r(0),
                    ty: o(1),
                    t: rr(2),
                    f: rr(3),
                    d: rr(4),
                },
                0x1F => {
                    let values = self.span(op(2));
                    Switch32 {
                        index: r(0),
                        default: r(1),
                        values,
                        d: r(3),
                    }
                }
                0x20 => {
                    let values = self.span(op(2));
                    SwitchI64 {
                        index: r(0),
                        default: r(1),
                        values,
                        d: r(3),
                    }
                }
                0x21 => {
                    let values = self.list(op(3)).iter().map(|&v| RefReg(v)).collect();
                    self.out.switch_refs.push(c::SwitchRef {
                        index: r(0),
                        ty: o(1),
                        default: rr(2),
                        values,
                        result: rr(4),
                    });
                    SwitchRef {
                        table: self.out.switch_refs.len() as u32 - 1,
                    }
                }
                0x22 => AddI32 {
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x23 => SubI32 {
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x24 => bin32(IBin::Mul),
                0x25 => Div32 {
                    op: IDiv::DivS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x26 => Div32 {
                    op: IDiv::DivU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x27 => Div32 {
                    op: IDiv::RemS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x28 => Div32 {
                    op: IDiv::RemU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x29 => Fma32 {
                    a: r(0),
                    b: r(1),
                    c: r(2),
                    d: r(3),
                },
                0x2A => AddI64 {
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x2B => bin64(IBin::Sub),
                0x2C => bin64(IBin::Mul),
                0x2D => Div64 {
                    op: IDiv::DivS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x2E => Div64 {
                    op: IDiv::DivU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x2F => Div64 {
                    op: IDiv::RemS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x30 => Div64 {
                    op: IDiv::RemU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x31 => Fma64 {
                    a: r(0),
                    b: r(1),
                    c: r(2),
                    d: r(3),
                },
                0x32 => Un32 {
                    op: IUn::Not,
                    a: r(0),
                    d: r(1),
                },
                0x33 => bin32(IBin::And),
                0x34 => bin32(IBin::Or),
                0x35 => bin32(IBin::Xor),
                0x36 => Un64 {
                    op: IUn::Not,
                    a: r(0),
                    d: r(1),
                },
                0x37 => bin64(IBin::And),
                0x38 => bin64(IBin::Or),
                0x39 => bin64(IBin::Xor),
                0x3A => Shift32 {
                    op: Shift::Shl,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x3B => Shift32 {
                    op: Shift::ShrS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x3C => Shift32 {
                    op: Shift::ShrU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x3D => Shift64 {
                    op: Shift::Shl,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x3E => Shift64 {
                    op: Shift::ShrS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x3F => Shift64 {
                    op: Shift::ShrU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x40 => Un32 {
                    op: IUn::TruncI8,
                    a: r(0),
                    d: r(1),
                },
                0x41 => Un32 {
                    op: IUn::TruncI16,
                    a: r(0),
                    d: r(1),
                },
                0x42 => conv(c::Conv::TruncI64I32),
                0x43 => Un32 {
                    op: IUn::ExtI8S,
                    a: r(0),
                    d: r(1),
                },
                0x44 => Un32 {
                    op: IUn::ExtI8U,
                    a: r(0),
                    d: r(1),
                },
                0x45 => Un32 {
                    op: IUn::ExtI16S,
                    a: r(0),
                    d: r(1),
                },
                0x46 => Un32 {
                    op: IUn::ExtI16U,
                    a: r(0),
                    d: r(1),
                },
                0x47 => conv(c::Conv::ExtI32I64S),
                0x48 => conv(c::Conv::ExtI32I64U),
                0x49 => CmpEqI32 {
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x4A => Cmp32 {
                    op: ICmp::Ne,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x4B => CmpLtI32S {
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x4C => Cmp32 {
                    op: ICmp::LtU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x4D => NzI32 { a: r(0), d: r(1) },
                0x4E => Cmp64 {
                    op: ICmp::Eq,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x4F => Cmp64 {
                    op: ICmp::Ne,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x50 => Cmp64 {
                    op: ICmp::LtS,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x51 => Cmp64 {
                    op: ICmp::LtU,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                },
                0x52 => conv(c::Conv::NzI64),
                0x53 => CmpEqRef {
                    a: rr(0),
                    b: rr(1),
                    d: r(2),
                },
                0x54 => CmpNeRef {
                    a: rr(0),
                    b: rr(1),
                    d: r(2),
                },
                0x55 => CmpNzRef { a: rr(0), d: r(1) },
                0x56 => Br {
                    edge: self.edge(op(1))?,
                },
                0x57 => {
                    let t = self.edge(op(2))?;
                    let f = self.edge(op(4))?;
                    CondBr { c: r(0), t, f }
                }
                0x58 => Call {
                    site: self.call_site(o(0), None, op(1), op(2))?,
                },
                0x59 => Call {
                    site: self.call_site(o(0), Some(op(1)), op(2), op(3))?,
                },
                0x5A => {
                    let regs = self.list(op(0)).to_vec();
                    let own = self.info.functions[self.ordinal as usize].results.clone();
                    if regs.len() < own.len() {
                        return self.fail(
                            VerifyRule::ReturnSignature,
                            format!(
                                "return passes {} values but the function returns {}",
                                regs.len(),
                                own.len()
                            ),
                        );
                    }
                    let start = self.out.returns.len() as u32;
                    for (item, &reg) in own.iter().zip(&regs) {
                        let kind = kind_of(item).unwrap_or(Kind::I32);
                        self.check_kind(reg, kind).map_err(|e| match e {
                            VmError::Verify { offset, detail, .. } => self.error(
                                VerifyRule::ReturnSignature,
                                offset as usize,
                                format!("register for a {} result: {detail}", kind.name()),
                            ),
                            other => other,
                        })?;
                        self.out.returns.push((kind, reg));
                    }
                    Return {
                        results: Span {
                            start,
                            len: own.len() as u16,
                        },
                    }
                }
                0x5B => {
                    self.out.strings.push(std::mem::take(&mut self.text));
                    Fail {
                        status: r(0),
                        message: self.out.strings.len() as u32 - 1,
                    }
                }
                0x5C => ImportResolved {
                    import: o(0),
                    d: r(1),
                },
                0x5D => Yield {
                    edge: self.edge(op(1))?,
                },
                0x5E | 0x5F => ReleaseMoved {
                    regs: self.span(op(1)),
                },
                0x60 => Br {
                    edge: self.edge(op(2))?,
                },
                0x61 => Br {
                    edge: self.edge(op(1))?,
                },
                0x62 => load(Width::U8),
                0x63 => load(Width::S8),
                0x64 => load(Width::U16),
                0x65 => load(Width::S16),
                0x66 => load(Width::B32),
                0x67 => load(Width::B64),
                0x68 => store(Width::U8),
                0x69 => store(Width::U16),
                0x6A => store(Width::B32),
                0x6B => store(Width::B64),
                0x6C => BufferAlloc {
                    len: r(0),
                    align: r(1),
                    d: rr(2),
                },
                0x6D => BufferClone {
                    src: rr(0),
                    o: r(1),
                    len: r(2),
                    align: r(3),
                    d: rr(4),
                },
                0x6E => BufferLength { b: rr(0), d: r(1) },
                0x6F => BufferCopy {
                    src: rr(0),
                    so: r(1),
                    dst: rr(2),
                    o: r(3),
                    len: r(4),
                },
                0x70 => BufferCompare {
                    a: rr(0),
                    ao: r(1),
                    b: rr(2),
                    bo: r(3),
                    len: r(4),
                    d: r(5),
                },
                0x71 => fill(Width::U8),
                0x72 => fill(Width::U16),
                0x73 => fill(Width::B32),
                0x74 => fill(Width::B64),
                0x75 => Un32 {
                    op: IUn::Ctlz,
                    a: r(0),
                    d: r(1),
                },
                0x76 => Un64 {
                    op: IUn::Ctlz,
                    a: r(0),
                    d: r(1),
                },
                0x77 => Un32 {
                    op: IUn::Abs,
                    a: r(0),
                    d: r(1),
                },
                0x78 => Un64 {
                    op: IUn::Abs,
                    a: r(0),
                    d: r(1),
                },
                0x7A => bin32(IBin::MinS),
                0x7B => bin32(IBin::MinU),
                0x7C => bin32(IBin::MaxS),
                0x7D => bin32(IBin::MaxU),
                0x7E => bin64(IBin::MinS),
                0x7F => bin64(IBin::MinU),
                0x80 => bin64(IBin::MaxS),
                0x81 => bin64(IBin::MaxU),
                0x82 => CastAnyRef {
                    s: rr(0),
                    ty: o(1),
                    d: rr(2),
                },
                0x83 => {
                    let default = self.edge(op(2))?;
                    let Op::Cases(start, count) = op(4) else {
                        return self.fail(VerifyRule::Truncated, "br_table without cases");
                    };
                    let mut cases = Vec::with_capacity(count);
                    for k in start..start + count {
                        let (target, s, n) = self.cases[k];
                        cases.push(self.edge(Op::Edge(target, s, n))?);
                    }
                    self.out.tables.push(c::BrTable {
                        default,
                        cases: cases.into(),
                    });
                    BrTable {
                        index: r(0),
                        table: self.out.tables.len() as u32 - 1,
                    }
                }
                0x84 => BufferHash {
                    b: rr(0),
                    o: r(1),
                    len: r(2),
                    d: r(3),
                },
                0x85 => {
                    for &reg in self.list(op(0)) {
                        if reg & 0x8000 == 0 {
                            return self.fail(
                                VerifyRule::RegisterBank,
                                format!("discard.refs lists i32 register %i{reg}"),
                            );
                        }
                    }
                    DiscardRefs {
                        regs: self.span(op(0)),
                    }
                }
                0x86 => AssignRef { s: rr(0), d: rr(1) },
                0x87 | 0x88 => {
                    let variadic = opcode == 0x88;
                    let k = usize::from(variadic);
                    let segments = variadic.then(|| op(1));
                    let site = self.call_site(o(0), segments, op(1 + k), op(3 + k))?;
                    let Op::Edge(target, _, _) = op(2 + k) else {
                        return self.fail(VerifyRule::BranchTarget, "missing branch target");
                    };
                    self.call_targets.push((site as usize, target, self.at));
                    Call { site }
                }
                _ => {
                    return self.fail(
                        VerifyRule::UnknownOpcode,
                        format!("unknown opcode {opcode:#04x}"),
                    );
                }
            },
            OpSet::F32 => {
                let bin = |op: FBin| BinF32 {
                    op,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                };
                let un = |op: FUn| UnF32 {
                    op,
                    a: r(0),
                    d: r(1),
                };
                let cmp = |op: FCmp| CmpF32 {
                    op,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                };
                match opcode {
                    0x00 => GlobalLoad32 {
                        offset: o(0),
                        d: r(1),
                    },
                    0x01 => GlobalStore32 {
                        offset: o(0),
                        s: r(1),
                    },
                    0x02 => GlobalLoadInd32 { o: r(0), d: r(1) },
                    0x03 => GlobalStoreInd32 { o: r(0), s: r(1) },
                    0x04 => Const32 { value: 0, d: r(0) },
                    0x05 => Const32 {
                        value: o(0),
                        d: r(1),
                    },
                    0x06 => ListGetF32 {
                        list: rr(0),
                        i: r(1),
                        d: r(2),
                    },
                    0x07 => ListSetF32 {
                        list: rr(0),
                        i: r(1),
                        v: r(2),
                    },
                    0x08 => Select32 {
                        c: r(0),
                        t: r(1),
                        f: r(2),
                        d: r(3),
                    },
                    0x09 => {
                        let values = self.span(op(2));
                        Switch32 {
                            index: r(0),
                            default: r(1),
                            values,
                            d: r(3),
                        }
                    }
                    0x0A => bin(FBin::Add),
                    0x0B => bin(FBin::Sub),
                    0x0C => bin(FBin::Mul),
                    0x0D => bin(FBin::Div),
                    0x0E => bin(FBin::Rem),
                    0x0F => FmaF32 {
                        a: r(0),
                        b: r(1),
                        c: r(2),
                        d: r(3),
                    },
                    0x10 => un(FUn::Abs),
                    0x11 => un(FUn::Neg),
                    0x12 => un(FUn::Ceil),
                    0x13 => un(FUn::Floor),
                    0x14 => conv(c::Conv::Si32F32),
                    0x15 => conv(c::Conv::Ui32F32),
                    0x16 | 0x17 => conv(c::Conv::F32I32),
                    0x18 | 0x19 => Copy32 { s: r(0), d: r(1) },
                    0x1A => un(FUn::Atan),
                    0x1B => bin(FBin::Atan2),
                    0x1C => un(FUn::Cos),
                    0x1D => un(FUn::Sin),
                    0x1E => un(FUn::Exp),
                    0x1F => un(FUn::Exp2),
                    0x20 => un(FUn::Expm1),
                    0x21 => un(FUn::Log),
                    0x22 => un(FUn::Log10),
                    0x23 => un(FUn::Log1p),
                    0x24 => un(FUn::Log2),
                    0x25 => bin(FBin::Pow),
                    0x26 => un(FUn::Rsqrt),
                    0x27 => un(FUn::Sqrt),
                    0x28 => un(FUn::Tanh),
                    0x29 => un(FUn::Erf),
                    0x2A => cmp(FCmp::EqO),
                    0x2B => cmp(FCmp::EqU),
                    0x2C => cmp(FCmp::NeO),
                    0x2D => cmp(FCmp::NeU),
                    0x2E => cmp(FCmp::LtO),
                    0x2F => cmp(FCmp::LtU),
                    0x30 => cmp(FCmp::LteO),
                    0x31 => cmp(FCmp::LteU),
                    0x32 => conv(c::Conv::NanF32),
                    0x33 => load(Width::B32),
                    0x34 => store(Width::B32),
                    0x35 => fill(Width::B32),
                    0x36 => un(FUn::Round),
                    0x37 => bin(FBin::Min),
                    0x38 => bin(FBin::Max),
                    0x39 => un(FUn::RoundEven),
                    0x3A => conv(c::Conv::F32Si64),
                    0x3B => conv(c::Conv::F32Ui64),
                    0x3C => conv(c::Conv::Si64F32),
                    0x3D => conv(c::Conv::Ui64F32),
                    _ => {
                        return self.fail(
                            VerifyRule::UnknownOpcode,
                            format!("unknown ExtF32 opcode {opcode:#04x}"),
                        );
                    }
                }
            }
            OpSet::F64 => {
                let bin = |op: FBin| BinF64 {
                    op,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                };
                let un = |op: FUn| UnF64 {
                    op,
                    a: r(0),
                    d: r(1),
                };
                let cmp = |op: FCmp| CmpF64 {
                    op,
                    a: r(0),
                    b: r(1),
                    d: r(2),
                };
                match opcode {
                    0x00 => GlobalLoad64 {
                        offset: o(0),
                        d: r(1),
                    },
                    0x01 => GlobalStore64 {
                        offset: o(0),
                        s: r(1),
                    },
                    0x02 => GlobalLoadInd64 { o: r(0), d: r(1) },
                    0x03 => GlobalStoreInd64 { o: r(0), s: r(1) },
                    0x04 => Const64 {
                        lo: 0,
                        hi: 0,
                        d: r(0),
                    },
                    0x05 => Const64 {
                        lo: imm(0) as u32,
                        hi: (imm(0) >> 32) as u32,
                        d: r(1),
                    },
                    0x06 => ListGetF64 {
                        list: rr(0),
                        i: r(1),
                        d: r(2),
                    },
                    0x07 => ListSetF64 {
                        list: rr(0),
                        i: r(1),
                        v: r(2),
                    },
                    0x08 => Select64 {
                        c: r(0),
                        t: r(1),
                        f: r(2),
                        d: r(3),
                    },
                    0x09 => {
                        let values = self.span(op(2));
                        Switch64 {
                            index: r(0),
                            default: r(1),
                            values,
                            d: r(3),
                        }
                    }
                    0x0A => bin(FBin::Add),
                    0x0B => bin(FBin::Sub),
                    0x0C => bin(FBin::Mul),
                    0x0D => bin(FBin::Div),
                    0x0E => bin(FBin::Rem),
                    0x0F => FmaF64 {
                        a: r(0),
                        b: r(1),
                        c: r(2),
                        d: r(3),
                    },
                    0x10 => un(FUn::Abs),
                    0x11 => un(FUn::Neg),
                    0x12 => un(FUn::Ceil),
                    0x13 => un(FUn::Floor),
                    0x14 => conv(c::Conv::F64F32),
                    0x15 => conv(c::Conv::F32F64),
                    0x16 => conv(c::Conv::Si32F64),
                    0x17 => conv(c::Conv::Ui32F64),
                    0x18 | 0x19 => conv(c::Conv::F64I32),
                    0x1A => conv(c::Conv::Si64F64),
                    0x1B => conv(c::Conv::Ui64F64),
                    0x1C | 0x1D => conv(c::Conv::F64I64),
                    0x1E | 0x1F => Copy64 { s: r(0), d: r(1) },
                    0x20 => un(FUn::Atan),
                    0x21 => bin(FBin::Atan2),
                    0x22 => un(FUn::Cos),
                    0x23 => un(FUn::Sin),
                    0x24 => un(FUn::Exp),
                    0x25 => un(FUn::Exp2),
                    0x26 => un(FUn::Expm1),
                    0x27 => un(FUn::Log),
                    0x28 => un(FUn::Log10),
                    0x29 => un(FUn::Log1p),
                    0x2A => un(FUn::Log2),
                    0x2B => bin(FBin::Pow),
                    0x2C => un(FUn::Rsqrt),
                    0x2D => un(FUn::Sqrt),
                    0x2E => un(FUn::Tanh),
                    0x2F => un(FUn::Erf),
                    0x30 => cmp(FCmp::EqO),
                    0x31 => cmp(FCmp::EqU),
                    0x32 => cmp(FCmp::NeO),
                    0x33 => cmp(FCmp::NeU),
                    0x34 => cmp(FCmp::LtO),
                    0x35 => cmp(FCmp::LtU),
                    0x36 => cmp(FCmp::LteO),
                    0x37 => cmp(FCmp::LteU),
                    0x38 => conv(c::Conv::NanF64),
                    0x39 => load(Width::B64),
                    0x3A => store(Width::B64),
                    0x3B => fill(Width::B64),
                    0x3C => un(FUn::Round),
                    0x3D => bin(FBin::Min),
                    0x3E => bin(FBin::Max),
                    0x3F => un(FUn::RoundEven),
                    _ => {
                        return self.fail(
                            VerifyRule::UnknownOpcode,
                            format!("unknown ExtF64 opcode {opcode:#04x}"),
                        );
                    }
                }
            }
        };
        Ok(inst)
    }

    fn run(mut self, block_count: i16) -> R<FunctionCode> {
        let len = self.code.len();
        let mut in_block = false;
        let mut markers: BTreeMap<u32, u32> = BTreeMap::new();
        let mut ops: Vec<Op> = Vec::with_capacity(8);
        while self.pc + 1 < len {
            self.at = self.pc;
            let byte = self.code[self.pc];
            if !in_block {
                if byte != isa::BLOCK_MARKER {
                    return self.fail(
                        VerifyRule::BlockMarker,
                        format!(
                            "expected a block marker (0x79) after a terminator, found {byte:#04x}"
                        ),
                    );
                }
                markers.insert(self.pc as u32, self.out.insts.len() as u32);
                in_block = true;
                self.pc += 1;
                continue;
            }
            if byte == isa::BLOCK_MARKER {
                return self.fail(
                    VerifyRule::Terminator,
                    "a block marker follows an instruction that is not a terminator",
                );
            }
            let opcode_byte = self.u8()?;
            let (set, opcode) = match opcode_byte {
                isa::PREFIX_F32 | isa::PREFIX_F64 => {
                    let (set, bit, name) = if opcode_byte == isa::PREFIX_F32 {
                        (OpSet::F32, FeatureBits::EXT_F32, "EXT_F32")
                    } else {
                        (OpSet::F64, FeatureBits::EXT_F64, "EXT_F64")
                    };
                    if self.requirements & bit == 0 {
                        return self.fail(
                            VerifyRule::Extension,
                            format!(
                                "an {name} instruction in a function that does not require {name}"
                            ),
                        );
                    }
                    (set, self.u8()?)
                }
                b => (OpSet::Core, b),
            };
            let Some(info) = isa::op_info(set, opcode) else {
                return self.fail(
                    VerifyRule::UnknownOpcode,
                    format!(
                        "unknown opcode {opcode_byte:#04x}{}",
                        if set == OpSet::Core {
                            String::new()
                        } else {
                            format!(" {opcode:#04x}")
                        }
                    ),
                );
            };
            ops.clear();
            self.scratch.clear();
            self.pairs.clear();
            self.cases.clear();
            let mut previous = Op::None;
            for &field in info.fields {
                // Operand k is field k; a remap's operand is the whole edge (target and moves).
                let op = self.field(field, previous)?;
                ops.push(op);
                previous = op;
            }
            let inst = self.build(set, opcode, &ops)?;
            self.out.insts.push(inst);
            self.out.pcs.push(self.at as u32);
            if isa::is_terminator(set, opcode) {
                in_block = false;
            }
        }
        self.at = len.saturating_sub(1);
        if in_block {
            return self.fail(
                VerifyRule::Terminator,
                "the last block does not end with a terminator",
            );
        }
        let mut blocks: BTreeSet<u32> = markers.keys().copied().collect();
        for &(_, target, at) in self.edge_targets.iter().chain(&self.call_targets) {
            if !markers.contains_key(&target) {
                return Err(self.error(
                    VerifyRule::BranchTarget,
                    at,
                    format!("branch target {target:#x} is not a block marker"),
                ));
            }
            blocks.insert(target);
        }
        if blocks.len() != block_count as usize {
            return self.fail(
                VerifyRule::BlockCount,
                format!(
                    "the function has {} blocks but its descriptor says {block_count}",
                    blocks.len()
                ),
            );
        }
        for &(edge, target, _) in &self.edge_targets {
            self.out.edges[edge].target = markers[&target];
        }
        for &(site, target, _) in &self.call_targets {
            self.out.calls[site].then = Some(markers[&target]);
        }
        self.charge_segments();
        Ok(self.out)
    }

    /// Fills in the fuel costs: each entry point of a segment charges the instructions from
    /// there to the segment's end.
    fn charge_segments(&mut self) {
        let out = &mut self.out;
        let n = out.insts.len();
        // cost[i]: instructions from i to the end of its segment (cost[n] = 0).
        let mut cost = vec![0u32; n + 1];
        for i in (0..n).rev() {
            let rest = if out.insts[i].ends_segment() {
                0
            } else {
                cost[i + 1]
            };
            cost[i] = rest.saturating_add(1);
        }
        let at = |i: usize| cost.get(i).copied().unwrap_or(0);
        out.entry_cost = at(0);
        for edge in &mut out.edges {
            edge.cost = at(edge.target as usize);
        }
        for (i, inst) in out.insts.iter().enumerate() {
            if let Inst::Call { site } = *inst {
                if let Some(call) = out.calls.get_mut(site as usize) {
                    call.cost = match call.then {
                        Some(then) => at(then as usize),
                        None => at(i + 1),
                    };
                }
            }
        }
    }
}

/// Verifies function `ordinal` (its descriptor and bytecode) and pre-decodes it.
pub fn verify_function(
    info: &ModuleInfo<'_>,
    ordinal: u32,
    name: Option<String>,
    descriptor: &FunctionDescriptor,
    code: &[u8],
) -> Result<FunctionCode, VmError> {
    let mut v = Verifier {
        info,
        ordinal,
        name: name.clone(),
        code,
        requirements: descriptor.requirements.0,
        ni: 0,
        nr: 0,
        out: FunctionCode {
            name,
            ordinal,
            ..FunctionCode::default()
        },
        at: 0,
        pc: 0,
        scratch: Vec::new(),
        pairs: Vec::new(),
        cases: Vec::new(),
        text: String::new(),
        edge_targets: Vec::new(),
        call_targets: Vec::new(),
    };
    let d = descriptor;
    if d.block_count <= 0
        || d.bytecode_length <= 0
        || d.i32_register_count < 0
        || d.ref_register_count < 0
        || d.ref_register_count > 0x3FFF
    {
        return v.fail(
            VerifyRule::Descriptor,
            format!(
                "bad descriptor: {} blocks, {} bytes, {} i32 and {} ref registers",
                d.block_count, d.bytecode_length, d.i32_register_count, d.ref_register_count
            ),
        );
    }
    if d.requirements.0 & !AVAILABLE_FEATURES != 0 {
        return v.fail(
            VerifyRule::Requirements,
            format!(
                "the function requires unknown features {:#x}",
                d.requirements.0 & !AVAILABLE_FEATURES
            ),
        );
    }
    v.ni = rounded(d.i32_register_count);
    v.nr = rounded(d.ref_register_count);
    if v.ni > 0x7FFF || v.nr > 0x3FFF {
        return v.fail(
            VerifyRule::RegisterCount,
            format!(
                "{} i32 / {} ref registers round up past the limits (0x7FFF / 0x3FFF)",
                v.ni, v.nr
            ),
        );
    }
    let sig = &info.functions[ordinal as usize];
    let mut params = Vec::new();
    for item in &sig.args {
        match kind_of(item) {
            Some(kind) => params.push(kind),
            None => {
                return v.fail(
                    VerifyRule::CallingConvention,
                    "an internal function has a variadic argument",
                );
            }
        }
    }
    let mut results = Vec::new();
    for item in &sig.results {
        match kind_of(item) {
            Some(kind) => results.push(kind),
            None => {
                return v.fail(
                    VerifyRule::CallingConvention,
                    "an internal function has a variadic result",
                );
            }
        }
    }
    let (placement, ni, nr) = place(&params);
    if ni > v.ni || nr > v.nr {
        return v.fail(
            VerifyRule::CallingConvention,
            format!(
                "the arguments need {ni} i32 and {nr} ref registers; the function has {} and {}",
                v.ni, v.nr
            ),
        );
    }
    v.out.params = placement;
    v.out.results = results;
    v.out.i32_count = v.ni;
    v.out.ref_count = v.nr;
    v.run(d.block_count)
}
