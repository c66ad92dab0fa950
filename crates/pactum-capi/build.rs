//! Gives the shared library the SONAME modules record as their NEEDED entry, and builds its
//! C++ part.
//!
//! `cxx/` holds the C++ ABI of the official `libtvm_ffi.so` (the `ModuleObj` class, `Module`'s
//! static functions, JSON, structural equality and hashing, ...), compiled against the official
//! headers, so that the class layouts, vtables and typeinfo are the ones C++ clients were built
//! with. The headers are found through `tvm-ffi-config` (`$PACTUM_TVM_FFI_CONFIG`, else
//! `tvm-ffi-config` on `PATH`, else the repository's `.venv/bin/tvm-ffi-config`), as
//! `pactum-python` finds them. Only the headers are used: nothing links to the official library.
//!
//! rustc links a cdylib with a version script that exports its own `#[no_mangle]` items and
//! hides everything else, C++ included; a second version script (`cxx_abi_symbols.txt`, the
//! official library's C++ names) exports exactly those. libstdc++ is linked dynamically, as
//! the official library links it: one C++ runtime in the process, so exceptions and typeinfo
//! match across libraries.

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

/// The official headers' directory.
fn tvm_ffi_include() -> (PathBuf, String) {
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
        if let Some(include) = config_value(config, "--includedir") {
            return (config.clone(), include);
        }
    }
    panic!(
        "pactum-capi needs the headers of apache-tvm-ffi 0.1.15 to build the C++ part of \
         libtvm_ffi.so; none found (tried {}). Install apache-tvm-ffi==0.1.15.post2 \
         (scripts/requirements-peer.txt), or set PACTUM_TVM_FFI_CONFIG to its tvm-ffi-config \
         (scripts/test.sh sets it to .venv/bin/tvm-ffi-config).",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// Writes the version script exporting the names listed in `symbols` (one per line, `#`
/// comments) and returns its path.
fn version_script(symbols: &str) -> PathBuf {
    let list = std::fs::read_to_string(symbols).expect("read the C++ symbol list");
    let mut script = String::from("{\n  global:\n");
    for name in list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        script.push_str(&format!("    {name};\n"));
    }
    script.push_str("};\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let path = out.join("cxx_abi.map");
    std::fs::write(&path, script).expect("write the version script");
    path
}

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtvm_ffi.so");

    let sources = ["cxx/cxx_abi.cc", "cxx/std_artefacts.cc"];
    let symbols = "cxx/cxx_abi_symbols.txt";
    for path in sources.iter().chain([&symbols, &"cxx/cxx_abi_hooks.h"]) {
        println!("cargo:rerun-if-changed={path}");
    }
    let (config, include) = tvm_ffi_include();
    println!("cargo:rerun-if-changed={}", config.display());
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        // -isystem: the wheel's headers are not ours to warn about.
        .flag(format!("-isystem{include}"))
        .files(sources)
        .pic(true)
        // As the official library is built: only what is declared exported is exported.
        .flag("-fvisibility=hidden")
        .flag("-fvisibility-inlines-hidden")
        // Warnings are shown, not fatal: a user's compiler may warn where this one does not.
        .warnings(true)
        .extra_warnings(true)
        // Symbols nothing in Rust references (all of them, to the linker) must stay.
        .link_lib_modifier("+whole-archive")
        .cpp_link_stdlib(None)
        .compile("pactum_cxx_abi");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    let map = version_script(symbols);
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
