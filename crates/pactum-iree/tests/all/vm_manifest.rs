//! Every run of the VM-only fixtures (`manifest.json`, backend `none`) through pactum's VM and
//! through the pinned `iree-run-module`, in the same test, on the same inputs: pactum's
//! results are printed the way iree-run-module prints them (C's `%g` for floats, lists with
//! their children) and the two outputs must be identical, text for text. Runs that must fail
//! fail in both with the same IREE status. No expected value is typed here.

use std::sync::Arc;

use pactum_iree::vm::{Context, Limits, Ref, StatusCode, Value, VmError};
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::iree::{IreeValue, ManifestRun, manifest_runs, render_results, tool_or_skip};

/// C's `printf("%g", x)`, as iree-run-module prints scalars.
fn c_g(x: f64) -> String {
    pactum_iree::hal::c_format_g(x, false)
}

/// A VM result as iree-run-module prints it.
fn printed(value: &Value) -> IreeValue {
    let scalar = |ty: &str, text: String| IreeValue::Scalar {
        ty: ty.to_owned(),
        text,
    };
    match value {
        Value::I32(v) => scalar("i32", v.to_string()),
        Value::I64(v) => scalar("i64", v.to_string()),
        Value::F32(v) => scalar("f32", c_g(f64::from(*v))),
        Value::F64(v) => scalar("f64", c_g(*v)),
        Value::Ref(None) => IreeValue::Null,
        Value::Ref(Some(Ref::List(list))) => IreeValue::List(
            list.to_values()
                .iter()
                .map(|item| item.as_ref().map_or(IreeValue::Null, printed))
                .collect(),
        ),
        Value::Ref(Some(other)) => IreeValue::Ref {
            type_name: other.type_name().to_owned(),
        },
    }
}

/// iree-run-module's scalar inputs, by the function's calling convention.
fn inputs(cconv: &str, texts: &[String]) -> Vec<Value> {
    let args = cconv
        .trim_start_matches('0')
        .split('_')
        .next()
        .unwrap_or("");
    let float = |t: &str| -> f64 {
        match t {
            "nan" => f64::NAN,
            "-nan" => -f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => t.parse().unwrap_or_else(|_| panic!("float input {t:?}")),
        }
    };
    let int = |t: &str| -> i64 {
        t.parse::<i64>()
            .or_else(|_| t.parse::<u64>().map(|v| v as i64))
            .unwrap_or_else(|_| panic!("integer input {t:?}"))
    };
    args.chars()
        .filter(|c| *c != 'v')
        .zip(texts)
        .map(|(kind, text)| match kind {
            'i' => Value::I32(int(text) as i32),
            'I' => Value::I64(int(text)),
            'f' => Value::F32(float(text) as f32),
            'F' => Value::F64(float(text)),
            other => panic!("input kind {other} for {text:?}"),
        })
        .collect()
}

/// The IREE status name of a VM error (`INVALID_ARGUMENT`).
fn status_name(error: &VmError) -> String {
    let status: StatusCode = error.status();
    status.to_string()
}

fn run_in_pactum(run: &ManifestRun) -> Result<String, (String, String)> {
    let file = Arc::new(VmfbFile::open(&run.path).unwrap());
    let mut context = Context::new(Limits::default());
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

#[test]
fn every_vm_only_fixture_run_matches_iree_run_module() {
    if tool_or_skip(
        "iree-run-module",
        "every_vm_only_fixture_run_matches_iree_run_module",
    )
    .is_none()
    {
        return;
    }
    let runs: Vec<ManifestRun> = manifest_runs()
        .unwrap()
        .into_iter()
        .filter(|run| run.backend == "none")
        .collect();
    let mut compared = 0;
    let mut failures = 0;
    for run in &runs {
        let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
        match (run_in_pactum(run), &iree.results) {
            (Ok(ours), Ok(_)) => {
                assert_eq!(
                    ours, iree.stdout,
                    "{run}: pactum (left) vs iree-run-module (right)"
                );
            }
            (Err((status, message)), Err(failure)) => {
                assert_eq!(
                    status, failure.status,
                    "{run}: {message} vs {}",
                    failure.stderr
                );
                failures += 1;
            }
            (ours, theirs) => panic!("{run}: pactum {ours:?}, iree-run-module {theirs:?}"),
        }
        compared += 1;
    }
    eprintln!("compared {compared} VM-only runs with iree-run-module ({failures} must fail)");
    assert!(
        compared >= 60,
        "only {compared} VM-only runs in the manifest"
    );
    assert!(failures >= 1);
}

#[test]
fn c_g_formats_like_printf() {
    for (value, text) in [
        (1.75, "1.75"),
        (-0.499, "-0.499"),
        (4294967296.0, "4.29497e+09"),
        (1e300, "1e+300"),
        (0.333_333_333, "0.333333"),
        (1e-5, "1e-05"),
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (0.0001, "0.0001"),
        (-0.0, "-0"),
    ] {
        assert_eq!(c_g(value), text);
    }
}
