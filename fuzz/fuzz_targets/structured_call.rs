//! Structured calls: a signature picked by the input (iree.abi JSON, raw, SIP with or
//! without a raw signature, or none), a flat function that returns a value built from the
//! input (or `None`), and arguments built from the input. Binding and calling must return
//! `Ok` or `Err`, never panic, and an `Err` must carry a message.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pactum::{Any, AnyView, Array, Bytes, DataType, Function, Map, Tensor};
use pactum_iree::signature::abi_json::IreeAbi;
use pactum_iree::signature::raw::RawSignature;
use pactum_iree::signature::sip::SipSignature;
use pactum_iree::structured::StructuredFunction;

/// Values nest at most this deep: enough to reach every structure kind inside another.
const MAX_DEPTH: usize = 4;
/// Short names, so that map keys and keyword names often match record keys.
const NAMES: [&str; 8] = ["a", "b", "x", "y", "n", "bias", "scale", ""];

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    // Layout (which fuzz/seed_corpora.sh follows): a mode byte, a two-byte length, that many
    // bytes of signature text, then whatever the flat result and the arguments consume.
    let mode: u8 = u.int_in_range(0..=4)?;
    let length: usize = u.int_in_range(0..=4095)?;
    let Ok(signature_text) = std::str::from_utf8(u.bytes(length)?) else {
        return Ok(());
    };
    let returned = if u.arbitrary()? {
        Any::none()
    } else {
        value(u, 0)?
    };
    let flat = Function::from_packed(move |_args: &[AnyView<'_>]| Ok(returned.clone()));
    let structured = match mode {
        0 => match IreeAbi::parse(signature_text) {
            Ok(abi) => StructuredFunction::from_iree_abi(flat, abi.signature()),
            Err(_) => return Ok(()),
        },
        1 => match RawSignature::parse(signature_text) {
            Ok(raw) => StructuredFunction::from_raw(flat, &raw),
            Err(_) => return Ok(()),
        },
        // A SIP signature, then optionally a raw one after a newline.
        2 | 3 => {
            let (sip_text, raw_text) = match signature_text.split_once('\n') {
                Some((sip, raw)) if mode == 3 => (sip, Some(raw)),
                _ => (signature_text, None),
            };
            let Ok(sip) = SipSignature::parse(sip_text) else {
                return Ok(());
            };
            let raw = match raw_text.map(RawSignature::parse) {
                Some(Ok(raw)) => Some(raw),
                Some(Err(_)) => return Ok(()),
                None => None,
            };
            StructuredFunction::from_sip(flat, &sip, raw.as_ref())
        }
        _ => Ok(StructuredFunction::dynamic(flat)),
    };
    let structured = match structured {
        Ok(structured) => structured.allow_casts(u.arbitrary()?),
        Err(error) => {
            assert!(!error.message().is_empty());
            return Ok(());
        }
    };

    let positional_count: usize = u.int_in_range(0..=4)?;
    let mut positional = Vec::with_capacity(positional_count);
    for _ in 0..positional_count {
        positional.push(value(u, 0)?);
    }
    let keyword_count: usize = u.int_in_range(0..=2)?;
    let mut keywords = Vec::with_capacity(keyword_count);
    for _ in 0..keyword_count {
        keywords.push((name(u)?, value(u, 0)?));
    }
    let positional_views: Vec<AnyView<'_>> = positional.iter().map(AnyView::from).collect();
    let keyword_views: Vec<(&str, AnyView<'_>)> = keywords
        .iter()
        .map(|(name, value)| (name.as_str(), AnyView::from(value)))
        .collect();
    if let Err(error) = structured.call(&positional_views, &keyword_views) {
        assert!(!error.message().is_empty(), "an error without a message");
    }
    Ok(())
}

fn name(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if u.ratio(7, 8)? {
        u.choose(&NAMES)?.to_string()
    } else {
        u.arbitrary::<String>()?
    })
}

/// A value of any kind the structured call converts: scalars, strings, bytes, tensors of
/// every element type, arrays and maps.
fn value(u: &mut Unstructured<'_>, depth: usize) -> Result<Any> {
    let kinds = if depth >= MAX_DEPTH { 7 } else { 9 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Any::none(),
        1 => Any::from(u.arbitrary::<i64>()?),
        2 => Any::from(u.arbitrary::<f64>()?),
        3 => Any::from(u.arbitrary::<bool>()?),
        4 => Any::from(name(u)?),
        5 => {
            let length = u.int_in_range(0..=8)?;
            Any::from(Bytes::new(u.bytes(length)?))
        }
        6 => tensor(u)?,
        7 => {
            let count: usize = u.int_in_range(0..=4)?;
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(value(u, depth + 1)?);
            }
            Any::from(Array::new(items))
        }
        _ => {
            let count: usize = u.int_in_range(0..=4)?;
            let mut pairs = Vec::with_capacity(count);
            for _ in 0..count {
                // Mostly string keys, as records have; sometimes an int, which must be refused.
                let key = if u.ratio(7, 8)? {
                    Any::from(name(u)?)
                } else {
                    Any::from(u.arbitrary::<i64>()?)
                };
                pairs.push((key, value(u, depth + 1)?));
            }
            Any::from(Map::from_pairs(pairs))
        }
    })
}

/// A small CPU tensor: zeros of any element type, or f64 values from the input (which the
/// structured call may cast).
fn tensor(u: &mut Unstructured<'_>) -> Result<Any> {
    let rank: usize = u.int_in_range(0..=3)?;
    let mut shape = Vec::with_capacity(rank);
    for _ in 0..rank {
        shape.push(u.int_in_range(0..=4)?);
    }
    let numel: i64 = shape.iter().product();
    let tensor = if u.arbitrary()? {
        let mut values = Vec::with_capacity(numel as usize);
        for _ in 0..numel {
            values.push(u.arbitrary::<f64>()?);
        }
        Tensor::from_slice(&values, &shape)
    } else {
        let dtypes = [
            DataType::BOOL,
            DataType::I8,
            DataType::I16,
            DataType::I32,
            DataType::I64,
            DataType::U8,
            DataType::U16,
            DataType::U32,
            DataType::U64,
            DataType::F16,
            DataType::BF16,
            DataType::F32,
            DataType::F64,
        ];
        Tensor::empty(&shape, *u.choose(&dtypes)?)
    };
    Ok(tensor.map(Any::from).unwrap_or_else(|_| Any::none()))
}
