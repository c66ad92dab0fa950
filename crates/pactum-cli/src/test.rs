//! `pactum test MODULE.vmfb [FUNCTION...] [--device D]`: runs a compiled test program's test
//! functions as IREE's `iree-check-module` does (`pactum_iree::check::run_tests`), one line a
//! function, and fails when any test does not pass.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, anyhow};
use pactum_iree::check::{TestOptions, TestReport, TestResult, Verdict, run_tests};
use pactum_iree::hal::Workers;
use pactum_iree::parameters::ParameterProvider;
use pactum_iree::vmfb::VmfbFile;
use serde_json::json;

use crate::call::Device;
use pactum_iree::module::DeviceChoice;

/// One test's line (and, under it, the first line of each failed check's message).
fn describe(result: &TestResult) -> String {
    let mut text = match result.verdict() {
        Verdict::Pass => format!("PASS  {}", result.name),
        Verdict::Fail => format!(
            "FAIL  {} ({} failed check(s))",
            result.name,
            result.failures.count()
        ),
        Verdict::Error => format!("ERROR {}", result.name),
    };
    for failure in &result.failures.recorded {
        text.push_str(&format!(
            "\n      {}: {}",
            failure.check,
            failure.headline()
        ));
    }
    if result.failures.unrecorded > 0 {
        text.push_str(&format!(
            "\n      ({} more failed checks)",
            result.failures.unrecorded
        ));
    }
    if let Some(error) = &result.error {
        text.push_str(&format!("\n      error: {error}"));
    }
    text
}

/// The report as one JSON object: `{"module", "tests": [{"name", "outcome": "pass" | "fail" |
/// "error", "error", "failures": [{"check", "index", "message"}], "unrecorded_failures"}]}`.
fn report_json(report: &TestReport) -> serde_json::Value {
    let tests = report
        .results
        .iter()
        .map(|result| {
            let outcome = match result.verdict() {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::Error => "error",
            };
            let failures = result
                .failures
                .recorded
                .iter()
                .map(|failure| {
                    json!({
                        "check": failure.check.name(),
                        "index": failure.index,
                        "message": failure.message,
                    })
                })
                .collect::<Vec<_>>();
            json!({
                "name": result.name,
                "outcome": outcome,
                "error": result.error.as_ref().map(|e| e.to_string()),
                "failures": failures,
                "unrecorded_failures": result.failures.unrecorded,
            })
        })
        .collect::<Vec<_>>();
    json!({ "module": report.module, "tests": tests })
}

/// Runs the tests `functions` names (every test function when empty) of the module at `path`,
/// each in a fresh context, printing one line per test and a summary (or, with `json`, one
/// JSON object); an error when a test fails or ends in an error.
/// `modules` are loaded before the test module in each test's context, `parameters`
/// (`[SCOPE=]FILE`) are the archives of its `io_parameters` module.
pub fn run(
    path: &Path,
    functions: &[String],
    device: Option<Device>,
    json: bool,
    modules: &[PathBuf],
    parameters: &[String],
) -> Result<()> {
    let (workers, vulkan) = match device.unwrap_or(Device::LocalTask).choice()? {
        DeviceChoice::Local(workers) => (workers, None),
        DeviceChoice::Vulkan(device) => (Workers::CallerThread, Some(device)),
    };
    let linked = modules
        .iter()
        .map(|module| {
            VmfbFile::open(module)
                .map(Arc::new)
                .map_err(|e| anyhow!("cannot load {}: {e}", module.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut provider = ParameterProvider::new();
    for spec in parameters {
        let (scope, index) = crate::tool::open_parameters(spec)?;
        provider.add(scope, index);
    }
    let options = TestOptions {
        workers,
        vulkan,
        linked,
        parameters: Arc::new(provider),
        ..TestOptions::default()
    };
    let report =
        run_tests(path, functions, options).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    // Written, not printed: a closed pipe (`pactum test x.vmfb | head`) is an error, not a
    // panic.
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", report_json(&report))?;
        return if report.passed() {
            Ok(())
        } else {
            Err(anyhow!("not every test passed"))
        };
    }
    for result in &report.results {
        writeln!(out, "{}", describe(result))?;
    }
    let total = report.results.len();
    let passed = report.count(Verdict::Pass);
    let failed = report.count(Verdict::Fail);
    let errors = report.count(Verdict::Error);
    println!(
        "{total} test(s) of {}: {passed} passed, {failed} failed, {errors} error(s)",
        report.module
    );
    if passed == total {
        Ok(())
    } else {
        Err(anyhow!(
            "{} of {total} test(s) did not pass",
            total - passed
        ))
    }
}
