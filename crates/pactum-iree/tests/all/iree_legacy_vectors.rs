//! The legacy IREE signature codecs (lexer, raw, SIP) against the shared test vectors in
//! `../shared/vectors/iree_legacy_signatures.json`, read in place so that new cases are
//! picked up without code changes, plus property tests of the codecs.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use pactum_iree::signature::lexer::{ComponentValue, Lexer};
use pactum_iree::signature::raw::{RawItem, RawScalarType, RawSignature};
use pactum_iree::signature::sip::{SipKey, SipMangler, SipNode, SipSignature, SipStructure};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/vectors/iree_legacy_signatures.json")
}

fn load_vectors() -> Value {
    let path = vectors_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read the legacy signature vectors at {}: {error}",
            path.display()
        )
    });
    serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not valid JSON: {error}", path.display()))
}

/// Runs `check` on every case of `name`, collecting failures (panics included) and reporting
/// them all with their inputs.
fn run_section(name: &str, check: impl Fn(&Value) -> Result<(), String>) {
    let vectors = load_vectors();
    let cases = vectors[name].as_array().unwrap_or_else(|| {
        panic!(
            "{}: section {name:?} is missing or not a list",
            vectors_path().display()
        )
    });
    assert!(!cases.is_empty(), "section {name:?} has no cases");
    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let outcome = catch_unwind(AssertUnwindSafe(|| check(case)))
            .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_text(&*panic))));
        if let Err(message) = outcome {
            let label = case
                .get("input")
                .or_else(|| case.get("builder"))
                .or_else(|| case.get("calls"));
            failures.push(format!(
                "  case {index} {}: {message}",
                label.unwrap_or(&Value::Null)
            ));
        }
    }
    eprintln!(
        "{name}: {} of {} cases pass",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} {name} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
        .unwrap_or_else(|| "(non-text panic)".to_string())
}

fn text<'v>(case: &'v Value, key: &str) -> Result<&'v str, String> {
    case[key]
        .as_str()
        .ok_or_else(|| format!("the case has no string {key:?}"))
}

fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

fn single_byte(value: &Value) -> Result<u8, String> {
    match value.as_str().map(str::as_bytes) {
        Some([byte]) => Ok(*byte),
        _ => Err(format!("bad tag {value}")),
    }
}

fn check_lexical(case: &Value) -> Result<(), String> {
    let input = text(case, "input")?;
    let expected = case["components"].as_array().ok_or("no components")?;
    let mut lexer = Lexer::new(input.as_bytes());
    for (index, component) in expected.iter().enumerate() {
        let got = lexer.next();
        let mismatch = |got: &dyn std::fmt::Debug| {
            Err(format!(
                "component {index}: expected {component}, got {got:?}"
            ))
        };
        match component["type"].as_str() {
            Some("integer") => {
                let tag = single_byte(&component["tag"])?;
                let value = component["value"].as_i64().ok_or("integer without value")?;
                match &got {
                    Some(Ok(c))
                        if c.tag == tag && c.value == ComponentValue::Integer(value as i32) => {}
                    _ => return mismatch(&got),
                }
            }
            Some("span") => {
                let tag = single_byte(&component["tag"])?;
                let contents = text(component, "contents")?.as_bytes();
                let length = component["length"].as_u64().ok_or("span without length")?;
                match &got {
                    Some(Ok(c))
                        if c.tag == tag
                            && c.span_contents() == Some(contents)
                            && contents.len() as u64 == length => {}
                    _ => return mismatch(&got),
                }
            }
            Some("end") => {
                if got.is_some() {
                    return mismatch(&got);
                }
            }
            Some("error") => {
                match &got {
                    Some(Err(error)) if error.offset <= input.len() => {}
                    _ => return mismatch(&got),
                }
                let after = lexer.next();
                ensure(after.is_none(), || {
                    format!("the lexer went on after an error: {after:?}")
                })?;
            }
            other => return Err(format!("unknown component type {other:?}")),
        }
    }
    Ok(())
}

#[test]
fn lexical_vectors() {
    run_section("lexical", check_lexical);
}

/// Builds the item named by a mangler call such as `AddShapedNDBuffer(float64, [-1,128,64])`.
fn build_raw_item(builder: &str) -> Result<RawItem, String> {
    let (call, arguments) = builder.split_once('(').ok_or("no '('")?;
    let arguments = arguments.strip_suffix(')').ok_or("no ')'")?;
    let scalar = |name: &str| {
        RawScalarType::from_name(name.trim()).ok_or(format!("unknown scalar type {name:?}"))
    };
    match call.trim() {
        "AddShapedNDBuffer" => {
            let (element, dims) = arguments.split_once(',').ok_or("no dims")?;
            let dims = dims
                .trim()
                .strip_prefix('[')
                .and_then(|d| d.strip_suffix(']'));
            let dims = dims.ok_or("dims are not a list")?;
            let dims = dims
                .split(',')
                .map(str::trim)
                .filter(|dim| !dim.is_empty())
                .map(|dim| dim.parse::<i32>().map_err(|e| format!("dim {dim:?}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RawItem::Buffer {
                element: scalar(element)?,
                dims,
            })
        }
        "AddScalar" => Ok(RawItem::Scalar(scalar(arguments)?)),
        "AddAnyReference" => Ok(RawItem::RefObject),
        "AddUnrecognized" => Ok(RawItem::Unrecognized),
        other => Err(format!("unknown builder call {other:?}")),
    }
}

fn check_raw_item(case: &Value) -> Result<(), String> {
    let item = build_raw_item(text(case, "builder")?)?;
    let expected = text(case, "expected")?;
    let encoded = item.to_string();
    ensure(encoded == expected, || {
        format!("encoded as {encoded:?}, expected {expected:?}")
    })?;
    // IREE's parser rejects `U`; everything else must read back.
    let wrapped = format!("I{}!{expected}R1!", expected.len() + 1);
    let parsed = RawSignature::parse(&wrapped);
    if item == RawItem::Unrecognized {
        return ensure(parsed.is_err(), || {
            format!("{wrapped:?} parsed: {parsed:?}")
        });
    }
    let want = RawSignature {
        inputs: vec![item],
        results: vec![],
    };
    ensure(parsed.as_ref() == Ok(&want), || {
        format!("{wrapped:?} parsed as {parsed:?}")
    })?;
    let strict = RawSignature::parse_strict(&wrapped);
    ensure(strict == Ok(want), || {
        format!("{wrapped:?} parsed strictly as {strict:?}")
    })
}

#[test]
fn raw_item_vectors() {
    run_section("raw_items", check_raw_item);
}

fn decoded_item(item: &Value) -> Result<RawItem, String> {
    let code = || {
        let code = item["type"].as_i64().ok_or(format!("no type in {item}"))?;
        RawScalarType::from_code(code as i32).ok_or(format!("bad type code in {item}"))
    };
    match item["kind"].as_str() {
        Some("buffer") => Ok(RawItem::Buffer {
            element: code()?,
            dims: item["dims"]
                .as_array()
                .ok_or("buffer without dims")?
                .iter()
                .map(|dim| dim.as_i64().map(|dim| dim as i32).ok_or("bad dim"))
                .collect::<Result<_, _>>()?,
        }),
        Some("scalar") => Ok(RawItem::Scalar(code()?)),
        Some("ref") => Ok(RawItem::RefObject),
        other => Err(format!("unknown item kind {other:?}")),
    }
}

fn decoded_items(list: &Value) -> Result<Vec<RawItem>, String> {
    list.as_array()
        .ok_or("items are not a list")?
        .iter()
        .map(decoded_item)
        .collect()
}

fn check_raw_function(case: &Value) -> Result<(), String> {
    let input = text(case, "input")?;
    let parsed = RawSignature::parse(input);
    if let Some(message) = case.get("error") {
        let message = message.as_str().ok_or("error is not text")?;
        match &parsed {
            Err(error) if error.message.contains(message) && error.offset <= input.len() => {}
            _ => {
                return Err(format!(
                    "expected an error containing {message:?}, got {parsed:?}"
                ));
            }
        }
        let strict = RawSignature::parse_strict(input);
        return ensure(strict.is_err(), || {
            format!("strict parsing accepted it: {strict:?}")
        });
    }
    let raw = parsed.map_err(|error| format!("unexpected error: {error}"))?;
    let want = RawSignature {
        inputs: decoded_items(&case["decoded"]["inputs"])?,
        results: decoded_items(&case["decoded"]["results"])?,
    };
    ensure(raw == want, || {
        format!("decoded {raw:?}, expected {want:?}")
    })?;
    let rendered = raw.render();
    let expected = text(case, "to_string")?;
    ensure(rendered == expected, || {
        format!("rendered {rendered:?}, expected {expected:?}")
    })?;
    let encoded = raw.to_string();
    for (mode, reparsed) in [
        ("parse", RawSignature::parse(&encoded)),
        ("parse_strict", RawSignature::parse_strict(&encoded)),
    ] {
        ensure(reparsed.as_ref() == Ok(&raw), || {
            format!("{mode} of the re-encoding {encoded:?} gave {reparsed:?}")
        })?;
    }
    if encoded == input {
        let strict = RawSignature::parse_strict(input);
        ensure(strict.as_ref() == Ok(&raw), || {
            format!("strict parsing gave {strict:?}")
        })?;
    }
    let signature = raw.to_signature();
    let back = RawSignature::from_signature(&signature);
    ensure(back.as_ref() == Ok(&raw), || {
        format!("{signature} converted back to {back:?}")
    })
}

#[test]
fn raw_function_vectors() {
    run_section("raw_functions", check_raw_function);
}

/// Parses `set(0,[0,'a']) then set(1,[1])` into (raw index, path) calls.
fn parse_mangler_calls(calls: &str) -> Result<Vec<(i32, Vec<SipKey>)>, String> {
    calls
        .split(" then ")
        .map(|call| {
            let arguments = call
                .trim()
                .strip_prefix("set(")
                .and_then(|c| c.strip_suffix(')'));
            let arguments = arguments.ok_or(format!("bad call {call:?}"))?;
            let (index, path) = arguments
                .split_once(',')
                .ok_or(format!("bad call {call:?}"))?;
            let index = index
                .trim()
                .parse::<i32>()
                .map_err(|e| format!("{call:?}: {e}"))?;
            let path = path
                .trim()
                .strip_prefix('[')
                .and_then(|p| p.strip_suffix(']'));
            let path = path.ok_or(format!("bad path in {call:?}"))?;
            Ok((index, parse_key_list(path)?))
        })
        .collect()
}

fn parse_key_list(list: &str) -> Result<Vec<SipKey>, String> {
    let mut keys = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        if let Some(quote @ ('\'' | '"')) = rest.chars().next() {
            let close = rest[1..]
                .find(quote)
                .ok_or(format!("unclosed quote in {list:?}"))?;
            keys.push(SipKey::Name(rest[1..1 + close].to_string()));
            rest = rest[close + 2..].trim_start();
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let number = rest[..end].trim();
            keys.push(SipKey::Index(
                number.parse().map_err(|e| format!("key {number:?}: {e}"))?,
            ));
            rest = &rest[end..];
        }
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(keys)
}

fn check_mangler_rejection(case: &Value) -> Result<(), String> {
    let calls = parse_mangler_calls(text(case, "calls")?)?;
    let last_ok = case["second_call_ok"]
        .as_bool()
        .ok_or("no second_call_ok")?;
    type Setter =
        fn(&mut SipMangler, i32, &[SipKey]) -> Result<(), pactum_iree::signature::ConvertError>;
    let sides: [(&str, Setter); 2] = [
        ("input", SipMangler::set_input),
        ("result", SipMangler::set_result),
    ];
    for (side, set) in sides {
        let mut mangler = SipMangler::new();
        for (position, (index, path)) in calls.iter().enumerate() {
            let outcome = set(&mut mangler, *index, path);
            let want_ok = position + 1 < calls.len() || last_ok;
            ensure(outcome.is_ok() == want_ok, || {
                format!("set_{side}({index}, {path:?}) gave {outcome:?}, expected ok = {want_ok}")
            })?;
        }
    }
    Ok(())
}

#[test]
fn sip_mangler_rejection_vectors() {
    run_section("sip_mangler_rejections", check_mangler_rejection);
}

fn node_json(node: &SipNode) -> Value {
    match node {
        SipNode::Leaf(index) => json!({ "raw": index }),
        SipNode::Sequence(children) => json!({
            "seq": children.iter().map(|(key, child)| json!([key, node_json(child)])).collect::<Vec<_>>()
        }),
        SipNode::Dict(children) => json!({
            "dict": children.iter().map(|(key, child)| {
                let key = match key {
                    SipKey::Name(name) => json!(name),
                    SipKey::Index(index) => json!(index),
                };
                json!([key, node_json(child)])
            }).collect::<Vec<_>>()
        }),
    }
}

fn structure_json(structure: &SipStructure) -> Value {
    match structure.roots() {
        [] => Value::Null,
        [root] => node_json(root),
        roots => json!({ "multiple_roots": roots.iter().map(node_json).collect::<Vec<_>>() }),
    }
}

fn check_sip_part(
    part: &str,
    parsed: &Result<SipStructure, pactum_iree::signature::ParseError>,
    expected: &Value,
    input: &str,
) -> Result<(), String> {
    if let Some(message) = expected.get("error") {
        let message = message.as_str().ok_or("error is not text")?;
        return match parsed {
            Err(error) if error.message.contains(message) && error.offset <= input.len() => Ok(()),
            _ => Err(format!(
                "{part}: expected an error containing {message:?}, got {parsed:?}"
            )),
        };
    }
    let structure = parsed
        .as_ref()
        .map_err(|error| format!("{part}: unexpected error: {error}"))?;
    let tree = structure_json(structure);
    ensure(tree == expected["tree"], || {
        format!("{part}: decoded {tree}, expected {}", expected["tree"])
    })?;
    let rendered = structure.render();
    let want = text(expected, "to_string")?;
    ensure(rendered == want, || {
        format!("{part}: rendered {rendered:?}, expected {want:?}")
    })?;
    // The mangler, fed the leaves, writes the same structure (it cannot write several roots).
    if structure.roots().len() <= 1 {
        let mut mangler = SipMangler::new();
        for (path, index) in structure.leaves() {
            mangler
                .set_input(index, &path)
                .map_err(|error| format!("{part}: the mangler rejected a leaf: {error}"))?;
        }
        let remangled = mangler.finish().inputs;
        ensure(remangled.to_string() == structure.to_string(), || {
            format!("{part}: the mangler wrote {remangled}, the input has {structure}")
        })?;
    }
    Ok(())
}

fn check_sip(case: &Value) -> Result<(), String> {
    let input = text(case, "input")?;
    let (inputs, results) = SipSignature::parse_parts(input);
    check_sip_part("inputs", &inputs, &case["inputs"], input)?;
    check_sip_part("results", &results, &case["results"], input)?;
    let parsed = SipSignature::parse(input);
    let (Ok(inputs), Ok(results)) = (inputs, results) else {
        return ensure(parsed.is_err(), || format!("parse accepted it: {parsed:?}"));
    };
    let sip = parsed.map_err(|error| format!("parse failed: {error}"))?;
    ensure(sip.inputs == inputs && sip.results == results, || {
        "parse and parse_parts disagree".to_string()
    })?;
    let encoded = sip.to_string();
    let reparsed = SipSignature::parse(&encoded);
    ensure(reparsed.as_ref() == Ok(&sip), || {
        format!("the re-encoding {encoded:?} parsed as {reparsed:?}")
    })?;
    let single_roots = sip.inputs.roots().len() <= 1 && sip.results.roots().len() <= 1;
    if encoded == input && single_roots {
        let strict = SipSignature::parse_strict(input);
        ensure(strict.as_ref() == Ok(&sip), || {
            format!("strict parsing gave {strict:?}")
        })?;
    }
    let signature = sip.to_signature(None);
    ensure(signature.is_ok() == single_roots, || {
        format!("to_signature gave {signature:?}")
    })
}

#[test]
fn sip_vectors() {
    run_section("sip", check_sip);
}

/// `count` spans `S<len>!` nested inside each other around `core`, built inside out in
/// linear time.
fn nested_spans(count: usize, prefix_body: &str, core: &str) -> String {
    let mut prefixes = Vec::with_capacity(count);
    let mut inner_length = core.len();
    for _ in 0..count {
        let prefix = format!("S{}!{prefix_body}", prefix_body.len() + inner_length + 1);
        inner_length += prefix.len();
        prefixes.push(prefix);
    }
    let mut text = String::with_capacity(inner_length);
    for prefix in prefixes.iter().rev() {
        text.push_str(prefix);
    }
    text.push_str(core);
    text
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let nested = nested_spans(100_000, "k0", "_0");
    let text = format!("I{}!{nested}R1!", nested.len() + 1);
    for (mode, result) in [
        ("parse", SipSignature::parse(&text).map(drop)),
        ("parse_strict", SipSignature::parse_strict(&text).map(drop)),
        ("parse_parts", SipSignature::parse_parts(&text).0.map(drop)),
    ] {
        let error = result.expect_err(mode);
        assert!(error.message.contains("deeper than"), "{mode}: {error}");
        assert!(error.offset < text.len());
    }
    // The raw format nests only two levels, so a nested `S` is an unknown scalar field.
    let error = RawSignature::parse(&text).unwrap_err();
    assert!(
        error.message.contains("Unrecognized scalar field tag"),
        "{error}"
    );
    assert!(RawSignature::parse_strict(&text).is_err());

    let plain = nested_spans(100_000, "", "");
    let text = format!("I{}!{plain}R1!", plain.len() + 1);
    assert!(SipSignature::parse(&text).is_err());
    assert!(RawSignature::parse(&text).is_err());
}

fn raw_scalar() -> impl Strategy<Value = RawScalarType> {
    prop::sample::select(RawScalarType::ALL.to_vec())
}

fn raw_item() -> impl Strategy<Value = RawItem> {
    prop_oneof![
        (raw_scalar(), vec(any::<i32>(), 0..5))
            .prop_map(|(element, dims)| RawItem::Buffer { element, dims }),
        raw_scalar().prop_map(RawItem::Scalar),
        Just(RawItem::RefObject),
    ]
}

fn raw_signature() -> impl Strategy<Value = RawSignature> {
    (vec(raw_item(), 0..6), vec(raw_item(), 0..6))
        .prop_map(|(inputs, results)| RawSignature { inputs, results })
}

/// A dict key: mostly strings, sometimes an integer (IREE's parser takes `k` keys in dicts).
fn sip_dict_key() -> impl Strategy<Value = SipKey> {
    prop_oneof![
        4 => "\\PC{0,6}".prop_map(SipKey::Name),
        1 => any::<i32>().prop_map(SipKey::Index),
    ]
}

fn sip_node() -> impl Strategy<Value = SipNode> {
    any::<i32>()
        .prop_map(SipNode::Leaf)
        .prop_recursive(5, 48, 4, |inner| {
            prop_oneof![
                vec((any::<i32>(), inner.clone()), 0..4).prop_map(SipNode::Sequence),
                vec((sip_dict_key(), inner), 0..4).prop_map(SipNode::Dict),
            ]
        })
}

fn sip_structure() -> impl Strategy<Value = SipStructure> {
    vec(sip_node(), 0..3).prop_map(SipStructure::from_roots)
}

fn sip_signature() -> impl Strategy<Value = SipSignature> {
    (sip_structure(), sip_structure())
        .prop_map(|(inputs, results)| SipSignature { inputs, results })
}

const ALPHABET: &[u8] = b"IRBSOUDtdkK_!0123456789-";

fn alphabet_text() -> impl Strategy<Value = String> {
    vec(prop::sample::select(ALPHABET.to_vec()), 0..48)
        .prop_map(|bytes| String::from_utf8(bytes).expect("the alphabet is ASCII"))
}

fn check_lexer_terminates(bytes: &[u8]) -> Result<(), TestCaseError> {
    let components: Vec<_> = Lexer::new(bytes).collect();
    prop_assert!(components.len() <= bytes.len());
    for (index, component) in components.iter().enumerate() {
        match component {
            Ok(component) => prop_assert!(component.offset < bytes.len()),
            Err(error) => {
                prop_assert_eq!(index, components.len() - 1, "an error ends the walk");
                prop_assert!(error.offset <= bytes.len());
            }
        }
    }
    Ok(())
}

/// Every parser returns (never panics); errors point inside the input; whatever the strict
/// parsers accept, the lenient ones accept the same way.
fn check_parsers(text: &str) -> Result<(), TestCaseError> {
    let length = text.len();
    let raw = RawSignature::parse(text);
    if let Err(error) = &raw {
        prop_assert!(error.offset <= length, "{}", error);
    }
    match RawSignature::parse_strict(text) {
        Ok(strict) => prop_assert_eq!(raw, Ok(strict)),
        Err(error) => prop_assert!(error.offset <= length, "{}", error),
    }
    let (inputs, results) = SipSignature::parse_parts(text);
    for part in [&inputs, &results] {
        if let Err(error) = part {
            prop_assert!(error.offset <= length, "{}", error);
        }
    }
    let sip = SipSignature::parse(text);
    match SipSignature::parse_strict(text) {
        Ok(strict) => prop_assert_eq!(sip, Ok(strict)),
        Err(error) => prop_assert!(error.offset <= length, "{}", error),
    }
    Ok(())
}

proptest! {
    #[test]
    fn raw_signatures_round_trip(raw in raw_signature()) {
        let encoded = raw.to_string();
        prop_assert_eq!(RawSignature::parse(&encoded), Ok(raw.clone()));
        prop_assert_eq!(RawSignature::parse_strict(&encoded), Ok(raw));
    }

    #[test]
    fn sip_signatures_round_trip(sip in sip_signature()) {
        let encoded = sip.to_string();
        prop_assert_eq!(SipSignature::parse(&encoded), Ok(sip.clone()));
        let (inputs, results) = SipSignature::parse_parts(&encoded);
        prop_assert_eq!(inputs, Ok(sip.inputs.clone()));
        prop_assert_eq!(results, Ok(sip.results.clone()));
        // The renderer and the leaf walk visit every leaf once.
        let leaves = sip.inputs.leaves().len();
        prop_assert_eq!(sip.inputs.render().matches("=raw(").count(), leaves);
    }

    #[test]
    fn mangled_signatures_parse_strictly(
        assignments in vec((0..8i32, vec(prop_oneof![
            (0..3i32).prop_map(SipKey::Index),
            prop::sample::select(vec!["a", "b", "c"]).prop_map(SipKey::from),
        ], 0..4)), 0..12)
    ) {
        let mut mangler = SipMangler::new();
        let mut accepted = Vec::new();
        for (index, path) in &assignments {
            if mangler.set_input(*index, path).is_ok() {
                accepted.push((path.clone(), *index));
            }
            let _ = mangler.set_result(*index, path);
        }
        let sip = mangler.finish();
        prop_assert_eq!(SipSignature::parse_strict(&sip.to_string()), Ok(sip.clone()));
        // The leaves are exactly the accepted assignments, in sorted order.
        let mut leaves = sip.inputs.leaves();
        leaves.sort();
        accepted.sort();
        prop_assert_eq!(leaves, accepted);
    }

    #[test]
    fn the_lexer_terminates_on_any_bytes(bytes in vec(any::<u8>(), 0..64)) {
        check_lexer_terminates(&bytes)?;
    }

    #[test]
    fn the_lexer_terminates_on_signature_like_bytes(text in alphabet_text()) {
        check_lexer_terminates(text.as_bytes())?;
    }

    #[test]
    fn parsers_never_panic_on_signature_like_text(text in alphabet_text()) {
        check_parsers(&text)?;
    }

    #[test]
    fn parsers_never_panic_on_any_text(text in "\\PC{0,40}") {
        check_parsers(&text)?;
    }

    #[test]
    fn parsers_never_panic_on_damaged_signatures(
        sip in sip_signature(),
        raw in raw_signature(),
        position in any::<prop::sample::Index>(),
        replacement in prop::sample::select(ALPHABET.to_vec()),
        delete in any::<bool>(),
    ) {
        for encoded in [sip.to_string(), raw.to_string()] {
            let mut bytes = encoded.into_bytes();
            let at = position.index(bytes.len());
            if delete { bytes.remove(at); } else { bytes[at] = replacement; }
            // Damage can split a multi-byte character of a dict key; skip those.
            if let Ok(text) = String::from_utf8(bytes) {
                check_parsers(&text)?;
            }
        }
    }
}

#[test]
fn conversion_errors_have_kinds_a_caller_can_match() {
    use pactum_iree::signature::raw;
    use pactum_iree::signature::{ConvertErrorKind, NdArray, ScalarType, Signature, Type};

    let one = |ty: Type| Signature {
        args: vec![ty],
        results: vec![],
    };
    let error = RawSignature::from_signature(&one(Type::String)).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NotFlat(Type::String));
    assert_eq!(
        (error.target, error.path.as_str()),
        (raw::TARGET, "args[0]")
    );
    let unranked = Type::ndarray_of_unknown_rank(ScalarType::F32);
    let error = RawSignature::from_signature(&one(unranked)).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::UnknownRank);
    let huge = Type::ndarray(ScalarType::F32, &[Some(1 << 40)]);
    let error = RawSignature::from_signature(&one(huge)).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::ExtentTooLarge(1 << 40));
    let strings = Type::NdArray(NdArray {
        element: Box::new(Type::String),
        dims: Some(vec![Some(2)]),
    });
    let error = RawSignature::from_signature(&one(strings)).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NonNumericBuffer(Type::String));
    let i7 = ScalarType::int(7, pactum_iree::signature::Signedness::Signless);
    let error = RawSignature::from_signature(&one(Type::Scalar(i7))).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::NoScalarCode(i7));
    let named_result = Signature {
        args: vec![],
        results: vec![Type::Named(
            "y".into(),
            Box::new(Type::Scalar(ScalarType::F32)),
        )],
    };
    let error = RawSignature::from_signature(&named_result).unwrap_err();
    assert!(
        matches!(error.kind, ConvertErrorKind::NameDropped(_)),
        "{error}"
    );
    assert_eq!(error.path, "results[0]");

    // A SIP leaf whose raw index the raw signature does not have, and a repeated dict key.
    let raw = RawSignature::parse("I1!R1!").unwrap();
    let sip = SipSignature {
        inputs: SipStructure::new(SipNode::Sequence(vec![(0, SipNode::Leaf(3))])),
        results: SipStructure::default(),
    };
    let error = sip.to_signature(Some(&raw)).unwrap_err();
    assert_eq!(
        error.kind,
        ConvertErrorKind::RawIndexOutOfRange { index: 3, items: 0 }
    );
    assert_eq!(error.path, "args[0]");
    let twice = SipSignature {
        inputs: SipStructure::new(SipNode::Dict(vec![
            ("k".into(), SipNode::Leaf(0)),
            ("k".into(), SipNode::Leaf(1)),
        ])),
        results: SipStructure::default(),
    };
    let error = twice.to_signature(None).unwrap_err();
    assert_eq!(error.kind, ConvertErrorKind::DuplicateDictKey("k".into()));

    // Building a SIP structure: a path through a leaf.
    let mut mangler = SipMangler::new();
    mangler.set_result(0, &[SipKey::Index(0)]).unwrap();
    let error = mangler
        .set_result(1, &[SipKey::Index(0), SipKey::Index(1)])
        .unwrap_err();
    assert_eq!(
        error.kind,
        ConvertErrorKind::PathThroughLeaf { raw_index: 0 }
    );
}
