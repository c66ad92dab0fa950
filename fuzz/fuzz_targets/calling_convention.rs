//! VM calling-convention strings: parsing never panics and reports errors inside the input;
//! what parses prints back byte for byte and parses to the same value; the compiler form is
//! equivalent; and a signature built from a non-variadic convention implies that convention
//! again, passes `check`, and gives an implied declaration with the same convention.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_iree::signature::cconv::{self, CallingConvention, CconvItem, FORMAT};
use pactum_iree::signature::declaration::{Declaration, InvocationModel};
use pactum_iree::signature::{ScalarType, Signature, Type};

fuzz_target!(|data: &[u8]| {
    let text = common::text(data);
    let cconv = match CallingConvention::parse(&text) {
        Ok(cconv) => cconv,
        Err(error) => return common::check_parse_error(&error, &text, FORMAT),
    };

    // Exact round trip: the spelling is kept.
    let printed = cconv.to_string();
    assert_eq!(printed, *text, "does not print back as parsed");
    assert_eq!(CallingConvention::parse(&printed).as_ref(), Ok(&cconv));
    assert_eq!(cconv.is_unspecified(), text.is_empty());
    assert_eq!(cconv.is_variadic(), text.contains('C'));
    // Items outside variadic spans, one per letter (`v`, `_` and the version are not items).
    let flat_items = |items: &[CconvItem]| items.iter().map(count_items).sum::<usize>();
    let letters = text
        .bytes()
        .skip(1)
        .filter(|b| b"iIfFrC".contains(b))
        .count();
    assert_eq!(
        flat_items(cconv.args()) + flat_items(cconv.results()),
        letters
    );

    // The compiler's spelling of the same types: both sides, `v` for an empty one.
    let compiler = cconv.to_compiler_form();
    assert!(compiler.is_equivalent(&cconv) && cconv.is_equivalent(&compiler));
    let compiler_text = compiler.to_string();
    assert_eq!(
        CallingConvention::parse(&compiler_text).as_ref(),
        Ok(&compiler)
    );
    assert_eq!(compiler_text.matches('_').count(), 1, "{compiler_text:?}");
    assert_eq!(compiler.to_compiler_form(), compiler);

    if cconv.is_variadic() {
        return; // Imports only: no signature describes them.
    }
    // A signature whose values have exactly these VM types.
    let signature = Signature {
        args: cconv.args().iter().map(type_for).collect(),
        results: cconv.results().iter().map(type_for).collect(),
    };
    let implied = common::check_implied_cconv(&signature)
        .unwrap_or_else(|| panic!("{signature} (from {text:?}) implies no convention"));
    assert_eq!(
        implied, compiler,
        "{signature} (from {text:?}) implies {implied}"
    );
    if let Err(error) = cconv::check(&signature, &cconv) {
        panic!("check rejects {text:?} for {signature}: {error}");
    }
    for model in [InvocationModel::Sync, InvocationModel::Async] {
        let declaration = Declaration::implied_by("f", &signature, model)
            .unwrap_or_else(|e| panic!("no declaration for {signature}: {e}"));
        let declared = declaration.to_string();
        assert_eq!(Declaration::parse(&declared).as_ref(), Ok(&declaration));
        let from_declaration = declaration
            .to_signature()
            .unwrap_or_else(|e| panic!("{declared:?} has no signature: {e}"));
        assert_eq!(
            CallingConvention::implied_by(&from_declaration).as_ref(),
            Ok(&compiler),
            "{declared:?} implies another convention"
        );
    }
});

/// Items, counting those inside variadic spans and the span itself.
fn count_items(item: &CconvItem) -> usize {
    match item {
        CconvItem::Variadic(items) => 1 + items.iter().map(count_items).sum::<usize>(),
        _ => 1,
    }
}

/// A model type that travels as `item`.
fn type_for(item: &CconvItem) -> Type {
    match item {
        CconvItem::I32 => Type::Scalar(ScalarType::I32),
        CconvItem::I64 => Type::Scalar(ScalarType::I64),
        CconvItem::F32 => Type::Scalar(ScalarType::F32),
        CconvItem::F64 => Type::Scalar(ScalarType::F64),
        CconvItem::Ref => Type::Opaque,
        CconvItem::Variadic(_) => unreachable!("variadic conventions are skipped"),
    }
}
