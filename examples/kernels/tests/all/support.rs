//! Shared by the host tests: where the freshly built libraries are, and the official peer.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The test binary's own `target/<profile>/deps/` directory. Cargo builds this crate's cdylib
/// (`libpactum_example_kernels.so`) and, through the `pactum-capi` dev-dependency, pactum's
/// `libtvm_ffi.so` there before it runs the tests. The copies in `target/<profile>/` are only
/// refreshed by `cargo build` and may be stale.
pub fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().expect("target/<profile>/deps").to_path_buf()
}

/// The kernels library under test.
pub fn kernels_library() -> PathBuf {
    let path = deps_dir().join("libpactum_example_kernels.so");
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// The directory of pactum's freshly built `libtvm_ffi.so`.
pub fn pactum_libdir() -> PathBuf {
    let dir = deps_dir();
    assert!(
        dir.join("libtvm_ffi.so").exists(),
        "{} has no libtvm_ffi.so (pactum-capi is a dev-dependency so that cargo builds it)",
        dir.display()
    );
    dir
}

/// `path` if it exists. A missing peer fails the test with directions, unless
/// `PACTUM_SKIP_PEER=1`, where the test is skipped (`None`) with a note on stderr.
fn peer(path: PathBuf, override_var: &str, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
        eprintln!("SKIPPED: {what} is not installed (PACTUM_SKIP_PEER=1)");
        return None;
    }
    panic!(
        "{what} is needed ({} missing): run the README test command scripts/test.sh, which \
         creates .venv with the pinned peers; or set {override_var}; or PACTUM_SKIP_PEER=1 to skip",
        path.display()
    );
}

/// The Python with the pinned `apache-tvm-ffi`, `numpy` and `pytest`: `$PACTUM_PYTHON`, or
/// the repository's `.venv`.
pub fn python() -> Option<PathBuf> {
    let path = std::env::var_os("PACTUM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    peer(path, "PACTUM_PYTHON", "the peer Python (.venv)")
}

/// `tvm-ffi-config` of the official wheel: `$PACTUM_TVM_FFI_CONFIG`, or the repository's
/// `.venv`.
pub fn tvm_ffi_config() -> Option<PathBuf> {
    let path = std::env::var_os("PACTUM_TVM_FFI_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/tvm-ffi-config"));
    peer(
        path,
        "PACTUM_TVM_FFI_CONFIG",
        "the official apache-tvm-ffi wheel",
    )
}

/// Runs `tvm-ffi-config FLAG`.
pub fn config_value(config: &Path, flag: &str) -> PathBuf {
    let output = Command::new(config)
        .arg(flag)
        .output()
        .expect("run tvm-ffi-config");
    assert!(output.status.success(), "tvm-ffi-config {flag} failed");
    PathBuf::from(String::from_utf8(output.stdout).expect("UTF-8").trim())
}

/// A command's stdout and stderr, for failure messages.
pub fn log(output: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A fresh scratch directory for this test process.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-kernels-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}
