//! The bytecode verifier: checks one function against every rule of the facts sheet's §7
//! (including the per-register, type-id and 64-bit global rules the 3.13 runtime skips) and
//! produces its pre-decoded [`FunctionCode`].
//!
//! The decoder is generated from the instruction list (`isa::for_each_instruction`): every
//! operand of every instruction is read and checked by its field kind (register bank, range,
//! alignment, MOVE bit, ordinals) into a typed local, then the row's constructor turns the
//! operands into an [`Inst`]. Branch targets are resolved to instruction indices once the whole
//! function has been walked.

use std::collections::{BTreeMap, BTreeSet};

// The instruction list's constructors name `Inst` variants and operation enums unqualified.
use super::code::Inst::*;
use super::code::{
    self as c, ArgOp, CallSite, Callee, Conv32, Conv32To64, Conv64, Conv64To32, Edge, FBin, FCmp,
    FUn, FunctionCode, IBin, ICmp, IDiv, IUn, IUn64, Inst, Kind, Program, RefReg, Reg, Reg64, Span,
    Width,
};
use super::error::{FunctionName, VerifyRule, VmError};
use super::fuse;
use super::isa::{self, OpSet};
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

/// A checked branch target: a byte offset inside the function, resolved to an instruction
/// index (and checked to be a block marker) once the whole function has been walked.
#[derive(Clone, Copy, Debug)]
struct Target(u32);

/// A checked remap list: a range of [`Verifier::pairs`].
#[derive(Clone, Copy, Debug)]
struct Remap {
    start: usize,
    len: usize,
}

/// A checked register list (or segment-size list): a range of [`Verifier::scratch`].
#[derive(Clone, Copy, Debug)]
struct RegList {
    start: usize,
    len: usize,
}

/// Checked `br_table` cases: a range of [`Verifier::cases`].
#[derive(Clone, Copy, Debug)]
struct Cases {
    start: usize,
    len: usize,
}

/// Reads and checks one operand field of the kind named by an [`isa::Field`] variant, giving its
/// typed value (see the `read_*` methods). A kind without a rule here does not compile.
macro_rules! read_operand {
    ($v:ident, RegI32) => {
        $v.read_reg_i32()
    };
    ($v:ident, RegI64) => {
        $v.read_reg_i64()
    };
    ($v:ident, RegRef) => {
        $v.read_reg_ref(false)
    };
    ($v:ident, RegRefMove) => {
        $v.read_reg_ref(true)
    };
    ($v:ident, ConstI32) => {
        $v.u32()
    };
    ($v:ident, ConstI64) => {
        $v.u64()
    };
    ($v:ident, ConstU16) => {
        $v.u16()
    };
    ($v:ident, GlobalOffset4) => {
        $v.read_global_offset(4)
    };
    ($v:ident, GlobalOffset8) => {
        $v.read_global_offset(8)
    };
    ($v:ident, GlobalRef) => {
        $v.read_global_ref()
    };
    ($v:ident, Rodata) => {
        $v.read_rodata()
    };
    ($v:ident, Type) => {
        $v.read_type()
    };
    ($v:ident, Func) => {
        $v.read_callee()
    };
    ($v:ident, Import) => {
        $v.read_import()
    };
    ($v:ident, Str) => {
        $v.read_str()
    };
    ($v:ident, ListI32) => {
        $v.read_list(Verifier::check_i32)
    };
    ($v:ident, ListI64) => {
        $v.read_list(Verifier::check_i64)
    };
    ($v:ident, ListRefMove) => {
        $v.read_list(Verifier::check_ref_move)
    };
    ($v:ident, ListAny) => {
        $v.read_list(Verifier::check_any)
    };
    ($v:ident, SegList) => {
        $v.read_list(|_, size| Ok(size))
    };
    ($v:ident, Target) => {
        $v.read_target()
    };
    ($v:ident, Remap) => {
        $v.read_remap()
    };
    ($v:ident, Cases, $count:ident) => {
        $v.read_cases($count)
    };
}

/// The decoder: from the instruction list (`isa::for_each_instruction`), one arm per
/// instruction that reads its operands in encoding order into locals named as in the list,
/// each checked by its field kind, then evaluates the row's constructor. A declared operand
/// the constructor does not use is an error (`unused_variables` is denied here).
macro_rules! decoder {
    (
        $verifier:ident;
        $(
            $set:ident {
                $(
                    $opcode:literal $mnemonic:literal $($terminator:ident)?
                    ( $( $name:ident : $kind:ident $( ( $count:ident ) )? ),* $(,)? )
                    => $build:expr;
                )*
            }
        )*
    ) => {
        impl Verifier<'_> {
            /// Reads and checks the operands of `opcode` of `set` (whose opcode bytes were
            /// just read) and builds its [`Inst`].
            #[deny(unused_variables)]
            fn decode(&mut self, set: OpSet, opcode: u8) -> R<Inst> {
                match set {
                    $(
                        OpSet::$set => match opcode {
                            $(
                                $opcode => {
                                    $( let $name = read_operand!(self, $kind $(, $count)?)?; )*
                                    #[allow(unused_variables)]
                                    let $verifier = &mut *self;
                                    Ok($build)
                                }
                            )*
                            _ => self.unknown_opcode(set, opcode),
                        },
                    )*
                }
            }
        }
    };
}

isa::for_each_instruction!(decoder);

struct Verifier<'a> {
    info: &'a ModuleInfo<'a>,
    ordinal: u32,
    name: Option<String>,
    code: &'a [u8],
    requirements: u32,
    ni: u32,
    nr: u32,
    out: FunctionCode,
    /// The instructions decoded so far (moved into `out` once all are).
    insts: Vec<Inst>,
    /// Start of the instruction being decoded.
    at: usize,
    pc: usize,
    /// The register lists of the instruction being decoded.
    scratch: Vec<u16>,
    /// The remap pairs of the instruction being decoded.
    pairs: Vec<(u16, u16)>,
    /// The `br_table` cases of the instruction being decoded.
    cases: Vec<(Target, Remap)>,
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
                let mut bytes = [0; N];
                bytes.copy_from_slice(b);
                Ok(bytes)
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

    fn check_ref_move(&self, r: u16) -> R<u16> {
        self.check_ref(r, true)
    }

    // -- Operands, by field kind (see `read_operand!`).

    fn read_reg_i32(&mut self) -> R<Reg> {
        let r = self.u16()?;
        self.check_i32(r).map(Reg)
    }

    fn read_reg_i64(&mut self) -> R<Reg64> {
        let r = self.u16()?;
        self.check_i64(r).map(Reg64)
    }

    fn read_reg_ref(&mut self, move_ok: bool) -> R<RefReg> {
        let r = self.u16()?;
        self.check_ref(r, move_ok).map(RefReg)
    }

    fn read_global_offset(&mut self, size: u64) -> R<u32> {
        let offset = self.u32()?;
        let global_bytes = self.info.global_bytes;
        if u64::from(offset) + size > global_bytes {
            return self.fail(
                VerifyRule::GlobalOffset,
                format!(
                    "global bytes {offset}..{} are past the module's {global_bytes} bytes of globals",
                    u64::from(offset) + size,
                ),
            );
        }
        Ok(offset)
    }

    fn read_global_ref(&mut self) -> R<u32> {
        let v = self.u32()?;
        self.check_ordinal(
            v,
            self.info.global_refs,
            VerifyRule::GlobalRef,
            "ref global",
        )
    }

    fn read_rodata(&mut self) -> R<u32> {
        let v = self.u32()?;
        self.check_ordinal(
            v,
            self.info.rodata_count,
            VerifyRule::RodataOrdinal,
            "rodata segment",
        )
    }

    fn read_type(&mut self) -> R<u32> {
        let v = self.u32()?;
        self.check_ordinal(
            v,
            self.info.types.len() as u64,
            VerifyRule::TypeId,
            "type id",
        )
    }

    fn read_callee(&mut self) -> R<Callee> {
        let v = self.u32()?;
        if v & 0x8000_0000 != 0 {
            let ordinal = self.check_ordinal(
                v & 0x7FFF_FFFF,
                self.info.imports.len() as u64,
                VerifyRule::CalleeOrdinal,
                "import",
            )?;
            Ok(Callee::Import(ordinal))
        } else {
            let ordinal = self.check_ordinal(
                v,
                self.info.functions.len() as u64,
                VerifyRule::CalleeOrdinal,
                "function",
            )?;
            Ok(Callee::Internal(ordinal))
        }
    }

    fn read_import(&mut self) -> R<u32> {
        let v = self.u32()?;
        if v & 0x8000_0000 == 0 {
            return self.fail(
                VerifyRule::CalleeOrdinal,
                format!("{v:#x} is not an import ordinal (bit 31 clear)"),
            );
        }
        self.check_ordinal(
            v & 0x7FFF_FFFF,
            self.info.imports.len() as u64,
            VerifyRule::CalleeOrdinal,
            "import",
        )
    }

    fn read_str(&mut self) -> R<String> {
        let len = usize::from(self.u16()?);
        let end = self.pc + len;
        let Some(bytes) = self.code.get(self.pc..end) else {
            return self.fail(
                VerifyRule::Truncated,
                "a string runs past the end of the function",
            );
        };
        let text = String::from_utf8_lossy(bytes).into_owned();
        self.pc = end;
        Ok(text)
    }

    /// An aligned list of registers, each checked by `check`.
    fn read_list(&mut self, check: fn(&Self, u16) -> R<u16>) -> R<RegList> {
        self.align2()?;
        let len = usize::from(self.u16()?);
        let start = self.scratch.len();
        for _ in 0..len {
            let r = self.u16()?;
            check(self, r)?;
            self.scratch.push(r);
        }
        Ok(RegList { start, len })
    }

    fn read_target(&mut self) -> R<Target> {
        let target = self.u32()?;
        if target >= 0x00FF_FFFF || target as usize + 1 >= self.code.len() {
            return self.fail(
                VerifyRule::BranchTarget,
                format!("branch target {target:#x} is outside the function"),
            );
        }
        Ok(Target(target))
    }

    fn read_remap(&mut self) -> R<Remap> {
        self.align2()?;
        let len = self.u16()?;
        let start = self.pairs.len();
        for _ in 0..len {
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
        Ok(Remap {
            start,
            len: usize::from(len),
        })
    }

    /// `count` cases of a `br_table`: each a target and its remap.
    fn read_cases(&mut self, count: u16) -> R<Cases> {
        let start = self.cases.len();
        for _ in 0..count {
            let target = self.read_target()?;
            let remap = self.read_remap()?;
            self.cases.push((target, remap));
        }
        Ok(Cases {
            start,
            len: usize::from(count),
        })
    }

    #[cold]
    fn unknown_opcode<T>(&self, set: OpSet, opcode: u8) -> R<T> {
        let name = match set {
            OpSet::Core => format!("{opcode:#04x}"),
            OpSet::F32 => format!("{:#04x} {opcode:#04x}", isa::PREFIX_F32),
            OpSet::F64 => format!("{:#04x} {opcode:#04x}", isa::PREFIX_F64),
        };
        self.fail(VerifyRule::UnknownOpcode, format!("unknown opcode {name}"))
    }

    // -- Building the side tables (called by the constructors of the instruction list).

    /// A branch edge to `target` with the moves of `remap`; its index.
    fn edge(&mut self, target: Target, remap: Remap) -> R<u32> {
        let moves_start = self.out.moves.len() as u32;
        let ref_moves_start = self.out.ref_moves.len() as u32;
        for &(src, dst) in &self.pairs[remap.start..remap.start + remap.len] {
            if src & 0x8000 != 0 {
                self.out.ref_moves.push((RefReg(src), RefReg(dst)));
            } else {
                self.out.moves.push((Reg(src), Reg(dst)));
            }
        }
        let moves_len = self.out.moves.len() as u32 - moves_start;
        let ref_moves_len = self.out.ref_moves.len() as u32 - ref_moves_start;
        let index = self.out.edges.len();
        self.out.edges.push(Edge {
            target: target.0,
            moves: Span {
                start: moves_start,
                len: moves_len as u16,
            },
            ref_moves: Span {
                start: ref_moves_start,
                len: ref_moves_len as u16,
            },
            cost: 0,
        });
        self.edge_targets.push((index, target.0, self.at));
        Ok(index as u32)
    }

    fn list(&self, list: RegList) -> &[u16] {
        &self.scratch[list.start..list.start + list.len]
    }

    /// The registers of `list`, copied to the function's register lists.
    fn span(&mut self, list: RegList) -> Span {
        let start = self.out.regs.len() as u32;
        let regs = &self.scratch[list.start..list.start + list.len];
        self.out.regs.extend_from_slice(regs);
        Span {
            start,
            len: list.len as u16,
        }
    }

    /// A `switch.ref` table; its index.
    fn switch_ref(
        &mut self,
        index: Reg,
        ty: u32,
        default: RefReg,
        values: RegList,
        result: RefReg,
    ) -> u32 {
        let values = self.list(values).iter().map(|&v| RefReg(v)).collect();
        self.out.switch_refs.push(c::SwitchRef {
            index,
            ty,
            default,
            values,
            result,
        });
        self.out.switch_refs.len() as u32 - 1
    }

    /// A `br_table`: the default edge, then one edge per case; the table's index.
    fn br_table(&mut self, default: Target, remap: Remap, cases: Cases) -> R<u32> {
        let default = self.edge(default, remap)?;
        let mut edges = Vec::with_capacity(cases.len);
        for k in cases.start..cases.start + cases.len {
            let (target, remap) = self.cases[k];
            edges.push(self.edge(target, remap)?);
        }
        self.out.tables.push(c::BrTable {
            default,
            cases: edges.into(),
        });
        Ok(self.out.tables.len() as u32 - 1)
    }

    /// `return`'s registers, checked against the function's results.
    fn returns(&mut self, values: RegList) -> R<Span> {
        let regs = self.list(values).to_vec();
        let own = self.out.results.clone();
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
        for (&kind, &reg) in own.iter().zip(&regs) {
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
        Ok(Span {
            start,
            len: own.len() as u16,
        })
    }

    /// A `fail` message; its index.
    fn string(&mut self, text: String) -> u32 {
        self.out.strings.push(text);
        self.out.strings.len() as u32 - 1
    }

    /// `discard.refs`' registers, which must all be refs.
    fn discarded_refs(&mut self, refs: RegList) -> R<Span> {
        for &reg in self.list(refs) {
            if reg & 0x8000 == 0 {
                return self.fail(
                    VerifyRule::RegisterBank,
                    format!("discard.refs lists i32 register %i{reg}"),
                );
            }
        }
        Ok(self.span(refs))
    }

    /// A `call.yieldable` site: a call that continues at `then`.
    fn yieldable_call(
        &mut self,
        callee: Callee,
        segments: Option<RegList>,
        operands: RegList,
        then: Target,
        results: RegList,
    ) -> R<u32> {
        let site = self.call_site(callee, segments, operands, results)?;
        self.call_targets.push((site as usize, then.0, self.at));
        Ok(site)
    }

    /// A call site: the callee's arguments placed from `operands` (and the variadic
    /// `segments` sizes), its results checked against `results`; its index.
    fn call_site(
        &mut self,
        callee: Callee,
        segments: Option<RegList>,
        operands: RegList,
        results: RegList,
    ) -> R<u32> {
        let info = self.info;
        let sig = match callee {
            Callee::Import(ordinal) => &info.imports[ordinal as usize],
            Callee::Internal(ordinal) => {
                if segments.is_some() {
                    return self.fail(VerifyRule::Variadic, "a variadic call must call an import");
                }
                &info.functions[ordinal as usize]
            }
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
                    // `place` gave every plain argument a slot; running out is an error, not a
                    // default slot.
                    let Some(&(kind, dst)) = placed.next() else {
                        return self.fail(
                            VerifyRule::CallSignature,
                            format!("argument {k} of the callee has no register placement"),
                        );
                    };
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
        let mut slot_moves = Vec::new();
        for arg in &args {
            if let ArgOp::Value { kind, src, dst } = *arg {
                match kind {
                    Kind::I32 | Kind::F32 => slot_moves.push((src, dst)),
                    Kind::I64 | Kind::F64 => {
                        slot_moves.push((src, dst));
                        slot_moves.push((src.wrapping_add(1), dst.wrapping_add(1)));
                    }
                    Kind::Ref => {}
                }
            }
        }
        let index = self.out.calls.len();
        self.out.calls.push(CallSite {
            callee,
            args: args.into(),
            slot_moves: slot_moves.into(),
            results: out_results.into(),
            then: None,
            cost: 0,
        });
        Ok(index as u32)
    }

    // -- The walk.

    fn run(mut self, block_count: i16) -> R<FunctionCode> {
        let len = self.code.len();
        let mut in_block = false;
        let mut markers: BTreeMap<u32, u32> = BTreeMap::new();
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
                markers.insert(self.pc as u32, self.insts.len() as u32);
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
            self.scratch.clear();
            self.pairs.clear();
            self.cases.clear();
            let inst = self.decode(set, opcode)?;
            self.insts.push(inst);
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
        self.out.insts = Program::new(std::mem::take(&mut self.insts));
        self.charge_segments();
        let mut out = self.out;
        fuse::fuse(&mut out);
        Ok(out)
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
        insts: Vec::new(),
        at: 0,
        pc: 0,
        scratch: Vec::new(),
        pairs: Vec::new(),
        cases: Vec::new(),
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
    v.out.refs_in_signature = params.iter().chain(&results).any(|&kind| kind == Kind::Ref);
    v.out.params = placement;
    v.out.results = results;
    v.out.i32_count = v.ni;
    v.out.ref_count = v.nr;
    v.run(d.block_count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::isa::{Field, op_info};
    use crate::vmfb::FeatureBits;

    /// A minimal valid function around one instruction: its operands are built from the field
    /// kinds of its row, its branch targets go to a second block that returns. Returns the
    /// bytecode and the byte offset where the instruction ends.
    fn around(set: OpSet, opcode: u8, fields: &[Field], terminator: bool) -> (Vec<u8>, usize) {
        let mut code = vec![isa::BLOCK_MARKER];
        match set {
            OpSet::Core => {}
            OpSet::F32 => code.push(isa::PREFIX_F32),
            OpSet::F64 => code.push(isa::PREFIX_F64),
        }
        code.push(opcode);
        let align = |code: &mut Vec<u8>| {
            if code.len() % 2 == 1 {
                code.push(0);
            }
        };
        let list = |code: &mut Vec<u8>, regs: &[u16]| {
            align(code);
            code.extend((regs.len() as u16).to_le_bytes());
            for r in regs {
                code.extend(r.to_le_bytes());
            }
        };
        let remap = |code: &mut Vec<u8>, src: u16, dst: u16| {
            align(code);
            code.extend(1u16.to_le_bytes());
            code.extend(src.to_le_bytes());
            code.extend(dst.to_le_bytes());
        };
        let mut targets = Vec::new();
        let mut count = 0u16;
        for &field in fields {
            match field {
                Field::RegI32 | Field::RegI64 => code.extend(0u16.to_le_bytes()),
                Field::RegRef => code.extend(0x8000u16.to_le_bytes()),
                Field::RegRefMove => code.extend(0xC001u16.to_le_bytes()),
                Field::ConstI32 => code.extend(7u32.to_le_bytes()),
                Field::ConstI64 => code.extend(7u64.to_le_bytes()),
                Field::ConstU16 => {
                    count = 2;
                    code.extend(count.to_le_bytes());
                }
                Field::GlobalOffset4
                | Field::GlobalOffset8
                | Field::GlobalRef
                | Field::Rodata
                | Field::Type => code.extend(0u32.to_le_bytes()),
                // Import 0 (a call.variadic must call an import).
                Field::Func | Field::Import => code.extend(0x8000_0000u32.to_le_bytes()),
                Field::Str => {
                    code.extend(1u16.to_le_bytes());
                    code.push(b'x');
                }
                Field::ListI32 => list(&mut code, &[0, 1]),
                Field::ListI64 => list(&mut code, &[0, 2]),
                Field::ListRefMove => list(&mut code, &[0x8000, 0xC001]),
                // Calls and returns of functions without arguments or results.
                Field::ListAny | Field::SegList => list(&mut code, &[]),
                Field::Target => {
                    targets.push(code.len());
                    code.extend(0u32.to_le_bytes());
                }
                Field::Remap => remap(&mut code, 1, 3),
                Field::Cases => {
                    for _ in 0..count {
                        targets.push(code.len());
                        code.extend(0u32.to_le_bytes());
                        remap(&mut code, 0x8001, 0x8000);
                    }
                }
            }
        }
        let end = code.len();
        if !terminator {
            code.push(0x5A);
            list(&mut code, &[]);
        }
        let exit = code.len() as u32;
        code.push(isa::BLOCK_MARKER);
        code.push(0x5A);
        list(&mut code, &[]);
        for at in targets {
            code[at..at + 4].copy_from_slice(&exit.to_le_bytes());
        }
        (code, end)
    }

    /// Every row of the instruction list decodes: a minimal valid instance built from its
    /// field kinds verifies, the decoder reads exactly the bytes of those fields (the next
    /// instruction starts where they end), and the row's terminator mark holds (a block
    /// marker may follow a terminator only).
    #[test]
    fn every_instruction_of_the_list_decodes() {
        let unit = Sig::default();
        let info = ModuleInfo {
            module: "rows",
            types: &[VmType::Opaque],
            global_bytes: 16,
            global_refs: 1,
            rodata_count: 1,
            functions: std::slice::from_ref(&unit),
            imports: std::slice::from_ref(&unit),
        };
        let mut decoded = 0;
        for set in [OpSet::Core, OpSet::F32, OpSet::F64] {
            for opcode in 0..=u8::MAX {
                let Some(row) = op_info(set, opcode) else {
                    continue;
                };
                let (code, end) = around(set, opcode, row.fields, row.terminator);
                let descriptor = FunctionDescriptor {
                    bytecode_offset: 0,
                    bytecode_length: code.len() as i32,
                    requirements: FeatureBits(FeatureBits::EXT_F32 | FeatureBits::EXT_F64),
                    reserved: 0,
                    block_count: 2,
                    i32_register_count: 4,
                    ref_register_count: 2,
                };
                let function = verify_function(&info, 0, None, &descriptor, &code)
                    .unwrap_or_else(|e| panic!("{}: {e}", row.mnemonic));
                let next = if row.terminator { end + 1 } else { end };
                assert_eq!(
                    function.pcs.get(1).copied(),
                    Some(next as u32),
                    "{}: the decoder read {:?} but the row's fields end at {end}",
                    row.mnemonic,
                    function.pcs
                );
                decoded += 1;
            }
        }
        assert_eq!(decoded, 264);
    }

    /// An opcode no row lists is refused with its bytes named.
    #[test]
    fn an_opcode_outside_the_list_is_unknown() {
        let unit = Sig::default();
        let info = ModuleInfo {
            module: "rows",
            types: &[],
            global_bytes: 0,
            global_refs: 0,
            rodata_count: 0,
            functions: std::slice::from_ref(&unit),
            imports: &[],
        };
        for (code, name) in [
            (vec![0x79, 0x89, 0x00], "unknown opcode 0x89"),
            // Past the end of the extension tables, and far from the opcodes IREE adds next
            // (`vm.fpowi.f32` is 0xe0 0x3e), so that adding those does not break this test.
            (vec![0x79, 0xE0, 0xFF, 0x00], "unknown opcode 0xe0 0xff"),
            (vec![0x79, 0xE1, 0xFF, 0x00], "unknown opcode 0xe1 0xff"),
        ] {
            let descriptor = FunctionDescriptor {
                bytecode_offset: 0,
                bytecode_length: code.len() as i32,
                requirements: FeatureBits(FeatureBits::EXT_F32 | FeatureBits::EXT_F64),
                reserved: 0,
                block_count: 1,
                i32_register_count: 1,
                ref_register_count: 0,
            };
            match verify_function(&info, 0, None, &descriptor, &code) {
                Err(VmError::Verify {
                    rule: VerifyRule::UnknownOpcode,
                    offset: 1,
                    detail,
                    ..
                }) => assert_eq!(detail, name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
