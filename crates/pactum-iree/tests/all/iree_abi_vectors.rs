//! The V1 `iree.abi` JSON, VM calling conventions and `iree.abi.declaration` codecs against
//! the shared test vectors (`../shared/vectors/iree_abi_json.json`, read in place), plus
//! unit and property tests of each parser's edge cases and errors.

use std::path::PathBuf;

use pactum_iree::signature::abi_json::{self, IreeAbi};
use pactum_iree::signature::cconv::{
    self, CallingConvention, CconvItem, CheckError, Position, inlined_results,
};
use pactum_iree::signature::declaration::{
    DeclType, Declaration, InvocationModel, Param, TensorType,
};
use pactum_iree::signature::{ConvertErrorKind, NdArray, ScalarType, Signature, Signedness, Type};
use proptest::prelude::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// The shared vectors
// ---------------------------------------------------------------------------------------

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors/iree_abi_json.json")
}

/// Every check for one vector; returns what failed.
fn check_vector(vector: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    let Some(text) = vector.get("iree_abi").and_then(Value::as_str) else {
        return vec!["no \"iree_abi\" string".into()];
    };
    let abi = match IreeAbi::parse(text) {
        Ok(abi) => abi,
        Err(e) => return vec![format!("iree_abi does not parse: {e}")],
    };
    let printed = abi.to_string();
    if printed != text {
        failures.push(format!("iree_abi prints back as {printed:?}, not {text:?}"));
    }
    let signature = abi.signature();

    match vector.get("implied_cconv").and_then(Value::as_str) {
        None => failures.push("no \"implied_cconv\" string".into()),
        Some(expected) => match CallingConvention::implied_by(signature) {
            Ok(implied) if implied.to_string() == expected => {}
            Ok(implied) => failures.push(format!("implied cconv {implied}, expected {expected}")),
            Err(e) => failures.push(format!("no implied cconv ({e}), expected {expected}")),
        },
    }
    match vector.get("inlined_results").and_then(Value::as_bool) {
        None => failures.push("no \"inlined_results\" boolean".into()),
        Some(expected) if inlined_results(signature) != expected => failures.push(format!(
            "inlined_results is {}, expected {expected}",
            !expected
        )),
        Some(_) => {}
    }
    if let Some(observed) = vector.get("observed_cconv") {
        match observed.as_str().map(CallingConvention::parse) {
            None => failures.push("observed_cconv is not a string".into()),
            Some(Err(e)) => failures.push(format!("observed_cconv does not parse: {e}")),
            Some(Ok(cconv)) => {
                if cconv.to_string() != observed.as_str().unwrap_or_default() {
                    failures.push(format!("observed_cconv prints back as {cconv}"));
                }
                if let Err(e) = cconv::check(signature, &cconv) {
                    failures.push(format!("observed_cconv fails the check: {e}"));
                }
            }
        }
    }
    if let Some(declared) = vector.get("iree_abi_declaration") {
        let Some(declared) = declared.as_str() else {
            failures.push("iree_abi_declaration is not a string".into());
            return failures;
        };
        match Declaration::parse(declared) {
            Err(e) => failures.push(format!("iree_abi_declaration does not parse: {e}")),
            Ok(declaration) => {
                if declaration.to_string() != declared {
                    failures.push(format!("iree_abi_declaration prints back as {declaration}"));
                }
                let name = vector
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match Declaration::implied_by(name, signature, declaration.model) {
                    Ok(implied) if implied == declaration => {}
                    Ok(implied) => failures.push(format!("implied declaration is {implied}")),
                    Err(e) => failures.push(format!("no implied declaration: {e}")),
                }
                // The declaration's own types imply the same VM calling convention.
                let from_declaration = declaration
                    .to_signature()
                    .map_err(|e| e.to_string())
                    .and_then(|s| CallingConvention::implied_by(&s).map_err(|e| e.to_string()));
                let expected = vector.get("implied_cconv").and_then(Value::as_str);
                match from_declaration {
                    Ok(cconv) if Some(cconv.to_string().as_str()) == expected => {}
                    Ok(cconv) => failures.push(format!("the declaration implies cconv {cconv}")),
                    Err(e) => failures.push(format!("the declaration implies no cconv: {e}")),
                }
            }
        }
    }
    failures
}

#[test]
fn every_shared_vector() {
    let path = vectors_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the shared IREE test vectors at {}: {e}",
            path.display()
        )
    });
    let document: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let vectors = document
        .get("vectors")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{} has no \"vectors\" list", path.display()));
    assert!(!vectors.is_empty(), "{} has no vectors", path.display());
    let mut failures = Vec::new();
    for (i, vector) in vectors.iter().enumerate() {
        let name = vector
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)");
        for failure in check_vector(vector) {
            failures.push(format!("vector {i} ({name}): {failure}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s) in {} vectors:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
}

/// The harness itself: a vector whose expectations are wrong must be reported, each check
/// separately.
#[test]
fn vector_checks_report_every_mismatch() {
    let wrong = serde_json::json!({
        "name": "nested",
        "iree_abi": "{\"a\": [\"i32\"], \"r\": [[\"slist\", \"i64\"]], \"v\": 1}",
        "implied_cconv": "0i_r",
        "inlined_results": false,
        "observed_cconv": "0i_x",
        "iree_abi_declaration": "sync func @other(%input0: i32) -> (%output0: !util.list<?>)",
        "some_future_key": [1, 2, 3],
    });
    let failures = check_vector(&wrong);
    let expected = [
        "prints back as",
        "implied cconv 0i_I, expected 0i_r",
        "inlined_results is true",
        "observed_cconv does not parse",
        "implied declaration is sync func @nested(%input0: i32) -> (%output0: i64)",
    ];
    assert_eq!(failures.len(), expected.len(), "{failures:#?}");
    for (failure, part) in failures.iter().zip(expected) {
        assert!(failure.contains(part), "{failure:?} lacks {part:?}");
    }
    assert_eq!(
        check_vector(&serde_json::json!({"name": "x"})),
        vec!["no \"iree_abi\" string"]
    );
}

// ---------------------------------------------------------------------------------------
// iree.abi JSON
// ---------------------------------------------------------------------------------------

fn int(bits: u8) -> Type {
    Type::Scalar(ScalarType::int(bits, Signedness::Signless))
}

fn parse_error(text: &str) -> (usize, String) {
    let error = IreeAbi::parse(text).expect_err(text);
    assert_eq!(error.format, "iree.abi JSON");
    (error.offset, error.message)
}

/// Asserts the error offset is where `needle` first occurs (after `after`) in `text`.
fn assert_error_at(text: &str, needle: &str, after: usize, message_part: &str) {
    let (offset, message) = parse_error(text);
    let expected = after + text[after..].find(needle).expect(needle);
    assert_eq!(offset, expected, "{text}: {message}");
    assert!(
        message.contains(message_part),
        "{text}: {message:?} lacks {message_part:?}"
    );
}

#[test]
fn every_record_kind() {
    let text = concat!(
        r#"{"a":["i1","i8","i16","i32","i64","f16","bf16","f32","f64",null,"unknown","#,
        r#"["named","k",["ndarray","f32",2,null,3]],["ndarray","i8",0],["ndarray","f64",null],"#,
        r#"["ndarray","unknown",1,7],["slist","i32",null,["stuple"]],["stuple","f32"],"#,
        r#"["sdict",["a","i32"],["b",["slist"]]],["sdict"],["py_homogeneous_list","i64"],"#,
        r#"["ndarray",["slist","i32"],1,2]],"#,
        r#""r":[["named","out",["py_homogeneous_list",["sdict",["x","f32"]]]]],"v":1}"#
    );
    let abi = IreeAbi::parse(text).unwrap();
    assert_eq!(abi.to_string(), text);
    assert_eq!(abi.version(), Some(1));
    let args = &abi.signature().args;
    assert_eq!(&args[..5], &[int(1), int(8), int(16), int(32), int(64)]);
    let floats = [
        ScalarType::F16,
        ScalarType::BF16,
        ScalarType::F32,
        ScalarType::F64,
    ];
    assert_eq!(&args[5..9], &floats.map(Type::Scalar));
    assert_eq!(args[9], Type::Null);
    assert_eq!(args[10], Type::Unknown);
    assert_eq!(
        args[11],
        Type::Named(
            "k".into(),
            Box::new(Type::ndarray(ScalarType::F32, &[None, Some(3)]))
        )
    );
    assert_eq!(args[12], Type::ndarray(ScalarType::I8, &[]));
    assert_eq!(args[13], Type::ndarray_of_unknown_rank(ScalarType::F64));
    let unknown_array = Type::NdArray(NdArray {
        element: Box::new(Type::Unknown),
        dims: Some(vec![Some(7)]),
    });
    assert_eq!(args[14], unknown_array);
    assert_eq!(
        args[15],
        Type::List(vec![int(32), Type::Null, Type::Tuple(vec![])])
    );
    assert_eq!(args[16], Type::Tuple(vec![Type::Scalar(ScalarType::F32)]));
    assert_eq!(
        args[17],
        Type::Dict(vec![
            ("a".into(), int(32)),
            ("b".into(), Type::List(vec![]))
        ])
    );
    assert_eq!(args[18], Type::Dict(vec![]));
    assert_eq!(args[19], Type::TypedList(Box::new(int(64))));
    let array_of_lists = Type::NdArray(NdArray {
        element: Box::new(Type::List(vec![int(32)])),
        dims: Some(vec![Some(2)]),
    });
    assert_eq!(args[20], array_of_lists);
    let out = Type::TypedList(Box::new(Type::Dict(vec![(
        "x".into(),
        Type::Scalar(ScalarType::F32),
    )])));
    assert_eq!(
        abi.signature().results,
        vec![Type::Named("out".into(), Box::new(out))]
    );

    // from_signature prints the same text.
    assert_eq!(abi_json::to_json(abi.signature(), Some(1)).unwrap(), text);
}

#[test]
fn whitespace_and_escapes_parse_to_the_same_value() {
    let compact = r#"{"a":[["ndarray","f32",1,16]],"r":[["stuple","i32","i32"]],"v":1}"#;
    let spaced = concat!(
        " {\n  \"v\" : 1,\r\n\t\"r\": [ [ \"stuple\" , \"i32\", \"i\\u0033\\u0032\" ] ],\n",
        "  \"a\": [[\"ndarray\", \"f32\", 1, 16]]\n} \n"
    );
    let a = IreeAbi::parse(compact).unwrap();
    let b = IreeAbi::parse(spaced).unwrap();
    assert_eq!(a, b);
    assert_eq!(b.to_string(), compact);
}

#[test]
fn version_is_optional_and_kept() {
    let abi = IreeAbi::parse(r#"{"a":[],"r":[]}"#).unwrap();
    assert_eq!(abi.version(), None);
    assert_eq!(abi.to_string(), r#"{"a":[],"r":[]}"#);
    let abi = IreeAbi::parse(r#"{"a":[],"r":[],"v":2}"#).unwrap();
    assert_eq!(abi.version(), Some(2));
    assert_eq!(abi.to_string(), r#"{"a":[],"r":[],"v":2}"#);
}

#[test]
fn unknown_top_level_keys_are_kept_in_sorted_position() {
    let text = r#"{"A":"x","a":[],"b":{"k":[1,2.5,"s p"]},"r":[],"s":null,"v":1,"z":true}"#;
    let abi = IreeAbi::parse(text).unwrap();
    assert_eq!(abi.to_string(), text);
    assert_eq!(abi.extra().len(), 4);
    assert_eq!(
        abi.extra()[1],
        ("b".to_string(), r#"{"k":[1,2.5,"s p"]}"#.to_string())
    );
    let spaced = concat!(
        r#"{ "z" : true , "b" : { "k" : [ 1 , 2.5 , "s p" ] }, "#,
        r#""v":1, "s":null, "r":[], "a":[], "A":"x" }"#
    );
    assert_eq!(IreeAbi::parse(spaced).unwrap().to_string(), text);
}

#[test]
fn key_escapes_print_as_llvm_writes_them() {
    let text = r#"{"a":[["named","q\"b\\s\t\n\r\u0001é",["sdict",["\u001f","i32"]]]],"r":[]}"#;
    let abi = IreeAbi::parse(text).unwrap();
    assert_eq!(abi.to_string(), text);
    match &abi.signature().args[0] {
        Type::Named(name, _) => assert_eq!(name, "q\"b\\s\t\n\r\u{1}é"),
        other => panic!("{other}"),
    }
}

#[test]
fn malformed_json_has_byte_offsets() {
    assert_eq!(parse_error("").0, 0);
    assert_eq!(parse_error("   ").0, 3);
    let (offset, message) = parse_error("{\"a\":[1,,2],\"r\":[]}");
    assert_eq!(offset, 8);
    assert!(message.starts_with("malformed JSON"), "{message}");
    assert_eq!(parse_error("{\"a\":[],\n\"r\":[]\n,}").0, 17);
    assert_eq!(parse_error("{\"a\":[],\"r\":[]} []").0, 16);
    assert_eq!(parse_error("{\"a\":[\"\u{e9}\\x\"],\"r\":[]}").0, 10);
    assert_eq!(parse_error("{\"a\":[],\"r\":[").0, 13);
}

#[test]
fn malformed_documents() {
    assert_error_at("[]", "[", 0, "expected a JSON object");
    assert_error_at(" 42", "4", 0, "found 42");
    assert_error_at(r#"{"r":[]}"#, "{", 0, "missing key \"a\"");
    assert_error_at(r#"{"a":[]}"#, "{", 0, "missing key \"r\"");
    assert_error_at(
        r#"{"a":{},"r":[]}"#,
        "{}",
        0,
        "expected an array of type records for \"a\"",
    );
    assert_error_at(
        r#"{"a":[],"r":"i32"}"#,
        "\"i32\"",
        0,
        "for \"r\", found \"i32\"",
    );
    assert_error_at(
        r#"{"a":[],"r":[],"a":[]}"#,
        "\"a\"",
        2,
        "duplicate key \"a\"",
    );
    assert_error_at(
        r#"{"a":[],"r":[],"v":1.5}"#,
        "1.5",
        0,
        "expected an integer version",
    );
    assert_error_at(
        r#"{"a":[],"r":[],"v":"1"}"#,
        "\"1\"",
        0,
        "expected an integer version",
    );
}

#[test]
fn malformed_records() {
    let (offset, message) = parse_error(r#"{"a":[42],"r":[]}"#);
    assert_eq!(offset, 6);
    assert_eq!(
        message,
        "expected a type record (a primitive name, null, \"unknown\" or a list), found 42"
    );
    let cases: &[(&str, &str, usize, &str)] = &[
        (r#"{"a":[true],"r":[]}"#, "true", 0, "found true"),
        (r#"{"a":[{"x":1}],"r":[]}"#, "{\"x", 0, "found {\"x\":1}"),
        (
            r#"{"a":["i65"],"r":[]}"#,
            "\"i65\"",
            0,
            "unknown primitive type \"i65\"",
        ),
        (
            r#"{"a":["si32"],"r":[]}"#,
            "\"si32\"",
            0,
            "unknown primitive type",
        ),
        (
            r#"{"a":["i08"],"r":[]}"#,
            "\"i08\"",
            0,
            "unknown primitive type",
        ),
        (
            r#"{"a":["f8"],"r":[]}"#,
            "\"f8\"",
            0,
            "unknown primitive type",
        ),
        (r#"{"a":[[]],"r":[]}"#, "[]", 5, "found an empty list"),
        (r#"{"a":[[1]],"r":[]}"#, "1", 0, "compound type tag"),
        (
            r#"{"a":[["struct"]],"r":[]}"#,
            "\"struct\"",
            0,
            "unknown compound type \"struct\"",
        ),
        (
            r#"{"a":[["slist",["named","x","i32"]]],"r":[]}"#,
            "\"named\"",
            0,
            "top-level",
        ),
        (
            r#"{"a":[["named","x",["named","y","i32"]]],"r":[]}"#,
            "\"named\"",
            8,
            "top-level",
        ),
        (
            r#"{"a":[["named","x"]],"r":[]}"#,
            "]]",
            0,
            "[\"named\", key, type]",
        ),
        (
            r#"{"a":[["named","x","i32","i8"]],"r":[]}"#,
            "\"i8\"",
            0,
            "4 elements",
        ),
        (
            r#"{"a":[["named",1,"i32"]],"r":[]}"#,
            "1",
            0,
            "argument name",
        ),
        (r#"{"a":[["ndarray","f32"]],"r":[]}"#, "]]", 0, "ndarray"),
        (
            r#"{"a":[["ndarray","f32",2,1]],"r":[]}"#,
            "2,1",
            0,
            "the rank is 2 but 1 dimensions",
        ),
        (
            r#"{"a":[["ndarray","f32",0,1]],"r":[]}"#,
            "0,1",
            0,
            "the rank is 0 but 1",
        ),
        (
            r#"{"a":[["ndarray","f32",null,4]],"r":[]}"#,
            "4",
            0,
            "rank is null",
        ),
        (
            r#"{"a":[["ndarray","f32",-1]],"r":[]}"#,
            "-1",
            0,
            "expected the rank",
        ),
        (
            r#"{"a":[["ndarray","f32",1,-4]],"r":[]}"#,
            "-4",
            0,
            "expected a dimension",
        ),
        (
            r#"{"a":[["ndarray","f32",1,4.0]],"r":[]}"#,
            "4.0",
            0,
            "expected a dimension",
        ),
        (
            r#"{"a":[["ndarray","f32",1,"4"]],"r":[]}"#,
            "\"4\"",
            0,
            "expected a dimension",
        ),
        (
            r#"{"a":[["ndarray","x32",1,4]],"r":[]}"#,
            "\"x32\"",
            0,
            "unknown primitive",
        ),
        (
            r#"{"a":[["sdict",["k"]]],"r":[]}"#,
            "[\"k\"]",
            0,
            "sdict entry",
        ),
        (
            r#"{"a":[["sdict",[1,"i32"]]],"r":[]}"#,
            "[1",
            0,
            "sdict entry",
        ),
        (
            r#"{"a":[["sdict","i32"]],"r":[]}"#,
            "\"i32\"",
            0,
            "sdict entry",
        ),
        (r#"{"a":[["sdict",["k",5]]],"r":[]}"#, "5", 0, "found 5"),
        (
            r#"{"a":[["py_homogeneous_list"]],"r":[]}"#,
            "]]",
            0,
            "py_homogeneous_list",
        ),
        (
            r#"{"a":[["py_homogeneous_list","i8","i8"]],"r":[]}"#,
            "\"i8\"",
            30,
            "3 elements",
        ),
        (
            r#"{"a":[],"r":[["slist",["stuple",7]]]}"#,
            "7",
            0,
            "found 7",
        ),
    ];
    for &(text, needle, after, part) in cases {
        assert_error_at(text, needle, after, part);
    }
}

#[test]
fn long_values_are_cut_in_messages() {
    let long = format!(r#"{{"a":["{}"],"r":[]}}"#, "é".repeat(100));
    let (offset, message) = parse_error(&long);
    assert_eq!(offset, 6);
    assert!(message.len() < 200, "{message}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [257, 300, 10_000] {
        let text = format!(
            r#"{{"a":[{}"i32"{}],"r":[]}}"#,
            r#"["slist","#.repeat(depth),
            "]".repeat(depth)
        );
        let (offset, message) = parse_error(&text);
        assert!(message.contains("deeper than 256"), "{message}");
        assert_eq!(offset, 6 + 9 * 256, "depth {depth}");
    }
    // 256 levels are fine.
    let text = format!(
        r#"{{"a":[{}"i32"{}],"r":[]}}"#,
        r#"["slist","#.repeat(256),
        "]".repeat(256)
    );
    let abi = IreeAbi::parse(&text).unwrap();
    assert_eq!(abi.to_string(), text);
    // Deeply nested unknown extra keys are kept as text, never walked.
    let text = format!(
        r#"{{"a":[],"r":[],"x":{}{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_eq!(IreeAbi::parse(&text).unwrap().to_string(), text);
}

#[test]
fn from_signature_depth_matches_the_parser() {
    let nest = |levels: usize| {
        let mut ty = int(32);
        for _ in 0..levels {
            ty = Type::List(vec![ty]);
        }
        Signature {
            args: vec![ty],
            results: vec![],
        }
    };
    let text = abi_json::to_json(&nest(256), None).unwrap();
    assert_eq!(IreeAbi::parse(&text).unwrap().signature(), &nest(256));
    let error = IreeAbi::from_signature(&nest(257), None).unwrap_err();
    assert_eq!(
        error.kind,
        ConvertErrorKind::TooDeep {
            what: "type records",
            limit: 256
        },
        "{error}"
    );
    assert_eq!(error.target, abi_json::FORMAT);
    assert!(error.to_string().contains("256"), "{error}");
}

#[test]
fn from_signature_rejects_what_json_cannot_express() {
    let cases = [
        (
            Signature {
                args: vec![Type::String],
                results: vec![],
            },
            "args[0]",
        ),
        (
            Signature {
                args: vec![],
                results: vec![int(8), Type::Opaque],
            },
            "results[1]",
        ),
        (
            Signature {
                args: vec![Type::Scalar(ScalarType::int(8, Signedness::Signed))],
                results: vec![],
            },
            "args[0]",
        ),
        (
            Signature {
                args: vec![Type::List(vec![
                    int(1),
                    Type::Named("x".into(), Box::new(int(32))),
                ])],
                results: vec![],
            },
            "args[0][1]",
        ),
        (
            Signature {
                args: vec![],
                results: vec![Type::Dict(vec![(
                    "k".into(),
                    Type::Scalar(ScalarType::int(16, Signedness::Unsigned)),
                )])],
            },
            "results[0][\"k\"]",
        ),
        (
            Signature {
                args: vec![int(0)],
                results: vec![],
            },
            "args[0]",
        ),
        (
            Signature {
                args: vec![int(65)],
                results: vec![],
            },
            "args[0]",
        ),
    ];
    for (signature, path) in cases {
        let error = IreeAbi::from_signature(&signature, Some(1)).expect_err(path);
        assert_eq!(error.target, "iree.abi JSON");
        assert_eq!(error.path, path, "{error}");
    }
    // Named at the top of results is fine.
    let signature = Signature {
        args: vec![],
        results: vec![Type::Named("y".into(), Box::new(int(32)))],
    };
    assert_eq!(
        abi_json::to_json(&signature, None).unwrap(),
        r#"{"a":[],"r":[["named","y","i32"]]}"#
    );
}

// ---------------------------------------------------------------------------------------
// Calling conventions
// ---------------------------------------------------------------------------------------

fn cconv(text: &str) -> CallingConvention {
    CallingConvention::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[test]
fn cconv_forms_round_trip() {
    let forms = [
        "",
        "0",
        "0_",
        "0v",
        "0_v",
        "0v_",
        "0v_v",
        "0i",
        "0_ir",
        "0rf_rI",
        "0ii_i",
        "0fff_f",
        "0I_I",
        "0r_r",
        "0ri_r",
        "0ii_ii",
        "0rr_rrf",
        "0rr_ri",
        "0r_ir",
        "0iii_i",
        "0i_r",
        "0rrrr_r",
        "0iIfF_FIf",
        "0v_III",
        "0iCiID_I",
        "0rrIiiiICiDCiirIID_v",
        "0rIIiiCID_r",
        "0rIrrrICrIID_v",
        "0iICrD_i",
        "0ICrD_r",
        "0CD",
        "0CCCiDDD_CD",
    ];
    for text in forms {
        assert_eq!(cconv(text).to_string(), text);
    }
    let empties = ["", "0", "0_", "0v", "0_v", "0v_", "0v_v"];
    for a in empties {
        for b in empties {
            assert!(cconv(a).is_equivalent(&cconv(b)), "{a:?} vs {b:?}");
        }
        assert_eq!(cconv(a).to_compiler_form().to_string(), "0v_v");
    }
    assert!(cconv("").is_unspecified());
    assert!(!cconv("0").is_unspecified());
    assert_ne!(cconv("0"), cconv("0v_v"));
    assert_eq!(cconv("0i").to_compiler_form().to_string(), "0i_v");
    assert_eq!(cconv("0_ir").to_compiler_form().to_string(), "0v_ir");
    assert_eq!(
        CallingConvention::new(vec![], vec![CconvItem::I32]).to_string(),
        "0v_i"
    );
    assert_eq!(CallingConvention::unspecified().to_string(), "");
}

#[test]
fn cconv_items() {
    let c = cconv("0iCiID_I");
    assert_eq!(
        c.args(),
        &[
            CconvItem::I32,
            CconvItem::Variadic(vec![CconvItem::I32, CconvItem::I64])
        ]
    );
    assert_eq!(c.results(), &[CconvItem::I64]);
    assert!(c.is_variadic());
    assert!(!cconv("0rf_rI").is_variadic());
    assert!(cconv("0_CD").is_variadic());
    assert_eq!(cconv("0i").results(), &[]);
    assert_eq!(cconv("0_ir").args(), &[]);
    assert_eq!(cconv("0_ir").results(), &[CconvItem::I32, CconvItem::Ref]);
    assert_eq!(
        cconv("0CCfDFD").args(),
        &[CconvItem::Variadic(vec![
            CconvItem::Variadic(vec![CconvItem::F32]),
            CconvItem::F64
        ])]
    );
}

#[test]
fn cconv_errors() {
    let cases: &[(&str, usize, &str)] = &[
        ("1i_i", 0, "unsupported calling-convention version '1'"),
        ("i", 0, "unsupported calling-convention version"),
        ("\u{e9}", 0, "unsupported calling-convention version 'é'"),
        ("0x", 1, "unknown item 'x'"),
        ("0ii_iq", 5, "unknown item 'q'"),
        ("0i\u{e9}", 2, "unknown item 'é'"),
        ("0i_i_i", 4, "a second '_'"),
        ("0__", 2, "a second '_'"),
        ("0Ci", 1, "never closed"),
        ("0CiCD_i", 1, "never closed"),
        ("0iD", 2, "without a matching 'C'"),
        ("0CiDD", 4, "without a matching 'C'"),
        ("0vi", 2, "after 'v'"),
        ("0iv", 2, "whole side"),
        ("0vv", 2, "whole side"),
        ("0_iv", 3, "whole side"),
        ("0CvD", 2, "inside a variadic span"),
        ("0C_D", 1, "never closed"),
        (" 0", 0, "unsupported"),
    ];
    for &(text, offset, part) in cases {
        let error = CallingConvention::parse(text).expect_err(text);
        assert_eq!(error.format, "calling convention");
        assert_eq!(error.offset, offset, "{text:?}: {error}");
        assert!(error.message.contains(part), "{text:?}: {error}");
    }
    let deep = format!("0{}i{}", "C".repeat(10_000), "D".repeat(10_000));
    let error = CallingConvention::parse(&deep).unwrap_err();
    assert_eq!(error.offset, 257);
    let ok = format!("0{}i{}", "C".repeat(256), "D".repeat(256));
    assert_eq!(cconv(&ok).to_string(), ok);
}

fn sig(args: Vec<Type>, results: Vec<Type>) -> Signature {
    Signature { args, results }
}

#[test]
fn implied_cconv() {
    let f32 = Type::Scalar(ScalarType::F32);
    let array = Type::ndarray_of_rank(ScalarType::F32, 2);
    let cases = [
        (sig(vec![], vec![]), "0v_v"),
        (sig(vec![int(32)], vec![]), "0i_v"),
        (sig(vec![], vec![int(64)]), "0v_I"),
        (
            sig(
                vec![
                    int(1),
                    int(8),
                    int(16),
                    int(32),
                    int(64),
                    Type::Scalar(ScalarType::int(64, Signedness::Unsigned)),
                ],
                vec![],
            ),
            "0iiiiII_v",
        ),
        (
            sig(
                vec![
                    Type::Scalar(ScalarType::F16),
                    Type::Scalar(ScalarType::BF16),
                    f32.clone(),
                    Type::Scalar(ScalarType::F64),
                ],
                vec![],
            ),
            "0fffF_v",
        ),
        (
            sig(
                vec![
                    array.clone(),
                    Type::String,
                    Type::Opaque,
                    Type::Null,
                    Type::TypedList(Box::new(int(8))),
                    Type::Named("k".into(), Box::new(int(64))),
                ],
                vec![],
            ),
            "0rrrrrI_v",
        ),
        // Inlined results: the single structure's slots.
        (
            sig(
                vec![],
                vec![Type::Tuple(vec![int(32), f32.clone(), array.clone()])],
            ),
            "0v_ifr",
        ),
        (
            sig(
                vec![],
                vec![Type::Dict(vec![
                    ("a".into(), int(64)),
                    ("b".into(), Type::Null),
                ])],
            ),
            "0v_Ir",
        ),
        (sig(vec![], vec![Type::List(vec![])]), "0v_v"),
        // Not inlined: typed lists, named structures, several results.
        (
            sig(vec![], vec![Type::TypedList(Box::new(int(32)))]),
            "0v_r",
        ),
        (
            sig(
                vec![],
                vec![Type::Named("x".into(), Box::new(Type::List(vec![int(32)])))],
            ),
            "0v_r",
        ),
        (
            sig(vec![], vec![Type::List(vec![int(32)]), int(32)]),
            "0v_ri",
        ),
    ];
    for (signature, expected) in cases {
        let implied = CallingConvention::implied_by(&signature).unwrap();
        assert_eq!(implied.to_string(), expected, "{signature}");
        cconv::check(&signature, &cconv(expected)).unwrap();
    }
    assert!(inlined_results(&sig(vec![], vec![Type::Dict(vec![])])));
    assert!(!inlined_results(&sig(
        vec![],
        vec![Type::TypedList(Box::new(int(8)))]
    )));
    let error =
        CallingConvention::implied_by(&sig(vec![int(8), Type::Unknown], vec![])).unwrap_err();
    assert_eq!(error.path, "args[1]");
    let error =
        CallingConvention::implied_by(&sig(vec![], vec![Type::Tuple(vec![int(8), Type::Unknown])]))
            .unwrap_err();
    assert_eq!(error.path, "results[0][1]");
    // An unknown *element* is fine: the array is still a buffer view.
    let unknown_array = Type::NdArray(NdArray {
        element: Box::new(Type::Unknown),
        dims: None,
    });
    assert_eq!(
        CallingConvention::implied_by(&sig(vec![unknown_array], vec![]))
            .unwrap()
            .to_string(),
        "0r_v"
    );
}

#[test]
fn cconv_check_names_the_first_difference() {
    let array = Type::ndarray_of_rank(ScalarType::F32, 2);
    let signature = sig(vec![array.clone(), array.clone()], vec![int(32)]);
    for good in ["0rr_i", "0rr_i"] {
        cconv::check(&signature, &cconv(good)).unwrap();
    }
    let message = |text: &str| {
        cconv::check(&signature, &cconv(text))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        message("0ri_i"),
        "calling convention mismatch: argument 1: the signature implies 'r' (ndarray<f32, 2>), \
         the calling convention has 'i'"
    );
    assert_eq!(
        message("0r_i"),
        "calling convention mismatch: argument 1: the signature implies 'r' (ndarray<f32, 2>), \
         the calling convention has only 1 argument"
    );
    assert_eq!(
        message("0rrr_i"),
        "calling convention mismatch: argument 2: the signature implies only 2 arguments, \
         the calling convention has 'r'"
    );
    assert_eq!(
        message("0rr_I"),
        "calling convention mismatch: result 0: the signature implies 'i' (i32), \
         the calling convention has 'I'"
    );
    assert_eq!(
        message("0rr"),
        "calling convention mismatch: result 0: the signature implies 'i' (i32), \
         the calling convention has only 0 results"
    );
    match cconv::check(&signature, &cconv("0rrCiD_i")).unwrap_err() {
        CheckError::Mismatch(mismatch) => {
            assert_eq!(mismatch.position, Position::Argument(2));
            assert_eq!(
                mismatch.found,
                Some(CconvItem::Variadic(vec![CconvItem::I32]))
            );
            assert_eq!(mismatch.implied, None);
        }
        other => panic!("{other}"),
    }
    // Empty spellings are equal.
    let empty = sig(vec![], vec![]);
    for text in ["", "0", "0_", "0v", "0v_v", "0_v"] {
        cconv::check(&empty, &cconv(text)).unwrap();
    }
    let unknown = sig(vec![Type::Unknown], vec![]);
    assert!(matches!(
        cconv::check(&unknown, &cconv("0r")),
        Err(CheckError::Unmappable(_))
    ));
}

// ---------------------------------------------------------------------------------------
// iree.abi.declaration
// ---------------------------------------------------------------------------------------

fn declaration(text: &str) -> Declaration {
    let parsed = Declaration::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(parsed.to_string(), text);
    parsed
}

#[test]
fn declaration_forms_round_trip() {
    let forms = [
        "sync func @add_one(%x_in: tensor<4xf32>) -> (%y_out: tensor<4xf32>)",
        "sync func @f() -> ()",
        "async func @f(%input0: tensor<?x3xf32>, %input1: tensor<f32>) -> (%output0: tensor<*xi8>)",
        "sync func @s(%input0: i1, %input1: si8, %input2: ui64, %input3: index, %input4: f16, \
         %input5: bf16, %input6: f32, %input7: f64, %input8: i32) -> ()",
        "sync func @d(%input0: !util.list<?>, %input1: !util.list<i8>, %input2: !hal.buffer_view, \
         %input3: !hal.fence) -> (%output0: !util.list<!util.list<?>>)",
        "sync func @a(%input0: tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@dev>}) -> \
         (%output0: i32 {iree.abi.encoding = tensor<?xf32, #enc<(d0) -> (d0)>>, x = \"}>\"})",
        "sync func @e(%input0: tensor<4x?xf32, #iree_encoding.encoding<operand_index = 0>>) -> ()",
        "sync func @o(%input0: complex<f32>, %input1: f8E4M3FN, %input2: i128, %input3: none, \
         %input4: vector<4xf32>) -> ()",
        "sync func @weird name$(%: i32, %a b: i32) -> ()",
        "sync func @t(%input0: tensor<0x1x18446744073709551615xf32>) -> ()",
    ];
    for text in forms {
        declaration(text);
    }
}

#[test]
fn declaration_ast() {
    let d = declaration(
        "async func @f(%x: tensor<4x?xf32> {a = 1}, %input1: !util.list<?>) -> (%output0: index)",
    );
    assert_eq!(d.model, InvocationModel::Async);
    assert_eq!(d.name, "f");
    assert_eq!(
        d.args[0],
        Param {
            name: "x".into(),
            ty: DeclType::Tensor(TensorType {
                dims: Some(vec![Some(4), None]),
                element: Box::new(DeclType::Scalar(ScalarType::F32)),
                encoding: None,
            }),
            attrs: Some("a = 1".into()),
        }
    );
    assert_eq!(
        d.args[1].ty,
        DeclType::Dialect {
            name: "util.list".into(),
            body: Some("?".into())
        }
    );
    assert_eq!(d.results[0].ty, DeclType::Index);
    assert_eq!(
        DeclType::parse("tensor<*xbf16>").unwrap().to_string(),
        "tensor<*xbf16>"
    );
}

#[test]
fn declaration_to_signature() {
    let d = declaration(
        "sync func @f(%input0: tensor<4x?xf32>, %x: tensor<*xsi8>, %input2: index, \
         %input3: !hal.buffer_view, %input4: !util.list<?>, %input5: !util.list<i8>, \
         %input6: !util.list<!hal.buffer_view>, %input7: !hal.fence, %input8: tensor<index>) \
         -> (%output0: ui16, %y: f64)",
    );
    let s = d.to_signature().unwrap();
    assert_eq!(s.args[0], Type::ndarray(ScalarType::F32, &[Some(4), None]));
    assert_eq!(
        s.args[1],
        Type::Named(
            "x".into(),
            Box::new(Type::ndarray_of_unknown_rank(ScalarType::int(
                8,
                Signedness::Signed
            )))
        )
    );
    assert_eq!(s.args[2], int(64));
    assert_eq!(
        s.args[3],
        Type::NdArray(NdArray {
            element: Box::new(Type::Unknown),
            dims: None
        })
    );
    assert_eq!(s.args[4], Type::TypedList(Box::new(Type::Unknown)));
    assert_eq!(s.args[5], Type::String);
    assert_eq!(
        s.args[6],
        Type::TypedList(Box::new(Type::NdArray(NdArray {
            element: Box::new(Type::Unknown),
            dims: None
        })))
    );
    assert_eq!(s.args[7], Type::Opaque);
    assert_eq!(s.args[8], Type::ndarray(ScalarType::I64, &[]));
    assert_eq!(
        s.results[0],
        Type::Scalar(ScalarType::int(16, Signedness::Unsigned))
    );
    assert_eq!(
        s.results[1],
        Type::Named("y".into(), Box::new(Type::Scalar(ScalarType::F64)))
    );

    for (text, path) in [
        ("sync func @f(%input0: complex<f32>) -> ()", "args[0]"),
        (
            "sync func @f() -> (%output0: tensor<4xcomplex<f32>>)",
            "results[0]",
        ),
        (
            "sync func @f(%input0: !util.list<tensor<4x>>) -> ()",
            "args[0]",
        ),
    ] {
        let error = declaration(text).to_signature().unwrap_err();
        assert_eq!(error.path, path, "{error}");
    }
}

#[test]
fn declaration_implied_by() {
    let array = Type::ndarray(ScalarType::F32, &[Some(4), None]);
    let signature = sig(
        vec![
            array.clone(),
            Type::Named("scale".into(), Box::new(Type::Scalar(ScalarType::F32))),
            Type::Dict(vec![("a".into(), int(32))]),
            Type::String,
            Type::Opaque,
            Type::ndarray_of_unknown_rank(ScalarType::int(8, Signedness::Unsigned)),
            Type::NdArray(NdArray {
                element: Box::new(Type::Unknown),
                dims: Some(vec![None]),
            }),
        ],
        vec![int(1), Type::TypedList(Box::new(int(32)))],
    );
    let d = Declaration::implied_by("f", &signature, InvocationModel::Sync).unwrap();
    assert_eq!(
        d.to_string(),
        "sync func @f(%input0: tensor<4x?xf32>, %scale: f32, %input2: !util.list<?>, \
         %input3: !util.list<i8>, %input4: !util.object, %input5: tensor<*xui8>, \
         %input6: !hal.buffer_view) -> (%output0: i1, %output1: !util.list<?>)"
    );
    // Inlined results are listed slot by slot.
    let inlined = sig(
        vec![],
        vec![Type::Dict(vec![
            ("out".into(), array),
            ("n".into(), int(32)),
        ])],
    );
    let d = Declaration::implied_by("g", &inlined, InvocationModel::Async).unwrap();
    assert_eq!(
        d.to_string(),
        "async func @g() -> (%output0: tensor<4x?xf32>, %output1: i32)"
    );

    for (signature, path) in [
        (sig(vec![Type::Null], vec![]), "args[0]"),
        (sig(vec![], vec![int(8), Type::Unknown]), "results[1]"),
        (
            sig(vec![], vec![Type::Tuple(vec![int(8), Type::Null])]),
            "results[0][1]",
        ),
        (
            sig(
                vec![Type::NdArray(NdArray {
                    element: Box::new(Type::String),
                    dims: None,
                })],
                vec![],
            ),
            "args[0]",
        ),
        (
            sig(
                vec![Type::Named(
                    "a".into(),
                    Box::new(Type::Named("b".into(), Box::new(int(8)))),
                )],
                vec![],
            ),
            "args[0]",
        ),
    ] {
        let error = Declaration::implied_by("f", &signature, InvocationModel::Sync).unwrap_err();
        assert_eq!(error.target, "iree.abi.declaration");
        assert_eq!(error.path, path, "{error}");
    }
}

#[test]
fn declaration_errors() {
    let cases: &[(&str, &str, usize, &str)] = &[
        ("func @f() -> ()", "func", 0, "'sync ' or 'async '"),
        ("sync fn @f() -> ()", "n @", 0, "\"func @\""),
        ("sync func @() -> ()", "(", 0, "function name"),
        ("sync func @f", "", 12, "'('"),
        ("sync func @f(x: i32) -> ()", "x", 0, "\"%\""),
        ("sync func @f(%x i32) -> ()", ")", 0, "\": \""),
        ("sync func @f(%x:i32) -> ()", "i32", 0, "\": \""),
        ("sync func @f(%x: ) -> ()", ")", 0, "expected a type"),
        ("sync func @f(%x: 32) -> ()", "32", 0, "expected a type"),
        ("sync func @f(%x: !) -> ()", ")", 0, "dialect type name"),
        ("sync func @f(%x: !4x) -> ()", "4x", 0, "dialect type name"),
        ("sync func @f(%x: tensor) -> ()", ")", 0, "\"<\""),
        ("sync func @f(%x: tensor<4f32>) -> ()", "f32", 0, "\"x\""),
        (
            "sync func @f(%x: tensor<04xf32>) -> ()",
            "04",
            0,
            "leading zero",
        ),
        (
            "sync func @f(%x: tensor<99999999999999999999xf32>) -> ()",
            "9",
            0,
            "64 bits",
        ),
        ("sync func @f(%x: tensor<4xf32) -> ()", ")", 0, "\">\""),
        (
            "sync func @f(%x: tensor<4xf32, >) -> ()",
            ">",
            0,
            "encoding",
        ),
        ("sync func @f(%x: !util.list<?) -> ()", ")", 0, "unbalanced"),
        (
            "sync func @f(%x: !util.list<(>) -> ()",
            ">",
            0,
            "unbalanced",
        ),
        (
            "sync func @f(%x: !util.list<\"?>) -> ()",
            "\"",
            0,
            "unterminated string",
        ),
        (
            "sync func @f(%x: i32 {a = 1) -> ()",
            ")",
            0,
            "expected '}', found ')'",
        ),
        (
            "sync func @f(%x: i32 {a = (1}) -> ()",
            "}",
            0,
            "expected ')'",
        ),
        ("sync func @f(%x: i32 {a = 1", "{", 0, "unclosed"),
        ("sync func @f(%x: i32,%y: i32) -> ()", ",", 0, "\") -> (\""),
        ("sync func @f(%x: i32)", "", 21, "\") -> (\""),
        ("sync func @f() -> (", "", 19, "\"%\""),
        ("sync func @f() -> ()x", "x", 0, "end of the text"),
        ("sync func @f() ->()", "()", 14, "\") -> (\""),
    ];
    for &(text, needle, after, part) in cases {
        let error = Declaration::parse(text).expect_err(text);
        assert_eq!(error.format, "iree.abi.declaration");
        let expected = if needle.is_empty() {
            after
        } else {
            after + text[after..].find(needle).expect(needle)
        };
        // Errors found inside a bracketed body point at the bracket or the byte at fault.
        assert_eq!(error.offset, expected, "{text:?}: {error}");
        assert!(error.message.contains(part), "{text:?}: {error}");
    }
    // Deep nesting: an error, not a stack overflow.
    for depth in [300, 10_000] {
        let text = format!(
            "sync func @f(%x: {}f32{}) -> ()",
            "tensor<".repeat(depth),
            ">".repeat(depth)
        );
        let error = Declaration::parse(&text).unwrap_err();
        assert!(error.message.contains("256"), "{error}");
        let text = format!(
            "sync func @f(%x: !a<{}{}>) -> ()",
            "<".repeat(depth),
            ">".repeat(depth)
        );
        let error = Declaration::parse(&text).unwrap_err();
        assert!(error.message.contains("256"), "{error}");
    }
}

// ---------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------

fn arb_scalar() -> impl Strategy<Value = ScalarType> {
    prop_oneof![
        (1u8..=64).prop_map(|bits| ScalarType::int(bits, Signedness::Signless)),
        Just(ScalarType::F16),
        Just(ScalarType::BF16),
        Just(ScalarType::F32),
        Just(ScalarType::F64),
    ]
}

fn arb_dims() -> impl Strategy<Value = Option<Vec<Option<u64>>>> {
    proptest::option::of(proptest::collection::vec(
        proptest::option::of(prop_oneof![0u64..100, Just(u64::MAX)]),
        0..4,
    ))
}

fn arb_key() -> impl Strategy<Value = String> {
    "[a-z\"\\\\\n\t\u{1}\u{7f}é ]{0,6}"
}

/// Types the JSON can express, below the top level.
fn arb_record() -> impl Strategy<Value = Type> {
    let leaf = prop_oneof![
        arb_scalar().prop_map(Type::Scalar),
        Just(Type::Null),
        Just(Type::Unknown),
        (arb_scalar(), arb_dims()).prop_map(|(element, dims)| Type::NdArray(NdArray {
            element: Box::new(Type::Scalar(element)),
            dims
        })),
    ];
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Type::List),
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Type::Tuple),
            proptest::collection::vec((arb_key(), inner.clone()), 0..4).prop_map(Type::Dict),
            inner.clone().prop_map(|t| Type::TypedList(Box::new(t))),
            (inner, arb_dims()).prop_map(|(t, dims)| Type::NdArray(NdArray {
                element: Box::new(t),
                dims
            })),
        ]
    })
}

fn arb_signature() -> impl Strategy<Value = Signature> {
    let entry = prop_oneof![
        3 => arb_record(),
        1 => (arb_key(), arb_record()).prop_map(|(k, t)| Type::Named(k, Box::new(t))),
    ];
    (
        proptest::collection::vec(entry.clone(), 0..4),
        proptest::collection::vec(entry, 0..4),
    )
        .prop_map(|(args, results)| Signature { args, results })
}

fn arb_item() -> impl Strategy<Value = CconvItem> {
    let leaf = prop_oneof![
        Just(CconvItem::I32),
        Just(CconvItem::I64),
        Just(CconvItem::F32),
        Just(CconvItem::F64),
        Just(CconvItem::Ref),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(CconvItem::Variadic)
    })
}

fn arb_decl_type() -> impl Strategy<Value = DeclType> {
    let scalar = prop_oneof![
        arb_scalar(),
        (1u8..=64).prop_map(|bits| ScalarType::int(bits, Signedness::Signed)),
        (1u8..=64).prop_map(|bits| ScalarType::int(bits, Signedness::Unsigned)),
    ];
    let element = prop_oneof![
        scalar.clone().prop_map(DeclType::Scalar),
        Just(DeclType::Index),
        Just(DeclType::Builtin {
            name: "complex".into(),
            body: Some("f32".into())
        }),
    ];
    let encoding = proptest::option::of(prop_oneof![
        Just("#enc".to_string()),
        Just("#e<(d0, d1) -> (d1), [1, 2], {a = \">\"}>".to_string()),
    ]);
    prop_oneof![
        scalar.prop_map(DeclType::Scalar),
        Just(DeclType::Index),
        (arb_dims(), element, encoding).prop_map(|(dims, element, encoding)| {
            DeclType::Tensor(TensorType {
                dims,
                element: Box::new(element),
                encoding,
            })
        }),
        (
            prop_oneof![
                Just("util.list"),
                Just("hal.buffer_view"),
                Just("hal.fence"),
                Just("x$y.z_1")
            ],
            proptest::option::of(prop_oneof![
                Just("?"),
                Just("i8"),
                Just("!hal.buffer_view"),
                Just("<>[]{}()\"<\""),
            ]),
        )
            .prop_map(|(name, body)| DeclType::Dialect {
                name: name.into(),
                body: body.map(Into::into)
            }),
        prop_oneof![
            Just(DeclType::Builtin {
                name: "f8E4M3FN".into(),
                body: None
            }),
            Just(DeclType::Builtin {
                name: "i128".into(),
                body: None
            }),
            Just(DeclType::Builtin {
                name: "vector".into(),
                body: Some("4x[4]xf32".into())
            }),
        ],
    ]
}

fn arb_param() -> impl Strategy<Value = Param> {
    (
        "[a-z0-9_. $]{0,6}",
        arb_decl_type(),
        proptest::option::of(prop_oneof![
            Just("iree.abi.affinity = #hal.device.promise<@dev>".to_string()),
            Just("a = \"}\", b = {c = [1]}".to_string()),
            Just(String::new()),
        ]),
    )
        .prop_map(|(name, ty, attrs)| Param { name, ty, attrs })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = IreeAbi::parse(&text);
        let _ = CallingConvention::parse(&text);
        let _ = Declaration::parse(&text);
        let _ = DeclType::parse(&text);
    }

    #[test]
    fn near_miss_json_never_panics(text in "[\\[\\]{}\",:0-9a-z \\\\.-]{0,48}") {
        let text = format!("{{\"a\":[{text}],\"r\":[]}}");
        if let Ok(abi) = IreeAbi::parse(&text) {
            let printed = abi.to_string();
            prop_assert_eq!(IreeAbi::parse(&printed).unwrap(), abi);
        }
    }

    #[test]
    fn near_miss_cconv_never_panics(text in "0?[iIfFrCDv_x]{0,16}") {
        if let Ok(cconv) = CallingConvention::parse(&text) {
            prop_assert_eq!(cconv.to_string(), text);
        }
    }

    #[test]
    fn near_miss_declaration_never_panics(
        text in concat!(
            "(sync|async) func @f\\((%[a-z]: )?[a-z0-9<>!?*.,(){}\" x%:-]{0,24}\\)",
            " -> \\([%a-z0-9<>: ]{0,12}\\)"
        )
    ) {
        if let Ok(declaration) = Declaration::parse(&text) {
            prop_assert_eq!(declaration.to_string(), text);
        }
    }

    #[test]
    fn iree_abi_round_trips(
        signature in arb_signature(),
        version in proptest::option::of(-3i64..3),
    ) {
        let text = abi_json::to_json(&signature, version).unwrap();
        let abi = IreeAbi::parse(&text).unwrap();
        prop_assert_eq!(abi.signature(), &signature);
        prop_assert_eq!(abi.version(), version);
        prop_assert_eq!(abi.to_string(), text);
    }

    #[test]
    fn cconv_round_trips(
        args in proptest::collection::vec(arb_item(), 0..5),
        results in proptest::collection::vec(arb_item(), 0..5),
    ) {
        let cconv = CallingConvention::new(args.clone(), results.clone());
        let text = cconv.to_string();
        let parsed = CallingConvention::parse(&text).unwrap();
        prop_assert_eq!(&parsed, &cconv);
        prop_assert_eq!(parsed.args(), &args[..]);
        prop_assert_eq!(parsed.results(), &results[..]);
    }

    #[test]
    fn implied_cconv_passes_its_own_check(signature in arb_signature()) {
        if let Ok(implied) = CallingConvention::implied_by(&signature) {
            prop_assert!(cconv::check(&signature, &implied).is_ok());
            prop_assert!(!implied.is_variadic());
        }
    }

    #[test]
    fn declaration_round_trips(
        async_model in any::<bool>(),
        name in "[a-zA-Z0-9_.$ ]{1,8}",
        args in proptest::collection::vec(arb_param(), 0..4),
        results in proptest::collection::vec(arb_param(), 0..4),
    ) {
        let model = if async_model { InvocationModel::Async } else { InvocationModel::Sync };
        let declaration = Declaration { model, name, args, results };
        let text = declaration.to_string();
        prop_assert_eq!(Declaration::parse(&text).unwrap(), declaration);
    }

    #[test]
    fn implied_declaration_round_trips(signature in arb_signature()) {
        if let Ok(declaration) = Declaration::implied_by("f", &signature, InvocationModel::Sync) {
            let text = declaration.to_string();
            let parsed = Declaration::parse(&text).unwrap();
            prop_assert_eq!(&parsed, &declaration);
            // Its own types imply the same VM calling convention.
            if let (Ok(a), Ok(b)) = (
                parsed.to_signature().map(|s| CallingConvention::implied_by(&s)),
                CallingConvention::implied_by(&signature),
            ) {
                prop_assert_eq!(a.unwrap().to_string(), b.to_string());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Conversion errors a caller can match
// ---------------------------------------------------------------------------------------

#[test]
fn conversion_errors_have_kinds_a_caller_can_match() {
    let one = |ty: Type| Signature {
        args: vec![ty],
        results: vec![],
    };

    // iree.abi has no record for strings, nor for signed integers.
    let error = IreeAbi::from_signature(&one(Type::String), None).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NoRecord(Type::String));
    assert_eq!(
        (error.target, error.path.as_str()),
        (abi_json::FORMAT, "args[0]")
    );
    let si8 = ScalarType::int(8, Signedness::Signed);
    let nested = Type::List(vec![Type::Scalar(ScalarType::I32), Type::Scalar(si8)]);
    let error = IreeAbi::from_signature(&one(nested), None).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NotSignless(si8));
    assert_eq!(error.path, "args[0][1]");
    let named = Type::List(vec![Type::Named("x".into(), Box::new(int(32)))]);
    let error = IreeAbi::from_signature(&one(named), None).unwrap_err();
    assert!(
        matches!(&error.kind, ConvertErrorKind::NestedName(Type::Named(name, _)) if name == "x")
    );

    // Unknown has no VM type, so neither a convention nor a check can be made.
    let error = CallingConvention::implied_by(&one(Type::Unknown)).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NoVmType(Type::Unknown));
    assert_eq!(
        error.to_string(),
        "cannot express args[0] as calling convention: an unknown type has no VM type"
    );
    let cconv = CallingConvention::parse("0r_v").unwrap();
    match cconv::check(&one(Type::Unknown), &cconv) {
        Err(CheckError::Unmappable(error)) => {
            assert_eq!(error.kind, ConvertErrorKind::NoVmType(Type::Unknown))
        }
        other => panic!("expected Unmappable, got {other:?}"),
    }

    // A declaration has no source type for null, and the model none for complex<f32>.
    let error = Declaration::implied_by("f", &one(Type::Null), InvocationModel::Sync).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NoMlirType(Type::Null));
    assert_eq!(
        error.to_string(),
        "cannot express args[0] as iree.abi.declaration: null has no MLIR type"
    );
    let error = Declaration::parse("sync func @f(%input0: complex<f32>) -> ()")
        .unwrap()
        .to_signature()
        .unwrap_err();
    assert_eq!(
        error.kind,
        ConvertErrorKind::NoModelType {
            declared: "complex<f32>".into()
        }
    );
    assert_eq!(error.path, "args[0]");
    let error = DeclType::parse("!util.list<tensor<4x>>")
        .unwrap()
        .to_type()
        .unwrap_err();
    assert!(
        matches!(&error.kind, ConvertErrorKind::ElementType { declared, error }
            if declared == "!util.list<tensor<4x>>" && error.offset > 0),
        "{error:?}"
    );
}
