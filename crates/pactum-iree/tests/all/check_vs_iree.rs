//! The `check` module and the test runner (`pactum_iree::check`) compared with IREE's runtime
//! on the same compiled test programs: `check_success.mlir` and `check_failure.mlir`, each
//! built for vmvx and llvm-cpu (`tests/fixtures/vmfb/`).
//!
//! IREE's side is `tests/python/iree_check_runner.py`: IREE 3.13's `iree.runtime` (the
//! workspace's `.venv`) runs every test function in a fresh context with its own `hal` module
//! and a `check` module written in Python (`iree.runtime.PyModuleInterface`), since the pip
//! runtime ships no `iree-check-module`. The test asserts, per function: the same outcome
//! (pass, fail, or an error of the invocation), the same failed checks in the same order with
//! the same first failing element index and the same first message line, and for errors the
//! same `unsupported element type …` reason. On top of agreeing, every function of the
//! success programs must pass and every function of the failure programs must not.
//!
//! Without the python, `iree.runtime`, NumPy or `ml_dtypes` the test fails, unless
//! `PACTUM_SKIP_PEER=1`, when it is skipped with a message.

use std::path::PathBuf;
use std::process::Command;

use pactum_iree::check::{TestOptions, TestReport, Verdict, float_element, run_tests};
use pactum_iree::hal::{HalElementType, Workers};
use serde_json::Value;

const SUCCESS: [&str; 2] = ["check_success_vmvx.vmfb", "check_success_llvm_cpu.vmfb"];
const FAILURE: [&str; 2] = ["check_failure_vmvx.vmfb", "check_failure_llvm_cpu.vmfb"];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    manifest_dir().join("tests/fixtures/vmfb").join(name)
}

/// The workspace's `.venv` python when it has `iree.runtime`, NumPy and `ml_dtypes`; `None`
/// when it does not and `PACTUM_SKIP_PEER=1` (a failure otherwise).
fn peer_python() -> Option<PathBuf> {
    pactum_testing::iree::python_or_skip(&["iree.runtime", "numpy", "ml_dtypes"], "check_vs_iree")
}

/// IREE's report on `files` (the script's JSON, one object per module); `None` when the peer
/// is missing and `PACTUM_SKIP_PEER=1`.
fn run_iree(files: &[&str]) -> Option<Vec<Value>> {
    let python = peer_python()?;
    let output = Command::new(&python)
        .arg(manifest_dir().join("tests/python/iree_check_runner.py"))
        .args(["--device", "local-sync"])
        .args(files.iter().map(|f| fixture(f)))
        .output()
        .expect("start the python peer");
    assert!(
        output.status.success(),
        "iree_check_runner.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report.len(), files.len());
    Some(report)
}

fn run_pactum(file: &str, workers: Workers) -> TestReport {
    let options = TestOptions {
        workers,
        ..TestOptions::default()
    };
    run_tests::<&str>(fixture(file), &[], options)
        .unwrap_or_else(|e| panic!("{file}: pactum cannot run its tests: {e}"))
}

fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Error => "error",
    }
}

/// The `unsupported element type X` phrase of an error message, if any.
fn unsupported_reason(message: &str) -> Option<&str> {
    let start = message.find("unsupported element type ")?;
    let rest = &message[start..];
    let end = rest
        .char_indices()
        .skip("unsupported element type ".len())
        .find(|(_, c)| !c.is_ascii_alphanumeric())
        .map_or(rest.len(), |(i, _)| i);
    Some(&rest[..end])
}

/// Asserts that pactum's report on `file` agrees with IREE's, function by function; returns
/// (passed, did not pass).
fn compare(file: &str, ours: &TestReport, theirs: &Value) -> (usize, usize) {
    assert_eq!(
        theirs["error"],
        Value::Null,
        "{file}: IREE refused the module"
    );
    let tests = theirs["tests"].as_array().unwrap();
    let names: Vec<&str> = tests.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let our_names: Vec<&str> = ours.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(our_names, names, "{file}: the test functions differ");
    for (result, test) in ours.results.iter().zip(tests) {
        let at = format!("{file} @{}", result.name);
        let verdict = verdict_name(result.verdict());
        assert_eq!(
            verdict, test["outcome"],
            "{at}: pactum {verdict} ({:?}, error {:?}), IREE {test}",
            result.failures, result.error
        );
        let their_failures = test["failures"].as_array().unwrap();
        assert_eq!(
            result.failures.count(),
            their_failures.len() as u64,
            "{at}: failures differ: pactum {:?}, IREE {their_failures:?}",
            result.failures
        );
        for (failure, theirs) in result.failures.recorded.iter().zip(their_failures) {
            assert_eq!(failure.check.name(), theirs["check"], "{at}: check");
            assert_eq!(
                failure.index,
                theirs["index"].as_u64(),
                "{at}: first failing index"
            );
            assert_eq!(failure.headline(), theirs["headline"], "{at}: message");
        }
        if let Some(error) = &result.error {
            let ours = error.to_string();
            let theirs = test["error"].as_str().unwrap();
            assert!(
                unsupported_reason(&ours).is_some()
                    && unsupported_reason(&ours) == unsupported_reason(theirs),
                "{at}: errors differ: pactum {ours:?}, IREE {theirs:?}"
            );
        }
    }
    let passed = ours.count(Verdict::Pass);
    (passed, ours.results.len() - passed)
}

#[test]
fn check_programs_agree_with_iree() {
    let files: Vec<&str> = SUCCESS.iter().chain(&FAILURE).copied().collect();
    let Some(iree) = run_iree(&files) else {
        return;
    };
    for (file, theirs) in files.iter().zip(&iree) {
        // local-task (the shared pool) and local-sync (the calling thread) alike.
        for workers in [Workers::shared(), Workers::CallerThread] {
            let ours = run_pactum(file, workers);
            let (passed, not_passed) = compare(file, &ours, theirs);
            if SUCCESS.contains(file) {
                assert_eq!(not_passed, 0, "{file}: every test must pass");
                assert!(passed >= 30, "{file}: only {passed} tests");
            } else {
                assert_eq!(passed, 0, "{file}: every test must fail");
                assert!(not_passed >= 30, "{file}: only {not_passed} tests");
                assert!(ours.count(Verdict::Error) >= 1 && ours.count(Verdict::Fail) >= 1);
            }
            eprintln!("{file}: {passed} pass, {not_passed} do not, on both runtimes");
        }
    }
}

/// Every bit pattern of the 16- and 8-bit float types `expect_almost_eq` widens (f16, bf16,
/// the five f8 formats) decodes to the value `ml_dtypes` (the NumPy types IREE's Python
/// runtime uses) gives it, NaNs as NaN.
#[test]
fn small_floats_widen_as_ml_dtypes_does() {
    let Some(python) = peer_python() else {
        return;
    };
    let script = r#"
import json, sys
import ml_dtypes, numpy as np
out = {}
for name, bits in [("float16", 16), ("bfloat16", 16), ("float8_e5m2", 8),
                   ("float8_e4m3fn", 8), ("float8_e5m2fnuz", 8), ("float8_e4m3fnuz", 8),
                   ("float8_e8m0fnu", 8)]:
    dtype = np.float16 if name == "float16" else getattr(ml_dtypes, name)
    raw = np.arange(1 << bits, dtype=np.uint16 if bits == 16 else np.uint8)
    values = raw.view(dtype).astype(np.float64)
    out[name] = ["nan" if np.isnan(v) else float(v).hex() for v in values]
json.dump(out, sys.stdout)
"#;
    let output = Command::new(&python)
        .args(["-c", script])
        .output()
        .expect("start the python peer");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reference: Value = serde_json::from_slice(&output.stdout).unwrap();
    let types = [
        ("float16", HalElementType::F16),
        ("bfloat16", HalElementType::BF16),
        ("float8_e5m2", HalElementType(0x2400_0008)),
        ("float8_e4m3fn", HalElementType(0x2500_0008)),
        ("float8_e5m2fnuz", HalElementType(0x2600_0008)),
        ("float8_e4m3fnuz", HalElementType(0x2700_0008)),
        ("float8_e8m0fnu", HalElementType(0x2800_0008)),
    ];
    for (name, element_type) in types {
        let expected = reference[name].as_array().unwrap();
        let bytes = (element_type.0 & 0xFF) / 8;
        assert_eq!(expected.len(), 1 << (8 * bytes), "{name}");
        for (bits, expected) in expected.iter().enumerate() {
            let encoded = (bits as u16).to_le_bytes();
            let ours = float_element(element_type, &encoded[..bytes as usize])
                .unwrap_or_else(|| panic!("{name} {bits:#x}: not a float"));
            let expected = expected.as_str().unwrap();
            if expected == "nan" {
                assert!(ours.is_nan(), "{name} {bits:#x}: {ours}, ml_dtypes NaN");
            } else {
                assert_eq!(hex_float(ours), expected, "{name} {bits:#x}: {ours}");
            }
        }
    }
}

/// Python's `float.hex()`: `0x1.8000000000000p+1`, `-0x0.0p+0`, `inf`.
fn hex_float(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7FF) as i64;
    let mantissa = bits & ((1 << 52) - 1);
    if exponent == 0 && mantissa == 0 {
        return format!("{sign}0x0.0p+0");
    }
    let (lead, exponent) = if exponent == 0 {
        (0, -1022)
    } else {
        (1, exponent - 1023)
    };
    format!("{sign}0x{lead}.{mantissa:013x}p{exponent:+}")
}
