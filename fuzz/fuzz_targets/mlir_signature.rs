//! MLIR types and function signatures: parsing never panics and reports errors inside the
//! input; what parses prints (as MLIR writes it) text that parses back to the same value.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_mlir::parse::{SIGNATURE_FORMAT, TYPE_FORMAT};
use pactum_mlir::{FunctionType, MlirType};

fuzz_target!(|data: &[u8]| {
    let text = common::text(data);

    match MlirType::parse(&text) {
        Ok(ty) => {
            let printed = ty.to_string();
            assert_eq!(
                MlirType::parse(&printed).as_ref(),
                Ok(&ty),
                "type {printed:?} (from {text:?}) does not parse back"
            );
        }
        Err(error) => common::check_parse_error(&error, &text, TYPE_FORMAT),
    }

    match FunctionType::parse(&text) {
        Ok(function) => {
            let printed = function.to_string();
            let bare = FunctionType {
                name: None,
                emit_c_interface: false,
                ..function.clone()
            };
            assert_eq!(
                FunctionType::parse(&printed).as_ref(),
                Ok(&bare),
                "function type {printed:?} (from {text:?}) does not parse back"
            );
            for ty in function.args.iter().chain(&function.results) {
                let written = ty.to_string();
                assert_eq!(
                    MlirType::parse(&written).as_ref(),
                    Ok(ty),
                    "type {written:?} (from {text:?}) does not parse back on its own"
                );
            }
            if function.name.is_none() {
                assert!(!function.emit_c_interface);
            }
        }
        Err(error) => common::check_parse_error(&error, &text, SIGNATURE_FORMAT),
    }
});
