//! The argument syntax of `pactum call` (`pactum_cli::args::parse`): any text (invalid UTF-8
//! read lossily) at any argument index either parses or fails with a message that starts by
//! naming that argument (`argument <index> (...)`), never panics. Every parsed value converts
//! to an `Any` of the matching type, and integers and floats printed back (Display, Debug, and
//! with an explicit `:i64`/`:f64` suffix) parse to the same value.
//!
//! `@file` arguments read files: the fuzzer never passes text starting with `@` (the `.npy`
//! reader behind them has its own target, `npy_reader`).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use pactum_cli::args::{CallArg, parse};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the argument index, so that messages are checked for several.
    let (index, text) = match data.split_first() {
        Some((&first, rest)) => (usize::from(first), common::text(rest)),
        None => (0, common::text(data)),
    };
    if text.starts_with('@') {
        return;
    }
    check(&text, index);
});

fn check(text: &str, index: usize) {
    let argument = match parse(text, index) {
        Ok(argument) => argument,
        Err(error) => {
            let message = error.to_string();
            let expected = format!("argument {index} (`{text}`): ");
            assert!(
                message.starts_with(&expected) && message.len() > expected.len(),
                "error does not name argument {index} and say why: {message:?}"
            );
            let _ = format!("{error:#}");
            return;
        }
    };
    let any = argument.to_any();
    match argument {
        CallArg::Int(value) => {
            assert_eq!(any.type_index(), 1, "{text:?} is an Int");
            assert_eq!(any.get::<i64>().ok(), Some(value), "{text:?}");
            for printed in [value.to_string(), format!("{value}:i64")] {
                match parse(&printed, index) {
                    Ok(CallArg::Int(back)) => assert_eq!(back, value, "{text:?} via {printed:?}"),
                    other => panic!("{text:?} is {value}, printed {printed:?} gives {other:?}"),
                }
            }
            // Hexadecimal, as `0x1f` and `-0x1f`.
            let hex = if value < 0 {
                format!("-0x{:x}", value.unsigned_abs())
            } else {
                format!("0x{value:x}")
            };
            match parse(&hex, index) {
                Ok(CallArg::Int(back)) => assert_eq!(back, value, "{hex:?}"),
                other => panic!("{value} in hex {hex:?} gives {other:?}"),
            }
        }
        CallArg::Float(value) => {
            assert_eq!(any.type_index(), 3, "{text:?} is a Float");
            let back = any.get::<f64>().expect("a Float argument is a float Any");
            assert!(same_float(back, value), "{text:?}: {back} != {value}");
            // Debug always prints a float as one (`1.0`, `1e300`, `NaN`).
            let printed = format!("{value:?}");
            match parse(&printed, index) {
                Ok(CallArg::Float(back)) => {
                    assert!(
                        same_float(back, value),
                        "{text:?}: {printed:?} gives {back}"
                    )
                }
                other => panic!("{text:?} is {value:?}, printed {printed:?} gives {other:?}"),
            }
            // Display may print an integer (`1`, `1000...0`): with `:f64` it is a float again.
            // The value compares equal; the sign of a zero printed as `-0` is not kept.
            let printed = format!("{value}:f64");
            match parse(&printed, index) {
                Ok(CallArg::Float(back)) => assert!(
                    same_float(back, value) || (back == 0.0 && value == 0.0),
                    "{text:?}: {printed:?} gives {back}"
                ),
                other => panic!("{text:?} is {value:?}, printed {printed:?} gives {other:?}"),
            }
            // Display without a suffix: a float, or an integer of the same value when it
            // has no fraction (an integer too large for int64 is refused as such).
            let printed = value.to_string();
            match parse(&printed, index) {
                Ok(CallArg::Float(back)) => {
                    assert!(
                        same_float(back, value),
                        "{text:?}: {printed:?} gives {back}"
                    )
                }
                Ok(CallArg::Int(back)) => {
                    assert_eq!(back as f64, value, "{text:?}: {printed:?} gives {back}")
                }
                Err(error) => assert!(
                    value.fract() == 0.0 && value.abs() >= 9.2e18,
                    "{text:?}: {printed:?} is refused: {error}"
                ),
                other => panic!("{text:?} is {value:?}, printed {printed:?} gives {other:?}"),
            }
        }
        CallArg::Bool(value) => {
            assert_eq!(any.type_index(), 2, "{text:?} is a Bool");
            assert_eq!(any.get::<bool>().ok(), Some(value), "{text:?}");
        }
        CallArg::Str(ref value) => {
            assert_eq!(any.get::<String>().ok().as_ref(), Some(value), "{text:?}");
            assert_eq!(text.len(), value.len() + 2, "only the quotes are removed");
        }
        CallArg::None => assert!(any.is_none()),
        CallArg::Tensor { .. } => panic!("{text:?} reads a file without '@'"),
        CallArg::Inline(ref tensor) => {
            // An inline tensor: its text holds '=', and its elements fill its shape.
            assert!(text.contains('='), "{text:?} is a tensor without '='");
            let numel: i64 = tensor.shape().iter().product();
            assert!(numel <= 1 << 24, "{text:?}: {numel} elements");
            let back = any.cast::<pactum::Tensor>().expect("a tensor argument is a Tensor");
            assert_eq!(back.shape(), tensor.shape(), "{text:?}");
        }
    }
}

/// Equal, or both NaN (the payload of a NaN is not kept through text).
fn same_float(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}
