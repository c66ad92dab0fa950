//! IREE modules run by pactum's VM under budgets: the input is a `.vmfb` (mutated by the
//! fuzzer) and, after it, argument bytes. Every export of a module that loads is called with
//! arguments of its calling convention made from those bytes, under an instruction budget, a
//! frame limit and a memory budget: each call returns results or an error, never a panic, a
//! hang or an allocation past the budget.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum_iree::vm::{Context, Limits, Value};

fn arguments(cconv: &str, bytes: &mut impl Iterator<Item = u8>) -> Option<Vec<Value>> {
    let args = cconv.strip_prefix('0')?.split('_').next().unwrap_or("");
    let mut word = || -> u64 {
        let mut value = 0u64;
        for _ in 0..8 {
            value = (value << 8) | u64::from(bytes.next().unwrap_or(0));
        }
        value
    };
    args.chars()
        .filter(|c| *c != 'v')
        .map(|kind| match kind {
            'i' => Some(Value::I32(word() as i32)),
            'I' => Some(Value::I64(word() as i64)),
            'f' => Some(Value::F32(f32::from_bits(word() as u32))),
            'F' => Some(Value::F64(f64::from_bits(word()))),
            'r' => Some(Value::Ref(None)),
            _ => None,
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    // The first two bytes split the input: module bytes, then argument bytes.
    if data.len() < 2 {
        return;
    }
    let split = usize::from(u16::from_le_bytes([data[0], data[1]])).min(data.len() - 2);
    let (module, args) = data[2..].split_at(data.len() - 2 - split);
    let mut context = Context::new(Limits {
        max_frames: 64,
        max_stack_bytes: 1 << 20,
        fuel: Some(200_000),
        memory: Some(64 << 20),
        ..Limits::default()
    });
    // Reference types the module's type table names (HAL objects...) are registered first, so
    // that modules importing a native module still load and verify.
    if let Ok(parsed) = pactum_iree::vmfb::BytecodeModule::parse(module) {
        for ty in parsed.types() {
            if let Some(bare) = ty.strip_prefix('!').filter(|t| !t.starts_with("vm.")) {
                context.register_ref_type(bare);
            }
        }
    }
    let Ok(name) = context.load_bytecode(module.to_vec()) else {
        return;
    };
    let Ok(file) = pactum_iree::vmfb::BytecodeModule::parse(module) else {
        return;
    };
    let mut bytes = args.iter().copied().cycle().take(4096);
    for export in file.exports() {
        let Ok(function) = context.lookup_export(&format!("{name}.{}", export.local_name)) else {
            continue;
        };
        let Some(values) = arguments(function.cconv(), &mut bytes) else {
            continue;
        };
        // Results or an error; the budgets bound the time and memory either way.
        let _ = context.invoke(&function, &values);
    }
});
