//! Locating the official wheel (headers for compiling C test modules).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The official wheel's include directory, or `None` when `PACTUM_SKIP_PEER=1` (loudly).
pub fn official_include_dir() -> Option<PathBuf> {
    let config = std::env::var_os("PACTUM_TVM_FFI_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/tvm-ffi-config")
        });
    if !config.exists() {
        if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
            eprintln!("SKIPPED: official headers not installed (PACTUM_SKIP_PEER=1)");
            return None;
        }
        panic!(
            "the official apache-tvm-ffi wheel is needed ({} missing); run scripts/test.sh",
            config.display()
        );
    }
    let output = Command::new(&config)
        .arg("--includedir")
        .output()
        .expect("run tvm-ffi-config");
    Some(PathBuf::from(
        String::from_utf8(output.stdout).expect("UTF-8").trim(),
    ))
}

/// The official wheel's library directory (to link C modules against, recording
/// `NEEDED libtvm_ffi.so` without an rpath).
pub fn official_lib_dir() -> PathBuf {
    let include = official_include_dir().expect("peer present");
    include.parent().expect("tvm_ffi package").join("lib")
}

/// Compiles C sources into a shared library in a fresh temporary directory, linked against
/// `libtvm_ffi.so` from `link_dir` (so it records `NEEDED libtvm_ffi.so`, with no rpath).
pub fn build_c_module(name: &str, sources: &[&Path], include: &Path, link_dir: &Path) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let output = dir.join(format!("{name}.so"));
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-shared",
            "-fPIC",
            "-O1",
            "-std=c11",
            "-Wall",
            "-Werror",
            "-fvisibility=hidden",
        ])
        .arg("-I")
        .arg(include)
        .args(sources)
        .arg("-o")
        .arg(&output)
        .arg("-L")
        .arg(link_dir)
        .arg("-ltvm_ffi")
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling {name} failed");
    output
}
