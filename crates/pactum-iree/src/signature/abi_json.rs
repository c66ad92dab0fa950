//! The V1 `iree.abi` reflection JSON: `{"a":[arg records],"r":[result records],"v":1}`.
//!
//! A frontend (historically the TensorFlow importer) stores this string under the export's
//! `iree.abi` reflection key. [`IreeAbi::parse`] reads it into a [`Signature`] and
//! [`IreeAbi`]'s `Display` prints the compact form IREE stores: no spaces, keys in sorted
//! order, strings escaped the way LLVM's JSON writer escapes them. A value parsed from that
//! form prints back byte for byte; any other spelling of the same JSON (whitespace, `\u`
//! escapes of plain characters) parses to the same value and prints in the compact form.
//!
//! Type records and their model counterparts:
//!
//! | record | [`Type`] |
//! |---|---|
//! | `"i1"` … `"i64"` | [`Type::Scalar`] (signless [`ScalarType::Int`]) |
//! | `"f16"`, `"bf16"`, `"f32"`, `"f64"` | [`Type::Scalar`] |
//! | `null` | [`Type::Null`] |
//! | `"unknown"` | [`Type::Unknown`] |
//! | `["named", key, T]` (top level of `a` or `r` only) | [`Type::Named`] |
//! | `["ndarray", elem, rank\|null, dim\|null…]` | [`Type::NdArray`] |
//! | `["slist", T…]` | [`Type::List`] |
//! | `["stuple", T…]` | [`Type::Tuple`] |
//! | `["sdict", [key, T]…]` | [`Type::Dict`] |
//! | `["py_homogeneous_list", T]` | [`Type::TypedList`] |
//!
//! Decisions where IREE's documents are silent:
//!
//! - `a` and `r` are required and must be arrays (IREE's Python runtime refuses anything
//!   else); `v` is optional and, when present, must be an integer. Every version number is
//!   accepted and kept: the runtime never reads `v`, and 1 is the only version ever written.
//! - Other top-level keys are kept, with their values as compact JSON text, and printed back
//!   in sorted key position, so that a future producer's additions survive a round trip.
//!   A key given twice is an error.
//! - Repeated `sdict` keys and repeated `named` keys are kept as written; refusing them is
//!   left to whoever binds values to the signature.
//! - Nesting deeper than [`MAX_DEPTH`] levels is an error (bounded recursion).
//!
//! ```
//! use pactum_iree::signature::abi_json::IreeAbi;
//! use pactum_iree::signature::{ScalarType, Type};
//!
//! let text = r#"{"a":[["ndarray","f32",1,16]],"r":[["stuple","i32","i32"]],"v":1}"#;
//! let abi = IreeAbi::parse(text)?;
//! assert_eq!(abi.signature().args, vec![Type::ndarray(ScalarType::F32, &[Some(16)])]);
//! assert_eq!(abi.to_string(), text);
//!
//! let error = IreeAbi::parse(r#"{"a":[42],"r":[]}"#).unwrap_err();
//! assert_eq!(error.offset, 6);
//! # Ok::<(), pactum_iree::signature::ParseError>(())
//! ```

use std::fmt::{self, Write as _};

use serde_json::value::RawValue;

use pactum_text::Cursor;

use super::{ConvertError, ConvertErrorKind, ParseError, ScalarType, Signature, Signedness, Type};

/// The format name used in [`ParseError`]s and [`ConvertError`]s from this module.
pub const FORMAT: &str = "iree.abi JSON";

/// The deepest nesting of compound records accepted (each list level counts one).
pub const MAX_DEPTH: usize = 256;

const RECORD: &str = "a type record (a primitive name, null, \"unknown\" or a list)";
const PRIMITIVES: &str = "i1 to i64, f16, bf16, f32, f64 or \"unknown\"";
const TAGS: &str = "a compound type tag (\"named\", \"ndarray\", \"slist\", \"stuple\", \"sdict\" \
                    or \"py_homogeneous_list\")";

/// A parsed `iree.abi` value: the signature it describes, its version and any other
/// top-level keys, kept so that it prints back exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IreeAbi {
    signature: Signature,
    version: Option<i64>,
    /// Sorted by key; values are compact JSON text.
    extra: Vec<(String, String)>,
}

impl IreeAbi {
    /// Parses an `iree.abi` JSON document.
    ///
    /// Errors give the byte offset of the offending JSON value (or of the syntax error) and
    /// say what was expected there.
    pub fn parse(text: &str) -> Result<IreeAbi, ParseError> {
        let root: &RawValue = serde_json::from_str(text).map_err(|e| json_error(text, 0, &e))?;
        let parser = Parser { input: text };
        parser.document(root)
    }

    /// An `iree.abi` value for `signature`, with `"v": version` when `version` is given.
    ///
    /// Fails for what the JSON cannot express: [`Type::String`], [`Type::Opaque`], signed or
    /// unsigned integers, integers wider than 64 bits, and [`Type::Named`] anywhere but the
    /// top level of the arguments or results.
    pub fn from_signature(
        signature: &Signature,
        version: Option<i64>,
    ) -> Result<IreeAbi, ConvertError> {
        for (i, ty) in signature.args.iter().enumerate() {
            expressible(ty, &format!("args[{i}]"), true, 1)?;
        }
        for (i, ty) in signature.results.iter().enumerate() {
            expressible(ty, &format!("results[{i}]"), true, 1)?;
        }
        Ok(IreeAbi {
            signature: signature.clone(),
            version,
            extra: Vec::new(),
        })
    }

    /// The signature the records describe.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The signature, consuming the value.
    pub fn into_signature(self) -> Signature {
        self.signature
    }

    /// The `v` field, when present.
    pub fn version(&self) -> Option<i64> {
        self.version
    }

    /// Top-level keys other than `a`, `r` and `v`, sorted by key, each with its value as
    /// compact JSON text.
    pub fn extra(&self) -> &[(String, String)] {
        &self.extra
    }
}

/// [`IreeAbi::parse`].
impl std::str::FromStr for IreeAbi {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<IreeAbi, ParseError> {
        IreeAbi::parse(text)
    }
}

/// The `iree.abi` JSON text for `signature`: the compact form IREE stores.
///
/// The same as `IreeAbi::from_signature(signature, version)?.to_string()`.
pub fn to_json(signature: &Signature, version: Option<i64>) -> Result<String, ConvertError> {
    Ok(IreeAbi::from_signature(signature, version)?.to_string())
}

/// The compact form: `{"a":[…],"r":[…],"v":1}`, keys sorted bytewise, no whitespace.
impl fmt::Display for IreeAbi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let version = self.version.map(|v| v.to_string());
        let mut entries: Vec<(&str, Field<'_>)> = vec![
            ("a", Field::Records(&self.signature.args)),
            ("r", Field::Records(&self.signature.results)),
        ];
        if let Some(version) = &version {
            entries.push(("v", Field::Text(version)));
        }
        for (key, value) in &self.extra {
            entries.push((key, Field::Text(value)));
        }
        // LLVM's JSON writer (which IREE's producers use) prints object keys sorted.
        entries.sort_by(|x, y| x.0.as_bytes().cmp(y.0.as_bytes()));
        f.write_char('{')?;
        for (i, (key, field)) in entries.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            write_string(f, key)?;
            f.write_char(':')?;
            match field {
                Field::Records(types) => {
                    f.write_char('[')?;
                    for (j, ty) in types.iter().enumerate() {
                        if j > 0 {
                            f.write_char(',')?;
                        }
                        write_record(f, ty)?;
                    }
                    f.write_char(']')?;
                }
                Field::Text(text) => f.write_str(text)?,
            }
        }
        f.write_char('}')
    }
}

enum Field<'a> {
    Records(&'a [Type]),
    Text(&'a str),
}

/// Checks that `ty` has a record; `top` is true for direct entries of `a` and `r`.
///
/// `depth` counts list records from 1 at the top, as the parser does, so that whatever
/// this accepts parses back.
fn expressible(ty: &Type, path: &str, top: bool, depth: usize) -> Result<(), ConvertError> {
    let is_leaf = matches!(
        ty,
        Type::Scalar(_) | Type::Null | Type::Unknown | Type::String | Type::Opaque
    );
    if !is_leaf && depth > MAX_DEPTH {
        return Err(ConvertError::new(
            FORMAT,
            path,
            ConvertErrorKind::TooDeep {
                what: "type records",
                limit: MAX_DEPTH,
            },
        ));
    }
    let nested = |ty: &Type, path: String| expressible(ty, &path, false, depth + 1);
    match ty {
        Type::Scalar(scalar @ ScalarType::Int { bits, signedness }) => {
            if *signedness != Signedness::Signless {
                return Err(ConvertError::new(
                    FORMAT,
                    path,
                    ConvertErrorKind::NotSignless(*scalar),
                ));
            }
            if !(1..=64).contains(bits) {
                return Err(ConvertError::new(
                    FORMAT,
                    path,
                    ConvertErrorKind::IntegerWidth(*scalar),
                ));
            }
            Ok(())
        }
        Type::Scalar(_) | Type::Null | Type::Unknown => Ok(()),
        Type::NdArray(array) => nested(&array.element, format!("{path}.element")),
        Type::String | Type::Opaque => Err(ConvertError::new(
            FORMAT,
            path,
            ConvertErrorKind::NoRecord(ty.clone()),
        )),
        Type::List(slots) | Type::Tuple(slots) => slots
            .iter()
            .enumerate()
            .try_for_each(|(i, slot)| nested(slot, format!("{path}[{i}]"))),
        Type::Dict(entries) => entries
            .iter()
            .try_for_each(|(key, slot)| nested(slot, format!("{path}[{key:?}]"))),
        Type::TypedList(element) => nested(element, format!("{path}.element")),
        Type::Named(_, inner) => {
            if !top {
                return Err(ConvertError::new(
                    FORMAT,
                    path,
                    ConvertErrorKind::NestedName(ty.clone()),
                ));
            }
            nested(inner, path.to_string())
        }
    }
}

/// Writes one type record; the value was checked by [`expressible`] or came from the parser.
fn write_record(f: &mut fmt::Formatter<'_>, ty: &Type) -> fmt::Result {
    let list = |f: &mut fmt::Formatter<'_>, tag: &str, slots: &[Type]| -> fmt::Result {
        write!(f, "[\"{tag}\"")?;
        for slot in slots {
            f.write_char(',')?;
            write_record(f, slot)?;
        }
        f.write_char(']')
    };
    match ty {
        Type::Scalar(scalar) => write!(f, "\"{scalar}\""),
        Type::Null => f.write_str("null"),
        Type::Unknown => f.write_str("\"unknown\""),
        Type::Named(key, inner) => {
            f.write_str("[\"named\",")?;
            write_string(f, key)?;
            f.write_char(',')?;
            write_record(f, inner)?;
            f.write_char(']')
        }
        Type::NdArray(array) => {
            f.write_str("[\"ndarray\",")?;
            write_record(f, &array.element)?;
            match &array.dims {
                None => f.write_str(",null")?,
                Some(dims) => {
                    write!(f, ",{}", dims.len())?;
                    for dim in dims {
                        match dim {
                            Some(extent) => write!(f, ",{extent}")?,
                            None => f.write_str(",null")?,
                        }
                    }
                }
            }
            f.write_char(']')
        }
        Type::List(slots) => list(f, "slist", slots),
        Type::Tuple(slots) => list(f, "stuple", slots),
        Type::Dict(entries) => {
            f.write_str("[\"sdict\"")?;
            for (key, slot) in entries {
                f.write_str(",[")?;
                write_string(f, key)?;
                f.write_char(',')?;
                write_record(f, slot)?;
                f.write_char(']')?;
            }
            f.write_char(']')
        }
        Type::TypedList(element) => {
            f.write_str("[\"py_homogeneous_list\",")?;
            write_record(f, element)?;
            f.write_char(']')
        }
        // Rejected by `from_signature`; the parser never produces them.
        Type::String | Type::Opaque => f.write_str("\"unknown\""),
    }
}

/// A JSON string, escaped as LLVM's `json::OStream` does: `"` and `\` escaped, `\t` `\n`
/// `\r` short, other control bytes as `\u00xx`, everything else (non-ASCII too) as is.
fn write_string(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\t' => f.write_str("\\t")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// Walks the document, re-reading each value's raw text (which is a slice of the input, so
/// its offset is known) as the shape the record grammar expects there.
struct Parser<'a> {
    input: &'a str,
}

/// The JSON kind of a raw value, from its first byte (serde_json trims surrounding space).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Null,
    Other,
}

fn kind(raw: &RawValue) -> Kind {
    match raw.get().as_bytes().first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b'n') => Kind::Null,
        _ => Kind::Other,
    }
}

impl<'a> Parser<'a> {
    fn offset(&self, raw: &RawValue) -> usize {
        // A borrowed RawValue is a slice of the input, so this is its byte offset.
        (raw.get().as_ptr() as usize).wrapping_sub(self.input.as_ptr() as usize)
    }

    fn error(&self, raw: &RawValue, message: impl Into<String>) -> ParseError {
        ParseError::new(FORMAT, self.offset(raw), message)
    }

    fn sub_error(&self, raw: &RawValue, error: &serde_json::Error) -> ParseError {
        json_error(raw.get(), self.offset(raw), error)
    }

    fn array(&self, raw: &'a RawValue) -> Result<Vec<&'a RawValue>, ParseError> {
        serde_json::from_str(raw.get()).map_err(|e| self.sub_error(raw, &e))
    }

    fn string(&self, raw: &'a RawValue) -> Result<String, ParseError> {
        serde_json::from_str(raw.get()).map_err(|e| self.sub_error(raw, &e))
    }

    /// An object's members as (key text with its quotes, key offset, value), in order.
    ///
    /// The object was already checked to be valid JSON, so only its punctuation is walked
    /// here; serde_json reads each value (serde's visitor traits, which would do this, are
    /// not a dependency of this crate).
    fn members(
        &self,
        raw: &'a RawValue,
    ) -> Result<Vec<(&'a str, usize, &'a RawValue)>, ParseError> {
        let text = raw.get();
        let base = self.offset(raw);
        // The value is a slice of the input, which has no length limit.
        let mut cursor = Cursor::unbounded(text, FORMAT);
        let unexpected = |cursor: &Cursor<'_>| cursor.error("malformed JSON object").shifted(base);
        let mut members = Vec::new();
        cursor.advance(1);
        cursor.skip_spaces();
        if cursor.eat_byte(b'}') {
            return Ok(members);
        }
        loop {
            let key_start = cursor.offset();
            if !cursor.eat_byte(b'"') {
                return Err(unexpected(&cursor));
            }
            loop {
                cursor.take_while(|b| !matches!(b, b'"' | b'\\'));
                if cursor.eat_byte(b'\\') {
                    // Valid JSON: the escaped character is ASCII.
                    cursor.advance(1);
                } else if cursor.eat_byte(b'"') {
                    break;
                } else {
                    return Err(unexpected(&cursor));
                }
            }
            let key = &text[key_start..cursor.offset()];
            cursor.skip_spaces();
            if !cursor.eat_byte(b':') {
                return Err(unexpected(&cursor));
            }
            cursor.skip_spaces();
            let pos = cursor.offset();
            let mut stream =
                serde_json::Deserializer::from_str(cursor.rest()).into_iter::<&'a RawValue>();
            let value = match stream.next() {
                Some(Ok(value)) => value,
                Some(Err(e)) => return Err(json_error(cursor.rest(), base + pos, &e)),
                None => return Err(unexpected(&cursor)),
            };
            members.push((key, base + key_start, value));
            cursor.advance(stream.byte_offset());
            cursor.skip_spaces();
            if cursor.eat_byte(b',') {
                cursor.skip_spaces();
            } else if cursor.peek() == Some(b'}') {
                return Ok(members);
            } else {
                return Err(unexpected(&cursor));
            }
        }
    }

    fn document(&self, root: &'a RawValue) -> Result<IreeAbi, ParseError> {
        if kind(root) != Kind::Object {
            return Err(self.error(
                root,
                format!(
                    "expected a JSON object with keys \"a\" and \"r\", found {}",
                    found(root)
                ),
            ));
        }
        let members = self.members(root)?;
        let mut args = None;
        let mut results = None;
        let mut version = None;
        let mut extra: Vec<(String, String)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (key_text, key_offset, value) in members {
            let key: String =
                serde_json::from_str(key_text).map_err(|e| json_error(key_text, key_offset, &e))?;
            if !seen.insert(key.clone()) {
                return Err(ParseError::new(
                    FORMAT,
                    key_offset,
                    format!("duplicate key {key_text}"),
                ));
            }
            match key.as_str() {
                "a" => args = Some(self.top_records(value, "a")?),
                "r" => results = Some(self.top_records(value, "r")?),
                "v" => {
                    let v: i64 = serde_json::from_str(value.get()).map_err(|_| {
                        self.error(
                            value,
                            format!(
                                "expected an integer version for \"v\", found {}",
                                found(value)
                            ),
                        )
                    })?;
                    version = Some(v);
                }
                _ => extra.push((key, minify(value.get()))),
            }
        }
        let missing = |key: &str| {
            self.error(
                root,
                format!(
                    "missing key \"{key}\" (the list of {} records)",
                    if key == "a" { "argument" } else { "result" }
                ),
            )
        };
        let args = args.ok_or_else(|| missing("a"))?;
        let results = results.ok_or_else(|| missing("r"))?;
        extra.sort_by(|x, y| x.0.as_bytes().cmp(y.0.as_bytes()));
        Ok(IreeAbi {
            signature: Signature { args, results },
            version,
            extra,
        })
    }

    fn top_records(&self, raw: &'a RawValue, key: &str) -> Result<Vec<Type>, ParseError> {
        if kind(raw) != Kind::Array {
            return Err(self.error(
                raw,
                format!(
                    "expected an array of type records for \"{key}\", found {}",
                    found(raw)
                ),
            ));
        }
        self.check_depth(raw)?;
        self.array(raw)?
            .into_iter()
            .map(|item| self.record(item, true, 1))
            .collect()
    }

    /// Refuses records nested deeper than [`MAX_DEPTH`] in one linear pass, before the walk.
    ///
    /// The walk re-reads each compound record's text once per enclosing level, so without
    /// this a text claiming a million levels would be scanned 256 times over before the depth
    /// check in [`Parser::compound`] is reached (over a minute for 9 MB in a debug build). The
    /// scan follows the record grammar just enough to count record levels as the walk does
    /// (an `sdict` entry `[key, T]` is a list but not a level) and gives the error that check
    /// gives, at the same offset: the opening bracket of the first record past the limit.
    /// `raw` is the list of `a` or `r`. Memory is bounded by `MAX_DEPTH`: values that are not
    /// records (an object, a key, anything the walk refuses anyway) only count brackets.
    fn check_depth(&self, raw: &RawValue) -> Result<(), ParseError> {
        #[derive(Clone, Copy)]
        enum Role {
            /// The list of `a` or `r`: its items are records of level 1.
            Top,
            /// A compound record of this level; `sdict` once its tag is known.
            Record { level: usize, sdict: bool },
            /// An `sdict` entry `[key, T]` of a record of this level.
            Entry { level: usize },
        }
        let text = raw.get();
        let bytes = text.as_bytes();
        // (role, index of the item being read) per open list, and the nesting of values the
        // walk never reads as records.
        let mut open: Vec<(Role, usize)> = Vec::new();
        let mut ignored = 0usize;
        let mut pos = 0;
        while pos < bytes.len() {
            match bytes[pos] {
                b'"' => {
                    let start = pos;
                    pos += 1;
                    while pos < bytes.len() && bytes[pos] != b'"' {
                        pos += if bytes[pos] == b'\\' { 2 } else { 1 };
                    }
                    // A record's tag decides what its items are.
                    if let (0, Some((Role::Record { sdict, .. }, 0))) = (ignored, open.last_mut()) {
                        let tag = text.get(start..=pos.min(bytes.len() - 1)).unwrap_or("");
                        // Decoded only when escaped (`"\u0073dict"` is `sdict` too).
                        *sdict = tag == "\"sdict\""
                            || (tag.contains('\\')
                                && serde_json::from_str::<String>(tag).is_ok_and(|t| t == "sdict"));
                    }
                }
                open_bracket @ (b'[' | b'{') => {
                    let level = match (ignored, open.last()) {
                        (0, None) => Some(0),
                        (0, Some(&(Role::Top, _))) => Some(1),
                        (0, Some(&(Role::Record { level, sdict }, index))) if index > 0 => {
                            if sdict {
                                if open_bracket == b'[' {
                                    open.push((Role::Entry { level }, 0));
                                    pos += 1;
                                    continue;
                                }
                                None
                            } else {
                                Some(level + 1)
                            }
                        }
                        (0, Some(&(Role::Entry { level }, 1))) => Some(level + 1),
                        _ => None,
                    };
                    match (level, open_bracket) {
                        (Some(0), b'[') => open.push((Role::Top, 0)),
                        (Some(level), b'[') => {
                            if level > MAX_DEPTH {
                                let message =
                                    format!("type records nested deeper than {MAX_DEPTH} levels");
                                return Err(ParseError::new(
                                    FORMAT,
                                    self.offset(raw) + pos,
                                    message,
                                ));
                            }
                            open.push((
                                Role::Record {
                                    level,
                                    sdict: false,
                                },
                                0,
                            ));
                        }
                        _ => ignored += 1,
                    }
                }
                b']' | b'}' => {
                    if ignored > 0 {
                        ignored -= 1;
                    } else {
                        open.pop();
                    }
                }
                b',' if ignored == 0 => {
                    if let Some((_, index)) = open.last_mut() {
                        *index += 1;
                    }
                }
                _ => {}
            }
            pos += 1;
        }
        Ok(())
    }

    fn record(&self, raw: &'a RawValue, top: bool, depth: usize) -> Result<Type, ParseError> {
        match kind(raw) {
            Kind::Null => Ok(Type::Null),
            Kind::String => {
                let name = self.string(raw)?;
                if name == "unknown" {
                    return Ok(Type::Unknown);
                }
                primitive(&name).map(Type::Scalar).ok_or_else(|| {
                    let message = format!(
                        "unknown primitive type {} (expected {PRIMITIVES})",
                        found(raw)
                    );
                    self.error(raw, message)
                })
            }
            Kind::Array => self.compound(raw, top, depth),
            Kind::Object | Kind::Other => {
                Err(self.error(raw, format!("expected {RECORD}, found {}", found(raw))))
            }
        }
    }

    fn compound(&self, raw: &'a RawValue, top: bool, depth: usize) -> Result<Type, ParseError> {
        if depth > MAX_DEPTH {
            let message = format!("type records nested deeper than {MAX_DEPTH} levels");
            return Err(self.error(raw, message));
        }
        let items = self.array(raw)?;
        let Some(&tag_raw) = items.first() else {
            let message = format!("expected a list starting with {TAGS}, found an empty list");
            return Err(self.error(raw, message));
        };
        if kind(tag_raw) != Kind::String {
            let message = format!(
                "expected {TAGS} as the first element, found {}",
                found(tag_raw)
            );
            return Err(self.error(tag_raw, message));
        }
        let tag = self.string(tag_raw)?;
        let rest = &items[1..];
        let record = |item: &'a RawValue| self.record(item, false, depth + 1);
        // A list with the wrong number of elements: point at the first extra element, or at
        // the closing bracket when elements are missing.
        let arity = |expected: usize, shape: &str| -> ParseError {
            let offset = match rest.get(expected) {
                Some(&extra) => self.offset(extra),
                None => self.offset(raw) + raw.get().len() - 1,
            };
            let message = format!("expected {shape}, found a list of {} elements", items.len());
            ParseError::new(FORMAT, offset, message)
        };
        match tag.as_str() {
            "named" => {
                if !top {
                    let message =
                        "\"named\" is only allowed as a top-level entry of \"a\" or \"r\"";
                    return Err(self.error(tag_raw, message));
                }
                if rest.len() != 2 {
                    return Err(arity(2, "[\"named\", key, type]"));
                }
                if kind(rest[0]) != Kind::String {
                    let message = format!(
                        "expected the argument name (a string), found {}",
                        found(rest[0])
                    );
                    return Err(self.error(rest[0], message));
                }
                let key = self.string(rest[0])?;
                Ok(Type::Named(key, Box::new(record(rest[1])?)))
            }
            "ndarray" => {
                if rest.len() < 2 {
                    return Err(arity(
                        2,
                        "[\"ndarray\", element type, rank or null, dims...]",
                    ));
                }
                self.ndarray(record(rest[0])?, rest[1], &rest[2..])
            }
            "slist" => Ok(Type::List(
                rest.iter()
                    .map(|&item| record(item))
                    .collect::<Result<_, _>>()?,
            )),
            "stuple" => Ok(Type::Tuple(
                rest.iter()
                    .map(|&item| record(item))
                    .collect::<Result<_, _>>()?,
            )),
            "sdict" => {
                let mut entries = Vec::with_capacity(rest.len());
                for &entry in rest {
                    let pair = if kind(entry) == Kind::Array {
                        self.array(entry)?
                    } else {
                        Vec::new()
                    };
                    if pair.len() != 2 || kind(pair[0]) != Kind::String {
                        let message = format!(
                            "expected an sdict entry [key, type] with a string key, found {}",
                            found(entry)
                        );
                        return Err(self.error(entry, message));
                    }
                    entries.push((self.string(pair[0])?, record(pair[1])?));
                }
                Ok(Type::Dict(entries))
            }
            "py_homogeneous_list" => {
                if rest.len() != 1 {
                    return Err(arity(1, "[\"py_homogeneous_list\", element type]"));
                }
                Ok(Type::TypedList(Box::new(record(rest[0])?)))
            }
            _ => {
                let message = format!("unknown compound type {} (expected {TAGS})", found(tag_raw));
                Err(self.error(tag_raw, message))
            }
        }
    }

    /// The rest of an `ndarray` record, after its element type.
    fn ndarray(
        &self,
        element: Type,
        rank_raw: &'a RawValue,
        dims_raw: &[&'a RawValue],
    ) -> Result<Type, ParseError> {
        let dims = if kind(rank_raw) == Kind::Null {
            if let Some(&first) = dims_raw.first() {
                return Err(self.error(
                    first,
                    "the rank is null (unknown), so no dimensions may follow",
                ));
            }
            None
        } else {
            let rank: u64 = serde_json::from_str(rank_raw.get()).map_err(|_| {
                self.error(
                    rank_raw,
                    format!(
                        "expected the rank (a non-negative integer or null), found {}",
                        found(rank_raw)
                    ),
                )
            })?;
            if rank != dims_raw.len() as u64 {
                return Err(self.error(
                    rank_raw,
                    format!(
                        "the rank is {rank} but {} dimensions follow",
                        dims_raw.len()
                    ),
                ));
            }
            let mut dims = Vec::with_capacity(dims_raw.len());
            for &dim in dims_raw {
                if kind(dim) == Kind::Null {
                    dims.push(None);
                } else {
                    let extent: u64 = serde_json::from_str(dim.get()).map_err(|_| {
                        self.error(
                            dim,
                            format!(
                                "expected a dimension (a non-negative integer or null), found {}",
                                found(dim)
                            ),
                        )
                    })?;
                    dims.push(Some(extent));
                }
            }
            Some(dims)
        };
        Ok(Type::NdArray(super::NdArray {
            element: Box::new(element),
            dims,
        }))
    }
}

/// `i1`…`i64` (no leading zeros, so that printing gives the same text), `f16`, `bf16`,
/// `f32`, `f64`.
fn primitive(name: &str) -> Option<ScalarType> {
    match name {
        "f16" => return Some(ScalarType::F16),
        "bf16" => return Some(ScalarType::BF16),
        "f32" => return Some(ScalarType::F32),
        "f64" => return Some(ScalarType::F64),
        _ => {}
    }
    let digits = name.strip_prefix('i')?;
    if digits.is_empty()
        || digits.len() > 2
        || digits.starts_with('0')
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let bits: u8 = digits.parse().ok()?;
    (1..=64)
        .contains(&bits)
        .then_some(ScalarType::int(bits, Signedness::Signless))
}

/// The start of a raw value for error messages, cut at 40 bytes.
fn found(raw: &RawValue) -> String {
    let text = raw.get();
    if text.len() <= 40 {
        return text.to_string();
    }
    let mut cut = 40;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

/// JSON text with the whitespace outside strings removed.
fn minify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
            in_string = c == '"';
        }
    }
    out
}

/// Converts a serde_json error in `text` (which starts at byte `base` of the input) into a
/// [`ParseError`] at a byte offset.
fn json_error(text: &str, base: usize, error: &serde_json::Error) -> ParseError {
    let offset = if error.is_eof() {
        text.len()
    } else {
        // serde_json counts lines from 1 and columns in bytes from 1 (0 before the first
        // byte of a line).
        let line_start = if error.line() <= 1 {
            0
        } else {
            text.match_indices('\n')
                .nth(error.line() - 2)
                .map_or(text.len(), |(i, _)| i + 1)
        };
        (line_start + error.column().saturating_sub(1)).min(text.len())
    };
    // serde_json appends " at line L column C"; the offset replaces it.
    let message = error.to_string();
    let message = match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_string(),
        None => message,
    };
    ParseError::new(FORMAT, base + offset, format!("malformed JSON: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_have_byte_offsets() {
        let cases = [
            ("", 0),
            ("[1,\n 2,,]", 7),
            ("{\"a\":[1,\n 2", 11),
            ("{\"a\":[\"\u{e9}\\q\"]}", 10),
            ("{\"a\":[],\"r\":[]} x", 16),
        ];
        for (text, offset) in cases {
            let error = IreeAbi::parse(text).unwrap_err();
            assert_eq!(error.offset, offset, "{text:?}: {error}");
            assert!(error.message.starts_with("malformed JSON: "), "{error}");
            assert!(!error.message.contains(" at line "), "{error}");
        }
    }

    #[test]
    fn minify_keeps_strings() {
        assert_eq!(
            minify(" { \"a b\" : [ 1 , \"\\\" x\" ] } "),
            "{\"a b\":[1,\"\\\" x\"]}"
        );
    }

    #[test]
    fn primitive_names() {
        assert_eq!(
            primitive("i1"),
            Some(ScalarType::int(1, Signedness::Signless))
        );
        assert_eq!(primitive("i64"), Some(ScalarType::I64));
        for bad in ["i0", "i65", "i08", "i", "i+8", "f8", "si32", "i128"] {
            assert_eq!(primitive(bad), None, "{bad}");
        }
    }
}
