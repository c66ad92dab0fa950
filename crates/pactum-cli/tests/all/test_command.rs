//! `pactum test` on compiled test programs (`check_success.mlir`, `check_failure.mlir`, built
//! for vmvx and llvm-cpu): the exit status, one line per test function, the failed checks
//! named; and `pactum call` of a test function, whose failed expectations are an error rather
//! than skipped. That the same functions pass and fail under IREE's runtime is
//! `pactum-iree`'s `check_vs_iree` test.

use std::path::Path;
use std::process::{Command, Output};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pactum-iree/tests/fixtures/vmfb")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn pactum(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(args)
        .output()
        .expect("run pactum")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The test lines (not the failed checks under them, nor the summary) of a run.
fn test_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.starts_with(' ') && !line.contains(" test(s) of "))
        .collect()
}

#[test]
fn every_success_test_passes_with_exit_status_0() {
    for file in ["check_success_vmvx.vmfb", "check_success_llvm_cpu.vmfb"] {
        for device in ["local-task", "local-sync"] {
            let output = pactum(&["test", &fixture(file), "--device", device]);
            let text = stdout(&output);
            assert!(output.status.success(), "{file}: {text}{}", stderr(&output));
            let lines = test_lines(&text);
            assert!(lines.len() >= 30, "{file}: {text}");
            assert!(lines.iter().all(|l| l.starts_with("PASS  ")), "{text}");
            assert!(lines.contains(&"PASS  almost_f8E4M3FNUZ"), "{text}");
            // Exports that take arguments are skipped when named `__…` or holding `$`.
            assert!(!text.contains("helper"), "{text}");
            assert!(
                text.ends_with(&format!(
                    "{0} test(s) of check_success: {0} passed, 0 failed, 0 error(s)\n",
                    lines.len()
                )),
                "{text}"
            );
        }
    }
}

#[test]
fn every_failure_test_fails_with_a_nonzero_exit_status() {
    for file in ["check_failure_vmvx.vmfb", "check_failure_llvm_cpu.vmfb"] {
        let output = pactum(&["test", &fixture(file)]);
        let text = stdout(&output);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{file}: {text}{err}");
        assert!(err.contains("test(s) did not pass"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let lines = test_lines(&text);
        assert!(lines.len() >= 30, "{file}: {text}");
        assert!(!lines.iter().any(|l| l.starts_with("PASS")), "{text}");
        // The failing element's index and both values are named.
        assert!(
            text.contains(
                "FAIL  eq_i32_contents (1 failed check(s))\n      check.expect_eq: Expected \
                 equality of these values. Contents does not match. The first difference \
                 occurs at index 3, where the lhs value is 5 and the rhs value is 6.\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "The first failure occurs at index 0 as the lhs value 111 differs from the rhs \
                 value 100 by -1.100e+01."
            ),
            "{text}"
        );
        // Every failed check of a function is reported, and the function runs to its end.
        assert!(
            text.contains("FAIL  several_failures (3 failed check(s))\n"),
            "{text}"
        );
        // Unsupported element types are errors of the invocation.
        assert!(text.contains("ERROR error_all_true_i1\n"), "{text}");
        assert!(text.contains("unsupported element type i1"), "{text}");
        let failed = lines.iter().filter(|l| l.starts_with("FAIL  ")).count();
        let errors = lines.iter().filter(|l| l.starts_with("ERROR ")).count();
        assert!(
            text.ends_with(&format!(
                "{} test(s) of check_failure: 0 passed, {failed} failed, {errors} error(s)\n",
                lines.len()
            )),
            "{text}"
        );
    }
}

#[test]
fn named_tests_run_alone_in_the_modules_order() {
    let output = pactum(&[
        "test",
        &fixture("check_success_vmvx.vmfb"),
        "eq_views",
        "true_i32",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "PASS  true_i32\nPASS  eq_views\n2 test(s) of check_success: 2 passed, 0 failed, 0 \
         error(s)\n"
    );
    let output = pactum(&[
        "test",
        &fixture("check_failure_llvm_cpu.vmfb"),
        "--device=local-sync",
        "all_true_i64_zero_last",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with(
            "FAIL  all_true_i64_zero_last (1 failed check(s))\n      check.expect_all_true: \
             Expected all elements to be nonzero. The first zero is at index 2 (0).\n"
        ),
        "{}",
        stdout(&output)
    );
}

#[test]
fn modules_that_are_not_test_programs_are_one_line_errors() {
    for (args, expected) in [
        (
            vec!["test", &fixture("check_success_vmvx.vmfb"), "no_such_test"],
            "no test function `no_such_test` (the module's tests: true_i32, ",
        ),
        (
            vec!["test", &fixture("multi_export_vmvx.vmfb")],
            "export `add` is not a test function: tests take no arguments and return nothing, \
             but its calling convention is `0ii_i`",
        ),
        (vec!["test", "no/such/file.vmfb"], "no/such/file.vmfb"),
    ] {
        let output = pactum(&args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(expected), "expected {expected:?} in {err}");
        assert_eq!(stdout(&output), "", "{args:?}");
    }
}

#[test]
fn call_of_a_test_function_reports_its_failed_expectations() {
    // IREE's compiler makes `check` an optional import: without a `check` module the
    // expectations would be skipped and the call would succeed.
    let output = pactum(&["call", &fixture("check_failure_vmvx.vmfb"), "true_of_zero"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{}{err}", stdout(&output));
    assert!(
        err.contains(
            "AssertionError: check_failure.true_of_zero: 1 expectation(s) failed:\n  \
             check.expect_true: Expected 0 to be nonzero."
        ),
        "{err}"
    );
    let output = pactum(&[
        "call",
        &fixture("check_failure_llvm_cpu.vmfb"),
        "error_all_true_f16",
    ]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("unsupported element type f16"), "{err}");
    // Expectations that hold: the call succeeds and returns nothing.
    let output = pactum(&[
        "call",
        &fixture("check_success_llvm_cpu.vmfb"),
        "eq_matmul_f32",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "None\n");
}
