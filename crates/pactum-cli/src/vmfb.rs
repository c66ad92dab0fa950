//! `pactum inspect FILE.vmfb`: an IREE bytecode module's metadata, with decoded signatures.

use std::path::Path;

use anyhow::{Context, Result};
use pactum_iree::signature::cconv::{CallingConvention, CconvItem};
use pactum_iree::vmfb::{BytecodeModule, FunctionSignature, RodataStorage, VmfbFile};
use serde_json::{Map, Value, json};

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

fn cconv_types(cconv: Option<&str>) -> Value {
    let Some(Ok(cconv)) = cconv.map(CallingConvention::parse) else {
        return Value::Null;
    };
    let names = |items: &[CconvItem]| items.iter().map(item_name).collect::<Vec<_>>();
    json!({"arguments": names(cconv.args()), "results": names(cconv.results())})
}

/// How IREE prints a calling-convention item.
fn item_name(item: &CconvItem) -> String {
    match item {
        CconvItem::I32 => "i32".into(),
        CconvItem::I64 => "i64".into(),
        CconvItem::F32 => "f32".into(),
        CconvItem::F64 => "f64".into(),
        CconvItem::Ref => "!vm.ref<?>".into(),
        CconvItem::Variadic(items) => {
            format!(
                "tuple<{}>...",
                items.iter().map(item_name).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

fn attrs_object<'a>(attrs: impl Iterator<Item = (&'a str, &'a str)>) -> Value {
    let mut object = Map::new();
    for (key, value) in attrs {
        object.insert(key.to_owned(), Value::String(value.to_owned()));
    }
    Value::Object(object)
}

/// What a signature's reflection says, decoded: the `iree.abi` signature model and the
/// declaration.
fn decoded(signature: &FunctionSignature<'_>) -> Value {
    match signature.abi() {
        Ok(abi) => json!({
            "signature": abi.signature().and_then(Result::ok).map(|s| s.to_string()),
            "iree_abi": abi.iree_abi.as_ref().map(|a| a.to_string()),
            "declaration": abi.declaration_text,
            "model": abi.model,
        }),
        Err(error) => json!({"error": error.to_string()}),
    }
}

fn report(module: &BytecodeModule<'_>) -> Value {
    let exports: Vec<Value> = module
        .exports()
        .map(|export| {
            let signature = module.export_signature(&export);
            let cconv = signature.and_then(|s| s.calling_convention);
            json!({
                "name": export.local_name,
                "internal_ordinal": export.internal_ordinal,
                "cconv": cconv,
                "types": cconv_types(cconv),
                "reflection": signature.map_or_else(|| json!({}), |s| attrs_object(s.attrs().map(|a| (a.key, a.value)))),
                "decoded": signature.map(|s| decoded(&s)),
            })
        })
        .collect();
    let imports: Vec<Value> = module
        .imports()
        .map(|import| {
            let cconv = import.signature.and_then(|s| s.calling_convention);
            json!({
                "name": import.full_name,
                "cconv": cconv,
                "types": cconv_types(cconv),
                "optional": import.is_optional(),
            })
        })
        .collect();
    let rodata: Vec<Value> = module
        .rodata_segments()
        .enumerate()
        .map(|(index, segment)| {
            let mut entry =
                json!({"index": index, "size": segment.len(), "external": segment.is_external()});
            if let RodataStorage::External { offset, .. } = segment.storage {
                entry["offset"] = json!(offset);
            }
            entry
        })
        .collect();
    let functions: Vec<Value> = module
        .function_descriptors()
        .zip(module.function_signatures())
        .enumerate()
        .map(|(ordinal, (d, s))| {
            json!({
                "ordinal": ordinal,
                "cconv": s.calling_convention,
                "bytecode_offset": d.bytecode_offset,
                "bytecode_length": d.bytecode_length,
                "requirements": d.requirements.names(),
                "block_count": d.block_count,
                "i32_register_count": d.i32_register_count,
                "ref_register_count": d.ref_register_count,
            })
        })
        .collect();
    let layout = module.layout();
    json!({
        "name": module.name(),
        "version": module.version(),
        "container": layout.container.name(),
        "flatbuffer": {"offset": layout.flatbuffer.start, "size": layout.flatbuffer.len()},
        "requirements": module.requirements().names(),
        "attrs": attrs_object(module.attrs().map(|a| (a.key, a.value))),
        "types": module.types().collect::<Vec<_>>(),
        "dependencies": module.dependencies().map(|d| json!({
            "name": d.name,
            "minimum_version": d.minimum_version,
            "optional": d.is_optional(),
        })).collect::<Vec<_>>(),
        "imports": imports,
        "exports": exports,
        "functions": functions,
        "rodata": rodata,
        "rwdata": module.rwdata_segments().collect::<Vec<_>>(),
        "module_state": module.module_state().map(|s| json!({
            "global_bytes_capacity": s.global_bytes_capacity,
            "global_ref_count": s.global_ref_count,
        })),
        "bytecode_version": module.bytecode_version(),
        "bytecode_size": module.bytecode_data().len(),
        "debug_database": module.debug_database().map(|db| json!({
            "locations": db.locations().len(),
            "source_maps": db.functions().iter().map(|f| f.local_name).collect::<Vec<_>>(),
        })),
    })
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
