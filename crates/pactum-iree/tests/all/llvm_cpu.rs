//! `llvm-cpu` modules through the Rust API ([`IreeModule`]): every recorded run of the
//! llvm-cpu fixtures (`manifest.json`) called as a pactum function with pactum tensors and
//! scalars, on the shared worker pool (`local-task`) and on the caller's thread
//! (`local-sync`). Both give the same bits, the same bits as the run made directly through the
//! VM on the caller's thread, and the values iree-run-module recorded. Async exports get their
//! fences from pactum; `iree.abi` exports take and return structured values, the same as the
//! module compiled for `vmvx`.
#![cfg(target_arch = "x86_64")]

use std::path::PathBuf;
use std::sync::Arc;

use pactum::{Any, AnyView, Array, Function, Map, Tensor};
use pactum_iree::hal::{
    HalBufferView, HalFence, HalModule, LocalDevice, Workers, c_format_g, hal_ref,
};
use pactum_iree::module::{IreeModule, buffer_view_to_tensor, tensor_to_buffer_view};
use pactum_iree::vm::{Context, Limits, Ref, Value};
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::iree::{IreeTensor, IreeValue, ManifestRun, manifest_runs};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vmfb")
        .join(name)
}

fn load(name: &str, workers: Workers) -> IreeModule {
    IreeModule::load_with(fixture(name), Limits::default(), workers)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An iree-run-module input (`2x3xf32=1 2 3 4 5 6`, `0xf32=`, `7`, `0.5`) as a pactum value.
fn input(text: &str) -> Any {
    if !text.contains('=') {
        return match text.parse::<i64>() {
            Ok(int) => Any::from(int),
            Err(_) => Any::from(text.parse::<f64>().unwrap()),
        };
    }
    // Read as iree-run-module reads it, then as the tensor pactum's callers pass.
    let view = HalBufferView::parse(text).unwrap_or_else(|e| panic!("input {text:?}: {e}"));
    let tensor = buffer_view_to_tensor(&view)
        .unwrap()
        .unwrap_or_else(|| panic!("no pactum tensor type for {text:?}"));
    Any::from(tensor)
}

/// A tensor's type, shape and bytes.
fn tensor_bits(tensor: &Tensor) -> String {
    let bytes = tensor_to_buffer_view(tensor).unwrap().to_bytes();
    format!("{}{:?}:{bytes:02x?}", tensor.dtype(), tensor.shape())
}

/// A pactum value, exactly (tensors as their bits, floats as their bits), for comparisons.
fn bits(value: &AnyView<'_>) -> String {
    if value.is_none() {
        return "None".into();
    }
    if let Ok(tensor) = value.get::<Tensor>() {
        return tensor_bits(&tensor);
    }
    if let Ok(array) = value.get::<Array>() {
        let items: Vec<String> = array.iter().map(|item| bits(&item.view())).collect();
        return format!("[{}]", items.join(", "));
    }
    if let Ok(map) = value.get::<Map>() {
        let mut items: Vec<String> = map
            .iter()
            .map(|(k, v)| format!("{}: {}", bits(&k.view()), bits(&v.view())))
            .collect();
        items.sort();
        return format!("{{{}}}", items.join(", "));
    }
    match value.type_index() {
        1 => format!("int {}", value.get::<i64>().unwrap()),
        2 => format!("bool {}", value.get::<bool>().unwrap()),
        3 => format!("float {:#x}", value.get::<f64>().unwrap().to_bits()),
        _ => match value.get::<String>() {
            Ok(text) => format!("{text:?}"),
            Err(_) => format!("<{}>", value.type_key()),
        },
    }
}

/// A VM result in the form [`bits`] gives the same value converted by `IreeModule`.
fn value_bits(value: &Value) -> String {
    match value {
        Value::I32(v) => format!("int {v}"),
        Value::I64(v) => format!("int {v}"),
        Value::F32(v) => format!("float {:#x}", f64::from(*v).to_bits()),
        Value::F64(v) => format!("float {:#x}", v.to_bits()),
        Value::Ref(None) => "None".into(),
        Value::Ref(Some(Ref::List(list))) => {
            let items: Vec<String> = list
                .to_values()
                .iter()
                .map(|item| item.as_ref().map_or("None".into(), value_bits))
                .collect();
            format!("[{}]", items.join(", "))
        }
        Value::Ref(Some(other)) => {
            let view = other.downcast_ref().expect("a buffer view");
            tensor_bits(&buffer_view_to_tensor(view).unwrap().unwrap())
        }
    }
}

/// Results packed as `IreeModule` packs them, as [`bits`].
fn packed_bits(results: &[Value]) -> String {
    match results {
        [] => "None".into(),
        [one] => value_bits(one),
        many => {
            let items: Vec<String> = many.iter().map(value_bits).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

/// The run made directly through the VM, with a `hal` module on the caller's thread and the
/// arguments converted by `IreeModule`'s public conversions.
fn run_in_vm(run: &ManifestRun, args: &[Any]) -> Result<Vec<Value>, String> {
    let mut context = Context::new(Limits::default());
    let device = LocalDevice::sync().with_memory_budget(context.memory_budget().cloned());
    let hal = HalModule::new(Arc::new(device));
    context.register_native(Arc::new(hal)).unwrap();
    let file = Arc::new(VmfbFile::open(&run.path).unwrap());
    let name = context.load_bytecode(file).unwrap();
    let function = context
        .lookup_export(&format!("{name}.{}", run.function))
        .unwrap();
    let cconv = function.cconv().to_owned();
    let kinds = cconv.trim_start_matches('0').split('_').next().unwrap();
    let mut fences = [hal_ref(HalFence::empty()), hal_ref(HalFence::pending())].into_iter();
    let mut values: Vec<Value> = kinds
        .bytes()
        .zip(args.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(kind, arg)| match (kind, arg.map(Any::view)) {
            (b'i', Some(arg)) => Value::I32(arg.get::<i64>().unwrap() as i32),
            (b'I', Some(arg)) => Value::I64(arg.get::<i64>().unwrap()),
            (b'f', Some(arg)) => Value::F32(arg.get::<f64>().unwrap() as f32),
            (b'F', Some(arg)) => Value::F64(arg.get::<f64>().unwrap()),
            (_, Some(arg)) => Value::Ref(Some(Ref::Object(Arc::new(
                tensor_to_buffer_view(&arg.get::<Tensor>().unwrap()).unwrap(),
            )))),
            // An async export's wait fence (reached) and signal fence.
            (_, None) => fences.next().unwrap_or(Value::Ref(None)),
        })
        .collect();
    values.truncate(kinds.len());
    context
        .invoke(&function, &values)
        .map_err(|e| e.to_string())
}

/// Whether pactum's result `actual` prints as iree-run-module printed `expected`.
fn check_printed(actual: &AnyView<'_>, expected: &IreeValue, at: &str) {
    match expected {
        IreeValue::Scalar { ty, text } => {
            let printed = if ty.starts_with('f') {
                c_format_g(actual.get::<f64>().unwrap(), false)
            } else {
                actual.get::<i64>().unwrap().to_string()
            };
            assert_eq!(&printed, text, "{at}");
        }
        IreeValue::Tensor(tensor) => {
            let ours = actual
                .get::<Tensor>()
                .unwrap_or_else(|_| panic!("{at}: {} is not a tensor", actual.type_key()));
            let view = tensor_to_buffer_view(&ours).unwrap();
            let printed = IreeTensor::parse(&view.format(1024)).unwrap();
            assert_eq!(printed, *tensor, "{at}");
        }
        IreeValue::List(items) => {
            let ours: Array = actual.get().unwrap();
            assert_eq!(ours.len(), items.len(), "{at}");
            for (k, item) in items.iter().enumerate() {
                check_printed(&ours.get(k).unwrap(), item, &format!("{at}[{k}]"));
            }
        }
        IreeValue::Null => assert!(actual.is_none(), "{at}"),
        IreeValue::Ref { type_name } => panic!("{at}: unexpected {type_name} result"),
    }
}

#[test]
fn every_llvm_cpu_run_through_iree_module_matches_the_vm_and_iree_run_module() {
    let runs: Vec<ManifestRun> = manifest_runs()
        .unwrap()
        .into_iter()
        .filter(|run| run.backend == "llvm-cpu")
        .collect();
    assert!(runs.len() >= 30, "{} llvm-cpu runs", runs.len());
    let mut structured = 0;
    for run in &runs {
        let args: Vec<Any> = run.inputs.iter().map(|text| input(text)).collect();
        let views: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
        let mut outcomes = Vec::new();
        for workers in [Workers::shared(), Workers::CallerThread] {
            // A fresh module per run: some exports change module state.
            let file = run.path.file_name().unwrap().to_str().unwrap();
            let module = load(file, workers);
            // Exports with `iree.abi` reflection are checked by the structured test below;
            // here their flat form prints as iree-run-module's results do.
            let function: Function = if module.signature(&run.function).unwrap().is_some() {
                structured += 1;
                module.flat_function(&run.function).unwrap()
            } else {
                module.function(&run.function).unwrap()
            };
            outcomes.push(function.call(&views));
        }
        let direct = run_in_vm(run, &args);
        let recorded = run.recorded().unwrap();
        if run.fails.is_some() {
            for outcome in &outcomes {
                assert!(outcome.is_err(), "{run}: expected a failure");
            }
            assert!(direct.is_err(), "{run}: expected a failure in the VM");
            continue;
        }
        let direct = direct.unwrap_or_else(|e| panic!("{run}: {e}"));
        let outcomes: Vec<Any> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|e| panic!("{run}: {e}")))
            .collect();
        let pool = bits(&outcomes[0].view());
        assert_eq!(
            pool,
            bits(&outcomes[1].view()),
            "{run}: pool vs caller thread"
        );
        assert_eq!(pool, packed_bits(&direct), "{run}: IreeModule vs the VM");
        let expected = recorded.expect_results();
        match expected {
            [] => assert!(outcomes[0].is_none(), "{run}"),
            [one] => check_printed(&outcomes[0].view(), one, &run.to_string()),
            many => {
                let array: Array = outcomes[0].view().get().unwrap();
                assert_eq!(array.len(), many.len(), "{run}");
                for (k, value) in many.iter().enumerate() {
                    check_printed(&array.get(k).unwrap(), value, &format!("{run}: {k}"));
                }
            }
        }
    }
    assert!(structured > 0, "some runs call iree.abi exports");
}

#[test]
fn the_mlp_is_deterministic_across_workers_and_repeated_calls() {
    let x: Vec<f32> = (0..16 * 64)
        .map(|k| ((k * 37 % 29) as f32 - 14.0) / 8.0)
        .collect();
    let x = Tensor::from_slice(&x, &[64, 16]).unwrap();
    let own = Workers::with_threads(3).unwrap();
    let mut seen = Vec::new();
    for workers in [Workers::shared(), Workers::CallerThread, own] {
        let module = load("mlp_llvm_cpu.vmfb", workers.clone());
        assert_eq!(
            module.workers().device_name(),
            workers.device_name(),
            "{workers:?}"
        );
        let predict = module.function("predict_dyn").unwrap();
        for _ in 0..2 {
            let probabilities: Tensor = predict.call_typed((&x,)).unwrap();
            assert_eq!(probabilities.shape(), [64, 10]);
            let rows = probabilities.to_vec::<f32>().unwrap();
            for row in rows.chunks(10) {
                let sum: f32 = row.iter().sum();
                assert!((sum - 1.0).abs() < 1e-5, "softmax rows sum to 1: {sum}");
            }
            seen.push(tensor_bits(&probabilities));
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0] == w[1]),
        "same bits every time"
    );
}

#[test]
fn async_llvm_cpu_exports_get_their_fences_from_pactum() {
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let b = Tensor::from_slice(&[0.5f32, -1.0, 2.0, 0.25], &[4]).unwrap();
    for workers in [Workers::shared(), Workers::CallerThread] {
        let module = load("async_export_llvm_cpu.vmfb", workers);
        assert!(
            module
                .calling_convention("add_async")
                .unwrap()
                .contains("rrrr")
        );
        let add = module.function("add_async").unwrap();
        let sum: Tensor = add.call_typed((&a, &b)).unwrap();
        assert_eq!(sum.to_vec::<f32>().unwrap(), [1.5, 1.0, 5.0, 4.25]);
        // The result feeds the next call.
        let again: Tensor = add.call_typed((&sum, &b)).unwrap();
        assert_eq!(again.to_vec::<f32>().unwrap(), [2.0, 0.0, 7.0, 4.5]);
        let error = add.call_typed::<_, Any>((&a,)).unwrap_err();
        assert!(error.message().contains("argument"), "{error}");
    }
}

fn kwargs_sentinel() -> Any {
    Function::get_global("ffi.GetKwargsObject")
        .expect("ffi.GetKwargsObject")
        .call(&[])
        .unwrap()
}

#[test]
fn structured_llvm_cpu_exports_match_the_vmvx_module() {
    let vmvx = IreeModule::load(fixture("vmvx_tensors.vmfb")).unwrap();
    let x = Any::from(Tensor::from_slice(&[1.0f32, 2.0, 4.0], &[3]).unwrap());
    let rows = Any::from(Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap());
    for file in ["tensors_llvm_cpu.vmfb", "tensors_llvm_cpu_stripped.vmfb"] {
        for workers in [Workers::shared(), Workers::CallerThread] {
            let module = load(file, workers);
            assert!(
                module.signature("dict_summary").unwrap().is_some(),
                "{file}"
            );
            // dict_summary(x, *, repeat) -> {total, count, repeated}
            let (kwargs, repeat) = (kwargs_sentinel(), Any::from("repeat"));
            let call = [x.view(), kwargs.view(), repeat.view(), AnyView::from(3i64)];
            let ours = module
                .function("dict_summary")
                .unwrap()
                .call(&call)
                .unwrap();
            let theirs = vmvx.function("dict_summary").unwrap().call(&call).unwrap();
            assert_eq!(bits(&ours.view()), bits(&theirs.view()), "{file}");
            let summary: Map = ours.view().get().unwrap();
            let total: Tensor = summary
                .get(&Any::from("total").view())
                .unwrap()
                .cast()
                .unwrap();
            assert_eq!(total.to_vec::<f32>().unwrap(), [7.0]);
            let count = summary.get(&Any::from("count").view()).unwrap();
            assert_eq!(count.cast::<i64>().unwrap(), 3);
            // A missing keyword is an error naming it.
            let error = module
                .function("dict_summary")
                .unwrap()
                .call(&[x.view()])
                .unwrap_err();
            assert!(error.message().contains("repeat"), "{error}");

            // split_rows(tensor<2x3xf32>) -> [tensor<3xf32>...]
            let split = module.function("split_rows").unwrap();
            let ours = split.call(&[rows.view()]).unwrap();
            let theirs = vmvx
                .function("split_rows")
                .unwrap()
                .call(&[rows.view()])
                .unwrap();
            assert_eq!(bits(&ours.view()), bits(&theirs.view()), "{file}");
        }
    }
}

/// Results are handed over without a copy when the VM has let go of their buffers: each must
/// stay valid and unchanged while held, whatever later calls allocate (the module reuses freed
/// blocks of 64 KiB and more), and after the module itself is gone.
#[test]
fn results_handed_over_stay_valid_and_independent() {
    let n = 20_000; // 80 KB: the module's block cache is involved.
    let input = |offset: f32| {
        let values: Vec<f32> = (0..n).map(|k| k as f32 + offset).collect();
        Tensor::from_slice(&values, &[n as i64]).unwrap()
    };
    let expected = |offset: f32| -> Vec<f32> { (0..n).map(|k| k as f32 + offset + 1.0).collect() };
    let module = load("tensors_llvm_cpu.vmfb", Workers::shared());
    let add_one = module.function("add_one").unwrap();
    let first: Tensor = add_one.call_typed((&input(0.0),)).unwrap();
    let second: Tensor = add_one.call_typed((&input(0.5),)).unwrap();
    assert_ne!(first.data_ptr(), second.data_ptr());
    drop(second);
    // A third call may reuse the second result's block, never the first's.
    let third: Tensor = add_one.call_typed((&input(-3.0),)).unwrap();
    assert_ne!(first.data_ptr(), third.data_ptr());
    drop((add_one, module));
    assert_eq!(first.to_vec::<f32>().unwrap(), expected(0.0));
    assert_eq!(third.to_vec::<f32>().unwrap(), expected(-3.0));
}
