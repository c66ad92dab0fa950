//! Legacy SIP signatures: the parsers never panic and report errors inside the input;
//! `parse` is `parse_parts` combined; strict success implies lenient success with the same
//! value; the exact encoding of a parsed value parses back to it and is stable; conversion to
//! the model succeeds exactly when the documented conditions hold and places the raw
//! signature's leaf types; and IREE's mangler, fed the leaves of a strictly parsed signature,
//! accepts them all and rebuilds the same structure.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_iree::signature::raw::{RawItem, RawSignature};
use pactum_iree::signature::sip::{
    FORMAT, MAX_SEQUENCE_SLOTS, SipKey, SipMangler, SipNode, SipSignature, SipStructure,
};
use pactum_iree::signature::{Signature, Type};

fuzz_target!(|data: &[u8]| {
    let text = common::text(data);
    let (inputs, results) = SipSignature::parse_parts(&text);
    for part in [&inputs, &results] {
        if let Err(error) = part {
            common::check_parse_error(error, &text, FORMAT);
        }
    }
    // `parse` fails if either part does, the inputs' error first.
    let combined = match (inputs, results) {
        (Ok(inputs), Ok(results)) => Ok(SipSignature { inputs, results }),
        (Err(error), _) | (Ok(_), Err(error)) => Err(error),
    };
    let lenient = SipSignature::parse(&text);
    assert_eq!(lenient, combined, "parse differs from parse_parts");
    match SipSignature::parse_strict(&text) {
        Ok(strict) => {
            assert_eq!(lenient.as_ref(), Ok(&strict), "strict and lenient disagree");
            check_mangler(&strict);
        }
        Err(error) => common::check_parse_error(&error, &text, FORMAT),
    }
    let Ok(sip) = lenient else { return };

    // The exact encoding parses to the same value (leniently: several roots, repeated and
    // negative keys are kept) and prints the same text.
    let printed = sip.to_string();
    let reparsed = SipSignature::parse(&printed)
        .unwrap_or_else(|e| panic!("encoding {printed:?} does not parse: {e}"));
    assert_eq!(
        reparsed, sip,
        "encoding {printed:?} parses to another value"
    );
    assert_eq!(reparsed.to_string(), printed);

    for structure in [&sip.inputs, &sip.results] {
        let rendered = structure.render();
        assert_eq!(rendered.is_empty(), structure.is_empty());
        // One `=raw(` per leaf, unless a dict key spells it too.
        if !keys_contain(structure, "=raw(") {
            assert_eq!(rendered.matches("=raw(").count(), structure.leaves().len());
        }
    }

    check_model(&sip);
});

/// A dict key as text: a string key itself, an integer key in decimal.
fn key_text(key: &SipKey) -> String {
    match key {
        SipKey::Name(name) => name.clone(),
        SipKey::Index(index) => index.to_string(),
    }
}

/// Whether any dict key in the structure contains `needle`.
fn keys_contain(structure: &SipStructure, needle: &str) -> bool {
    fn walk(node: &SipNode, needle: &str) -> bool {
        match node {
            SipNode::Leaf(_) => false,
            SipNode::Sequence(children) => children.iter().any(|(_, c)| walk(c, needle)),
            SipNode::Dict(children) => children
                .iter()
                .any(|(key, child)| key_text(key).contains(needle) || walk(child, needle)),
        }
    }
    structure.roots().iter().any(|root| walk(root, needle))
}

/// Whether the documented conditions for `to_signature` hold for one node: no negative,
/// repeated or too large sequence keys, no repeated dict keys.
fn convertible(node: &SipNode) -> bool {
    match node {
        SipNode::Leaf(_) => true,
        SipNode::Sequence(children) => {
            let mut keys: Vec<i32> = children.iter().map(|(key, _)| *key).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.len() == children.len()
                && children.iter().all(|(key, child)| {
                    usize::try_from(*key).is_ok_and(|key| key < MAX_SEQUENCE_SLOTS)
                        && convertible(child)
                })
        }
        SipNode::Dict(children) => {
            // Integer keys (which IREE's parser takes in dicts) become their decimal text.
            let mut keys: Vec<String> = children.iter().map(|(key, _)| key_text(key)).collect();
            keys.sort_unstable();
            keys.dedup();
            keys.len() == children.len() && children.iter().all(|(_, child)| convertible(child))
        }
    }
}

fn structure_convertible(structure: &SipStructure) -> bool {
    structure.roots().len() <= 1 && structure.roots().iter().all(convertible)
}

/// `Type::Unknown` (a leaf without a raw signature) replaced by `Type::Opaque`.
fn unknown_as_opaque(ty: &Type) -> Type {
    match ty {
        Type::Unknown => Type::Opaque,
        Type::List(slots) => Type::List(slots.iter().map(unknown_as_opaque).collect()),
        Type::Dict(entries) => Type::Dict(
            entries
                .iter()
                .map(|(key, slot)| (key.clone(), unknown_as_opaque(slot)))
                .collect(),
        ),
        Type::Named(name, inner) => Type::Named(name.clone(), Box::new(unknown_as_opaque(inner))),
        other => other.clone(),
    }
}

fn check_model(sip: &SipSignature) {
    let expect_ok = structure_convertible(&sip.inputs) && structure_convertible(&sip.results);
    let without_raw = sip.to_signature(None);
    assert_eq!(
        without_raw.is_ok(),
        expect_ok,
        "to_signature(None) of {sip}: {without_raw:?}"
    );
    let Ok(without_raw) = without_raw else { return };

    // With a raw signature of ref objects long enough for every leaf, the same shape comes
    // out with the leaves typed. Skip huge raw indices: the raw signature would be huge.
    let needed = |structure: &SipStructure| -> Option<usize> {
        let leaves = structure.leaves();
        let max = leaves.iter().map(|(_, index)| *index).max().unwrap_or(-1);
        let min = leaves.iter().map(|(_, index)| *index).min().unwrap_or(0);
        (min >= 0 && max < 4096).then(|| (max + 1) as usize)
    };
    let (Some(input_count), Some(result_count)) = (needed(&sip.inputs), needed(&sip.results))
    else {
        return;
    };
    let raw = RawSignature {
        inputs: vec![RawItem::RefObject; input_count],
        results: vec![RawItem::RefObject; result_count],
    };
    let with_raw = sip
        .to_signature(Some(&raw))
        .unwrap_or_else(|e| panic!("to_signature({sip}) with {raw} failed: {e}"));
    let expected = Signature {
        args: without_raw.args.iter().map(unknown_as_opaque).collect(),
        results: without_raw.results.iter().map(unknown_as_opaque).collect(),
    };
    assert_eq!(with_raw, expected, "leaf types placed wrongly for {sip}");
    // One raw input fewer leaves the highest raw index outside it.
    if input_count > 0 {
        let short = RawSignature {
            inputs: vec![RawItem::RefObject; input_count - 1],
            results: raw.results.clone(),
        };
        assert!(
            sip.to_signature(Some(&short)).is_err(),
            "index outside raw accepted: {sip}"
        );
    }
}

/// IREE's mangler, given each leaf of a strictly parsed signature (no repeated or negative
/// keys, one root), accepts every call and writes a signature with the same leaves; when the
/// parsed one is in the mangler's own form (sorted keys, no empty structures), the same one.
fn check_mangler(strict: &SipSignature) {
    let mut mangler = SipMangler::new();
    for (path, index) in strict.inputs.leaves() {
        if let Err(error) = mangler.set_input(index, &path) {
            panic!("mangler rejects input leaf {path:?} = {index} of {strict}: {error}");
        }
    }
    for (path, index) in strict.results.leaves() {
        if let Err(error) = mangler.set_result(index, &path) {
            panic!("mangler rejects result leaf {path:?} = {index} of {strict}: {error}");
        }
    }
    let mangled = mangler.finish();
    let printed = mangled.to_string();
    assert_eq!(
        SipSignature::parse_strict(&printed).as_ref(),
        Ok(&mangled),
        "mangled {printed:?} does not parse strictly"
    );
    for (original, rebuilt) in [
        (&strict.inputs, &mangled.inputs),
        (&strict.results, &mangled.results),
    ] {
        let mut want = original.leaves();
        let mut got = rebuilt.leaves();
        want.sort();
        got.sort();
        assert_eq!(got, want, "mangler changed the leaves of {strict}");
        if original.roots().iter().all(in_mangler_form) {
            assert_eq!(rebuilt, original, "mangler reordered {strict}");
        }
    }
}

/// Sorted children (integers ascending, strings bytewise) and no empty structures.
fn in_mangler_form(node: &SipNode) -> bool {
    match node {
        SipNode::Leaf(_) => true,
        SipNode::Sequence(children) => {
            !children.is_empty()
                && children.windows(2).all(|pair| pair[0].0 < pair[1].0)
                && children.iter().all(|(_, child)| in_mangler_form(child))
        }
        SipNode::Dict(children) => {
            !children.is_empty()
                && children
                    .iter()
                    .all(|(key, _)| matches!(key, SipKey::Name(_)))
                && children
                    .windows(2)
                    .all(|pair| key_text(&pair[0].0).as_bytes() < key_text(&pair[1].0).as_bytes())
                && children.iter().all(|(_, child)| in_mangler_form(child))
        }
    }
}
