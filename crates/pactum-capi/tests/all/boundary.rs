//! Every kind of `extern "C"` entry point runs through pactum's one FFI boundary: a panic forced
//! at the entry of each (with the `fault-injection` feature, enabled for this crate's tests
//! only) is reported the documented way, and the process carries on.
//!
//! - C API functions of pactum's runtime, called through `pactum::runtime::api()` and through this
//!   crate's exported symbols: status functions return -1 with a `RustPanic` error raised,
//!   value functions return their fallback with the error raised, void functions raise it,
//!   and the functions that make errors return -1 leaving the error slot alone.
//! - An exported `#[pactum::export]` symbol and its metadata getter: -1 and `RustPanic`.
//! - Callbacks (the `safe_call` of closures, C callbacks and module symbols, an error's
//!   `update_backtrace`): the caller sees a `RustPanic` error.
//! - Deleters (of objects and of exported DLPack tensors): the panic is contained and counted.
//!
//! The injected panic fires inside the boundary before the body runs, so it also shows that a
//! panic in the boundary's own entry code is caught.

use core::ffi::{c_char, c_int, c_void};

use pactum::fault_injection::{self, EntryKind};
use pactum::runtime::{self, RuntimeKind};
use pactum::sys::tvm_ffi::{TVMFFIAny, TVMFFIByteArray, TVMFFIObjectHandle, TVMFFIVersion};
use pactum::{Any, AnyView, Error, Function, Shape, Tensor};

/// Exported like any library function; the test calls its C symbols directly.
#[pactum::export]
fn add_one(x: i64) -> i64 {
    x + 1
}

unsafe extern "C" {
    fn __tvm_ffi_add_one(
        handle: *mut c_void,
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
    ) -> c_int;
    fn __tvm_ffi__metadata_add_one(
        handle: *mut c_void,
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
    ) -> c_int;
}

/// Keeps the injected panics out of the test output (other panics print as usual).
fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&fault_injection::MESSAGE) {
                default(info);
            }
        }));
    });
}

/// Arms a panic at the next entry point of `kind`, runs `call`, and checks that it fired.
fn panicking_at<R>(kind: EntryKind, call: impl FnOnce() -> R) -> R {
    quiet_injected_panics();
    fault_injection::panic_at_next_entry(kind);
    let outcome = call();
    let armed = fault_injection::armed();
    fault_injection::disarm();
    assert_eq!(armed, None, "no {kind:?} entry point was entered");
    outcome
}

/// The injected panic, raised as an error.
fn assert_panic_raised(what: &str) {
    let error = Error::take_raised().unwrap_or_else(|| panic!("{what}: nothing was raised"));
    assert_panic_error(what, &error);
}

fn assert_panic_error(what: &str, error: &Error) {
    assert_eq!(
        (error.kind().as_ref(), error.message().as_ref()),
        ("RustPanic", fault_injection::MESSAGE),
        "{what}"
    );
}

fn assert_nothing_raised(what: &str) {
    assert!(
        Error::take_raised().is_none(),
        "{what}: an error was raised"
    );
}

fn bytes(text: &str) -> TVMFFIByteArray {
    TVMFFIByteArray {
        data: text.as_ptr().cast::<c_char>(),
        size: text.len(),
    }
}

fn handle(value: &Any) -> TVMFFIObjectHandle {
    value.as_object_ref().expect("an object").as_raw().cast()
}

#[test]
fn c_api_status_functions_return_minus_one_with_a_panic_raised() {
    assert_eq!(runtime::kind(), RuntimeKind::Builtin);
    let api = runtime::api();
    let object = Any::from("a string long enough to be an object");

    // SAFETY: a live object; the injected panic fires before the count changes.
    let rc = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIObjectIncRef)(handle(&object))
    });
    assert_eq!(rc, -1);
    assert_panic_raised("TVMFFIObjectIncRef");

    // The same through this crate's exported C symbol.
    // SAFETY: as above; no reference is given up because the body never runs.
    let rc = panicking_at(EntryKind::CApi, || unsafe {
        tvm_ffi::TVMFFIObjectDecRef(handle(&object))
    });
    assert_eq!(rc, -1);
    assert_panic_raised("TVMFFIObjectDecRef");

    let mut index = 0;
    let key = bytes("ffi.String");
    // SAFETY: valid key and out pointer.
    let rc = panicking_at(EntryKind::CApi, || unsafe {
        tvm_ffi::TVMFFITypeKeyToIndex(&key, &mut index)
    });
    assert_eq!((rc, index), (-1, 0));
    assert_panic_raised("TVMFFITypeKeyToIndex");

    // The packed call itself: the callee never runs.
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let function = Function::from_typed(move || {
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a live function, no arguments, a result slot holding None.
    let rc = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIFunctionCall)(
            function.as_object_ref().as_raw().cast(),
            core::ptr::null_mut(),
            0,
            &mut result,
        )
    });
    assert_eq!(rc, -1);
    assert_panic_raised("TVMFFIFunctionCall");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(result.type_index, TVMFFIAny::NONE.type_index);

    // The functions that make errors fail without touching the error slot.
    Error::new(pactum::ErrorKind::VALUE_ERROR, "already raised").set_raised();
    let mut made: TVMFFIObjectHandle = core::ptr::null_mut();
    let (kind, message) = (bytes("ValueError"), bytes("made"));
    // SAFETY: valid byte arrays and out pointer.
    let rc = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIErrorCreate)(&kind, &message, core::ptr::null(), &mut made)
    });
    assert_eq!(rc, -1);
    assert!(made.is_null());
    let kept = Error::take_raised().expect("the slot is untouched");
    assert_eq!(kept.message(), "already raised");

    // Everything still works afterwards.
    // SAFETY: a live object; the reference taken is given back just below.
    unsafe {
        assert_eq!((api.TVMFFIObjectIncRef)(handle(&object)), 0);
        assert_eq!((api.TVMFFIObjectDecRef)(handle(&object)), 0);
    }
    assert_eq!(function.call(&[]).unwrap().type_index(), 0);
    assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn c_api_value_functions_return_their_fallback_with_a_panic_raised() {
    let api = runtime::api();

    // SAFETY: a registered type index.
    let info = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIGetTypeInfo)(pactum::sys::tvm_ffi::TVMFFITypeIndex::STR.0)
    });
    assert!(info.is_null());
    assert_panic_raised("TVMFFIGetTypeInfo");

    let key = bytes("pactum.test.BoundaryType");
    // SAFETY: a valid key; -2 only looks the key up.
    let index = panicking_at(EntryKind::CApi, || unsafe {
        tvm_ffi::TVMFFITypeGetOrAllocIndex(&key, -1, 0, 0, 0, -2)
    });
    assert_eq!(index, -1);
    assert_panic_raised("TVMFFITypeGetOrAllocIndex");

    // SAFETY: no pointer arguments.
    let stream = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIEnvGetStream)(2, 0)
    });
    assert!(stream.is_null());
    assert_panic_raised("TVMFFIEnvGetStream");

    // SAFETY: no arguments.
    let allocator = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIGetCustomAllocator)()
    });
    assert!(
        !allocator.is_null(),
        "the builtin allocator is the fallback"
    );
    assert_panic_raised("TVMFFIGetCustomAllocator");

    let big = Any::from(7i64);
    // SAFETY: a live Int value.
    let content = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIBigIntGetContentByteArray)(big.as_raw())
    });
    assert_eq!((content.data.is_null(), content.size), (true, 0));
    assert_panic_raised("TVMFFIBigIntGetContentByteArray");

    // TVMFFIBacktrace had no guard before: its fallback is an empty backtrace, never NULL.
    // SAFETY: NUL-terminated strings.
    let backtrace = panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIBacktrace)(c"boundary.rs".as_ptr(), 1, c"test".as_ptr(), 0)
    });
    assert!(!backtrace.is_null());
    // SAFETY: the returned byte array is valid until the next call on this thread.
    assert_eq!(unsafe { (*backtrace).size }, 0);
    assert_panic_raised("TVMFFIBacktrace");
    // SAFETY: as above.
    let backtrace =
        unsafe { (api.TVMFFIBacktrace)(c"boundary.rs".as_ptr(), 1, c"test".as_ptr(), 0) };
    // SAFETY: as above.
    assert!(unsafe { (*backtrace).size } > 0);
}

#[test]
fn c_api_void_functions_raise_the_panic() {
    let api = runtime::api();

    let mut version = TVMFFIVersion {
        major: 99,
        minor: 99,
        patch: 99,
    };
    // SAFETY: a valid out pointer.
    panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIGetVersion)(&mut version)
    });
    assert_eq!(version.major, 99, "the body did not run");
    assert_panic_raised("TVMFFIGetVersion");

    // SAFETY: NUL-terminated strings.
    panicking_at(EntryKind::CApi, || unsafe {
        tvm_ffi::TVMFFIErrorSetRaisedFromCStr(c"KeyError".as_ptr(), c"requested".as_ptr())
    });
    assert_panic_raised("TVMFFIErrorSetRaisedFromCStr raises the panic, not the request");

    let requested = Error::new(pactum::ErrorKind::KEY_ERROR, "requested");
    // SAFETY: a live error object.
    panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIErrorSetRaised)(requested.as_object_ref().as_raw().cast())
    });
    assert_panic_raised("TVMFFIErrorSetRaised");

    Error::new(pactum::ErrorKind::KEY_ERROR, "in the slot").set_raised();
    let mut moved: TVMFFIObjectHandle = core::ptr::null_mut();
    // SAFETY: a valid out pointer.
    panicking_at(EntryKind::CApi, || unsafe {
        (api.TVMFFIErrorMoveFromRaised)(&mut moved)
    });
    assert!(moved.is_null());
    assert_panic_raised("TVMFFIErrorMoveFromRaised");
}

#[test]
fn exported_symbols_return_minus_one_with_a_panic_raised() {
    let args = [*Any::from(41i64).as_raw()];
    let mut result = TVMFFIAny::NONE;
    // SAFETY: one valid argument and a result slot holding None.
    let rc = panicking_at(EntryKind::Export, || unsafe {
        __tvm_ffi_add_one(core::ptr::null_mut(), args.as_ptr(), 1, &mut result)
    });
    assert_eq!(rc, -1);
    assert_panic_raised("__tvm_ffi_add_one");
    assert_eq!(result.type_index, TVMFFIAny::NONE.type_index);

    // A slot still holding an object (as C++ may pass it) keeps it.
    let previous = Any::from("an object left in the slot by an earlier call");
    let object = previous.as_object_ref().unwrap().clone();
    let mut slot = previous.into_raw();
    // SAFETY: as above, with an owned object in the slot.
    let rc = panicking_at(EntryKind::Export, || unsafe {
        __tvm_ffi_add_one(core::ptr::null_mut(), args.as_ptr(), 1, &mut slot)
    });
    assert_eq!(rc, -1);
    assert_panic_raised("__tvm_ffi_add_one with an occupied slot");
    // SAFETY: the slot still owns the object it held.
    let restored = unsafe { Any::from_raw(slot) };
    assert!(restored.as_object_ref().unwrap().ptr_eq(&object));

    // SAFETY: a result slot holding None.
    let rc = panicking_at(EntryKind::Export, || unsafe {
        __tvm_ffi__metadata_add_one(core::ptr::null_mut(), core::ptr::null(), 0, &mut result)
    });
    assert_eq!(rc, -1);
    assert_panic_raised("__tvm_ffi__metadata_add_one");

    // SAFETY: as in the first call.
    let rc = unsafe { __tvm_ffi_add_one(core::ptr::null_mut(), args.as_ptr(), 1, &mut result) };
    assert_eq!(rc, 0);
    // SAFETY: the call succeeded, so the slot holds an owned value.
    assert_eq!(unsafe { Any::from_raw(result) }.cast::<i64>().unwrap(), 42);
}

unsafe extern "C" fn c_callback(
    _self: *mut c_void,
    _args: *const TVMFFIAny,
    _num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: the caller passes a valid result slot holding None.
    unsafe { result.write(*Any::from(5i64).as_raw()) };
    0
}

#[test]
fn callbacks_report_the_panic_to_their_caller() {
    let closure = Function::from_typed(|x: i64| x * 2);
    let error = panicking_at(EntryKind::Callback, || {
        closure.call_typed::<_, i64>((21i64,)).unwrap_err()
    });
    assert_panic_error("a closure's safe_call", &error);
    assert_eq!(closure.call_typed::<_, i64>((21i64,)).unwrap(), 42);

    // SAFETY: the callback follows the convention and needs no state.
    let foreign = unsafe { Function::from_safe_call(core::ptr::null_mut(), c_callback, None) };
    let error = panicking_at(EntryKind::Callback, || foreign.call(&[]).unwrap_err());
    assert_panic_error("a C callback's wrapper", &error);
    assert_eq!(foreign.call(&[]).unwrap().cast::<i64>().unwrap(), 5);

    // A module symbol's wrapper: the exported symbol, served as a system-library symbol.
    let name = c"__tvm_ffi_boundary_add_one";
    // SAFETY: a NUL-terminated name and a safe-call symbol that lives forever.
    let rc = unsafe {
        tvm_ffi::TVMFFIEnvModRegisterSystemLibSymbol(
            name.as_ptr(),
            __tvm_ffi_add_one as *mut c_void,
        )
    };
    assert_eq!(rc, 0);
    let system_lib = Function::get_global("ffi.SystemLib").expect("ffi.SystemLib");
    let module = system_lib
        .call_typed::<_, pactum::Module>(("boundary_",))
        .unwrap();
    let symbol = module.function("add_one").unwrap();
    let args: [AnyView<'_>; 1] = [1i64.into()];
    let error = panicking_at(EntryKind::Callback, || symbol.call(&args).unwrap_err());
    assert_panic_error("a module symbol's wrapper", &error);
    assert_eq!(symbol.call(&args).unwrap().cast::<i64>().unwrap(), 2);

    // An error's update_backtrace hook has no status: the panic is raised.
    let error = Error::new(pactum::ErrorKind::VALUE_ERROR, "with a backtrace");
    let before = error.backtrace();
    panicking_at(EntryKind::Callback, || {
        error.update_backtrace("more\n", true)
    });
    assert_panic_raised("update_backtrace");
    assert_eq!(error.backtrace(), before);
}

#[test]
fn deleters_contain_the_panic() {
    let before = fault_injection::deleter_panics();

    // An object around a Rust payload (a closure).
    let closure = Function::from_typed(|x: i64| x);
    panicking_at(EntryKind::Deleter, || drop(closure));
    assert_eq!(fault_injection::deleter_panics(), before + 1);

    // An object with a variable-size body.
    let shape = Shape::new(&[2, 3, 4]);
    panicking_at(EntryKind::Deleter, || drop(shape));
    assert_eq!(fault_injection::deleter_panics(), before + 2);

    // An exported DLPack tensor's deleter (the tensor stays alive: its reference leaks).
    let tensor = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let managed = tensor.to_dlpack();
    // SAFETY: a managed tensor we own, released exactly once through its deleter.
    panicking_at(EntryKind::Deleter, || unsafe {
        ((*managed).deleter.expect("a deleter"))(managed)
    });
    assert_eq!(fault_injection::deleter_panics(), before + 3);
    assert_nothing_raised("deleters");

    // Nothing armed: deleters run normally.
    drop(Shape::new(&[1]));
    drop(Function::from_typed(|| 0i64));
    assert_eq!(fault_injection::deleter_panics(), before + 3);
    assert_eq!(tensor.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
}
