//! `iree.abi.declaration` text: parsing never panics and reports errors inside the input;
//! what parses prints back byte for byte and parses to the same value; every parameter's
//! type prints as text `DeclType::parse` reads back; the model conversion is consistent
//! per parameter and implies a calling convention; and `Declaration::implied_by` of the
//! declaration's own signature succeeds and is a fixed point after one step.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_iree::signature::cconv::CallingConvention;
use pactum_iree::signature::declaration::{DeclType, Declaration, FORMAT};
use pactum_iree::signature::{Signature, Type};

fuzz_target!(|data: &[u8]| {
    let text = common::text(data);
    let declaration = match Declaration::parse(&text) {
        Ok(declaration) => declaration,
        Err(error) => return common::check_parse_error(&error, &text, FORMAT),
    };

    // Exact round trip.
    let printed = declaration.to_string();
    assert_eq!(printed, *text, "does not print back as parsed");
    assert_eq!(Declaration::parse(&printed).as_ref(), Ok(&declaration));

    let params: Vec<_> = declaration
        .args
        .iter()
        .chain(&declaration.results)
        .collect();
    for param in &params {
        let written = param.ty.to_string();
        assert_eq!(
            DeclType::parse(&written).as_ref(),
            Ok(&param.ty),
            "type {written:?} does not parse back on its own"
        );
    }

    let signature = match declaration.to_signature() {
        Ok(signature) => signature,
        Err(_) => {
            // Exactly some parameter's type has no model counterpart.
            assert!(
                params.iter().any(|param| param.ty.to_type().is_err()),
                "to_signature failed but every type converts: {text:?}"
            );
            return;
        }
    };
    assert_eq!(signature.args.len(), declaration.args.len());
    assert_eq!(signature.results.len(), declaration.results.len());
    for (param, ty) in params
        .iter()
        .zip(signature.args.iter().chain(&signature.results))
    {
        assert_eq!(
            param.ty.to_type().as_ref(),
            Ok(ty.unnamed()),
            "type of %{}",
            param.name
        );
    }

    // Declarations describe every value, and never a single inlined structure, so the
    // convention always exists and has one item per parameter.
    let cconv = common::check_implied_cconv(&signature)
        .unwrap_or_else(|| panic!("{text:?} ({signature}) implies no calling convention"));
    assert_eq!(cconv.args().len(), declaration.args.len());
    assert_eq!(cconv.results().len(), declaration.results.len());

    // Back to a declaration: types the model cannot tell apart collapse (`index` is `i64`,
    // `!util.list<f32>` is `!util.list<?>`), after which the mapping is a fixed point.
    let implied = Declaration::implied_by(&declaration.name, &signature, declaration.model)
        .unwrap_or_else(|e| panic!("no declaration implied by {signature} (from {text:?}): {e}"));
    let implied_text = implied.to_string();
    assert_eq!(
        Declaration::parse(&implied_text).as_ref(),
        Ok(&implied),
        "implied declaration {implied_text:?} does not parse back"
    );
    let implied_signature = implied
        .to_signature()
        .unwrap_or_else(|e| panic!("{implied_text:?} has no signature: {e}"));
    assert_eq!(
        implied_signature,
        collapse(&signature),
        "from {text:?} via {implied_text:?}"
    );
    let again = Declaration::implied_by(&implied.name, &implied_signature, implied.model)
        .unwrap_or_else(|e| panic!("{implied_text:?} implies nothing the second time: {e}"));
    assert_eq!(
        again, implied,
        "implied_by is not a fixed point for {text:?}"
    );
    assert!(
        CallingConvention::implied_by(&implied_signature).is_ok_and(|c| c.is_equivalent(&cconv))
    );
});

/// What survives a trip through a declaration: every typed list is `!util.list<?>`.
fn collapse(signature: &Signature) -> Signature {
    fn collapse_type(ty: &Type) -> Type {
        match ty {
            Type::TypedList(_) => Type::TypedList(Box::new(Type::Unknown)),
            Type::Named(name, inner) => Type::Named(name.clone(), Box::new(collapse_type(inner))),
            other => other.clone(),
        }
    }
    Signature {
        args: signature.args.iter().map(collapse_type).collect(),
        results: signature.results.iter().map(collapse_type).collect(),
    }
}
