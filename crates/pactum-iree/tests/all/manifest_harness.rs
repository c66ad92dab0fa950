//! The harness the manifest tests share (`vm_manifest`: VM-only runs; `hal_manifest`: runs
//! with the `hal` module): iree-run-module's inputs as VM values, pactum's results printed the
//! way iree-run-module prints them, and one run through a context.

use std::sync::Arc;

use pactum_iree::hal::{HalBufferView, HalFence, c_format_g, hal_ref};
use pactum_iree::vm::{Context, Ref, StatusCode, Value, VmError};
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::iree::{IreeTensor, IreeValue, ManifestRun, render_results};

/// A VM result as iree-run-module prints it.
pub(crate) fn printed(value: &Value) -> IreeValue {
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

/// A tensor input (`2x3xf32=1 2 3 4 5 6`, `0xf32=`, `f32=2`) as a buffer view, parsed by
/// pactum's reading of iree-run-module's syntax.
fn tensor_input(text: &str) -> Value {
    let view = HalBufferView::parse(text).unwrap_or_else(|e| panic!("input {text:?}: {e}"));
    Value::Ref(Some(Ref::Object(Arc::new(view))))
}

/// iree-run-module's inputs (scalars, tensors as buffer views), by the function's calling
/// convention.
pub(crate) fn inputs(cconv: &str, texts: &[String]) -> Vec<Value> {
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

pub(crate) fn status_name(error: &VmError) -> String {
    let status: StatusCode = error.status();
    status.to_string()
}

/// Runs `run` in `context`: iree-run-module's output text, or the failure's status name and
/// message.
pub(crate) fn run_in_pactum(
    run: &ManifestRun,
    mut context: Context,
) -> Result<String, (String, String)> {
    let file = Arc::new(VmfbFile::open(&run.path).unwrap());
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
