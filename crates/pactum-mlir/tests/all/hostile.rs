//! Hostile inputs at every boundary of the `pactum-mlir` crate, and the resource bounds of its
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
use pactum::sys::tvm_ffi::{TVMFFIAnyValue, TVMFFITypeIndex};
use pactum::{AnyView, DataType, Device, Tensor};
use pactum_mlir::{FunctionType, MlirLibrary};
use pactum_testing::hostile::*;

use crate::table;

// ---------------------------------------------------------------------------------------------
// MLIR memref calls.

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
// Resource bounds of the signature parser.

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
