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

pub(crate) fn pactum(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(args)
        .current_dir(dir)
        .env("PACTUM_KERNELS_LIB", kernels())
        .output()
        .expect("run pactum")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub(crate) fn scratch(name: &str) -> PathBuf {
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
    pactum_npy::write_file(
        dir.join("x.npy"),
        &Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap(),
    )
    .unwrap();
    pactum_npy::write_file(
        dir.join("y.npy"),
        &Tensor::empty(&[3], DataType::F32).unwrap(),
    )
    .unwrap();
    pactum_npy::write_file(
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
    let y = pactum_npy::read_file(dir.join("out/arg_1.npy")).unwrap();
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
    let product = pactum_npy::read_file(dir.join("product/result_0.npy")).unwrap();
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
    pactum_npy::write_file(
        dir.join("f64.npy"),
        &Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap(),
    )
    .unwrap();
    pactum_npy::write_file(
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

fn vectors(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn sig_render_prints_iree_text_for_every_raw_and_sip_vector() {
    let dir = scratch("sig-render");
    let legacy = vectors("iree_legacy_signatures.json");
    let mut checked = 0;
    for case in legacy["raw_functions"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        let output = pactum(&["sig", "render", "--from", "raw", input], &dir);
        if let Some(expected) = case["to_string"].as_str() {
            assert!(output.status.success(), "{input}: {}", stderr(&output));
            assert_eq!(stdout(&output), format!("{expected}\n"), "{input}");
        } else {
            assert_clean_failure(&output, case["error"].as_str().unwrap());
        }
        checked += 1;
    }
    for case in legacy["sip"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        let (Some(inputs), Some(results)) = (
            case["inputs"]["to_string"].as_str(),
            case["results"]["to_string"].as_str(),
        ) else {
            assert_clean_failure(
                &pactum(&["sig", "render", "--from", "sip", input], &dir),
                "",
            );
            continue;
        };
        let output = pactum(&["sig", "render", "--from", "sip", input], &dir);
        assert!(output.status.success(), "{input}: {}", stderr(&output));
        assert_eq!(
            stdout(&output),
            format!("inputs:\n{inputs}results:\n{results}"),
            "{input}"
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} vectors");

    // Detection: the same texts without --from.
    let raw = "I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64";
    let output = pactum(&["sig", "render", raw], &dir);
    assert_eq!(
        stdout(&output),
        "(RefObject<?>, Buffer<float32[?x128x64]>, sint32) -> (Buffer<uint64[32x?x64]>)\n"
    );
    let output = pactum(&["sig", "render", "I12!S9!k0_0k1_1R3!_0"], &dir);
    assert_eq!(
        stdout(&output),
        "inputs:\n:[\n  0=raw(0),\n  1=raw(1),\n],\nresults:\n=raw(0),\n"
    );
}

#[test]
fn sig_cconv_gives_every_vector_its_calling_convention() {
    let dir = scratch("sig-cconv");
    let abi = vectors("iree_abi_json.json");
    for case in abi["vectors"].as_array().unwrap() {
        let json = case["iree_abi"].as_str().unwrap();
        let expected = case["implied_cconv"].as_str().unwrap();
        let output = pactum(&["sig", "cconv", json], &dir);
        assert!(output.status.success(), "{json}: {}", stderr(&output));
        assert_eq!(stdout(&output).trim(), expected, "{json}");
        let output = pactum(&["sig", "cconv", json, "--check", expected], &dir);
        assert!(output.status.success(), "{json}: {}", stderr(&output));
    }
    let json = r#"{"a":["i32",["ndarray","f32",2,null,3]],"r":["f32"],"v":1}"#;
    assert_clean_failure(
        &pactum(&["sig", "cconv", json, "--check", "0ii_f"], &dir),
        "argument 1: the signature implies 'r' (ndarray<f32, [?, 3]>), the calling convention has 'i'",
    );
}

#[test]
fn sig_convert_moves_a_signature_between_formats() {
    let dir = scratch("sig-convert");
    let run = |args: &[&str]| {
        let output = pactum(args, &dir);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        stdout(&output).trim().to_owned()
    };
    let raw = "I15!B11!d10d128d64R15!B11!t6d32d8d64";
    let json = run(&["sig", "convert", "--to", "iree-abi", raw]);
    assert_eq!(
        json,
        r#"{"a":[["ndarray","f32",3,10,128,64]],"r":[["ndarray","i32",3,32,8,64]],"v":1}"#
    );
    assert_eq!(
        run(&["sig", "convert", "--to", "raw", &json]),
        raw,
        "and back"
    );
    assert_eq!(
        run(&[
            "sig",
            "convert",
            "--to",
            "declaration",
            "--name",
            "f",
            &json
        ]),
        "sync func @f(%input0: tensor<10x128x64xf32>) -> (%output0: tensor<32x8x64xi32>)"
    );
    assert_eq!(run(&["sig", "convert", "--to", "cconv", raw]), "0r_r");
    let nested = r#"{"a":[["slist","i32",["sdict",["a","f32"]]],"i32"],"r":[["sdict",["x","i32"],["y","i32"]]],"v":1}"#;
    let sip = run(&["sig", "convert", "--to", "sip", nested]);
    assert_eq!(sip, "I30!S26!k0S16!k0_0k1D7!K2!a_1k1_2R17!D13!K2!x_0K2!y_1");
    assert_eq!(
        run(&["sig", "render", &sip]),
        ":[\n  0:[\n    0=raw(0),\n    1:{\n      a=raw(1),\n    },\n  ],\n  1=raw(2),\n],\n\
         results:\n:{\n  x=raw(0),\n  y=raw(1),\n},"
            .replacen(":[", "inputs:\n:[", 1)
    );
    assert_clean_failure(
        &pactum(&["sig", "convert", "--to", "raw", nested], &dir),
        "cannot express args[0] as a raw signature",
    );
}

#[test]
fn sig_explain_describes_each_format() {
    let dir = scratch("sig-explain");
    let json = r#"{"a":[["sdict",["bias",["ndarray","f32",1,4]],["n","i32"]],["named","scale",["ndarray","f32",1,4]]],"r":[["sdict",["out",["ndarray","f32",1,4]],["n_squared","i32"]]],"v":1}"#;
    let output = pactum(&["sig", "explain", json], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    for line in [
        "format: iree.abi JSON",
        "  0: dict{\"bias\": ndarray<f32, [4]>, \"n\": i32}",
        "  scale (keyword): ndarray<f32, [4]>",
        "the single structured result is returned as its slots, one VM result each",
        "calling convention: 0rr_ri",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
    let text = stdout(&pactum(&["sig", "explain", "0iCiID_I"], &dir));
    assert!(
        text.contains("arguments: i32, variadic (i32, i64)..."),
        "{text}"
    );
    let text = stdout(&pactum(&["sig", "explain", "I12!S9!k0_0k1_1R3!_0"], &dir));
    assert!(text.contains("  [1] = raw 1\n"), "{text}");
    let text = stdout(&pactum(
        &[
            "sig",
            "explain",
            "sync func @f(%x: tensor<?x3xf32>) -> (%y: i32)",
        ],
        &dir,
    ));
    assert!(
        text.contains("  x (keyword): ndarray<f32, [?, 3]>"),
        "{text}"
    );
}

#[test]
fn sig_bad_input_is_a_one_line_error_with_the_byte_offset() {
    let dir = scratch("sig-errors");
    assert_clean_failure(
        &pactum(
            &["sig", "explain", r#"{"a":[["ndarray","f32",2,4]],"r":[]}"#],
            &dir,
        ),
        "iree.abi JSON: at byte ",
    );
    assert_clean_failure(
        &pactum(&["sig", "explain", "0rZ_r"], &dir),
        "calling convention: at byte 2:",
    );
    assert_clean_failure(
        &pactum(
            &["sig", "explain", "sync func @f(%x: tensor<4xf32) -> ()"],
            &dir,
        ),
        "iree.abi.declaration: at byte ",
    );
    assert_clean_failure(
        &pactum(&["sig", "render", "I9!B6!t99R1!"], &dir),
        "at byte ",
    );
    assert_clean_failure(
        &pactum(&["sig", "render", "hello"], &dir),
        "cannot tell the format",
    );
    assert_clean_failure(
        &pactum(&["sig", "cconv", "0ii_i"], &dir),
        "a calling convention has only VM-level types",
    );
    assert_clean_failure(
        &pactum(&["sig", "render", r#"{"a":[],"r":[]}"#], &dir),
        "render prints IREE's rendering of raw and SIP signatures",
    );
}

pub(crate) fn vmfb_fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pactum-iree/tests/fixtures/vmfb")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn call_runs_vmfb_exports_in_pactums_vm() {
    let dir = scratch("vmfb");
    let module = vmfb_fixture("vm_direct.vmfb");
    // The same call made through the library: the CLI prints exactly those values.
    let expected = pactum_iree::module::IreeModule::load(&module)
        .unwrap()
        .call(
            "mix",
            &[
                pactum::AnyView::from(1i64),
                pactum::AnyView::from(2i64),
                pactum::AnyView::from(1.5f64),
                pactum::AnyView::from(0.25f64),
            ],
        )
        .unwrap()
        .cast::<pactum::Array>()
        .unwrap();
    let output = pactum(&["call", &module, "mix", "1", "2", "1.5", "0.25"], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = stdout(&output);
    let values: Vec<&str> = printed
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(", ")
        .collect();
    assert_eq!(values.len(), expected.len(), "{printed}");
    for (text, value) in values.iter().zip(expected.iter()) {
        match value.get::<i64>() {
            Ok(int) => assert_eq!(text.parse::<i64>().unwrap(), int, "{printed}"),
            Err(_) => assert_eq!(
                text.parse::<f64>().unwrap(),
                value.get::<f64>().unwrap(),
                "{printed}"
            ),
        }
    }
    // Wrong calls and failures inside the module are clear errors.
    let output = pactum(&["call", &module, "mix", "1"], &dir);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("vm_direct.mix takes 4 argument(s) (i32, i64, f32, f64), got 1"),
        "{}",
        stderr(&output)
    );
    let output = pactum(
        &[
            "call",
            &vmfb_fixture("vm_scalars.vmfb"),
            "checked_div",
            "7",
            "0",
        ],
        &dir,
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("INVALID_ARGUMENT"),
        "{}",
        stderr(&output)
    );
    let output = pactum(&["call", &module, "nope"], &dir);
    assert!(
        stderr(&output).contains("no export `nope`"),
        "{}",
        stderr(&output)
    );
}

/// The items of a printed result: one value, or `[a, b, ...]` split at the top level (tensor
/// descriptions hold `, ` inside their brackets).
fn printed_items(printed: &str, several: bool) -> Vec<String> {
    let printed = printed.trim();
    if !several {
        return vec![printed.to_owned()];
    }
    let inner = printed
        .strip_prefix('[')
        .and_then(|p| p.strip_suffix(']'))
        .unwrap_or_else(|| panic!("not a list: {printed}"));
    let (mut items, mut item, mut depth) = (Vec::new(), String::new(), 0);
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 && chars.peek() == Some(&' ') => {
                chars.next();
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items
}

#[test]
fn call_runs_llvm_cpu_vmfb_exports_on_both_devices_as_iree_run_module_does() {
    use pactum_testing::iree::{IreeTensor, IreeValue, manifest_runs};
    if !cfg!(target_arch = "x86_64") {
        return; // the llvm-cpu fixtures hold x86-64 code
    }
    let dir = scratch("llvm-cpu");
    let picks = [
        ("mlp_llvm_cpu.vmfb", "predict"),
        ("mlp_llvm_cpu.vmfb", "predict_dyn"),
        ("tensors_llvm_cpu.vmfb", "add_mat"),
        ("tensors_llvm_cpu.vmfb", "stats"),
        ("tensors_llvm_cpu.vmfb", "int_ops"),
        ("multi_export_llvm_cpu.vmfb", "add"),
        ("multi_export_llvm_cpu.vmfb", "mul_add"),
        ("multi_export_llvm_cpu.vmfb", "scale_dyn"),
    ];
    let runs = manifest_runs().unwrap();
    let mut checked = 0;
    for (file, function) in picks {
        let run = runs
            .iter()
            .find(|r| r.file == file && r.function == function && r.fails.is_none())
            .unwrap_or_else(|| panic!("no run of {file} @{function}"));
        let recorded = run.recorded().unwrap();
        let expected = recorded.expect_results();
        let module = vmfb_fixture(file);
        for device in ["local-task", "local-sync"] {
            let out = dir.join(format!("{function}-{device}"));
            let mut args = vec!["call", &module, function];
            args.extend(run.inputs.iter().map(String::as_str));
            let out_text = out.to_string_lossy().into_owned();
            args.extend(["--device", device, "--out", &out_text]);
            let output = pactum(&args, &dir);
            assert!(
                output.status.success(),
                "{run} on {device}: {}",
                stderr(&output)
            );
            let printed = stdout(&output);
            let items = printed_items(printed.lines().next().unwrap(), expected.len() > 1);
            assert_eq!(items.len(), expected.len(), "{run} on {device}: {printed}");
            let mut next_tensor = 0;
            for (item, value) in items.iter().zip(expected) {
                match value {
                    IreeValue::Tensor(tensor) => {
                        assert!(item.starts_with("Tensor["), "{run}: {item}");
                        let npy = out.join(format!("result_{next_tensor}.npy"));
                        next_tensor += 1;
                        let ours = pactum_npy::read_file(&npy).unwrap();
                        let view = pactum_iree::module::tensor_to_buffer_view(&ours).unwrap();
                        let ours = IreeTensor::parse(&view.format(1024)).unwrap();
                        assert_eq!(&ours, tensor, "{run} on {device}");
                    }
                    IreeValue::Scalar { ty, text } => {
                        let ours = if ty.starts_with('f') {
                            pactum_iree::hal::c_format_g(item.parse::<f64>().unwrap(), false)
                        } else {
                            item.parse::<i64>().unwrap().to_string()
                        };
                        assert_eq!(&ours, text, "{run} on {device}: {printed}");
                    }
                    other => panic!("{run}: unexpected {other:?}"),
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * picks.len());

    // Both devices spelled as options anywhere, `=` included; a bad device and --device for a
    // shared library are clear errors.
    let module = vmfb_fixture("multi_export_llvm_cpu.vmfb");
    let output = pactum(
        &["call", "--device=local-sync", &module, "add", "7", "35"],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "42");
    let output = pactum(
        &["call", &module, "add", "--device=local-task", "7", "35"],
        &dir,
    );
    assert_eq!(stdout(&output).trim(), "42", "{}", stderr(&output));
    assert_clean_failure(
        &pactum(
            &["call", &module, "add", "7", "35", "--device", "gpu"],
            &dir,
        ),
        "unknown device `gpu` (expected local-task, local-sync, vulkan or vulkan://N)",
    );
    let lib = kernels();
    assert_clean_failure(
        &pactum(
            &[
                "call",
                lib.to_str().unwrap(),
                "add_int",
                "1",
                "2",
                "--device",
                "local-sync",
            ],
            &dir,
        ),
        "--device is for .vmfb modules",
    );
}
