//! A tiny assembler for VM bytecode tests: functions as bytes, modules through `ModuleDef`.

#![allow(dead_code)]

use pactum_iree::vmfb::{
    Container, ExportDef, FeatureBits, FunctionDescriptor, FunctionSignatureDef, ImportDef,
    ModuleDef, ModuleStateDef, RodataDef,
};

/// Ref register bit.
pub const R: u16 = 0x8000;
/// MOVE bit of a ref register.
pub const MV: u16 = 0x4000;

/// One function being assembled.
#[derive(Clone, Debug)]
pub struct Func {
    pub name: String,
    pub cconv: String,
    pub i32s: i16,
    pub refs: i16,
    pub requirements: u32,
    pub blocks: i16,
    pub code: Vec<u8>,
    pub exported: bool,
}

impl Func {
    pub fn new(name: &str, cconv: &str, i32s: i16, refs: i16) -> Func {
        Func {
            name: name.to_owned(),
            cconv: cconv.to_owned(),
            i32s,
            refs,
            requirements: FeatureBits::EXT_F32 | FeatureBits::EXT_F64,
            blocks: 0,
            code: Vec::new(),
            exported: true,
        }
    }

    /// Starts a block; returns its pc.
    pub fn block(&mut self) -> u32 {
        self.blocks += 1;
        self.code.push(0x79);
        self.code.len() as u32 - 1
    }

    pub fn pc(&self) -> u32 {
        self.code.len() as u32
    }

    pub fn op(&mut self, op: u8) -> &mut Func {
        self.code.push(op);
        self
    }

    pub fn f32op(&mut self, op: u8) -> &mut Func {
        self.code.extend([0xE0, op]);
        self
    }

    pub fn f64op(&mut self, op: u8) -> &mut Func {
        self.code.extend([0xE1, op]);
        self
    }

    pub fn r(&mut self, reg: u16) -> &mut Func {
        self.code.extend(reg.to_le_bytes());
        self
    }

    pub fn regs(&mut self, regs: &[u16]) -> &mut Func {
        for &r in regs {
            self.r(r);
        }
        self
    }

    pub fn u16(&mut self, v: u16) -> &mut Func {
        self.r(v)
    }

    pub fn u32(&mut self, v: u32) -> &mut Func {
        self.code.extend(v.to_le_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Func {
        self.code.extend(v.to_le_bytes());
        self
    }

    fn align(&mut self) {
        if self.code.len() % 2 == 1 {
            self.code.push(0);
        }
    }

    /// An aligned register list.
    pub fn list(&mut self, regs: &[u16]) -> &mut Func {
        self.align();
        self.u16(regs.len() as u16);
        self.regs(regs)
    }

    /// A branch target; returns where it was written (for [`patch`](Func::patch)).
    pub fn target(&mut self, pc: u32) -> usize {
        let at = self.code.len();
        self.u32(pc);
        at
    }

    pub fn patch(&mut self, at: usize, pc: u32) {
        self.code[at..at + 4].copy_from_slice(&pc.to_le_bytes());
    }

    pub fn remap(&mut self, pairs: &[(u16, u16)]) -> &mut Func {
        self.align();
        self.u16(pairs.len() as u16);
        for &(a, b) in pairs {
            self.r(a).r(b);
        }
        self
    }

    pub fn str(&mut self, s: &str) -> &mut Func {
        self.u16(s.len() as u16);
        self.code.extend(s.as_bytes());
        self
    }

    // -- Common instructions.

    pub fn const_i32(&mut self, v: i32, d: u16) -> &mut Func {
        self.op(0x0D).u32(v as u32).r(d)
    }

    pub fn const_i64(&mut self, v: i64, d: u16) -> &mut Func {
        self.op(0x0F).u64(v as u64).r(d)
    }

    pub fn const_f32(&mut self, v: f32, d: u16) -> &mut Func {
        self.f32op(0x05).u32(v.to_bits()).r(d)
    }

    pub fn const_f64(&mut self, v: f64, d: u16) -> &mut Func {
        self.f64op(0x05).u64(v.to_bits()).r(d)
    }

    /// A three-register instruction.
    pub fn bin(&mut self, op: u8, a: u16, b: u16, d: u16) -> &mut Func {
        self.op(op).r(a).r(b).r(d)
    }

    pub fn ret(&mut self, regs: &[u16]) -> &mut Func {
        self.op(0x5A).list(regs)
    }

    pub fn br(&mut self, pc: u32) -> usize {
        self.op(0x56);
        let at = self.target(pc);
        self.remap(&[]);
        at
    }

    /// `call` (no `0x80000000` added: pass an import ordinal with the bit set).
    pub fn call(&mut self, callee: u32, args: &[u16], results: &[u16]) -> &mut Func {
        self.op(0x58).u32(callee).list(args).list(results)
    }
}

/// The type table of test modules.
pub const TYPES: [&str; 7] = [
    "i32",
    "i64",
    "f32",
    "f64",
    "!vm.buffer",
    "!vm.list<i32>",
    "!vm.opaque",
];
pub const TY_BUFFER: u32 = 4;
pub const TY_LIST: u32 = 5;
pub const TY_OPAQUE: u32 = 6;

/// A module named `name` holding `funcs`, every exported one exported under its name.
pub fn module(name: &str, funcs: &[Func]) -> ModuleDef {
    let mut def = ModuleDef {
        name: name.to_owned(),
        version: 0,
        requirements: FeatureBits(FeatureBits::EXT_F32 | FeatureBits::EXT_F64),
        types: TYPES.iter().map(|s| s.to_string()).collect(),
        bytecode_version: 17 << 16,
        module_state: Some(ModuleStateDef {
            global_bytes_capacity: 16,
            global_ref_count: 2,
        }),
        ..ModuleDef::default()
    };
    for (ordinal, f) in funcs.iter().enumerate() {
        while def.bytecode_data.len() % 8 != 0 {
            def.bytecode_data.push(0);
        }
        def.function_descriptors.push(FunctionDescriptor {
            bytecode_offset: def.bytecode_data.len() as i32,
            bytecode_length: f.code.len() as i32,
            requirements: FeatureBits(f.requirements),
            reserved: 0,
            block_count: f.blocks,
            i32_register_count: f.i32s,
            ref_register_count: f.refs,
        });
        def.bytecode_data.extend(&f.code);
        def.function_signatures.push(FunctionSignatureDef {
            calling_convention: Some(f.cconv.clone()),
            attrs: Vec::new(),
        });
        if f.exported {
            def.exports.push(ExportDef {
                local_name: f.name.clone(),
                internal_ordinal: ordinal as i32,
            });
        }
    }
    def
}

/// Adds an import.
pub fn import(def: &mut ModuleDef, full_name: &str, cconv: &str, optional: bool) {
    def.imports.push(ImportDef {
        full_name: full_name.to_owned(),
        signature: Some(FunctionSignatureDef {
            calling_convention: Some(cconv.to_owned()),
            attrs: Vec::new(),
        }),
        flags: if optional { 2 } else { 1 },
    });
}

/// Adds an embedded rodata segment.
pub fn rodata(def: &mut ModuleDef, data: &[u8]) {
    def.rodata.push(RodataDef {
        data: data.to_vec(),
        external: false,
        compression: 0,
    });
}

/// The module's bytes (bare FlatBuffer).
pub fn bytes(def: &ModuleDef) -> Vec<u8> {
    def.write(Container::FlatBuffer)
}
