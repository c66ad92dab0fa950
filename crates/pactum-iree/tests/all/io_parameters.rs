//! IREE's `io_parameters` module in pactum (`pactum_iree::parameters::IoParametersModule`):
//! programs whose globals are named parameters (`#flow.parameter.named<"model"::"w">`),
//! compiled now with the pinned `iree-compile` for vmvx and llvm-cpu, run through pactum with
//! the parameters in an in-memory [`ParameterIndex`] and through IREE's Python runtime
//! (`tests/python/io_parameters_peer.py`: `iree.runtime.ParameterIndex` with the same bytes,
//! `create_io_parameters_module`) on the same inputs; results must agree bit for bit, and
//! failures in status and in what they name.
//!
//! Without the `.venv` python with `iree.runtime` and NumPy, or without `iree-compile`, the
//! tests fail unless `PACTUM_SKIP_PEER=1` (then they print that they skipped).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use pactum::{AnyView, Tensor};
use pactum_iree::hal::{
    BufferParams, HalBuffer, HalDevice, HalFence, HalSemaphore, LocalDevice, Workers,
};
use pactum_iree::module::IreeModule;
use pactum_iree::parameters::{
    IoParametersModule, ParameterEntry, ParameterIndex, ParameterProvider, ParameterStorage,
};
use pactum_iree::status::StatusCode;
use pactum_iree::vm::{NativeModule, Ref, Value, VmBuffer};
use pactum_testing::iree::compile_for_cpu;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `.venv` tools, or `None` (after saying so) when they are missing and
/// `PACTUM_SKIP_PEER=1`.
fn peer_tools(test: &str) -> Option<(PathBuf, PathBuf)> {
    let compile = pactum_testing::iree::tool_or_skip("iree-compile", test)?;
    let python = pactum_testing::iree::python_or_skip(&["iree.runtime", "numpy"], test)?;
    Some((compile, python))
}

/// One parameter as both runtimes are given it.
#[derive(Clone)]
enum Param {
    Data(&'static str, Vec<u8>),
    Splat(&'static str, Vec<u8>, u64),
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn index_of(params: &[Param]) -> ParameterIndex {
    let mut index = ParameterIndex::new();
    for param in params {
        let (key, storage) = match param {
            Param::Data(key, bytes) => (
                key,
                ParameterStorage::Data {
                    source: Arc::new(bytes.clone()),
                    offset: 0,
                    length: bytes.len(),
                },
            ),
            Param::Splat(key, pattern, length) => (
                key,
                ParameterStorage::Splat {
                    pattern: pattern.clone(),
                    length: *length,
                },
            ),
        };
        index.insert(ParameterEntry {
            key: (*key).to_owned(),
            metadata: Vec::new(),
            storage,
        });
    }
    index
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parameter scopes and their parameters.
type Scopes = Vec<(&'static str, Vec<Param>)>;

/// One parameter of a direct call: key, parameter offset, buffer offset, length.
type SpanSpec<'a> = (&'a str, u64, u64, u64);

/// A float32 tensor by shape and bit patterns: what both sides return.
type Bits = (Vec<i64>, Vec<u32>);

/// What a run gave: the results, or the failure's status name and message.
type Outcome = Result<Vec<Bits>, String>;

fn run_pactum(
    vmfb: &Path,
    function: &str,
    scopes: &[(&str, Vec<Param>)],
    inputs: &[(Vec<i64>, Vec<f32>)],
    workers: Workers,
) -> Outcome {
    let mut builder = IreeModule::builder().workers(workers);
    for (scope, params) in scopes {
        builder = builder.parameters(*scope, index_of(params));
    }
    let module = builder.load(vmfb).map_err(|e| e.to_string())?;
    let tensors: Vec<Tensor> = inputs
        .iter()
        .map(|(shape, values)| Tensor::from_slice(values, shape).unwrap())
        .collect();
    let args: Vec<AnyView<'_>> = tensors.iter().map(AnyView::from).collect();
    let result = module.call(function, &args).map_err(|e| e.to_string())?;
    let results: Vec<Tensor> = match result.clone().cast::<Tensor>() {
        Ok(tensor) => vec![tensor],
        Err(_) => {
            let array: pactum::Array = result.cast().map_err(|e| e.to_string())?;
            (0..array.len())
                .map(|k| array.get_as::<Tensor>(k).unwrap())
                .collect()
        }
    };
    Ok(results
        .iter()
        .map(|t| {
            let bits = t
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect();
            (t.shape().to_vec(), bits)
        })
        .collect())
}

/// The scopes as the peer script takes them.
fn peer_scopes(scopes: &[(&str, Vec<Param>)]) -> serde_json::Value {
    scopes
        .iter()
        .map(|(scope, params)| {
            let entries: Vec<serde_json::Value> = params
                .iter()
                .map(|p| match p {
                    Param::Data(key, bytes) => serde_json::json!({"key": key, "data": hex(bytes)}),
                    Param::Splat(key, pattern, length) => {
                        serde_json::json!({"key": key, "splat": hex(pattern), "length": length})
                    }
                })
                .collect();
            serde_json::json!([scope, entries])
        })
        .collect()
}

fn run_peer(
    python: &Path,
    vmfb: &Path,
    function: &str,
    scopes: &[(&str, Vec<Param>)],
    inputs: &[(Vec<i64>, Vec<f32>)],
    driver: &str,
) -> Outcome {
    run_peer_with(python, vmfb, function, peer_scopes(scopes), inputs, driver)
}

/// Runs the peer script with `spec` and returns what it printed.
fn peer_answer(python: &Path, spec: &serde_json::Value) -> serde_json::Value {
    let mut child = Command::new(python)
        .arg(repo_root().join("crates/pactum-iree/tests/python/io_parameters_peer.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the python peer");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(spec.to_string().as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "python peer: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("peer printed {:?}: {e}", output.stdout))
}

fn run_peer_with(
    python: &Path,
    vmfb: &Path,
    function: &str,
    scopes: serde_json::Value,
    inputs: &[(Vec<i64>, Vec<f32>)],
    driver: &str,
) -> Outcome {
    let inputs: Vec<serde_json::Value> = inputs
        .iter()
        .map(|(shape, values)| {
            let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
            serde_json::json!({"shape": shape, "bits": bits})
        })
        .collect();
    let spec = serde_json::json!({
        "module": vmfb, "driver": driver, "function": function,
        "scopes": scopes, "inputs": inputs,
    });
    let answer = peer_answer(python, &spec);
    if let Some(error) = answer.get("error") {
        return Err(error.as_str().unwrap().to_owned());
    }
    Ok(answer["ok"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let shape = r["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_i64().unwrap())
                .collect();
            let bits = r["bits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u32)
                .collect();
            (shape, bits)
        })
        .collect())
}

/// `x * w + b` and a second export reading three parameters of other shapes and types.
const AFFINE: &str = r#"
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<2x4xf32>
util.global private @b = #flow.parameter.named<"model"::"b"> : tensor<2x4xf32>
util.global private @m = #flow.parameter.named<"model"::"m"> : tensor<4x3xf32>
util.global private @bias = #flow.parameter.named<"extra"::"bias"> : tensor<3xf32>
func.func @affine(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = util.global.load @w : tensor<2x4xf32>
  %b = util.global.load @b : tensor<2x4xf32>
  %0 = arith.mulf %x, %w : tensor<2x4xf32>
  %1 = arith.addf %0, %b : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func @project(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %m = util.global.load @m : tensor<4x3xf32>
  %bias = util.global.load @bias : tensor<3xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = linalg.matmul ins(%x, %m : tensor<2x4xf32>, tensor<4x3xf32>) outs(%init : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %p, %bias : tensor<2x3xf32>, tensor<3xf32>
}
"#;

fn affine_params() -> Vec<(&'static str, Vec<Param>)> {
    vec![
        (
            "model",
            vec![
                Param::Data(
                    "w",
                    f32_bytes(&[1.5, -2.0, 3.25, 0.5, 0.0, 1.0, -0.75, 8.0]),
                ),
                Param::Splat("b", 0.25f32.to_le_bytes().to_vec(), 32),
                Param::Data(
                    "m",
                    f32_bytes(&[
                        0.1, 0.2, 0.3, -1.0, 2.5, 0.7, 3.0, -0.125, 1e-3, 4.0, 5.5, -6.25,
                    ]),
                ),
            ],
        ),
        (
            "extra",
            vec![Param::Splat("bias", vec![0x00, 0x00, 0x80, 0xbf], 12)],
        ),
    ]
}

fn x_input() -> Vec<(Vec<i64>, Vec<f32>)> {
    vec![(
        vec![2, 4],
        vec![1.0, 2.0, 3.0, 4.0, -1.5, 0.5, 7.0, 1.0 / 3.0],
    )]
}

#[test]
fn named_parameters_give_the_results_iree_runtime_gives() {
    let test = "named_parameters_give_the_results_iree_runtime_gives";
    let Some((iree_compile, python)) = peer_tools(test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("io-parameters-affine");
    let scopes = affine_params();
    let mut compared = 0;
    for backend in ["vmvx", "llvm-cpu"] {
        let vmfb = compile_for_cpu(&iree_compile, &dir, "affine", AFFINE, backend, &[]);
        for (function, workers, driver) in [
            ("affine", Workers::CallerThread, "local-sync"),
            ("project", Workers::shared(), "local-task"),
        ] {
            let ours = run_pactum(&vmfb, function, &scopes, &x_input(), workers);
            let theirs = run_peer(&python, &vmfb, function, &scopes, &x_input(), driver);
            let ours = ours.unwrap_or_else(|e| panic!("{backend} {function}: pactum: {e}"));
            let theirs = theirs.unwrap_or_else(|e| panic!("{backend} {function}: IREE: {e}"));
            assert_eq!(ours, theirs, "{backend} {function}");
            compared += 1;
        }
        // The values themselves: exact products and sums, whatever the backend fuses.
        let ours = run_pactum(&vmfb, "affine", &scopes, &x_input(), Workers::CallerThread).unwrap();
        let first: Vec<f32> = ours[0].1[..4].iter().map(|b| f32::from_bits(*b)).collect();
        assert_eq!(first, [1.75, -3.75, 10.0, 2.25], "{backend}");
        let ours =
            run_pactum(&vmfb, "project", &scopes, &x_input(), Workers::CallerThread).unwrap();
        assert_eq!(
            ours[1],
            (vec![3], vec![(-1.0f32).to_bits(); 3]),
            "{backend}"
        );
    }
    assert_eq!(compared, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The status name a failure message starts with or contains (`NOT_FOUND`, ...).
fn status_of(message: &str) -> &'static str {
    [
        "NOT_FOUND",
        "OUT_OF_RANGE",
        "PERMISSION_DENIED",
        "INVALID_ARGUMENT",
    ]
    .into_iter()
    .find(|status| message.contains(status))
    .unwrap_or("(none)")
}

#[test]
fn missing_scopes_keys_and_short_parameters_fail_as_in_iree_naming_them() {
    let test = "missing_scopes_keys_and_short_parameters_fail_as_in_iree_naming_them";
    let Some((iree_compile, python)) = peer_tools(test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("io-parameters-errors");
    let vmfb = compile_for_cpu(&iree_compile, &dir, "affine", AFFINE, "vmvx", &[]);
    let full = affine_params();
    let without = |key: &str| -> Vec<(&'static str, Vec<Param>)> {
        full.iter()
            .map(|(scope, params)| {
                let kept = params
                    .iter()
                    .filter(
                        |p| !matches!(p, Param::Data(k, _) | Param::Splat(k, _, _) if *k == key),
                    )
                    .cloned()
                    .collect();
                (*scope, kept)
            })
            .collect()
    };
    let mut short = full.clone();
    short[0].1[0] = Param::Data("w", f32_bytes(&[1.0, 2.0]));
    let cases: Vec<(&str, Scopes, &str, &[&str])> = vec![
        (
            "no parameters",
            Vec::new(),
            "NOT_FOUND",
            &["scope \"model\""],
        ),
        (
            "another scope only",
            vec![full[1].clone()],
            "NOT_FOUND",
            &["scope \"model\"", "\"extra\""],
        ),
        (
            "key w missing",
            without("w"),
            "NOT_FOUND",
            &["parameter \"w\" not found in scope \"model\""],
        ),
        (
            "w shorter than its tensor",
            short,
            "OUT_OF_RANGE",
            &[
                "parameter \"w\" in scope \"model\"",
                "offset=0, length=32, size=8",
            ],
        ),
    ];
    for (what, scopes, status, names) in cases {
        let ours = run_pactum(&vmfb, "affine", &scopes, &x_input(), Workers::CallerThread)
            .expect_err(what);
        let theirs =
            run_peer(&python, &vmfb, "affine", &scopes, &x_input(), "local-sync").expect_err(what);
        assert_eq!(status_of(&theirs), status, "{what}: IREE said {theirs}");
        assert_eq!(status_of(&ours), status, "{what}: pactum said {ours}");
        for name in names {
            assert!(ours.contains(name), "{what}: {ours:?} does not name {name}");
        }
        // Both fail while the module's initializer loads its parameters: before any call.
        assert!(theirs.contains("creating vm context"), "{what}: {theirs}");
        assert!(ours.contains(&vmfb.display().to_string()), "{what}: {ours}");
    }
    // iree-run-module without --parameters fails the same way.
    let output = pactum_testing::iree::run_command(&vmfb, "affine", &["2x4xf32=1"], None)
        .unwrap()
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("NOT_FOUND") && stderr.contains("'model'"),
        "{stderr}"
    );
    // Archives on disk that lack `w`: pactum reading them and iree-run-module fail alike.
    let write = |name: &str, params: &[Param]| {
        let path = dir.join(name);
        index_of(params).write_irpa_file(&path).unwrap();
        path
    };
    let scopes = without("w");
    let model = write("model.irpa", &scopes[0].1);
    let extra = write("extra.irpa", &scopes[1].1);
    let ours = IreeModule::builder()
        .parameters("model", ParameterIndex::open(&model).unwrap())
        .parameters("extra", ParameterIndex::open(&extra).unwrap())
        .load(&vmfb)
        .unwrap_err()
        .to_string();
    assert!(
        ours.contains("NOT_FOUND") && ours.contains("parameter \"w\" not found in scope \"model\""),
        "{ours}"
    );
    let theirs = run_iree_run_module(
        &vmfb,
        "affine",
        &[("model", &model), ("extra", &extra)],
        &x_input()[0],
        &dir,
    )
    .unwrap_err();
    assert!(
        theirs.contains("NOT_FOUND") && theirs.contains("key 'w'"),
        "{theirs}"
    );
    // With `w` in the archive, the same files run.
    let model = write("model.irpa", &full[0].1);
    let ours = run_pactum(&vmfb, "affine", &full, &x_input(), Workers::CallerThread).unwrap();
    let theirs = run_iree_run_module(
        &vmfb,
        "affine",
        &[("model", &model), ("extra", &extra)],
        &x_input()[0],
        &dir,
    )
    .unwrap();
    assert_eq!(ours, vec![theirs]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A two-layer MLP whose weights are constant globals (`iree-opt`'s export pass turns them
/// into parameters). The pass runs before compiling, not as `iree-compile
/// --iree-parameter-export`: with 3.13 that flag leaves private globals inlined (no archive
/// entries), and for public ones it writes the archive but the program it compiles computes the
/// same results with a splat archive of zeros (seen with iree-run-module, const-eval on or
/// off), so only the pass's output makes a program whose results depend on the archive. Weights and inputs are multiples of 1/8 and 1/4, small enough that every
/// sum is exact: any order of summation gives the same bits.
fn mlp_source() -> String {
    let dense = |rows: usize, cols: usize, seed: usize| {
        let value = |k: usize| ((k * 7 + seed) % 17) as f32 / 8.0 - 1.0;
        let rows: Vec<String> = (0..rows)
            .map(|r| {
                let row: Vec<String> = (0..cols)
                    .map(|c| format!("{:?}", value(r * cols + c)))
                    .collect();
                format!("[{}]", row.join(", "))
            })
            .collect();
        format!("dense<[{}]>", rows.join(", "))
    };
    let vector = |n: usize, seed: usize| {
        let row: Vec<String> = (0..n)
            .map(|k| format!("{:?}", ((k * 5 + seed) % 9) as f32 / 4.0 - 1.0))
            .collect();
        format!("dense<[{}]>", row.join(", "))
    };
    format!(
        r#"
util.global private @w1 = {w1} : tensor<8x16xf32>
util.global private @b1 = {b1} : tensor<16xf32>
util.global private @w2 = {w2} : tensor<16x4xf32>
util.global private @b2 = {b2} : tensor<4xf32>
#bias = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>]
func.func @mlp(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {{
  %w1 = util.global.load @w1 : tensor<8x16xf32>
  %b1 = util.global.load @b1 : tensor<16xf32>
  %w2 = util.global.load @w2 : tensor<16x4xf32>
  %b2 = util.global.load @b2 : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x16xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x16xf32>) -> tensor<2x16xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<2x8xf32>, tensor<8x16xf32>) outs(%i1 : tensor<2x16xf32>) -> tensor<2x16xf32>
  %h = linalg.generic {{indexing_maps = #bias, iterator_types = ["parallel", "parallel"]}} ins(%m1, %b1 : tensor<2x16xf32>, tensor<16xf32>) outs(%e1 : tensor<2x16xf32>) {{
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }} -> tensor<2x16xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m2 = linalg.matmul ins(%h, %w2 : tensor<2x16xf32>, tensor<16x4xf32>) outs(%i2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = linalg.generic {{indexing_maps = #bias, iterator_types = ["parallel", "parallel"]}} ins(%m2, %b2 : tensor<2x4xf32>, tensor<4xf32>) outs(%e2 : tensor<2x4xf32>) {{
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }} -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}}
"#,
        w1 = dense(8, 16, 3),
        b1 = vector(16, 1),
        w2 = dense(16, 4, 11),
        b2 = vector(4, 2),
    )
}

/// Runs `iree-opt` (the pinned compiler's pass) with `pipeline` on `input`, writing `output`.
fn iree_opt(iree_compile: &Path, pipeline: &str, input: &Path, output: &Path) {
    let iree_opt = iree_compile.with_file_name("iree-opt");
    let result = Command::new(&iree_opt)
        .arg(format!("--pass-pipeline={pipeline}"))
        .arg(input)
        .arg("-o")
        .arg(output)
        .output()
        .expect("start iree-opt");
    assert!(
        result.status.success(),
        "iree-opt {pipeline}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// An archive's entries as IREE reads them, for pactum's in-memory index.
fn archive_entries(python: &Path, archive: &Path) -> Vec<Param> {
    let answer = peer_answer(python, &serde_json::json!({ "dump": archive }));
    let bytes = |text: &str| -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|k| u8::from_str_radix(&text[k..k + 2], 16).unwrap())
            .collect()
    };
    answer["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let key: &'static str =
                Box::leak(e["key"].as_str().unwrap().to_owned().into_boxed_str());
            match e.get("data") {
                Some(data) => Param::Data(key, bytes(data.as_str().unwrap())),
                None => Param::Splat(
                    key,
                    bytes(e["splat"].as_str().unwrap()),
                    e["length"].as_u64().unwrap(),
                ),
            }
        })
        .collect()
}

/// Runs `function` of `vmfb` in `iree-run-module` with `--parameters=` for each archive and
/// one float32 input, returning the result read back from the `.npy` it writes (float32
/// results by bit pattern), or its stderr when it fails.
fn run_iree_run_module(
    vmfb: &Path,
    function: &str,
    archives: &[(&str, &Path)],
    input: &(Vec<i64>, Vec<f32>),
    out_dir: &Path,
) -> Result<Bits, String> {
    let dims: Vec<String> = input.0.iter().map(|d| d.to_string()).collect();
    let values: Vec<String> = input.1.iter().map(|v| format!("{v:?}")).collect();
    let npy = out_dir.join(format!("{function}-out.npy"));
    let _ = std::fs::remove_file(&npy);
    let mut command = Command::new(pactum_testing::iree::tool("iree-run-module").unwrap());
    command
        .arg("--device=local-task")
        .arg(format!("--module={}", vmfb.display()))
        .arg(format!("--function={function}"))
        .arg(format!(
            "--input={}xf32={}",
            dims.join("x"),
            values.join(" ")
        ))
        .arg(format!("--output=@{}", npy.display()));
    for (scope, archive) in archives {
        // A bare `--parameters=FILE` is the unnamed scope.
        command.arg(match scope {
            &"" => format!("--parameters={}", archive.display()),
            scope => format!("--parameters={scope}={}", archive.display()),
        });
    }
    let output = command.output().expect("start iree-run-module");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let bytes = std::fs::read(&npy).unwrap();
    // NumPy format 1.0: magic, version, u16 header length, the header (a dict), the data.
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + header_len]).into_owned();
    assert!(header.contains("'descr': '<f4'"), "{header}");
    let shape_text = &header[header.find("'shape': (").unwrap() + 10..];
    let shape: Vec<i64> = shape_text[..shape_text.find(')').unwrap()]
        .split(',')
        .filter(|d| !d.trim().is_empty())
        .map(|d| d.trim().parse().unwrap())
        .collect();
    let bits = bytes[10 + header_len..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((shape, bits))
}

/// Writes `params` (data entries) as a `.safetensors` file whose data starts at an odd byte
/// (the header padded with spaces), so no tensor in it is aligned.
fn write_safetensors(path: &Path, params: &[Param]) {
    let mut entries = Vec::new();
    let mut data = Vec::new();
    for param in params {
        let Param::Data(key, bytes) = param else {
            panic!("safetensors holds data entries only");
        };
        let start = data.len();
        data.extend_from_slice(bytes);
        entries.push(format!(
            "\"{key}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{start},{}]}}",
            bytes.len() / 4,
            data.len()
        ));
    }
    let mut header = format!("{{{}}}", entries.join(","));
    while (8 + header.len()) % 64 != 3 {
        header.push(' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    std::fs::write(path, file).unwrap();
}

/// Asserts that `mlp` of `vmfb`, its `model` parameters read from the archive `file` by
/// pactum's reader, gives `expected` for input `x`, and so does iree-run-module reading the
/// same file.
fn assert_file_reads_give(
    vmfb: &Path,
    file: &Path,
    x: &Tensor,
    expected: &[Bits],
    dir: &Path,
    what: &str,
) {
    let index = ParameterIndex::open(file).unwrap_or_else(|e| panic!("{what}: {e}"));
    let module = IreeModule::builder()
        .parameters("model", index)
        .load(vmfb)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let result: Tensor = module.function("mlp").unwrap().call_typed((x,)).unwrap();
    let bits: Vec<u32> = result
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(vec![(result.shape().to_vec(), bits)], expected, "{what}");
    let tool = run_iree_run_module(vmfb, "mlp", &[("model", file)], &mlp_input()[0], dir)
        .unwrap_or_else(|e| panic!("{what}: iree-run-module: {e}"));
    assert_eq!(vec![tool], expected, "{what}: iree-run-module");
}

fn mlp_input() -> Vec<(Vec<i64>, Vec<f32>)> {
    let x: Vec<f32> = (0..16)
        .map(|k| ((k * 3) % 11) as f32 / 4.0 - 1.25)
        .collect();
    vec![(vec![2, 8], x)]
}

#[test]
fn weights_the_compiler_exported_give_the_results_of_the_inline_model_and_of_iree() {
    let test = "weights_the_compiler_exported_give_the_results_of_the_inline_model_and_of_iree";
    let Some((iree_compile, python)) = peer_tools(test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("io-parameters-exported");
    let inline = dir.join("mlp.mlir");
    std::fs::write(&inline, mlp_source()).unwrap();
    let archive = dir.join("mlp.irpa");
    let parameterized = dir.join("mlp_params.mlir");
    iree_opt(
        &iree_compile,
        &format!(
            "builtin.module(iree-io-export-parameters{{path=model={} minimum-size=0}})",
            archive.display()
        ),
        &inline,
        &parameterized,
    );
    let splats = dir.join("mlp_splats.irpa");
    iree_opt(
        &iree_compile,
        &format!(
            "builtin.module(iree-io-generate-splat-parameter-archive{{file={}}})",
            splats.display()
        ),
        &parameterized,
        &dir.join("mlp_params_again.mlir"),
    );
    let exported = archive_entries(&python, &archive);
    let keys: Vec<&str> = exported
        .iter()
        .map(|p| match p {
            Param::Data(k, _) | Param::Splat(k, _, _) => *k,
        })
        .collect();
    assert_eq!(keys, ["w1", "b1", "w2", "b2"]);
    assert!(exported.iter().all(|p| matches!(p, Param::Data(..))));
    let splatted = archive_entries(&python, &splats);
    assert!(splatted.iter().all(|p| matches!(p, Param::Splat(..))));
    assert_eq!(splatted.len(), 4);

    let params_source = std::fs::read_to_string(&parameterized).unwrap();
    let mut compared = 0;
    for backend in ["vmvx", "llvm-cpu"] {
        let with_weights = compile_for_cpu(&iree_compile, &dir, "mlp", &mlp_source(), backend, &[]);
        let with_parameters = compile_for_cpu(
            &iree_compile,
            &dir,
            "mlp_params",
            &params_source,
            backend,
            &[],
        );
        let inline_result = run_pactum(&with_weights, "mlp", &[], &mlp_input(), Workers::shared())
            .unwrap_or_else(|e| panic!("{backend}: inline weights: {e}"));
        for (what, entries, file) in [
            ("exported", exported.clone(), &archive),
            ("splats", splatted.clone(), &splats),
        ] {
            let scopes = vec![("model", entries)];
            let ours = run_pactum(
                &with_parameters,
                "mlp",
                &scopes,
                &mlp_input(),
                Workers::shared(),
            )
            .unwrap_or_else(|e| panic!("{backend} {what}: pactum: {e}"));
            let theirs = run_peer_with(
                &python,
                &with_parameters,
                "mlp",
                serde_json::json!([["model", [{ "archive": file }]]]),
                &mlp_input(),
                "local-task",
            )
            .unwrap_or_else(|e| panic!("{backend} {what}: IREE: {e}"));
            assert_eq!(ours, theirs, "{backend} {what}");
            // The archive file itself, memory-mapped by pactum's reader, against
            // iree-run-module reading the same file.
            let x = Tensor::from_slice(&mlp_input()[0].1, &mlp_input()[0].0).unwrap();
            assert_file_reads_give(
                &with_parameters,
                file,
                &x,
                &ours,
                &dir,
                &format!("{backend} {what}"),
            );
            if what == "exported" {
                // The same weights in a .safetensors file, none of them aligned: pactum's
                // reader and iree-run-module's give the same results again.
                let safetensors = dir.join(format!("mlp-{backend}.safetensors"));
                write_safetensors(&safetensors, &exported);
                assert_file_reads_give(
                    &with_parameters,
                    &safetensors,
                    &x,
                    &ours,
                    &dir,
                    &format!("{backend} safetensors"),
                );
            }
            compared += 1;
            if what == "exported" {
                assert_eq!(ours, inline_result, "{backend}: exported vs inline weights");
            } else {
                // Zero weights and biases: every output is zero.
                assert_eq!(ours, vec![(vec![2, 4], vec![0u32; 8])], "{backend} splats");
            }
        }
    }
    assert_eq!(compared, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_unnamed_scope_is_what_a_bare_parameters_flag_names() {
    let test = "the_unnamed_scope_is_what_a_bare_parameters_flag_names";
    let Some((iree_compile, _)) = peer_tools(test) else {
        return;
    };
    let dir = pactum_testing::hostile::scratch("io-parameters-unnamed");
    let source = r#"
util.global private @w = #flow.parameter.named<"w"> : tensor<4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4xf32>
  %0 = arith.mulf %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"#;
    let vmfb = compile_for_cpu(&iree_compile, &dir, "unnamed", source, "llvm-cpu", &[]);
    // The archive is IREE's own (iree-create-parameters), a splat entry.
    let archive = dir.join("unnamed.irpa");
    let created = Command::new(pactum_testing::iree::tool("iree-create-parameters").unwrap())
        .arg("--splat=w=4xf32=2.5")
        .arg(format!("--output={}", archive.display()))
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let input = (vec![4], vec![1.0f32, 2.0, 3.0, 4.0]);
    let module = IreeModule::builder()
        .parameters("", ParameterIndex::open(&archive).unwrap())
        .load(&vmfb)
        .unwrap();
    let x = Tensor::from_slice(&input.1, &input.0).unwrap();
    let ours: Tensor = module.function("f").unwrap().call_typed((&x,)).unwrap();
    assert_eq!(ours.to_vec::<f32>().unwrap(), [2.5, 5.0, 7.5, 10.0]);
    assert_eq!(module.context_modules(), ["hal", "io_parameters", "module"]);
    let bits: Vec<u32> = ours
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let theirs = run_iree_run_module(&vmfb, "f", &[("", &archive)], &input, &dir).unwrap();
    assert_eq!(theirs, (vec![4], bits));
    // The same archive under a named scope leaves the unnamed one empty, in both.
    let ours = IreeModule::builder()
        .parameters("model", ParameterIndex::open(&archive).unwrap())
        .load(&vmfb)
        .unwrap_err()
        .to_string();
    assert!(
        ours.contains("NOT_FOUND")
            && ours.contains("no parameters registered for scope \"\" (scopes: \"model\")"),
        "{ours}"
    );
    let theirs = run_iree_run_module(&vmfb, "f", &[("model", &archive)], &input, &dir).unwrap_err();
    assert!(
        theirs.contains("NOT_FOUND") && theirs.contains("scopes like ''"),
        "{theirs}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ the functions, directly

/// The module's function indexes, in IREE's export order.
const LOAD: usize = 0;
const GATHER: usize = 1;
const SCATTER: usize = 2;

fn text(bytes: &[u8]) -> Value {
    Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))))
}

fn object<T: pactum_iree::vm::RefObject + 'static>(object: T) -> Value {
    Value::Ref(Some(Ref::Object(Arc::new(object))))
}

/// The key table, key data and span buffers of a call: (key, parameter offset, buffer
/// offset, length) per parameter.
fn span_args(spans: &[(&str, u64, u64, u64)]) -> [Value; 3] {
    let (mut table, mut data, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    for (key, parameter_offset, buffer_offset, length) in spans {
        table.extend((data.len() as u32).to_le_bytes());
        table.extend((key.len() as u32).to_le_bytes());
        data.extend(key.as_bytes());
        for v in [parameter_offset, buffer_offset, length] {
            bytes.extend(v.to_le_bytes());
        }
    }
    [text(&table), text(&data), text(&bytes)]
}

/// The module over scope `model` with a data entry `d` (bytes 0..40) and splats `s4` (a
/// 4-byte pattern) and `s16` (a 16-byte pattern, which no HAL fill takes), and a device.
fn direct_setup() -> (IoParametersModule, Arc<dyn HalDevice>) {
    let mut index = ParameterIndex::new();
    let source: Vec<u8> = (0..48).collect();
    index.insert(ParameterEntry {
        key: "d".into(),
        metadata: Vec::new(),
        // The entry is bytes 8..48 of a larger buffer: offsets count from the entry.
        storage: ParameterStorage::Data {
            source: Arc::new(source),
            offset: 8,
            length: 40,
        },
    });
    index.insert(ParameterEntry {
        key: "s4".into(),
        metadata: Vec::new(),
        storage: ParameterStorage::Splat {
            pattern: vec![1, 2, 3, 4],
            length: 64,
        },
    });
    index.insert(ParameterEntry {
        key: "s16".into(),
        metadata: Vec::new(),
        storage: ParameterStorage::Splat {
            pattern: (100..116).collect(),
            length: 64,
        },
    });
    let mut provider = ParameterProvider::new();
    provider.add("model", index);
    let device: Arc<dyn HalDevice> = Arc::new(LocalDevice::new(Workers::CallerThread));
    (IoParametersModule::new(provider), device)
}

fn call_args(
    device: &Arc<dyn HalDevice>,
    wait: Option<HalFence>,
    signal: Option<HalFence>,
    middle: Vec<Value>,
    spans: &[(&str, u64, u64, u64)],
) -> Vec<Value> {
    let fence = |f: Option<HalFence>| f.map_or(Value::Ref(None), object);
    let mut args = vec![
        object(device.clone()),
        Value::I64(-1),
        fence(wait),
        fence(signal),
    ];
    args.extend(middle);
    args.extend(span_args(spans));
    args
}

#[test]
fn gather_copies_data_and_fills_splats_at_their_offsets_and_signals_its_fence() {
    let (module, device) = direct_setup();
    assert_eq!(module.version(), 0);
    let calling: Vec<(&str, &str)> = module
        .functions()
        .iter()
        .map(|f| (f.name.as_ref(), f.cconv.as_ref()))
        .collect();
    assert_eq!(
        calling,
        [
            ("load", "0rIrrrIiirrr_r"),
            ("gather", "0rIrrrrrrr_v"),
            ("scatter", "0rIrrrrrrr_v"),
        ]
    );
    module.check_signatures().unwrap();
    let target = device
        .allocator()
        .allocate(BufferParams::default(), 64)
        .unwrap();
    let signal_semaphore = HalSemaphore::new(0);
    let args = call_args(
        &device,
        None,
        Some(HalFence::at(signal_semaphore.clone(), 1)),
        vec![text(b"model"), object(target.clone())],
        &[
            ("d", 4, 0, 8),      // entry bytes 4..12: source bytes 12..20
            ("s4", 1, 8, 8),     // a splat read from inside its pattern: 2 3 4 1 ...
            ("s16", 18, 16, 20), // 16-byte pattern from byte 2 of it, 20 bytes
        ],
    );
    assert!(module.call(GATHER, &args).unwrap().is_empty());
    assert_eq!(signal_semaphore.value().unwrap(), 1);
    let bytes = target.to_vec();
    assert_eq!(&bytes[..8], &[12, 13, 14, 15, 16, 17, 18, 19]);
    assert_eq!(&bytes[8..16], &[2, 3, 4, 1, 2, 3, 4, 1]);
    let expected: Vec<u8> = (102..116).chain(100..106).collect();
    assert_eq!(&bytes[16..36], &expected[..]);
}

#[test]
fn load_makes_one_buffer_per_parameter_after_the_wait_fence() {
    let (module, device) = direct_setup();
    let wait_semaphore = HalSemaphore::new(0);
    let signal_semaphore = HalSemaphore::new(0);
    // The wait fence is reached from another thread a little later: the buffers are filled
    // after it, and the signal fence is reached when the call returns (the local device
    // completes its queue operations before it returns).
    let waker = {
        let wait_semaphore = wait_semaphore.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            wait_semaphore.signal(1).unwrap();
        })
    };
    let args = call_args(
        &device,
        Some(HalFence::at(wait_semaphore.clone(), 1)),
        Some(HalFence::at(signal_semaphore.clone(), 7)),
        vec![text(b"model"), Value::I64(-1), Value::I32(0), Value::I32(0)],
        &[("s16", 0, 0, 32), ("d", 0, 0, 40)],
    );
    let results = module.call(LOAD, &args).unwrap();
    waker.join().unwrap();
    assert_eq!(wait_semaphore.value().unwrap(), 1);
    assert_eq!(signal_semaphore.value().unwrap(), 7);
    let [Value::Ref(Some(Ref::List(list)))] = &results[..] else {
        panic!("load returned {results:?}");
    };
    assert_eq!(list.len(), 2);
    let buffer = |k: u32| -> Vec<u8> {
        let Some(Value::Ref(Some(r))) = list.get(k) else {
            panic!("element {k}");
        };
        r.downcast_ref::<HalBuffer>().unwrap().to_vec()
    };
    let splat: Vec<u8> = (100..116).chain(100..116).collect();
    assert_eq!(buffer(0), splat);
    assert_eq!(buffer(1), (8..48).collect::<Vec<u8>>());
}

/// The error of function `function` of `module` called with `args`, asserting that the call
/// fails with `status`.
fn call_error(
    module: &dyn NativeModule,
    function: usize,
    args: &[Value],
    status: StatusCode,
) -> pactum_iree::vm::NativeError {
    let error = module.call(function, args).unwrap_err();
    assert_eq!(error.status, status, "{error}");
    error
}

#[test]
fn bad_calls_are_errors_naming_scope_and_key_that_fail_the_signal_fence() {
    let (module, device) = direct_setup();
    let target = device
        .allocator()
        .allocate(BufferParams::default(), 16)
        .unwrap();
    let gather = |scope: &[u8], spans: &[(&str, u64, u64, u64)]| {
        let semaphore = HalSemaphore::new(0);
        let args = call_args(
            &device,
            None,
            Some(HalFence::at(semaphore.clone(), 1)),
            vec![text(scope), object(target.clone())],
            spans,
        );
        let error = module.call(GATHER, &args).unwrap_err();
        // The failure reaches whoever waits on the signal fence.
        let failure = semaphore.value().unwrap_err();
        assert_eq!(failure, error);
        error
    };
    let cases: Vec<(Vec<u8>, Vec<SpanSpec<'_>>, StatusCode, &str)> = vec![
        (
            b"weights".to_vec(),
            vec![("d", 0, 0, 4)],
            StatusCode::NotFound,
            "no parameters registered for scope \"weights\" (scopes: \"model\")",
        ),
        (
            b"model".to_vec(),
            vec![("d", 0, 0, 4), ("nope", 0, 4, 4)],
            StatusCode::NotFound,
            "parameter \"nope\" not found in scope \"model\"",
        ),
        (
            b"model".to_vec(),
            vec![("d", 36, 0, 8)],
            StatusCode::OutOfRange,
            "parameter \"d\" in scope \"model\": range out of bounds (offset=36, length=8, size=40)",
        ),
        (
            b"model".to_vec(),
            vec![("d", u64::MAX, 0, 2)],
            StatusCode::OutOfRange,
            "parameter \"d\" in scope \"model\": range out of bounds",
        ),
        (
            b"model".to_vec(),
            vec![("d", 0, 12, 8)],
            StatusCode::OutOfRange,
            "parameter \"d\" in scope \"model\": ",
        ),
        (
            b"model".to_vec(),
            vec![("s4", 0, 0, 6)],
            StatusCode::InvalidArgument,
            "parameter \"s4\" in scope \"model\": ",
        ),
    ];
    for (scope, spans, status, message) in cases {
        let error = gather(&scope, &spans);
        assert_eq!(error.status, status, "{error}");
        assert!(error.message.starts_with(message), "{error}");
    }

    // Malformed descriptions of the parameters.
    let mut args = call_args(
        &device,
        None,
        None,
        vec![text(b"model"), object(target.clone())],
        &[("d", 0, 0, 4)],
    );
    args[8] = text(&[0; 23]);
    let error = call_error(&module, GATHER, &args, StatusCode::InvalidArgument);
    assert!(error.message.contains("24-byte spans"), "{error}");
    let mut args = call_args(
        &device,
        None,
        None,
        vec![text(b"model"), object(target.clone())],
        &[("d", 0, 0, 4)],
    );
    args[6] = text(&[0, 0, 0, 0, 9, 0, 0, 0]);
    let error = call_error(&module, GATHER, &args, StatusCode::OutOfRange);
    assert!(
        error.message.contains("key 0 (offset=0, length=9)"),
        "{error}"
    );

    // Parameters are read-only: scatter refuses, naming the parameter.
    let args = call_args(
        &device,
        None,
        None,
        vec![object(target.clone()), text(b"model")],
        &[("d", 0, 0, 4)],
    );
    let error = call_error(&module, SCATTER, &args, StatusCode::PermissionDenied);
    assert!(
        error
            .message
            .starts_with("parameter \"d\" in scope \"model\" is read-only"),
        "{error}"
    );
}

#[test]
fn a_wait_fence_never_reached_is_an_error_after_the_wait_limit() {
    let (unbounded, device) = direct_setup();
    let module = IoParametersModule::with_wait_limit(
        Arc::new(unbounded.provider().clone()),
        Some(std::time::Duration::from_millis(30)),
    );
    let target = device
        .allocator()
        .allocate(BufferParams::default(), 16)
        .unwrap();
    let never = HalSemaphore::new(0);
    let signal = HalSemaphore::new(0);
    let args = call_args(
        &device,
        Some(HalFence::at(never, 1)),
        Some(HalFence::at(signal.clone(), 1)),
        vec![text(b"model"), object(target)],
        &[("d", 0, 0, 4)],
    );
    let error = call_error(&module, GATHER, &args, StatusCode::DeadlineExceeded);
    assert!(
        error
            .message
            .starts_with("parameter \"d\" in scope \"model\": "),
        "{error}"
    );
    assert_eq!(signal.value().unwrap_err(), error);
}

#[test]
fn large_parameters_arrive_whole_and_a_bad_range_moves_no_byte() {
    // More than two of the device's read pieces, not a multiple of one.
    let length = 2 * pactum_iree::hal::READ_CHUNK + 4099;
    let source: Vec<u8> = (0..length + 16).map(|k| (k % 251) as u8).collect();
    let mut index = ParameterIndex::new();
    index.insert(ParameterEntry {
        key: "big".into(),
        metadata: Vec::new(),
        storage: ParameterStorage::Data {
            source: Arc::new(source.clone()),
            offset: 16,
            length,
        },
    });
    let mut provider = ParameterProvider::new();
    provider.add("model", index);
    let module = IoParametersModule::new(provider);
    let device: Arc<dyn HalDevice> = Arc::new(LocalDevice::new(Workers::CallerThread));
    let target = device
        .allocator()
        .allocate(BufferParams::default(), length as i64 + 64)
        .unwrap();
    target.fill(0, length as i64 + 64, 0xee, 1).unwrap();
    let read = (length - 7) as u64;
    let args = call_args(
        &device,
        None,
        None,
        vec![text(b"model"), object(target.clone())],
        &[("big", 7, 64, read)],
    );
    module.call(GATHER, &args).unwrap();
    let bytes = target.to_vec();
    assert!(bytes[..64].iter().all(|&b| b == 0xee));
    let end = 64 + read as usize;
    assert!(
        bytes[64..end] == source[16 + 7..],
        "the gathered bytes differ"
    );
    assert!(bytes[end..].iter().all(|&b| b == 0xee));
    // A target range one byte too long: refused before anything is written.
    target.fill(0, length as i64 + 64, 0xee, 1).unwrap();
    let args = call_args(
        &device,
        None,
        None,
        vec![text(b"model"), object(target.clone())],
        &[("big", 0, 65, length as u64)],
    );
    call_error(&module, GATHER, &args, StatusCode::OutOfRange);
    assert!(target.to_vec().iter().all(|&b| b == 0xee));
}
