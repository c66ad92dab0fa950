//! Packed functions: dynamic and typed calls, raw callbacks, the registry, and panics.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use pactum::sys::tvm_ffi::TVMFFIAny;
use pactum::{Any, AnyView, Function};

#[test]
fn dynamic_calls_borrow_arguments_and_return_owned_results() {
    let concat = Function::from_packed(|args: &[AnyView<'_>]| {
        let mut out = std::string::String::new();
        for arg in args {
            out.push_str(arg.get::<&str>()?);
        }
        Ok(Any::from(out))
    });
    let long = Any::from("-a longer heap string-");
    let result = concat.call(&[Any::from("ab").view(), long.view()]).unwrap();
    assert_eq!(result.get::<&str>().unwrap(), "ab-a longer heap string-");
    assert_eq!(
        long.as_object_ref().unwrap().strong_count(),
        1,
        "arguments are borrowed, not retained"
    );
}

#[test]
fn typed_closures_check_count_and_types() {
    let add = Function::from_typed(|a: i64, b: f64| a as f64 + b);
    assert_eq!(add.call_typed::<_, f64>((1i64, 2.5f64)).unwrap(), 3.5);
    let error = add.call(&[1i64.into()]).unwrap_err();
    assert_eq!(error.kind(), "TypeError");
    assert_eq!(error.message(), "expected 2 argument(s), got 1");
    let error = add.call_typed::<_, f64>(("x", 1.0)).unwrap_err();
    assert_eq!(error.message(), "argument 0: expected int, got ffi.String");
    let typed = add.typed_unchecked::<(i64, f64), f64>();
    assert_eq!(typed.call((2, 0.5)).unwrap(), 2.5);
    let error = add
        .typed_unchecked::<(i64, f64), std::string::String>()
        .call((2, 0.5))
        .unwrap_err();
    assert_eq!(
        error.message(),
        "expected str, got float",
        "results are checked once, on return"
    );
}

#[test]
fn long_string_arguments_reach_string_parameters() {
    let echo = Function::from_typed(|s: std::string::String| s.len() as i64);
    let long = "x".repeat(100);
    assert_eq!(echo.call_typed::<_, i64>((long.as_str(),)).unwrap(), 100);
    assert_eq!(echo.call_typed::<_, i64>(("short",)).unwrap(), 5);
    let c_text = std::ffi::CString::new("as a C string").unwrap();
    assert_eq!(echo.call_typed::<_, i64>((c_text.as_c_str(),)).unwrap(), 13);
}

#[test]
fn user_errors_keep_their_kind_and_message() {
    let checked = Function::from_typed(|n: i64| -> pactum::Result<i64> {
        if n < 0 {
            pactum::bail!(ValueError, "negative input {n}");
        }
        Ok(n * 2)
    });
    assert_eq!(checked.call_typed::<_, i64>((4i64,)).unwrap(), 8);
    let error = checked.call_typed::<_, i64>((-1i64,)).unwrap_err();
    assert_eq!(
        (error.kind().as_ref(), error.message().as_ref()),
        ("ValueError", "negative input -1")
    );
    assert!(
        error.backtrace().contains("functions.rs"),
        "Rust errors record where they were made"
    );
}

#[test]
fn panics_become_errors_carrying_the_message() {
    let boom = Function::from_typed(|n: i64| -> i64 {
        if n == 3 {
            panic!("the number three is not allowed");
        }
        n
    });
    let error = boom.call_typed::<_, i64>((3i64,)).unwrap_err();
    assert_eq!(error.kind(), "RustPanic");
    assert_eq!(error.message(), "the number three is not allowed");
    assert_eq!(
        boom.call_typed::<_, i64>((4i64,)).unwrap(),
        4,
        "the function still works after a panic"
    );
}

#[test]
fn result_slots_holding_objects_are_released_or_restored() {
    // C++ `Function::CallPacked` may pass a slot still holding an object from an earlier call.
    let f = Function::from_typed(|fail: bool| -> pactum::Result<i64> {
        if fail {
            pactum::bail!(ValueError, "failing on request");
        }
        Ok(7)
    });
    let previous = Any::from("an object left in the slot by an earlier call");
    let object = previous.as_object_ref().unwrap().clone();
    let args = [*Any::from(false).as_raw()];
    let mut slot = previous.into_raw();
    // SAFETY: C-convention call with argument and result cells this test owns.
    let rc = unsafe { f.call_raw(args.as_ptr(), 1, &mut slot) };
    assert_eq!(rc, 0);
    // SAFETY: on success the slot holds an owned value.
    assert_eq!(unsafe { Any::from_raw(slot) }.get::<i64>().unwrap(), 7);
    assert_eq!(object.strong_count(), 1, "the previous value was released");

    let args = [*Any::from(true).as_raw()];
    let mut slot = Any::from(object.clone()).into_raw();
    // SAFETY: C-convention call with argument and result cells this test owns.
    let rc = unsafe { f.call_raw(args.as_ptr(), 1, &mut slot) };
    assert_eq!(rc, -1);
    assert_eq!(
        pactum::Error::take_raised().unwrap().message(),
        "failing on request"
    );
    // SAFETY: after a failure the slot holds the restored previous value.
    let restored = unsafe { Any::from_raw(slot) };
    assert!(
        restored.as_object_ref().unwrap().ptr_eq(&object),
        "the previous value was restored"
    );
}

static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn add_self(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    let base = handle as i64;
    // SAFETY: C-convention call with argument and result cells this test owns.
    let args = unsafe { AnyView::slice_from_raw(args, num_args as usize) };
    let value = args[0].get::<i64>().unwrap_or(0);
    // SAFETY: C-convention call with argument and result cells this test owns.
    unsafe { result.write(Any::from(base + value).into_raw()) };
    0
}

unsafe extern "C" fn count_delete(_: *mut c_void) {
    DELETED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn raw_callbacks_receive_self_and_are_deleted_once() {
    let before = DELETED.load(Ordering::SeqCst);
    // SAFETY: C-convention call with argument and result cells this test owns.
    let f = unsafe { Function::from_safe_call(100 as *mut c_void, add_self, Some(count_delete)) };
    assert_eq!(f.call_typed::<_, i64>((5i64,)).unwrap(), 105);
    let clone = f.clone();
    drop(f);
    assert_eq!(DELETED.load(Ordering::SeqCst), before);
    drop(clone);
    assert_eq!(DELETED.load(Ordering::SeqCst), before + 1);
}

#[test]
fn global_registry_registers_overrides_and_refuses_duplicates() {
    let name = "pactum.test.registry.square";
    Function::from_typed(|x: i64| x * x)
        .register_global(name, false)
        .unwrap();
    let found = Function::get_global(name).expect("registered");
    assert_eq!(found.call_typed::<_, i64>((7i64,)).unwrap(), 49);
    let error = Function::from_typed(|x: i64| x)
        .register_global(name, false)
        .unwrap_err();
    assert_eq!(
        error.message(),
        format!("Global Function `{name}` is already registered")
    );
    Function::from_typed(|x: i64| -x)
        .register_global(name, true)
        .unwrap();
    assert_eq!(
        Function::get_global(name)
            .unwrap()
            .call_typed::<_, i64>((7i64,))
            .unwrap(),
        -7
    );
    assert!(Function::get_global("pactum.test.registry.missing").is_none());
    // The runtime's own globals are there too.
    let size = Function::get_global("ffi.ArraySize").unwrap();
    assert_eq!(
        size.call_typed::<_, i64>((&pactum::Array::new([Any::none()]),))
            .unwrap(),
        1
    );
}

#[test]
fn global_functions_report_mismatches_like_the_official_runtime() {
    let size = Function::get_global("ffi.ArraySize").unwrap();
    let error = size.call(&[1i64.into()]).unwrap_err();
    assert_eq!(
        error.message(),
        "Mismatched type on argument #0 when calling: `ffi.ArraySize(0: ffi.Array) -> int`. Expected `ffi.Array` but got `int`"
    );
    let error = size.call(&[]).unwrap_err();
    assert_eq!(
        error.message(),
        "Mismatched number of arguments when calling: `ffi.ArraySize(0: ffi.Array) -> int`. Expected 1 but got 0 arguments"
    );
}

#[test]
fn string_globals_take_any_bytes_like_the_official_runtime() {
    // The official `String` is a byte string: names that are not UTF-8 still work.
    let name = c"test.globals.\xff";
    let copy = Function::get_global("ffi.String").unwrap();
    let copied = copy.call(&[pactum::AnyView::from(name)]).unwrap();
    assert_eq!(copied.type_key(), "ffi.String");
    assert!(
        copied.get::<&str>().is_err(),
        "the copy keeps the byte that is not UTF-8"
    );
    let remove = Function::get_global("ffi.FunctionRemoveGlobal").unwrap();
    for argument in [pactum::AnyView::from(name), copied.view()] {
        let removed = remove.call(&[argument]).unwrap();
        assert!(
            !removed.get::<bool>().unwrap(),
            "nothing is registered under that name"
        );
    }
    let metadata = Function::get_global("ffi.GetGlobalFuncMetadata").unwrap();
    let error = metadata.call(&[copied.view()]).unwrap_err();
    assert!(
        error
            .message()
            .contains("Global Function is not found: test.globals.\u{fffd}"),
        "{error}"
    );
    // Other types are still a TypeError.
    let error = remove.call(&[7i64.into()]).unwrap_err();
    assert_eq!(error.kind(), "TypeError");
}

#[test]
fn global_typed_handles_are_checked_against_the_recorded_schema() {
    // The runtime's own globals record their signatures.
    let metadata_of =
        Function::global_typed::<(&str,), pactum::String>("ffi.GetGlobalFuncMetadata").unwrap();
    let text = metadata_of.call(("ffi.GetGlobalFuncMetadata",)).unwrap();
    assert!(text.as_str().contains("named_args"), "{}", text.as_str());
    let error =
        Function::global_typed::<(i64,), pactum::String>("ffi.GetGlobalFuncMetadata").unwrap_err();
    assert_eq!(error.kind(), pactum::ErrorKind::TYPE_ERROR);
    assert!(
        error
            .message()
            .contains("argument 0 (arg0) is str, the handle passes int"),
        "{error}"
    );
    // A global registered without metadata records no schema: no checked handle, but an
    // unchecked one (whose calls the callee still checks).
    let name = "pactum.test.global_typed_unrecorded";
    Function::from_typed(|a: i64| a * 2)
        .register_global(name, true)
        .unwrap();
    let error = Function::global_typed::<(i64,), i64>(name).unwrap_err();
    assert!(
        error.message().contains("records no type schema"),
        "{error}"
    );
    let double = Function::get_global(name)
        .unwrap()
        .typed_unchecked::<(i64,), i64>();
    assert_eq!(double.call((21,)).unwrap(), 42);
    let error = Function::global_typed::<(), ()>("pactum.test.no_such_global").unwrap_err();
    assert_eq!(error.kind(), pactum::ErrorKind::VALUE_ERROR);
}
