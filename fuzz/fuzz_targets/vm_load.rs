//! IREE modules loaded into pactum's VM: any bytes (a `.vmfb` mutated by the fuzzer) either
//! fail to load with an error, or load, verify and link; a loaded module's exports can all be
//! looked up. Never a panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum_iree::vm::{Context, Limits};

fuzz_target!(|data: &[u8]| {
    let mut context = Context::new(Limits {
        memory: Some(64 << 20),
        ..Limits::with_fuel(100_000)
    });
    // Reference types the module's type table names (HAL objects...) are registered first, so
    // that modules importing a native module still load and verify.
    if let Ok(parsed) = pactum_iree::vmfb::BytecodeModule::parse(data) {
        for ty in parsed.types() {
            if let Some(bare) = ty.strip_prefix('!').filter(|t| !t.starts_with("vm.")) {
                context.register_ref_type(bare);
            }
        }
    }
    let Ok(name) = context.load_bytecode(data.to_vec()) else {
        return;
    };
    let Ok(file) = pactum_iree::vmfb::BytecodeModule::parse(data) else {
        panic!("the VM loaded bytes the module reader refuses");
    };
    for export in file.exports() {
        let function = context.lookup_export(&format!("{name}.{}", export.local_name));
        assert!(function.is_ok(), "export {} of a loaded module", export.local_name);
    }
});
