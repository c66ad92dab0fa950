//! Hostile inputs at every boundary of the `pactum` crate, and the resource bounds of its
//! parsers (`docs/RELIABILITY.md`, "Hostile input" and "Resource bounds").
//!
//! Every test feeds input a careless or malicious caller could produce and checks the error the
//! user sees. Refusals that could cost time (huge files, deep nesting, huge length claims) must
//! come back within [`LIMIT`], measured around the call. Files of 1 GiB are sparse (made with
//! `set_len`), so they cost no disk; nothing may read or allocate them whole.
//!
//! The failures are printed (`HOSTILE <what>: <error>`) so that `--nocapture` shows exactly what
//! a user reads.

use std::fs;
use std::path::Path;

use pactum::sys::dlpack::DLTensor;
use pactum::sys::tvm_ffi::{TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFITypeIndex};
use pactum::{Any, AnyView, DataType, Device, Error, Function, Module, Result, Tensor, TensorView};
use pactum_testing::hostile::*;

// ---------------------------------------------------------------------------------------------
// Exported Rust functions (#[pactum::export]), called through their C entry points.

/// Sums a float32 tensor; the body reads the data, which checks device and layout.
#[pactum::export]
pub fn hostile_sum(x: TensorView<'_, f32>) -> Result<f64> {
    Ok(x.as_slice()?.iter().map(|&v| f64::from(v)).sum())
}

/// The total length of a string and a bytes value.
#[pactum::export]
pub fn hostile_len(text: &str, data: &[u8]) -> i64 {
    (text.len() + data.len()) as i64
}

// The entry points the macro emits (inside an anonymous `const`, so named here by symbol).
unsafe extern "C" {
    fn __tvm_ffi_hostile_sum(
        handle: *mut core::ffi::c_void,
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
    ) -> core::ffi::c_int;
    fn __tvm_ffi_hostile_len(
        handle: *mut core::ffi::c_void,
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
    ) -> core::ffi::c_int;
}

fn exported_sum() -> Function {
    // SAFETY: the macro's entry point follows the packed calling convention.
    unsafe { Function::from_safe_call_direct(__tvm_ffi_hostile_sum) }
}

fn exported_len() -> Function {
    // SAFETY: as above.
    unsafe { Function::from_safe_call_direct(__tvm_ffi_hostile_len) }
}

/// Calls the raw entry point of `hostile_sum` and returns the raised error.
fn raw_sum_error(args: *const TVMFFIAny, num_args: i32, result: *mut TVMFFIAny) -> Error {
    // SAFETY: the entry point checks what it is given; `args` holds `num_args` values or is
    // NULL, and `result` is a valid slot or NULL, which is what the test is about.
    let rc = unsafe { __tvm_ffi_hostile_sum(core::ptr::null_mut(), args, num_args, result) };
    assert_eq!(rc, -1);
    Error::take_raised().expect("an error was raised")
}

#[test]
fn export_null_or_negative_argument_arrays_are_count_errors() {
    let mut result = TVMFFIAny::NONE;
    for num_args in [1, -7] {
        let error = raw_sum_error(core::ptr::null(), num_args, &mut result);
        assert_eq!(error.kind(), "TypeError");
        let message = failure::<(), _>("export NULL args", Err(error));
        assert_says(
            &message,
            &["Mismatched number of arguments", "Expected 1 but got 0"],
        );
    }
}

#[test]
fn export_null_result_slot_is_an_error() {
    let x = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
    let args = [AnyView::from(&x)];
    let error = raw_sum_error(args.as_ptr().cast(), 1, core::ptr::null_mut());
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("export NULL result", Err(error));
    assert_says(&message, &["result pointer is NULL"]);
}

#[test]
fn export_null_tensor_pointers_are_refused() {
    // A DLTensorPtr holding NULL.
    let null_tensor = raw_any(
        TVMFFITypeIndex::DL_TENSOR_PTR,
        TVMFFIAnyValue {
            v_ptr: core::ptr::null_mut(),
        },
    );
    let mut result = TVMFFIAny::NONE;
    let error = raw_sum_error(&null_tensor, 1, &mut result);
    assert_eq!(error.kind(), "TypeError");
    let message = failure::<(), _>("export NULL DLTensor*", Err(error));
    assert_says(
        &message,
        &["argument #0 (x)", "expected ffi.Tensor[float32]"],
    );

    // A DLTensor of rank 2 whose shape pointer is NULL.
    let mut data = [0.0f32; 4];
    let mut tensor = DLTensor {
        data: data.as_mut_ptr().cast(),
        device: Device::CPU.into(),
        ndim: 2,
        dtype: DataType::F32.into(),
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };
    let tensor: *mut DLTensor = &raw mut tensor;
    let view = raw_any(
        TVMFFITypeIndex::DL_TENSOR_PTR,
        TVMFFIAnyValue {
            v_ptr: tensor.cast(),
        },
    );
    let error = raw_sum_error(&view, 1, &mut result);
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("export NULL shape", Err(error));
    assert_says(&message, &["malformed tensor: negative ndim or NULL shape"]);
    // SAFETY: `tensor` points at the local DLTensor above.
    unsafe { (*tensor).ndim = -1 };
    let message = failure::<(), _>(
        "export negative ndim",
        Err(raw_sum_error(&view, 1, &mut result)),
    );
    assert_says(&message, &["malformed tensor: negative ndim or NULL shape"]);
}

#[test]
fn export_device_and_layout_are_checked_where_the_body_reads_the_data() {
    let sum = exported_sum();
    let mut storage = [1.0f32; 4];
    // SAFETY: the tensor is only inspected (refused before any access).
    let on_gpu = unsafe {
        Tensor::from_raw_parts(
            storage.as_mut_ptr().cast(),
            DataType::F32,
            Device::cuda(0),
            &[4],
            &[1],
            || {},
        )
    }
    .unwrap();
    let error = sum.call(&[AnyView::from(&on_gpu)]).unwrap_err();
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("export device", Err(error));
    assert_says(
        &message,
        &["argument `x`: expected a CPU tensor, got one on cuda:0"],
    );

    // Every other element: a strided view.
    let base = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let (mut shape, mut strides) = ([2i64], [2i64]);
    let prototype = DLTensor {
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        ..*base.dl_tensor()
    };
    // SAFETY: the view stays inside `base`.
    let every_other = unsafe { base.unsafe_view(&prototype) }.unwrap();
    let error = sum.call(&[AnyView::from(&every_other)]).unwrap_err();
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("export layout", Err(error));
    assert_says(&message, &["argument `x`: expected a contiguous tensor"]);
    assert_eq!(
        sum.call(&[AnyView::from(&base)])
            .unwrap()
            .get::<f64>()
            .unwrap(),
        10.0
    );
}

#[test]
fn export_invalid_utf8_is_a_value_error_naming_the_parameter() {
    let text = c"\xff\xfe not UTF-8";
    let raw_str = raw_any(
        TVMFFITypeIndex::RAW_STR,
        TVMFFIAnyValue {
            v_c_str: text.as_ptr(),
        },
    );
    // SAFETY: the C string is alive for the call.
    let raw_str = unsafe { AnyView::from_raw(raw_str) };
    let bytes = Any::from(&b"ok"[..]);
    let error = exported_len().call(&[raw_str, bytes.view()]).unwrap_err();
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("export invalid UTF-8", Err(error));
    assert_says(
        &message,
        &["argument #0 (text)", "string is not valid UTF-8"],
    );
}

#[test]
fn export_corrupt_byte_arrays_are_errors_not_undefined_behaviour() {
    let len = exported_len();
    let text = Any::from("abc");
    // A ByteArrayPtr whose size no allocation can have, one with NULL data, and NULL itself.
    let payload = *b"12";
    let huge = TVMFFIByteArray {
        data: payload.as_ptr().cast(),
        size: usize::MAX - 1,
    };
    let null_data = TVMFFIByteArray {
        data: core::ptr::null(),
        size: 5,
    };
    let cases: [(*const TVMFFIByteArray, &str); 3] = [
        (&huge, "claims 18446744073709551614 bytes"),
        (&null_data, "claims 5 bytes of NULL data"),
        (core::ptr::null(), "a ByteArrayPtr value holds NULL"),
    ];
    for (array, expected) in cases {
        let value = raw_any(
            TVMFFITypeIndex::BYTE_ARRAY_PTR,
            TVMFFIAnyValue {
                v_ptr: array.cast_mut().cast(),
            },
        );
        // SAFETY: deliberately corrupt; the callee must detect it before reading.
        let value = unsafe { AnyView::from_raw(value) };
        let error = quickly("corrupt byte array", || {
            len.call(&[text.view(), value]).unwrap_err()
        });
        assert_eq!(error.kind(), "RustPanic");
        let message = failure::<(), _>("export corrupt ByteArrayPtr", Err(error));
        assert_says(&message, &["corrupt value from foreign code", expected]);
    }
    // A RawStr holding NULL.
    let null_str = raw_any(
        TVMFFITypeIndex::RAW_STR,
        TVMFFIAnyValue {
            v_c_str: core::ptr::null(),
        },
    );
    // SAFETY: deliberately corrupt, as above.
    let null_str = unsafe { AnyView::from_raw(null_str) };
    let error = len
        .call(&[null_str, Any::from(&b""[..]).view()])
        .unwrap_err();
    let message = failure::<(), _>("export NULL RawStr", Err(error));
    assert_says(&message, &["a RawStr value holds NULL"]);
}

/// A C callback that reports failure without raising an error (a broken callee).
unsafe extern "C" fn fails_silently(
    _handle: *mut core::ffi::c_void,
    _args: *const TVMFFIAny,
    _num_args: i32,
    _result: *mut TVMFFIAny,
) -> core::ffi::c_int {
    -1
}

#[test]
fn c_callbacks_that_fail_without_raising_are_internal_errors() {
    // SAFETY: the callback follows the packed convention (it only returns a status).
    let callback = unsafe { Function::from_safe_call_direct(fails_silently) };
    let error = callback.call(&[]).unwrap_err();
    assert_eq!(error.kind(), "InternalError");
    let message = failure::<(), _>("C callback -1 without an error", Err(error));
    assert_says(&message, &["function call failed without raising an error"]);
    // Called from inside another function: the same error reaches the outer caller.
    let apply = Function::from_typed(|f: Function| -> Result<i64> { f.call_typed(()) });
    let error = apply.call(&[AnyView::from(&callback)]).unwrap_err();
    assert_eq!(error.kind(), "InternalError");
}

// ---------------------------------------------------------------------------------------------
// Module loading.

#[test]
fn module_load_refuses_damaged_and_huge_files_quickly() {
    let dir = scratch("module");
    // The first 4 KiB of a real library.
    let head = fs::read(a_loaded_library()).unwrap();
    let truncated = dir.join("truncated.so");
    fs::write(&truncated, &head[..4096]).unwrap();
    let message = failure(
        "Module::load truncated",
        quickly("load truncated", || Module::load(&truncated)),
    );
    assert_says(
        &message,
        &["Failed to load dynamic shared library", "truncated.so"],
    );
    // 1 GiB of zeros.
    let huge = dir.join("huge.so");
    sparse_file(&huge, &[], GIB);
    let message = failure(
        "Module::load 1 GiB",
        quickly("load 1 GiB", || Module::load(&huge)),
    );
    assert_says(
        &message,
        &[
            "Failed to load dynamic shared library",
            "invalid ELF header",
        ],
    );
    // 1 GiB that starts like a library.
    let shaped = dir.join("shaped.so");
    sparse_file(&shaped, &head[..64], GIB);
    let message = failure(
        "Module::load 1 GiB ELF header",
        quickly("load 1 GiB ELF", || Module::load(&shaped)),
    );
    assert_says(&message, &["Failed to load dynamic shared library"]);
    // An ELF header whose program header table claims 65535 entries of 65535 bytes.
    let mut claims = head[..64].to_vec();
    claims[0x36..0x3a].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    let claiming = dir.join("claims.so");
    sparse_file(&claiming, &claims, 1 << 20);
    let message = failure(
        "Module::load header claims",
        quickly("load header claims", || Module::load(&claiming)),
    );
    assert_says(
        &message,
        &["the file is truncated: its program headers end at byte"],
    );
    // A directory, and an empty file.
    let directory = dir.join("directory.so");
    fs::create_dir(&directory).unwrap();
    let message = failure("Module::load directory", Module::load(&directory));
    assert_says(
        &message,
        &["Failed to load dynamic shared library", "directory.so"],
    );
    let empty = dir.join("empty.so");
    fs::write(&empty, b"").unwrap();
    let message = failure("Module::load empty", Module::load(&empty));
    assert_says(
        &message,
        &["Failed to load dynamic shared library", "empty.so"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn module_paths_that_are_not_utf8_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(b"./lib\xff\xfe.so"));
    let message = failure("Module::load non-UTF-8 path", Module::load(path));
    assert_says(&message, &["module path is not UTF-8"]);
}
