//! Compiles `shim/served_module.cc` (the C++ module class that lets the official
//! `libtvm_ffi.so` hold modules served by Rust code) against the headers of the
//! `apache-tvm-ffi` in the build environment, and links that `libtvm_ffi.so`.
//!
//! The headers and library are found through `tvm-ffi-config`: `$PACTUM_TVM_FFI_CONFIG`, else
//! `tvm-ffi-config` on `PATH` (pip's isolated build environment for `pip install ./python`
//! puts it there), else the repository's `.venv/bin/tvm-ffi-config` (scripts/test.sh).
//!
//! No rpath: the library is linked by its SONAME, `libtvm_ffi.so`, which Python has already
//! loaded (`import tvm_ffi`) when it loads this one, so the dynamic loader reuses it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn config_value(config: &Path, flag: &str) -> Option<String> {
    let output = Command::new(config).arg(flag).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn tvm_ffi_config() -> (PathBuf, String, String) {
    println!("cargo:rerun-if-env-changed=PACTUM_TVM_FFI_CONFIG");
    println!("cargo:rerun-if-env-changed=PATH");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os("PACTUM_TVM_FFI_CONFIG") {
        candidates.push(PathBuf::from(path));
    }
    candidates.push(PathBuf::from("tvm-ffi-config"));
    candidates.push(manifest.join("../../.venv/bin/tvm-ffi-config"));
    for config in &candidates {
        if let (Some(include), Some(lib)) = (
            config_value(config, "--includedir"),
            config_value(config, "--libdir"),
        ) {
            return (config.clone(), include, lib);
        }
    }
    panic!(
        "pactum-python needs the headers and libtvm_ffi.so of apache-tvm-ffi 0.1.15 to build its \
         C++ module shim; none found (tried {}). Install apache-tvm-ffi==0.1.15.post2 into the \
         build environment (python/pyproject.toml does), or set PACTUM_TVM_FFI_CONFIG to its \
         tvm-ffi-config (scripts/test.sh sets it to .venv/bin/tvm-ffi-config).",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn main() {
    let source = "shim/served_module.cc";
    println!("cargo:rerun-if-changed={source}");
    let (config, include, lib) = tvm_ffi_config();
    println!("cargo:rerun-if-changed={}", config.display());
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        // -isystem: the wheel's headers are not ours to warn about.
        .flag(format!("-isystem{include}"))
        .file(source)
        .flag_if_supported("-fvisibility=hidden")
        .warnings(true)
        .compile("pactum_python_shim");
    println!("cargo:rustc-link-search=native={lib}");
    println!("cargo:rustc-link-lib=dylib=tvm_ffi");
}
