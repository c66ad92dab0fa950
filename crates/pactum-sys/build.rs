//! Builds the forwarding stand-in for `libtvm_ffi.so` (see `forwarder/forwarder.c`) into
//! `OUT_DIR`, to be embedded by `src/forwarder.rs`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let source = PathBuf::from("forwarder/forwarder.c");
    println!("cargo:rerun-if-changed={}", source.display());
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let output = out_dir.join("libtvm_ffi_forwarder.so");
    if target_os != "linux" {
        // Only ELF hosts resolve NEEDED entries by SONAME; elsewhere ship an empty blob.
        std::fs::write(&output, b"").expect("write empty forwarder");
        return;
    }
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let status = Command::new(compiler.path())
        .args([
            "-shared",
            "-fPIC",
            "-O2",
            "-std=c11",
            "-fvisibility=hidden",
            "-Wall",
            "-Werror",
            "-s",
        ])
        .arg("-Wl,-soname,libtvm_ffi.so")
        .arg("-o")
        .arg(&output)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run the C compiler {}: {e}",
                compiler.path().display()
            )
        });
    assert!(status.success(), "compiling {} failed", source.display());
}
