//! IREE bytecode modules: any bytes (as a bare file, or wrapped in a ZIP local header like the
//! default container) either fail with an error whose offset lies inside the file, or verify;
//! a verified module is read end to end (every view, every rodata segment, every function's
//! bytecode), copied into a `ModuleDef`, written in both containers, and read back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum_iree::vmfb::{BytecodeModule, Container, ModuleDef};

fn exercise(bytes: &[u8]) {
    let module = match BytecodeModule::parse(bytes) {
        Ok(module) => module,
        Err(error) => {
            if let Some(offset) = error.offset {
                assert!(
                    offset <= bytes.len() as u64 + 4,
                    "{error} outside {} bytes",
                    bytes.len()
                );
            }
            assert!(!error.to_string().is_empty());
            return;
        }
    };
    let _ = (
        module.name(),
        module.version(),
        module.requirements().names(),
    );
    let _ = module.attrs().count() + module.types().count() + module.dependencies().count();
    for import in module.imports() {
        if let Some(signature) = import.signature {
            let _ = (signature.cconv(), signature.abi());
        }
    }
    for export in module.exports() {
        if let Some(signature) = module.export_signature(&export) {
            let _ = (signature.cconv(), signature.abi());
        }
    }
    for (i, _) in module.rodata_segments().enumerate() {
        assert!(
            module.rodata(i).is_some(),
            "a verified segment {i} is readable"
        );
    }
    for (i, _) in module.function_descriptors().enumerate() {
        assert!(
            module.function_bytecode(i).is_some(),
            "verified bytecode {i} is in range"
        );
    }
    if let Some(db) = module.debug_database() {
        let _ = (db.locations(), db.functions());
    }
    let def = ModuleDef::from_module(&module).expect("a verified module copies");
    for container in [Container::Zip, Container::FlatBuffer] {
        let written = def.write(container);
        let again = BytecodeModule::parse(&written).expect("what pactum writes verifies");
        assert_eq!(ModuleDef::from_module(&again).expect("copies"), def);
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    // The same bytes behind a 64-byte ZIP local header, as the default container has them.
    let mut zipped = Vec::with_capacity(64 + data.len());
    zipped.extend_from_slice(b"PK\x03\x04");
    zipped.resize(26, 0);
    zipped.extend_from_slice(&9u16.to_le_bytes());
    zipped.extend_from_slice(&25u16.to_le_bytes());
    zipped.extend_from_slice(b"module.fb");
    zipped.resize(64, 0);
    zipped.extend_from_slice(data);
    exercise(&zipped);
});
