//! Host (b): a C program (`tests/c/host.c`) loads the kernels library through the C API.
//!
//! The program is compiled twice from the official wheel's headers: linked against the
//! official `libtvm_ffi.so` and against pactum's. Both builds must pass every check and print
//! the same output. That shows the C test is right (the official runtime agrees with it) and
//! that the one kernels library behaves the same under either runtime, with its errors
//! landing in the C program's error slot.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

/// Compiles `host.c` into `out`, linked against (and with an rpath to) `libdir`.
fn compile(include: &Path, libdir: &Path, out: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/host.c");
    let output = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args([
            "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
        ])
        .arg("-I")
        .arg(include)
        .arg(&source)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(libdir)
        .args(["-Wl,--no-as-needed", "-ltvm_ffi"])
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .args(["-lm", "-ldl"])
        .output()
        .expect("run the C compiler");
    assert!(
        output.status.success(),
        "compiling host.c against {} failed:\n{}",
        libdir.display(),
        support::log(&output)
    );
}

/// Runs the host on the kernels library; returns its stdout after checking that it passed
/// and was served by the `libtvm_ffi.so` in `libdir`.
fn run(host: &Path, libdir: &Path, library: &Path) -> String {
    let output = Command::new(host)
        .arg(library)
        // cargo puts target/<profile>/deps (pactum's libtvm_ffi.so) on the loader path of test
        // processes, ahead of the program's RUNPATH: only the rpath may decide here.
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the C host");
    let log = support::log(&output);
    assert!(
        output.status.success(),
        "the C host linked against {} failed ({}):\n{log}",
        libdir.display(),
        output.status
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let runtime = stderr
        .lines()
        .find_map(|line| line.strip_prefix("runtime: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("the host did not name its runtime:\n{log}"));
    assert_eq!(
        runtime.canonicalize().expect("runtime path"),
        libdir
            .join("libtvm_ffi.so")
            .canonicalize()
            .expect("libtvm_ffi.so"),
        "the host ran on the wrong libtvm_ffi.so"
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn c_host_prints_the_same_under_the_official_runtime_and_pactum() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let official = support::config_value(&config, "--libdir");
    let pactum = support::pactum_libdir();
    let library = support::kernels_library();
    let scratch = support::scratch_dir("c-host");

    let (official_host, pactum_host) = (scratch.join("host_official"), scratch.join("host_pactum"));
    compile(&include, &official, &official_host);
    compile(&include, &pactum, &pactum_host);
    let expected = run(&official_host, &official, &library);
    let actual = run(&pactum_host, &pactum, &library);

    assert!(
        expected.ends_with("c host: failures=0\n"),
        "the host did not finish:\n{expected}"
    );
    let checks = expected.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(
        checks >= 45,
        "expected every check to run, got {checks}:\n{expected}"
    );
    for line in [
        "y = [ 2 3 4 5 6 ]",
        "greet (type_index 65): \"Hello, C host!\"",
        "apply_twice = 30 (callback calls=1, arg=5)",
        "raise_error(ValueError): rc=-1 kind=ValueError message=raised in Rust, caught in C",
        "panic_now: rc=-1 kind=RustPanic message=panic seen by C",
        "apply_twice(raising C callback): rc=-1 kind=IndexError message=raised by a C callback",
        "error_of: Rust saw kind=IndexError message=raised by a C callback",
    ] {
        assert!(
            expected.lines().any(|l| l == line),
            "missing line {line:?} in:\n{expected}"
        );
    }
    if expected != actual {
        let (line, (e, a)) = expected
            .lines()
            .zip(actual.lines().chain(std::iter::repeat("<missing>")))
            .enumerate()
            .find(|(_, (e, a))| e != a)
            .unwrap_or((0, ("<same lines>", "<extra lines>")));
        panic!(
            "outputs differ at line {}:\n  official: {e}\n  pactum:   {a}\n--- official\n{expected}--- pactum\n{actual}",
            line + 1
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
