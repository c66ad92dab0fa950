//! Calls into real MLIR-compiled code: `tests/mlir/*.mlir` lowered by Debian's MLIR 22 with
//! the facts sheet's pipeline (`tests/mlir/build.sh`), then called through pactum's memref
//! calling convention. Needs `mlir-22-tools` and `llvm-22` (the README test command installs
//! them); without them the tests fail, unless `PACTUM_SKIP_PEER=1`.

use std::path::Path;

use pactum::sys::dlpack::DLTensor;
use pactum::{Any, AnyView, Array, DataType, Device, Function, Tensor};
use pactum_mlir::{CallPath, Entry, LayoutMismatch, MlirFunction, MlirLibrary};

use crate::table;

/// The directory holding the built libraries, or `None` when skipping.
fn built() -> Option<&'static Path> {
    table::built()
}

fn library(stem: &str) -> Option<MlirLibrary> {
    let path = built()?.join(format!("lib{stem}.so"));
    // SAFETY: our test libraries, declared from their own sources (table::declaration).
    Some(unsafe { MlirLibrary::open(path) }.expect("load"))
}

fn core(name: &str) -> Option<MlirFunction> {
    let library = library("memref_core")?;
    Some(
        library
            .function(&table::declaration("memref_core", name))
            .expect("declare"),
    )
}

fn half_fn(name: &str) -> Option<MlirFunction> {
    let library = library("memref_half")?;
    Some(
        library
            .function(&table::declaration("memref_half", name))
            .expect("declare"),
    )
}

fn views(values: &[Any]) -> Vec<AnyView<'_>> {
    values.iter().map(Any::view).collect()
}

fn f32s(value: &Any) -> Vec<f32> {
    let tensor = value.clone().cast::<Tensor>().unwrap();
    tensor.to_contiguous().unwrap().to_vec::<f32>().unwrap()
}

/// A strided view into `base` (element offset and strides), sharing its memory.
fn view(base: &Tensor, offset: i64, shape: &[i64], strides: &[i64]) -> Tensor {
    let mut shape = shape.to_vec();
    let mut strides = strides.to_vec();
    let element = base.dtype().element_bytes().unwrap() as u64;
    let prototype = DLTensor {
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        ndim: shape.len() as i32,
        byte_offset: offset as u64 * element,
        ..*base.dl_tensor()
    };
    // SAFETY: the view stays inside `base` in every test that builds one.
    unsafe { base.unsafe_view(&prototype) }.unwrap()
}

fn error_of(function: &MlirFunction, args: &[Any]) -> String {
    function.call(&views(args)).unwrap_err().to_string()
}

#[test]
fn add_one_on_both_call_paths() {
    let Some(add_one) = core("add_one") else {
        return;
    };
    assert_eq!(add_one.entry(), Entry::CInterface);
    assert_eq!(add_one.call_path(), CallPath::Registers);
    for path in [CallPath::Registers, CallPath::Libffi] {
        let add_one = add_one.clone().with_call_path(path);
        let input = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.5], &[4]).unwrap();
        let output = Tensor::empty(&[4], DataType::F32).unwrap();
        let results = add_one.call(&[(&input).into(), (&output).into()]).unwrap();
        assert!(results.is_empty());
        assert_eq!(
            output.to_vec::<f32>().unwrap(),
            [2.0, 3.0, 4.0, 5.5],
            "{path:?}"
        );
    }
}

#[test]
fn two_d_dynamic_in_place() {
    let Some(scale) = core("scale_2d") else {
        return;
    };
    let m = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    scale.call(&[(&m).into(), 2.0.into()]).unwrap();
    assert_eq!(m.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
}

#[test]
fn strided_subview_touches_only_its_elements() {
    let Some(scale) = core("scale_strided") else {
        return;
    };
    let base = Tensor::from_slice(&[1.0f32; 48], &[6, 8]).unwrap();
    let window = view(&base, 9, &[2, 3], &[8, 2]);
    scale.call(&[(&window).into(), 3.0.into()]).unwrap();
    let values = base.to_vec::<f32>().unwrap();
    for (i, v) in values.iter().enumerate() {
        let expected = if [9, 11, 13, 17, 19, 21].contains(&i) {
            3.0
        } else {
            1.0
        };
        assert_eq!(*v, expected, "element {i}");
    }
    // A strided 1-D view with a dynamic offset and stride.
    let Some(sum) = core("sum_strided_1d") else {
        return;
    };
    let values: Vec<f64> = (0..10).map(f64::from).collect();
    let base = Tensor::from_slice(&values, &[10]).unwrap();
    let every_third = view(&base, 1, &[3], &[3]);
    let result = sum.call(&[(&every_third).into()]).unwrap();
    assert_eq!(result[0].get::<f64>().unwrap(), 1.0 + 4.0 + 7.0);
}

#[test]
fn result_viewing_an_argument_keeps_it_alive() {
    let Some(inner_view) = core("inner_view") else {
        return;
    };
    let values: Vec<f32> = (0..15).map(|v| v as f32).collect();
    let m = Tensor::from_slice(&values, &[3, 5]).unwrap();
    let result = inner_view.call(&[(&m).into()]).unwrap().remove(0);
    drop(m);
    let result = result.cast::<Tensor>().unwrap();
    assert_eq!(result.shape(), [2, 3]);
    assert_eq!(result.strides(), [5, 2]);
    // result[i, j] = m[i + 1, 2j]
    assert_eq!(
        result.to_contiguous().unwrap().to_vec::<f32>().unwrap(),
        [5.0, 7.0, 9.0, 10.0, 12.0, 14.0]
    );
}

#[test]
fn returned_allocations_become_owning_tensors() {
    let Some(alloc_iota) = core("alloc_iota") else {
        return;
    };
    let result = alloc_iota.call(&[5i64.into()]).unwrap().remove(0);
    assert_eq!(f32s(&result), [0.0, 1.0, 2.0, 3.0, 4.0]);

    let Some(alloc_aligned) = core("alloc_aligned") else {
        return;
    };
    let result = alloc_aligned.call(&[4i64.into()]).unwrap().remove(0);
    let tensor = result.cast::<Tensor>().unwrap();
    assert_eq!(tensor.data_ptr() as usize % 64, 0);
    assert_eq!(tensor.to_vec::<f64>().unwrap(), [0.0, 2.0, 4.0, 6.0]);

    let Some(alloc_2d) = core("alloc_2d") else {
        return;
    };
    let result = alloc_2d
        .call(&[3i64.into(), 4i64.into()])
        .unwrap()
        .remove(0);
    let tensor = result.cast::<Tensor>().unwrap();
    assert_eq!(tensor.dtype(), DataType::I32);
    assert_eq!(tensor.shape(), [3, 4]);
    assert_eq!(tensor.to_vec::<i32>().unwrap()[11], 203);

    let Some(aligned) = library("memref_aligned_alloc") else {
        return;
    };
    let iota = aligned
        .function(&table::declaration(
            "memref_aligned_alloc",
            "aligned_alloc_iota",
        ))
        .unwrap();
    let result = iota.call(&[3i64.into()]).unwrap().remove(0);
    assert_eq!(f32s(&result), [0.0, 1.0, 2.0]);
}

#[test]
fn one_allocation_returned_twice_is_shared() {
    let Some(twice) = core("alloc_twice") else {
        return;
    };
    let mut results = twice.call(&[3i64.into()]).unwrap();
    let second = results.pop().unwrap().cast::<Tensor>().unwrap();
    let first = results.pop().unwrap().cast::<Tensor>().unwrap();
    assert_eq!(first.data_ptr(), second.data_ptr());
    drop(first);
    assert_eq!(second.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0]);
}

#[test]
fn constant_results_keep_the_library_loaded() {
    let Some(table) = core("constant_table") else {
        return;
    };
    let result = table.call(&[]).unwrap().remove(0);
    drop(table);
    assert_eq!(f32s(&result), [1.0, 2.0, 4.0, 8.0]);
}

#[test]
fn unranked_in_and_out() {
    let Some(sum) = core("unranked_sum") else {
        return;
    };
    let v = Tensor::from_slice(&[1.0f32, 2.0, 3.5], &[3]).unwrap();
    assert_eq!(
        sum.call(&[(&v).into()]).unwrap()[0].get::<f64>().unwrap(),
        6.5
    );

    let Some(fill) = core("unranked_fill") else {
        return;
    };
    let v = Tensor::empty(&[4], DataType::F32).unwrap();
    let rank = fill.call(&[(&v).into(), 1.25.into()]).unwrap();
    assert_eq!(rank[0].get::<i64>().unwrap(), 1);
    assert_eq!(v.to_vec::<f32>().unwrap(), [1.25; 4]);

    let Some(rank) = core("unranked_rank") else {
        return;
    };
    for shape in [&[2i64, 3][..], &[], &[1, 1, 1, 2]] {
        let t = Tensor::empty(shape, DataType::F64).unwrap();
        let result = rank.call(&[(&t).into()]).unwrap();
        assert_eq!(result[0].get::<i64>().unwrap(), shape.len() as i64);
    }

    let Some(alloc) = core("alloc_unranked") else {
        return;
    };
    let result = alloc.call(&[3i64.into(), 2.5.into()]).unwrap().remove(0);
    assert_eq!(f32s(&result), [2.5, 2.5, 2.5]);
}

#[test]
fn several_scalar_results() {
    let Some(divmod) = core("divmod") else { return };
    let results = divmod.call(&[(-7i64).into(), 2i64.into()]).unwrap();
    assert_eq!(results[0].get::<i64>().unwrap(), -3);
    assert_eq!(results[1].get::<i64>().unwrap(), -1);

    let Some(pair) = core("pair_i32") else { return };
    let results = pair.call(&[10i64.into(), 3i64.into()]).unwrap();
    assert_eq!(results[0].get::<i64>().unwrap(), 13);
    assert_eq!(results[1].get::<i64>().unwrap(), 7);

    let Some(minmax) = core("minmax") else { return };
    let v = Tensor::from_slice(&[3.0f32, -1.0, 8.0, 2.0], &[4]).unwrap();
    let results = minmax.call(&[(&v).into()]).unwrap();
    assert_eq!(results[0].get::<f64>().unwrap(), -1.0);
    assert_eq!(results[1].get::<f64>().unwrap(), 8.0);
}

#[test]
fn mixed_scalar_types_on_both_paths() {
    let Some(mixed) = core("mixed") else { return };
    for path in [CallPath::Registers, CallPath::Libffi] {
        let mixed = mixed.clone().with_call_path(path);
        let m = Tensor::from_slice(&[0.5f64, 9.0, 9.0], &[3]).unwrap();
        let results = mixed
            .call(&[
                41i64.into(),
                21i64.into(),
                1.5.into(),
                2.25.into(),
                100i64.into(),
                (&m).into(),
            ])
            .unwrap();
        let got: Vec<f64> = results.iter().map(|r| r.get::<f64>().unwrap()).collect();
        assert_eq!(got, [2.75, 42.0, 4.5, 42.0, 103.0], "{path:?}");
        assert_eq!(results[1].type_index(), Any::from(0i64).type_index());
    }
}

#[test]
fn integers_of_every_width_and_sign() {
    let Some(ints) = core("ints") else { return };
    let call = |a: i64, b: i64, c: i64, d: i64, e: bool| {
        ints.call(&[a.into(), b.into(), c.into(), d.into(), e.into()])
    };
    assert_eq!(
        call(-1, -300, 200, -70000, true).unwrap()[0]
            .get::<i64>()
            .unwrap(),
        -69101
    );
    assert_eq!(
        call(5, 6, 255, 7, false).unwrap()[0].get::<i64>().unwrap(),
        273
    );
    let error = call(300, 0, 0, 0, false).unwrap_err().to_string();
    assert!(error.contains("argument 0: 300 does not fit i8"), "{error}");
    let error = call(0, 0, -1, 0, false).unwrap_err().to_string();
    assert!(error.contains("argument 2: -1 does not fit ui8"), "{error}");

    let Some(fill) = core("fill_i8") else { return };
    let m = Tensor::empty(&[3], DataType::I8).unwrap();
    fill.call(&[(&m).into(), (-5i64).into()]).unwrap();
    assert_eq!(m.to_vec::<i8>().unwrap(), [-5, -5, -5]);

    let Some(sum_u16) = core("sum_u16") else {
        return;
    };
    let m = Tensor::from_slice(&[65535u16, 1, 2], &[3]).unwrap();
    assert_eq!(
        sum_u16.call(&[(&m).into()]).unwrap()[0]
            .get::<i64>()
            .unwrap(),
        65538
    );
    let Some(sum_i16) = core("sum_i16") else {
        return;
    };
    let m = Tensor::from_slice(&[-1i16, 300, -32768], &[3]).unwrap();
    assert_eq!(
        sum_i16.call(&[(&m).into()]).unwrap()[0]
            .get::<i64>()
            .unwrap(),
        -32469
    );
    // A uint16 tensor is not an i16 memref.
    let unsigned = Tensor::from_slice(&[1u16], &[1]).unwrap();
    let error = error_of(&sum_i16, &[Any::from(unsigned)]);
    assert!(
        error.contains("needs dtype int16, got a uint16 tensor"),
        "{error}"
    );
}

#[test]
fn zero_d_memrefs() {
    let Some(zero_d) = core("zero_d") else { return };
    let a = Tensor::from_slice(&[3.0f32], &[]).unwrap();
    let b = Tensor::from_slice(&[4.0f32], &[]).unwrap();
    let result = zero_d.call(&[(&a).into(), (&b).into()]).unwrap();
    assert_eq!(result[0].get::<f64>().unwrap(), 7.0);
    assert_eq!(b.to_vec::<f32>().unwrap(), [6.0]);

    let Some(zero_d_result) = core("zero_d_result") else {
        return;
    };
    let result = zero_d_result.call(&[3.0.into()]).unwrap().remove(0);
    let tensor = result.cast::<Tensor>().unwrap();
    assert_eq!(tensor.ndim(), 0);
    assert_eq!(tensor.to_vec::<f32>().unwrap(), [9.0]);
}

#[test]
fn half_precision_scalars_and_buffers() {
    use half::{bf16, f16};
    let Some(axpy) = half_fn("f16_axpy") else {
        return;
    };
    let x = Tensor::from_slice(&[1.0, 2.0, 3.0].map(f16::from_f32), &[3]).unwrap();
    let y = Tensor::from_slice(&[f16::from_f32(0.5); 3], &[3]).unwrap();
    for path in [CallPath::Registers, CallPath::Libffi] {
        let y_copy = Tensor::from_slice(&y.to_vec::<f16>().unwrap(), &[3]).unwrap();
        let result = axpy
            .clone()
            .with_call_path(path)
            .call(&[2.0.into(), (&x).into(), (&y_copy).into()])
            .unwrap();
        assert_eq!(result[0].get::<f64>().unwrap(), 13.5, "{path:?}");
        assert_eq!(
            y_copy.to_vec::<f16>().unwrap(),
            [2.5, 4.5, 6.5].map(f16::from_f32)
        );
    }

    let Some(scale) = half_fn("bf16_scale") else {
        return;
    };
    let m = Tensor::from_slice(&[1.5, -2.0, 4.0].map(bf16::from_f32), &[3]).unwrap();
    let result = scale.call(&[(&m).into(), 2.0.into()]).unwrap();
    assert_eq!(result[0].get::<f64>().unwrap(), 3.0);
    assert_eq!(
        m.to_vec::<bf16>().unwrap(),
        [3.0, -4.0, 8.0].map(bf16::from_f32)
    );

    let Some(identity) = half_fn("f16_identity") else {
        return;
    };
    let result = identity.call(&[0.333.into()]).unwrap();
    assert_eq!(
        result[0].get::<f64>().unwrap(),
        f16::from_f64(0.333).to_f64()
    );
    let Some(add) = half_fn("bf16_add") else {
        return;
    };
    for path in [CallPath::Registers, CallPath::Libffi] {
        let result = add
            .clone()
            .with_call_path(path)
            .call(&[1.5.into(), 2.25.into()])
            .unwrap();
        assert_eq!(result[0].get::<f64>().unwrap(), 3.75, "{path:?}");
    }
}

#[test]
fn expanded_form_where_it_is_safe_and_an_explanation_where_not() {
    let Some(library) = library("memref_core") else {
        return;
    };
    let triple = library
        .function(&table::declaration("memref_core", "no_wrapper"))
        .unwrap();
    assert_eq!(triple.entry(), Entry::Expanded);
    assert_eq!(
        triple.call(&[14i64.into()]).unwrap()[0]
            .get::<i64>()
            .unwrap(),
        42
    );

    // Ten descriptor words as separate arguments: more than the registers hold, so libffi.
    let add = library
        .function(&table::declaration("memref_core", "no_wrapper_add"))
        .unwrap();
    assert_eq!(
        (add.entry(), add.call_path()),
        (Entry::Expanded, CallPath::Libffi)
    );
    let input = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let output = Tensor::empty(&[2], DataType::F32).unwrap();
    add.call(&[(&input).into(), (&output).into()]).unwrap();
    assert_eq!(output.to_vec::<f32>().unwrap(), [2.0, 3.0]);

    // Two results without a C wrapper would come back in registers C cannot describe.
    let error = library
        .function_named("no_wrapper", "(i64) -> (i64, i64)")
        .unwrap_err()
        .to_string();
    assert!(error.contains("llvm.emit_c_interface"), "{error}");
    assert!(error.contains("_mlir_ciface_no_wrapper"), "{error}");

    let error = library
        .function_named("missing", "(i64) -> i64")
        .unwrap_err()
        .to_string();
    assert!(error.contains("has no function `missing`"), "{error}");
}

#[test]
fn every_rejection_names_the_argument() {
    let Some(add_one) = core("add_one") else {
        return;
    };
    let good = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let out = Tensor::empty(&[2], DataType::F32).unwrap();
    let check = |args: &[Any], expected: &str| {
        let error = error_of(&add_one, args);
        assert!(
            error.contains(expected),
            "{error}\n  should contain: {expected}"
        );
    };
    // Count and kind.
    check(&[Any::from(good.clone())], "takes 2 arguments");
    check(
        &[Any::from(good.clone()), Any::from(1.0)],
        "argument 1: memref<?xf32> needs a tensor, got float",
    );
    // Dtype.
    let doubles = Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
    check(
        &[Any::from(doubles), Any::from(out.clone())],
        "argument 0: memref<?xf32> needs dtype float32, got a float64 tensor",
    );
    // Rank.
    let matrix = Tensor::empty(&[2, 2], DataType::F32).unwrap();
    check(
        &[Any::from(good.clone()), Any::from(matrix)],
        "argument 1: memref<?xf32> needs rank 1, got a rank-2 tensor",
    );
    // Device: a tensor that claims to live on a GPU is never dereferenced.
    let mut storage = [0.0f32; 2];
    // SAFETY: the tensor is only inspected (rejected before any access).
    let on_gpu = unsafe {
        Tensor::from_raw_parts(
            storage.as_mut_ptr().cast(),
            DataType::F32,
            Device::cuda(0),
            &[2],
            &[1],
            || {},
        )
    }
    .unwrap();
    check(
        &[Any::from(on_gpu), Any::from(out.clone())],
        "argument 0: memref<?xf32> needs a CPU tensor",
    );
    // Layout: a strided view where the identity layout is declared.
    let base = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let every_other = view(&base, 0, &[2], &[2]);
    check(
        &[Any::from(every_other), Any::from(out.clone())],
        "argument 0: memref<?xf32> has the identity layout",
    );
    // Static extents.
    let Some(static_mat) = core("static_mat") else {
        return;
    };
    let wrong = Tensor::empty(&[3, 2], DataType::F32).unwrap();
    let error = error_of(&static_mat, &[Any::from(wrong)]);
    assert!(
        error.contains(
            "argument 0: memref<2x3xf32> needs extent 2 in dimension 0, got shape [3, 2]"
        ),
        "{error}"
    );
    let right = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.5], &[2, 3]).unwrap();
    assert_eq!(
        static_mat.call(&[(&right).into()]).unwrap()[0]
            .get::<f64>()
            .unwrap(),
        21.5
    );
    // Scalars.
    let Some(scale) = core("scale_2d") else {
        return;
    };
    let m = Tensor::empty(&[1, 1], DataType::F32).unwrap();
    let error = error_of(&scale, &[Any::from(m), Any::from("two")]);
    assert!(error.contains("argument 1: f32 needs a number"), "{error}");
    // Unranked arguments must be contiguous too.
    let Some(unranked_sum) = core("unranked_sum") else {
        return;
    };
    let error = error_of(&unranked_sum, &[Any::from(view(&base, 0, &[2], &[2]))]);
    assert!(
        error.contains("argument 0: memref<*xf32> needs a contiguous tensor"),
        "{error}"
    );
}

#[test]
fn non_contiguous_tensors_are_copied_on_request_and_written_back() {
    let Some(scale) = core("scale_2d") else {
        return;
    };
    let base = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    // The transpose: shape [3, 2], strides [1, 3].
    let transposed = view(&base, 0, &[3, 2], &[1, 3]);
    assert!(scale.call(&[(&transposed).into(), 10.0.into()]).is_err());
    assert_eq!(
        base.to_vec::<f32>().unwrap(),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    let copying = scale.with_layout_mismatch(LayoutMismatch::Copy);
    copying.call(&[(&transposed).into(), 10.0.into()]).unwrap();
    assert_eq!(
        base.to_vec::<f32>().unwrap(),
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    );

    // A copied argument returned as a view stays valid after the call.
    let Some(inner_view) = core("inner_view") else {
        return;
    };
    let values: Vec<f32> = (0..15).map(|v| v as f32).collect();
    let base = Tensor::from_slice(&values, &[5, 3]).unwrap();
    let transposed = view(&base, 0, &[3, 5], &[1, 3]);
    let result = inner_view
        .with_layout_mismatch(LayoutMismatch::Copy)
        .call(&[(&transposed).into()])
        .unwrap()
        .remove(0);
    // transposed[i, j] = base[j, i] = 3j + i; result[i, j] = transposed[i + 1, 2j].
    assert_eq!(f32s(&result), [1.0, 7.0, 13.0, 2.0, 8.0, 14.0]);
}

#[test]
fn malformed_declarations_are_reported_with_a_position() {
    let Some(library) = library("memref_core") else {
        return;
    };
    let error = library
        .function("func.func @add_one(%a: memref<?xf33>)")
        .unwrap_err()
        .to_string();
    assert!(error.contains("f33"), "{error}");
    assert!(error.contains("at byte 32"), "{error}");
    let error = library
        .function("(memref<?xf32>) -> ()")
        .unwrap_err()
        .to_string();
    assert!(error.contains("names no function"), "{error}");
}

#[test]
fn the_bridge_makes_a_pactum_function() {
    let Some(mixed) = core("mixed") else { return };
    let function: Function = mixed.into_function();
    function.register_global("test.mlir.mixed", true).unwrap();
    let global = Function::get_global("test.mlir.mixed").unwrap();
    let m = Tensor::from_slice(&[0.5f64], &[1]).unwrap();
    let result = global
        .call(&[
            41i64.into(),
            21i64.into(),
            1.5.into(),
            2.25.into(),
            100i64.into(),
            (&m).into(),
        ])
        .unwrap();
    let array = result.cast::<Array>().unwrap();
    assert_eq!(array.len(), 5);
    assert_eq!(array.get_as::<f64>(0).unwrap(), 2.75);
    assert_eq!(array.get_as::<i64>(4).unwrap(), 101);

    let Some(add_one) = core("add_one") else {
        return;
    };
    let function = add_one.into_function();
    let input = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
    let output = Tensor::empty(&[1], DataType::F32).unwrap();
    assert!(
        function
            .call(&[(&input).into(), (&output).into()])
            .unwrap()
            .is_none()
    );
    assert_eq!(output.to_vec::<f32>().unwrap(), [2.0]);
    let error = function.call(&[(&input).into()]).unwrap_err();
    assert_eq!(error.kind(), "TypeError");
}

#[test]
fn calls_from_eight_threads() {
    let Some(add_one) = core("add_one") else {
        return;
    };
    let Some(alloc_iota) = core("alloc_iota") else {
        return;
    };
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let (add_one, alloc_iota) = (&add_one, &alloc_iota);
            scope.spawn(move || {
                for round in 0..200 {
                    let value = (thread * 1000 + round) as f32;
                    let input = Tensor::from_slice(&[value; 3], &[3]).unwrap();
                    let output = Tensor::empty(&[3], DataType::F32).unwrap();
                    add_one.call(&[(&input).into(), (&output).into()]).unwrap();
                    assert_eq!(output.to_vec::<f32>().unwrap(), [value + 1.0; 3]);
                    let n = (round % 7) as i64;
                    let result = alloc_iota.call(&[n.into()]).unwrap().remove(0);
                    assert_eq!(f32s(&result).len(), n as usize);
                }
            });
        }
    });
}

#[test]
fn typed_calls_check_types_once_and_tensors_every_call() {
    let Some(add_one) = core("add_one") else {
        return;
    };
    let typed = add_one.typed::<(&Tensor, &Tensor), ()>().unwrap();
    let input = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let output = Tensor::empty(&[3], DataType::F32).unwrap();
    typed.call((&input, &output)).unwrap();
    assert_eq!(output.to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0]);
    // A refused tensor gets the same error as the dynamic call.
    let doubles = Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
    let typed_error = typed.call((&doubles, &output)).unwrap_err().to_string();
    let dynamic_error = add_one
        .call(&[(&doubles).into(), (&output).into()])
        .unwrap_err()
        .to_string();
    assert_eq!(typed_error, dynamic_error);
    let base = Tensor::from_slice(&[1.0f32; 8], &[8]).unwrap();
    let error = typed
        .call((&view(&base, 0, &[3], &[2]), &output))
        .unwrap_err()
        .to_string();
    assert!(error.contains("identity layout"), "{error}");

    let Some(mixed) = core("mixed") else { return };
    let typed = mixed
        .typed::<(i32, i64, f32, f64, i64, &Tensor), (f64, i64, f32, i32, i64)>()
        .unwrap();
    let m = Tensor::from_slice(&[0.5f64, 9.0, 9.0], &[3]).unwrap();
    assert_eq!(
        typed.call((41, 21, 1.5, 2.25, 100, &m)).unwrap(),
        (2.75, 42, 4.5, 42, 103)
    );

    let Some(divmod) = core("divmod") else { return };
    let typed = divmod.typed::<(i64, i64), (i64, i64)>().unwrap();
    assert_eq!(typed.call((17, 5)).unwrap(), (3, 2));
    let Some(ints) = core("ints") else { return };
    let typed = ints.typed::<(i8, i16, u8, i32, bool), i64>().unwrap();
    assert_eq!(typed.call((-1, -300, 200, -70000, true)).unwrap(), -69101);
    let Some(add) = half_fn("bf16_add") else {
        return;
    };
    let typed = add.typed::<(half::bf16, half::bf16), half::bf16>().unwrap();
    let sum = typed
        .call((half::bf16::from_f32(1.5), half::bf16::from_f32(2.25)))
        .unwrap();
    assert_eq!(sum.to_f32(), 3.75);

    // Types that do not match the signature are refused when the typed function is made.
    fn refusal<A: pactum_mlir::MlirArgs, R: pactum_mlir::MlirResults>(name: &str) -> String {
        let function = core(name).expect("built");
        function.typed::<A, R>().err().expect("refused").to_string()
    }
    let cases = [
        (
            refusal::<(i64, f64), (i64, i64)>("divmod"),
            "argument 1 is i64, not f64",
        ),
        (refusal::<(i64,), i64>("divmod"), "it takes 2 arguments"),
        (
            refusal::<(i8, i16, i8, i32, bool), i64>("ints"),
            "argument 2 is ui8, not i8",
        ),
        // Memref results and strided layouts stay with the dynamic call.
        (refusal::<(i64,), i64>("alloc_iota"), "the results differ"),
        (
            refusal::<(&Tensor,), f64>("sum_strided_1d"),
            "use MlirFunction::call",
        ),
    ];
    for (error, expected) in cases {
        assert!(
            error.contains(expected),
            "{error}\n  should contain: {expected}"
        );
    }
}

#[test]
fn public_descriptors_drive_a_hand_made_call() {
    use pactum_mlir::{Descriptor, MlirType, tensor_from_descriptor};
    let Some(built) = built() else { return };
    // SAFETY: our own test library; no initialisers.
    let library = unsafe { libloading::Library::new(built.join("libmemref_core.so")) }.unwrap();
    type Strided = unsafe extern "C" fn(*mut core::ffi::c_void, f32);
    // SAFETY: `scale_strided(memref<?x?xf32, strided<[?, ?], offset: ?>>, f32)` in C form.
    let scale: Strided = *unsafe { library.get::<Strided>(b"_mlir_ciface_scale_strided") }.unwrap();
    let MlirType::MemRef(ty) = "memref<?x?xf32, strided<[?, ?], offset: ?>>"
        .parse::<MlirType>()
        .unwrap()
    else {
        unreachable!()
    };
    let base = Tensor::from_slice(&[1.0f32; 48], &[6, 8]).unwrap();
    let window = view(&base, 9, &[2, 3], &[8, 2]);
    let mut descriptor = Descriptor::new(&window, &ty).unwrap();
    assert_eq!(
        (descriptor.sizes(), descriptor.strides()),
        (vec![2, 3], vec![8, 2])
    );
    // SAFETY: a checked descriptor of a live tensor, for the function's declared type.
    unsafe { scale(descriptor.as_mut_ptr(), 3.0) };
    let scaled: Vec<usize> = base
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, v)| **v == 3.0)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(scaled, [9, 11, 13, 17, 19, 21]);

    // And back: a returned allocation as a tensor that frees it.
    type Alloc = unsafe extern "C" fn(*mut pactum::sys::mlir::MemRefDescriptor<1>, i64);
    // SAFETY: `alloc_iota(index) -> memref<?xf32>` in C form (result through the first pointer).
    let alloc: Alloc = *unsafe { library.get::<Alloc>(b"_mlir_ciface_alloc_iota") }.unwrap();
    let mut returned = core::mem::MaybeUninit::uninit();
    // SAFETY: as above.
    unsafe { alloc(returned.as_mut_ptr(), 3) };
    // SAFETY: MLIR wrote it.
    let returned = unsafe { returned.assume_init() };
    let allocated = returned.allocated as usize;
    // SAFETY: a rank-1 f32 descriptor of a malloc'ed buffer, freed once by the release.
    let tensor = unsafe {
        tensor_from_descriptor(
            (&returned as *const pactum::sys::mlir::MemRefDescriptor<1>).cast(),
            1,
            pactum_mlir::ScalarType::F32,
            move || libc_free(allocated),
        )
    }
    .unwrap();
    assert_eq!(tensor.to_vec::<f32>().unwrap(), [0.0, 1.0, 2.0]);
}

fn libc_free(address: usize) {
    unsafe extern "C" {
        fn free(pointer: *mut core::ffi::c_void);
    }
    // SAFETY: `address` came from malloc in the MLIR code and is freed once.
    unsafe { free(core::ptr::with_exposed_provenance_mut(address)) }
}

#[test]
fn the_call_table_covers_every_function_and_passes() {
    let Some(_) = built() else { return };
    let calls = table::calls();
    let mut covered: Vec<(String, String)> = calls
        .iter()
        .map(|c| (c.file.clone(), c.function.clone()))
        .collect();
    covered.sort();
    assert_eq!(
        covered,
        table::source_functions(),
        "calls.json must call every function once"
    );
    for call in &calls {
        let what = format!("@{}", call.function);
        let function = library(&call.file)
            .unwrap()
            .function(&table::declaration(&call.file, &call.function))
            .unwrap();
        let args: Vec<Any> = call
            .args
            .iter()
            .map(|arg| match arg {
                serde_json::Value::Bool(b) => Any::from(*b),
                v if table::is_tensor(v) => Any::from(table::tensor(v)),
                v => match v.as_i64() {
                    Some(i) => Any::from(i),
                    None => Any::from(v.as_f64().unwrap()),
                },
            })
            .collect();
        let results = function
            .call(&views(&args))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(results.len(), call.results.len(), "{what}");
        for (i, (got, expected)) in results.iter().zip(&call.results).enumerate() {
            table::check_value(got, expected, &format!("{what} result {i}"));
        }
        for (index, expected) in &call.after {
            let tensor = args[*index].clone().cast::<Tensor>().unwrap();
            table::check_numbers(
                &table::values(&tensor),
                expected,
                &format!("{what} argument {index}"),
            );
        }
    }
}
