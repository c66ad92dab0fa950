//! Locating the official peer (the pinned `apache-tvm-ffi` wheel) and pactum's build output.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The directory holding the `libtvm_ffi.so` cargo built for this test run: the test binary's
/// own `deps/` directory. Cargo refreshes the library there for tests but does not copy it up
/// to `target/<profile>/`, where a stale copy may sit.
pub fn pactum_libdir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().expect("target/<profile>/deps").to_path_buf();
    assert!(
        dir.join("libtvm_ffi.so").exists(),
        "{} has no libtvm_ffi.so",
        dir.display()
    );
    dir
}

/// `tvm-ffi-config` of the official wheel: `$PACTUM_TVM_FFI_CONFIG`, or the repository's
/// `.venv`. `None` (the test is skipped, loudly) only when `PACTUM_SKIP_PEER=1`; otherwise a
/// missing peer fails the test.
pub fn tvm_ffi_config() -> Option<PathBuf> {
    let configured = std::env::var_os("PACTUM_TVM_FFI_CONFIG").map(PathBuf::from);
    let path = configured.unwrap_or_else(|| repo_root().join(".venv/bin/tvm-ffi-config"));
    if path.exists() {
        return Some(path);
    }
    if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED: the official apache-tvm-ffi wheel is not installed (PACTUM_SKIP_PEER=1)"
        );
        return None;
    }
    panic!(
        "the official apache-tvm-ffi wheel is needed as the peer ({} missing); run the README test command \
         (scripts/test.sh), or set PACTUM_TVM_FFI_CONFIG, or PACTUM_SKIP_PEER=1 to skip",
        path.display()
    );
}

/// Runs `tvm-ffi-config FLAG`.
pub fn config_value(config: &Path, flag: &str) -> String {
    let output = Command::new(config)
        .arg(flag)
        .output()
        .expect("run tvm-ffi-config");
    assert!(output.status.success(), "tvm-ffi-config {flag} failed");
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

/// Compiles `source` with `compiler` (and `flags`) into `exe`, linked to the `libtvm_ffi.so` in
/// `libdir` and finding it there at run time (an rpath), as a client built against the official
/// headers links to whichever library it is given. A failing compile fails the test with the
/// compiler's message.
pub fn compile_client(compiler: &str, flags: &[String], source: &Path, exe: &Path, libdir: &Path) {
    let compiled = Command::new(compiler)
        .args(flags)
        .arg(source)
        .arg("-o")
        .arg(exe)
        .arg(format!("-L{}", libdir.display()))
        .args(["-Wl,--no-as-needed", "-ltvm_ffi"])
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
    assert!(
        compiled.status.success(),
        "compiling {} against {} failed:\n{}",
        source.display(),
        libdir.display(),
        String::from_utf8_lossy(&compiled.stderr)
    );
}
