//! Every run of the VM-only fixtures (`manifest.json`, backend `none`) through pactum's VM and
//! through the pinned `iree-run-module`, in the same test, on the same inputs: pactum's
//! results are printed the way iree-run-module prints them (C's `%g` for floats, lists with
//! their children) and the two outputs must be identical, text for text. Runs that must fail
//! fail in both with the same IREE status. No expected value is typed here.

use pactum_iree::vm::{Context, Limits};
use pactum_testing::iree::{ManifestRun, manifest_runs, tool_or_skip};

use crate::manifest_harness;

/// C's `printf("%g", x)`, as iree-run-module prints scalars.
fn c_g(x: f64) -> String {
    pactum_iree::hal::c_format_g(x, false)
}

fn run_in_pactum(run: &ManifestRun) -> Result<String, (String, String)> {
    manifest_harness::run_in_pactum(run, Context::new(Limits::default()))
}

#[test]
fn every_vm_only_fixture_run_matches_iree_run_module() {
    if tool_or_skip(
        "iree-run-module",
        "every_vm_only_fixture_run_matches_iree_run_module",
    )
    .is_none()
    {
        return;
    }
    let runs: Vec<ManifestRun> = manifest_runs()
        .unwrap()
        .into_iter()
        .filter(|run| run.backend == "none")
        .collect();
    let mut compared = 0;
    let mut failures = 0;
    for run in &runs {
        let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
        match (run_in_pactum(run), &iree.results) {
            (Ok(ours), Ok(_)) => {
                assert_eq!(
                    ours, iree.stdout,
                    "{run}: pactum (left) vs iree-run-module (right)"
                );
            }
            (Err((status, message)), Err(failure)) => {
                assert_eq!(
                    status, failure.status,
                    "{run}: {message} vs {}",
                    failure.stderr
                );
                failures += 1;
            }
            (ours, theirs) => panic!("{run}: pactum {ours:?}, iree-run-module {theirs:?}"),
        }
        compared += 1;
    }
    eprintln!("compared {compared} VM-only runs with iree-run-module ({failures} must fail)");
    assert!(
        compared >= 60,
        "only {compared} VM-only runs in the manifest"
    );
    assert!(failures >= 1);
}

#[test]
fn c_g_formats_like_printf() {
    for (value, text) in [
        (1.75, "1.75"),
        (-0.499, "-0.499"),
        (4294967296.0, "4.29497e+09"),
        (1e300, "1e+300"),
        (0.333_333_333, "0.333333"),
        (1e-5, "1e-05"),
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (0.0001, "0.0001"),
        (-0.0, "-0"),
    ] {
        assert_eq!(c_g(value), text);
    }
}
