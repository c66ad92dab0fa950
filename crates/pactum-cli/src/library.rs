//! What a shared library exports through the TVM FFI conventions: `__tvm_ffi_<name>` entry
//! points (from the ELF dynamic symbol table), with their `type_schema` metadata (read by
//! `pactum::function::schema`) and docs.

use std::path::Path;

use anyhow::{Context, Result};
use object::{Object, ObjectSymbol};
use pactum::function::schema::FunctionSchema;

/// An exported packed function.
pub struct ExportedFunction {
    /// Export name (`add_one` for `__tvm_ffi_add_one`).
    pub name: String,
    /// Parsed signature, when the library provides metadata.
    pub signature: Option<FunctionSchema>,
    /// Raw metadata JSON.
    pub metadata: Option<String>,
    /// Doc text.
    pub doc: Option<String>,
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
            let signature = metadata
                .as_deref()
                .and_then(|m| FunctionSchema::from_metadata(m).ok());
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
