//! `pactum inspect FILE`: what a compiled artifact exports and how to call it.

use std::path::Path;

use anyhow::{Result, bail};
use serde_json::json;

use crate::library;

/// Prints a summary of `path` (or JSON with `as_json`).
pub fn run(path: &Path, as_json: bool) -> Result<()> {
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    if !library::is_shared_library(path)? {
        bail!(
            "{}: not a shared library (pactum inspect reads ELF shared objects)",
            path.display()
        );
    }
    let functions = library::describe(&library::loadable(path))?;
    if as_json {
        let functions: Vec<_> = functions
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "signature": f.signature.as_ref().map(|s| s.render(&f.name)),
                    "params": f.signature.as_ref().map(|s| s.params.iter().map(|(n, t)| json!({"name": n, "type": t})).collect::<Vec<_>>()),
                    "result": f.signature.as_ref().map(|s| s.result.clone()),
                    "doc": f.doc,
                    "metadata": f.metadata,
                })
            })
            .collect();
        let report = json!({"path": path.display().to_string(), "kind": "tvm-ffi-library", "functions": functions});
        println!("{}", serde_json::to_string_pretty(&report)?);
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
    Ok(())
}
