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

#[path = "../../build-support/tvm_ffi_config.rs"]
mod tvm_ffi_config;

fn main() {
    let source = "shim/served_module.cc";
    println!("cargo:rerun-if-changed={source}");
    let tvm_ffi_config::TvmFfiConfig {
        include,
        libdir: lib,
    } = tvm_ffi_config::find(
        "pactum-python needs the headers and libtvm_ffi.so of apache-tvm-ffi 0.1.15 to build \
         its C++ module shim (python/pyproject.toml installs the wheel into pip's build \
         environment)",
    );
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
