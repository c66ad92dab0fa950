//! The instruction set of bytecode 17.0 (facts sheet §4 and §10), in one place: the list of
//! instructions ([`for_each_instruction!`]) from which the opcode table ([`op_info`]), the
//! verifier's decoder and the pre-decoded instructions the interpreter runs all follow.

/// The block marker: starts every block, is not an instruction.
pub const BLOCK_MARKER: u8 = 0x79;
/// Prefix of the `ExtF32` instructions.
pub const PREFIX_F32: u8 = 0xE0;
/// Prefix of the `ExtF64` instructions.
pub const PREFIX_F64: u8 = 0xE1;

/// Which instruction set an opcode belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpSet {
    /// No prefix.
    Core,
    /// Prefix `0xE0`.
    F32,
    /// Prefix `0xE1`.
    F64,
}

/// One operand field's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// `u16`: an i32-bank register (i32 or f32).
    RegI32,
    /// `u16`: the even base of an i32-bank pair (i64 or f64).
    RegI64,
    /// `u16`: a ref register, MOVE bit not allowed.
    RegRef,
    /// `u16`: a ref register, MOVE bit allowed.
    RegRefMove,
    /// 4-byte immediate.
    ConstI32,
    /// 8-byte immediate.
    ConstI64,
    /// 2-byte immediate (the size of a `br_table`).
    ConstU16,
    /// `u32` byte offset of a 4-byte global.
    GlobalOffset4,
    /// `u32` byte offset of an 8-byte global.
    GlobalOffset8,
    /// `u32` ordinal of a ref global.
    GlobalRef,
    /// `u32` ordinal of a rodata segment.
    Rodata,
    /// `u32` index into the type table.
    Type,
    /// `u32` function: bit 31 set = import ordinal, else internal ordinal.
    Func,
    /// `u32` import ordinal with bit 31 set.
    Import,
    /// `u16` length and UTF-8 bytes.
    Str,
    /// Aligned register list of i32 registers.
    ListI32,
    /// Aligned register list of i64 pairs.
    ListI64,
    /// Aligned register list of ref registers (MOVE allowed).
    ListRefMove,
    /// Aligned register list of registers of either bank.
    ListAny,
    /// Aligned list of variadic segment sizes.
    SegList,
    /// `u32` byte offset of a block marker.
    Target,
    /// Aligned list of `(src, dst)` register pairs.
    Remap,
    /// `br_table` cases: as many `(target, remap)` as the preceding `ConstU16`.
    Cases,
}

/// An opcode's mnemonic and fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// `add.i32`.
    pub mnemonic: &'static str,
    /// The operand fields in encoding order.
    pub fields: &'static [Field],
    /// Whether the instruction ends a block (the next byte is a block marker).
    pub terminator: bool,
}

/// The description of an opcode, when it exists.
pub fn op_info(set: OpSet, opcode: u8) -> Option<&'static OpInfo> {
    OP_INFO[set as usize][usize::from(opcode)].as_ref()
}

/// The instruction set, once: every instruction's set, opcode, mnemonic, whether it ends a
/// block, its operands in encoding order (each with a name and its [`Field`] kind), and the
/// pre-decoded [`Inst`](super::code::Inst) it becomes, written with the operand names.
///
/// `for_each_instruction!(m)` hands the whole list to the macro `m`, which turns it into what
/// it needs: this file's [`OpInfo`] tables (mnemonics and fields), and the verifier's decoder
/// (`verify.rs`), which reads and checks each operand by its kind into a typed local of that
/// name (an i32 register into a [`Reg`](super::code::Reg), an i64 register into a
/// [`Reg64`](super::code::Reg64), a ref register into a [`RefReg`](super::code::RefReg), a
/// branch target into a checked target, a register list into a list of the instruction...)
/// and then evaluates the row's constructor. So an operand the constructor names but the row
/// does not declare, or a field of the wrong type, does not compile, and a declared operand
/// the constructor does not use fails the build (`unused_variables` is denied there); an
/// operand the instruction deliberately ignores is named with a leading `_`.
///
/// Row syntax: `OPCODE "mnemonic" [terminator] (name: Kind, ...) => constructor;`. A `Cases`
/// operand names the operand holding its count: `cases: Cases(count)`. The first token of
/// the list, `verifier`, is the name constructors use for the verifier, to build side tables
/// (edges, call sites, register spans, strings).
///
/// The test at the end of this file checks the list against `docs/iree_vm_opcodes.tsv`.
macro_rules! for_each_instruction {
    ($callback:ident) => {
        $callback! {
            verifier;
            Core {
                // Globals.
                0x00 "global.load.i32" (offset: GlobalOffset4, d: RegI32)
                    => GlobalLoad32 { offset, d };
                0x01 "global.store.i32" (offset: GlobalOffset4, s: RegI32)
                    => GlobalStore32 { offset, s };
                0x02 "global.load.indirect.i32" (o: RegI32, d: RegI32)
                    => GlobalLoadInd32 { o, d };
                0x03 "global.store.indirect.i32" (o: RegI32, s: RegI32)
                    => GlobalStoreInd32 { o, s };
                0x04 "global.load.i64" (offset: GlobalOffset8, d: RegI64)
                    => GlobalLoad64 { offset, d };
                0x05 "global.store.i64" (offset: GlobalOffset8, s: RegI64)
                    => GlobalStore64 { offset, s };
                0x06 "global.load.indirect.i64" (o: RegI32, d: RegI64)
                    => GlobalLoadInd64 { o, d };
                0x07 "global.store.indirect.i64" (o: RegI32, s: RegI64)
                    => GlobalStoreInd64 { o, s };
                0x08 "global.load.ref" (global: GlobalRef, ty: Type, d: RegRefMove)
                    => GlobalLoadRef { global, ty, d };
                0x09 "global.store.ref" (global: GlobalRef, ty: Type, s: RegRefMove)
                    => GlobalStoreRef { global, ty, s };
                0x0A "global.load.indirect.ref" (o: RegI32, ty: Type, d: RegRefMove)
                    => GlobalLoadIndRef { o, ty, d };
                0x0B "global.store.indirect.ref" (o: RegI32, ty: Type, s: RegRefMove)
                    => GlobalStoreIndRef { o, ty, s };
                // Constants.
                0x0C "const.i32.zero" (d: RegI32) => Const32 { value: 0, d };
                0x0D "const.i32" (value: ConstI32, d: RegI32) => Const32 { value, d };
                0x0E "const.i64.zero" (d: RegI64) => Const64 { lo: 0, hi: 0, d };
                0x0F "const.i64" (value: ConstI64, d: RegI64)
                    => Const64 { lo: value as u32, hi: (value >> 32) as u32, d };
                0x10 "const.ref.zero" (d: RegRefMove) => ConstRefZero { d };
                0x11 "const.ref.rodata" (segment: Rodata, d: RegRefMove)
                    => ConstRefRodata { segment, d };
                // Lists.
                0x12 "list.alloc" (ty: Type, capacity: RegI32, d: RegRefMove)
                    => ListAlloc { ty, capacity, d };
                0x13 "list.reserve" (list: RegRef, n: RegI32) => ListReserve { list, n };
                0x14 "list.size" (list: RegRef, d: RegI32) => ListSize { list, d };
                0x15 "list.resize" (list: RegRef, n: RegI32) => ListResize { list, n };
                0x16 "list.get.i32" (list: RegRef, i: RegI32, d: RegI32)
                    => ListGetI32 { list, i, d };
                0x17 "list.set.i32" (list: RegRef, i: RegI32, v: RegI32)
                    => ListSetI32 { list, i, v };
                0x18 "list.get.i64" (list: RegRef, i: RegI32, d: RegI64)
                    => ListGetI64 { list, i, d };
                0x19 "list.set.i64" (list: RegRef, i: RegI32, v: RegI64)
                    => ListSetI64 { list, i, v };
                0x1A "list.get.ref" (list: RegRef, i: RegI32, ty: Type, d: RegRefMove)
                    => ListGetRef { list, i, ty, d };
                0x1B "list.set.ref" (list: RegRef, i: RegI32, v: RegRefMove)
                    => ListSetRef { list, i, v };
                // Selects and switches.
                0x1C "select.i32" (c: RegI32, t: RegI32, f: RegI32, d: RegI32)
                    => Select32 { c, t, f, d };
                0x1D "select.i64" (c: RegI32, t: RegI64, f: RegI64, d: RegI64)
                    => Select64 { c, t, f, d };
                0x1E "select.ref"
                    (c: RegI32, ty: Type, t: RegRefMove, f: RegRefMove, d: RegRefMove)
                    => SelectRef { c, ty, t, f, d };
                0x1F "switch.i32" (index: RegI32, default: RegI32, values: ListI32, d: RegI32)
                    => Switch32 { index, default, values: verifier.span(values), d };
                0x20 "switch.i64" (index: RegI32, default: RegI64, values: ListI64, d: RegI64)
                    => SwitchI64 { index, default, values: verifier.span(values), d };
                0x21 "switch.ref" (
                    index: RegI32,
                    ty: Type,
                    default: RegRefMove,
                    values: ListRefMove,
                    result: RegRefMove,
                ) => SwitchRef { table: verifier.switch_ref(index, ty, default, values, result) };
                // Integer arithmetic.
                0x22 "add.i32" (a: RegI32, b: RegI32, d: RegI32) => AddI32 { a, b, d };
                0x23 "sub.i32" (a: RegI32, b: RegI32, d: RegI32) => SubI32 { a, b, d };
                0x24 "mul.i32" (a: RegI32, b: RegI32, d: RegI32)
                    => MulI32 { a, b, d };
                0x25 "div.i32.s" (a: RegI32, b: RegI32, d: RegI32)
                    => Div32 { op: IDiv::DivS, a, b, d };
                0x26 "div.i32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => Div32 { op: IDiv::DivU, a, b, d };
                0x27 "rem.i32.s" (a: RegI32, b: RegI32, d: RegI32)
                    => Div32 { op: IDiv::RemS, a, b, d };
                0x28 "rem.i32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => Div32 { op: IDiv::RemU, a, b, d };
                0x29 "fma.i32" (a: RegI32, b: RegI32, c: RegI32, d: RegI32)
                    => Fma32 { a, b, c, d };
                0x2A "add.i64" (a: RegI64, b: RegI64, d: RegI64) => AddI64 { a, b, d };
                0x2B "sub.i64" (a: RegI64, b: RegI64, d: RegI64)
                    => SubI64 { a, b, d };
                0x2C "mul.i64" (a: RegI64, b: RegI64, d: RegI64)
                    => MulI64 { a, b, d };
                0x2D "div.i64.s" (a: RegI64, b: RegI64, d: RegI64)
                    => Div64 { op: IDiv::DivS, a, b, d };
                0x2E "div.i64.u" (a: RegI64, b: RegI64, d: RegI64)
                    => Div64 { op: IDiv::DivU, a, b, d };
                0x2F "rem.i64.s" (a: RegI64, b: RegI64, d: RegI64)
                    => Div64 { op: IDiv::RemS, a, b, d };
                0x30 "rem.i64.u" (a: RegI64, b: RegI64, d: RegI64)
                    => Div64 { op: IDiv::RemU, a, b, d };
                0x31 "fma.i64" (a: RegI64, b: RegI64, c: RegI64, d: RegI64)
                    => Fma64 { a, b, c, d };
                // Bitwise operations and shifts.
                0x32 "not.i32" (a: RegI32, d: RegI32) => Un32 { op: IUn::Not, a, d };
                0x33 "and.i32" (a: RegI32, b: RegI32, d: RegI32)
                    => AndI32 { a, b, d };
                0x34 "or.i32" (a: RegI32, b: RegI32, d: RegI32)
                    => OrI32 { a, b, d };
                0x35 "xor.i32" (a: RegI32, b: RegI32, d: RegI32)
                    => XorI32 { a, b, d };
                0x36 "not.i64" (a: RegI64, d: RegI64) => Un64 { op: IUn64::Not, a, d };
                0x37 "and.i64" (a: RegI64, b: RegI64, d: RegI64)
                    => AndI64 { a, b, d };
                0x38 "or.i64" (a: RegI64, b: RegI64, d: RegI64)
                    => OrI64 { a, b, d };
                0x39 "xor.i64" (a: RegI64, b: RegI64, d: RegI64)
                    => XorI64 { a, b, d };
                0x3A "shl.i32" (a: RegI32, b: RegI32, d: RegI32)
                    => ShlI32 { a, b, d };
                0x3B "shr.i32.s" (a: RegI32, b: RegI32, d: RegI32)
                    => ShrI32S { a, b, d };
                0x3C "shr.i32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => ShrI32U { a, b, d };
                0x3D "shl.i64" (a: RegI64, b: RegI32, d: RegI64)
                    => ShlI64 { a, b, d };
                0x3E "shr.i64.s" (a: RegI64, b: RegI32, d: RegI64)
                    => ShrI64S { a, b, d };
                0x3F "shr.i64.u" (a: RegI64, b: RegI32, d: RegI64)
                    => ShrI64U { a, b, d };
                // Truncations and extensions.
                0x40 "trunc.i32.i8" (a: RegI32, d: RegI32) => Un32 { op: IUn::TruncI8, a, d };
                0x41 "trunc.i32.i16" (a: RegI32, d: RegI32)
                    => Un32 { op: IUn::TruncI16, a, d };
                0x42 "trunc.i64.i32" (a: RegI64, d: RegI32) => TruncI64I32 { a, d };
                0x43 "ext.i8.i32.s" (a: RegI32, d: RegI32) => Un32 { op: IUn::ExtI8S, a, d };
                0x44 "ext.i8.i32.u" (a: RegI32, d: RegI32) => Un32 { op: IUn::ExtI8U, a, d };
                0x45 "ext.i16.i32.s" (a: RegI32, d: RegI32)
                    => Un32 { op: IUn::ExtI16S, a, d };
                0x46 "ext.i16.i32.u" (a: RegI32, d: RegI32)
                    => Un32 { op: IUn::ExtI16U, a, d };
                0x47 "ext.i32.i64.s" (a: RegI32, d: RegI64) => ExtI32I64S { a, d };
                0x48 "ext.i32.i64.u" (a: RegI32, d: RegI64) => ExtI32I64U { a, d };
                // Integer comparisons.
                0x49 "cmp.eq.i32" (a: RegI32, b: RegI32, d: RegI32) => CmpEqI32 { a, b, d };
                0x4A "cmp.ne.i32" (a: RegI32, b: RegI32, d: RegI32)
                    => Cmp32 { op: ICmp::Ne, a, b, d };
                0x4B "cmp.lt.i32.s" (a: RegI32, b: RegI32, d: RegI32) => CmpLtI32S { a, b, d };
                0x4C "cmp.lt.i32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => Cmp32 { op: ICmp::LtU, a, b, d };
                0x4D "cmp.nz.i32" (a: RegI32, d: RegI32) => NzI32 { a, d };
                0x4E "cmp.eq.i64" (a: RegI64, b: RegI64, d: RegI32)
                    => Cmp64 { op: ICmp::Eq, a, b, d };
                0x4F "cmp.ne.i64" (a: RegI64, b: RegI64, d: RegI32)
                    => Cmp64 { op: ICmp::Ne, a, b, d };
                0x50 "cmp.lt.i64.s" (a: RegI64, b: RegI64, d: RegI32)
                    => Cmp64 { op: ICmp::LtS, a, b, d };
                0x51 "cmp.lt.i64.u" (a: RegI64, b: RegI64, d: RegI32)
                    => Cmp64 { op: ICmp::LtU, a, b, d };
                0x52 "cmp.nz.i64" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::NzI64, a, d };
                // Reference comparisons.
                0x53 "cmp.eq.ref" (a: RegRef, b: RegRef, d: RegI32) => CmpEqRef { a, b, d };
                0x54 "cmp.ne.ref" (a: RegRef, b: RegRef, d: RegI32) => CmpNeRef { a, b, d };
                0x55 "cmp.nz.ref" (a: RegRef, d: RegI32) => CmpNzRef { a, d };
                // Control flow.
                0x56 "br" terminator (dest: Target, operands: Remap)
                    => Br { edge: verifier.edge(dest, operands)? };
                0x57 "cond_br" terminator (
                    c: RegI32,
                    true_dest: Target,
                    true_operands: Remap,
                    false_dest: Target,
                    false_operands: Remap,
                ) => CondBr {
                    c,
                    t: verifier.edge(true_dest, true_operands)?,
                    f: verifier.edge(false_dest, false_operands)?,
                };
                0x58 "call" (callee: Func, operands: ListAny, results: ListAny)
                    => Call { site: verifier.call_site(callee, None, operands, results)? };
                0x59 "call.variadic"
                    (callee: Func, segments: SegList, operands: ListAny, results: ListAny)
                    => Call {
                        site: verifier.call_site(callee, Some(segments), operands, results)?,
                    };
                0x5A "return" terminator (values: ListAny)
                    => Return { results: verifier.returns(values)? };
                0x5B "fail" terminator (status: RegI32, message: Str)
                    => Fail { status, message: verifier.string(message) };
                0x5C "import.resolved" (import: Import, d: RegI32)
                    => ImportResolved { import, d };
                0x5D "yield" terminator (dest: Target, operands: Remap)
                    => Yield { edge: verifier.edge(dest, operands)? };
                0x5E "trace" (_event_name: Str, values: ListAny)
                    => ReleaseMoved { regs: verifier.span(values) };
                0x5F "print" (_event_name: Str, values: ListAny)
                    => ReleaseMoved { regs: verifier.span(values) };
                // The 3.13 runtime reads cond_break's condition and always branches.
                0x60 "cond_break" terminator (_condition: RegI32, dest: Target, operands: Remap)
                    => Br { edge: verifier.edge(dest, operands)? };
                0x61 "break" terminator (dest: Target, operands: Remap)
                    => Br { edge: verifier.edge(dest, operands)? };
                // Buffers.
                0x62 "buffer.load.i8.u" (b: RegRef, o: RegI64, d: RegI32)
                    => BufferLoad { width: Width::U8, b, o, d };
                0x63 "buffer.load.i8.s" (b: RegRef, o: RegI64, d: RegI32)
                    => BufferLoad { width: Width::S8, b, o, d };
                0x64 "buffer.load.i16.u" (b: RegRef, o: RegI64, d: RegI32)
                    => BufferLoad { width: Width::U16, b, o, d };
                0x65 "buffer.load.i16.s" (b: RegRef, o: RegI64, d: RegI32)
                    => BufferLoad { width: Width::S16, b, o, d };
                0x66 "buffer.load.i32" (b: RegRef, o: RegI64, d: RegI32)
                    => BufferLoad32 { b, o, d };
                0x67 "buffer.load.i64" (b: RegRef, o: RegI64, d: RegI64)
                    => BufferLoad64 { b, o, d };
                0x68 "buffer.store.i8" (b: RegRef, o: RegI64, v: RegI32)
                    => BufferStore { width: Width::U8, b, o, v };
                0x69 "buffer.store.i16" (b: RegRef, o: RegI64, v: RegI32)
                    => BufferStore { width: Width::U16, b, o, v };
                0x6A "buffer.store.i32" (b: RegRef, o: RegI64, v: RegI32)
                    => BufferStore32 { b, o, v };
                0x6B "buffer.store.i64" (b: RegRef, o: RegI64, v: RegI64)
                    => BufferStore64 { b, o, v };
                0x6C "buffer.alloc" (len: RegI64, align: RegI32, d: RegRefMove)
                    => BufferAlloc { len, align, d };
                0x6D "buffer.clone"
                    (src: RegRef, o: RegI64, len: RegI64, align: RegI32, d: RegRefMove)
                    => BufferClone { src, o, len, align, d };
                0x6E "buffer.length" (b: RegRef, d: RegI64) => BufferLength { b, d };
                0x6F "buffer.copy"
                    (src: RegRef, so: RegI64, dst: RegRef, o: RegI64, len: RegI64)
                    => BufferCopy { src, so, dst, o, len };
                0x70 "buffer.compare" (
                    a: RegRef,
                    ao: RegI64,
                    b: RegRef,
                    bo: RegI64,
                    len: RegI64,
                    d: RegI32,
                ) => BufferCompare { a, ao, b, bo, len, d };
                0x71 "buffer.fill.i8" (b: RegRef, o: RegI64, n: RegI64, v: RegI32)
                    => BufferFill { width: Width::U8, b, o, n, v };
                0x72 "buffer.fill.i16" (b: RegRef, o: RegI64, n: RegI64, v: RegI32)
                    => BufferFill { width: Width::U16, b, o, n, v };
                0x73 "buffer.fill.i32" (b: RegRef, o: RegI64, n: RegI64, v: RegI32)
                    => BufferFill { width: Width::B32, b, o, n, v };
                0x74 "buffer.fill.i64" (b: RegRef, o: RegI64, n: RegI64, v: RegI64)
                    => BufferFill64 { b, o, n, v };
                // More integer arithmetic.
                0x75 "ctlz.i32" (a: RegI32, d: RegI32) => Un32 { op: IUn::Ctlz, a, d };
                0x76 "ctlz.i64" (a: RegI64, d: RegI64) => Un64 { op: IUn64::Ctlz, a, d };
                0x77 "abs.i32" (a: RegI32, d: RegI32) => Un32 { op: IUn::Abs, a, d };
                0x78 "abs.i64" (a: RegI64, d: RegI64) => Un64 { op: IUn64::Abs, a, d };
                0x7A "min.i32.s" (a: RegI32, b: RegI32, d: RegI32)
                    => Bin32 { op: IBin::MinS, a, b, d };
                0x7B "min.i32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => Bin32 { op: IBin::MinU, a, b, d };
                0x7C "max.i32.s" (a: RegI32, b: RegI32, d: RegI32)
                    => Bin32 { op: IBin::MaxS, a, b, d };
                0x7D "max.i32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => Bin32 { op: IBin::MaxU, a, b, d };
                0x7E "min.i64.s" (a: RegI64, b: RegI64, d: RegI64)
                    => Bin64 { op: IBin::MinS, a, b, d };
                0x7F "min.i64.u" (a: RegI64, b: RegI64, d: RegI64)
                    => Bin64 { op: IBin::MinU, a, b, d };
                0x80 "max.i64.s" (a: RegI64, b: RegI64, d: RegI64)
                    => Bin64 { op: IBin::MaxS, a, b, d };
                0x81 "max.i64.u" (a: RegI64, b: RegI64, d: RegI64)
                    => Bin64 { op: IBin::MaxU, a, b, d };
                // References, tables and yieldable calls.
                0x82 "cast.any.ref" (s: RegRefMove, ty: Type, d: RegRefMove)
                    => CastAnyRef { s, ty, d };
                0x83 "br_table" terminator (
                    index: RegI32,
                    default_dest: Target,
                    default_operands: Remap,
                    count: ConstU16,
                    cases: Cases(count),
                ) => BrTable {
                    index,
                    table: verifier.br_table(default_dest, default_operands, cases)?,
                };
                0x84 "buffer.hash" (b: RegRef, o: RegI64, len: RegI64, d: RegI64)
                    => BufferHash { b, o, len, d };
                0x85 "discard.refs" (refs: ListAny)
                    => DiscardRefs { regs: verifier.discarded_refs(refs)? };
                0x86 "assign.ref" (s: RegRefMove, d: RegRefMove) => AssignRef { s, d };
                0x87 "call.yieldable" terminator
                    (callee: Func, operands: ListAny, dest: Target, results: ListAny)
                    => Call {
                        site: verifier.yieldable_call(callee, None, operands, dest, results)?,
                    };
                0x88 "call.variadic.yieldable" terminator (
                    callee: Func,
                    segments: SegList,
                    operands: ListAny,
                    dest: Target,
                    results: ListAny,
                ) => Call {
                    site: verifier.yieldable_call(callee, Some(segments), operands, dest, results)?,
                };
            }
            F32 {
                0x00 "global.load.f32" (offset: GlobalOffset4, d: RegI32)
                    => GlobalLoad32 { offset, d };
                0x01 "global.store.f32" (offset: GlobalOffset4, s: RegI32)
                    => GlobalStore32 { offset, s };
                0x02 "global.load.indirect.f32" (o: RegI32, d: RegI32)
                    => GlobalLoadInd32 { o, d };
                0x03 "global.store.indirect.f32" (o: RegI32, s: RegI32)
                    => GlobalStoreInd32 { o, s };
                0x04 "const.f32.zero" (d: RegI32) => Const32 { value: 0, d };
                0x05 "const.f32" (value: ConstI32, d: RegI32) => Const32 { value, d };
                0x06 "list.get.f32" (list: RegRef, i: RegI32, d: RegI32)
                    => ListGetF32 { list, i, d };
                0x07 "list.set.f32" (list: RegRef, i: RegI32, v: RegI32)
                    => ListSetF32 { list, i, v };
                0x08 "select.f32" (c: RegI32, t: RegI32, f: RegI32, d: RegI32)
                    => Select32 { c, t, f, d };
                0x09 "switch.f32" (index: RegI32, default: RegI32, values: ListI32, d: RegI32)
                    => Switch32 { index, default, values: verifier.span(values), d };
                0x0A "add.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Add, a, b, d };
                0x0B "sub.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Sub, a, b, d };
                0x0C "mul.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Mul, a, b, d };
                0x0D "div.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Div, a, b, d };
                0x0E "rem.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Rem, a, b, d };
                0x0F "fma.f32" (a: RegI32, b: RegI32, c: RegI32, d: RegI32)
                    => FmaF32 { a, b, c, d };
                0x10 "abs.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Abs, a, d };
                0x11 "neg.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Neg, a, d };
                0x12 "ceil.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Ceil, a, d };
                0x13 "floor.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Floor, a, d };
                0x14 "cast.si32.f32" (a: RegI32, d: RegI32) => CastSi32F32 { a, d };
                0x15 "cast.ui32.f32" (a: RegI32, d: RegI32)
                    => Convert32 { op: Conv32::Ui32F32, a, d };
                0x16 "cast.f32.si32" (a: RegI32, d: RegI32)
                    => Convert32 { op: Conv32::F32I32, a, d };
                0x17 "cast.f32.ui32" (a: RegI32, d: RegI32)
                    => Convert32 { op: Conv32::F32I32, a, d };
                0x18 "bitcast.i32.f32" (s: RegI32, d: RegI32) => Copy32 { s, d };
                0x19 "bitcast.f32.i32" (s: RegI32, d: RegI32) => Copy32 { s, d };
                0x1A "atan.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Atan, a, d };
                0x1B "atan2.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Atan2, a, b, d };
                0x1C "cos.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Cos, a, d };
                0x1D "sin.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Sin, a, d };
                0x1E "exp.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Exp, a, d };
                0x1F "exp2.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Exp2, a, d };
                0x20 "expm1.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Expm1, a, d };
                0x21 "log.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Log, a, d };
                0x22 "log10.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Log10, a, d };
                0x23 "log1p.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Log1p, a, d };
                0x24 "log2.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Log2, a, d };
                0x25 "pow.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Pow, a, b, d };
                0x26 "rsqrt.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Rsqrt, a, d };
                0x27 "sqrt.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Sqrt, a, d };
                0x28 "tanh.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Tanh, a, d };
                0x29 "erf.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Erf, a, d };
                0x2A "cmp.eq.f32.o" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::EqO, a, b, d };
                0x2B "cmp.eq.f32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::EqU, a, b, d };
                0x2C "cmp.ne.f32.o" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::NeO, a, b, d };
                0x2D "cmp.ne.f32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::NeU, a, b, d };
                0x2E "cmp.lt.f32.o" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::LtO, a, b, d };
                0x2F "cmp.lt.f32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::LtU, a, b, d };
                0x30 "cmp.lte.f32.o" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::LteO, a, b, d };
                0x31 "cmp.lte.f32.u" (a: RegI32, b: RegI32, d: RegI32)
                    => CmpF32 { op: FCmp::LteU, a, b, d };
                0x32 "cmp.nan.f32" (a: RegI32, d: RegI32)
                    => Convert32 { op: Conv32::NanF32, a, d };
                0x33 "buffer.load.f32" (b: RegRef, o: RegI64, d: RegI32)
                    => BufferLoad32 { b, o, d };
                0x34 "buffer.store.f32" (b: RegRef, o: RegI64, v: RegI32)
                    => BufferStore32 { b, o, v };
                0x35 "buffer.fill.f32" (b: RegRef, o: RegI64, n: RegI64, v: RegI32)
                    => BufferFill { width: Width::B32, b, o, n, v };
                0x36 "round.f32" (a: RegI32, d: RegI32) => UnF32 { op: FUn::Round, a, d };
                0x37 "min.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Min, a, b, d };
                0x38 "max.f32" (a: RegI32, b: RegI32, d: RegI32)
                    => BinF32 { op: FBin::Max, a, b, d };
                0x39 "round.f32.even" (a: RegI32, d: RegI32)
                    => UnF32 { op: FUn::RoundEven, a, d };
                0x3A "cast.f32.si64" (a: RegI32, d: RegI64)
                    => Convert32To64 { op: Conv32To64::F32Si64, a, d };
                0x3B "cast.f32.ui64" (a: RegI32, d: RegI64)
                    => Convert32To64 { op: Conv32To64::F32Ui64, a, d };
                0x3C "cast.si64.f32" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::Si64F32, a, d };
                0x3D "cast.ui64.f32" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::Ui64F32, a, d };
                0x3E "fpowi.f32" (a: RegI32, n: RegI32, d: RegI32) => PowiF32 { a, n, d };
            }
            F64 {
                0x00 "global.load.f64" (offset: GlobalOffset8, d: RegI64)
                    => GlobalLoad64 { offset, d };
                0x01 "global.store.f64" (offset: GlobalOffset8, s: RegI64)
                    => GlobalStore64 { offset, s };
                0x02 "global.load.indirect.f64" (o: RegI32, d: RegI64)
                    => GlobalLoadInd64 { o, d };
                0x03 "global.store.indirect.f64" (o: RegI32, s: RegI64)
                    => GlobalStoreInd64 { o, s };
                0x04 "const.f64.zero" (d: RegI64) => Const64 { lo: 0, hi: 0, d };
                0x05 "const.f64" (value: ConstI64, d: RegI64)
                    => Const64 { lo: value as u32, hi: (value >> 32) as u32, d };
                0x06 "list.get.f64" (list: RegRef, i: RegI32, d: RegI64)
                    => ListGetF64 { list, i, d };
                0x07 "list.set.f64" (list: RegRef, i: RegI32, v: RegI64)
                    => ListSetF64 { list, i, v };
                0x08 "select.f64" (c: RegI32, t: RegI64, f: RegI64, d: RegI64)
                    => Select64 { c, t, f, d };
                0x09 "switch.f64" (index: RegI32, default: RegI64, values: ListI64, d: RegI64)
                    => Switch64 { index, default, values: verifier.span(values), d };
                0x0A "add.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Add, a, b, d };
                0x0B "sub.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Sub, a, b, d };
                0x0C "mul.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Mul, a, b, d };
                0x0D "div.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Div, a, b, d };
                0x0E "rem.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Rem, a, b, d };
                0x0F "fma.f64" (a: RegI64, b: RegI64, c: RegI64, d: RegI64)
                    => FmaF64 { a, b, c, d };
                0x10 "abs.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Abs, a, d };
                0x11 "neg.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Neg, a, d };
                0x12 "ceil.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Ceil, a, d };
                0x13 "floor.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Floor, a, d };
                0x14 "trunc.f64.f32" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::F64F32, a, d };
                0x15 "ext.f32.f64" (a: RegI32, d: RegI64)
                    => Convert32To64 { op: Conv32To64::F32F64, a, d };
                0x16 "cast.si32.f64" (a: RegI32, d: RegI64)
                    => Convert32To64 { op: Conv32To64::Si32F64, a, d };
                0x17 "cast.ui32.f64" (a: RegI32, d: RegI64)
                    => Convert32To64 { op: Conv32To64::Ui32F64, a, d };
                0x18 "cast.f64.si32" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::F64I32, a, d };
                0x19 "cast.f64.ui32" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::F64I32, a, d };
                0x1A "cast.si64.f64" (a: RegI64, d: RegI64)
                    => Convert64 { op: Conv64::Si64F64, a, d };
                0x1B "cast.ui64.f64" (a: RegI64, d: RegI64)
                    => Convert64 { op: Conv64::Ui64F64, a, d };
                0x1C "cast.f64.si64" (a: RegI64, d: RegI64)
                    => Convert64 { op: Conv64::F64I64, a, d };
                0x1D "cast.f64.ui64" (a: RegI64, d: RegI64)
                    => Convert64 { op: Conv64::F64I64, a, d };
                0x1E "bitcast.i64.f64" (s: RegI64, d: RegI64) => Copy64 { s, d };
                0x1F "bitcast.f64.i64" (s: RegI64, d: RegI64) => Copy64 { s, d };
                0x20 "atan.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Atan, a, d };
                0x21 "atan2.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Atan2, a, b, d };
                0x22 "cos.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Cos, a, d };
                0x23 "sin.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Sin, a, d };
                0x24 "exp.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Exp, a, d };
                0x25 "exp2.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Exp2, a, d };
                0x26 "expm1.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Expm1, a, d };
                0x27 "log.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Log, a, d };
                0x28 "log10.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Log10, a, d };
                0x29 "log1p.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Log1p, a, d };
                0x2A "log2.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Log2, a, d };
                0x2B "pow.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Pow, a, b, d };
                0x2C "rsqrt.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Rsqrt, a, d };
                0x2D "sqrt.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Sqrt, a, d };
                0x2E "tanh.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Tanh, a, d };
                0x2F "erf.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Erf, a, d };
                0x30 "cmp.eq.f64.o" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::EqO, a, b, d };
                0x31 "cmp.eq.f64.u" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::EqU, a, b, d };
                0x32 "cmp.ne.f64.o" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::NeO, a, b, d };
                0x33 "cmp.ne.f64.u" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::NeU, a, b, d };
                0x34 "cmp.lt.f64.o" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::LtO, a, b, d };
                0x35 "cmp.lt.f64.u" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::LtU, a, b, d };
                0x36 "cmp.lte.f64.o" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::LteO, a, b, d };
                0x37 "cmp.lte.f64.u" (a: RegI64, b: RegI64, d: RegI32)
                    => CmpF64 { op: FCmp::LteU, a, b, d };
                0x38 "cmp.nan.f64" (a: RegI64, d: RegI32)
                    => Convert64To32 { op: Conv64To32::NanF64, a, d };
                0x39 "buffer.load.f64" (b: RegRef, o: RegI64, d: RegI64)
                    => BufferLoad64 { b, o, d };
                0x3A "buffer.store.f64" (b: RegRef, o: RegI64, v: RegI64)
                    => BufferStore64 { b, o, v };
                0x3B "buffer.fill.f64" (b: RegRef, o: RegI64, n: RegI64, v: RegI64)
                    => BufferFill64 { b, o, n, v };
                0x3C "round.f64" (a: RegI64, d: RegI64) => UnF64 { op: FUn::Round, a, d };
                0x3D "min.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Min, a, b, d };
                0x3E "max.f64" (a: RegI64, b: RegI64, d: RegI64)
                    => BinF64 { op: FBin::Max, a, b, d };
                0x3F "round.f64.even" (a: RegI64, d: RegI64)
                    => UnF64 { op: FUn::RoundEven, a, d };
                0x40 "fpowi.f64" (a: RegI64, n: RegI64, d: RegI64) => PowiF64 { a, n, d };
            }
        }
    };
}
pub(super) use for_each_instruction;

/// Whether a row is marked `terminator`.
macro_rules! is_terminator_row {
    () => {
        false
    };
    (terminator) => {
        true
    };
}

/// Builds [`OP_INFO`] from the instruction list: each row's mnemonic, field kinds and
/// terminator mark at its set and opcode. A row listed twice stops the build.
macro_rules! op_info_table {
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
        /// Every instruction's description, by set and opcode.
        static OP_INFO: [[Option<OpInfo>; 256]; 3] = {
            let mut tables = [[None; 256]; 3];
            $($(
                let slot = &mut tables[OpSet::$set as usize][$opcode];
                assert!(slot.is_none(), concat!("opcode listed twice: ", $mnemonic));
                *slot = Some(OpInfo {
                    mnemonic: $mnemonic,
                    fields: &[$(Field::$kind),*],
                    terminator: is_terminator_row!($($terminator)?),
                });
            )*)*
            tables
        };
    };
}

for_each_instruction!(op_info_table);

/// Whether the opcode ends a block.
pub fn is_terminator(set: OpSet, opcode: u8) -> bool {
    op_info(set, opcode).is_some_and(|info| info.terminator)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field kinds a TSV operand kind (`reg:f32`, `ordinal:type`...) may be encoded as.
    fn tsv_kinds(kind: &str) -> &'static [Field] {
        match kind {
            "reg:i32" | "reg:f32" => &[Field::RegI32],
            "reg:i64" | "reg:f64" => &[Field::RegI64],
            "reg:ref" => &[Field::RegRef],
            "reg:ref+move" => &[Field::RegRefMove],
            "const:i32" | "const:f32" => &[Field::ConstI32],
            "const:i64" | "const:f64" => &[Field::ConstI64],
            "const:u16" => &[Field::ConstU16],
            "ordinal:global_byte_offset" => &[Field::GlobalOffset4, Field::GlobalOffset8],
            "ordinal:global_ref" => &[Field::GlobalRef],
            "ordinal:rodata" => &[Field::Rodata],
            "ordinal:type" => &[Field::Type],
            "ordinal:func" => &[Field::Func],
            "ordinal:import" => &[Field::Import],
            "str" => &[Field::Str],
            "reglist:i32" | "reglist:f32" => &[Field::ListI32],
            "reglist:i64" | "reglist:f64" => &[Field::ListI64],
            "reglist:ref+move" => &[Field::ListRefMove],
            "reglist:any" => &[Field::ListAny],
            "seglist" => &[Field::SegList],
            "target" => &[Field::Target],
            "remap" => &[Field::Remap],
            "cases" => &[Field::Cases],
            other => panic!("unknown operand kind {other} in the TSV"),
        }
    }

    /// Every row of the facts sheet's TSV is in the table, with the same fields, and the table
    /// has no other row.
    #[test]
    fn the_table_matches_the_opcode_tsv() {
        let tsv = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/iree_vm_opcodes.tsv"
        ))
        .unwrap();
        let mut rows = 0;
        for line in tsv.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let cols: Vec<&str> = line.split('\t').collect();
            let set = match cols[0] {
                "core" => OpSet::Core,
                "f32" => OpSet::F32,
                "f64" => OpSet::F64,
                other => panic!("set {other}"),
            };
            let opcode = u8::from_str_radix(cols[1].trim_start_matches("0x"), 16).unwrap();
            let info = op_info(set, opcode).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(info.mnemonic, cols[2]);
            let kinds: Vec<&str> = cols[3]
                .split(',')
                .filter_map(|operand| operand.split_whitespace().next())
                .collect();
            assert_eq!(info.fields.len(), kinds.len(), "{}", cols[2]);
            for (field, kind) in info.fields.iter().zip(&kinds) {
                assert!(
                    tsv_kinds(kind).contains(field),
                    "{}: {field:?} for a {kind} operand",
                    cols[2]
                );
            }
            rows += 1;
        }
        assert_eq!(rows, 264);
        let defined = OP_INFO.iter().flatten().flatten().count();
        assert_eq!(defined, 264);
    }

    /// The terminators are the instructions after which the TSV says a block ends.
    #[test]
    fn the_terminators_are_the_block_enders() {
        let mut terminators: Vec<&str> = OP_INFO
            .iter()
            .flatten()
            .flatten()
            .filter(|info| info.terminator)
            .map(|info| info.mnemonic)
            .collect();
        terminators.sort_unstable();
        assert_eq!(
            terminators,
            [
                "br",
                "br_table",
                "break",
                "call.variadic.yieldable",
                "call.yieldable",
                "cond_br",
                "cond_break",
                "fail",
                "return",
                "yield"
            ]
        );
    }
}
