//! The VM: any bytes that verify as a `.vmfb` are loaded into a context (reference types its
//! type table names are registered first), which verifies and links every function; each
//! export is then called with zero arguments of its kinds under a fuel, stack and memory
//! budget. Refusals, traps and budget errors are fine; a panic, a hang or an unbounded
//! allocation is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum_iree::vm::{Context, Limits, Value};
use pactum_iree::vmfb::BytecodeModule;

fuzz_target!(|data: &[u8]| {
    let Ok(module) = BytecodeModule::parse(data) else {
        return;
    };
    let name = module.name().to_owned();
    let types: Vec<String> = module.types().map(str::to_owned).collect();
    let exports: Vec<String> = module.exports().map(|e| e.local_name.to_owned()).collect();
    let limits = Limits {
        max_frames: 64,
        max_stack_bytes: 1 << 20,
        fuel: Some(20_000),
        memory: Some(16 << 20),
    };
    let mut context = Context::new(limits);
    for ty in &types {
        if let Some(bare) = ty.strip_prefix('!').filter(|t| !t.starts_with("vm.")) {
            context.register_ref_type(bare);
        }
    }
    if context.load_bytecode(data).is_err() {
        return;
    }
    for export in exports {
        let Ok(function) = context.lookup_export(&format!("{name}.{export}")) else {
            continue;
        };
        let args: Vec<Value> = function
            .cconv()
            .trim_start_matches('0')
            .split('_')
            .next()
            .unwrap_or("")
            .chars()
            .filter_map(|c| match c {
                'i' => Some(Value::I32(0)),
                'I' => Some(Value::I64(0)),
                'f' => Some(Value::F32(0.0)),
                'F' => Some(Value::F64(0.0)),
                'r' => Some(Value::Ref(None)),
                _ => None,
            })
            .collect();
        if let Err(error) = context.invoke(&function, &args) {
            assert!(!error.to_string().is_empty());
        }
    }
});
