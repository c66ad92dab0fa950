//! The data of `pactum inspect --json FILE.vmfb`: a module's metadata as JSON, with decoded
//! signatures. Shared by the `pactum` command and the Python package (`pactum.iree.inspect`).

use serde_json::{Map, Value, json};

use super::{BytecodeModule, FunctionSignature, RodataStorage};
use crate::signature::cconv::{CallingConvention, CconvItem};

/// The types of a calling convention as IREE prints them: `{"arguments": [...], "results":
/// [...]}`, or `null` when `cconv` is missing or not understood.
pub fn cconv_types(cconv: Option<&str>) -> Value {
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

/// The JSON report of `module` (what `pactum inspect --json` prints).
pub fn report(module: &BytecodeModule<'_>) -> Value {
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
