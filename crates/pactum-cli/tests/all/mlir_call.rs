//! `pactum call --mlir` and `pactum inspect` on libraries lowered from the MLIR test modules of
//! the `pactum` crate (`crates/pactum-mlir/tests/mlir`, built here with Debian's MLIR 22; without the
//! tools the tests fail, unless `PACTUM_SKIP_PEER=1`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pactum::Tensor;

fn built() -> Option<&'static Path> {
    table::built()
}

fn pactum(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run pactum")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-cli-mlir-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn call_with_a_declaration_writes_tensors_to_out() {
    let Some(built) = built() else { return };
    let dir = scratch("call");
    let library = built.join("libmemref_core.so");
    let library = library.to_str().unwrap();
    let input = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    pactum_npy::write_file(dir.join("m.npy"), &input).unwrap();

    // In place on an argument: the argument is saved after the call.
    let output = pactum(
        &[
            "call",
            library,
            "scale_2d",
            "--mlir",
            "func.func @scale_2d(%m: memref<?x?xf32>, %factor: f32) attributes {llvm.emit_c_interface}",
            "@m.npy",
            "-2.5",
            "--out",
            "out",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).starts_with("None\n"),
        "{}",
        text(&output.stdout)
    );
    let scaled = pactum_npy::read_file(dir.join("out/arg_0.npy")).unwrap();
    assert_eq!(
        scaled.to_vec::<f32>().unwrap(),
        [-2.5, -5.0, -7.5, -10.0, -12.5, -15.0]
    );

    // A returned allocation becomes result_0.npy.
    let output = pactum(
        &[
            "call",
            library,
            "alloc_2d",
            "--mlir=(index, index) -> memref<?x?xi32>",
            "3",
            "4",
            "--out=out",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("Tensor[int32, 3x4]"),
        "{}",
        text(&output.stdout)
    );
    let table = pactum_npy::read_file(dir.join("out/result_0.npy")).unwrap();
    assert_eq!(table.to_vec::<i32>().unwrap()[5], 101);

    // Several mixed scalar results.
    pactum_npy::write_file(
        dir.join("d.npy"),
        &Tensor::from_slice(&[0.5f64, 9.0], &[2]).unwrap(),
    )
    .unwrap();
    let output = pactum(
        &[
            "call",
            library,
            "mixed",
            "41",
            "21",
            "1.5",
            "2.25",
            "100",
            "@d.npy",
            "--mlir",
            "(i32, i64, f32, f64, index, memref<?xf64>) -> (f64, i64, f32, i32, index)",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "[2.75, 42, 4.5, 42, 102]");
}

#[test]
fn call_failures_explain_themselves() {
    let Some(built) = built() else { return };
    let dir = scratch("failures");
    let library = built.join("libmemref_core.so");
    let library = library.to_str().unwrap();
    let expect_failure = |args: &[&str], expected: &str| {
        let output = pactum(args, &dir);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(expected),
            "expected {expected:?} in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    // No declaration for an MLIR function.
    expect_failure(
        &["call", library, "divmod", "7", "2"],
        "--mlir 'func.func @divmod(",
    );
    // A declaration that does not parse.
    expect_failure(
        &[
            "call",
            library,
            "divmod",
            "--mlir",
            "(i64, i65) -> i64",
            "7",
            "2",
        ],
        "at byte 6",
    );
    // A value that does not fit.
    expect_failure(
        &[
            "call",
            library,
            "pair_i32",
            "--mlir",
            "(i32, i32) -> (i32, i32)",
            "4294967296",
            "1",
        ],
        "argument 0: 4294967296 does not fit i32",
    );
    // A declaration naming another function.
    expect_failure(
        &[
            "call",
            library,
            "divmod",
            "--mlir",
            "func.func @pair_i32(i32, i32) -> (i32, i32)",
        ],
        "the declaration is for @pair_i32, not @divmod",
    );
}

#[test]
fn inspect_lists_mlir_functions() {
    let Some(built) = built() else { return };
    let library = built.join("libmemref_core.so");
    let output = pactum(&["inspect", library.to_str().unwrap()], Path::new("."));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let listing = text(&output.stdout);
    assert!(listing.contains("MLIR library"), "{listing}");
    for name in ["@add_one", "@mixed", "@alloc_unranked"] {
        assert!(
            listing.lines().any(|l| l.trim() == name),
            "{name} missing:\n{listing}"
        );
    }
    // Functions without C wrappers are not listed (nothing marks them as MLIR functions).
    assert!(!listing.contains("@no_wrapper"), "{listing}");

    let output = pactum(
        &["inspect", "--json", library.to_str().unwrap()],
        Path::new("."),
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["kind"], "mlir-library");
    let names = report["mlir_c_interface_functions"].as_array().unwrap();
    assert!(names.iter().any(|n| n == "scale_strided"), "{names:?}");
}

#[path = "../../../pactum-mlir/tests/mlir/table.rs"]
mod table;

/// Splits `[a, b, c]` (or a single value) as `pactum call` prints results.
fn printed_results(line: &str) -> Vec<String> {
    let inner = line
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .unwrap_or(line);
    let mut items = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in inner.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        items.push(current.trim().to_owned());
    }
    items
}

#[test]
fn every_table_function_through_the_cli() {
    let Some(built) = built() else { return };
    for call in table::calls() {
        let what = format!("@{}", call.function);
        let dir = scratch(&call.function);
        let library = built.join(format!("lib{}.so", call.file));
        let declaration = table::declaration(&call.file, &call.function);
        let mut words: Vec<String> = vec![
            "call".into(),
            library.to_str().unwrap().into(),
            call.function.clone(),
            "--mlir".into(),
            declaration,
            "--out".into(),
            "out".into(),
        ];
        for (index, arg) in call.args.iter().enumerate() {
            words.push(match arg {
                serde_json::Value::Bool(b) => b.to_string(),
                v if table::is_tensor(v) => {
                    let file = format!("arg{index}.npy");
                    let tensor = table::tensor(v);
                    // NumPy has no bfloat16: the bits travel as uint16, viewed back by `:bfloat16`.
                    if tensor.dtype() == pactum::DataType::BF16 {
                        let bits = tensor.view_as(pactum::DataType::U16).unwrap();
                        pactum_npy::write_file(dir.join(&file), &bits).unwrap();
                        format!("@{file}:bfloat16")
                    } else {
                        pactum_npy::write_file(dir.join(&file), &tensor).unwrap();
                        format!("@{file}")
                    }
                }
                v => match v.as_i64() {
                    Some(i) => i.to_string(),
                    None => format!("{:?}", v.as_f64().unwrap()),
                },
            });
        }
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let output = pactum(&words, &dir);
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{what}: {}", text(&output.stderr));
        let first = stdout.lines().next().unwrap_or_default();
        if call.results.is_empty() {
            assert_eq!(first, "None", "{what}");
        } else {
            let printed = printed_results(first);
            assert_eq!(printed.len(), call.results.len(), "{what}: {first}");
            let mut tensor_index = 0;
            for (i, (text, expected)) in printed.iter().zip(&call.results).enumerate() {
                if table::is_tensor(expected) {
                    let file = dir.join(format!("out/result_{tensor_index}.npy"));
                    tensor_index += 1;
                    let tensor = pactum_npy::read_file(&file)
                        .unwrap_or_else(|e| panic!("{what}: {}: {e}", file.display()));
                    table::check_tensor(&tensor, expected, &format!("{what} result {i}"));
                } else {
                    let value: f64 = text.parse().unwrap_or_else(|_| panic!("{what}: {text:?}"));
                    let want = expected.as_f64().unwrap();
                    assert!(
                        table::close(value, want),
                        "{what} result {i}: {value} vs {want}"
                    );
                }
            }
        }
        for (index, expected) in &call.after {
            let mut tensor =
                pactum_npy::read_file(dir.join(format!("out/arg_{index}.npy"))).unwrap();
            if call.args[*index]["dtype"] == "bfloat16" {
                tensor = tensor.view_as(pactum::DataType::BF16).unwrap();
            }
            table::check_numbers(
                &table::values(&tensor),
                expected,
                &format!("{what} argument {index}"),
            );
        }
    }
}
