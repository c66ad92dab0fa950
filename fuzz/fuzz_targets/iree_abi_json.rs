//! `iree.abi` JSON: parsing never panics and reports errors inside the input; what parses
//! prints in the compact form, which parses back to the same value and prints identically;
//! the signature converts back to JSON; and the calling convention and declaration it implies
//! follow the documented rules and agree with each other.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_iree::signature::abi_json::{self, FORMAT, IreeAbi};
use pactum_iree::signature::cconv::CallingConvention;
use pactum_iree::signature::declaration::{Declaration, InvocationModel};
use pactum_iree::signature::{Signature, Type};

fuzz_target!(|data: &[u8]| {
    let text = common::text(data);
    let abi = match IreeAbi::parse(&text) {
        Ok(abi) => abi,
        Err(error) => return common::check_parse_error(&error, &text, FORMAT),
    };

    // The compact form is a fixed point: it parses to the same value and prints the same.
    let printed = abi.to_string();
    let reparsed = IreeAbi::parse(&printed)
        .unwrap_or_else(|e| panic!("printed form {printed:?} does not parse: {e}"));
    assert_eq!(
        reparsed, abi,
        "printed form {printed:?} parses to another value"
    );
    assert_eq!(
        reparsed.to_string(),
        printed,
        "the compact form is not stable"
    );

    // Everything the parser produces is expressible, and from_signature prints the same
    // records (the extra top-level keys are the only thing it cannot know).
    let signature = abi.signature();
    let rebuilt = IreeAbi::from_signature(signature, abi.version())
        .unwrap_or_else(|e| panic!("parsed signature {signature} is not expressible: {e}"));
    assert_eq!(rebuilt.signature(), signature);
    if abi.extra().is_empty() {
        assert_eq!(rebuilt, abi);
        assert_eq!(
            abi_json::to_json(signature, abi.version()).as_deref(),
            Ok(&*printed)
        );
    }

    let implied_cconv = common::check_implied_cconv(signature);
    check_implied_declaration(signature, implied_cconv.as_ref());
});

/// `Declaration::implied_by` succeeds or fails cleanly; what it gives prints as text that
/// parses back (when the names leave the text unambiguous), converts to a signature, and
/// implies the same VM calling convention as the JSON.
fn check_implied_declaration(signature: &Signature, implied_cconv: Option<&CallingConvention>) {
    for model in [InvocationModel::Sync, InvocationModel::Async] {
        let Ok(declaration) = Declaration::implied_by("fuzzed", signature, model) else {
            continue;
        };
        let text = declaration.to_string();
        // Names are written unquoted, as the compiler does, so a name containing a
        // separator cannot be read back; that is the format, not a bug.
        let unambiguous = declaration
            .args
            .iter()
            .chain(&declaration.results)
            .all(|param| !param.name.contains([':', ',', '(', ')']));
        if unambiguous {
            assert_eq!(
                Declaration::parse(&text).as_ref(),
                Ok(&declaration),
                "implied declaration {text:?} does not parse back"
            );
        }
        let from_declaration = declaration
            .to_signature()
            .unwrap_or_else(|e| panic!("implied declaration {text:?} has no signature: {e}"));
        // The declaration lists inlined result slots one by one, and every structure is a
        // `!util.list<?>`, so its signature differs, but the VM sees the same values.
        let declared_cconv = CallingConvention::implied_by(&from_declaration)
            .unwrap_or_else(|e| panic!("{text:?} implies no calling convention: {e}"));
        // Whatever has a source type has a VM type, so the JSON implies a convention too.
        let implied_cconv = implied_cconv
            .unwrap_or_else(|| panic!("{text:?} was implied by a signature with no cconv"));
        assert!(
            declared_cconv.is_equivalent(implied_cconv),
            "{text:?} implies {declared_cconv}, the JSON implies {implied_cconv}"
        );
        assert!(
            !from_declaration
                .args
                .iter()
                .any(|ty| matches!(ty.unnamed(), Type::Unknown)),
            "an argument of {text:?} became unknown"
        );
    }
}
