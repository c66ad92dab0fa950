//! The official `apache-tvm-ffi` Python package, unmodified, on pactum's `libtvm_ffi.so`.
//!
//! Runs the pytest suite in `tests/python_official` twice: on the wheel as installed (every
//! test must pass, which proves the test), then on a copy of the wheel (`tvm_ffi/` and its
//! `.dist-info`, first on `PYTHONPATH`) whose `tvm_ffi/lib/libtvm_ffi.so` is pactum's. The
//! package finds its library through the wheel's `RECORD`, relative to the `.dist-info` it
//! imports, so the copy loads pactum's; the suite checks `/proc/self/maps` to be sure. On
//! pactum's library, tests marked `pactum_xfail` must fail (strict xfail) and those marked
//! `pactum_crash` are skipped: the printed summary is the list of what still differs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

fn python_of(config: &Path) -> PathBuf {
    config.parent().expect("venv bin").join("python")
}

/// Where the installed wheel lives: `(tvm_ffi package dir, .dist-info dir)`.
fn wheel_dirs(python: &Path) -> (PathBuf, PathBuf) {
    let output = Command::new(python)
        .args([
            "-c",
            "import importlib.util as u, importlib.metadata as m; \
             print(list(u.find_spec('tvm_ffi').submodule_search_locations)[0]); \
             print(m.distribution('apache-tvm-ffi')._path)",
        ])
        .output()
        .expect("run python");
    assert!(
        output.status.success(),
        "locating tvm_ffi failed: {output:?}"
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let mut lines = text.lines().map(PathBuf::from);
    (
        lines.next().expect("package"),
        lines.next().expect("dist-info"),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success(), "copying {} failed", from.display());
}

fn run_pytest(python: &Path, lib: &str, pythonpath: Option<&Path>, expect: &Path) -> String {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python_official");
    let mut command = Command::new(python);
    command
        .args(["-m", "pytest", "-q", "-rxXs", "-p", "no:cacheprovider"])
        .arg(&suite)
        .current_dir(&suite)
        .env("PACTUM_PY_LIB", lib)
        .env("PACTUM_EXPECT_LIB", expect)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("PYTHONPATH");
    if let Some(path) = pythonpath {
        command.env("PYTHONPATH", path);
    }
    let output = command.output().expect("run pytest");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the official package's suite failed on the {lib} library:\n{log}"
    );
    log
}

#[test]
fn official_python_package_runs_on_official_and_pactum_library() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let python = python_of(&config);
    let (package, dist_info) = wheel_dirs(&python);
    let official_lib = package.join("lib/libtvm_ffi.so");
    assert_eq!(
        Path::new(&support::config_value(&config, "--libdir")).join("libtvm_ffi.so"),
        official_lib,
        "tvm-ffi-config and the imported package disagree on the official library"
    );
    run_pytest(&python, "official", None, &official_lib);

    let scratch = std::env::temp_dir().join(format!("pactum-py-official-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    copy_dir(&package, &scratch.join("tvm_ffi"));
    copy_dir(
        &dist_info,
        &scratch.join(dist_info.file_name().expect("name")),
    );
    let pactum_lib = scratch.join("tvm_ffi/lib/libtvm_ffi.so");
    std::fs::copy(support::pactum_libdir().join("libtvm_ffi.so"), &pactum_lib)
        .expect("replace libtvm_ffi.so with pactum's");
    let log = run_pytest(&python, "pactum", Some(&scratch), &pactum_lib);
    let _ = std::fs::remove_dir_all(&scratch);
    // The differences, for the test log (`cargo test -- --nocapture`).
    println!("{log}");
}
