//! Finding the pinned `apache-tvm-ffi` wheel from a build script, through its `tvm-ffi-config`:
//! `$PACTUM_TVM_FFI_CONFIG`, else `tvm-ffi-config` on `PATH` (pip's isolated build environment
//! puts it there), else the repository's `.venv/bin/tvm-ffi-config` (scripts/test.sh installs
//! the wheel there). Shared by the build scripts of pactum-capi and pactum-python, which include
//! this file with `#[path]` (a build script cannot depend on a workspace module otherwise
//! without a crate of its own).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the wheel's `tvm-ffi-config` says.
pub struct TvmFfiConfig {
    /// The official headers' directory (`--includedir`).
    pub include: String,
    /// The official library's directory (`--libdir`).
    #[allow(dead_code, reason = "pactum-capi builds against the headers alone")]
    pub libdir: String,
}

/// One value of `tvm-ffi-config FLAG`, `None` when it cannot be run or prints nothing.
fn config_value(config: &Path, flag: &str) -> Option<String> {
    let output = Command::new(config).arg(flag).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The first `tvm-ffi-config` of the search order that answers, or a panic (the build's error)
/// that starts with `needs` (who needs the wheel, and what for) and names every place tried.
pub fn find(needs: &str) -> TvmFfiConfig {
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
        if let (Some(include), Some(libdir)) = (
            config_value(config, "--includedir"),
            config_value(config, "--libdir"),
        ) {
            // The build reruns when the wheel is reinstalled.
            println!("cargo:rerun-if-changed={}", config.display());
            return TvmFfiConfig { include, libdir };
        }
    }
    panic!(
        "{needs}; no tvm-ffi-config answered (tried {}). Install apache-tvm-ffi==0.1.15.post2 \
         (scripts/requirements-peer.txt), or set PACTUM_TVM_FFI_CONFIG to its tvm-ffi-config \
         (scripts/test.sh sets it to .venv/bin/tvm-ffi-config).",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
