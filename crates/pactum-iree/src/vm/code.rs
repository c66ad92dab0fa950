//! The pre-decoded form of a verified function: what the interpreter executes.
//!
//! The verifier (`verify.rs`) turns bytecode into [`FunctionCode`]: one [`Inst`] per
//! instruction with register fields already split into bank and index, branch targets as
//! instruction indices and call sites resolved to argument placements. Variable-length
//! operands live in side tables of the function. Nothing here is parsed again at run time,
//! and every index the verifier produced is in range of the tables it built.

pub use super::interp::unchecked::Program;
use super::interp::unchecked::Slot;

/// An i32-bank register holding a 32-bit value (i32 or f32): its slot.
///
/// The verifier makes one only for a field it checked as an i32 register (bank, range), so the
/// interpreter indexes a frame's window with it directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg(pub u16);

/// An i32-bank register pair holding a 64-bit value (i64 or f64): its even base slot.
///
/// A distinct type from [`Reg`], so that an instruction reading a 64-bit operand through a
/// 32-bit field (or the reverse) does not compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg64(pub u16);

/// A ref register: the index (low 14 bits) and the MOVE bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefReg(pub u16);

impl RefReg {
    /// The ref-bank index.
    #[inline]
    pub fn index(self) -> usize {
        usize::from(self.0 & 0x3FFF)
    }

    /// Whether the instruction takes ownership (the MOVE bit).
    #[inline]
    pub fn is_move(self) -> bool {
        self.0 & 0x4000 != 0
    }
}

/// A range of a side table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// First element.
    pub start: u32,
    /// Number of elements.
    pub len: u16,
}

impl Span {
    /// As a `usize` range.
    #[inline]
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + usize::from(self.len)
    }
}

/// A value kind of a calling convention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `i`.
    I32,
    /// `I`.
    I64,
    /// `f`.
    F32,
    /// `F`.
    F64,
    /// `r`.
    Ref,
}

impl Kind {
    /// The calling-convention character.
    pub fn char(self) -> char {
        match self {
            Kind::I32 => 'i',
            Kind::I64 => 'I',
            Kind::F32 => 'f',
            Kind::F64 => 'F',
            Kind::Ref => 'r',
        }
    }

    /// `i32`, `i64`, `f32`, `f64` or `ref`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::I32 => "i32",
            Kind::I64 => "i64",
            Kind::F32 => "f32",
            Kind::F64 => "f64",
            Kind::Ref => "ref",
        }
    }
}

/// A branch: the instruction to continue at and the remap to apply first.
///
/// The remap's copies are kept by bank: the i32-bank copies in [`FunctionCode::moves`] and
/// the reference copies in [`FunctionCode::ref_moves`], each in the order of the remap list.
/// The banks are disjoint, so applying one bank's copies before the other's is the remap's
/// sequential order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Index of the first instruction of the target block.
    pub target: u32,
    /// Into [`FunctionCode::moves`].
    pub moves: Span,
    /// Into [`FunctionCode::ref_moves`].
    pub ref_moves: Span,
    /// Fuel the edge charges: the instructions of the target's segment (see
    /// [`FunctionCode::entry_cost`]).
    pub cost: u32,
}

/// An edge held in a superinstruction: its target and its fuel cost, both under 2^16 (the
/// copies of its remap, if any, are the instruction's own fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortEdge {
    /// Index of the first instruction of the target block.
    pub target: u16,
    /// Fuel the edge charges (see [`Edge::cost`]).
    pub cost: u16,
}

/// An i32-bank register under 256, held in a byte where an instruction has no room for a
/// [`Reg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteReg(pub u8);

impl ByteReg {
    /// `r`, when it is under 256.
    pub fn new(r: Reg) -> Option<ByteReg> {
        u8::try_from(r.0).ok().map(ByteReg)
    }

    /// The register.
    #[inline(always)]
    pub fn reg(self) -> Reg {
        Reg(u16::from(self.0))
    }
}

/// One copy of a remap between i32-bank registers under 256, held in a [`Inst::BrMove4`]:
/// the source register, then the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteMove(pub u8, pub u8);

impl ByteMove {
    /// The copy `src` to `dst`, when both registers are under 256.
    pub fn new(src: Reg, dst: Reg) -> Option<ByteMove> {
        Some(ByteMove(
            u8::try_from(src.0).ok()?,
            u8::try_from(dst.0).ok()?,
        ))
    }

    /// The source register.
    #[inline(always)]
    pub fn src(self) -> Reg {
        Reg(u16::from(self.0))
    }

    /// The destination register.
    #[inline(always)]
    pub fn dst(self) -> Reg {
        Reg(u16::from(self.1))
    }
}

/// A `br_table`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrTable {
    /// Edge index taken when the index is out of range.
    pub default: u32,
    /// Edge indices of the cases.
    pub cases: Box<[u32]>,
}

/// A `switch.ref`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchRef {
    /// The i32 index register.
    pub index: Reg,
    /// Type id the selected value is checked against.
    pub ty: u32,
    /// The default value.
    pub default: RefReg,
    /// The values.
    pub values: Box<[RefReg]>,
    /// The result.
    pub result: RefReg,
}

/// Who a call calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// An internal function of the same module, by ordinal.
    Internal(u32),
    /// An import, by import ordinal.
    Import(u32),
}

/// One step of passing arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgOp {
    /// A value from caller register `src` (raw operand, ref MOVE bit kept) into the callee's
    /// argument slot `dst` (i32-bank slot, or ref index).
    Value {
        /// The value kind.
        kind: Kind,
        /// Caller register (raw `u16` operand).
        src: u16,
        /// Callee slot.
        dst: u16,
    },
    /// The count of a variadic span (native callees only).
    Count(u32),
}

/// A call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The callee.
    pub callee: Callee,
    /// How arguments are passed.
    pub args: Box<[ArgOp]>,
    /// The arguments' i32-bank copies, decided here once: (caller slot, callee slot), one per
    /// slot (a 64-bit value is two). When `args` passes no reference, these are all its
    /// copies, and a call is one loop over them (the fast loop's calls, `interp/hot.rs`).
    pub slot_moves: Box<[(u16, u16)]>,
    /// The result kinds and the caller registers they go to (raw `u16` operands).
    pub results: Box<[(Kind, u16)]>,
    /// For `call.yieldable`: the instruction to continue at.
    pub then: Option<u32>,
    /// Fuel the call charges for the caller's segment it continues with.
    pub cost: u32,
}

/// Floating-point binary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FBin {
    /// `add`.
    Add,
    /// `sub`.
    Sub,
    /// `mul`.
    Mul,
    /// `div`.
    Div,
    /// `rem` (IEEE remainder).
    Rem,
    /// `atan2`.
    Atan2,
    /// `pow`.
    Pow,
    /// `min`.
    Min,
    /// `max`.
    Max,
}

/// Floating-point unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FUn {
    /// `abs`.
    Abs,
    /// `neg`.
    Neg,
    /// `ceil`.
    Ceil,
    /// `floor`.
    Floor,
    /// `round` (ties away).
    Round,
    /// `round.even`.
    RoundEven,
    /// `atan`.
    Atan,
    /// `cos`.
    Cos,
    /// `sin`.
    Sin,
    /// `exp`.
    Exp,
    /// `exp2`.
    Exp2,
    /// `expm1`.
    Expm1,
    /// `log`.
    Log,
    /// `log10`.
    Log10,
    /// `log1p`.
    Log1p,
    /// `log2`.
    Log2,
    /// `rsqrt`.
    Rsqrt,
    /// `sqrt`.
    Sqrt,
    /// `tanh`.
    Tanh,
    /// `erf`.
    Erf,
}

/// Floating-point comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FCmp {
    /// `cmp.eq.*.o`.
    EqO,
    /// `cmp.eq.*.u`.
    EqU,
    /// `cmp.ne.*.o` (true on NaN, as the reference).
    NeO,
    /// `cmp.ne.*.u`.
    NeU,
    /// `cmp.lt.*.o`.
    LtO,
    /// `cmp.lt.*.u`.
    LtU,
    /// `cmp.lte.*.o`.
    LteO,
    /// `cmp.lte.*.u`.
    LteU,
}

/// Integer binary operations that cannot fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IBin {
    /// Wrapping sub.
    Sub,
    /// Wrapping mul.
    Mul,
    /// And.
    And,
    /// Or.
    Or,
    /// Xor.
    Xor,
    /// Signed min.
    MinS,
    /// Unsigned min.
    MinU,
    /// Signed max.
    MaxS,
    /// Unsigned max.
    MaxU,
}

/// Integer division and remainder (trap on zero and overflow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IDiv {
    /// Signed division.
    DivS,
    /// Unsigned division.
    DivU,
    /// Signed remainder.
    RemS,
    /// Unsigned remainder.
    RemU,
}

/// Integer comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ICmp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// Signed `<`.
    LtS,
    /// Unsigned `<`.
    LtU,
}

/// Shifts (amount masked to the width).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    /// Left.
    Shl,
    /// Arithmetic right.
    ShrS,
    /// Logical right.
    ShrU,
}

/// i32 unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IUn {
    /// Bitwise not.
    Not,
    /// Count leading zeros.
    Ctlz,
    /// Wrapping absolute value.
    Abs,
    /// `trunc.i32.i8` (zero-extended).
    TruncI8,
    /// `trunc.i32.i16` (zero-extended).
    TruncI16,
    /// `ext.i8.i32.s`.
    ExtI8S,
    /// `ext.i8.i32.u`.
    ExtI8U,
    /// `ext.i16.i32.s`.
    ExtI16S,
    /// `ext.i16.i32.u`.
    ExtI16U,
}

/// i64 unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IUn64 {
    /// Bitwise not.
    Not,
    /// Count leading zeros.
    Ctlz,
    /// Wrapping absolute value.
    Abs,
}

/// Conversions from a 32-bit value to a 32-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conv32 {
    /// `cast.ui32.f32`.
    Ui32F32,
    /// `cast.f32.si32` / `cast.f32.ui32`.
    F32I32,
    /// `cmp.nan.f32`.
    NanF32,
}

/// Conversions from a 32-bit value to a 64-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conv32To64 {
    /// `cast.f32.si64`.
    F32Si64,
    /// `cast.f32.ui64`.
    F32Ui64,
    /// `ext.f32.f64`.
    F32F64,
    /// `cast.si32.f64`.
    Si32F64,
    /// `cast.ui32.f64`.
    Ui32F64,
}

/// Conversions from a 64-bit value to a 32-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conv64To32 {
    /// `cmp.nz.i64`.
    NzI64,
    /// `cast.si64.f32`.
    Si64F32,
    /// `cast.ui64.f32`.
    Ui64F32,
    /// `trunc.f64.f32`.
    F64F32,
    /// `cast.f64.si32` / `cast.f64.ui32`.
    F64I32,
    /// `cmp.nan.f64`.
    NanF64,
}

/// Conversions from a 64-bit value to a 64-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conv64 {
    /// `cast.si64.f64`.
    Si64F64,
    /// `cast.ui64.f64`.
    Ui64F64,
    /// `cast.f64.si64` / `cast.f64.ui64`.
    F64I64,
}

/// Widths of buffer element accesses of at most 32 bits (8-byte accesses have variants of
/// their own, as their value is a register pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// 1 byte, zero-extended on load.
    U8,
    /// 1 byte, sign-extended on load.
    S8,
    /// 2 bytes, zero-extended.
    U16,
    /// 2 bytes, sign-extended.
    S16,
    /// 4 bytes.
    B32,
}

impl Width {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            Width::U8 | Width::S8 => 1,
            Width::U16 | Width::S16 => 2,
            Width::B32 => 4,
        }
    }
}

/// One pre-decoded instruction. Register fields are i32-bank registers ([`Reg`] for 32-bit
/// values, [`Reg64`] for 64-bit ones) or ref registers ([`RefReg`]).
///
/// The rows of the instruction table (`isa.rs`) build these; the interpreter's loop
/// (`interp.rs`) has one arm per variant.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Inst {
    // Globals (f32/f64 share the i32/i64 forms: they copy bits).
    GlobalLoad32 {
        offset: u32,
        d: Reg,
    },
    GlobalStore32 {
        offset: u32,
        s: Reg,
    },
    GlobalLoad64 {
        offset: u32,
        d: Reg64,
    },
    GlobalStore64 {
        offset: u32,
        s: Reg64,
    },
    GlobalLoadInd32 {
        o: Reg,
        d: Reg,
    },
    GlobalStoreInd32 {
        o: Reg,
        s: Reg,
    },
    GlobalLoadInd64 {
        o: Reg,
        d: Reg64,
    },
    GlobalStoreInd64 {
        o: Reg,
        s: Reg64,
    },
    GlobalLoadRef {
        global: u32,
        ty: u32,
        d: RefReg,
    },
    GlobalStoreRef {
        global: u32,
        ty: u32,
        s: RefReg,
    },
    GlobalLoadIndRef {
        o: Reg,
        ty: u32,
        d: RefReg,
    },
    GlobalStoreIndRef {
        o: Reg,
        ty: u32,
        s: RefReg,
    },
    // Constants and copies.
    Const32 {
        value: u32,
        d: Reg,
    },
    Const64 {
        lo: u32,
        hi: u32,
        d: Reg64,
    },
    ConstRefZero {
        d: RefReg,
    },
    ConstRefRodata {
        segment: u32,
        d: RefReg,
    },
    Copy32 {
        s: Reg,
        d: Reg,
    },
    Copy64 {
        s: Reg64,
        d: Reg64,
    },
    // Lists.
    ListAlloc {
        ty: u32,
        capacity: Reg,
        d: RefReg,
    },
    ListReserve {
        list: RefReg,
        n: Reg,
    },
    ListSize {
        list: RefReg,
        d: Reg,
    },
    ListResize {
        list: RefReg,
        n: Reg,
    },
    ListGetI32 {
        list: RefReg,
        i: Reg,
        d: Reg,
    },
    ListSetI32 {
        list: RefReg,
        i: Reg,
        v: Reg,
    },
    ListGetI64 {
        list: RefReg,
        i: Reg,
        d: Reg64,
    },
    ListSetI64 {
        list: RefReg,
        i: Reg,
        v: Reg64,
    },
    ListGetF32 {
        list: RefReg,
        i: Reg,
        d: Reg,
    },
    ListSetF32 {
        list: RefReg,
        i: Reg,
        v: Reg,
    },
    ListGetF64 {
        list: RefReg,
        i: Reg,
        d: Reg64,
    },
    ListSetF64 {
        list: RefReg,
        i: Reg,
        v: Reg64,
    },
    ListGetRef {
        list: RefReg,
        i: Reg,
        ty: u32,
        d: RefReg,
    },
    ListSetRef {
        list: RefReg,
        i: Reg,
        v: RefReg,
    },
    // Selection.
    Select32 {
        c: Reg,
        t: Reg,
        f: Reg,
        d: Reg,
    },
    Select64 {
        c: Reg,
        t: Reg64,
        f: Reg64,
        d: Reg64,
    },
    SelectRef {
        c: Reg,
        ty: u32,
        t: RefReg,
        f: RefReg,
        d: RefReg,
    },
    Switch32 {
        index: Reg,
        default: Reg,
        values: Span,
        d: Reg,
    },
    /// `switch.i64`: the selected value is read as its low 32 bits sign-extended (3.13).
    SwitchI64 {
        index: Reg,
        default: Reg64,
        values: Span,
        d: Reg64,
    },
    /// `switch.f64`: full 64 bits.
    Switch64 {
        index: Reg,
        default: Reg64,
        values: Span,
        d: Reg64,
    },
    SwitchRef {
        table: u32,
    },
    // Integer arithmetic. The most frequent operations have their own variants (one dispatch
    // instead of two).
    AddI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    SubI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    AddI64 {
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    /// `mul.i32`.
    MulI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `and.i32`.
    AndI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `or.i32`.
    OrI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `xor.i32`.
    XorI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `shl.i32`.
    ShlI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `shr.i32.s`.
    ShrI32S {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `shr.i32.u`.
    ShrI32U {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    /// `sub.i64`.
    SubI64 {
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    /// `mul.i64`.
    MulI64 {
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    /// `and.i64`.
    AndI64 {
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    /// `or.i64`.
    OrI64 {
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    /// `xor.i64`.
    XorI64 {
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    /// `shl.i64`.
    ShlI64 {
        a: Reg64,
        b: Reg,
        d: Reg64,
    },
    /// `shr.i64.s`.
    ShrI64S {
        a: Reg64,
        b: Reg,
        d: Reg64,
    },
    /// `shr.i64.u`.
    ShrI64U {
        a: Reg64,
        b: Reg,
        d: Reg64,
    },
    CmpEqI32 {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    CmpLtI32S {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    NzI32 {
        a: Reg,
        d: Reg,
    },
    Bin32 {
        op: IBin,
        a: Reg,
        b: Reg,
        d: Reg,
    },
    Bin64 {
        op: IBin,
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    Div32 {
        op: IDiv,
        a: Reg,
        b: Reg,
        d: Reg,
    },
    Div64 {
        op: IDiv,
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    Fma32 {
        a: Reg,
        b: Reg,
        c: Reg,
        d: Reg,
    },
    Fma64 {
        a: Reg64,
        b: Reg64,
        c: Reg64,
        d: Reg64,
    },
    Un32 {
        op: IUn,
        a: Reg,
        d: Reg,
    },
    Un64 {
        op: IUn64,
        a: Reg64,
        d: Reg64,
    },
    Cmp32 {
        op: ICmp,
        a: Reg,
        b: Reg,
        d: Reg,
    },
    Cmp64 {
        op: ICmp,
        a: Reg64,
        b: Reg64,
        d: Reg,
    },
    // Conversions: the most frequent ones (index casts, an int to a float) as variants of
    // their own, which do not dispatch a second time on the operation; the others by the
    // widths they read and write.
    /// `ext.i32.i64.s`.
    ExtI32I64S {
        a: Reg,
        d: Reg64,
    },
    /// `ext.i32.i64.u`.
    ExtI32I64U {
        a: Reg,
        d: Reg64,
    },
    /// `trunc.i64.i32`.
    TruncI64I32 {
        a: Reg64,
        d: Reg,
    },
    /// `cast.si32.f32`.
    CastSi32F32 {
        a: Reg,
        d: Reg,
    },
    Convert32 {
        op: Conv32,
        a: Reg,
        d: Reg,
    },
    Convert32To64 {
        op: Conv32To64,
        a: Reg,
        d: Reg64,
    },
    Convert64To32 {
        op: Conv64To32,
        a: Reg64,
        d: Reg,
    },
    Convert64 {
        op: Conv64,
        a: Reg64,
        d: Reg64,
    },
    // Floats.
    BinF32 {
        op: FBin,
        a: Reg,
        b: Reg,
        d: Reg,
    },
    BinF64 {
        op: FBin,
        a: Reg64,
        b: Reg64,
        d: Reg64,
    },
    UnF32 {
        op: FUn,
        a: Reg,
        d: Reg,
    },
    UnF64 {
        op: FUn,
        a: Reg64,
        d: Reg64,
    },
    FmaF32 {
        a: Reg,
        b: Reg,
        c: Reg,
        d: Reg,
    },
    FmaF64 {
        a: Reg64,
        b: Reg64,
        c: Reg64,
        d: Reg64,
    },
    /// `fpowi.f32`: an f32 to the power of an i32 register (the compiler names the base of an
    /// i64 pair: its low half).
    PowiF32 {
        a: Reg,
        n: Reg,
        d: Reg,
    },
    /// `fpowi.f64`: an f64 to the power of the low 32 bits of an i64 register.
    PowiF64 {
        a: Reg64,
        n: Reg64,
        d: Reg64,
    },
    CmpF32 {
        op: FCmp,
        a: Reg,
        b: Reg,
        d: Reg,
    },
    CmpF64 {
        op: FCmp,
        a: Reg64,
        b: Reg64,
        d: Reg,
    },
    // Control flow.
    Br {
        edge: u32,
    },
    CondBr {
        c: Reg,
        t: u32,
        f: u32,
    },
    BrTable {
        index: Reg,
        table: u32,
    },
    Call {
        site: u32,
    },
    Return {
        results: Span,
    },
    Fail {
        status: Reg,
        message: u32,
    },
    ImportResolved {
        import: u32,
        d: Reg,
    },
    Yield {
        edge: u32,
    },
    /// The slot after a function's last instruction (see [`Program`]); never decoded, never
    /// run: the fast loop stops at it and the main loop reports running past the end.
    End,
    // Superinstructions, made from the decoded instructions by `fuse.rs` (never decoded
    // from bytecode). A fused compare-and-branch replaces the compare and leaves the
    // `cond_br` it absorbed at the next index, unreached, so that instruction indices, byte
    // offsets and segment costs stay those of the bytecode. Their edges have no copy of their
    // own (`BrMove*` carry theirs) and are held in the instruction.
    /// `cmp.lt.i32.s` into `d`, then the `cond_br` on `d`: takes `t` or `f`.
    BrLtI32S {
        a: Reg,
        b: Reg,
        d: Reg,
        t: ShortEdge,
        f: ShortEdge,
    },
    /// `cmp.lt.i64.s` into `d`, then the `cond_br` on `d`.
    BrLtI64S {
        a: Reg64,
        b: Reg64,
        d: Reg,
        t: ShortEdge,
        f: ShortEdge,
    },
    /// Any other i32 comparison into `d`, then the `cond_br` on `d`.
    BrCmp32 {
        op: ICmp,
        a: Reg,
        b: Reg,
        d: Reg,
        t: ShortEdge,
        f: ShortEdge,
    },
    /// Any other i64 comparison into `d`, then the `cond_br` on `d`.
    BrCmp64 {
        op: ICmp,
        a: Reg64,
        b: Reg64,
        d: Reg,
        t: ShortEdge,
        f: ShortEdge,
    },
    /// A `br` without copies.
    BrShort {
        to: ShortEdge,
    },
    /// A `br` whose remap is one i32-bank copy (`src` to `dst`).
    BrMove1 {
        to: ShortEdge,
        src: Reg,
        dst: Reg,
    },
    /// A `br` whose remap is two i32-bank copies, in order.
    BrMove2 {
        to: ShortEdge,
        s0: Reg,
        d0: Reg,
        s1: Reg,
        d1: Reg,
    },
    /// A `br` whose remap copies the two halves of a 64-bit pair `s` to the pair `d`, where
    /// copying them in order is copying the pair at once (`d` does not start at `s`'s high
    /// half).
    BrMove64 {
        to: ShortEdge,
        s: Reg64,
        d: Reg64,
    },
    /// A `br` whose remap is i32-bank copies that no shorter form holds (five or more, or
    /// a register at or above 256; `moves` of the function's `moves`), in order, and no
    /// reference copy.
    BrMoves {
        to: ShortEdge,
        moves: Span,
    },
    /// A `br` whose remap is three or four i32-bank copies between registers under 256, held
    /// in the instruction, in order. Three are padded with a repeat of the third, which
    /// changes nothing: it reads the source the third just read (which that copy did not
    /// change, unless it copied a register onto itself) into the same destination.
    BrMove4 {
        to: ShortEdge,
        moves: [ByteMove; 4],
    },
    // Straight-line superinstructions: the sequences of a vmvx workgroup's inner loop (the
    // index arithmetic feeding a buffer access, a multiply-add into memory, the increment on
    // a loop's back edge). One replaces the first instruction of its sequence and does what
    // the whole sequence does, writing every register the sequence writes (so no liveness is
    // needed), then continues after the sequence. The sequence's other instructions stay at
    // their indices, as the `cond_br` of a compare-and-branch does: reached only by a branch
    // into the middle or when the fast loop stops partway, they run as before. The main loop
    // runs a superinstruction as its first instruction alone and continues at the next index
    // (see `interp.rs`), so that every trap is raised by the unfused instruction at its own
    // index. Their parts run in order, each reading its operands after the previous part's
    // writes, so that operands that overlap (a result that is also a later operand) give what
    // the unfused instructions give.
    /// `add.i64 x, y` into `o`, then `buffer.load` of 4 bytes from `b` at element `o` into
    /// `d`.
    AddLoad32 {
        x: Reg64,
        y: Reg64,
        o: Reg64,
        b: RefReg,
        d: Reg,
    },
    /// `add.i64 x, y` into `t`, `add.i64 t, z` into `o`, then a 4-byte `buffer.load` from `b`
    /// at element `o` into `d`.
    AddAddLoad32 {
        x: Reg64,
        y: Reg64,
        t: Reg64,
        z: Reg64,
        o: Reg64,
        b: RefReg,
        d: Reg,
    },
    /// `add.i64 a0, b0` into `d0`, then `add.i64 a1, b1` into `d1` (the second may read
    /// `d0`: the two run in order).
    AddAddI64 {
        a0: Reg64,
        b0: Reg64,
        d0: Reg64,
        a1: Reg64,
        b1: Reg64,
        d1: Reg64,
    },
    /// A multiply-add into memory: a 4-byte `buffer.load` from `b` at element `o` into `v`,
    /// `fma.f32 x, y, v` into `d`, then a 4-byte `buffer.store` of `d` to `b` at element `o`.
    LoadFmaStore32 {
        b: RefReg,
        o: Reg64,
        v: Reg,
        x: Reg,
        y: Reg,
        d: Reg,
    },
    /// A loop's increment and back edge: `add.i64 x, y` into `d`, then a `br` over `to`
    /// without copies (a [`Inst::BrShort`]: the increment writes the block argument's own
    /// register).
    AddBr {
        x: Reg64,
        y: Reg64,
        d: Reg64,
        to: ShortEdge,
    },
    /// A loop's increment and back edge: `add.i64 x, y` into `d`, then a `br` over `to`
    /// whose remap copies the pair `d` to the pair `dst` (a [`Inst::BrMove64`] from `d`).
    AddBrMove64 {
        x: Reg64,
        y: Reg64,
        d: Reg64,
        to: ShortEdge,
        dst: Reg64,
    },
    /// A loop's i32 increment and back edge, between registers under 256: `add.i32 a, b`
    /// into `d`, then a `br` over `to` with the copies `moves` (a [`Inst::BrMove4`]).
    AddI32BrMove4 {
        a: ByteReg,
        b: ByteReg,
        d: ByteReg,
        to: ShortEdge,
        moves: [ByteMove; 4],
    },
    /// A loop's increment and back edge: `add.i64 x, y` into `d`, then a `br` over `to`
    /// whose remap is the one i32-bank copy `src` to `dst` (a [`Inst::BrMove1`]).
    AddBrMove1 {
        x: Reg64,
        y: Reg64,
        d: Reg64,
        to: ShortEdge,
        src: Reg,
        dst: Reg,
    },
    // Straight-line pairs of register operations, which cannot fail (the steps of a
    // xorshift, a widening into an i64 sum, a bit turned into a float): the first into its
    // destination, then the second, which reads its operands after the first's write.
    /// `shl.i32 a, s` into `t`, then `xor.i32 x, y` into `d`.
    ShlXorI32 {
        a: Reg,
        s: Reg,
        t: Reg,
        x: Reg,
        y: Reg,
        d: Reg,
    },
    /// `shr.i32.u a, s` into `t`, then `xor.i32 x, y` into `d`.
    ShrUXorI32 {
        a: Reg,
        s: Reg,
        t: Reg,
        x: Reg,
        y: Reg,
        d: Reg,
    },
    /// `ext.i32.i64.u a` into `e`, then `add.i64 x, y` into `d`.
    ExtUAddI64 {
        a: Reg,
        e: Reg64,
        x: Reg64,
        y: Reg64,
        d: Reg64,
    },
    /// `and.i32 a, b` into `t`, then `cast.si32.f32 c` into `d`.
    AndCastF32 {
        a: Reg,
        b: Reg,
        t: Reg,
        c: Reg,
        d: Reg,
    },
    /// `mul.i64 a, b` into `t`, then `xor.i64 x, y` into `d` (a multiplicative hash's step).
    MulXorI64 {
        a: Reg64,
        b: Reg64,
        t: Reg64,
        x: Reg64,
        y: Reg64,
        d: Reg64,
    },
    /// A one-instruction loop body and its back edge, between registers under 256 for the
    /// body: `fma.f32 a, b, c` into `d`, then the counter's `add.i64 x, y` into `x`, then a
    /// `br` over `to` whose one copy moves `d` to `dst` (an [`Inst::AddBrMove1`] after the
    /// `fma`; `d` is not part of `x`, so the copy moves the `fma`'s result, which the loop
    /// keeps in a machine register rather than reading it back).
    FmaAddBrMove1 {
        a: ByteReg,
        b: ByteReg,
        c: ByteReg,
        d: ByteReg,
        x: Reg64,
        y: Reg64,
        to: ShortEdge,
        dst: ByteReg,
    },
    // References.
    CmpEqRef {
        a: RefReg,
        b: RefReg,
        d: Reg,
    },
    CmpNeRef {
        a: RefReg,
        b: RefReg,
        d: Reg,
    },
    CmpNzRef {
        a: RefReg,
        d: Reg,
    },
    /// `trace`/`print`: release the listed refs that carry MOVE.
    ReleaseMoved {
        regs: Span,
    },
    DiscardRefs {
        regs: Span,
    },
    AssignRef {
        s: RefReg,
        d: RefReg,
    },
    CastAnyRef {
        s: RefReg,
        ty: u32,
        d: RefReg,
    },
    // Buffers. Offsets and lengths are i64 registers. The 4-byte loads and stores (`i32`,
    // `f32`: every element a vmvx workgroup's loops touch) have their own variants, which do
    // not dispatch on a width.
    BufferLoad32 {
        b: RefReg,
        o: Reg64,
        d: Reg,
    },
    BufferStore32 {
        b: RefReg,
        o: Reg64,
        v: Reg,
    },
    BufferLoad {
        width: Width,
        b: RefReg,
        o: Reg64,
        d: Reg,
    },
    BufferLoad64 {
        b: RefReg,
        o: Reg64,
        d: Reg64,
    },
    BufferStore {
        width: Width,
        b: RefReg,
        o: Reg64,
        v: Reg,
    },
    BufferStore64 {
        b: RefReg,
        o: Reg64,
        v: Reg64,
    },
    BufferFill {
        width: Width,
        b: RefReg,
        o: Reg64,
        n: Reg64,
        v: Reg,
    },
    BufferFill64 {
        b: RefReg,
        o: Reg64,
        n: Reg64,
        v: Reg64,
    },
    BufferAlloc {
        len: Reg64,
        align: Reg,
        d: RefReg,
    },
    BufferClone {
        src: RefReg,
        o: Reg64,
        len: Reg64,
        align: Reg,
        d: RefReg,
    },
    BufferLength {
        b: RefReg,
        d: Reg64,
    },
    BufferCopy {
        src: RefReg,
        so: Reg64,
        dst: RefReg,
        o: Reg64,
        len: Reg64,
    },
    BufferCompare {
        a: RefReg,
        ao: Reg64,
        b: RefReg,
        bo: Reg64,
        len: Reg64,
        d: Reg,
    },
    BufferHash {
        b: RefReg,
        o: Reg64,
        len: Reg64,
        d: Reg64,
    },
}

impl Slot for Inst {
    const END: Inst = Inst::End;
}

impl Inst {
    /// Whether the instruction ends a fuel segment (a transfer of control). Asked of code
    /// before fusion, where a fused form's first instruction (an add) is still itself.
    pub fn ends_segment(&self) -> bool {
        matches!(
            self,
            Inst::Br { .. }
                | Inst::CondBr { .. }
                | Inst::BrLtI32S { .. }
                | Inst::BrLtI64S { .. }
                | Inst::BrCmp32 { .. }
                | Inst::BrCmp64 { .. }
                | Inst::BrShort { .. }
                | Inst::BrMove1 { .. }
                | Inst::BrMove2 { .. }
                | Inst::BrMove64 { .. }
                | Inst::BrMoves { .. }
                | Inst::BrMove4 { .. }
                | Inst::AddBr { .. }
                | Inst::AddBrMove64 { .. }
                | Inst::AddBrMove1 { .. }
                | Inst::AddI32BrMove4 { .. }
                | Inst::BrTable { .. }
                | Inst::Call { .. }
                | Inst::Return { .. }
                | Inst::Fail { .. }
                | Inst::Yield { .. }
        )
    }
}

/// A verified, pre-decoded function.
#[derive(Clone, Debug, Default)]
pub struct FunctionCode {
    /// The name from the debug database or an export, if any.
    pub name: Option<String>,
    /// The internal ordinal.
    pub ordinal: u32,
    /// The instructions.
    pub insts: Program<Inst>,
    /// Fuel charged on entry. Fuel is charged per segment, a run of instructions that ends
    /// with the first branch, call, return, fail or yield: on entering a function, taking an
    /// edge and continuing after a call, for all the instructions of the segment at once.
    pub entry_cost: u32,
    /// The byte offset of each instruction in the function's bytecode.
    pub pcs: Vec<u32>,
    /// i32-bank slots a frame needs (the verifier's rounded count).
    pub i32_count: u32,
    /// Ref slots a frame needs (rounded).
    pub ref_count: u32,
    /// Where each argument goes: its kind and i32 slot or ref index.
    pub params: Vec<(Kind, u16)>,
    /// The result kinds.
    pub results: Vec<Kind>,
    /// Whether an argument or a result is a reference. A call of a function whose arguments
    /// and results are all values (i32-bank slots) is one the fast loop can make and return
    /// from itself (`interp/hot.rs`): no reference moves between the frames.
    pub refs_in_signature: bool,
    /// Register lists (switch values, trace/discard operands), raw `u16` operands.
    pub regs: Vec<u16>,
    /// `return` operands: the result kind and raw register.
    pub returns: Vec<(Kind, u16)>,
    /// The i32-bank copies of all edges' remaps: (source slot, destination slot).
    pub moves: Vec<(Reg, Reg)>,
    /// The reference copies of all edges' remaps (the source's MOVE bit kept).
    pub ref_moves: Vec<(RefReg, RefReg)>,
    /// Branch edges.
    pub edges: Vec<Edge>,
    /// `br_table`s.
    pub tables: Vec<BrTable>,
    /// `switch.ref`s.
    pub switch_refs: Vec<SwitchRef>,
    /// Call sites.
    pub calls: Vec<CallSite>,
    /// `fail` messages.
    pub strings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instruction_is_sixteen_bytes() {
        assert!(
            std::mem::size_of::<Inst>() <= 16,
            "{}",
            std::mem::size_of::<Inst>()
        );
    }
}
