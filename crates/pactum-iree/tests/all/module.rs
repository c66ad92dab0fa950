//! `.vmfb` exports as pactum functions (`pactum_iree::module::IreeModule`): argument
//! conversion by calling convention, results as pactum values, module state across calls,
//! and the errors of wrong calls.

use std::path::PathBuf;

use pactum::{Any, AnyView, Array, Bytes, ErrorKind, Function};
use pactum_iree::module::IreeModule;
use pactum_iree::vm::{Context, Limits, Ref, Value};
use pactum_iree::vmfb::VmfbFile;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vmfb")
        .join(name)
}

fn module(name: &str) -> IreeModule {
    IreeModule::load(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn exports_are_functions_taking_and_returning_pactum_values() {
    let module = module("vm_direct.vmfb");
    assert_eq!(module.name(), "vm_direct");
    let names: Vec<&str> = module.export_names().collect();
    assert!(
        names.contains(&"mix") && names.contains(&"mix_alias"),
        "{names:?}"
    );
    assert_eq!(module.calling_convention("mix").unwrap(), "0iIfF_FIf");

    let frob: Function = module.function("frob_or_double").unwrap();
    assert_eq!(frob.call_typed::<_, i64>((21,)).unwrap(), 42);
    // Several results come back as an array, with the calling convention's types.
    let mixed: Array = module
        .function("mix")
        .unwrap()
        .call_typed((1, 2, 1.5, 0.25))
        .unwrap();
    assert_eq!(mixed.get_as::<f64>(0).unwrap(), 1.75);
    assert_eq!(mixed.get_as::<i64>(1).unwrap(), 3);
    assert_eq!(mixed.get_as::<f64>(2).unwrap(), 2.25);
    // Floats take ints; i32 takes any 32-bit pattern, signed or not.
    let mixed: Array = module
        .function("mix_alias")
        .unwrap()
        .call_typed((0xffff_ffffi64, 9_000_000_000i64, 2, 0.5))
        .unwrap();
    assert_eq!(mixed.get_as::<i64>(1).unwrap(), 8_999_999_999);
    // Module state (globals) persists between calls of one module.
    let bump = module.function("bump").unwrap();
    assert_eq!(bump.call_typed::<_, i64>(()).unwrap(), 1);
    assert_eq!(bump.call_typed::<_, i64>(()).unwrap(), 2);
    assert_eq!(module.call("bump", &[]).unwrap().cast::<i64>().unwrap(), 3);
    // A fresh load has fresh state.
    let again = self::module("vm_direct.vmfb");
    assert_eq!(again.call("bump", &[]).unwrap().cast::<i64>().unwrap(), 1);
}

#[test]
fn wrong_calls_are_errors_naming_the_argument() {
    let module = module("vm_direct.vmfb");
    let mix = module.function("mix").unwrap();
    let error = mix.call(&[AnyView::from(1i64)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TYPE_ERROR);
    assert_eq!(
        error.message(),
        "vm_direct.mix takes 4 argument(s) (i32, i64, f32, f64), got 1"
    );
    let error = mix.call_typed::<_, Any>((1, "two", 1.5, 0.25)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TYPE_ERROR);
    assert!(
        error
            .message()
            .starts_with("vm_direct.mix: argument 1: expected an int (i64)"),
        "{error}"
    );
    let error = mix
        .call_typed::<_, Any>((1i64 << 40, 2, 1.5, 0.25))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::VALUE_ERROR);
    assert!(
        error
            .message()
            .contains("argument 0: 1099511627776 does not fit in 32 bits"),
        "{error}"
    );
    let error = module.function("nope").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ATTRIBUTE_ERROR);
    assert!(error.message().contains("no export `nope`"), "{error}");
}

#[test]
fn failures_inside_the_module_are_errors_with_the_iree_status() {
    let module = module("vm_scalars.vmfb");
    let div = module.function("checked_div").unwrap();
    assert_eq!(div.call_typed::<_, i64>((-7, 2)).unwrap(), -3);
    let error = div.call_typed::<_, i64>((7, 0)).unwrap_err();
    assert!(error.message().contains("INVALID_ARGUMENT"), "{error}");
    assert!(error.message().contains("the divisor is zero"), "{error}");
}

#[test]
fn lists_and_buffers_cross_as_arrays_and_bytes() {
    let module = module("vm_memory.vmfb");
    let lists: Array = module.function("lists").unwrap().call_typed((3,)).unwrap();
    assert_eq!(lists.len(), 6);
    // The same call through the VM itself: each list's elements, in order.
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(fixture("vm_memory.vmfb")).unwrap())
        .unwrap();
    let direct = context.call("vm_memory.lists", &[Value::I32(3)]).unwrap();
    for (k, value) in direct.iter().enumerate() {
        let Value::Ref(Some(Ref::List(list))) = value else {
            panic!("result {k}: {value}")
        };
        let ours: Array = lists.get_as(k).unwrap();
        assert_eq!(ours.len(), list.len(), "list {k}");
        for (i, item) in list.to_values().iter().enumerate() {
            let ours = ours.get(i).unwrap();
            match item {
                Some(Value::I32(v)) => assert_eq!(ours.get::<i64>().unwrap(), i64::from(*v)),
                Some(Value::I64(v)) => assert_eq!(ours.get::<i64>().unwrap(), *v),
                Some(Value::F32(v)) => assert_eq!(ours.get::<f64>().unwrap(), f64::from(*v)),
                Some(Value::F64(v)) => assert_eq!(ours.get::<f64>().unwrap(), *v),
                Some(Value::Ref(Some(Ref::List(inner)))) => {
                    assert_eq!(ours.get::<Array>().unwrap().len(), inner.len())
                }
                other => assert!(
                    ours.is_none() || other.is_some(),
                    "list {k}[{i}]: {other:?}"
                ),
            }
        }
    }
    // A buffer result is its bytes (the buffer `buffer_ops` built, byte for byte); a null
    // reference is None.
    let ops: Array = module
        .function("buffer_ops")
        .unwrap()
        .call_typed((4, -2))
        .unwrap();
    let buffer: Bytes = ops.get_as(16).unwrap();
    let direct = context
        .call("vm_memory.buffer_ops", &[Value::I64(4), Value::I32(-2)])
        .unwrap();
    let Value::Ref(Some(Ref::Buffer(theirs))) = &direct[16] else {
        panic!("{}", direct[16])
    };
    assert_eq!(&buffer[..], &theirs.to_vec()[..]);
    let refs: Array = module
        .function("global_refs")
        .unwrap()
        .call_typed(())
        .unwrap();
    assert!(refs.get(6).unwrap().is_none());
}

#[test]
fn async_exports_get_their_fences_from_pactum() {
    // `add_async` follows the coarse-fences model: its calling convention ends with a wait
    // and a signal fence, which pactum makes; users pass only the tensors.
    let module = module("async_export_vmvx.vmfb");
    assert!(
        module
            .calling_convention("add_async")
            .unwrap()
            .contains("rrrr")
    );
    let a = pactum::Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let b = pactum::Tensor::from_slice(&[0.5f32, -1.0, 2.0, 0.25], &[4]).unwrap();
    let sum: pactum::Tensor = module
        .function("add_async")
        .unwrap()
        .call_typed((&a, &b))
        .unwrap();
    let expected: Vec<f32> = a
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .zip(b.to_vec::<f32>().unwrap())
        .map(|(x, y)| x + y)
        .collect();
    assert_eq!(sum.to_vec::<f32>().unwrap(), expected);
    let error = module
        .function("add_async")
        .unwrap()
        .call_typed::<_, Any>((&a,))
        .unwrap_err();
    assert!(error.message().contains("argument"), "{error}");
}

/// An async (coarse-fences) export must signal the signal fence pactum hands it: a call that
/// returns with the fence failed, or never signalled, is an error of the call, not a success.
#[test]
fn async_exports_that_fail_or_forget_their_signal_fence_are_errors() {
    use crate::asm::{self, Func};
    use pactum_iree::vmfb::AttrDef;

    // f(wait, signal): calls hal.fence.<how>(signal[, status]) unless `how` is None.
    let build = |how: Option<&str>| {
        let mut f = Func::new("f", "0rr_v", 2, 2);
        f.block();
        match how {
            Some("signal") => {
                f.call(0x8000_0000, &[0x8001], &[]);
            }
            Some("fail") => {
                f.const_i32(13, 0).call(0x8000_0000, &[0x8001, 0], &[]);
            }
            _ => {}
        }
        f.ret(&[]);
        let mut def = asm::module("t", &[f]);
        def.function_signatures[0].attrs = vec![AttrDef {
            key: "iree.abi.model".into(),
            value: "coarse-fences".into(),
        }];
        match how {
            Some("signal") => asm::import(&mut def, "hal.fence.signal", "0r_v", false),
            Some("fail") => asm::import(&mut def, "hal.fence.fail", "0ri_v", false),
            _ => {}
        }
        IreeModule::from_bytes(asm::bytes(&def), Limits::default()).unwrap()
    };
    let call = |module: &IreeModule| module.function("f").unwrap().call(&[]);
    assert!(call(&build(Some("signal"))).unwrap().is_none());
    let error = call(&build(Some("fail"))).unwrap_err();
    assert!(
        error.message().contains("t.f failed its signal fence"),
        "{error}"
    );
    let error = call(&build(None)).unwrap_err();
    assert!(
        error
            .message()
            .contains("t.f returned without signalling its signal fence"),
        "{error}"
    );
}

#[test]
fn modules_importing_check_get_one_and_failed_expectations_are_errors() {
    // IREE makes `check` an optional import: without the module, a test function's
    // expectations would be skipped and every call would succeed.
    let module = IreeModule::load(fixture("check_failure_vmvx.vmfb")).unwrap();
    let call = |name: &str| module.function(name).unwrap().call(&[]);
    let error = call("several_failures").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ASSERTION_ERROR.as_str());
    assert_eq!(
        error.message(),
        "check_failure.several_failures: 3 expectation(s) failed:\n  \
         check.expect_true: Expected 0 to be nonzero.\n  \
         check.expect_false: Expected 1 to be zero.\n  \
         check.expect_eq: Expected equality of these values. Contents does not match. The \
         first difference occurs at index 0, where the lhs value is 1 and the rhs value is 2."
    );
    // A failure before an error is reported with it, and not carried into the next call.
    let error = call("error_after_failure").unwrap_err();
    assert!(
        error.message().contains("Expected 0 to be nonzero.")
            && error
                .message()
                .contains("and the call failed: native check.expect_all_true: INVALID_ARGUMENT: unsupported element type i1"),
        "{error}"
    );
    let error = call("error_almost_eq_i32").unwrap_err();
    assert!(
        !error.message().contains("expectation")
            && error.message().contains("unsupported element type i32"),
        "{error}"
    );
    let passing = IreeModule::load(fixture("check_success_vmvx.vmfb")).unwrap();
    assert!(passing.call("eq_views", &[]).unwrap().is_none());
}

/// Arguments that only `iree.abi.name` names (the declaration records the names, no
/// `iree.abi` JSON) are positional, as iree-run-module and iree.runtime pass them; the result
/// is the one iree-run-module recorded for the same inputs.
#[test]
fn arguments_named_only_in_the_declaration_are_positional() {
    use pactum_iree::hal::HalBufferView;
    use pactum_iree::module::{buffer_view_to_tensor, tensor_to_buffer_view};
    use pactum_testing::iree::{IreeTensor, IreeValue, manifest_runs};

    let module = module("calling_vmvx.vmfb");
    let run = manifest_runs()
        .unwrap()
        .into_iter()
        .find(|run| run.file == "calling_vmvx.vmfb" && run.function == "scale")
        .unwrap();
    let recorded = run.recorded().unwrap();
    let [IreeValue::Tensor(expected)] = recorded.expect_results() else {
        panic!("{run}: {recorded:?}");
    };
    let x = buffer_view_to_tensor(&HalBufferView::parse(&run.inputs[0]).unwrap())
        .unwrap()
        .unwrap();
    let factor: f64 = run.inputs[1].parse().unwrap();
    let result = module
        .function("scale")
        .unwrap()
        .call(&[AnyView::from(&x), AnyView::from(factor)])
        .unwrap_or_else(|e| panic!("{run}: {e}"));
    let view = tensor_to_buffer_view(&result.cast::<pactum::Tensor>().unwrap()).unwrap();
    assert_eq!(&IreeTensor::parse(&view.format(1024)).unwrap(), expected);
}

/// `IreeModule::builder` links modules as `iree-run-module --module=a --module=b` does: a
/// bytecode module and a Rust native module registered first serve the called module's
/// imports; without them the load fails naming the missing module.
#[test]
fn a_builder_links_bytecode_and_native_modules_before_the_called_one() {
    use crate::asm::{self, Func};
    use pactum_iree::vm::{NativeError, NativeModuleBuilder};
    use std::sync::Arc;

    // liba.add_one(x) = x + 1.
    let mut add_one = Func::new("add_one", "0i_i", 2, 0);
    add_one.block();
    add_one.const_i32(1, 1).bin(0x22, 0, 1, 1).ret(&[1]);
    let liba = asm::bytes(&asm::module("liba", &[add_one]));
    // app.f(x) = host.times10(liba.add_one(x)).
    let mut f = Func::new("f", "0i_i", 2, 0);
    f.block();
    f.call(0x8000_0000, &[0], &[1])
        .call(0x8000_0001, &[1], &[1])
        .ret(&[1]);
    let mut app = asm::module("app", &[f]);
    asm::import(&mut app, "liba.add_one", "0i_i", false);
    asm::import(&mut app, "host.times10", "0i_i", false);
    let app = asm::bytes(&app);
    let host = NativeModuleBuilder::new("host", 0)
        .function(
            "times10",
            "0i_i",
            |_: &(), x: i32| -> Result<i32, NativeError> { Ok(x * 10) },
        )
        .build(());

    let module = IreeModule::builder()
        .module_bytes(liba.clone())
        .native_module(Arc::new(host))
        .load_bytes(app.clone())
        .unwrap();
    assert_eq!(module.name(), "app");
    assert_eq!(module.context_modules(), ["hal", "liba", "host", "app"]);
    assert_eq!(
        module
            .function("f")
            .unwrap()
            .call_typed::<_, i64>((4,))
            .unwrap(),
        50
    );
    // Only the called module's exports are the module's functions.
    assert_eq!(module.export_names().collect::<Vec<_>>(), ["f"]);

    let error = IreeModule::builder()
        .module_bytes(liba)
        .load_bytes(app)
        .unwrap_err();
    assert!(error.message().contains("host"), "{error}");
}

/// A module file that is missing or corrupt, linked or called, is an error naming the file.
#[test]
fn builder_errors_name_the_file_they_are_about() {
    let dir = std::env::temp_dir().join(format!("pactum-builder-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let corrupt = dir.join("corrupt.vmfb");
    std::fs::write(&corrupt, b"not a module at all, just some bytes").unwrap();
    let missing = dir.join("missing.vmfb");
    let Err(error) = IreeModule::builder().module_file(&missing) else {
        panic!("a missing linked module loaded")
    };
    assert!(
        error.message().contains(&*missing.to_string_lossy()),
        "{error}"
    );
    let error = IreeModule::builder().load(&corrupt).unwrap_err();
    assert!(
        error.message().contains(&*corrupt.to_string_lossy()),
        "{error}"
    );
    let error = IreeModule::builder()
        .module_file(&corrupt)
        .unwrap()
        .load(fixture("vm_direct.vmfb"))
        .unwrap_err();
    assert!(
        error.message().contains(&*corrupt.to_string_lossy()),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
