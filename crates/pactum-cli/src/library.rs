//! What a shared library exports through the TVM FFI conventions: `__tvm_ffi_<name>` entry
//! points (from the ELF dynamic symbol table), with their `type_schema` metadata and docs.

use std::path::Path;

use anyhow::{Context, Result, bail};
use object::{Object, ObjectSymbol};
use serde_json::Value;

/// An exported packed function.
pub struct ExportedFunction {
    /// Export name (`add_one` for `__tvm_ffi_add_one`).
    pub name: String,
    /// Parsed signature, when the library provides metadata.
    pub signature: Option<Signature>,
    /// Raw metadata JSON.
    pub metadata: Option<String>,
    /// Doc text.
    pub doc: Option<String>,
}

/// A function signature read from `type_schema` metadata.
pub struct Signature {
    /// Parameters: (name, type).
    pub params: Vec<(String, String)>,
    /// Result type.
    pub result: String,
}

impl Signature {
    /// `name(a: int, b: Tensor) -> float`.
    pub fn render(&self, name: &str) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(n, t)| format!("{n}: {t}"))
            .collect();
        format!("{name}({}) -> {}", params.join(", "), self.result)
    }
}

/// Names of the `__tvm_ffi_<name>` entry points a shared library exports, sorted.
pub fn export_names(path: &Path) -> Result<Vec<String>> {
    Ok(defined_names_with_prefix(path, "__tvm_ffi_")?
        .into_iter()
        .filter(|n| !n.starts_with('_'))
        .collect())
}

/// Names of the MLIR functions a shared library exports with C wrappers
/// (`_mlir_ciface_<name>`), sorted.
pub fn mlir_function_names(path: &Path) -> Result<Vec<String>> {
    defined_names_with_prefix(path, "_mlir_ciface_")
}

/// Defined dynamic symbols starting with `prefix`, the prefix removed, sorted and unique.
fn defined_names_with_prefix(path: &Path, prefix: &str) -> Result<Vec<String>> {
    // Read on demand through a cache rather than all at once: the symbol tables are a small part
    // of a library, and a huge file that only starts like one is refused after its headers.
    let data = std::fs::File::open(path)
        .map(object::read::ReadCache::new)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let file = object::File::parse(&data)
        .with_context(|| format!("{} is not an object file pactum can read", path.display()))?;
    let mut names: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .filter_map(|n| n.strip_prefix(prefix).map(str::to_owned))
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Whether a file is an ELF shared object (as opposed to an IREE `.vmfb`, ...).
pub fn is_shared_library(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 4];
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let read = std::io::Read::read(&mut file, &mut magic)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(read == 4 && magic == *b"\x7fELF")
}

/// A readable type text without the `ffi.` prefix (`ffi.Tensor[float32]` -> `Tensor[float32]`).
fn display_type(text: &str) -> String {
    text.replace("ffi.", "")
}

/// Renders one `type_schema` node the way Python users read types.
pub fn render_type(schema: &Value) -> String {
    let Some(key) = schema.get("type").and_then(Value::as_str) else {
        return "?".to_owned();
    };
    let args: Vec<String> = schema
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(render_type).collect())
        .unwrap_or_default();
    let base = match key {
        "ffi.String" => "str",
        "ffi.Bytes" => "bytes",
        "ffi.Tensor" => "Tensor",
        "ffi.Function" => "Function",
        "ffi.Array" => "Array",
        "ffi.List" => "List",
        "ffi.Map" => "Map",
        "ffi.Dict" => "Dict",
        "ffi.Shape" => "Shape",
        "ffi.Object" => "Object",
        "ffi.Module" => "Module",
        other => other,
    };
    if args.is_empty() {
        base.to_owned()
    } else {
        format!("{base}[{}]", args.join(", "))
    }
}

/// Parses `{"type_schema": "<json>", "arg_names": [...]}` metadata into a signature.
pub fn parse_metadata(metadata: &str) -> Result<Signature> {
    let outer: Value = serde_json::from_str(metadata).context("metadata is not JSON")?;
    let schema_text = outer
        .get("type_schema")
        .and_then(Value::as_str)
        .context("metadata has no type_schema")?;
    let schema: Value = serde_json::from_str(schema_text).context("type_schema is not JSON")?;
    let Some(named) = schema.get("named_args") else {
        // A packed function: any arguments, any result.
        return Ok(Signature {
            params: vec![("*args".to_owned(), "Any".to_owned())],
            result: "Any".to_owned(),
        });
    };
    let Some(params) = named.get("params").and_then(Value::as_array) else {
        bail!("type_schema has no params");
    };
    let result = named
        .get("return")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .map(render_type)
        .unwrap_or_else(|| "None".to_owned());
    let names: Vec<String> = outer
        .get("arg_names")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    // pactum-built libraries add readable types (`Tensor[float32, 2d]`) beside the schema.
    let texts = |key: &str| -> Vec<String> {
        outer
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(display_type))
                    .collect()
            })
            .unwrap_or_default()
    };
    let arg_types = texts("arg_types");
    let params = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = names.get(i).cloned().unwrap_or_else(|| format!("arg{i}"));
            (
                name,
                arg_types.get(i).cloned().unwrap_or_else(|| render_type(p)),
            )
        })
        .collect();
    let result = outer
        .get("return_type")
        .and_then(Value::as_str)
        .map(display_type)
        .unwrap_or(result);
    Ok(Signature { params, result })
}

/// Every export of a library, with metadata and docs (loads the library into this process).
pub fn describe(path: &Path) -> Result<Vec<ExportedFunction>> {
    let names = export_names(path)?;
    let module = pactum::Module::load(path)
        .map_err(|e| anyhow::anyhow!("cannot load {}: {e}", path.display()))?;
    names
        .into_iter()
        .map(|name| {
            let metadata = module
                .function_metadata(&name)
                .map_err(|e| anyhow::anyhow!("{name}: reading metadata: {e}"))?;
            let metadata = metadata.map(|m| m.as_str().to_owned());
            let signature = metadata.as_deref().and_then(|m| parse_metadata(m).ok());
            let doc = module
                .function_doc(&name)
                .map_err(|e| anyhow::anyhow!("{name}: reading doc: {e}"))?;
            Ok(ExportedFunction {
                name,
                signature,
                metadata,
                doc: doc.map(|d| d.as_str().to_owned()),
            })
        })
        .collect()
}

/// A module path `dlopen` accepts as a file (a bare name would go through the search path).
pub fn loadable(path: &Path) -> std::path::PathBuf {
    if path.components().count() == 1 {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}
