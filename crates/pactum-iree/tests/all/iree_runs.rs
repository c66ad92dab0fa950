//! Every run recorded in `tests/fixtures/vmfb/manifest.json`, run again now with the pinned
//! `iree-run-module` (`iree-base-runtime==3.13.0` in `.venv`, or `$PACTUM_IREE_BIN`) through
//! `pactum_testing::iree`: what it prints must be exactly what was recorded when the fixtures
//! were built, stdout for every run and stderr too for the runs that must fail. This shows that
//! the fixtures, the manifest and the harness agree on this machine; pactum's own VM is checked
//! against the same runs.
//!
//! Without the tool the tests fail, unless `PACTUM_SKIP_PEER=1`, which skips them with a note.

use pactum_testing::iree::{self, IreeOutcome, ManifestRun};

/// Runs `check` on every run, four threads at a time, and fails listing every mismatch.
fn for_every_run(
    test: &str,
    runs: &[ManifestRun],
    check: impl Fn(&ManifestRun) -> Result<(), String> + Sync,
) {
    let chunks: Vec<&[ManifestRun]> = runs.chunks(runs.len().div_ceil(4).max(1)).collect();
    let problems: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                scope.spawn(|| {
                    chunk
                        .iter()
                        .filter_map(|run| check(run).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        problems.is_empty(),
        "{test}: {} of {} runs differ:\n\n{}",
        problems.len(),
        runs.len(),
        problems.join("\n\n")
    );
}

/// The runs this host can execute (the llvm-cpu fixtures hold x86-64 code).
fn runnable_runs() -> Vec<ManifestRun> {
    let runs = iree::manifest_runs().unwrap();
    assert!(
        runs.len() >= 100,
        "only {} runs in the manifest",
        runs.len()
    );
    runs.into_iter()
        .filter(|run| {
            let ok = run.runs_on_this_host();
            if !ok {
                eprintln!("note: {run} not run: x86-64 code on another host");
            }
            ok
        })
        .collect()
}

/// Compares an outcome with the recorded one: the exact text, then the parsed values.
fn same_as_recorded(run: &ManifestRun, outcome: &IreeOutcome) -> Result<(), String> {
    if outcome.stdout != run.expected_output {
        return Err(format!(
            "{run}: stdout differs\n--- recorded\n{}--- now\n{}",
            run.expected_output, outcome.stdout
        ));
    }
    match (&run.fails, &run.expected_error, &outcome.results) {
        (None, None, Ok(_)) => {}
        (Some(status), Some(stderr), Err(failure)) => {
            if &failure.status != status || &outcome.stderr != stderr {
                return Err(format!(
                    "{run}: the failure differs\n--- recorded ({status})\n{stderr}--- now ({})\n{}",
                    failure.status, outcome.stderr
                ));
            }
        }
        (fails, _, results) => {
            return Err(format!(
                "{run}: recorded as {}, now {results:?}",
                fails.as_deref().unwrap_or("a success")
            ));
        }
    }
    let recorded = run
        .recorded()
        .map_err(|e| format!("{run}: the record: {e}"))?;
    if recorded.results != outcome.results {
        return Err(format!("{run}: parsed values differ from the record's"));
    }
    Ok(())
}

#[test]
fn every_manifest_run_prints_exactly_what_was_recorded() {
    let test = "every_manifest_run_prints_exactly_what_was_recorded";
    if iree::tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let runs = runnable_runs();
    for_every_run(test, &runs, |run| {
        let outcome = run.run().map_err(|e| format!("{run}: {e}"))?;
        same_as_recorded(run, &outcome)
    });
    let failures = runs.iter().filter(|r| r.fails.is_some()).count();
    eprintln!(
        "{} runs ({failures} expected failures) print what the manifest recorded",
        runs.len()
    );
}

#[test]
fn vm_only_modules_print_the_same_with_a_local_sync_device() {
    let test = "vm_only_modules_print_the_same_with_a_local_sync_device";
    if iree::tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let runs: Vec<ManifestRun> = runnable_runs()
        .into_iter()
        .filter(|run| run.backend == "none" && run.device.is_none())
        .collect();
    assert!(
        runs.len() >= 50,
        "only {} VM-only runs without a device",
        runs.len()
    );
    for_every_run(test, &runs, |run| {
        let inputs: Vec<&str> = run.inputs.iter().map(String::as_str).collect();
        let outcome = iree::run_module(&run.path, &run.function, &inputs, Some("local-sync"))
            .map_err(|e| format!("{run}: {e}"))?;
        same_as_recorded(run, &outcome)
    });
}

#[test]
fn the_vm_fixtures_cover_what_a_vm_needs() {
    let runs = iree::manifest_runs().unwrap();
    let has = |file: &str, function: &str| {
        runs.iter()
            .any(|r| r.file == file && r.function == function)
    };
    for function in [
        "i32_arith",
        "i64_arith",
        "i32_bits",
        "i64_bits",
        "f32_arith",
        "f64_arith",
        "f32_math",
        "f64_math",
        "float_bits",
        "cmp_i32",
        "cmp_i64",
        "cmp_f32",
        "cmp_f64",
        "casts",
        "selects",
        "classify",
        "branchy",
        "sum_loop",
        "call_mixed",
        "call_loop",
        "checked_div",
        "spin",
    ] {
        assert!(
            has("vm_scalars.vmfb", function),
            "vm_scalars @{function} has no run"
        );
    }
    for function in [
        "globals_get",
        "globals_bump",
        "global_refs",
        "rodata_read",
        "buffer_ops",
        "lists",
        "list_ops",
        "list_get",
        "optional_probe",
    ] {
        assert!(
            has("vm_memory.vmfb", function),
            "vm_memory @{function} has no run"
        );
    }
    // The benchmark loop's long run: a million iterations.
    assert!(
        runs.iter()
            .any(|r| r.function == "spin" && r.inputs == ["1000000"])
    );
    // Failing runs of every kind: vm.fail, a VM range check, a HAL import's check.
    for (file, function, status) in [
        ("vm_scalars.vmfb", "checked_div", "INVALID_ARGUMENT"),
        ("vm_memory.vmfb", "rodata_read", "OUT_OF_RANGE"),
        ("vm_memory.vmfb", "list_get", "OUT_OF_RANGE"),
        ("vmvx_tensors.vmfb", "add_mat", "INVALID_ARGUMENT"),
    ] {
        let run = runs
            .iter()
            .find(|r| r.file == file && r.function == function && r.fails.is_some())
            .unwrap_or_else(|| panic!("no failing run of {file} @{function}"));
        assert_eq!(run.fails.as_deref(), Some(status));
        let failure = run.recorded().unwrap().expect_failure().clone();
        assert_eq!(failure.status, status);
        assert!(!failure.message.is_empty());
    }
}
