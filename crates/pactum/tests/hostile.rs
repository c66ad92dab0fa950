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
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pactum::iree::signature::abi_json::IreeAbi;
use pactum::iree::signature::cconv::CallingConvention;
use pactum::iree::signature::declaration::Declaration;
use pactum::iree::signature::lexer::Lexer;
use pactum::iree::signature::raw::RawSignature;
use pactum::iree::signature::sip::SipSignature;
use pactum::iree::structured::StructuredFunction;
use pactum::iree::vmfb::VmfbFile;
use pactum::mlir::{FunctionType, MlirLibrary};
use pactum::sys::dlpack::DLTensor;
use pactum::sys::tvm_ffi::{TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFITypeIndex};
use pactum::{
    Any, AnyView, Array, DataType, Device, Error, Function, List, Map, Module, Result, Tensor,
    TensorView,
};

/// How long a refusal may take. Generous: debug build, tests running in parallel.
const LIMIT: Duration = Duration::from_secs(2);

/// One GiB: the size of the sparse files.
const GIB: u64 = 1 << 30;

/// Runs `f`, checks it came back within [`LIMIT`], and returns its value.
fn quickly<T>(what: &str, f: impl FnOnce() -> T) -> T {
    // Instrumented runs (scripts/sanitize.sh sets PACTUM_SANITIZER) are several times slower;
    // the limit still separates "refused at once" from "worked through the claim".
    let limit = if std::env::var_os("PACTUM_SANITIZER").is_some() {
        LIMIT * 10
    } else {
        LIMIT
    };
    let start = Instant::now();
    let value = f();
    let elapsed = start.elapsed();
    assert!(elapsed < limit, "{what} took {elapsed:?} (limit {limit:?})");
    value
}

/// The message of an expected failure, printed for the record.
fn failure<T: std::fmt::Debug, E: std::fmt::Display>(what: &str, result: Result<T, E>) -> String {
    let message = match result {
        Ok(value) => panic!("{what}: expected an error, got {value:?}"),
        Err(error) => error.to_string(),
    };
    eprintln!("HOSTILE {what}: {message}");
    message
}

/// Asserts that `message` contains every part.
fn assert_says(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "{message:?} should contain {part:?}"
        );
    }
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-hostile-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A sparse file of `len` bytes that starts with `head`.
fn sparse_file(path: &Path, head: &[u8], len: u64) {
    fs::write(path, head).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Runs `f` on a thread with a large stack: deep values are built and dropped recursively, and
/// debug builds spend several KiB of stack per level of a 256-level parse.
fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// A value nested `depth` arrays deep around an int.
fn nested_arrays(depth: usize) -> Any {
    let mut value = Any::from(1i64);
    for _ in 0..depth {
        value = Any::from(Array::new([value]));
    }
    value
}

/// A shared library this process has loaded (the C library), for copies to damage.
fn a_loaded_library() -> PathBuf {
    let maps = fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains("libc.so"))
        .map(PathBuf::from)
        .expect("libc is mapped")
}

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

fn raw_any(type_index: TVMFFITypeIndex, value: TVMFFIAnyValue) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index.0,
        small_str_len: 0,
        value,
    }
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

// ---------------------------------------------------------------------------------------------
// MLIR memref calls.

#[path = "mlir/table.rs"]
mod table;

/// The MLIR test libraries (`tests/mlir/build.sh`), or `None` when skipping.
fn mlir_built() -> Option<&'static Path> {
    table::built()
}

#[test]
fn mlir_libraries_that_are_missing_damaged_or_huge_are_refused_quickly() {
    let dir = scratch("mlir-open");
    // Each file is refused before any code in it could run.
    let open = |path: &Path| {
        // SAFETY: see above; nothing is loaded.
        unsafe { MlirLibrary::open(path) }.map(|_| ())
    };
    let message = failure("MlirLibrary::open missing", open(&dir.join("missing.so")));
    assert_says(&message, &["missing.so"]);
    let head = fs::read(a_loaded_library()).unwrap();
    let truncated = dir.join("truncated.so");
    fs::write(&truncated, &head[..4096]).unwrap();
    let message = failure(
        "MlirLibrary::open truncated",
        quickly("open truncated", || open(&truncated)),
    );
    assert_says(&message, &["truncated.so", "the file is truncated"]);
    let huge = dir.join("huge.so");
    sparse_file(&huge, &head[..64], GIB);
    let message = failure(
        "MlirLibrary::open 1 GiB",
        quickly("open 1 GiB", || open(&huge)),
    );
    assert_says(&message, &["huge.so"]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn mlir_functions_the_library_lacks_are_refused() {
    let Some(built) = mlir_built() else {
        return;
    };
    // SAFETY: our test library, declared from its own source.
    let library = unsafe { MlirLibrary::open(built.join("libmemref_core.so")) }.unwrap();
    let message = failure(
        "MLIR missing symbol",
        library.function("func.func @no_such_function(%a: memref<?xf32>)"),
    );
    assert_says(&message, &["no_such_function"]);
}

#[test]
fn mlir_tensors_with_null_shapes_are_refused() {
    let Some(built) = mlir_built() else {
        return;
    };
    // SAFETY: our test library, declared from its own source.
    let library = unsafe { MlirLibrary::open(built.join("libmemref_core.so")) }.unwrap();
    let add_one = library
        .function("func.func @add_one(%in: memref<?xf32>, %out: memref<?xf32>)")
        .unwrap();
    let mut data = [0.0f32; 2];
    let mut tensor = DLTensor {
        data: data.as_mut_ptr().cast(),
        device: Device::CPU.into(),
        ndim: 1,
        dtype: DataType::F32.into(),
        shape: core::ptr::null_mut(),
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    };
    let view = raw_any(
        TVMFFITypeIndex::DL_TENSOR_PTR,
        TVMFFIAnyValue {
            v_ptr: (&raw mut tensor).cast(),
        },
    );
    // SAFETY: the DLTensor lives on this stack frame for the call.
    let view = unsafe { AnyView::from_raw(view) };
    let out = Tensor::empty(&[2], DataType::F32).unwrap();
    let message = failure(
        "MLIR NULL shape",
        add_one.call(&[view, AnyView::from(&out)]),
    );
    assert_says(&message, &["argument 0: the tensor has no shape array"]);
}

#[test]
fn mlir_declarations_huge_or_deep_are_refused_quickly() {
    let Some(built) = mlir_built() else {
        return;
    };
    // SAFETY: our test library.
    let library = unsafe { MlirLibrary::open(built.join("libmemref_core.so")) }.unwrap();
    let long = format!(
        "func.func @add_one(%a: memref<{}f32>, %b: memref<?xf32>)",
        "1x".repeat(10_000_000)
    );
    let message = failure(
        "MLIR 20 MB declaration",
        quickly("20 MB declaration", || library.function(&long)),
    );
    assert_says(&message, &["at most 1048576 bytes are accepted"]);
    // Under the length cap, but a body (which is skipped) nested far too deep.
    let deep = format!(
        "func.func @add_one(%a: memref<?xf32>, %b: memref<?xf32>) {{{}",
        "{[(".repeat(100_000)
    );
    let message = failure(
        "MLIR 100000-deep declaration",
        quickly("deep declaration", || library.function(&deep)),
    );
    assert_says(&message, &["nested deeper than 256 levels"]);
}

// ---------------------------------------------------------------------------------------------
// Structured calls.

#[test]
fn structured_values_nested_too_deep_are_refused() {
    on_big_stack(|| {
        let flat = Function::from_packed(|args: &[AnyView<'_>]| Ok(Any::from(args.len() as i64)));
        let structured = StructuredFunction::dynamic(flat);
        // 256 levels pass.
        let fine = nested_arrays(255);
        assert_eq!(
            structured
                .call(&[fine.view()], &[])
                .unwrap()
                .get::<i64>()
                .unwrap(),
            1
        );
        for depth in [257, 100_000] {
            let deep = nested_arrays(depth);
            let error = quickly("deep value", || {
                structured.call(&[deep.view()], &[]).unwrap_err()
            });
            assert_eq!(error.kind(), "ValueError");
            let message = failure::<(), _>("structured deep value", Err(error));
            assert_says(
                &message,
                &["args[0][0][0]", "values nested deeper than 256 levels"],
            );
        }
    });
}

#[test]
fn structured_lists_that_contain_themselves_are_refused() {
    let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
    let structured = StructuredFunction::dynamic(flat);
    let list = List::new();
    list.push(Any::from(1i64));
    list.push(Any::from(list.clone()));
    let error = quickly("cyclic list", || {
        structured.call(&[AnyView::from(&list)], &[]).unwrap_err()
    });
    let message = failure::<(), _>("structured cyclic list", Err(error));
    assert_says(
        &message,
        &["args[0][1][1][1]", "(a list or dict that contains itself?)"],
    );
    // Break the cycle so the list can be freed.
    list.clear();

    // A dict holding a list holding that dict.
    let inner = List::new();
    let dict = pactum::Dict::new();
    dict.insert(Any::from("x"), Any::from(inner.clone()));
    inner.push(Any::from(dict.clone()));
    let error = quickly("cyclic dict", || {
        structured.call(&[AnyView::from(&dict)], &[]).unwrap_err()
    });
    let message = failure::<(), _>("structured cyclic dict", Err(error));
    assert_says(
        &message,
        &["args[0][\"x\"][0][\"x\"]", "nested deeper than 256"],
    );
    inner.clear();
    dict.clear();
}

#[test]
fn structured_reference_arrays_of_unknown_rank_are_bounded() {
    on_big_stack(|| {
        let signature =
            IreeAbi::parse(r#"{"a":[["ndarray",["slist","i32"],null]],"r":[],"v":1}"#).unwrap();
        let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
        let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
        let deep = nested_arrays(10_000);
        let error = quickly("deep reference array", || {
            structured.call(&[deep.view()], &[]).unwrap_err()
        });
        let message = failure::<(), _>("structured deep reference array", Err(error));
        assert_says(&message, &["values nested deeper than 256 levels"]);
    });
}

#[test]
fn structured_results_claiming_huge_ranks_are_refused() {
    // A flat function returning a reference array `[values, dims]` whose dims claim rank 100000.
    let signature =
        IreeAbi::parse(r#"{"a":[],"r":[["ndarray",["slist","i32"],null]],"v":1}"#).unwrap();
    let flat = Function::from_packed(|_: &[AnyView<'_>]| {
        let values = Array::new([Any::from(Array::new([Any::from(1i64)]))]);
        let dims = Array::new((0..100_000).map(|_| Any::from(1i64)));
        Ok(Any::from(Array::new([Any::from(values), Any::from(dims)])))
    });
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
    let error = quickly("huge rank", || structured.call(&[], &[]).unwrap_err());
    assert_eq!(error.kind(), "ValueError");
    let message = failure::<(), _>("structured result rank", Err(error));
    assert_says(
        &message,
        &["results[0]: dims of rank 100000 exceed the 256 levels"],
    );
}

#[test]
fn structured_flat_functions_that_panic_are_errors() {
    let signature = IreeAbi::parse(r#"{"a":["i32"],"r":["i32"],"v":1}"#).unwrap();
    let flat = Function::from_typed(|_: i64| -> i64 { panic!("flat function panicked") });
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
    let error = structured.call(&[AnyView::from(1i64)], &[]).unwrap_err();
    assert_eq!(error.kind(), "RustPanic");
    let message = failure::<(), _>("structured panic", Err(error));
    assert_says(&message, &["flat function panicked"]);
}

#[test]
fn structured_strings_that_are_not_utf8_are_refused() {
    let signature = IreeAbi::parse(r#"{"a":[["sdict",["k","i32"]]],"r":[],"v":1}"#).unwrap();
    let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature()).unwrap();
    // A dict whose key is bytes that are not UTF-8 (as a RawStr from C would be).
    let text = c"\xffk";
    let key = raw_any(
        TVMFFITypeIndex::RAW_STR,
        TVMFFIAnyValue {
            v_c_str: text.as_ptr(),
        },
    );
    // SAFETY: the C string is alive for the call.
    let key = unsafe { AnyView::from_raw(key) }.to_any().unwrap();
    let value = Map::from_pairs([(key, Any::from(1i64))]);
    let message = failure(
        "structured non-UTF-8 key",
        structured.call(&[AnyView::from(&value)], &[]),
    );
    assert_says(&message, &["args[0]", "\"k\""]);
}

#[test]
fn structured_tensors_off_the_cpu_that_need_a_conversion_are_refused() {
    let signature = IreeAbi::parse(r#"{"a":[["ndarray","f32",1,4]],"r":[],"v":1}"#).unwrap();
    let flat = Function::from_packed(|_: &[AnyView<'_>]| Ok(Any::none()));
    let structured = StructuredFunction::from_iree_abi(flat, signature.signature())
        .unwrap()
        .allow_casts(true);
    let mut storage = [0.0f64; 4];
    // SAFETY: the tensor is only inspected (refused before any access).
    let on_gpu = unsafe {
        Tensor::from_raw_parts(
            storage.as_mut_ptr().cast(),
            DataType::F64,
            Device::cuda(0),
            &[4],
            &[1],
            || {},
        )
    }
    .unwrap();
    let message = failure(
        "structured GPU tensor needing a cast",
        structured.call(&[AnyView::from(&on_gpu)], &[]),
    );
    assert_says(&message, &["args[0]"]);
}

// ---------------------------------------------------------------------------------------------
// .vmfb files.

fn fixture(name: &str) -> Vec<u8> {
    fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vmfb")
            .join(name),
    )
    .unwrap()
}

/// Where the size-prefixed FlatBuffer starts (after the ZIP local header, if any).
fn flatbuffer_start(file: &[u8]) -> usize {
    if file.starts_with(b"PK\x03\x04") {
        30 + usize::from(u16::from_le_bytes([file[26], file[27]]))
            + usize::from(u16::from_le_bytes([file[28], file[29]]))
    } else {
        0
    }
}

fn open_module(path: &Path) -> std::result::Result<usize, pactum::iree::vmfb::VmfbError> {
    let file = VmfbFile::open(path)?;
    let module = file.module()?;
    Ok(module.exports().count())
}

#[test]
fn vmfb_files_of_a_gibibyte_are_handled_in_milliseconds() {
    let dir = scratch("vmfb-huge");
    // 1 GiB of zeros.
    let zeros = dir.join("zeros.vmfb");
    sparse_file(&zeros, &[], GIB);
    let message = failure(
        "vmfb 1 GiB of zeros",
        quickly("vmfb zeros", || open_module(&zeros)),
    );
    assert_says(&message, &["not an IREE bytecode module", "at 0x8"]);
    // A real module followed by 1 GiB of holes: it verifies, and only its FlatBuffer is read.
    let fixture = fixture("abi_structs_vmvx.vmfb");
    let tail = dir.join("tail.vmfb");
    sparse_file(&tail, &fixture, GIB);
    assert_eq!(
        quickly("vmfb with a 1 GiB tail", || open_module(&tail)).unwrap(),
        4
    );
    // The same module whose size prefix claims the whole gibibyte.
    let start = flatbuffer_start(&fixture);
    let mut claiming = fixture.clone();
    let claim = u32::try_from(GIB as usize - start - 4).unwrap();
    claiming[start..start + 4].copy_from_slice(&claim.to_le_bytes());
    let claims = dir.join("claims.vmfb");
    sparse_file(&claims, &claiming, GIB);
    let message = failure(
        "vmfb size prefix claiming 1 GiB",
        quickly("vmfb prefix claim", || open_module(&claims)),
    );
    assert_says(&message, &["runs past the end of the file"]);
    // A size prefix past the end of the file.
    let mut past = fixture.clone();
    past[start..start + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let message = failure(
        "vmfb size prefix past the end",
        VmfbFile::from_bytes(past).module().map(|_| ()),
    );
    assert_says(
        &message,
        &["the size prefix says 4294967295 bytes, past the end of the file"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn vmfb_words_claiming_huge_lengths_are_refused_quickly() {
    // Every aligned 32-bit word of the FlatBuffer replaced by a huge value: offsets, vector and
    // string lengths, vtable entries all claim far more than the file holds.
    let fixture = fixture("vm_direct_bare.vmfb");
    let start = flatbuffer_start(&fixture);
    let end =
        start + 4 + u32::from_le_bytes(fixture[start..start + 4].try_into().unwrap()) as usize;
    let mut refused = 0;
    quickly("every word of vm_direct_bare.vmfb", || {
        for pos in (start + 4..end - 3).step_by(4) {
            for claim in [0x7fff_fff0u32, u32::MAX] {
                let mut bytes = fixture.clone();
                bytes[pos..pos + 4].copy_from_slice(&claim.to_le_bytes());
                let file = VmfbFile::from_bytes(bytes);
                if let Err(error) = file.module() {
                    if let Some(offset) = error.offset {
                        assert!(offset < fixture.len() as u64, "{error}");
                    }
                    refused += 1;
                }
            }
        }
    });
    assert!(refused > 100, "only {refused} corrupt words were refused");
}

#[test]
fn vmfb_strings_that_are_not_utf8_are_refused() {
    let fixture = fixture("vm_direct_bare.vmfb");
    let name = VmfbFile::from_bytes(fixture.clone())
        .module()
        .unwrap()
        .name()
        .to_owned();
    // The module name as the FlatBuffer stores it: a 32-bit length, then the bytes.
    let mut needle = (name.len() as u32).to_le_bytes().to_vec();
    needle.extend_from_slice(name.as_bytes());
    let at = fixture
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the module name is in the file");
    let mut bytes = fixture.clone();
    bytes[at + 4] = 0xff;
    let message = failure(
        "vmfb non-UTF-8 name",
        VmfbFile::from_bytes(bytes).module().map(|_| ()),
    );
    assert_says(&message, &["name", "UTF-8"]);
}

// ---------------------------------------------------------------------------------------------
// Resource bounds of the parsers.

#[test]
fn iree_abi_json_depth_is_pactums_256_not_serdes_128() {
    on_big_stack(|| {
        let chain = |depth: usize| {
            format!(
                r#"{{"a":[{}"i32"{}],"r":[]}}"#,
                r#"["slist","#.repeat(depth),
                "]".repeat(depth)
            )
        };
        // serde_json's recursion limit (128) does not apply: pactum reads the records itself.
        assert!(IreeAbi::parse(&chain(200)).is_ok());
        assert!(IreeAbi::parse(&chain(256)).is_ok());
        let message = failure("iree.abi 257 levels", IreeAbi::parse(&chain(257)));
        assert_says(
            &message,
            &["at byte 2310", "type records nested deeper than 256 levels"],
        );
    });
}

#[test]
fn iree_abi_json_claiming_a_huge_depth_is_refused_quickly() {
    // Balanced, so that the JSON is valid and only the depth is wrong.
    for (open, close) in [
        (r#"["slist","#, "]"),
        (r#"["sdict",["k","#, "]]"),
        (r#"["ndarray","#, ",null]"),
    ] {
        let depth = 500_000;
        let text = format!(
            r#"{{"a":[{}"i32"{}],"r":[]}}"#,
            open.repeat(depth),
            close.repeat(depth)
        );
        let message = failure(
            "iree.abi huge depth",
            quickly("iree.abi huge depth", || IreeAbi::parse(&text)),
        );
        assert_says(&message, &["type records nested deeper than 256 levels"]);
    }
    // Unbalanced: the JSON itself is refused, in one pass.
    let text = format!(r#"{{"a":[{}"#, "[".repeat(10_000_000));
    let message = failure(
        "iree.abi 10 MB of brackets",
        quickly("iree.abi brackets", || IreeAbi::parse(&text)),
    );
    assert_says(&message, &["malformed JSON"]);
    // The same depth, balanced, inside a key pactum keeps as text: read once, never walked.
    let text = format!(
        r#"{{"a":[],"r":[],"x":{}{}}}"#,
        "[".repeat(500_000),
        "]".repeat(500_000)
    );
    quickly("iree.abi deep extra key", || IreeAbi::parse(&text)).unwrap();
}

#[test]
fn legacy_signature_spans_claiming_huge_lengths_are_refused_quickly() {
    let cases = [
        (
            "I999999999!B1!R1!",
            "span 'I' of length 999999999 runs past the end of the input",
        ),
        ("I99999999999999999999999!", "does not fit in 32 bits"),
        (
            "I2147483647!",
            "span 'I' of length 2147483647 runs past the end of the input",
        ),
        ("I5!R1!", "runs past the end of the input"),
    ];
    for (text, expected) in cases {
        let message = failure(
            "raw span claim",
            quickly("raw", || RawSignature::parse_strict(text)),
        );
        assert_says(&message, &[expected]);
        let message = failure(
            "SIP span claim",
            quickly("sip", || SipSignature::parse_strict(text)),
        );
        assert_says(&message, &[expected]);
        let error = Lexer::new(text.as_bytes())
            .find_map(|component| component.err())
            .expect("the lexer refuses the claim");
        eprintln!("HOSTILE lexer span claim: {error}");
        assert!(error.to_string().contains(expected), "{error}");
    }
    // A claim inside a span refers to the enclosing span, not the rest of the input.
    let message = failure(
        "raw nested span claim",
        RawSignature::parse_strict("I8!B999!t6R1!"),
    );
    assert_says(&message, &["runs past the end of the enclosing span"]);
}

#[test]
fn legacy_signatures_nested_too_deep_are_refused_quickly() {
    // A SIP structure nested 100 000 levels deep (about 1 MB): each level is a sequence span
    // `S<n>!k0…` whose length n counts everything inside it. Lengths from the inside out, then
    // the text from the outside in.
    let mut lengths = Vec::new();
    let mut len = "_0".len();
    for _ in 0..100_000 {
        let body = "!k0".len() + len;
        lengths.push(body);
        len = 1 + body.to_string().len() + body;
    }
    let mut inner = String::with_capacity(len);
    for body in lengths.iter().rev() {
        inner.push_str(&format!("S{body}!k0"));
    }
    inner.push_str("_0");
    assert_eq!(inner.len(), len);
    let text = format!("I{}!{inner}R1!", inner.len() + 1);
    let message = failure(
        "SIP 100000 levels",
        quickly("sip deep", || SipSignature::parse_strict(&text)),
    );
    assert_says(&message, &["structures nest deeper than 256 levels"]);
    let message = failure("SIP 100000 levels (lenient)", SipSignature::parse(&text));
    assert_says(&message, &["structures nest deeper than 256 levels"]);
}

#[test]
fn calling_conventions_and_declarations_nested_too_deep_are_refused_quickly() {
    let cconv = format!("0{}i{}_r", "C".repeat(1_000_000), "D".repeat(1_000_000));
    let message = failure(
        "cconv 1000000 levels",
        quickly("cconv deep", || CallingConvention::parse(&cconv)),
    );
    assert_says(&message, &["variadic spans nested deeper than 256 levels"]);
    let declaration = format!(
        "sync func @f(%x: {}i32{}) -> ()",
        "!util.list<".repeat(1_000_000),
        ">".repeat(1_000_000)
    );
    let message = failure(
        "declaration 1000000 levels",
        quickly("declaration deep", || Declaration::parse(&declaration)),
    );
    assert_says(&message, &["brackets nested deeper than 256 levels"]);
    // Unbalanced: only opening brackets.
    let declaration = format!("sync func @f(%x: {}", "tuple<".repeat(1_000_000));
    let message = failure(
        "declaration 1000000 open brackets",
        quickly("declaration open", || Declaration::parse(&declaration)),
    );
    assert_says(&message, &["nested deeper than 256 levels"]);
}

#[test]
fn mlir_signatures_huge_or_deep_are_refused_quickly() {
    let long = format!("func.func @f(%x: memref<{}f32>)", "1x".repeat(10_000_000));
    let message = failure(
        "MLIR 20 MB",
        quickly("mlir long", || FunctionType::parse(&long)),
    );
    assert_says(
        &message,
        &["at byte 0", "at most 1048576 bytes are accepted"],
    );
    let deep = format!("func.func @f() {{{}", "[".repeat(500_000));
    let message = failure(
        "MLIR deep",
        quickly("mlir deep", || FunctionType::parse(&deep)),
    );
    assert_says(&message, &["nested deeper than 256 levels"]);
    let rank = format!("func.func @f(%x: memref<{}f32>)", "1x".repeat(65));
    let message = failure("MLIR rank 65", FunctionType::parse(&rank));
    assert_says(&message, &["memrefs of rank over 64 are not supported"]);
}

/// A `.npy` file (version 1.0) with `dict` as its header, padded to 128 bytes.
fn npy_head(dict: &str) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(dict.as_bytes());
    while (out.len() + 1) % 64 != 0 {
        out.push(b' ');
    }
    out.push(b'\n');
    let header_len = u16::try_from(out.len() - 10).unwrap();
    out[8..10].copy_from_slice(&header_len.to_le_bytes());
    out
}

#[test]
fn npy_headers_are_checked_against_the_file_size_before_reading_the_data() {
    let dir = scratch("npy");
    // A small header in a 1 GiB file: refused after reading the header, not the gibibyte.
    let small = npy_head("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
    let huge = dir.join("huge.npy");
    sparse_file(&huge, &small, GIB);
    let message = failure(
        "npy 1 GiB file, 8-byte shape",
        quickly("npy 1 GiB", || pactum::npy::read_file(&huge)),
    );
    assert_says(
        &message,
        &[
            "file holds 1073741696 bytes of data, shape (2,) with dtype float32 needs 8",
            "huge.npy",
        ],
    );
    // A header claiming a huge shape in a small file: nothing is allocated for it.
    for (shape, expected) in [
        ("(1000000000000,)", "needs 4000000000000"),
        ("(4611686018427387904, 4)", "overflows 64 bits"),
        (
            "(9223372036854775807, 9223372036854775807)",
            "overflows 64 bits",
        ),
    ] {
        let claim = npy_head(&format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"
        ));
        let path = dir.join("claim.npy");
        fs::write(&path, &claim).unwrap();
        let message = failure(
            "npy huge shape claim",
            quickly("npy claim", || pactum::npy::read_file(&path)),
        );
        assert_says(&message, &[expected]);
        let message = failure("npy huge shape claim (bytes)", pactum::npy::read(&claim));
        assert_says(&message, &[expected]);
    }
    // A 1 GiB file of zeros, and a header length past the end of the file.
    let zeros = dir.join("zeros.npy");
    sparse_file(&zeros, &[], GIB);
    let message = failure(
        "npy 1 GiB of zeros",
        quickly("npy zeros", || pactum::npy::read_file(&zeros)),
    );
    assert_says(&message, &["not a .npy file"]);
    let mut past = small.clone();
    past[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    let message = failure("npy header past the end", pactum::npy::read(&past));
    assert_says(
        &message,
        &["header length 65535 goes beyond the end of the file"],
    );
    // Deep nesting inside the header.
    let deep = npy_head(&format!("{{'descr': {}", "(".repeat(30_000)));
    let message = failure(
        "npy deep header",
        quickly("npy deep", || pactum::npy::read(&deep)),
    );
    assert_says(&message, &["nest more than 32 deep"]);
    let _ = fs::remove_dir_all(&dir);
}
