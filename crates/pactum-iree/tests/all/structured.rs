//! Structured calls over flat packed functions: `iree.abi`, SIP, raw (with a result
//! allocator) and dynamic modes, the KWARGS protocol, and the paths in error messages.

use std::sync::{Arc, Mutex};

use pactum::{Any, AnyView, Array, DataType, Function, Map, Tensor};
use pactum_iree::signature::abi_json::IreeAbi;
use pactum_iree::signature::raw::RawSignature;
use pactum_iree::signature::sip::SipSignature;
use pactum_iree::signature::{NdArray, ScalarType, Signature, Type};
use pactum_iree::structured::StructuredFunction;

/// A flat function that records the arguments it receives and returns `result`.
fn recorder(
    result: impl Fn(&[AnyView<'_>]) -> Any + Send + Sync + 'static,
) -> (Function, Arc<Mutex<Vec<Vec<Any>>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    let function = Function::from_packed(move |args: &[AnyView<'_>]| {
        seen.lock()
            .unwrap()
            .push(args.iter().map(|a| a.to_any().unwrap()).collect());
        Ok(result(args))
    });
    (function, calls)
}

fn abi(text: &str) -> Signature {
    IreeAbi::parse(text).unwrap().signature().clone()
}

fn map(pairs: Vec<(&str, Any)>) -> Map {
    Map::from_pairs(pairs.into_iter().map(|(k, v)| (Any::from(k), v)))
}

fn tensor(values: &[f32]) -> Tensor {
    Tensor::from_slice(values, &[values.len() as i64]).unwrap()
}

fn array(values: Vec<Any>) -> Any {
    Array::new(values).into()
}

fn as_array(value: &Any) -> Array {
    value.clone().cast::<Array>().unwrap()
}

#[test]
fn iree_abi_dicts_travel_as_lists_in_record_order_with_zero_copy() {
    let signature = abi(
        r#"{"a":[["sdict",["bias",["ndarray","f32",1,null]],["n","i32"]],["named","scale",["ndarray","f32",1,4]]],"r":[["sdict",["out",["ndarray","f32",1,4]],["n_squared","i32"]]],"v":1}"#,
    );
    let (flat, calls) = recorder(|args| {
        // Return the two slots of the inlined result dict: a tensor and an int.
        let scale = args[1].to_any().unwrap();
        array(vec![scale, Any::from(9i64)])
    });
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let bias = tensor(&[1.0, 2.0]);
    let scale = tensor(&[0.5; 4]);
    // Map order differs from record order on purpose.
    let argument = map(vec![
        ("n", Any::from(3i64)),
        ("bias", Any::from(bias.clone())),
    ]);
    let result = structured
        .call(
            &[AnyView::from(&argument)],
            &[("scale", AnyView::from(&scale))],
        )
        .unwrap();

    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].len(), 2, "one flat argument per top-level record");
    let slots = as_array(&calls[0][0]);
    assert_eq!(slots.len(), 2);
    let passed: Tensor = slots.get_as(0).unwrap();
    assert_eq!(
        passed.data_ptr(),
        bias.data_ptr(),
        "tensors are passed without a copy"
    );
    assert_eq!(slots.get_as::<i64>(1).unwrap(), 3);
    assert_eq!(
        calls[0][1].clone().cast::<Tensor>().unwrap().data_ptr(),
        scale.data_ptr()
    );

    // The single structured result is rebuilt from its flat slots, keys in record order.
    let result: Map = result.cast().unwrap();
    let keys: Vec<String> = result.keys().map(|k| k.get::<String>().unwrap()).collect();
    assert_eq!(keys, ["out", "n_squared"]);
    assert_eq!(
        result
            .get(&AnyView::from(&Any::from("n_squared")))
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        9
    );
}

#[test]
fn errors_name_the_path_inside_the_value() {
    let signature = abi(
        r#"{"a":["i32",["sdict",["w",["slist","i32","i32",["ndarray","f32",2,null,null]]]]],"r":[],"v":1}"#,
    );
    let (flat, calls) = recorder(|_| Any::none());
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let bad = map(vec![(
        "w",
        array(vec![Any::from(1i64), Any::from(2i64), Any::from(3i64)]),
    )]);
    let error = structured
        .call(&[AnyView::from(1i64), AnyView::from(&bad)], &[])
        .unwrap_err();
    assert_eq!(error.kind(), "TypeError");
    assert_eq!(
        error.message(),
        r#"args[1]["w"][2]: expected ndarray<f32, 2>, got int"#
    );

    let wrong_rank = map(vec![(
        "w",
        array(vec![
            Any::from(1i64),
            Any::from(2i64),
            Any::from(tensor(&[1.0])),
        ]),
    )]);
    let error = structured
        .call(&[AnyView::from(1i64), AnyView::from(&wrong_rank)], &[])
        .unwrap_err();
    assert_eq!(error.kind(), "ValueError");
    assert_eq!(
        error.message(),
        r#"args[1]["w"][2]: expected ndarray<f32, 2>, got ndarray<f32, [1]>: rank 1 does not match the expected rank 2"#
    );

    let extra = map(vec![("w", Any::none()), ("x", Any::none())]);
    let error = structured
        .call(&[AnyView::from(1i64), AnyView::from(&extra)], &[])
        .unwrap_err();
    assert_eq!(error.kind(), "KeyError");
    assert_eq!(
        error.message(),
        r#"args[1]: unexpected key "x" (expected "w")"#
    );

    let error = structured
        .call(&[AnyView::from(1i64 << 40), AnyView::from(&bad)], &[])
        .unwrap_err();
    assert_eq!(error.message(), "args[0]: 1099511627776 does not fit i32");

    let short = map(vec![("w", array(vec![Any::from(1i64)]))]);
    let error = structured
        .call(&[AnyView::from(1i64), AnyView::from(&short)], &[])
        .unwrap_err();
    assert_eq!(
        error.message(),
        r#"args[1]["w"]: expected a list of 3 values, got 1"#
    );
    assert!(
        calls.lock().unwrap().is_empty(),
        "nothing reaches the flat function"
    );
}

#[test]
fn named_arguments_are_keyword_only() {
    let signature = abi(r#"{"a":["i32",["named","k","i64"]],"r":["i64"],"v":1}"#);
    let flat = Function::from_typed(|a: i64, k: i64| a * 100 + k);
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let ok = structured
        .call(&[AnyView::from(7i64)], &[("k", AnyView::from(5i64))])
        .unwrap();
    assert_eq!(ok.cast::<i64>().unwrap(), 705);

    type Keywords = Vec<(&'static str, AnyView<'static>)>;
    let cases: Vec<(Vec<AnyView<'static>>, Keywords, &str)> = vec![
        (
            vec![AnyView::from(7i64), AnyView::from(5i64)],
            vec![],
            "takes 1 positional arguments but 2 were given (keyword arguments: `k`)",
        ),
        (
            vec![AnyView::from(7i64)],
            vec![],
            "missing keyword argument `k`",
        ),
        (
            vec![],
            vec![("k", AnyView::from(5i64))],
            "missing positional argument 0 (of 1)",
        ),
        (
            vec![AnyView::from(7i64)],
            vec![("k", AnyView::from(5i64)), ("q", AnyView::from(1i64))],
            "unexpected keyword argument `q` (keyword arguments: `k`)",
        ),
        (
            vec![AnyView::from(7i64)],
            vec![("k", AnyView::from(5i64)), ("k", AnyView::from(1i64))],
            "got multiple values for argument `k`",
        ),
    ];
    for (positional, keywords, message) in cases {
        let error = structured.call(&positional, &keywords).unwrap_err();
        assert_eq!(error.kind(), "TypeError");
        assert_eq!(error.message(), message);
    }
}

#[test]
fn several_results_and_structured_results_among_them() {
    let signature =
        abi(r#"{"a":[],"r":["i32",["slist",["sdict",["a","i32"],["b","f32"]],"i32"]],"v":1}"#);
    let (flat, _) = recorder(|_| {
        array(vec![
            Any::from(1i64),
            array(vec![
                array(vec![Any::from(2i64), Any::from(2.5f64)]),
                Any::from(3i64),
            ]),
        ])
    });
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let results = as_array(&structured.call(&[], &[]).unwrap());
    assert_eq!(results.get_as::<i64>(0).unwrap(), 1);
    let list: Array = results.get_as(1).unwrap();
    let dict: Map = list.get_as(0).unwrap();
    assert_eq!(
        dict.get(&AnyView::from(&Any::from("b")))
            .unwrap()
            .cast::<f64>()
            .unwrap(),
        2.5
    );
    assert_eq!(list.get_as::<i64>(1).unwrap(), 3);

    // A flat function returning the wrong thing is reported against the signature.
    let (flat, _) = recorder(|_| array(vec![Any::from(1.5f64), Any::none()]));
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let error = structured.call(&[], &[]).unwrap_err();
    assert_eq!(error.message(), "results[0]: expected i32, got float");
    let (flat, _) = recorder(|_| Any::from(1i64));
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let error = structured.call(&[], &[]).unwrap_err();
    assert_eq!(
        error.message(),
        "the flat function returned int, expected 2 results as a list"
    );
}

#[test]
fn casts_are_refused_unless_allowed_and_strided_tensors_are_copied() {
    let signature = abi(r#"{"a":[["ndarray","f32",1,3]],"r":[["ndarray","f32",1,3]],"v":1}"#);
    let flat = Function::from_packed(|args: &[AnyView<'_>]| args[0].to_any());
    let doubles = Tensor::from_slice(&[1.0f64, 2.0, 3.0], &[3]).unwrap();
    let strict = StructuredFunction::from_iree_abi(flat.clone(), &signature).unwrap();
    let error = strict.call(&[AnyView::from(&doubles)], &[]).unwrap_err();
    assert_eq!(
        error.message(),
        "args[0]: expected ndarray<f32, [3]>, got ndarray<f64, [3]> (casting float64 to float32 needs allow_casts)"
    );
    let lenient = StructuredFunction::from_iree_abi(flat, &signature)
        .unwrap()
        .allow_casts(true);
    let out: Tensor = lenient
        .call(&[AnyView::from(&doubles)], &[])
        .unwrap()
        .cast()
        .unwrap();
    assert_eq!(out.dtype(), DataType::F32);
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
}

#[test]
fn strings_travel_as_byte_lists_and_reference_arrays_as_values_and_dims() {
    let signature = Signature {
        args: vec![
            Type::String,
            Type::NdArray(NdArray {
                element: Box::new(Type::String),
                dims: Some(vec![Some(2), None]),
            }),
        ],
        results: vec![
            Type::String,
            Type::NdArray(NdArray {
                element: Box::new(Type::String),
                dims: None,
            }),
        ],
    };
    let (flat, calls) =
        recorder(|args| array(vec![args[0].to_any().unwrap(), args[1].to_any().unwrap()]));
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let grid = array(vec![
        array(vec![Any::from("a"), Any::from("b"), Any::from("c")]),
        array(vec![Any::from("d"), Any::from("e"), Any::from("é")]),
    ]);
    let results = as_array(
        &structured
            .call(
                &[AnyView::from(&Any::from("hé")), AnyView::from(&grid)],
                &[],
            )
            .unwrap(),
    );

    let calls = calls.lock().unwrap();
    let bytes: Vec<i64> = as_array(&calls[0][0])
        .iter()
        .map(|b| b.get::<i64>().unwrap())
        .collect();
    assert_eq!(
        bytes,
        vec![104, -61, -87],
        "UTF-8 bytes as i8 values, like !util.list<i8>"
    );
    let packed = as_array(&calls[0][1]);
    assert_eq!(as_array(&packed.as_slice()[0]).len(), 6);
    let dims: Vec<i64> = as_array(&packed.as_slice()[1])
        .iter()
        .map(|d| d.get::<i64>().unwrap())
        .collect();
    assert_eq!(dims, vec![2, 3]);

    assert_eq!(results.get_as::<String>(0).unwrap(), "hé");
    let rebuilt: Array = results.get_as(1).unwrap();
    let row: Array = rebuilt.get_as(1).unwrap();
    assert_eq!(row.get_as::<String>(2).unwrap(), "é");

    let ragged = array(vec![
        array(vec![Any::from("a")]),
        array(vec![Any::from("b"), Any::from("c")]),
    ]);
    let error = structured
        .call(
            &[AnyView::from(&Any::from("x")), AnyView::from(&ragged)],
            &[],
        )
        .unwrap_err();
    assert_eq!(
        error.message(),
        "args[1][1]: ragged array: expected 1 elements, got 2"
    );
}

#[test]
fn typed_lists_take_any_length() {
    let signature =
        abi(r#"{"a":[["py_homogeneous_list","i64"]],"r":[["py_homogeneous_list","i64"]],"v":1}"#);
    let flat = Function::from_packed(|args: &[AnyView<'_>]| args[0].to_any());
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    for n in [0usize, 1, 5] {
        let values = array((0..n as i64).map(Any::from).collect());
        let out = as_array(&structured.call(&[AnyView::from(&values)], &[]).unwrap());
        assert_eq!(out.len(), n);
    }
    let mixed = array(vec![Any::from(1i64), Any::from("two")]);
    let error = structured.call(&[AnyView::from(&mixed)], &[]).unwrap_err();
    assert_eq!(error.message(), "args[0][1]: expected i64, got str");
}

#[test]
fn sip_leaves_are_the_flat_arguments_by_raw_index() {
    // Inputs: [ {bar: raw 1, foo: raw 0}, raw 2 ]; results: [raw 0, raw 1].
    let sip = SipSignature::parse("I31!S27!k0D17!K4!bar_1K4!foo_0k1_2R12!S9!k0_0k1_1").unwrap();
    let raw = RawSignature::parse("I17!S3!t7S3!t7B4!d-1R11!S3!t7B3!d2").unwrap();
    let (flat, calls) = recorder(|args| {
        let sum = args[0].get::<i64>().unwrap() * 10 + args[1].get::<i64>().unwrap();
        array(vec![
            Any::from(sum),
            Any::from(Tensor::from_slice(&[0.0f32, 1.0], &[2]).unwrap()),
        ])
    });
    let structured = StructuredFunction::from_sip(flat, &sip, Some(&raw)).unwrap();
    let dict = map(vec![("foo", Any::from(4i64)), ("bar", Any::from(2i64))]);
    let t = tensor(&[1.0, 2.0, 3.0]);
    let result = as_array(
        &structured
            .call(&[AnyView::from(&dict), AnyView::from(&t)], &[])
            .unwrap(),
    );
    assert_eq!(
        result.get_as::<i64>(0).unwrap(),
        42,
        "foo is raw 0, bar raw 1"
    );
    assert_eq!(result.get_as::<Tensor>(1).unwrap().shape(), &[2]);
    assert_eq!(calls.lock().unwrap()[0].len(), 3);

    let error = structured
        .call(&[AnyView::from(&dict), AnyView::from(1i64)], &[])
        .unwrap_err();
    assert_eq!(
        error.message(),
        "args[1]: expected ndarray<f32, 1>, got int"
    );

    // Without the raw signature, leaves pass through unchecked.
    let (flat, _) = recorder(|_| array(vec![Any::from(1i64), Any::from(2i64)]));
    let untyped = StructuredFunction::from_sip(flat, &sip, None).unwrap();
    let out = as_array(
        &untyped
            .call(&[AnyView::from(&dict), AnyView::from(1i64)], &[])
            .unwrap(),
    );
    assert_eq!(out.len(), 2);
}

#[test]
fn a_sip_root_dict_binds_keyword_arguments() {
    let sip = SipSignature::parse("I17!D13!K2!x_1K2!y_0R3!_0").unwrap();
    let flat = Function::from_typed(|y: i64, x: i64| x - y);
    let structured = StructuredFunction::from_sip(flat, &sip, None).unwrap();
    let out = structured
        .call(
            &[],
            &[("y", AnyView::from(1i64)), ("x", AnyView::from(10i64))],
        )
        .unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 9);
    let error = structured
        .call(&[], &[("x", AnyView::from(10i64))])
        .unwrap_err();
    assert_eq!(error.message(), "missing keyword argument `y`");
}

#[test]
fn a_result_allocator_pre_allocates_results() {
    // (Buffer<float32[?x2]>) -> (Buffer<float32[?x2]>, Buffer<float32[3]>)
    let raw = RawSignature::parse("I9!B6!d-1d2R14!B6!d-1d2B3!d3").unwrap();
    assert_eq!(
        raw.render(),
        "(Buffer<float32[?x2]>) -> (Buffer<float32[?x2]>, Buffer<float32[3]>)"
    );
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let allocator = Function::from_packed(move |args: &[AnyView<'_>]| {
        let dims: Array = args[0].get()?;
        let dims: Vec<i64> = dims.iter().map(|d| d.get::<i64>().unwrap()).collect();
        seen.lock().unwrap().push(dims.clone());
        Ok(array(vec![Any::from(Tensor::empty(
            &[dims[0], 2],
            DataType::F32,
        )?)]))
    });
    // The flat function doubles x into the first result and fills the second with 7s, in place.
    let flat = Function::from_packed(|args: &[AnyView<'_>]| {
        assert_eq!(args.len(), 3, "inputs, then one slot per result");
        let x: Tensor = args[0].get()?;
        let y: Tensor = args[1].get()?;
        let z: Tensor = args[2].get()?;
        let doubled: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| v * 2.0).collect();
        y.copy_from_slice(&doubled)?;
        z.copy_from_slice(&[7.0f32; 3])?;
        Ok(Any::none())
    });
    let structured = StructuredFunction::from_raw(flat, &raw)
        .unwrap()
        .with_result_allocator(allocator)
        .unwrap();
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
    let results = as_array(&structured.call(&[AnyView::from(&x)], &[]).unwrap());
    assert_eq!(
        *asked.lock().unwrap(),
        vec![vec![3]],
        "the dynamic dims of the inputs"
    );
    let y: Tensor = results.get_as(0).unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    );
    assert_eq!(
        results
            .get_as::<Tensor>(1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![7.0; 3]
    );

    // An allocator needs raw buffer types.
    let no_raw = StructuredFunction::dynamic(Function::from_typed(|| ()));
    assert!(
        no_raw
            .with_result_allocator(Function::from_typed(|| ()))
            .is_err()
    );
}

#[test]
fn a_result_the_allocator_cannot_make_must_be_returned() {
    let raw = RawSignature::parse("I7!B4!d-1R7!B4!d-1").unwrap();
    let allocator = Function::from_packed(|_: &[AnyView<'_>]| Ok(array(vec![Any::none()])));
    let flat = Function::from_packed(|args: &[AnyView<'_>]| {
        assert!(args[1].is_none());
        Ok(Any::none())
    });
    let structured = StructuredFunction::from_raw(flat, &raw)
        .unwrap()
        .with_result_allocator(allocator)
        .unwrap();
    let x = tensor(&[1.0]);
    let error = structured.call(&[AnyView::from(&x)], &[]).unwrap_err();
    assert_eq!(
        error.message(),
        "result 0 was neither pre-allocated nor returned by the function"
    );
}

#[test]
fn without_a_signature_dicts_are_ordered_by_key_and_keywords_refused() {
    let (flat, calls) = recorder(|_| Any::from(1i64));
    let structured = StructuredFunction::dynamic(flat);
    let dict = map(vec![
        ("zeta", Any::from(1i64)),
        ("alpha", Any::from(2i64)),
        ("mid", Any::from(3i64)),
    ]);
    structured.call(&[AnyView::from(&dict)], &[]).unwrap();
    let values: Vec<i64> = as_array(&calls.lock().unwrap()[0][0])
        .iter()
        .map(|v| v.get::<i64>().unwrap())
        .collect();
    assert_eq!(values, vec![2, 3, 1]);
    let error = structured
        .call(&[], &[("k", AnyView::from(1i64))])
        .unwrap_err();
    assert!(
        error
            .message()
            .contains("keyword arguments need a signature")
    );
}

#[test]
fn the_packed_form_reads_keywords_after_the_kwargs_sentinel() {
    let signature = abi(r#"{"a":["i32",["named","k","i32"]],"r":["i32"],"v":1}"#);
    let flat = Function::from_typed(|a: i64, k: i64| a - k);
    let packed = StructuredFunction::from_iree_abi(flat, &signature)
        .unwrap()
        .into_function();
    let sentinel = Function::get_global("ffi.GetKwargsObject")
        .unwrap()
        .call(&[])
        .unwrap();
    let out = packed
        .call(&[
            AnyView::from(10i64),
            sentinel.view(),
            AnyView::from(&Any::from("k")),
            AnyView::from(3i64),
        ])
        .unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 7);
    let error = packed
        .call(&[AnyView::from(10i64), sentinel.view(), AnyView::from(3i64)])
        .unwrap_err();
    assert_eq!(
        error.message(),
        "keyword arguments after KWARGS must come as name, value pairs"
    );
}

#[test]
fn errors_raised_by_the_flat_function_keep_their_kind() {
    let signature = abi(r#"{"a":[],"r":[],"v":1}"#);
    let flat = Function::from_packed(|_: &[AnyView<'_>]| {
        Err(pactum::Error::new(
            pactum::ErrorKind::INDEX_ERROR,
            "out of range",
        ))
    });
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let error = structured.call(&[], &[]).unwrap_err();
    assert_eq!(error.kind(), "IndexError");
    assert_eq!(error.message(), "out of range");
}

#[test]
fn scalar_types_accept_what_they_can_hold() {
    let signature = abi(r#"{"a":["i8","f32","i1"],"r":[],"v":1}"#);
    let (flat, calls) = recorder(|_| Any::none());
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    structured
        .call(
            &[
                AnyView::from(-128i64),
                AnyView::from(2i64),
                AnyView::from(true),
            ],
            &[],
        )
        .unwrap();
    assert_eq!(
        calls.lock().unwrap()[0][1].clone().cast::<f64>().unwrap(),
        2.0,
        "an int for a float"
    );
    let error = structured
        .call(
            &[
                AnyView::from(128i64),
                AnyView::from(2.0),
                AnyView::from(true),
            ],
            &[],
        )
        .unwrap_err();
    assert_eq!(error.message(), "args[0]: 128 does not fit i8");
    let error = structured
        .call(
            &[
                AnyView::from(1i64),
                AnyView::from(&Any::from("x")),
                AnyView::from(true),
            ],
            &[],
        )
        .unwrap_err();
    assert_eq!(error.message(), "args[1]: expected f32, got str");
    let error = structured
        .call(
            &[AnyView::from(1i64), AnyView::from(1.0), AnyView::from(2i64)],
            &[],
        )
        .unwrap_err();
    assert_eq!(error.message(), "args[2]: 2 does not fit i1");
    let _ = ScalarType::F32;
}

#[test]
fn reference_array_results_with_absurd_dims_are_refused() {
    let signature = Signature {
        args: vec![],
        results: vec![Type::NdArray(NdArray {
            element: Box::new(Type::String),
            dims: None,
        })],
    };
    let (flat, _) = recorder(|_| {
        let dims = array(vec![Any::from(1i64 << 60), Any::from(0i64)]);
        array(vec![array(vec![]), dims])
    });
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let error = structured.call(&[], &[]).unwrap_err();
    assert!(
        error
            .message()
            .starts_with("results[0]: dims [1152921504606846976, 0] describe"),
        "{}",
        error.message()
    );

    let (flat, _) = recorder(|_| {
        array(vec![
            array(vec![]),
            array(vec![Any::from(2i64), Any::from(0i64)]),
        ])
    });
    let structured = StructuredFunction::from_iree_abi(flat, &signature).unwrap();
    let out = as_array(&structured.call(&[], &[]).unwrap());
    assert_eq!(out.len(), 2, "two empty rows");
    assert_eq!(out.get_as::<Array>(0).unwrap().len(), 0);
}

#[test]
fn a_sip_dict_with_an_integer_key_matches_an_int_map_key() {
    // IREE's SIP parser takes `k` keys inside a `D`: [ {0: raw 0, "a": raw 1} ].
    let sip = SipSignature::parse("I21!S17!k0D11!k0_0K2!a_1R3!_0").unwrap();
    let flat = Function::from_typed(|zero: i64, a: i64| zero * 10 + a);
    let structured = StructuredFunction::from_sip(flat, &sip, None).unwrap();
    let dict = Map::from_pairs([
        (Any::from(0i64), Any::from(4i64)),
        (Any::from("a"), Any::from(2i64)),
    ]);
    let out = structured.call(&[AnyView::from(&dict)], &[]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 42);
    // A string "0" is not the integer key.
    let by_text = map(vec![("0", Any::from(4i64)), ("a", Any::from(2i64))]);
    let error = structured
        .call(&[AnyView::from(&by_text)], &[])
        .unwrap_err();
    assert!(error.message().contains("args[0]"), "{error}");
}
