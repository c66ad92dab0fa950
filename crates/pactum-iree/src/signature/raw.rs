//! The legacy raw function signature (reflection attributes `fv = "1"`, `f = <signature>`).
//!
//! IREE's compiler wrote it for every export until mid-2021: an inputs span `I` and a results
//! span `R`, each holding one item per flat argument or result:
//!
//! - `B<len>!` buffer: optional `t<code>` element type (float32 when absent), then one
//!   `d<extent>` per dimension (`-1` = dynamic; none = rank 0);
//! - `S<len>!` scalar: optional `t<code>`;
//! - `O1!` reference to an object of any type;
//! - `U1!` a type the compiler could not describe (IREE's parser rejects it).
//!
//! ```
//! use pactum_iree::signature::raw::RawSignature;
//!
//! let raw = RawSignature::parse("I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64")?;
//! assert_eq!(
//!     raw.render(),
//!     "(RefObject<?>, Buffer<float32[?x128x64]>, sint32) -> (Buffer<uint64[32x?x64]>)"
//! );
//! assert_eq!(raw.to_string(), "I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64");
//! assert_eq!(raw.to_signature().to_string(), "(ref, ndarray<f32, [?, 128, 64]>, si32) -> (ndarray<ui64, [32, ?, 64]>)");
//! # Ok::<(), pactum_iree::signature::ParseError>(())
//! ```
//!
//! [`RawSignature::parse`] follows IREE's parser, leniency included; [`RawSignature::parse_strict`]
//! also rejects what IREE skipped silently.

use std::fmt;

use super::lexer::{self, Component, Lexer, SignatureWriter};
use super::{
    ConvertError, ConvertErrorKind, NdArray, ParseError, ScalarType, Signature, Signedness, Type,
};

/// The format name in [`ParseError`]s from this module.
pub const FORMAT: &str = "raw signature";

/// The target name in [`ConvertError`]s from [`RawSignature::from_signature`].
pub const TARGET: &str = "a raw signature";

/// An element or scalar type of the raw signature, with IREE's numeric code (`t<code>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RawScalarType {
    /// Code 0, IEEE binary32; the default when no `t` field is written.
    Float32,
    /// Code 1, IEEE binary16.
    Float16,
    /// Code 2, IEEE binary64.
    Float64,
    /// Code 3, bfloat16.
    BFloat16,
    /// Code 4, signed 8-bit integer.
    Sint8,
    /// Code 5, signed 16-bit integer.
    Sint16,
    /// Code 6, signed 32-bit integer.
    Sint32,
    /// Code 7, signed 64-bit integer.
    Sint64,
    /// Code 8, unsigned 8-bit integer.
    Uint8,
    /// Code 9, unsigned 16-bit integer.
    Uint16,
    /// Code 10, unsigned 32-bit integer.
    Uint32,
    /// Code 11, unsigned 64-bit integer.
    Uint64,
}

impl RawScalarType {
    /// Every type, in code order (`ALL[code]` has that code).
    pub const ALL: [RawScalarType; 12] = [
        RawScalarType::Float32,
        RawScalarType::Float16,
        RawScalarType::Float64,
        RawScalarType::BFloat16,
        RawScalarType::Sint8,
        RawScalarType::Sint16,
        RawScalarType::Sint32,
        RawScalarType::Sint64,
        RawScalarType::Uint8,
        RawScalarType::Uint16,
        RawScalarType::Uint32,
        RawScalarType::Uint64,
    ];

    /// The type with IREE code `code` (0 to 11).
    pub fn from_code(code: i32) -> Option<RawScalarType> {
        usize::try_from(code)
            .ok()
            .and_then(|index| RawScalarType::ALL.get(index))
            .copied()
    }

    /// IREE's code, written as `t<code>`.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// IREE's name: `float32`, `bfloat16`, `sint8`, `uint64`, ...
    pub fn name(self) -> &'static str {
        match self {
            RawScalarType::Float32 => "float32",
            RawScalarType::Float16 => "float16",
            RawScalarType::Float64 => "float64",
            RawScalarType::BFloat16 => "bfloat16",
            RawScalarType::Sint8 => "sint8",
            RawScalarType::Sint16 => "sint16",
            RawScalarType::Sint32 => "sint32",
            RawScalarType::Sint64 => "sint64",
            RawScalarType::Uint8 => "uint8",
            RawScalarType::Uint16 => "uint16",
            RawScalarType::Uint32 => "uint32",
            RawScalarType::Uint64 => "uint64",
        }
    }

    /// The type named `name` by IREE (`float32`, `sint32`, ...).
    pub fn from_name(name: &str) -> Option<RawScalarType> {
        RawScalarType::ALL.into_iter().find(|ty| ty.name() == name)
    }

    /// The shared model's type: `sintN` is signed, `uintN` unsigned.
    pub fn to_scalar_type(self) -> ScalarType {
        let int = |bits, signedness| ScalarType::int(bits, signedness);
        match self {
            RawScalarType::Float32 => ScalarType::F32,
            RawScalarType::Float16 => ScalarType::F16,
            RawScalarType::Float64 => ScalarType::F64,
            RawScalarType::BFloat16 => ScalarType::BF16,
            RawScalarType::Sint8 => int(8, Signedness::Signed),
            RawScalarType::Sint16 => int(16, Signedness::Signed),
            RawScalarType::Sint32 => int(32, Signedness::Signed),
            RawScalarType::Sint64 => int(64, Signedness::Signed),
            RawScalarType::Uint8 => int(8, Signedness::Unsigned),
            RawScalarType::Uint16 => int(16, Signedness::Unsigned),
            RawScalarType::Uint32 => int(32, Signedness::Unsigned),
            RawScalarType::Uint64 => int(64, Signedness::Unsigned),
        }
    }

    /// The raw code for a model type, as IREE's mangler chose it: signless and signed
    /// integers become `sintN`, unsigned ones `uintN`, and 1-bit integers (`i1`, booleans)
    /// `sint8`. Integers of other widths have no code (the mangler wrote `U` for them).
    pub fn from_scalar_type(scalar: ScalarType) -> Option<RawScalarType> {
        Some(match scalar {
            ScalarType::F32 => RawScalarType::Float32,
            ScalarType::F16 => RawScalarType::Float16,
            ScalarType::F64 => RawScalarType::Float64,
            ScalarType::BF16 => RawScalarType::BFloat16,
            ScalarType::Int { bits: 1, .. } => RawScalarType::Sint8,
            ScalarType::Int { bits, signedness } => {
                let unsigned = signedness == Signedness::Unsigned;
                match (bits, unsigned) {
                    (8, false) => RawScalarType::Sint8,
                    (16, false) => RawScalarType::Sint16,
                    (32, false) => RawScalarType::Sint32,
                    (64, false) => RawScalarType::Sint64,
                    (8, true) => RawScalarType::Uint8,
                    (16, true) => RawScalarType::Uint16,
                    (32, true) => RawScalarType::Uint32,
                    (64, true) => RawScalarType::Uint64,
                    _ => return None,
                }
            }
        })
    }
}

/// IREE's name, e.g. `float32`.
impl fmt::Display for RawScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One argument or result of a raw signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RawItem {
    /// `B`: a buffer of `element`s with these extents (any negative extent is dynamic; the
    /// compiler wrote `-1`). No dims means rank 0.
    Buffer {
        /// The element type.
        element: RawScalarType,
        /// One extent per dimension.
        dims: Vec<i32>,
    },
    /// `S`: a scalar.
    Scalar(RawScalarType),
    /// `O`: a reference to an object of any type.
    RefObject,
    /// `U`: a type the compiler could not describe. IREE's parser rejects it ("Unrecognized
    /// raw tag"), so [`RawSignature::parse`] does too; it exists to write what the compiler
    /// wrote.
    Unrecognized,
}

impl RawItem {
    /// IREE's human rendering: `Buffer<float32[?x128x64]>`, `sint32`, `RefObject<?>`.
    /// IREE never rendered `U` (its parser stops there); this writes `Unrecognized`.
    pub fn render(&self) -> String {
        match self {
            RawItem::Buffer { element, dims } => {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|&dim| {
                        if dim < 0 {
                            "?".to_string()
                        } else {
                            dim.to_string()
                        }
                    })
                    .collect();
                format!("Buffer<{element}[{}]>", dims.join("x"))
            }
            RawItem::Scalar(scalar) => scalar.name().to_string(),
            RawItem::RefObject => "RefObject<?>".to_string(),
            RawItem::Unrecognized => "Unrecognized".to_string(),
        }
    }

    /// The shared model's type: a buffer is an ndarray (negative extents unknown), a scalar
    /// a scalar, a ref object [`Type::Opaque`], `U` [`Type::Unknown`].
    pub fn to_type(&self) -> Type {
        match self {
            RawItem::Buffer { element, dims } => Type::NdArray(NdArray {
                element: Box::new(Type::Scalar(element.to_scalar_type())),
                dims: Some(dims.iter().map(|&dim| u64::try_from(dim).ok()).collect()),
            }),
            RawItem::Scalar(scalar) => Type::Scalar(scalar.to_scalar_type()),
            RawItem::RefObject => Type::Opaque,
            RawItem::Unrecognized => Type::Unknown,
        }
    }

    /// The raw item for a model type; `path` names it in errors. See
    /// [`RawSignature::from_signature`] for what maps.
    pub fn from_type(ty: &Type, path: &str) -> Result<RawItem, ConvertError> {
        let fail = |kind: ConvertErrorKind| Err(ConvertError::new(TARGET, path, kind));
        let scalar_code = |scalar: ScalarType| {
            RawScalarType::from_scalar_type(scalar).ok_or_else(|| {
                ConvertError::new(TARGET, path, ConvertErrorKind::NoScalarCode(scalar))
            })
        };
        match ty {
            Type::Scalar(scalar) => Ok(RawItem::Scalar(scalar_code(*scalar)?)),
            Type::NdArray(array) => {
                let Some(element) = array.scalar_element() else {
                    return fail(ConvertErrorKind::NonNumericBuffer((*array.element).clone()));
                };
                let element = scalar_code(element)?;
                let Some(extents) = &array.dims else {
                    return fail(ConvertErrorKind::UnknownRank);
                };
                let mut dims = Vec::with_capacity(extents.len());
                for extent in extents {
                    dims.push(match extent {
                        None => -1,
                        Some(extent) => match i32::try_from(*extent) {
                            Ok(extent) => extent,
                            Err(_) => {
                                return fail(ConvertErrorKind::ExtentTooLarge(*extent));
                            }
                        },
                    });
                }
                Ok(RawItem::Buffer { element, dims })
            }
            Type::Opaque => Ok(RawItem::RefObject),
            Type::Unknown => Ok(RawItem::Unrecognized),
            Type::Named(..) => fail(ConvertErrorKind::NameDropped(ty.clone())),
            other => fail(ConvertErrorKind::NotFlat(other.clone())),
        }
    }

    fn write_to(&self, writer: &mut SignatureWriter) {
        let mut fields = SignatureWriter::new();
        // The mangler omits the default type code 0 (float32).
        let type_field = |fields: &mut SignatureWriter, ty: RawScalarType| {
            if ty != RawScalarType::Float32 {
                fields.integer(b't', i32::from(ty.code()));
            }
        };
        let tag = match self {
            RawItem::Buffer { element, dims } => {
                type_field(&mut fields, *element);
                for &dim in dims {
                    fields.integer(b'd', dim);
                }
                b'B'
            }
            RawItem::Scalar(scalar) => {
                type_field(&mut fields, *scalar);
                b'S'
            }
            RawItem::RefObject => b'O',
            RawItem::Unrecognized => b'U',
        };
        writer.span(tag, fields.as_str());
    }
}

/// The exact encoding, as IREE's mangler wrote it: `B13!t2d-1d128d64`, `S3!t6`, `O1!`, `U1!`.
impl fmt::Display for RawItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut writer = SignatureWriter::new();
        self.write_to(&mut writer);
        f.write_str(writer.as_str())
    }
}

/// A decoded raw function signature: the flat inputs and results.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RawSignature {
    /// The inputs, in order.
    pub inputs: Vec<RawItem>,
    /// The results, in order.
    pub results: Vec<RawItem>,
}

impl RawSignature {
    /// Parses a raw signature with IREE's exact rules, leniency included:
    ///
    /// - the `I` and `R` spans are each found by scanning from the start, skipping components
    ///   with other tags, so unknown components and anything after them are ignored (`R…I…`
    ///   parses too);
    /// - a malformed component whose tag is the sought `I` or `R` counts as that span, empty
    ///   (IREE checked the tag first); one with another tag before the sought span is an error
    ///   here, where IREE's parser never finished;
    /// - a malformed component inside the inputs or results span ends that list, and one
    ///   inside a buffer or scalar ends its fields, keeping what was read;
    /// - a repeated `t` field overrides the earlier one;
    /// - `U` items are rejected ("Unrecognized raw tag").
    ///
    /// Error messages start with IREE's (`Inputs span not found`, `Illegal ScalarType code`,
    /// ...) and the error names the byte offset.
    pub fn parse(text: &str) -> Result<RawSignature, ParseError> {
        let bytes = text.as_bytes();
        let inputs_lexer =
            lexer::seek_span_like_iree(bytes, b'I', FORMAT, "Inputs span not found")?;
        let inputs = parse_items(inputs_lexer, Mode::Lenient)?;
        let results_lexer =
            lexer::seek_span_like_iree(bytes, b'R', FORMAT, "Results span not found")?;
        let results = parse_items(results_lexer, Mode::Lenient)?;
        Ok(RawSignature { inputs, results })
    }

    /// Parses a raw signature, rejecting everything IREE's parser skipped or cut short: the
    /// text must be exactly an `I` span then an `R` span; malformed components anywhere,
    /// unknown components and repeated `t` fields are errors. Where this succeeds,
    /// [`RawSignature::parse`] gives the same result.
    pub fn parse_strict(text: &str) -> Result<RawSignature, ParseError> {
        let (inputs_lexer, results_lexer) = lexer::split_function_strict(
            text.as_bytes(),
            FORMAT,
            "Inputs span not found",
            "Results span not found",
        )?;
        let inputs = parse_items(inputs_lexer, Mode::Strict)?;
        let results = parse_items(results_lexer, Mode::Strict)?;
        Ok(RawSignature { inputs, results })
    }

    /// IREE's human rendering (`FunctionSignatureToString`):
    /// `(RefObject<?>, Buffer<float32[?x128x64]>, sint32) -> (Buffer<uint64[32x?x64]>)`,
    /// `() -> ()` when empty.
    pub fn render(&self) -> String {
        let list = |items: &[RawItem]| {
            items
                .iter()
                .map(RawItem::render)
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!("({}) -> ({})", list(&self.inputs), list(&self.results))
    }

    /// The shared model: one argument per input, one result per result (see
    /// [`RawItem::to_type`]).
    pub fn to_signature(&self) -> Signature {
        Signature {
            args: self.inputs.iter().map(RawItem::to_type).collect(),
            results: self.results.iter().map(RawItem::to_type).collect(),
        }
    }

    /// The raw signature of a model signature, as IREE's mangler would have written it:
    ///
    /// - an ndarray of known rank with a numeric element type is a buffer (unknown extents
    ///   are `-1`); a scalar is a scalar, [`Type::Opaque`] a ref object and
    ///   [`Type::Unknown`] `U`;
    /// - integers map as the mangler did: signless and signed to `sintN`, unsigned to
    ///   `uintN`, 1-bit (`i1`) to `sint8`; other widths are errors;
    /// - a top-level [`Type::Named`] argument loses its name;
    /// - structures, strings, null, unknown rank and non-numeric elements are errors naming
    ///   the item (`args[2]`).
    pub fn from_signature(signature: &Signature) -> Result<RawSignature, ConvertError> {
        let items = |types: &[Type], side: &str| -> Result<Vec<RawItem>, ConvertError> {
            types
                .iter()
                .enumerate()
                .map(|(index, ty)| {
                    let ty = if side == "args" { ty.unnamed() } else { ty };
                    RawItem::from_type(ty, &format!("{side}[{index}]"))
                })
                .collect()
        };
        Ok(RawSignature {
            inputs: items(&signature.args, "args")?,
            results: items(&signature.results, "results")?,
        })
    }
}

/// The exact encoding: `I<len>!<inputs>R<len>!<results>`, e.g. `I6!S3!t6R6!S3!t2`.
impl fmt::Display for RawSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let encode = |items: &[RawItem]| {
            let mut writer = SignatureWriter::new();
            for item in items {
                item.write_to(&mut writer);
            }
            writer.into_string()
        };
        let mut writer = SignatureWriter::new();
        writer
            .span(b'I', &encode(&self.inputs))
            .span(b'R', &encode(&self.results));
        f.write_str(writer.as_str())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// IREE's behaviour: malformed components end the walk silently.
    Lenient,
    /// Malformed components are errors.
    Strict,
}

fn parse_items(lexer: Lexer<'_>, mode: Mode) -> Result<Vec<RawItem>, ParseError> {
    let mut items = Vec::new();
    for component in lexer {
        let component = match component {
            Ok(component) => component,
            Err(error) if mode == Mode::Strict => return Err(error),
            Err(_) => break,
        };
        let item = match component.tag {
            b'B' => parse_fields(&component, ItemKind::Buffer, mode)?,
            b'S' => parse_fields(&component, ItemKind::Scalar, mode)?,
            b'O' => parse_fields(&component, ItemKind::RefObject, mode)?,
            other => {
                let hint = if other == b'U' {
                    " (the compiler wrote 'U' for a type it could not describe)"
                } else {
                    ""
                };
                return Err(ParseError::new(
                    FORMAT,
                    component.offset,
                    format!(
                        "Unrecognized raw tag '{}': expected an item 'B' (buffer), 'S' \
                         (scalar) or 'O' (ref object){hint}",
                        other as char
                    ),
                ));
            }
        };
        items.push(item);
    }
    Ok(items)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    Buffer,
    Scalar,
    RefObject,
}

fn parse_fields(
    component: &Component<'_>,
    kind: ItemKind,
    mode: Mode,
) -> Result<RawItem, ParseError> {
    let mut element = RawScalarType::Float32;
    let mut type_offset = None;
    let mut dims = Vec::new();
    let fields = component
        .nested_lexer()
        .unwrap_or_else(|| Lexer::new(&[]))
        .with_format(FORMAT);
    for field in fields {
        let field = match field {
            Ok(field) => field,
            Err(error) if mode == Mode::Strict => return Err(error),
            Err(_) => break,
        };
        match (field.tag, field.integer(), kind) {
            (b't', Some(code), ItemKind::Buffer | ItemKind::Scalar) => {
                let Some(ty) = RawScalarType::from_code(code) else {
                    return Err(ParseError::new(
                        FORMAT,
                        field.offset,
                        format!("Illegal ScalarType code {code}: expected 0 to 11"),
                    ));
                };
                if let (Mode::Strict, Some(first)) = (mode, type_offset) {
                    return Err(ParseError::new(
                        FORMAT,
                        field.offset,
                        format!(
                            "a second type field 't' (the first is at byte {first}); IREE keeps \
                             the last"
                        ),
                    ));
                }
                type_offset = Some(field.offset);
                element = ty;
            }
            (b'd', Some(extent), ItemKind::Buffer) => dims.push(extent),
            (tag, _, kind) => {
                let (what, expected) = match kind {
                    ItemKind::Buffer => ("buffer", "'t' (type) or 'd' (dimension)"),
                    ItemKind::Scalar => ("scalar", "'t' (type)"),
                    ItemKind::RefObject => ("ref object", "no fields"),
                };
                return Err(ParseError::new(
                    FORMAT,
                    field.offset,
                    format!(
                        "Unrecognized {what} field tag '{}': expected {expected}",
                        tag as char
                    ),
                ));
            }
        }
    }
    Ok(match kind {
        ItemKind::Buffer => RawItem::Buffer { element, dims },
        ItemKind::Scalar => RawItem::Scalar(element),
        ItemKind::RefObject => RawItem::RefObject,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_model_types_agree() {
        for (code, ty) in RawScalarType::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(ty.code()), code);
            assert_eq!(RawScalarType::from_code(code as i32), Some(ty));
            assert_eq!(RawScalarType::from_name(ty.name()), Some(ty));
            assert_eq!(
                RawScalarType::from_scalar_type(ty.to_scalar_type()),
                Some(ty)
            );
        }
        assert_eq!(RawScalarType::from_code(12), None);
        assert_eq!(RawScalarType::from_code(-1), None);
        assert_eq!(
            RawScalarType::from_scalar_type(ScalarType::I32),
            Some(RawScalarType::Sint32)
        );
        let i1 = ScalarType::int(1, Signedness::Signless);
        assert_eq!(
            RawScalarType::from_scalar_type(i1),
            Some(RawScalarType::Sint8)
        );
        let i3 = ScalarType::int(3, Signedness::Signless);
        assert_eq!(RawScalarType::from_scalar_type(i3), None);
    }

    #[test]
    fn lenient_quirks() {
        // Unknown components are skipped; the spans may come in any order.
        let empty = RawSignature::default();
        assert_eq!(RawSignature::parse("Z3!abI1!_7R1!"), Ok(empty.clone()));
        assert_eq!(RawSignature::parse("R1!I1!"), Ok(empty.clone()));
        // A truncated results span counts as found and empty.
        assert_eq!(RawSignature::parse("I1!R5!B"), Ok(empty.clone()));
        // A malformed field ends the fields; the item keeps what was read.
        let raw = RawSignature::parse("I8!B5!d4d+R1!").unwrap();
        assert_eq!(
            raw.inputs,
            [RawItem::Buffer {
                element: RawScalarType::Float32,
                dims: vec![4]
            }]
        );
        // The last type field wins.
        let raw = RawSignature::parse("I8!S5!t6t2R1!").unwrap();
        assert_eq!(raw.inputs, [RawItem::Scalar(RawScalarType::Float64)]);
    }

    #[test]
    fn strict_rejects_what_iree_skips() {
        let cases = [
            ("Z3!abI1!R1!", 0, "Inputs span not found"),
            ("R1!I1!", 0, "Inputs span not found"),
            ("I1!R5!B", 5, "runs past the end"),
            ("I1!R1!Z3!ab", 6, "after the results span"),
            ("I1!R1!x", 6, "after the results span"),
            ("I8!B5!d4d+R1!", 9, "expected the decimal digits"),
            ("I8!S5!t6t2R1!", 8, "a second type field"),
            ("I6!B9!abR1!", 5, "runs past the end"),
            ("I4!O1!", 6, "Results span not found"),
        ];
        for (input, offset, message) in cases {
            let error = RawSignature::parse_strict(input).unwrap_err();
            assert_eq!(error.offset, offset, "{input:?}: {error}");
            assert!(error.message.contains(message), "{input:?}: {error}");
        }
    }

    #[test]
    fn errors_point_at_the_item() {
        let error = RawSignature::parse("I4!U1!R1!").unwrap_err();
        assert_eq!(error.offset, 3);
        assert!(error.message.starts_with("Unrecognized raw tag 'U'"));
        let error = RawSignature::parse("I7!B4!t12R1!").unwrap_err();
        assert_eq!(error.offset, 6);
        let error = RawSignature::parse("I6!O3!_1R1!").unwrap_err();
        assert!(
            error
                .message
                .starts_with("Unrecognized ref object field tag"),
            "{error}"
        );
    }

    #[test]
    fn model_conversion() {
        let signature = Signature {
            args: vec![
                Type::Named(
                    "x".into(),
                    Box::new(Type::ndarray(ScalarType::F32, &[None, Some(4)])),
                ),
                Type::Scalar(ScalarType::int(1, Signedness::Signless)),
                Type::Opaque,
                Type::Unknown,
            ],
            results: vec![Type::Scalar(ScalarType::int(32, Signedness::Unsigned))],
        };
        let raw = RawSignature::from_signature(&signature).unwrap();
        assert_eq!(raw.to_string(), "I20!B6!d-1d4S3!t4O1!U1!R7!S4!t10");
        assert_eq!(
            raw.to_signature().to_string(),
            "(ndarray<f32, [?, 4]>, si8, ref, unknown) -> (ui32)"
        );
        let bad = Signature {
            args: vec![Type::Opaque, Type::Opaque, Type::List(vec![])],
            results: vec![],
        };
        let error = RawSignature::from_signature(&bad).unwrap_err();
        assert_eq!((error.target, error.path.as_str()), (TARGET, "args[2]"));
        let bad = Signature {
            args: vec![],
            results: vec![Type::ndarray_of_unknown_rank(ScalarType::F32)],
        };
        assert_eq!(
            RawSignature::from_signature(&bad).unwrap_err().path,
            "results[0]"
        );
        let bad = Signature {
            args: vec![Type::Scalar(ScalarType::int(3, Signedness::Signless))],
            results: vec![],
        };
        assert!(RawSignature::from_signature(&bad).is_err());
    }
}
