//! Host (a): the kernels library in Python, on the OFFICIAL `apache-tvm-ffi` runtime.
//!
//! Runs the pytest suite `tests/python/` with the pinned peer Python (`.venv`, made by
//! `scripts/test.sh`, or `$PACTUM_PYTHON`), pointing it at the library cargo just built.

use std::path::Path;
use std::process::Command;

use crate::support;

#[test]
fn python_suite_passes_on_the_official_runtime() {
    let Some(python) = support::python() else {
        return;
    };
    let library = support::kernels_library();
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let output = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE"])
        .arg(&suite)
        .env("PACTUM_KERNELS_LIB", &library)
        // cargo puts target/<profile>/deps, which holds pactum's libtvm_ffi.so, on the search
        // path of test processes; Python must resolve the official library of its wheel.
        .env_remove("LD_LIBRARY_PATH")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RUST_BACKTRACE", "0")
        .current_dir(&suite)
        .output()
        .expect("run pytest");
    let log = support::log(&output);
    assert!(
        output.status.success(),
        "pytest failed ({}) for {} with {}:\n{log}",
        output.status,
        library.display(),
        python.display()
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout
        .lines()
        .rev()
        .find(|line| line.contains(" passed"))
        .unwrap_or_else(|| panic!("no pytest summary:\n{log}"));
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("unreadable pytest summary {summary:?}"));
    assert!(
        passed >= 100 && !summary.contains("skipped"),
        "expected the whole suite to run, got: {summary}"
    );
}
