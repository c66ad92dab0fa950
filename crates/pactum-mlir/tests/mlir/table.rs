//! The call table `calls.json`: one call of every test function with its expected results,
//! shared by the Rust driver (`tests/all/mlir_calls.rs`) and the CLI driver
//! (`crates/pactum-cli/tests/all/mlir_call.rs`); the Python driver reads the same file.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use pactum::{Any, DataType, Tensor};
use serde_json::Value;

/// This directory.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pactum-mlir/tests/mlir")
        .canonicalize()
        .expect("tests/mlir")
}

/// The built test libraries (`build.sh` into the target's tmp dir, once per test binary), or
/// `None` when the MLIR tools are missing and `PACTUM_SKIP_PEER=1` says to skip.
pub fn built() -> Option<&'static Path> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mlir");
            let output = std::process::Command::new("bash")
                .arg(dir().join("build.sh"))
                .arg(&out)
                .output()
                .expect("run bash");
            if output.status.success() {
                return Some(out);
            }
            let message = format!(
                "building the MLIR test libraries failed (apt-get install mlir-22-tools \
                 llvm-22):\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
                eprintln!("note: MLIR tests skipped (PACTUM_SKIP_PEER=1): {message}");
                return None;
            }
            panic!("{message}");
        })
        .as_deref()
}

/// One call.
pub struct TableCall {
    /// The source file's stem (`memref_core`).
    pub file: String,
    /// The function.
    pub function: String,
    /// Arguments: numbers, booleans, or tensors `{dtype, shape, data}`.
    pub args: Vec<Value>,
    /// Expected results, in the same forms.
    pub results: Vec<Value>,
    /// Tensor arguments' expected contents after the call.
    pub after: Vec<(usize, Vec<f64>)>,
}

/// Every call of the table.
pub fn calls() -> Vec<TableCall> {
    let text = std::fs::read_to_string(dir().join("calls.json")).expect("calls.json");
    let table: Value = serde_json::from_str(&text).expect("valid JSON");
    table["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|call| TableCall {
            file: call["file"].as_str().unwrap().to_owned(),
            function: call["function"].as_str().unwrap().to_owned(),
            args: call["args"].as_array().unwrap().clone(),
            results: call["results"].as_array().unwrap().clone(),
            after: call
                .get("after")
                .and_then(Value::as_object)
                .map(|after| {
                    after
                        .iter()
                        .map(|(index, data)| (index.parse().unwrap(), numbers(data)))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// Every `func.func` name in the test sources, with its file stem.
pub fn source_functions() -> Vec<(String, String)> {
    let mut functions = Vec::new();
    for entry in std::fs::read_dir(dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mlir") {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                if let Some(rest) = line.trim().strip_prefix("func.func @") {
                    let name = rest.split('(').next().unwrap().to_owned();
                    functions.push((stem.clone(), name));
                }
            }
        }
    }
    functions.sort();
    functions
}

/// The `func.func` header of `name` exactly as written in `stem.mlir` (body brace dropped).
pub fn declaration(stem: &str, name: &str) -> String {
    let text = std::fs::read_to_string(dir().join(format!("{stem}.mlir"))).expect("source");
    let needle = format!("func.func @{name}(");
    let line = text
        .lines()
        .find(|line| line.contains(&needle))
        .unwrap_or_else(|| panic!("no @{name} in {stem}.mlir"));
    line.trim().trim_end_matches('{').trim_end().to_owned()
}

/// The numbers of a JSON array.
pub fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

/// Whether a table value is a tensor.
pub fn is_tensor(value: &Value) -> bool {
    value.is_object()
}

/// The tensor a table value describes.
pub fn tensor(value: &Value) -> Tensor {
    let shape: Vec<i64> = value["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect();
    let data = numbers(&value["data"]);
    let dtype = value["dtype"].as_str().unwrap();
    macro_rules! make {
        ($convert:expr) => {
            Tensor::from_slice(
                &data.iter().map(|&v| $convert(v)).collect::<Vec<_>>(),
                &shape,
            )
        };
    }
    match dtype {
        "float32" => make!(|v: f64| v as f32),
        "float64" => make!(|v: f64| v),
        "float16" => make!(half::f16::from_f64),
        "bfloat16" => make!(half::bf16::from_f64),
        "int8" => make!(|v: f64| v as i8),
        "int16" => make!(|v: f64| v as i16),
        "int32" => make!(|v: f64| v as i32),
        "int64" => make!(|v: f64| v as i64),
        "uint16" => make!(|v: f64| v as u16),
        other => panic!("table dtype {other} not handled"),
    }
    .unwrap()
}

/// A tensor's values in row-major order, as numbers.
pub fn values(tensor: &Tensor) -> Vec<f64> {
    let tensor = tensor.to_contiguous().unwrap();
    let dtype = tensor.dtype();
    macro_rules! read {
        ($ty:ty, $convert:expr) => {
            tensor
                .to_vec::<$ty>()
                .unwrap()
                .into_iter()
                .map($convert)
                .collect()
        };
    }
    match dtype {
        DataType::F32 => read!(f32, f64::from),
        DataType::F64 => read!(f64, |v| v),
        DataType::F16 => read!(half::f16, |v: half::f16| v.to_f64()),
        DataType::BF16 => read!(half::bf16, |v: half::bf16| v.to_f64()),
        DataType::I8 => read!(i8, f64::from),
        DataType::I16 => read!(i16, f64::from),
        DataType::I32 => read!(i32, f64::from),
        DataType::I64 => read!(i64, |v| v as f64),
        DataType::U16 => read!(u16, f64::from),
        other => panic!("dtype {other} not handled"),
    }
}

/// Equal within 1e-6 relative.
pub fn close(got: f64, expected: f64) -> bool {
    (got - expected).abs() <= 1e-6 * expected.abs().max(1.0)
}

/// Checks one result value against the table, naming `what` on failure.
pub fn check_value(got: &Any, expected: &Value, what: &str) {
    if is_tensor(expected) {
        let tensor = got
            .clone()
            .cast::<Tensor>()
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check_tensor(&tensor, expected, what);
    } else {
        let value = got.get::<f64>().unwrap_or_else(|e| panic!("{what}: {e}"));
        let want = expected.as_f64().unwrap();
        assert!(close(value, want), "{what}: got {value}, expected {want}");
    }
}

/// Checks a tensor's dtype, shape and values against a table tensor.
pub fn check_tensor(tensor: &Tensor, expected: &Value, what: &str) {
    assert_eq!(
        tensor.dtype().to_string(),
        expected["dtype"].as_str().unwrap(),
        "{what}: dtype"
    );
    let shape: Vec<i64> = expected["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect();
    assert_eq!(tensor.shape(), shape, "{what}: shape");
    check_numbers(&values(tensor), &numbers(&expected["data"]), what);
}

/// Element-wise [`close`].
pub fn check_numbers(got: &[f64], expected: &[f64], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: {got:?} vs {expected:?}");
    for (g, e) in got.iter().zip(expected) {
        assert!(close(*g, *e), "{what}: got {got:?}, expected {expected:?}");
    }
}
