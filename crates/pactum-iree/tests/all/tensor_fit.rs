//! The buffer-description oracle: verdicts for shape, element type, layout and device, and
//! the conversions it performs.

use pactum::sys::dlpack::DLTensor;
use pactum::{AnyView, DataType, Tensor, TensorView};
use pactum_iree::signature::{ScalarType, Signedness, Type};
use pactum_iree::tensor_fit::{
    BufferType, Conversion, Prepared, Verdict, assess, convert, prepare,
};

fn buffer(element: ScalarType, dims: &[Option<u64>]) -> BufferType {
    BufferType::from_type(&Type::ndarray(element, dims)).unwrap()
}

fn verdict(wanted: &BufferType, tensor: &Tensor) -> Verdict {
    let any = AnyView::from(tensor);
    let view: TensorView = any.get().unwrap();
    assess(wanted, &view)
}

/// A transposed (non-contiguous) view of a 2x3 float32 tensor holding 0..6: shape 3x2.
fn transposed() -> (Tensor, Tensor) {
    let base = Tensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap();
    let mut prototype: DLTensor = *base.dl_tensor();
    let mut shape = [3i64, 2];
    let mut strides = [1i64, 3];
    prototype.ndim = 2;
    prototype.shape = shape.as_mut_ptr();
    prototype.strides = strides.as_mut_ptr();
    // SAFETY: the prototype describes the 6 elements of `base`, transposed.
    let view = unsafe { base.unsafe_view(&prototype) }.unwrap();
    (base, view)
}

#[test]
fn a_matching_dense_tensor_is_usable_as_is() {
    let tensor = Tensor::from_slice(&[1.0f32; 6], &[2, 3]).unwrap();
    assert_eq!(
        verdict(&buffer(ScalarType::F32, &[None, Some(3)]), &tensor),
        Verdict::AsIs
    );
    assert_eq!(
        verdict(&buffer(ScalarType::F32, &[Some(2), Some(3)]), &tensor),
        Verdict::AsIs
    );
    let unranked = BufferType::from_type(&Type::ndarray_of_unknown_rank(ScalarType::F32)).unwrap();
    assert_eq!(verdict(&unranked, &tensor), Verdict::AsIs);
}

#[test]
fn shape_mismatches_are_incompatible_with_the_reason() {
    let tensor = Tensor::from_slice(&[1.0f32; 6], &[2, 3]).unwrap();
    assert_eq!(
        verdict(&buffer(ScalarType::F32, &[None]), &tensor),
        Verdict::Incompatible("rank 2 does not match the expected rank 1".into())
    );
    assert_eq!(
        verdict(&buffer(ScalarType::F32, &[None, Some(4)]), &tensor),
        Verdict::Incompatible("dimension 1 is 3, expected 4".into())
    );
}

#[test]
fn another_element_type_needs_a_cast_which_prepare_refuses_unless_asked() {
    let tensor = Tensor::from_slice(&[1.5f64, -2.0, 3.25], &[3]).unwrap();
    let wanted = buffer(ScalarType::F32, &[None]);
    let expected = Conversion {
        cast: Some((DataType::F64, DataType::F32)),
        relayout: false,
    };
    assert_eq!(verdict(&wanted, &tensor), Verdict::Convert(expected));
    assert_eq!(expected.to_string(), "cast float64 to float32");

    let any = AnyView::from(&tensor);
    let view: TensorView = any.get().unwrap();
    let refused = prepare(&wanted, &view, false).unwrap_err();
    assert_eq!(refused.kind(), "TypeError");
    assert!(
        refused.message().contains("needs allow_casts"),
        "{}",
        refused.message()
    );
    match prepare(&wanted, &view, true).unwrap() {
        Prepared::Converted(out) => {
            assert_eq!(out.dtype(), DataType::F32);
            assert_eq!(out.to_vec::<f32>().unwrap(), vec![1.5, -2.0, 3.25]);
        }
        Prepared::AsIs => panic!("expected a conversion"),
    }
}

#[test]
fn casts_follow_numpy_astype() {
    type Check = Box<dyn Fn(&Tensor)>;
    let cases: Vec<(Tensor, ScalarType, Check)> = vec![
        (
            Tensor::from_slice(&[1.9f32, -1.9, 300.0], &[3]).unwrap(),
            ScalarType::int(32, Signedness::Signless),
            Box::new(|t| assert_eq!(t.to_vec::<i32>().unwrap(), vec![1, -1, 300])),
        ),
        (
            Tensor::from_slice(&[-1i32, 256, 7], &[3]).unwrap(),
            ScalarType::int(8, Signedness::Unsigned),
            Box::new(|t| assert_eq!(t.to_vec::<u8>().unwrap(), vec![255, 0, 7])),
        ),
        (
            Tensor::from_slice(&[0.5f32, 65504.0, 1.0e-3], &[3]).unwrap(),
            ScalarType::F16,
            Box::new(|t| {
                let back = convert_to(t, ScalarType::F32);
                assert_eq!(back.to_vec::<f32>().unwrap()[..2], [0.5, 65504.0]);
                assert!((back.to_vec::<f32>().unwrap()[2] - 1.0e-3).abs() < 1e-6);
            }),
        ),
        (
            Tensor::from_slice(&[3.0f64, 0.0, -2.0], &[3]).unwrap(),
            ScalarType::int(1, Signedness::Signless),
            Box::new(|t| {
                assert_eq!(t.dtype(), DataType::BOOL);
                let back = convert_to(t, ScalarType::int(8, Signedness::Signless));
                assert_eq!(back.to_vec::<i8>().unwrap(), vec![1, 0, 1]);
            }),
        ),
        (
            Tensor::from_slice(&[1.0f32, 2.5], &[2]).unwrap(),
            ScalarType::BF16,
            Box::new(|t| {
                assert_eq!(t.dtype(), DataType::BF16);
                assert_eq!(
                    convert_to(t, ScalarType::F64).to_vec::<f64>().unwrap(),
                    vec![1.0, 2.5]
                );
            }),
        ),
    ];
    for (source, target, check) in cases {
        check(&convert_to(&source, target));
    }
}

fn convert_to(tensor: &Tensor, target: ScalarType) -> Tensor {
    let any = AnyView::from(tensor);
    let view: TensorView = any.get().unwrap();
    let conversion = Conversion {
        cast: Some((view.dtype(), pactum_iree::tensor_fit::scalar_dtype(target))),
        relayout: false,
    };
    convert(&view, &conversion).unwrap()
}

#[test]
fn a_strided_tensor_is_copied_to_a_contiguous_one() {
    let (_base, view) = transposed();
    assert!(!view.is_contiguous());
    let wanted = buffer(ScalarType::F32, &[Some(3), Some(2)]);
    assert_eq!(
        verdict(&wanted, &view),
        Verdict::Convert(Conversion {
            cast: None,
            relayout: true
        })
    );
    let any = AnyView::from(&view);
    let tensor_view: TensorView = any.get().unwrap();
    let Prepared::Converted(dense) = prepare(&wanted, &tensor_view, false).unwrap() else {
        panic!("expected a copy");
    };
    assert!(dense.is_contiguous());
    assert_eq!(dense.shape(), &[3, 2]);
    assert_eq!(
        dense.to_vec::<f32>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );

    // Cast and relayout in one pass.
    let both = buffer(ScalarType::F64, &[None, None]);
    let Prepared::Converted(dense) = prepare(&both, &tensor_view, true).unwrap() else {
        panic!("expected a copy");
    };
    assert_eq!(
        dense.to_vec::<f64>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
}

#[test]
fn non_numeric_element_types_are_incompatible() {
    let tensor = Tensor::empty(&[2], DataType::parse("float8_e4m3fn").unwrap()).unwrap();
    match verdict(&buffer(ScalarType::F32, &[None]), &tensor) {
        Verdict::Incompatible(reason) => {
            assert_eq!(
                reason,
                "element type float8_e4m3fn cannot be converted to float32"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn static_shapes_and_dtypes_of_buffer_types() {
    let wanted = buffer(
        ScalarType::int(16, Signedness::Unsigned),
        &[Some(2), Some(5)],
    );
    assert_eq!(wanted.static_shape(), Some(vec![2, 5]));
    assert_eq!(wanted.dtype(), DataType::U16);
    assert_eq!(
        buffer(ScalarType::F32, &[Some(2), None]).static_shape(),
        None
    );
    assert!(BufferType::from_type(&Type::Scalar(ScalarType::F32)).is_none());
}
