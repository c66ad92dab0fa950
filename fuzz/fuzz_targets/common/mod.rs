//! Checks shared by the fuzz targets. Each target includes this module with `mod common;`,
//! so an item one target leaves unused is not a warning there.
#![allow(dead_code)]

use std::borrow::Cow;

use pactum_iree::signature::cconv::{self, CallingConvention};
use pactum_iree::signature::{ParseError, ScalarType, Signature, Type};

/// The fuzz input as text. The parsers take `&str`; input that is not UTF-8 is read with its
/// invalid sequences replaced (U+FFFD), so that byte-level mutations still reach the parsers
/// instead of being thrown away.
pub fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Every parser promises an error that names its format and a byte offset inside the input
/// (the end of the input at most).
pub fn check_parse_error(error: &ParseError, input: &str, format: &str) {
    assert_eq!(error.format, format, "wrong format name in {error}");
    assert!(
        error.offset <= input.len(),
        "error offset {} is past the end of the {}-byte input: {error}",
        error.offset,
        input.len()
    );
    assert!(
        !error.message.is_empty(),
        "empty error message at {}",
        error.offset
    );
    // Display must not panic either (it is what users see).
    let _ = error.to_string();
}

/// The VM item a top-level value or inlined slot stands for, written from the rules in the
/// `cconv` module documentation (not from its code), so that the two can disagree. `None`
/// for `Type::Unknown`, which has no VM type.
pub fn expected_item(ty: &Type) -> Option<char> {
    Some(match ty {
        Type::Named(_, inner) => return expected_item(inner),
        Type::Scalar(ScalarType::Int { bits: 64, .. }) => 'I',
        Type::Scalar(ScalarType::Int { .. }) => 'i',
        Type::Scalar(ScalarType::F64) => 'F',
        Type::Scalar(_) => 'f',
        Type::Unknown => return None,
        Type::NdArray(_)
        | Type::String
        | Type::Opaque
        | Type::List(_)
        | Type::Tuple(_)
        | Type::Dict(_)
        | Type::TypedList(_)
        | Type::Null => 'r',
    })
}

/// The values a signature's results come back as: the slots of a single (unnamed) `slist`,
/// `stuple` or `sdict` result, else the results themselves.
pub fn result_values(signature: &Signature) -> Vec<&Type> {
    match signature.results.as_slice() {
        [Type::List(slots) | Type::Tuple(slots)] => slots.iter().collect(),
        [Type::Dict(entries)] => entries.iter().map(|(_, slot)| slot).collect(),
        all => all.iter().collect(),
    }
}

/// The compiler-form calling convention (`0r_ri`, `0v_v`) the documented rules give for
/// `signature`, or `None` when some value has no VM type.
pub fn expected_cconv(signature: &Signature) -> Option<String> {
    let side = |types: Vec<&Type>| -> Option<String> {
        if types.is_empty() {
            return Some("v".to_string());
        }
        types.into_iter().map(expected_item).collect()
    };
    let args = side(signature.args.iter().collect())?;
    let results = side(result_values(signature))?;
    Some(format!("0{args}_{results}"))
}

/// Checks `CallingConvention::implied_by` and `cconv::check` against the documented rules:
/// it succeeds exactly when every value has a VM type, gives the compiler form, parses back,
/// and `check` accepts it (and rejects, as unmappable, a signature with no convention).
/// Returns the implied convention.
pub fn check_implied_cconv(signature: &Signature) -> Option<CallingConvention> {
    let expected = expected_cconv(signature);
    // Inlined: exactly one result, an unnamed slist, stuple or sdict.
    assert_eq!(
        cconv::inlined_results(signature),
        matches!(
            signature.results.as_slice(),
            [Type::List(_) | Type::Tuple(_) | Type::Dict(_)]
        ),
        "inlined_results of {signature}"
    );
    match CallingConvention::implied_by(signature) {
        Ok(implied) => {
            let printed = implied.to_string();
            assert_eq!(
                Some(printed.as_str()),
                expected.as_deref(),
                "implied cconv of {signature}"
            );
            assert_eq!(
                CallingConvention::parse(&printed).as_ref(),
                Ok(&implied),
                "implied cconv {printed:?} does not parse back"
            );
            assert_eq!(implied.to_compiler_form(), implied);
            if let Err(error) = cconv::check(signature, &implied) {
                panic!("check rejects the convention implied by {signature}: {error}");
            }
            // One argument too many must be reported at that position.
            let mut args = implied.args().to_vec();
            args.push(cconv::CconvItem::I32);
            let longer = CallingConvention::new(args, implied.results().to_vec());
            match cconv::check(signature, &longer) {
                Err(cconv::CheckError::Mismatch(mismatch)) => assert_eq!(
                    mismatch.position,
                    cconv::Position::Argument(signature.args.len()),
                    "mismatch reported at the wrong place for {signature}"
                ),
                other => panic!("check accepts an extra argument for {signature}: {other:?}"),
            }
            Some(implied)
        }
        Err(error) => {
            assert_eq!(expected, None, "implied_by failed for {signature}: {error}");
            assert!(
                matches!(
                    cconv::check(signature, &CallingConvention::unspecified()),
                    Err(cconv::CheckError::Unmappable(_))
                ),
                "check does not report {signature} as unmappable"
            );
            None
        }
    }
}
