//! Host (c): a plain Rust program loads the kernels library with `pactum::Module::load`.
//!
//! This test binary has pactum as an ordinary dependency and no `libtvm_ffi.so` loaded, so
//! pactum's built-in runtime serves it. The library's own copy of pactum reaches that runtime
//! through the in-memory forwarder `Module::load` installs: its errors arrive here as
//! `pactum::Error`, and the closures passed to it run here.
//!
//! The test does not link the kernels crate itself: every call goes through the loaded library.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use pactum::runtime::RuntimeKind;
use pactum::{Any, Array, DataType, Error, Function, Map, Module, Result, Tensor};

use crate::support;

fn module() -> &'static Module {
    static MODULE: OnceLock<Module> = OnceLock::new();
    MODULE.get_or_init(|| {
        assert_eq!(
            pactum::runtime::kind(),
            RuntimeKind::Builtin,
            "a plain Rust test binary runs pactum's built-in runtime"
        );
        Module::load(support::kernels_library()).expect("the kernels library loads")
    })
}

fn function(name: &str) -> Function {
    module().function(name).expect("exported function")
}

/// Calls export `name` with `args`, expecting an error; checks that it was not left raised.
fn call_err(name: &str, args: &[pactum::AnyView<'_>]) -> Error {
    let error = function(name).call(args).expect_err("the call must fail");
    assert!(
        Error::take_raised().is_none(),
        "the error was moved out of the slot"
    );
    error
}

fn kind_and_message(error: &Error) -> (String, String) {
    (error.kind().into_owned(), error.message().into_owned())
}

// ------------------------------------------------------------------------------- runtime

#[test]
fn the_builtin_runtime_serves_the_library() {
    let module = module();
    assert_eq!(pactum::runtime::kind(), RuntimeKind::Builtin);
    // The library's copy of pactum binds to the forwarder `Module::load` put in place (a
    // loaded `libtvm_ffi.so` whose calls land in this process's built-in runtime).
    let binding: String = function("runtime_binding").call_typed(()).unwrap();
    assert!(binding.starts_with("host:"), "{binding}");
    assert_eq!(module.kind().unwrap().as_str(), "library");
    assert!(module.implements("add_one").unwrap());
    assert!(!module.implements("not_exported").unwrap());
    assert!(module.get_function("not_exported").unwrap().is_none());
    let error = module.function("not_exported").unwrap_err();
    assert_eq!(
        kind_and_message(&error),
        (
            "ValueError".into(),
            "module has no function `not_exported`".into()
        )
    );
}

#[test]
fn the_library_loads_again_and_its_objects_outlive_the_handle() {
    let tensor = {
        let again = Module::load(support::kernels_library()).unwrap();
        let linspace = again.function("linspace").unwrap();
        linspace.call_typed::<_, Tensor>((0.0, 1.0, 3i64)).unwrap()
    };
    assert_eq!(tensor.to_vec::<f32>().unwrap(), vec![0.0, 0.5, 1.0]);
}

// ------------------------------------------------------------------------------- tensors

#[test]
fn add_one_writes_into_a_rust_tensor_in_place() {
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let y = Tensor::empty(&[2, 3], DataType::F32).unwrap();
    let data = y.data_ptr();
    let result: Any = function("add_one").call_typed((&x, &y)).unwrap();
    assert!(result.is_none());
    assert_eq!(y.data_ptr(), data);
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        vec![2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    );
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
}

#[test]
fn saxpy_updates_y_in_place() {
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let y = Tensor::from_slice(&[10.0f32, 20.0, 30.0], &[3]).unwrap();
    function("saxpy")
        .call_typed::<_, ()>((2.0, &x, &y))
        .unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![12.0, 24.0, 36.0]);
}

#[test]
fn tensors_made_by_the_library_are_read_in_rust() {
    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]).unwrap();
    let product: Tensor = function("matmul").call_typed((&a, &b)).unwrap();
    assert_eq!(product.shape(), &[2, 2]);
    assert_eq!(product.dtype(), DataType::F32);
    assert!(product.is_contiguous());
    assert_eq!(product.to_vec::<f32>().unwrap(), vec![4.0, 5.0, 10.0, 11.0]);

    let points: Tensor = function("linspace").call_typed((-1.0, 1.0, 5i64)).unwrap();
    assert_eq!(points.shape(), &[5]);
    assert_eq!(
        points.to_vec::<f32>().unwrap(),
        vec![-1.0, -0.5, 0.0, 0.5, 1.0]
    );
    // A tensor from the library goes back into it.
    let total: f64 = function("sum").call_typed((&product,)).unwrap();
    assert_eq!(total, 30.0);
}

// ------------------------------------------------------------------------------- scalars

#[test]
fn typed_handles_are_checked_once_against_the_recorded_schema() {
    // The exports record their `type_schema`; a handle that does not fit it is refused when
    // it is made, naming the signature and the first difference.
    let module = module();
    let error = module.typed::<(&str,), i64>("echo_int").unwrap_err();
    assert_eq!(error.kind(), pactum::ErrorKind::TYPE_ERROR);
    assert_eq!(
        error.message(),
        "typed handle for `echo_int(value: int) -> int`: argument 0 (value) is int, the handle passes str"
    );
    let error = module.typed::<(i64, i64), i64>("echo_int").unwrap_err();
    assert!(
        error
            .message()
            .ends_with("the function takes 1 argument(s), the handle passes 2"),
        "{error}"
    );
    let error = module.typed::<(i64,), String>("echo_int").unwrap_err();
    assert!(
        error
            .message()
            .ends_with("the function returns int, the handle expects str"),
        "{error}"
    );
    // What the callee converts is accepted: an int for a float parameter, None or the inner
    // type for an Optional one, any value for Any.
    let echo_float = module.typed::<(i64,), f64>("echo_float").unwrap();
    assert_eq!(echo_float.call((3,)).unwrap(), 3.0);
    module
        .typed::<(Option<i64>, i64), i64>("or_default")
        .unwrap();
    module.typed::<(i64, &str), i64>("or_default").unwrap_err();
    let error = module.typed::<(), ()>("not_exported").unwrap_err();
    assert!(error.message().contains("not_exported"), "{error}");
    // The schema itself is readable.
    let schema = module
        .function_schema("echo_int")
        .unwrap()
        .expect("recorded");
    assert_eq!(schema.render("echo_int"), "echo_int(value: int) -> int");
}

#[test]
fn scalars_round_trip() {
    let echo_int = module().typed::<(i64,), i64>("echo_int").unwrap();
    for value in [0, 1, -1, i64::MAX, i64::MIN, 1 << 53] {
        assert_eq!(echo_int.call((value,)).unwrap(), value);
    }
    let echo_float = module().typed::<(f64,), f64>("echo_float").unwrap();
    for value in [
        0.0,
        1.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::MAX,
    ] {
        assert_eq!(echo_float.call((value,)).unwrap(), value);
    }
    assert!(echo_float.call((f64::NAN,)).unwrap().is_nan());
    assert!(echo_float.call((-0.0,)).unwrap().is_sign_negative());
    let echo_bool = module().typed::<(bool,), bool>("echo_bool").unwrap();
    assert!(echo_bool.call((true,)).unwrap());
    assert!(!echo_bool.call((false,)).unwrap());
    let or_default = module()
        .typed::<(Option<i64>, i64), i64>("or_default")
        .unwrap();
    assert_eq!(or_default.call((None, 7)).unwrap(), 7);
    assert_eq!(or_default.call((Some(0), 7)).unwrap(), 0);
    assert_eq!(or_default.call((Some(-5), 7)).unwrap(), -5);
}

#[test]
fn strings_and_bytes_round_trip() {
    let greeting: String = function("greet").call_typed(("Rust ✓",)).unwrap();
    assert_eq!(greeting, "Hello, Rust ✓!");
    let echo_str = module().typed::<(&str,), String>("echo_str").unwrap();
    let long = "ü".repeat(5000) + "€";
    for value in [
        "",
        "seven77",
        "eight888",
        "日本語 🦀",
        "a\0b",
        long.as_str(),
    ] {
        assert_eq!(echo_str.call((value,)).unwrap(), value);
    }
    let echo_bytes = module().typed::<(&[u8],), Vec<u8>>("echo_bytes").unwrap();
    let all: Vec<u8> = (0..=255).collect();
    for value in [&b""[..], b"\0", b"a\0b\0", &all] {
        assert_eq!(echo_bytes.call((value,)).unwrap(), value);
    }
}

#[test]
fn any_values_round_trip() {
    let echo_any = function("echo_any");
    let values = [
        Any::from(-3i64),
        Any::from(2.5),
        Any::from(true),
        Any::from(()),
        Any::from("a longer string than seven bytes"),
        Any::from(&b"\0bytes"[..]),
        Any::from(DataType::F32),
    ];
    for value in &values {
        let echoed = echo_any.call(&[value.view()]).unwrap();
        assert_eq!(echoed.type_index(), value.type_index(), "{value:?}");
        assert_eq!(format!("{echoed:?}"), format!("{value:?}"));
    }
    let array = Any::from(Array::new([Any::from(1i64), Any::from("two")]));
    let echoed = echo_any.call(&[array.view()]).unwrap();
    assert!(
        echoed
            .as_object_ref()
            .unwrap()
            .ptr_eq(array.as_object_ref().unwrap()),
        "objects are passed by reference"
    );
}

// ------------------------------------------------------------------------------- callbacks

#[test]
fn rust_closures_are_called_back() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let plus_one = Function::from_typed(move |x: i64| {
        counter.fetch_add(1, Ordering::SeqCst);
        x + 1
    });
    let result: i64 = function("apply_twice")
        .call_typed((&plus_one, 20i64))
        .unwrap();
    assert_eq!(result, 42);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let times_ten = Function::from_typed(|x: i64| x * 10);
    let values = Array::new([Any::from(1i64), Any::from(2i64), Any::from(3i64)]);
    let mapped: Array = function("map_values")
        .call_typed((&times_ten, &values))
        .unwrap();
    let mapped: Vec<i64> = mapped.iter().map(|v| v.get::<i64>().unwrap()).collect();
    assert_eq!(mapped, vec![10, 20, 30]);
}

#[test]
fn closures_may_call_back_into_the_library() {
    let inner = Function::from_typed(|x: i64| x + 1);
    let outer = Function::from_typed(move |x: i64| -> Result<i64> {
        function("apply_twice").call_typed((&inner, x))
    });
    let result: i64 = function("apply_twice").call_typed((&outer, 1i64)).unwrap();
    assert_eq!(result, 8);
}

#[test]
fn errors_of_closures_propagate_through_the_library() {
    let failing = Function::from_typed(|x: i64| -> Result<i64> {
        pactum::bail!(IndexError, "closure failed on {x}")
    });
    let error = function("apply_twice")
        .call_typed::<_, i64>((&failing, 3i64))
        .unwrap_err();
    assert_eq!(
        kind_and_message(&error),
        ("IndexError".into(), "closure failed on 3".into())
    );
    // what the library itself received
    let failing = Function::from_typed(|| -> Result<i64> {
        Err(Error::new(
            pactum::ErrorKind::KEY_ERROR,
            "seen by the library",
        ))
    });
    let seen: Array = function("error_of").call_typed((&failing,)).unwrap();
    assert_eq!(seen.get_as::<String>(0).unwrap(), "KeyError");
    assert_eq!(seen.get_as::<String>(1).unwrap(), "seen by the library");
    // a closure whose parameter does not match what the library passes
    let wants_text = Function::from_typed(|s: String| s.len() as i64);
    let error = function("apply_twice")
        .call_typed::<_, i64>((&wants_text, 1i64))
        .unwrap_err();
    assert_eq!(error.kind(), "TypeError");
    assert!(error.message().contains("expected str, got int"), "{error}");
}

#[test]
fn a_panicking_closure_is_an_error_not_an_abort() {
    let panicking = Function::from_typed(|_: i64| -> i64 { panic!("closure panicked") });
    let error = function("apply_twice")
        .call_typed::<_, i64>((&panicking, 1i64))
        .unwrap_err();
    assert_eq!(
        kind_and_message(&error),
        ("RustPanic".into(), "closure panicked".into())
    );
}

// ------------------------------------------------------------------------------- containers

#[test]
fn maps_and_arrays_cross_in_both_directions() {
    let mapping = Map::from_pairs([
        (Any::from("a"), Any::from(1i64)),
        (Any::from("b"), Any::from(41i64)),
    ]);
    let summary: Array = function("summarize").call_typed((&mapping,)).unwrap();
    assert_eq!(summary.get_as::<i64>(0).unwrap(), 42);
    assert_eq!(summary.get_as::<i64>(1).unwrap(), 2);

    for n in [0i64, 3, 100] {
        let made: Map = function("make_map").call_typed((n,)).unwrap();
        assert_eq!(made.len(), n as usize);
        for i in 0..n {
            let value = made.get(&Any::from(format!("k{i}")).view()).unwrap();
            assert_eq!(value.get::<i64>().unwrap(), i);
        }
        assert!(made.get(&Any::from("missing").view()).is_none());
    }

    let made: Array = function("make_array").call_typed((2i64,)).unwrap();
    assert_eq!(made.len(), 4);
    assert_eq!(made.get_as::<i64>(1).unwrap(), 1);
    assert_eq!(made.get_as::<String>(2).unwrap(), "end");
    let inner: Array = made.get_as(3).unwrap();
    assert_eq!(inner.get_as::<f64>(0).unwrap(), 1.5);
    assert!(inner.get_as::<bool>(1).unwrap());
}

// ------------------------------------------------------------------------------- errors

#[test]
fn errors_raised_in_the_library_arrive_as_pactum_errors() {
    for kind in [
        "ValueError",
        "TypeError",
        "KeyError",
        "IndexError",
        "AttributeError",
        "RuntimeError",
        "MyKernelError",
    ] {
        let message = format!("{kind} from the library ✓");
        let error = call_err(
            "raise_error",
            &[Any::from(kind).view(), Any::from(message.as_str()).view()],
        );
        assert_eq!(kind_and_message(&error), (kind.to_owned(), message));
        assert!(
            error.backtrace().contains("examples/kernels/src/lib.rs"),
            "the error records where the library made it: {}",
            error.backtrace()
        );
    }
}

#[test]
fn argument_errors_name_the_parameter() {
    let y = Tensor::from_slice(&[0.0f32; 3], &[3]).unwrap();
    let error = call_err("add_one", &[Any::from(1i64).view(), (&y).into()]);
    assert_eq!(
        kind_and_message(&error),
        (
            "TypeError".into(),
            "Mismatched type on argument #0 (x) when calling: `add_one(x: ffi.Tensor[float32], \
             y: ffi.Tensor[float32]) -> None`: expected ffi.Tensor[float32], got int"
                .into()
        )
    );
    let error = call_err("add_one", &[(&y).into()]);
    assert_eq!(
        kind_and_message(&error),
        (
            "TypeError".into(),
            "Mismatched number of arguments when calling: `add_one(x: ffi.Tensor[float32], \
             y: ffi.Tensor[float32]) -> None`. Expected 2 but got 1 arguments"
                .into()
        )
    );
    let error = call_err("greet", &[Any::from(5i64).view()]);
    assert_eq!(error.kind(), "TypeError");
    assert!(
        error.message().starts_with(
            "Mismatched type on argument #0 (name) when calling: `greet(name: str) -> str`"
        ),
        "{error}"
    );
}

#[test]
fn tensor_argument_checks() {
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let error = call_err("add_one", &[(&x).into(), (&x).into()]);
    assert_eq!(error.kind(), "ValueError");
    assert!(
        error.message().contains("#1 (y)") && error.message().contains("overlaps argument #0 (x)"),
        "{error}"
    );
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);

    let doubles = Tensor::from_slice(&[1.0f64, 2.0, 3.0], &[3]).unwrap();
    let error = call_err("add_one", &[(&doubles).into(), (&x).into()]);
    assert_eq!(error.kind(), "TypeError");
    assert!(
        error
            .message()
            .ends_with("expected a float32 tensor, got float64"),
        "{error}"
    );

    let matrix = Tensor::from_slice(&[1.0f32; 4], &[2, 2]).unwrap();
    let other = Tensor::from_slice(&[1.0f32; 4], &[2, 2]).unwrap();
    let error = call_err(
        "saxpy",
        &[Any::from(1.0).view(), (&matrix).into(), (&other).into()],
    );
    assert_eq!(error.kind(), "ValueError");
    assert!(
        error
            .message()
            .contains("#1 (x) when calling: `saxpy(a: float, x: ffi.Tensor[float32, 1d], y: ffi.Tensor[float32, 1d]) -> None`: expected a 1-d tensor, got 2 dimension(s)"),
        "{error}"
    );

    let error = call_err("matmul", &[(&matrix).into(), (&x).into()]);
    assert_eq!(error.kind(), "ValueError");
    assert!(error.message().contains("#1 (b)"), "{error}");
}

#[test]
fn a_panic_in_the_library_is_an_error_not_an_abort() {
    let error = call_err("panic_now", &[Any::from("kaboom ✗").view()]);
    assert_eq!(
        kind_and_message(&error),
        ("RustPanic".into(), "kaboom ✗".into())
    );
    let echoed: i64 = function("echo_int").call_typed((5i64,)).unwrap();
    assert_eq!(echoed, 5, "the library keeps working");
}

// ------------------------------------------------------------------------------- metadata

#[test]
fn metadata_and_docs_are_read_from_the_library() {
    let module = module();
    let metadata = module.function_metadata("add_one").unwrap().unwrap();
    assert_eq!(
        metadata.as_str(),
        r#"{"type_schema":"{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[{\"type\":\"None\"}],\"params\":[{\"type\":\"ffi.Tensor\"},{\"type\":\"ffi.Tensor\"}]}}","arg_names":["x","y"],"arg_types":["ffi.Tensor[float32]","ffi.Tensor[float32]"],"return_type":"None"}"#
    );
    let metadata = module.function_metadata("or_default").unwrap().unwrap();
    assert!(
        metadata
            .as_str()
            .contains(r#"\"params\":[{\"type\":\"Optional\",\"args\":[{\"type\":\"int\"}]},{\"type\":\"int\"}]"#),
        "{metadata}"
    );
    assert!(
        metadata
            .as_str()
            .ends_with(r#""arg_names":["value","default"],"arg_types":["Optional[int]","int"],"return_type":"int"}"#)
    );
    assert_eq!(
        module.function_doc("add_one").unwrap().unwrap().as_str(),
        "Writes `x + 1` into `y`, elementwise (float32 tensors of the same shape)."
    );
    assert_eq!(
        module.function_doc("error_of").unwrap().unwrap().as_str(),
        "Calls `callback()`, which must fail, and returns what reached Rust: `[kind, message]`."
    );
    assert!(module.function_metadata("not_exported").unwrap().is_none());
    assert!(module.function_doc("not_exported").unwrap().is_none());
}
