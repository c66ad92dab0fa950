//! Hostile input through the C API (`tests/c/hostile/hostile.c`): NULL handles, byte arrays
//! claiming impossible sizes, corrupt values inside a `TVMFFIAny`, malformed DLPack tensors,
//! bytes that are not UTF-8, wrong argument counts and types, and a truncated library.
//!
//! Unlike the conformance suite, the program runs against pactum's `libtvm_ffi.so` only: the
//! official library crashes or aborts on most of these inputs (`tests/c/NOTES.md`), where
//! pactum raises an error. The program checks each error itself and exits with status 1 on a
//! mismatch; the headers are the official wheel's, as in the suite.

use std::path::Path;
use std::process::Command;

use crate::support;

#[test]
fn hostile_c_program_gets_errors_not_crashes() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let libdir = support::pactum_libdir();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/hostile/hostile.c");
    let build = std::env::temp_dir().join(format!("pactum-hostile-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build).unwrap();
    let exe = build.join("hostile");
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".to_owned());
    let compiled = Command::new(&cc)
        .args([
            "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
        ])
        .arg(format!("-I{include}"))
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", libdir.display()))
        .args(["-Wl,--no-as-needed", "-ltvm_ffi", "-ldl"])
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .expect("run the C compiler");
    assert!(
        compiled.status.success(),
        "compiling hostile.c failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let output = Command::new(&exe)
        .arg(&build)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run the hostile program");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the hostile program failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(!stdout.contains("UNEXPECTED"), "{stdout}");
    assert!(stdout.ends_with("hostile: unexpected=0\n"), "{stdout}");
    let _ = std::fs::remove_dir_all(&build);
}
