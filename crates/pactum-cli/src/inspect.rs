//! `pactum inspect FILE`: what a compiled artifact exports and how to call it.

use std::path::Path;

use anyhow::{Result, bail};
use serde_json::json;

use crate::library;

/// The first bytes of a file, to tell its kind.
pub(crate) fn head(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(16);
    std::fs::File::open(path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        .take(16)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Prints a summary of `path` (or JSON with `as_json`): a TVM FFI library or an IREE module.
pub fn run(path: &Path, as_json: bool) -> Result<()> {
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    if crate::vmfb::looks_like_vmfb(&head(path)?) {
        return crate::vmfb::run(path, as_json);
    }
    if !library::is_shared_library(path)? {
        bail!(
            "{}: not a shared library or an IREE bytecode module (pactum inspect reads ELF shared \
             objects and .vmfb files)",
            path.display()
        );
    }
    let mlir_functions = library::mlir_function_names(path)?;
    let functions = if library::export_names(path)?.is_empty() && !mlir_functions.is_empty() {
        // A library MLIR built: nothing to load for TVM FFI metadata.
        Vec::new()
    } else {
        library::describe(&library::loadable(path))?
    };
    if as_json {
        let functions: Vec<_> = functions
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "signature": f.signature.as_ref().map(|s| s.render(&f.name)),
                    "params": f.signature.as_ref().map(params_json),
                    "result": f.signature.as_ref().map(|s| s.result_detail.clone().unwrap_or_else(|| s.result.to_string())),
                    "doc": f.doc,
                    "metadata": f.metadata,
                })
            })
            .collect();
        let kind = if functions.is_empty() && !mlir_functions.is_empty() {
            "mlir-library"
        } else {
            "tvm-ffi-library"
        };
        let report = json!({
            "path": path.display().to_string(),
            "kind": kind,
            "functions": functions,
            "mlir_c_interface_functions": mlir_functions,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    if functions.is_empty() && !mlir_functions.is_empty() {
        print_mlir_functions(path, &mlir_functions);
        return Ok(());
    }
    println!(
        "{}: TVM FFI library, {} function(s)",
        path.display(),
        functions.len()
    );
    for function in &functions {
        println!();
        match &function.signature {
            Some(signature) => println!("{}", signature.render(&function.name)),
            None => println!("{}(...)  (no metadata)", function.name),
        }
        if let Some(doc) = &function.doc {
            for line in doc.lines() {
                println!("    {line}");
            }
        }
    }
    if !mlir_functions.is_empty() {
        println!();
        print_mlir_functions(path, &mlir_functions);
    }
    Ok(())
}

/// Lists MLIR functions with C wrappers. Their types are not in the library (LLVM's opaque
/// pointers erase them), so calls need the MLIR declaration.
fn print_mlir_functions(path: &Path, names: &[String]) {
    println!(
        "{}: MLIR library, {} function(s) with C wrappers (_mlir_ciface_<name>)",
        path.display(),
        names.len()
    );
    for name in names {
        println!("  @{name}");
    }
    println!();
    println!(
        "The library does not record argument types; call with the function's MLIR declaration:\n  \
         pactum call {} NAME --mlir 'func.func @NAME(%a: memref<?xf32>, ...) -> ...' ARG...",
        path.display()
    );
}

/// The parameters of a schema as `[{"name", "type"}]` (`*args: Any` for a packed function).
fn params_json(schema: &pactum::function::schema::FunctionSchema) -> Vec<serde_json::Value> {
    match &schema.params {
        None => vec![json!({"name": "*args", "type": "Any"})],
        Some(params) => params
            .iter()
            .map(|p| {
                let ty = p.detail.clone().unwrap_or_else(|| p.ty.to_string());
                json!({"name": p.name, "type": ty})
            })
            .collect(),
    }
}
