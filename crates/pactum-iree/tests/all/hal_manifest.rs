//! Every run of the fixtures that use the HAL (`manifest.json`, backends `vmvx` and
//! `llvm-cpu`) through pactum's VM with the `hal` module, and through the pinned
//! `iree-run-module`, on the same inputs and device (`local-task`: pactum's worker pool;
//! `local-sync`: the calling thread only): pactum's
//! results are printed the way iree-run-module prints them (tensors as `2x3xf32=[...]`,
//! scalars as C's `%g`, lists with their children) and the two outputs must be identical,
//! text for text. Runs that must fail fail in both with the same IREE status.

use std::sync::Arc;

use pactum_iree::hal::{HalModule, LocalDevice, Workers};
use pactum_iree::vm::{Context, Limits};
use pactum_testing::iree::{ManifestRun, manifest_runs, tool_or_skip};

use crate::manifest_harness;

fn context(device: Option<&str>) -> Context {
    let mut context = Context::new(Limits::default());
    let workers = match device {
        Some("local-sync") => Workers::CallerThread,
        _ => Workers::shared(),
    };
    let device = LocalDevice::new(workers).with_memory_budget(context.memory_budget().cloned());
    let hal = HalModule::new(Arc::new(device));
    context.register_native(Arc::new(hal)).unwrap();
    context
}

fn run_in_pactum(run: &ManifestRun) -> Result<String, (String, String)> {
    manifest_harness::run_in_pactum(run, context(run.device.as_deref()))
}

fn hal_runs(backend: &str) -> Vec<ManifestRun> {
    manifest_runs()
        .unwrap()
        .into_iter()
        .filter(|run| run.backend == backend)
        .collect()
}

fn matches_the_recorded_output(backend: &str, at_least: usize) {
    let runs = hal_runs(backend);
    assert!(runs.len() >= at_least, "{} {backend} runs", runs.len());
    for run in &runs {
        let recorded = run.recorded().unwrap();
        match (run_in_pactum(run), &recorded.results) {
            (Ok(ours), Ok(_)) => assert_eq!(ours, run.expected_output, "{run}"),
            (Err((status, message)), Err(failure)) => {
                assert_eq!(status, failure.status, "{run}: {message}");
            }
            (ours, _) => panic!("{run}: pactum gave {ours:?}, the manifest {recorded:?}"),
        }
    }
}

fn matches_iree_run_module(backend: &str, test: &str) {
    if tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let runs = hal_runs(backend);
    for run in &runs {
        let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
        match (run_in_pactum(run), &iree.results) {
            (Ok(ours), Ok(_)) => {
                assert_eq!(
                    ours, iree.stdout,
                    "{run}: pactum (left) vs iree-run-module (right)"
                )
            }
            (Err((status, message)), Err(failure)) => {
                assert_eq!(status, failure.status, "{run}: {message}");
            }
            (ours, _) => panic!("{run}: pactum gave {ours:?}, iree-run-module {iree:?}"),
        }
    }
    eprintln!("{} {backend} runs compared", runs.len());
}

/// Against the outputs recorded in the manifest (no tool needed).
#[test]
fn every_vmvx_fixture_run_matches_the_recorded_output() {
    matches_the_recorded_output("vmvx", 20);
}

/// Against iree-run-module, live.
#[test]
fn every_vmvx_fixture_run_matches_iree_run_module() {
    matches_iree_run_module("vmvx", "every_vmvx_fixture_run_matches_iree_run_module");
}

/// Native code from IREE's `llvm-cpu` backend, against the recorded outputs.
#[test]
fn every_llvm_cpu_fixture_run_matches_the_recorded_output() {
    matches_the_recorded_output("llvm-cpu", 10);
}

/// Native code from IREE's `llvm-cpu` backend, against iree-run-module, live.
#[test]
fn every_llvm_cpu_fixture_run_matches_iree_run_module() {
    matches_iree_run_module(
        "llvm-cpu",
        "every_llvm_cpu_fixture_run_matches_iree_run_module",
    );
}

/// Results of over 1,024 elements are printed as iree-run-module prints them: every row of
/// an outer dimension in brackets, elements up to the budget, then `...` in the row where it
/// runs out and `[...]` for each row after (the MLP's dynamic batch, rank 2 and rank 2 with
/// a partly printed last row).
#[test]
fn long_results_are_elided_as_iree_run_module_elides_them() {
    if tool_or_skip(
        "iree-run-module",
        "long_results_are_elided_as_iree_run_module_elides_them",
    )
    .is_none()
    {
        return;
    }
    let base = manifest_runs()
        .unwrap()
        .into_iter()
        .find(|run| run.file == "mlp_llvm_cpu.vmfb" && run.function == "predict_dyn")
        .unwrap();
    for rows in [103, 150, 200] {
        let run = ManifestRun {
            inputs: vec![format!("{rows}x16xf32=0.25")],
            ..base.clone()
        };
        let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
        assert!(iree.results.is_ok(), "{run}: {iree:?}");
        let ours = run_in_pactum(&run).unwrap_or_else(|e| panic!("{run}: {e:?}"));
        assert!(ours.contains("...]"), "{run}: {ours}");
        assert_eq!(
            ours, iree.stdout,
            "{run}: pactum (left) vs iree-run-module (right)"
        );
    }
}

/// A vmvx dispatch of many workgroups (`add_one` over 1,500 elements: 24 workgroups of 64)
/// prints the same on pactum's pools (`local-task`: the shared pool; a pool of 3 threads of
/// its own) as on the caller's thread and as iree-run-module prints it on `local-task`, live.
#[test]
fn vmvx_workgroups_on_a_pool_match_the_caller_thread_and_iree_run_module() {
    if tool_or_skip(
        "iree-run-module",
        "vmvx_workgroups_on_a_pool_match_the_caller_thread_and_iree_run_module",
    )
    .is_none()
    {
        return;
    }
    let base = manifest_runs()
        .unwrap()
        .into_iter()
        .find(|run| run.file == "vmvx_tensors.vmfb" && run.function == "add_one")
        .unwrap();
    // Distinct values, so a workgroup writing another's elements would show.
    let values: Vec<String> = (0..1500)
        .map(|k| format!("{}", (k * 7919 % 1013) as f32 / 8.0 - 60.0))
        .collect();
    let run = ManifestRun {
        device: Some("local-task".into()),
        inputs: vec![format!("1500xf32={}", values.join(" "))],
        ..base
    };
    let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
    assert!(iree.results.is_ok(), "{run}: {iree:?}");
    let own_pool = || {
        let mut context = Context::new(Limits::default());
        let device = LocalDevice::new(Workers::with_threads(3).unwrap())
            .with_memory_budget(context.memory_budget().cloned());
        context
            .register_native(Arc::new(HalModule::new(Arc::new(device))))
            .unwrap();
        context
    };
    let contexts = [
        ("local-task", context(Some("local-task"))),
        ("a pool of 3", own_pool()),
        ("local-sync", context(Some("local-sync"))),
    ];
    for (name, context) in contexts {
        let ours = manifest_harness::run_in_pactum(&run, context)
            .unwrap_or_else(|e| panic!("{run} on {name}: {e:?}"));
        assert_eq!(
            ours, iree.stdout,
            "{run} on {name}: pactum (left) vs iree-run-module (right)"
        );
    }
}
