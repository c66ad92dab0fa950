//! `pactum inspect FILE.vmfb`: an IREE bytecode module's metadata, with decoded signatures.

use std::path::Path;

use anyhow::{Context, Result};
use pactum_iree::vmfb::inspect::{cconv_types, report};
use pactum_iree::vmfb::{BytecodeModule, RodataStorage, VmfbFile};
use serde_json::Value;

/// Whether `bytes` (the start of a file) look like a `.vmfb`: a ZIP archive or a size-prefixed
/// FlatBuffer with identifier `IREE`.
pub fn looks_like_vmfb(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04") || bytes.get(8..12) == Some(b"IREE")
}

/// Prints the module at `path`.
pub fn run(path: &Path, as_json: bool) -> Result<()> {
    let file = VmfbFile::open(path)?;
    let module = file
        .module()
        .with_context(|| format!("{}: not a valid IREE bytecode module", path.display()))?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report(&module))?);
    } else {
        print_text(path, &module);
    }
    Ok(())
}

fn signature_line(name: &str, cconv: Option<&str>) -> String {
    let types = cconv_types(cconv);
    let list = |key: &str| {
        types[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    match cconv {
        Some(_) if !types.is_null() => {
            format!("{name}({}) -> ({})", list("arguments"), list("results"))
        }
        Some(cconv) => format!("{name}  (calling convention {cconv:?} not understood)"),
        None => format!("{name}  (no calling convention)"),
    }
}

fn print_text(path: &Path, module: &BytecodeModule<'_>) {
    let layout = module.layout();
    println!(
        "{}: IREE bytecode module @{} version {} ({} container, FlatBuffer {} bytes at {:#x})",
        path.display(),
        module.name(),
        module.version(),
        layout.container.name(),
        // As IREE counts it: the buffer after its 4-byte size prefix.
        layout.flatbuffer.len() - 4,
        layout.flatbuffer.start + 4
    );
    let version = module.bytecode_version();
    println!(
        "bytecode version {}.{}; requirements: {}",
        version >> 16,
        version & 0xFFFF,
        module.requirements()
    );
    if module.attrs().len() > 0 {
        println!("\nAttributes:");
        for attr in module.attrs() {
            println!("  {} = {}", attr.key, attr.value);
        }
    }
    println!("\nRequired types:");
    for (i, name) in module.types().enumerate() {
        println!("  [{i:3}] {name}");
    }
    if module.dependencies().len() > 0 {
        println!("\nModule dependencies:");
        for d in module.dependencies() {
            let kind = if d.is_optional() {
                "optional"
            } else {
                "required"
            };
            println!("  {}, version >= {}, {kind}", d.name, d.minimum_version);
        }
    }
    if module.imports().len() > 0 {
        println!("\nImported functions:");
        for (i, import) in module.imports().enumerate() {
            let optional = if import.is_optional() {
                "  (optional)"
            } else {
                ""
            };
            let cconv = import.signature.and_then(|s| s.calling_convention);
            println!(
                "  [{i:3}] {}{optional}",
                signature_line(import.full_name, cconv)
            );
        }
    }
    println!("\nExported functions:");
    for (i, export) in module.exports().enumerate() {
        let signature = module.export_signature(&export);
        let cconv = signature.and_then(|s| s.calling_convention);
        println!("  [{i:3}] {}", signature_line(export.local_name, cconv));
        let Some(signature) = signature else { continue };
        for attr in signature.attrs() {
            println!("        {}: {}", attr.key, attr.value);
        }
        if let Ok(abi) = signature.abi()
            && abi.iree_abi.is_some()
            && let Some(Ok(model)) = abi.signature()
        {
            println!("        signature: {model}");
        }
    }
    if let Some(state) = module.module_state() {
        println!(
            "\nModule state: {} bytes, {} refs",
            state.global_bytes_capacity, state.global_ref_count
        );
    }
    println!(
        "\nBytecode: {} bytes in {} functions",
        module.bytecode_data().len(),
        module.function_descriptors().len()
    );
    let mut external = 0u64;
    for (i, segment) in module.rodata_segments().enumerate() {
        match segment.storage {
            RodataStorage::Embedded(bytes) => {
                println!("  .rodata[{i:3}] embedded {:10} bytes", bytes.len())
            }
            RodataStorage::External { offset, length } => {
                external += length;
                println!(
                    "  .rodata[{i:3}] external {length:10} bytes (offset {offset} from the rodata base)"
                )
            }
        }
    }
    if external > 0 {
        println!("External .rodata: {external} bytes (not read)");
    }
    match module.debug_database() {
        Some(db) => println!(
            "Debug database: {} locations, {} source maps",
            db.locations().len(),
            db.functions().len()
        ),
        None => println!("Debug database: none (source maps stripped)"),
    }
}
