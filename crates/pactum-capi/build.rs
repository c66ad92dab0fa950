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
//! official library's C++ names, and `compat_symbols.txt`, the few names of older releases that
//! clients built against them still import: `compat_abi.cc`) exports exactly those. libstdc++ is linked dynamically, as
//! the official library links it: one C++ runtime in the process, so exceptions and typeinfo
//! match across libraries.

use std::path::PathBuf;

#[path = "../../build-support/tvm_ffi_config.rs"]
mod tvm_ffi_config;

/// Writes the version script exporting the names listed in the files `symbol_lists` (one per
/// line, `#` comments) and returns its path.
fn version_script(symbol_lists: &[&str]) -> PathBuf {
    let mut script = String::from("{\n  global:\n");
    for symbols in symbol_lists {
        let list = std::fs::read_to_string(symbols).expect("read a C++ symbol list");
        for name in list
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            script.push_str(&format!("    {name};\n"));
        }
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

    let sources = [
        "cxx/cxx_abi.cc",
        "cxx/std_artefacts.cc",
        "cxx/compat_abi.cc",
    ];
    // The official library's C++ names, and the few of older releases clients still import.
    let symbol_lists = ["cxx/cxx_abi_symbols.txt", "cxx/compat_symbols.txt"];
    for path in sources
        .iter()
        .chain(&symbol_lists)
        .chain([&"cxx/cxx_abi_hooks.h"])
    {
        println!("cargo:rerun-if-changed={path}");
    }
    let include = tvm_ffi_config::find(
        "pactum-capi needs the headers of apache-tvm-ffi 0.1.15 to build the C++ part of \
         libtvm_ffi.so (only the headers: nothing links to the official library)",
    )
    .include;
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
    let map = version_script(&symbol_lists);
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
