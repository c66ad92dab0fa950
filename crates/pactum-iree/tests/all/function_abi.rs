//! Reading a function's ABI attributes from attribute maps, and binding by them.

use pactum::{Any, AnyView, Array, Function, Map};
use pactum_iree::function_abi::{AttributeErrorKind, FunctionAbi};

#[test]
fn every_generation_of_attributes_is_read() {
    let abi = FunctionAbi::from_pairs([
        ("abi", "sip"),
        ("abiv", "1"),
        ("sip", "I12!S9!k0_0k1_1R3!_0"),
        ("fv", "1"),
        ("f", "I11!S3!t6S3!t6R6!S3!t6"),
        ("fbr", "__allocate_results"),
        ("iree.abi.model", "coarse-fences"),
        ("my.note", "hello"),
    ])
    .unwrap();
    assert_eq!(
        abi.raw.as_ref().unwrap().render(),
        "(sint32, sint32) -> (sint32)"
    );
    assert_eq!(
        abi.sip.as_ref().unwrap().to_string(),
        "I12!S9!k0_0k1_1R3!_0"
    );
    assert_eq!(abi.result_allocator.as_deref(), Some("__allocate_results"));
    assert_eq!(abi.model.as_deref(), Some("coarse-fences"));
    assert_eq!(abi.other, [("my.note".to_string(), "hello".to_string())]);
    let signature = abi.signature().unwrap().unwrap();
    assert_eq!(signature.to_string(), "(si32, si32) -> (si32)");

    let json = FunctionAbi::from_pairs([
        ("iree.abi", r#"{"a":["i32"],"r":["i32"],"v":1}"#),
        (
            "iree.abi.declaration",
            "sync func @f(%input0: i32) -> (%output0: i32)",
        ),
    ])
    .unwrap();
    assert!(json.iree_abi.is_some() && json.declaration.is_some() && json.raw.is_none());
}

#[test]
fn a_bad_attribute_is_named_with_the_parse_error() {
    let cases = [
        (vec![("f", "I9!B6!t99R1!")], "attribute `f`: "),
        (
            vec![("fv", "1")],
            "attribute `fv`: present, but there is no raw signature `f`",
        ),
        (
            vec![("sipv", "2"), ("sip", "I1!R1!")],
            "attribute `sipv`: unsupported SIP ABI version 2",
        ),
        (
            vec![("abi", "sip")],
            "attribute `abi`: `sip` needs its version `abiv`",
        ),
        (
            vec![("fbr", "alloc")],
            "attribute `fbr`: a result allocator needs the raw signature",
        ),
        (
            vec![("iree.abi", r#"{"a":[7],"r":[]}"#)],
            "attribute `iree.abi`: iree.abi JSON: at byte 6:",
        ),
    ];
    for (pairs, expected) in cases {
        let error = FunctionAbi::from_pairs(pairs.clone()).unwrap_err();
        assert!(
            error.to_string().starts_with(expected),
            "{pairs:?}: {error}"
        );
    }
}

#[test]
fn a_declaration_in_another_form_is_kept_as_text() {
    // User-supplied declarations need not follow the compiler's form; they are documentation.
    let text = "sync func @f(%params: {bias: tensor<4xf32>}) -> {out: tensor<4xf32>}";
    let abi = FunctionAbi::from_pairs([("iree.abi.declaration", text)]).unwrap();
    assert!(abi.declaration.is_none());
    assert_eq!(abi.declaration_text.as_deref(), Some(text));
    let parsed =
        FunctionAbi::from_pairs([("iree.abi.declaration", "sync func @f() -> ()")]).unwrap();
    assert_eq!(
        parsed.declaration.unwrap().to_string(),
        "sync func @f() -> ()"
    );
}

#[test]
fn metadata_json_and_maps_are_attribute_maps() {
    let abi = FunctionAbi::from_json(r#"{"fv": "1", "f": "I6!S3!t7R6!S3!t7", "arg_names": ["x"]}"#)
        .unwrap();
    assert_eq!(abi.raw.unwrap().render(), "(sint64) -> (sint64)");
    assert_eq!(
        abi.other,
        [("arg_names".to_string(), r#"["x"]"#.to_string())]
    );
    assert!(
        FunctionAbi::from_json("[1]")
            .unwrap_err()
            .to_string()
            .contains("not a JSON object")
    );

    let map = Map::from_pairs([
        (Any::from("fv"), Any::from(1i64)),
        (Any::from("f"), Any::from("I1!R1!")),
    ]);
    assert_eq!(
        FunctionAbi::from_map(&map).unwrap().raw.unwrap().render(),
        "() -> ()"
    );
    let bad = Map::from_pairs([(Any::from("f"), Any::from(1.5f64))]);
    assert_eq!(
        FunctionAbi::from_map(&bad).unwrap_err().to_string(),
        "attribute `f`: expected a string or an int, got float"
    );
}

#[test]
fn bind_follows_the_most_informative_signature() {
    // With both, iree.abi wins: the dict travels as one list.
    let abi = FunctionAbi::from_pairs([
        (
            "iree.abi",
            r#"{"a":[["sdict",["x","i64"]]],"r":["i64"],"v":1}"#,
        ),
        ("fv", "1"),
        ("f", "I6!S3!t7R6!S3!t7"),
    ])
    .unwrap();
    let flat =
        Function::from_typed(|slots: Array| -> pactum::Result<i64> { slots.get_as::<i64>(0) });
    let structured = abi.bind(flat, None).unwrap();
    let value = Map::from_pairs([(Any::from("x"), Any::from(5i64))]);
    assert_eq!(
        structured
            .call(&[AnyView::from(&value)], &[])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        5
    );

    // No signature: dynamic.
    let none = FunctionAbi::from_pairs(Vec::<(String, String)>::new()).unwrap();
    assert!(!none.has_signature());
    let structured = none
        .bind(Function::from_typed(|x: i64| x + 1), None)
        .unwrap();
    assert_eq!(
        structured
            .call(&[AnyView::from(1i64)], &[])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        2
    );
}

#[test]
fn attribute_errors_have_kinds_a_caller_can_match() {
    let error = FunctionAbi::from_pairs([("fv", "2"), ("f", "I1!R1!")]).unwrap_err();
    assert_eq!(error.key, "fv");
    assert_eq!(
        error.kind,
        AttributeErrorKind::UnsupportedVersion {
            abi: "raw function ABI",
            version: "2".into()
        }
    );
    let error = FunctionAbi::from_pairs([("sipv", "1")]).unwrap_err();
    assert_eq!(
        (error.key.as_str(), &error.kind),
        ("sipv", &AttributeErrorKind::MissingSipSignature)
    );
    let error = FunctionAbi::from_pairs([("fbr", "alloc")]).unwrap_err();
    assert_eq!(error.kind, AttributeErrorKind::AllocatorWithoutRawSignature);
    let error = FunctionAbi::from_pairs([("f", "I9!B6!t99R1!")]).unwrap_err();
    match &error.kind {
        AttributeErrorKind::Parse(parse) => {
            assert_eq!((error.key.as_str(), parse.format), ("f", "raw signature"))
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    let error = FunctionAbi::from_json("[1]").unwrap_err();
    assert!(matches!(
        error.kind,
        AttributeErrorKind::NotJsonObject { .. }
    ));
    let bad = Map::from_pairs([(Any::from("f"), Any::from(1.5f64))]);
    assert_eq!(
        FunctionAbi::from_map(&bad).unwrap_err().kind,
        AttributeErrorKind::ValueType {
            found: "float".into()
        }
    );
}
