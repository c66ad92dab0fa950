//! Every run of the fixtures that use the HAL (`manifest.json`, backends `vmvx` and
//! `llvm-cpu`) through pactum's VM with the `hal` module, and through the pinned
//! `iree-run-module`, on the same inputs and device (`local-task`: pactum's worker pool;
//! `local-sync`: the calling thread only): pactum's
//! results are printed the way iree-run-module prints them (tensors as `2x3xf32=[...]`,
//! scalars as C's `%g`, lists with their children) and the two outputs must be identical,
//! text for text. Runs that must fail fail in both with the same IREE status.

use std::sync::Arc;

use pactum_iree::hal::{
    DENSE_ROW_MAJOR, HalBuffer, HalBufferView, HalElementType, HalFence, HalModule, LocalDevice,
    Workers, c_format_g, hal_ref,
};
use pactum_iree::vm::{Context, Limits, Ref, StatusCode, Value, VmError};
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::iree::{
    IreeTensor, IreeValue, ManifestRun, manifest_runs, render_results, tool_or_skip,
};

/// A VM result as iree-run-module prints it.
fn printed(value: &Value) -> IreeValue {
    let scalar = |ty: &str, text: String| IreeValue::Scalar {
        ty: ty.to_owned(),
        text,
    };
    match value {
        Value::I32(v) => scalar("i32", v.to_string()),
        Value::I64(v) => scalar("i64", v.to_string()),
        Value::F32(v) => scalar("f32", c_format_g(f64::from(*v), false)),
        Value::F64(v) => scalar("f64", c_format_g(*v, false)),
        Value::Ref(None) => IreeValue::Null,
        Value::Ref(Some(Ref::List(list))) => IreeValue::List(
            list.to_values()
                .iter()
                .map(|item| item.as_ref().map_or(IreeValue::Null, printed))
                .collect(),
        ),
        Value::Ref(Some(other)) => match other.downcast_ref::<HalBufferView>() {
            Some(view) => IreeValue::Tensor(IreeTensor::parse(&view.format(1024)).unwrap()),
            None => IreeValue::Ref {
                type_name: other.type_name().to_owned(),
            },
        },
    }
}

/// A tensor input (`2x3xf32=1 2 3 4 5 6`, `0xf32=`, `f32=2`) as a buffer view.
fn tensor_input(text: &str) -> Value {
    let (head, body) = text.split_once('=').unwrap();
    let mut parts: Vec<&str> = head.split('x').collect();
    let ty = HalElementType::parse(parts.pop().unwrap()).unwrap();
    let shape: Vec<u64> = parts.iter().map(|d| d.parse().unwrap()).collect();
    let count: u64 = shape.iter().product();
    let tokens: Vec<&str> = body
        .split([' ', '[', ']'])
        .filter(|t| !t.is_empty())
        .collect();
    let mut bytes = Vec::new();
    for k in 0..count as usize {
        // iree-run-module repeats a single value to fill the shape.
        let token = if tokens.len() == 1 {
            tokens[0]
        } else {
            tokens[k]
        };
        let size = ty.byte_size() as usize;
        if ty.numerical_type() == 0x21 {
            let v: f64 = match token {
                "nan" | "NAN" => f64::NAN,
                "inf" | "INF" => f64::INFINITY,
                "-inf" | "-INF" => f64::NEG_INFINITY,
                _ => token.parse().unwrap(),
            };
            match size {
                4 => bytes.extend((v as f32).to_le_bytes()),
                8 => bytes.extend(v.to_le_bytes()),
                _ => panic!("float size {size}"),
            }
        } else {
            let v: i64 = token.parse().unwrap();
            bytes.extend(&v.to_le_bytes()[..size]);
        }
    }
    let buffer = HalBuffer::from_bytes(&bytes, None).unwrap();
    let view = HalBufferView::new(buffer, shape, ty, DENSE_ROW_MAJOR).unwrap();
    Value::Ref(Some(Ref::Object(Arc::new(view))))
}

/// iree-run-module's inputs, by the function's calling convention.
fn inputs(cconv: &str, texts: &[String]) -> Vec<Value> {
    let args = cconv
        .trim_start_matches('0')
        .split('_')
        .next()
        .unwrap_or("");
    let float = |t: &str| -> f64 { t.parse().unwrap_or_else(|_| panic!("float input {t:?}")) };
    args.chars()
        .filter(|c| *c != 'v')
        .zip(texts)
        .map(|(kind, text)| match kind {
            'i' => Value::I32(text.parse::<i64>().unwrap() as i32),
            'I' => Value::I64(text.parse().unwrap()),
            'f' => Value::F32(float(text) as f32),
            'F' => Value::F64(float(text)),
            'r' => tensor_input(text),
            other => panic!("input kind {other} for {text:?}"),
        })
        .collect::<Vec<Value>>()
        .into_iter()
        // An async export (coarse-fences model) takes a wait and a signal fence after its
        // arguments, which iree-run-module makes itself; so does this harness: nothing to
        // wait for, and a fence the export signals.
        .chain(
            (args.chars().filter(|c| *c != 'v').count() == texts.len() + 2 && args.ends_with("rr"))
                .then(|| [hal_ref(HalFence::empty()), hal_ref(HalFence::pending())])
                .into_iter()
                .flatten(),
        )
        .collect()
}

fn status_name(error: &VmError) -> String {
    let status: StatusCode = error.status();
    status.to_string()
}

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
    let file = Arc::new(VmfbFile::open(&run.path).unwrap());
    let mut context = context(run.device.as_deref());
    let name = context.load_bytecode(file).unwrap();
    let function = context
        .lookup_export(&format!("{name}.{}", run.function))
        .unwrap();
    match context.invoke(&function, &inputs(function.cconv(), &run.inputs)) {
        Ok(results) => {
            let printed: Vec<IreeValue> = results.iter().map(printed).collect();
            Ok(render_results(&run.function, &printed))
        }
        Err(error) => Err((status_name(&error), error.to_string())),
    }
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
