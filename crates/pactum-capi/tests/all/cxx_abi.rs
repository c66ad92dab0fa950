//! The C++ ABI of `libtvm_ffi.so`, as C++ programs built from the official headers use it,
//! checked on the official library and on pactum's.
//!
//! `error_what`: errors the library makes are read as C strings (`Error::what()` returns the
//! message's `data`); the program runs under AddressSanitizer, so a message without its NUL
//! is a heap-buffer-overflow report and a failed run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

/// Compiles `tests/cxx_abi/<program>.cc` with `extra_flags` against the headers, linked to the
/// `libtvm_ffi.so` in `libdir` (found through an rpath), into `build`.
fn compile(
    program: &str,
    include: &str,
    libdir: &Path,
    build: &Path,
    extra_flags: &[&str],
) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/cxx_abi/{program}.cc"));
    let exe = build.join(program);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let compiled = Command::new(&cxx)
        .args([
            "-std=c++17",
            "-O1",
            "-g",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pthread",
        ])
        .args(extra_flags)
        .arg(format!("-isystem{include}"))
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", libdir.display()))
        .args(["-Wl,--no-as-needed", "-ltvm_ffi"])
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .expect("run the C++ compiler");
    assert!(
        compiled.status.success(),
        "compiling {program}.cc against {} failed:\n{}",
        libdir.display(),
        String::from_utf8_lossy(&compiled.stderr)
    );
    exe
}

/// Runs `exe` with a clean loader environment and `env`, and fails the test (with its output)
/// unless it exits 0.
fn run(exe: &Path, what: &str, env: &[(&str, &str)]) -> String {
    let output = Command::new(exe)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .envs(env.iter().copied())
        .output()
        .expect("run the C++ program");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} on {what} failed ({}):\n{stdout}\n{stderr}",
        exe.display(),
        output.status
    );
    stdout
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-cxx-abi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn error_messages_are_c_strings_under_address_sanitizer_on_both_libraries() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let official = PathBuf::from(support::config_value(&config, "--libdir"));
    // Leaks are the library's business elsewhere (valgrind runs of the C suite); here only
    // reads past the end matter.
    let asan = [("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")];
    let asan_flags = ["-fsanitize=address", "-fno-omit-frame-pointer"];
    let libraries = [
        ("official", "the official library", official),
        ("pactum", "pactum's library", support::pactum_libdir()),
    ];
    for (name, what, libdir) in libraries {
        let build = scratch(name);
        let exe = compile("error_what", &include, &libdir, &build, &asan_flags);
        let stdout = run(&exe, what, &asan);
        assert!(
            stdout.ends_with("all terminated\n"),
            "error_what on {what} did not finish:\n{stdout}"
        );
        let _ = std::fs::remove_dir_all(&build);
    }
}
