//! Legacy raw signatures (`I…R…`): both parsers never panic and report errors inside the
//! input; the strict parser accepts a subset of what the lenient one does, with the same
//! value; the exact encoding of a parsed value parses back (strictly) to it and is stable;
//! and the conversion to the shared model and back gives the same items.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_iree::signature::raw::{FORMAT, RawItem, RawSignature};

fuzz_target!(|data: &[u8]| {
    let text = common::text(data);
    let lenient = RawSignature::parse(&text);
    let strict = RawSignature::parse_strict(&text);
    if let Err(error) = &lenient {
        common::check_parse_error(error, &text, FORMAT);
    }
    match &strict {
        // Documented: where the strict parser succeeds, the lenient one gives the same.
        Ok(strict) => assert_eq!(lenient.as_ref(), Ok(strict), "strict and lenient disagree"),
        Err(error) => common::check_parse_error(error, &text, FORMAT),
    }
    let Ok(raw) = lenient else { return };

    // The parser never produces `U` (IREE rejects it).
    assert!(
        !raw.inputs
            .iter()
            .chain(&raw.results)
            .any(|item| *item == RawItem::Unrecognized),
        "parse produced an Unrecognized item"
    );

    // The exact encoding is canonical: it parses strictly to the same value and reprints.
    let printed = raw.to_string();
    assert_eq!(
        RawSignature::parse_strict(&printed).as_ref(),
        Ok(&raw),
        "encoding {printed:?} does not parse strictly back"
    );
    assert_eq!(RawSignature::parse(&printed).as_ref(), Ok(&raw));
    assert_eq!(
        RawSignature::parse(&printed)
            .map(|r| r.to_string())
            .as_deref(),
        Ok(&*printed)
    );

    // IREE's rendering lists every item.
    let rendered = raw.render();
    assert!(rendered.starts_with('(') && rendered.ends_with(')') && rendered.contains(") -> ("));

    // Model round trip. The model keeps "unknown extent" but not which negative number
    // spelled it, so every negative extent comes back as the mangler's -1.
    let signature = raw.to_signature();
    assert_eq!(signature.args.len(), raw.inputs.len());
    assert_eq!(signature.results.len(), raw.results.len());
    let back = RawSignature::from_signature(&signature).unwrap_or_else(|e| {
        panic!("model of {printed:?} ({signature}) does not convert back: {e}")
    });
    assert_eq!(
        back,
        normalize_extents(&raw),
        "model round trip of {printed:?}"
    );
    assert_eq!(back.to_signature(), signature);
    // Raw items are all flat and typed, so the convention they imply always exists.
    assert!(common::check_implied_cconv(&signature).is_some());
});

fn normalize_extents(raw: &RawSignature) -> RawSignature {
    let item = |item: &RawItem| match item {
        RawItem::Buffer { element, dims } => RawItem::Buffer {
            element: *element,
            dims: dims.iter().map(|&dim| dim.max(-1)).collect(),
        },
        other => other.clone(),
    };
    RawSignature {
        inputs: raw.inputs.iter().map(item).collect(),
        results: raw.results.iter().map(item).collect(),
    }
}
