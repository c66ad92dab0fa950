//! The `pactum` command on the example kernels library: `inspect`, `call` (scalars, strings,
//! `.npy` tensors, `--out`), the failure modes a user hits, and `demo`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pactum::{DataType, Tensor};

fn kernels() -> PathBuf {
    // The test binary lives in target/<profile>/deps/, where cargo also builds the kernels.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let library = deps.join("libpactum_example_kernels.so");
    assert!(library.exists(), "{} missing", library.display());
    library
}

fn pactum(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(args)
        .current_dir(dir)
        .env("PACTUM_KERNELS_LIB", kernels())
        .output()
        .expect("run pactum")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A failed command: non-zero exit, one `error:` line on stderr, no panic.
fn assert_clean_failure(output: &Output, expected: &str) {
    let err = stderr(output);
    assert!(
        !output.status.success(),
        "expected failure, got success: {}",
        stdout(output)
    );
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(expected), "expected {expected:?} in {err}");
}

#[test]
fn inspect_lists_signatures_and_docs() {
    let dir = scratch("inspect");
    let library = kernels();
    let output = pactum(&["inspect", library.to_str().unwrap()], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("add_one(x: Tensor[float32], y: Tensor[float32]) -> None"),
        "{text}"
    );
    assert!(
        text.contains("    Writes `x + 1` into `y`, elementwise"),
        "{text}"
    );
    assert!(
        text.contains("matmul(a: Tensor[float32, 2d], b: Tensor[float32, 2d]) -> Tensor"),
        "{text}"
    );
    assert!(
        text.contains("or_default(value: Optional[int], default: int) -> int"),
        "{text}"
    );
    assert!(
        text.contains("apply_twice(callback: Function, x: int) -> int"),
        "{text}"
    );

    let output = pactum(&["inspect", "--json", library.to_str().unwrap()], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let functions = report["functions"].as_array().unwrap();
    let names: Vec<&str> = functions
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    for expected in [
        "add_one",
        "saxpy",
        "matmul",
        "sum",
        "linspace",
        "greet",
        "apply_twice",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let saxpy = functions.iter().find(|f| f["name"] == "saxpy").unwrap();
    assert_eq!(
        saxpy["params"][0],
        serde_json::json!({"name": "a", "type": "float"})
    );
    assert_eq!(saxpy["result"], "None");
    assert!(
        saxpy["doc"]
            .as_str()
            .unwrap()
            .starts_with("`y = a * x + y`")
    );
}

#[test]
fn call_prints_scalars_and_strings() {
    let dir = scratch("scalars");
    let library = kernels();
    let lib = library.to_str().unwrap();
    for (args, expected) in [
        (vec!["echo_int", "-7:i32"], "-7"),
        (vec!["echo_int", "0x10"], "16"),
        (vec!["echo_float", "2.5:f32"], "2.5"),
        (vec!["echo_bool", "true"], "true"),
        (vec!["greet", "\"pactum\""], "\"Hello, pactum!\""),
        (vec!["or_default", "none", "5"], "5"),
        (vec!["make_array", "2"], "[0, 1, \"end\", [1.5, true]]"),
        (vec!["make_map", "2"], "{\"k0\": 0, \"k1\": 1}"),
    ] {
        let mut full = vec!["call", lib];
        full.extend(&args);
        let output = pactum(&full, &dir);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert_eq!(stdout(&output).trim(), expected, "{args:?}");
    }
}

#[test]
fn call_reads_npy_tensors_and_writes_results_and_arguments() {
    let dir = scratch("tensors");
    pactum::npy::write_file(
        dir.join("x.npy"),
        &Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap(),
    )
    .unwrap();
    pactum::npy::write_file(
        dir.join("y.npy"),
        &Tensor::empty(&[3], DataType::F32).unwrap(),
    )
    .unwrap();
    pactum::npy::write_file(
        dir.join("m.npy"),
        &Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap(),
    )
    .unwrap();
    let library = kernels();
    let lib = library.to_str().unwrap();

    let output = pactum(
        &["call", lib, "add_one", "@x.npy", "@y.npy", "--out", "out"],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let y = pactum::npy::read_file(dir.join("out/arg_1.npy")).unwrap();
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        vec![2.0, 3.0, 4.0],
        "output parameters are written back"
    );

    let output = pactum(
        &[
            "call", "--out", "product", lib, "matmul", "@m.npy", "@m.npy",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Tensor[float32, 2x2] on cpu:0 -> product/result_0.npy"),
        "{}",
        stdout(&output)
    );
    let product = pactum::npy::read_file(dir.join("product/result_0.npy")).unwrap();
    assert_eq!(
        product.to_vec::<f32>().unwrap(),
        vec![7.0, 10.0, 15.0, 22.0]
    );

    let output = pactum(&["call", lib, "sum", "@x.npy"], &dir);
    assert_eq!(stdout(&output).trim(), "6.0");
}

#[test]
fn bad_input_is_a_one_line_error() {
    let dir = scratch("errors");
    pactum::npy::write_file(
        dir.join("f64.npy"),
        &Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap(),
    )
    .unwrap();
    pactum::npy::write_file(
        dir.join("f32.npy"),
        &Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("broken.npy"), b"\x93NUMPY\x01\x00").unwrap();
    let library = kernels();
    let lib = library.to_str().unwrap();
    assert_clean_failure(
        &pactum(&["call", "missing.so", "f"], &dir),
        "missing.so: no such file",
    );
    assert_clean_failure(
        &pactum(&["inspect", "missing.so"], &dir),
        "missing.so: no such file",
    );
    assert_clean_failure(
        &pactum(&["inspect", "f32.npy"], &dir),
        "not a shared library",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "no_such_function"], &dir),
        "has no function `no_such_function` (it exports: add_one,",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "add_one", "@f64.npy", "@f32.npy"], &dir),
        "expected a float32 tensor, got float64",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "add_one", "@nope.npy", "@f32.npy"], &dir),
        "argument 0 (`@nope.npy`): cannot read nope.npy",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "add_one", "@broken.npy", "@f32.npy"], &dir),
        "npy: ",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "echo_int", "seven"], &dir),
        "argument 0 (`seven`): expected a number",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "echo_int", "300:u8"], &dir),
        "300 is out of range for u8",
    );
    assert_clean_failure(
        &pactum(&["call", lib, "echo_int"], &dir),
        "Mismatched number of arguments",
    );
    let panic = pactum(&["call", lib, "panic_now", "\"boom\""], &dir);
    assert!(
        stderr(&panic)
            .lines()
            .last()
            .unwrap()
            .starts_with("error: panic_now failed: RustPanic: boom"),
        "{}",
        stderr(&panic)
    );
    assert_eq!(panic.status.code(), Some(1));
}

#[test]
fn demo_runs_every_path() {
    let dir = scratch("demo");
    let output = pactum(&["demo"], &dir);
    assert!(
        output.status.success(),
        "{}\n{}",
        stdout(&output),
        stderr(&output)
    );
    let text = stdout(&output);
    assert!(
        text.contains("add_one([1, 2, 3], y) wrote y = [2.0, 3.0, 4.0] in place"),
        "{text}"
    );
    assert!(text.contains("all demo steps passed"), "{text}");
}
