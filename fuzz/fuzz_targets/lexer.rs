//! The tagged-component lexer of the legacy formats, on arbitrary bytes: it never panics,
//! yields at most one error and only last, with offsets inside the input; the components it
//! yields tile the input exactly (each starts where the previous ended, and without an error
//! the last ends at the end); each integer and span length is the decimal number its bytes
//! spell; `SignatureWriter` re-encodes every component so that it lexes back to the same;
//! and all of this holds inside nested spans, with absolute offsets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum_iree::signature::lexer::{Component, ComponentValue, Lexer, SignatureWriter};

/// How deep to follow spans into their contents: enough for every real signature, bounded
/// so that one input cannot cost quadratic time.
const MAX_NESTING: usize = 32;

fuzz_target!(|data: &[u8]| {
    let lexer = Lexer::new(data);
    assert_eq!((lexer.offset(), lexer.end_offset()), (0, data.len()));
    check_run(data, lexer, 0, 0);
});

/// Checks one run of components: `lexer` covers `data[base..base + len]`.
fn check_run(data: &[u8], mut lexer: Lexer<'_>, base: usize, depth: usize) {
    let end = lexer.end_offset();
    assert!(base <= end && end <= data.len());
    let mut expected_start = base;
    while let Some(item) = lexer.next() {
        match item {
            Ok(component) => {
                assert_eq!(
                    component.offset, expected_start,
                    "components must tile the input"
                );
                assert_eq!(component.tag, data[component.offset]);
                let component_end = check_component(data, &component, end);
                assert_eq!(lexer.offset(), component_end);
                expected_start = component_end;
                if depth < MAX_NESTING {
                    if let Some(nested) = component.nested_lexer() {
                        let ComponentValue::Span {
                            contents_offset, ..
                        } = component.value
                        else {
                            unreachable!("a nested lexer comes from a span")
                        };
                        check_run(data, nested, contents_offset, depth + 1);
                    }
                }
            }
            Err(error) => {
                assert!(
                    error.offset >= expected_start && error.offset <= end,
                    "error at {} outside [{expected_start}, {end}]: {error}",
                    error.offset
                );
                assert!(lexer.next().is_none(), "the lexer continued after an error");
                return;
            }
        }
    }
    assert_eq!(
        expected_start, end,
        "the components stop before the end without an error"
    );
    assert!(lexer.is_at_end());
}

/// Checks one component against the bytes it was read from (which end at `limit`); returns
/// the offset just past it.
fn check_component(data: &[u8], component: &Component<'_>, limit: usize) -> usize {
    let number_start = component.offset + 1;
    let negative = data.get(number_start) == Some(&b'-');
    let digits_end = number_start
        + usize::from(negative)
        + data[number_start + usize::from(negative)..limit]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
    let number: &str = std::str::from_utf8(&data[number_start..digits_end]).expect("ASCII");
    let mut writer = SignatureWriter::new();
    let component_end = match component.value {
        ComponentValue::Integer(value) => {
            assert!(component.tag == b'_' || component.tag.is_ascii_lowercase());
            // Leading zeros and `-0` are allowed; the value is what the digits spell.
            assert_eq!(number.parse::<i32>(), Ok(value), "integer {number:?}");
            writer.integer(component.tag, value);
            digits_end
        }
        ComponentValue::Span {
            contents,
            contents_offset,
        } => {
            assert!(component.tag.is_ascii_uppercase());
            assert!(!negative, "a span length is never negative");
            assert_eq!(
                number.parse::<usize>(),
                Ok(contents.len() + 1),
                "span length {number:?}"
            );
            assert_eq!(data[digits_end], b'!');
            assert_eq!(contents_offset, digits_end + 1);
            let contents_end = contents_offset + contents.len();
            assert!(contents_end <= limit, "span runs past its enclosing input");
            assert_eq!(contents, &data[contents_offset..contents_end]);
            // The writer takes text; spans of other bytes cannot be re-encoded through it.
            let Ok(contents) = std::str::from_utf8(contents) else {
                return contents_end;
            };
            writer.span(component.tag, contents);
            contents_end
        }
    };
    // The writer's encoding lexes back to one component with the same value.
    let encoded = writer.as_str().as_bytes();
    let relexed: Vec<_> = Lexer::new(encoded).collect();
    assert_eq!(
        relexed.len(),
        1,
        "{:?} lexes to {relexed:?}",
        writer.as_str()
    );
    let relexed = relexed[0].as_ref().expect("the writer's output lexes");
    assert_eq!((relexed.tag, relexed.offset), (component.tag, 0));
    match (relexed.value, component.value) {
        (ComponentValue::Integer(a), ComponentValue::Integer(b)) => assert_eq!(a, b),
        (ComponentValue::Span { contents: a, .. }, ComponentValue::Span { contents: b, .. }) => {
            assert_eq!(a, b)
        }
        other => panic!("re-encoding changed the kind: {other:?}"),
    }
    component_end
}
