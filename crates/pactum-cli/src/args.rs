//! The argument syntax of `pactum call`: numbers with an optional type suffix (`7`, `-2.5`,
//! `7:i32`, `1:bool`), quoted strings (`"text"` or `'text'`), `none`/`true`/`false`, and
//! `@file.npy` tensors (`@file.npy:bfloat16` views the file's elements as another type of the
//! same size), and iree-run-module's inline tensors: `2x3xf32=1 2 3 4 5 6` (shape, element
//! type, then the elements in row-major order; one element fills the whole tensor; `2x0xf32=`
//! is empty; `f32=1.5` has rank 0; the 8-bit floats by IREE's names, `4xf8E4M3FN=1 2 3 4`;
//! `i1` elements as `0`/`1` or IREE's hex bytes `00`/`01`; sub-byte integers as their packed
//! bytes in hex, as IREE reads them: `4xi4=21 C3` is 1 2 3 -4).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use pactum::{Any, Tensor};
use pactum_iree::hal::{HalBufferView, HalElementType};

/// One parsed argument.
#[derive(Debug)]
pub enum CallArg {
    /// An integer (type index Int).
    Int(i64),
    /// A float (type index Float).
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string.
    Str(String),
    /// None.
    None,
    /// An inline tensor (`2x3xf32=1 2 3 4 5 6`).
    Inline(Tensor),
    /// A tensor read from a `.npy` file.
    Tensor {
        /// Where it came from.
        path: PathBuf,
        /// The tensor, passed to the function as a Tensor object.
        tensor: Tensor,
    },
}

impl CallArg {
    /// The value passed to the function.
    pub fn to_any(&self) -> Any {
        match self {
            CallArg::Int(v) => Any::from(*v),
            CallArg::Float(v) => Any::from(*v),
            CallArg::Bool(v) => Any::from(*v),
            CallArg::Str(v) => Any::from(v.as_str()),
            CallArg::None => Any::none(),
            CallArg::Tensor { tensor, .. } | CallArg::Inline(tensor) => Any::from(tensor.clone()),
        }
    }
}

const SYNTAX: &str = "expected a number (7, -2.5, 0x1f, 7:i32, 2.5:f32, 1:bool), a quoted string (\"text\"), none, true, false, @file.npy, or a tensor (2x3xf32=1 2 3 4 5 6)";

/// The element types of inline tensors, as iree-run-module spells them.
fn inline_dtype(name: &str) -> Option<pactum::DataType> {
    use pactum::DataType;
    Some(match name {
        "i1" => DataType::BOOL,
        "i8" | "si8" => DataType::I8,
        "i16" | "si16" => DataType::I16,
        "i32" | "si32" => DataType::I32,
        "i64" | "si64" => DataType::I64,
        "ui8" | "u8" => DataType::U8,
        "ui16" | "u16" => DataType::U16,
        "ui32" | "u32" => DataType::U32,
        "ui64" | "u64" => DataType::U64,
        "f16" => DataType::F16,
        "bf16" => DataType::BF16,
        "f32" => DataType::F32,
        "f64" => DataType::F64,
        _ => return None,
    })
}

/// `SHAPExDTYPE=ELEMENTS`, if `text` has that form: `Ok(None)` when it is not a tensor at all.
/// The most elements an inline tensor may have (16 Mi): larger inputs belong in a `.npy` file,
/// and the limit keeps a typo like `2x88000000xi16=0` from allocating gigabytes.
const MAX_INLINE_ELEMENTS: u64 = 1 << 24;

fn parse_inline_tensor(text: &str) -> Result<Option<Tensor>, String> {
    let Some((head, body)) = text.split_once('=') else {
        return Ok(None);
    };
    let mut parts: Vec<&str> = head.split('x').collect();
    let type_name = parts.pop().unwrap_or_default();
    // The types NumPy lacks (the 8-bit floats, sub-byte integers) are read by IREE's rules
    // into pactum's tensors of those types (`float8_e4m3fn`, `int4` a byte an element).
    let iree_only = inline_dtype(type_name)
        .is_none()
        .then(|| HalElementType::parse(type_name))
        .flatten()
        .filter(|ty| ty.is_sub_byte() || (0x24..=0x28).contains(&ty.numerical_type()))
        .filter(|&ty| pactum_iree::module::data_type(ty).is_some());
    let Some(dtype) = inline_dtype(type_name).or(iree_only.map(|_| pactum::DataType::U8)) else {
        return Ok(None);
    };
    if !parts
        .iter()
        .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    {
        return Ok(None);
    }
    let mut shape = Vec::with_capacity(parts.len());
    let mut count: u64 = 1;
    for dim in &parts {
        let dim: i64 = dim
            .parse()
            .map_err(|_| format!("dimension `{dim}` is too large"))?;
        count = count
            .checked_mul(dim as u64)
            .filter(|&c| c <= MAX_INLINE_ELEMENTS)
            .ok_or_else(|| format!("shape `{head}` has too many elements (at most 2^24 inline)"))?;
        shape.push(dim);
    }
    if iree_only.is_some() {
        // IREE's own reading: elements by `HalElementType::parse_element`, sub-byte types as
        // their packed bytes in hex (`4xi4=21 C3`).
        let view = HalBufferView::parse(text).map_err(|e| e.message)?;
        let tensor = pactum_iree::module::buffer_view_to_tensor(&view)
            .map_err(|e| e.message().into_owned())?
            .ok_or_else(|| format!("pactum has no tensor type for `{type_name}`"))?;
        return Ok(Some(tensor));
    }
    let words: Vec<&str> = body
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']'))
        .filter(|w| !w.is_empty())
        .collect();
    let count = count as usize;
    // One value fills the tensor: it is parsed once (below), not repeated as text.
    let values: Vec<&str> = match words.len() {
        n if n == count => words,
        1 if count > 1 => words,
        n => {
            return Err(format!(
                "shape `{head}` holds {count} element(s), {n} given (give all of them, or one to \
                 fill the tensor)"
            ));
        }
    };
    fn typed<T: pactum::tensor::Element + Copy>(
        values: &[&str],
        shape: &[i64],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Tensor, String> {
        let parse_at =
            |i: usize, v: &str| parse(v).ok_or_else(|| format!("element {i} (`{v}`) does not fit"));
        let count = shape.iter().product::<i64>() as usize;
        let parsed = match values {
            [fill] if count != 1 => vec![parse_at(0, fill)?; count],
            _ => values
                .iter()
                .enumerate()
                .map(|(i, v)| parse_at(i, v))
                .collect::<Result<Vec<T>, String>>()?,
        };
        Tensor::from_slice(&parsed, shape).map_err(|e| e.message().into_owned())
    }
    let int = |v: &str| parse_int(v);
    let float = |v: &str| parse_float(v).or_else(|| parse_int(v).map(|i| i as f64));
    use pactum::DataType;
    let tensor = match dtype {
        // `01`/`00`: iree-run-module's spelling (it reads `i1` elements as hex bytes).
        DataType::BOOL => typed::<u8>(&values, &shape, |v| match v {
            "1" | "01" | "true" => Some(1),
            "0" | "00" | "false" => Some(0),
            _ => None,
        })
        .and_then(|t| {
            t.view_as(DataType::BOOL)
                .map_err(|e| e.message().into_owned())
        }),
        DataType::I8 => typed::<i8>(&values, &shape, |v| int(v)?.try_into().ok()),
        DataType::I16 => typed::<i16>(&values, &shape, |v| int(v)?.try_into().ok()),
        DataType::I32 => typed::<i32>(&values, &shape, |v| int(v)?.try_into().ok()),
        DataType::I64 => typed::<i64>(&values, &shape, int),
        DataType::U8 => typed::<u8>(&values, &shape, |v| int(v)?.try_into().ok()),
        DataType::U16 => typed::<u16>(&values, &shape, |v| int(v)?.try_into().ok()),
        DataType::U32 => typed::<u32>(&values, &shape, |v| int(v)?.try_into().ok()),
        DataType::U64 => typed::<u64>(&values, &shape, |v| {
            int(v)
                .and_then(|i| u64::try_from(i).ok())
                .or_else(|| v.parse().ok())
        }),
        DataType::F16 => typed(&values, &shape, |v| float(v).map(half::f16::from_f64)),
        DataType::BF16 => typed(&values, &shape, |v| float(v).map(half::bf16::from_f64)),
        DataType::F32 => typed(&values, &shape, |v| float(v).map(|f| f as f32)),
        _ => typed(&values, &shape, float),
    }?;
    Ok(Some(tensor))
}

fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        // `from_str_radix` would take a sign of its own (`0x-5`); hex digits only.
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        i128::from_str_radix(hex, 16).ok()?
    } else if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        && !digits.starts_with('_')
    {
        digits.replace('_', "").parse::<i128>().ok()?
    } else {
        return None;
    };
    i64::try_from(if negative {
        magnitude.checked_neg()?
    } else {
        magnitude
    })
    .ok()
}

/// Integer syntax (sign, decimal digits or `0x` hex), whatever its magnitude.
fn looks_like_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_'),
    }
}

fn parse_float(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    let special = matches!(
        lower.trim_start_matches(['-', '+']),
        "inf" | "infinity" | "nan"
    );
    let numeric = text.bytes().any(|b| b.is_ascii_digit())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE_".contains(&b));
    if special || numeric {
        text.replace('_', "").parse::<f64>().ok()
    } else {
        None
    }
}

/// Parses argument `index` (0-based) of `pactum call`.
pub fn parse(text: &str, index: usize) -> Result<CallArg> {
    let fail = |detail: String| anyhow::anyhow!("argument {index} (`{text}`): {detail}");
    if let Some(file) = text.strip_prefix('@') {
        // `@file.npy:bfloat16` reads the file and views its elements as another type of the
        // same size (NumPy without ml_dtypes has no bfloat16: such data may travel as uint16 bits).
        let (file, view_as) = match file.rsplit_once(':') {
            Some((name, dtype)) if name.ends_with(".npy") => (name, Some(dtype)),
            _ => (file, None),
        };
        let path = PathBuf::from(file);
        let mut tensor = pactum_npy::read_file(&path)
            .map_err(|e| fail(format!("cannot read {}: {}", path.display(), e.message())))?;
        if let Some(dtype) = view_as {
            let dtype = pactum::DataType::parse(dtype)
                .map_err(|e| fail(format!("unknown dtype `{dtype}`: {}", e.message())))?;
            tensor = tensor
                .view_as(dtype)
                .map_err(|e| fail(e.message().into_owned()))?;
        }
        return Ok(CallArg::Tensor { path, tensor });
    }
    match parse_inline_tensor(text) {
        Ok(Some(tensor)) => return Ok(CallArg::Inline(tensor)),
        Ok(None) => {}
        Err(detail) => return Err(fail(detail)),
    }
    for quote in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            return Ok(CallArg::Str(text[1..text.len() - 1].to_owned()));
        }
    }
    match text {
        "none" | "None" => return Ok(CallArg::None),
        "true" | "True" => return Ok(CallArg::Bool(true)),
        "false" | "False" => return Ok(CallArg::Bool(false)),
        _ => {}
    }
    let (literal, suffix) = match text.rsplit_once(':') {
        Some((literal, suffix)) => (literal, Some(suffix)),
        None => (text, None),
    };
    match suffix {
        None => {
            if let Some(v) = parse_int(literal) {
                return Ok(CallArg::Int(v));
            }
            if looks_like_integer(literal) {
                return Err(fail("integer out of range for int64".to_owned()));
            }
            if let Some(v) = parse_float(literal) {
                return Ok(CallArg::Float(v));
            }
            Err(fail(SYNTAX.to_owned()))
        }
        Some(ty @ ("i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64")) => {
            let value = parse_int(literal)
                .or_else(|| {
                    (ty == "u64")
                        .then(|| literal.parse::<u64>().ok().map(|v| v as i64))
                        .flatten()
                })
                .with_context(|| {
                    format!("argument {index} (`{text}`): `{literal}` is not an integer")
                })?;
            let fits = match ty {
                "i8" => i8::try_from(value).is_ok(),
                "i16" => i16::try_from(value).is_ok(),
                "i32" => i32::try_from(value).is_ok(),
                "u8" => u8::try_from(value).is_ok(),
                "u16" => u16::try_from(value).is_ok(),
                "u32" => u32::try_from(value).is_ok(),
                "u64" => value >= 0,
                _ => true,
            };
            if !fits {
                bail!("argument {index} (`{text}`): {value} is out of range for {ty}");
            }
            Ok(CallArg::Int(value))
        }
        Some(ty @ ("f32" | "f64")) => {
            // Floats first, so that `-0:f64` keeps its sign.
            let value = parse_float(literal)
                .or_else(|| parse_int(literal).map(|v| v as f64))
                .with_context(|| {
                    format!("argument {index} (`{text}`): `{literal}` is not a number")
                })?;
            Ok(CallArg::Float(if ty == "f32" {
                f64::from(value as f32)
            } else {
                value
            }))
        }
        Some("bool") => match parse_int(literal) {
            Some(0) => Ok(CallArg::Bool(false)),
            Some(1) => Ok(CallArg::Bool(true)),
            _ => Err(fail("a bool is 0 or 1".to_owned())),
        },
        Some(other) => Err(fail(format!(
            "unknown type suffix `:{other}` (i8..i64, u8..u64, f32, f64, bool)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> CallArg {
        parse(text, 0).unwrap()
    }

    fn error(text: &str) -> String {
        parse(text, 3).unwrap_err().to_string()
    }

    #[test]
    fn numbers_strings_and_keywords() {
        assert!(matches!(value("7"), CallArg::Int(7)));
        assert!(matches!(value("-12"), CallArg::Int(-12)));
        assert!(matches!(value("0x1f"), CallArg::Int(31)));
        assert!(matches!(value("1_000"), CallArg::Int(1000)));
        assert!(matches!(value("2.5"), CallArg::Float(v) if v == 2.5));
        assert!(matches!(value("-1e-3"), CallArg::Float(v) if v == -1e-3));
        assert!(matches!(value("inf"), CallArg::Float(v) if v.is_infinite()));
        assert!(matches!(value("\"hello world\""), CallArg::Str(ref s) if s == "hello world"));
        assert!(matches!(value("'7'"), CallArg::Str(ref s) if s == "7"));
        assert!(matches!(value("none"), CallArg::None));
        assert!(matches!(value("true"), CallArg::Bool(true)));
    }

    #[test]
    fn type_suffixes_check_ranges() {
        assert!(matches!(value("7:i32"), CallArg::Int(7)));
        assert!(matches!(value("255:u8"), CallArg::Int(255)));
        assert!(matches!(value("3:f32"), CallArg::Float(v) if v == 3.0));
        assert!(matches!(value("0.1:f32"), CallArg::Float(v) if v == f64::from(0.1f32)));
        assert!(matches!(value("1:bool"), CallArg::Bool(true)));
        assert_eq!(
            error("300:u8"),
            "argument 3 (`300:u8`): 300 is out of range for u8"
        );
        assert_eq!(
            error("-1:u32"),
            "argument 3 (`-1:u32`): -1 is out of range for u32"
        );
        assert_eq!(
            error("1.5:i32"),
            "argument 3 (`1.5:i32`): `1.5` is not an integer"
        );
        assert!(error("7:x9").contains("unknown type suffix `:x9`"));
        // Found by fuzzing: a sign after `0x`, and -0 losing its sign.
        assert!(error("-0x-80000000000000000000000000000000").contains("expected a number"));
        assert!(error("0x-5").contains("expected a number"));
        assert!(error("0x+5:i32").contains("is not an integer"));
        assert!(matches!(value("-0:f64"), CallArg::Float(v) if v == 0.0 && v.is_sign_negative()));
        assert!(error("2:bool").contains("a bool is 0 or 1"));
    }

    #[test]
    fn inline_tensors_as_iree_run_module_writes_them() {
        let tensor = |text: &str| match value(text) {
            CallArg::Inline(tensor) => tensor,
            other => panic!("{text}: {other:?}"),
        };
        let t = tensor("2x3xf32=1 2 3 4 5 6");
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(
            t.to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
        let t = tensor("4xi32=7");
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![7; 4]);
        let t = tensor("2x0xf32=");
        assert_eq!(t.shape(), &[2, 0]);
        let t = tensor("f64=1.5");
        assert_eq!(t.shape(), &[] as &[i64]);
        assert_eq!(t.to_vec::<f64>().unwrap(), vec![1.5]);
        let t = tensor("2x2xi8=[1,2][3,-4]");
        assert_eq!(t.to_vec::<i8>().unwrap(), vec![1, 2, 3, -4]);
        assert_eq!(tensor("3xi1=1 0 1").dtype(), pactum::DataType::BOOL);
        assert_eq!(tensor("1xbf16=2").dtype(), pactum::DataType::BF16);
        assert!(error("3xf32=1 2").contains("holds 3 element(s), 2 given"));
        assert!(error("2xi8=1 300").contains("element 1 (`300`) does not fit"));
        assert!(error("99999x99999x99999xf32=0").contains("too many elements"));
        // Not tensors: plain text with an '=' stays an error of the general syntax.
        assert!(error("a=b").contains("expected a number"));
    }

    #[test]
    fn bad_arguments_say_what_was_expected() {
        assert!(error("hello").contains("expected a number"));
        assert_eq!(
            error("99999999999999999999"),
            "argument 3 (`99999999999999999999`): integer out of range for int64"
        );
        assert!(
            error("@/no/such/file.npy")
                .starts_with("argument 3 (`@/no/such/file.npy`): cannot read /no/such/file.npy:")
        );
        assert!(error("\"").contains("expected a number"));
        // A shape beyond the inline limit is refused before anything is allocated.
        assert!(
            error("2x88000000xi16=0")
                .ends_with("shape `2x88000000xi16` has too many elements (at most 2^24 inline)")
        );
    }

    #[test]
    fn one_value_fills_a_large_inline_tensor() {
        let CallArg::Inline(tensor) = value("4096x4096xi8=7") else {
            panic!("expected an inline tensor");
        };
        assert_eq!(tensor.shape(), &[4096, 4096]);
        assert!(tensor.to_vec::<i8>().unwrap().iter().all(|&v| v == 7));
    }
}
