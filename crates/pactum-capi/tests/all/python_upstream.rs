//! The official apache-tvm-ffi test suite, from the pinned release's sdist, on the official
//! `libtvm_ffi.so` and on pactum's.
//!
//! `scripts/fetch_peer_tests.sh` (run by the README test command) puts the release's
//! `tests/python` in `.peer/tvm-ffi-tests`, checked against a pinned SHA-256; nothing fetched
//! is committed. `tests/python_upstream/run_upstream.py` runs it twice in fresh processes
//! (the installed wheel, then a copy whose `tvm_ffi/lib/libtvm_ffi.so` is pactum's) and
//! requires every test that passes on the official library to pass on pactum's, except those in
//! `tests/python_upstream/known_differences.txt`, each with its reason.

use std::path::Path;
use std::process::Command;

use crate::support;

#[test]
fn official_test_suite_passes_on_pactum_library() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let tests = support::repo_root().join(".peer/tvm-ffi-tests");
    if !tests.join("VERSION").exists() {
        if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
            eprintln!("SKIPPED: the official test suite is not fetched (PACTUM_SKIP_PEER=1)");
            return;
        }
        panic!(
            "the official apache-tvm-ffi test suite is missing ({}); run scripts/fetch_peer_tests.sh \
             (the README test command does), or PACTUM_SKIP_PEER=1 to skip",
            tests.display()
        );
    }
    let official_lib = Path::new(&support::config_value(&config, "--libdir")).join("libtvm_ffi.so");
    assert!(
        official_lib.exists(),
        "the official library is missing: {}",
        official_lib.display()
    );
    let python = config.parent().expect("venv bin").join("python");
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python_upstream");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-upstream");
    let output = Command::new(&python)
        .arg(here.join("run_upstream.py"))
        .arg(&tests)
        .arg(support::pactum_libdir().join("libtvm_ffi.so"))
        .arg(here.join("known_differences.txt"))
        .arg(&work)
        .env_remove("PYTHONPATH")
        .output()
        .expect("run run_upstream.py");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(&work);
    assert!(output.status.success(), "{log}");
    // The counts and the known differences, for the test log (`cargo test -- --nocapture`).
    println!("{log}");
}
