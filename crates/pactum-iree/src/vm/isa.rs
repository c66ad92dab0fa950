//! The instruction set of bytecode 17.0: every opcode's mnemonic and operand fields, in
//! encoding order (facts sheet §4 and §10).

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
}

use Field as F;

/// The description of an opcode, when it exists.
pub fn op_info(set: OpSet, opcode: u8) -> Option<&'static OpInfo> {
    let table: &[Option<OpInfo>] = match set {
        OpSet::Core => &CORE,
        OpSet::F32 => &EXT_F32,
        OpSet::F64 => &EXT_F64,
    };
    table.get(usize::from(opcode))?.as_ref()
}

/// Whether the core opcode ends a block.
pub fn is_terminator(set: OpSet, opcode: u8) -> bool {
    set == OpSet::Core
        && matches!(
            opcode,
            0x56 | 0x57 | 0x5A | 0x5B | 0x5D | 0x60 | 0x61 | 0x83 | 0x87 | 0x88
        )
}

// Generated from docs/iree_vm_opcodes.tsv (one row per instruction); the test at the end of
// this file checks the table against the TSV.

/// The core instruction set, by opcode.
pub static CORE: [Option<OpInfo>; 0x89] = [
    Some(OpInfo {
        mnemonic: "global.load.i32",
        fields: &[F::GlobalOffset4, F::RegI32],
    }), // 0x00
    Some(OpInfo {
        mnemonic: "global.store.i32",
        fields: &[F::GlobalOffset4, F::RegI32],
    }), // 0x01
    Some(OpInfo {
        mnemonic: "global.load.indirect.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x02
    Some(OpInfo {
        mnemonic: "global.store.indirect.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x03
    Some(OpInfo {
        mnemonic: "global.load.i64",
        fields: &[F::GlobalOffset8, F::RegI64],
    }), // 0x04
    Some(OpInfo {
        mnemonic: "global.store.i64",
        fields: &[F::GlobalOffset8, F::RegI64],
    }), // 0x05
    Some(OpInfo {
        mnemonic: "global.load.indirect.i64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x06
    Some(OpInfo {
        mnemonic: "global.store.indirect.i64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x07
    Some(OpInfo {
        mnemonic: "global.load.ref",
        fields: &[F::GlobalRef, F::Type, F::RegRefMove],
    }), // 0x08
    Some(OpInfo {
        mnemonic: "global.store.ref",
        fields: &[F::GlobalRef, F::Type, F::RegRefMove],
    }), // 0x09
    Some(OpInfo {
        mnemonic: "global.load.indirect.ref",
        fields: &[F::RegI32, F::Type, F::RegRefMove],
    }), // 0x0a
    Some(OpInfo {
        mnemonic: "global.store.indirect.ref",
        fields: &[F::RegI32, F::Type, F::RegRefMove],
    }), // 0x0b
    Some(OpInfo {
        mnemonic: "const.i32.zero",
        fields: &[F::RegI32],
    }), // 0x0c
    Some(OpInfo {
        mnemonic: "const.i32",
        fields: &[F::ConstI32, F::RegI32],
    }), // 0x0d
    Some(OpInfo {
        mnemonic: "const.i64.zero",
        fields: &[F::RegI64],
    }), // 0x0e
    Some(OpInfo {
        mnemonic: "const.i64",
        fields: &[F::ConstI64, F::RegI64],
    }), // 0x0f
    Some(OpInfo {
        mnemonic: "const.ref.zero",
        fields: &[F::RegRefMove],
    }), // 0x10
    Some(OpInfo {
        mnemonic: "const.ref.rodata",
        fields: &[F::Rodata, F::RegRefMove],
    }), // 0x11
    Some(OpInfo {
        mnemonic: "list.alloc",
        fields: &[F::Type, F::RegI32, F::RegRefMove],
    }), // 0x12
    Some(OpInfo {
        mnemonic: "list.reserve",
        fields: &[F::RegRef, F::RegI32],
    }), // 0x13
    Some(OpInfo {
        mnemonic: "list.size",
        fields: &[F::RegRef, F::RegI32],
    }), // 0x14
    Some(OpInfo {
        mnemonic: "list.resize",
        fields: &[F::RegRef, F::RegI32],
    }), // 0x15
    Some(OpInfo {
        mnemonic: "list.get.i32",
        fields: &[F::RegRef, F::RegI32, F::RegI32],
    }), // 0x16
    Some(OpInfo {
        mnemonic: "list.set.i32",
        fields: &[F::RegRef, F::RegI32, F::RegI32],
    }), // 0x17
    Some(OpInfo {
        mnemonic: "list.get.i64",
        fields: &[F::RegRef, F::RegI32, F::RegI64],
    }), // 0x18
    Some(OpInfo {
        mnemonic: "list.set.i64",
        fields: &[F::RegRef, F::RegI32, F::RegI64],
    }), // 0x19
    Some(OpInfo {
        mnemonic: "list.get.ref",
        fields: &[F::RegRef, F::RegI32, F::Type, F::RegRefMove],
    }), // 0x1a
    Some(OpInfo {
        mnemonic: "list.set.ref",
        fields: &[F::RegRef, F::RegI32, F::RegRefMove],
    }), // 0x1b
    Some(OpInfo {
        mnemonic: "select.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32, F::RegI32],
    }), // 0x1c
    Some(OpInfo {
        mnemonic: "select.i64",
        fields: &[F::RegI32, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x1d
    Some(OpInfo {
        mnemonic: "select.ref",
        fields: &[
            F::RegI32,
            F::Type,
            F::RegRefMove,
            F::RegRefMove,
            F::RegRefMove,
        ],
    }), // 0x1e
    Some(OpInfo {
        mnemonic: "switch.i32",
        fields: &[F::RegI32, F::RegI32, F::ListI32, F::RegI32],
    }), // 0x1f
    Some(OpInfo {
        mnemonic: "switch.i64",
        fields: &[F::RegI32, F::RegI64, F::ListI64, F::RegI64],
    }), // 0x20
    Some(OpInfo {
        mnemonic: "switch.ref",
        fields: &[
            F::RegI32,
            F::Type,
            F::RegRefMove,
            F::ListRefMove,
            F::RegRefMove,
        ],
    }), // 0x21
    Some(OpInfo {
        mnemonic: "add.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x22
    Some(OpInfo {
        mnemonic: "sub.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x23
    Some(OpInfo {
        mnemonic: "mul.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x24
    Some(OpInfo {
        mnemonic: "div.i32.s",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x25
    Some(OpInfo {
        mnemonic: "div.i32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x26
    Some(OpInfo {
        mnemonic: "rem.i32.s",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x27
    Some(OpInfo {
        mnemonic: "rem.i32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x28
    Some(OpInfo {
        mnemonic: "fma.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32, F::RegI32],
    }), // 0x29
    Some(OpInfo {
        mnemonic: "add.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2a
    Some(OpInfo {
        mnemonic: "sub.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2b
    Some(OpInfo {
        mnemonic: "mul.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2c
    Some(OpInfo {
        mnemonic: "div.i64.s",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2d
    Some(OpInfo {
        mnemonic: "div.i64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2e
    Some(OpInfo {
        mnemonic: "rem.i64.s",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2f
    Some(OpInfo {
        mnemonic: "rem.i64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x30
    Some(OpInfo {
        mnemonic: "fma.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x31
    Some(OpInfo {
        mnemonic: "not.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x32
    Some(OpInfo {
        mnemonic: "and.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x33
    Some(OpInfo {
        mnemonic: "or.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x34
    Some(OpInfo {
        mnemonic: "xor.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x35
    Some(OpInfo {
        mnemonic: "not.i64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x36
    Some(OpInfo {
        mnemonic: "and.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x37
    Some(OpInfo {
        mnemonic: "or.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x38
    Some(OpInfo {
        mnemonic: "xor.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x39
    Some(OpInfo {
        mnemonic: "shl.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x3a
    Some(OpInfo {
        mnemonic: "shr.i32.s",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x3b
    Some(OpInfo {
        mnemonic: "shr.i32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x3c
    Some(OpInfo {
        mnemonic: "shl.i64",
        fields: &[F::RegI64, F::RegI32, F::RegI64],
    }), // 0x3d
    Some(OpInfo {
        mnemonic: "shr.i64.s",
        fields: &[F::RegI64, F::RegI32, F::RegI64],
    }), // 0x3e
    Some(OpInfo {
        mnemonic: "shr.i64.u",
        fields: &[F::RegI64, F::RegI32, F::RegI64],
    }), // 0x3f
    Some(OpInfo {
        mnemonic: "trunc.i32.i8",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x40
    Some(OpInfo {
        mnemonic: "trunc.i32.i16",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x41
    Some(OpInfo {
        mnemonic: "trunc.i64.i32",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x42
    Some(OpInfo {
        mnemonic: "ext.i8.i32.s",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x43
    Some(OpInfo {
        mnemonic: "ext.i8.i32.u",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x44
    Some(OpInfo {
        mnemonic: "ext.i16.i32.s",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x45
    Some(OpInfo {
        mnemonic: "ext.i16.i32.u",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x46
    Some(OpInfo {
        mnemonic: "ext.i32.i64.s",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x47
    Some(OpInfo {
        mnemonic: "ext.i32.i64.u",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x48
    Some(OpInfo {
        mnemonic: "cmp.eq.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x49
    Some(OpInfo {
        mnemonic: "cmp.ne.i32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x4a
    Some(OpInfo {
        mnemonic: "cmp.lt.i32.s",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x4b
    Some(OpInfo {
        mnemonic: "cmp.lt.i32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x4c
    Some(OpInfo {
        mnemonic: "cmp.nz.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x4d
    Some(OpInfo {
        mnemonic: "cmp.eq.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x4e
    Some(OpInfo {
        mnemonic: "cmp.ne.i64",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x4f
    Some(OpInfo {
        mnemonic: "cmp.lt.i64.s",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x50
    Some(OpInfo {
        mnemonic: "cmp.lt.i64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x51
    Some(OpInfo {
        mnemonic: "cmp.nz.i64",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x52
    Some(OpInfo {
        mnemonic: "cmp.eq.ref",
        fields: &[F::RegRef, F::RegRef, F::RegI32],
    }), // 0x53
    Some(OpInfo {
        mnemonic: "cmp.ne.ref",
        fields: &[F::RegRef, F::RegRef, F::RegI32],
    }), // 0x54
    Some(OpInfo {
        mnemonic: "cmp.nz.ref",
        fields: &[F::RegRef, F::RegI32],
    }), // 0x55
    Some(OpInfo {
        mnemonic: "br",
        fields: &[F::Target, F::Remap],
    }), // 0x56
    Some(OpInfo {
        mnemonic: "cond_br",
        fields: &[F::RegI32, F::Target, F::Remap, F::Target, F::Remap],
    }), // 0x57
    Some(OpInfo {
        mnemonic: "call",
        fields: &[F::Func, F::ListAny, F::ListAny],
    }), // 0x58
    Some(OpInfo {
        mnemonic: "call.variadic",
        fields: &[F::Func, F::SegList, F::ListAny, F::ListAny],
    }), // 0x59
    Some(OpInfo {
        mnemonic: "return",
        fields: &[F::ListAny],
    }), // 0x5a
    Some(OpInfo {
        mnemonic: "fail",
        fields: &[F::RegI32, F::Str],
    }), // 0x5b
    Some(OpInfo {
        mnemonic: "import.resolved",
        fields: &[F::Import, F::RegI32],
    }), // 0x5c
    Some(OpInfo {
        mnemonic: "yield",
        fields: &[F::Target, F::Remap],
    }), // 0x5d
    Some(OpInfo {
        mnemonic: "trace",
        fields: &[F::Str, F::ListAny],
    }), // 0x5e
    Some(OpInfo {
        mnemonic: "print",
        fields: &[F::Str, F::ListAny],
    }), // 0x5f
    Some(OpInfo {
        mnemonic: "cond_break",
        fields: &[F::RegI32, F::Target, F::Remap],
    }), // 0x60
    Some(OpInfo {
        mnemonic: "break",
        fields: &[F::Target, F::Remap],
    }), // 0x61
    Some(OpInfo {
        mnemonic: "buffer.load.i8.u",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x62
    Some(OpInfo {
        mnemonic: "buffer.load.i8.s",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x63
    Some(OpInfo {
        mnemonic: "buffer.load.i16.u",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x64
    Some(OpInfo {
        mnemonic: "buffer.load.i16.s",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x65
    Some(OpInfo {
        mnemonic: "buffer.load.i32",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x66
    Some(OpInfo {
        mnemonic: "buffer.load.i64",
        fields: &[F::RegRef, F::RegI64, F::RegI64],
    }), // 0x67
    Some(OpInfo {
        mnemonic: "buffer.store.i8",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x68
    Some(OpInfo {
        mnemonic: "buffer.store.i16",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x69
    Some(OpInfo {
        mnemonic: "buffer.store.i32",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x6a
    Some(OpInfo {
        mnemonic: "buffer.store.i64",
        fields: &[F::RegRef, F::RegI64, F::RegI64],
    }), // 0x6b
    Some(OpInfo {
        mnemonic: "buffer.alloc",
        fields: &[F::RegI64, F::RegI32, F::RegRefMove],
    }), // 0x6c
    Some(OpInfo {
        mnemonic: "buffer.clone",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI32, F::RegRefMove],
    }), // 0x6d
    Some(OpInfo {
        mnemonic: "buffer.length",
        fields: &[F::RegRef, F::RegI64],
    }), // 0x6e
    Some(OpInfo {
        mnemonic: "buffer.copy",
        fields: &[F::RegRef, F::RegI64, F::RegRef, F::RegI64, F::RegI64],
    }), // 0x6f
    Some(OpInfo {
        mnemonic: "buffer.compare",
        fields: &[
            F::RegRef,
            F::RegI64,
            F::RegRef,
            F::RegI64,
            F::RegI64,
            F::RegI32,
        ],
    }), // 0x70
    Some(OpInfo {
        mnemonic: "buffer.fill.i8",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI32],
    }), // 0x71
    Some(OpInfo {
        mnemonic: "buffer.fill.i16",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI32],
    }), // 0x72
    Some(OpInfo {
        mnemonic: "buffer.fill.i32",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI32],
    }), // 0x73
    Some(OpInfo {
        mnemonic: "buffer.fill.i64",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x74
    Some(OpInfo {
        mnemonic: "ctlz.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x75
    Some(OpInfo {
        mnemonic: "ctlz.i64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x76
    Some(OpInfo {
        mnemonic: "abs.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x77
    Some(OpInfo {
        mnemonic: "abs.i64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x78
    None, // 0x79
    Some(OpInfo {
        mnemonic: "min.i32.s",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x7a
    Some(OpInfo {
        mnemonic: "min.i32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x7b
    Some(OpInfo {
        mnemonic: "max.i32.s",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x7c
    Some(OpInfo {
        mnemonic: "max.i32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x7d
    Some(OpInfo {
        mnemonic: "min.i64.s",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x7e
    Some(OpInfo {
        mnemonic: "min.i64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x7f
    Some(OpInfo {
        mnemonic: "max.i64.s",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x80
    Some(OpInfo {
        mnemonic: "max.i64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x81
    Some(OpInfo {
        mnemonic: "cast.any.ref",
        fields: &[F::RegRefMove, F::Type, F::RegRefMove],
    }), // 0x82
    Some(OpInfo {
        mnemonic: "br_table",
        fields: &[F::RegI32, F::Target, F::Remap, F::ConstU16, F::Cases],
    }), // 0x83
    Some(OpInfo {
        mnemonic: "buffer.hash",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x84
    Some(OpInfo {
        mnemonic: "discard.refs",
        fields: &[F::ListAny],
    }), // 0x85
    Some(OpInfo {
        mnemonic: "assign.ref",
        fields: &[F::RegRefMove, F::RegRefMove],
    }), // 0x86
    Some(OpInfo {
        mnemonic: "call.yieldable",
        fields: &[F::Func, F::ListAny, F::Target, F::ListAny],
    }), // 0x87
    Some(OpInfo {
        mnemonic: "call.variadic.yieldable",
        fields: &[F::Func, F::SegList, F::ListAny, F::Target, F::ListAny],
    }), // 0x88
];

/// The f32 instruction set, by opcode.
pub static EXT_F32: [Option<OpInfo>; 0x3e] = [
    Some(OpInfo {
        mnemonic: "global.load.f32",
        fields: &[F::GlobalOffset4, F::RegI32],
    }), // 0x00
    Some(OpInfo {
        mnemonic: "global.store.f32",
        fields: &[F::GlobalOffset4, F::RegI32],
    }), // 0x01
    Some(OpInfo {
        mnemonic: "global.load.indirect.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x02
    Some(OpInfo {
        mnemonic: "global.store.indirect.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x03
    Some(OpInfo {
        mnemonic: "const.f32.zero",
        fields: &[F::RegI32],
    }), // 0x04
    Some(OpInfo {
        mnemonic: "const.f32",
        fields: &[F::ConstI32, F::RegI32],
    }), // 0x05
    Some(OpInfo {
        mnemonic: "list.get.f32",
        fields: &[F::RegRef, F::RegI32, F::RegI32],
    }), // 0x06
    Some(OpInfo {
        mnemonic: "list.set.f32",
        fields: &[F::RegRef, F::RegI32, F::RegI32],
    }), // 0x07
    Some(OpInfo {
        mnemonic: "select.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32, F::RegI32],
    }), // 0x08
    Some(OpInfo {
        mnemonic: "switch.f32",
        fields: &[F::RegI32, F::RegI32, F::ListI32, F::RegI32],
    }), // 0x09
    Some(OpInfo {
        mnemonic: "add.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x0a
    Some(OpInfo {
        mnemonic: "sub.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x0b
    Some(OpInfo {
        mnemonic: "mul.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x0c
    Some(OpInfo {
        mnemonic: "div.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x0d
    Some(OpInfo {
        mnemonic: "rem.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x0e
    Some(OpInfo {
        mnemonic: "fma.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32, F::RegI32],
    }), // 0x0f
    Some(OpInfo {
        mnemonic: "abs.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x10
    Some(OpInfo {
        mnemonic: "neg.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x11
    Some(OpInfo {
        mnemonic: "ceil.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x12
    Some(OpInfo {
        mnemonic: "floor.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x13
    Some(OpInfo {
        mnemonic: "cast.si32.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x14
    Some(OpInfo {
        mnemonic: "cast.ui32.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x15
    Some(OpInfo {
        mnemonic: "cast.f32.si32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x16
    Some(OpInfo {
        mnemonic: "cast.f32.ui32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x17
    Some(OpInfo {
        mnemonic: "bitcast.i32.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x18
    Some(OpInfo {
        mnemonic: "bitcast.f32.i32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x19
    Some(OpInfo {
        mnemonic: "atan.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x1a
    Some(OpInfo {
        mnemonic: "atan2.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x1b
    Some(OpInfo {
        mnemonic: "cos.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x1c
    Some(OpInfo {
        mnemonic: "sin.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x1d
    Some(OpInfo {
        mnemonic: "exp.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x1e
    Some(OpInfo {
        mnemonic: "exp2.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x1f
    Some(OpInfo {
        mnemonic: "expm1.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x20
    Some(OpInfo {
        mnemonic: "log.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x21
    Some(OpInfo {
        mnemonic: "log10.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x22
    Some(OpInfo {
        mnemonic: "log1p.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x23
    Some(OpInfo {
        mnemonic: "log2.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x24
    Some(OpInfo {
        mnemonic: "pow.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x25
    Some(OpInfo {
        mnemonic: "rsqrt.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x26
    Some(OpInfo {
        mnemonic: "sqrt.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x27
    Some(OpInfo {
        mnemonic: "tanh.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x28
    Some(OpInfo {
        mnemonic: "erf.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x29
    Some(OpInfo {
        mnemonic: "cmp.eq.f32.o",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x2a
    Some(OpInfo {
        mnemonic: "cmp.eq.f32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x2b
    Some(OpInfo {
        mnemonic: "cmp.ne.f32.o",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x2c
    Some(OpInfo {
        mnemonic: "cmp.ne.f32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x2d
    Some(OpInfo {
        mnemonic: "cmp.lt.f32.o",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x2e
    Some(OpInfo {
        mnemonic: "cmp.lt.f32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x2f
    Some(OpInfo {
        mnemonic: "cmp.lte.f32.o",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x30
    Some(OpInfo {
        mnemonic: "cmp.lte.f32.u",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x31
    Some(OpInfo {
        mnemonic: "cmp.nan.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x32
    Some(OpInfo {
        mnemonic: "buffer.load.f32",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x33
    Some(OpInfo {
        mnemonic: "buffer.store.f32",
        fields: &[F::RegRef, F::RegI64, F::RegI32],
    }), // 0x34
    Some(OpInfo {
        mnemonic: "buffer.fill.f32",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI32],
    }), // 0x35
    Some(OpInfo {
        mnemonic: "round.f32",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x36
    Some(OpInfo {
        mnemonic: "min.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x37
    Some(OpInfo {
        mnemonic: "max.f32",
        fields: &[F::RegI32, F::RegI32, F::RegI32],
    }), // 0x38
    Some(OpInfo {
        mnemonic: "round.f32.even",
        fields: &[F::RegI32, F::RegI32],
    }), // 0x39
    Some(OpInfo {
        mnemonic: "cast.f32.si64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x3a
    Some(OpInfo {
        mnemonic: "cast.f32.ui64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x3b
    Some(OpInfo {
        mnemonic: "cast.si64.f32",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x3c
    Some(OpInfo {
        mnemonic: "cast.ui64.f32",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x3d
];

/// The f64 instruction set, by opcode.
pub static EXT_F64: [Option<OpInfo>; 0x40] = [
    Some(OpInfo {
        mnemonic: "global.load.f64",
        fields: &[F::GlobalOffset8, F::RegI64],
    }), // 0x00
    Some(OpInfo {
        mnemonic: "global.store.f64",
        fields: &[F::GlobalOffset8, F::RegI64],
    }), // 0x01
    Some(OpInfo {
        mnemonic: "global.load.indirect.f64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x02
    Some(OpInfo {
        mnemonic: "global.store.indirect.f64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x03
    Some(OpInfo {
        mnemonic: "const.f64.zero",
        fields: &[F::RegI64],
    }), // 0x04
    Some(OpInfo {
        mnemonic: "const.f64",
        fields: &[F::ConstI64, F::RegI64],
    }), // 0x05
    Some(OpInfo {
        mnemonic: "list.get.f64",
        fields: &[F::RegRef, F::RegI32, F::RegI64],
    }), // 0x06
    Some(OpInfo {
        mnemonic: "list.set.f64",
        fields: &[F::RegRef, F::RegI32, F::RegI64],
    }), // 0x07
    Some(OpInfo {
        mnemonic: "select.f64",
        fields: &[F::RegI32, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x08
    Some(OpInfo {
        mnemonic: "switch.f64",
        fields: &[F::RegI32, F::RegI64, F::ListI64, F::RegI64],
    }), // 0x09
    Some(OpInfo {
        mnemonic: "add.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x0a
    Some(OpInfo {
        mnemonic: "sub.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x0b
    Some(OpInfo {
        mnemonic: "mul.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x0c
    Some(OpInfo {
        mnemonic: "div.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x0d
    Some(OpInfo {
        mnemonic: "rem.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x0e
    Some(OpInfo {
        mnemonic: "fma.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x0f
    Some(OpInfo {
        mnemonic: "abs.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x10
    Some(OpInfo {
        mnemonic: "neg.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x11
    Some(OpInfo {
        mnemonic: "ceil.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x12
    Some(OpInfo {
        mnemonic: "floor.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x13
    Some(OpInfo {
        mnemonic: "trunc.f64.f32",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x14
    Some(OpInfo {
        mnemonic: "ext.f32.f64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x15
    Some(OpInfo {
        mnemonic: "cast.si32.f64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x16
    Some(OpInfo {
        mnemonic: "cast.ui32.f64",
        fields: &[F::RegI32, F::RegI64],
    }), // 0x17
    Some(OpInfo {
        mnemonic: "cast.f64.si32",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x18
    Some(OpInfo {
        mnemonic: "cast.f64.ui32",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x19
    Some(OpInfo {
        mnemonic: "cast.si64.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x1a
    Some(OpInfo {
        mnemonic: "cast.ui64.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x1b
    Some(OpInfo {
        mnemonic: "cast.f64.si64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x1c
    Some(OpInfo {
        mnemonic: "cast.f64.ui64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x1d
    Some(OpInfo {
        mnemonic: "bitcast.i64.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x1e
    Some(OpInfo {
        mnemonic: "bitcast.f64.i64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x1f
    Some(OpInfo {
        mnemonic: "atan.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x20
    Some(OpInfo {
        mnemonic: "atan2.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x21
    Some(OpInfo {
        mnemonic: "cos.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x22
    Some(OpInfo {
        mnemonic: "sin.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x23
    Some(OpInfo {
        mnemonic: "exp.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x24
    Some(OpInfo {
        mnemonic: "exp2.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x25
    Some(OpInfo {
        mnemonic: "expm1.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x26
    Some(OpInfo {
        mnemonic: "log.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x27
    Some(OpInfo {
        mnemonic: "log10.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x28
    Some(OpInfo {
        mnemonic: "log1p.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x29
    Some(OpInfo {
        mnemonic: "log2.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x2a
    Some(OpInfo {
        mnemonic: "pow.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x2b
    Some(OpInfo {
        mnemonic: "rsqrt.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x2c
    Some(OpInfo {
        mnemonic: "sqrt.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x2d
    Some(OpInfo {
        mnemonic: "tanh.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x2e
    Some(OpInfo {
        mnemonic: "erf.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x2f
    Some(OpInfo {
        mnemonic: "cmp.eq.f64.o",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x30
    Some(OpInfo {
        mnemonic: "cmp.eq.f64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x31
    Some(OpInfo {
        mnemonic: "cmp.ne.f64.o",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x32
    Some(OpInfo {
        mnemonic: "cmp.ne.f64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x33
    Some(OpInfo {
        mnemonic: "cmp.lt.f64.o",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x34
    Some(OpInfo {
        mnemonic: "cmp.lt.f64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x35
    Some(OpInfo {
        mnemonic: "cmp.lte.f64.o",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x36
    Some(OpInfo {
        mnemonic: "cmp.lte.f64.u",
        fields: &[F::RegI64, F::RegI64, F::RegI32],
    }), // 0x37
    Some(OpInfo {
        mnemonic: "cmp.nan.f64",
        fields: &[F::RegI64, F::RegI32],
    }), // 0x38
    Some(OpInfo {
        mnemonic: "buffer.load.f64",
        fields: &[F::RegRef, F::RegI64, F::RegI64],
    }), // 0x39
    Some(OpInfo {
        mnemonic: "buffer.store.f64",
        fields: &[F::RegRef, F::RegI64, F::RegI64],
    }), // 0x3a
    Some(OpInfo {
        mnemonic: "buffer.fill.f64",
        fields: &[F::RegRef, F::RegI64, F::RegI64, F::RegI64],
    }), // 0x3b
    Some(OpInfo {
        mnemonic: "round.f64",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x3c
    Some(OpInfo {
        mnemonic: "min.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x3d
    Some(OpInfo {
        mnemonic: "max.f64",
        fields: &[F::RegI64, F::RegI64, F::RegI64],
    }), // 0x3e
    Some(OpInfo {
        mnemonic: "round.f64.even",
        fields: &[F::RegI64, F::RegI64],
    }), // 0x3f
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the facts sheet's TSV is in the table, with the same fields.
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
            let count = cols[3].split(',').filter(|s| !s.trim().is_empty()).count();
            assert_eq!(info.fields.len(), count, "{}", cols[2]);
            rows += 1;
        }
        assert_eq!(rows, 262);
        let defined = [&CORE[..], &EXT_F32[..], &EXT_F64[..]]
            .iter()
            .map(|t| t.iter().flatten().count())
            .sum::<usize>();
        assert_eq!(defined, 262);
    }
}
