//! `ffi.json.Parse` and `ffi.json.Stringify`: JSON text to FFI values and back, as the
//! official runtime (apache-tvm-ffi 0.1.15) reads and writes it.
//!
//! Values: objects are `Map`s (a later duplicate key wins), arrays are `Array`s, integers
//! that fit in int64 are ints and every other number a float, `null` is None, plus the
//! extensions `NaN`, `Infinity` and `-Infinity`. The parser is as lenient as the official one
//! with numbers (`+1`, `01`, `.5` and `5.` are accepted) and, as C's `strtod` does, refuses
//! floats that overflow or round to zero or to a subnormal (an exact subnormal is fine). Strings are byte strings (no UTF-8 check); a string with
//! no escape is stored inline when short, as the official runtime does, and one with escapes
//! always on the heap. Errors are `ValueError`s worded as Python's `json` module words them,
//! with the line, column and byte offset: `Expecting value: line 1 column 5 (char 4)`.
//!
//! The writer prints Arrays and Lists as arrays (a List met again inside itself is an error),
//! Maps with string keys as objects, floats with a `.0` when integral (below 2^53) and as
//! `%.17g` otherwise, and escapes `"`, `\`, `/` and control bytes; any other value (Dict,
//! bytes, objects) is an `Unsupported type` error. A non-zero indent puts each item on its own
//! line, as the official writer does.
//!
//! Unlike the official runtime, which recurses without bound, nesting deeper than
//! [`MAX_DEPTH`] levels is refused with an error rather than overflowing the stack.

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use super::builtin::{ANY, OPTIONAL_INT, STR, typed};
use super::registry::BuiltinGlobal;
use super::repr_globals::format_general;
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::{Array, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};

/// The deepest nesting of containers the JSON reader and writer (and the JSON graph
/// serializer) accept.
pub(crate) const MAX_DEPTH: usize = 1000;

/// `ffi.json.Parse` and `ffi.json.Stringify`.
pub(crate) fn json_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.json.Parse", &[STR], ANY, |a| parse(a.string_bytes(0)?)),
        typed("ffi.json.Stringify", &[ANY, OPTIONAL_INT], STR, |a| {
            // The official indent is a C `int`: wider values wrap.
            let indent = a.get::<Option<i64>>(1)?.unwrap_or(0) as i32;
            stringify(a.owned(0)?.as_view(), indent)
        }),
    ]
}

/// Parses JSON `text` into an FFI value, or a `ValueError` naming the position.
pub(crate) fn parse(text: &[u8]) -> Result<Any> {
    let mut parser = Parser {
        text,
        pos: 0,
        line: 1,
        line_start: 0,
        depth: 0,
    };
    parser
        .document()
        .map_err(|e| Error::new(ErrorKind::VALUE_ERROR, e.to_string()))
}

/// `value` as JSON text (a heap String, as the official writer returns it).
pub(crate) fn stringify(value: &AnyView<'_>, indent: i32) -> Result<Any> {
    let mut writer = Writer {
        out: Vec::new(),
        indent,
        total_indent: 0,
        depth: 0,
        active_lists: Vec::new(),
    };
    writer.value(value)?;
    Ok(pactum_core::internal::heap_byte_string(
        &writer.out,
        pactum_core::internal::ByteString::Str,
    ))
}

/// A malformed document: what is wrong and where.
#[derive(Debug, PartialEq)]
struct SyntaxError {
    message: &'static str,
    line: usize,
    column: usize,
    offset: usize,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: line {} column {} (char {})",
            self.message, self.line, self.column, self.offset
        )
    }
}

const EXPECTING_VALUE: &str = "Expecting value";
const SYNTAX_ERROR_NEAR: &str = "Syntax error near";
const INVALID_CONTROL: &str = "Invalid control character at";
const UNTERMINATED: &str = "Unterminated string starting at";
const INVALID_UNICODE: &str = "Invalid \\uXXXX escape";
const INVALID_SURROGATE: &str = "Invalid surrogate pair of \\uXXXX escapes";
const INVALID_ESCAPE: &str = "Invalid \\escape";
const EXTRA_DATA: &str = "Extra data";
const EXPECTING_NAME: &str = "Expecting property name enclosed in double quotes";
const EXPECTING_COLON: &str = "Expecting ':' delimiter";
const EXPECTING_COMMA: &str = "Expecting ',' delimiter";
const TOO_DEEP: &str = "Nesting deeper than 1000 levels at";

type Parsed<T> = std::result::Result<T, SyntaxError>;

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    /// The current line (1-based) and the offset where it starts; only whitespace between
    /// tokens can hold a newline.
    line: usize,
    line_start: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error_at(&self, offset: usize, message: &'static str) -> SyntaxError {
        SyntaxError {
            message,
            line: self.line,
            column: offset.saturating_sub(self.line_start) + 1,
            offset,
        }
    }

    fn error(&self, message: &'static str) -> SyntaxError {
        self.error_at(self.pos, message)
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while let Some(byte @ (b' ' | b'\t' | b'\n' | b'\r')) = self.peek() {
            self.pos += 1;
            if byte == b'\n' {
                self.line += 1;
                self.line_start = self.pos;
            }
        }
    }

    /// Consumes `literal` if the input continues with it.
    fn eat(&mut self, literal: &[u8]) -> bool {
        let matched = self
            .text
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(literal));
        if matched {
            self.pos += literal.len();
        }
        matched
    }

    fn document(&mut self) -> Parsed<Any> {
        let value = self.value()?;
        self.skip_spaces();
        if self.peek().is_some() {
            return Err(self.error(EXTRA_DATA));
        }
        Ok(value)
    }

    fn value(&mut self) -> Parsed<Any> {
        self.skip_spaces();
        let start = self.pos;
        let literal = |parser: &mut Self, text: &[u8], value: Any| {
            if parser.eat(text) {
                Ok(value)
            } else {
                Err(parser.error_at(start, EXPECTING_VALUE))
            }
        };
        match self.peek() {
            None => Err(self.error(EXPECTING_VALUE)),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(b'"') => self.string(),
            Some(b't') => literal(self, b"true", Any::from(true)),
            Some(b'f') => literal(self, b"false", Any::from(false)),
            Some(b'n') => literal(self, b"null", Any::default()),
            Some(_) => self.number(),
        }
    }

    fn nested(&mut self, body: fn(&mut Self) -> Parsed<Any>) -> Parsed<Any> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(TOO_DEEP));
        }
        self.depth += 1;
        let value = body(self);
        self.depth -= 1;
        value
    }

    fn object(&mut self) -> Parsed<Any> {
        self.pos += 1;
        self.skip_spaces();
        match self.peek() {
            None => return Err(self.error(EXPECTING_NAME)),
            Some(b'}') => {
                self.pos += 1;
                return Ok(Any::from(Map::new()));
            }
            Some(_) => {}
        }
        let mut pairs = Vec::new();
        // Each turn starts at a non-space byte; the end of input after a comma is the
        // official runtime's generic error.
        while self.peek().is_some() {
            if self.peek() != Some(b'"') {
                return Err(self.error(EXPECTING_NAME));
            }
            let key = self.string()?;
            self.skip_spaces();
            if self.peek() != Some(b':') {
                return Err(self.error(EXPECTING_COLON));
            }
            self.pos += 1;
            let value = self.value()?;
            pairs.push((key, value));
            self.skip_spaces();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Any::from(Map::from_pairs(pairs)));
                }
                Some(b',') => {
                    self.pos += 1;
                    self.skip_spaces();
                }
                _ => return Err(self.error(EXPECTING_COMMA)),
            }
        }
        Err(self.error(SYNTAX_ERROR_NEAR))
    }

    fn array(&mut self) -> Parsed<Any> {
        self.pos += 1;
        self.skip_spaces();
        match self.peek() {
            None => return Err(self.error(EXPECTING_VALUE)),
            Some(b']') => {
                self.pos += 1;
                return Ok(Any::from(Array::new([])));
            }
            Some(_) => {}
        }
        let mut items = Vec::new();
        while self.peek().is_some() {
            items.push(self.value()?);
            self.skip_spaces();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_spaces();
                }
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Any::from(Array::new(items)));
                }
                _ => return Err(self.error(EXPECTING_COMMA)),
            }
        }
        Err(self.error(SYNTAX_ERROR_NEAR))
    }

    /// A string at the opening quote. Without escapes it is stored like any short string
    /// (inline when it fits); with escapes, always on the heap.
    fn string(&mut self) -> Parsed<Any> {
        let start = self.pos;
        self.pos += 1;
        while let Some(byte) = self.peek() {
            match byte {
                b'"' => {
                    self.pos += 1;
                    return Ok(pactum_core::String::value_from_bytes(
                        self.text.get(start + 1..self.pos - 1).unwrap_or_default(),
                    ));
                }
                b'\\' | 0..=0x1f => return self.escaped_string(start),
                _ => self.pos += 1,
            }
        }
        Err(self.error_at(start, UNTERMINATED))
    }

    fn escaped_string(&mut self, start: usize) -> Parsed<Any> {
        let mut out = self
            .text
            .get(start + 1..self.pos)
            .unwrap_or_default()
            .to_vec();
        while let Some(byte) = self.peek() {
            match byte {
                0..=0x1f => return Err(self.error(INVALID_CONTROL)),
                b'"' => {
                    self.pos += 1;
                    return Ok(pactum_core::internal::heap_byte_string(
                        &out,
                        pactum_core::internal::ByteString::Str,
                    ));
                }
                b'\\' => {
                    self.pos += 1;
                    let unescaped = match self.peek() {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => {
                            let code_point = self.unicode_escape()?;
                            push_utf8(&mut out, code_point);
                            continue;
                        }
                        _ => return Err(self.error(INVALID_ESCAPE)),
                    };
                    self.pos += 1;
                    out.push(unescaped);
                }
                _ => {
                    out.push(byte);
                    self.pos += 1;
                }
            }
        }
        Err(self.error_at(start, UNTERMINATED))
    }

    /// A `\uXXXX` escape (at the `u`), or a surrogate pair of two, as a code point.
    fn unicode_escape(&mut self) -> Parsed<u32> {
        let escape = self.pos;
        self.pos += 1;
        let first = self
            .hex4()
            .ok_or_else(|| self.error_at(escape, INVALID_UNICODE))?;
        if !(0xD800..=0xDFFF).contains(&first) {
            return Ok(first);
        }
        if first >= 0xDC00 || !self.eat(b"\\u") {
            return Err(self.error_at(escape, INVALID_SURROGATE));
        }
        let second_at = self.pos;
        let second = self
            .hex4()
            .ok_or_else(|| self.error_at(second_at, INVALID_UNICODE))?;
        if !(0xDC00..=0xDFFF).contains(&second) {
            return Err(self.error_at(second_at, INVALID_SURROGATE));
        }
        Ok(((first - 0xD800) << 10) + (second - 0xDC00) + 0x10000)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.pos..self.pos + 4)?;
        let mut value = 0;
        for &digit in digits {
            value = value * 16 + char::from(digit).to_digit(16)?;
        }
        self.pos += 4;
        Some(value)
    }

    /// A number (or `NaN`, `Infinity`, `-Infinity`): the bytes that can belong to one, read
    /// as an int64 when they have no `.`/exponent and fit, else as a finite double.
    fn number(&mut self) -> Parsed<Any> {
        let start = self.pos;
        let rest = self.text.get(start..).unwrap_or_default();
        let special = match rest {
            [b'N', ..] => Some((&b"NaN"[..], f64::NAN)),
            [b'I', ..] => Some((&b"Infinity"[..], f64::INFINITY)),
            [b'-', b'I', ..] => Some((&b"-Infinity"[..], f64::NEG_INFINITY)),
            _ => None,
        };
        if let Some((literal, value)) = special {
            return if self.eat(literal) {
                Ok(Any::from(value))
            } else {
                Err(self.error_at(start, EXPECTING_VALUE))
            };
        }
        let len = rest
            .iter()
            .take_while(|b| matches!(b, b'0'..=b'9' | b'e' | b'E' | b'+' | b'-' | b'.'))
            .count();
        if len == 0 {
            return Err(self.error(EXPECTING_VALUE));
        }
        self.pos += len;
        // The bytes are ASCII by construction.
        let text = core::str::from_utf8(&rest[..len]).unwrap_or_default();
        if !text.contains(['.', 'e', 'E']) {
            if let Ok(int) = text.parse::<i64>() {
                return Ok(Any::from(int));
            }
        }
        parse_finite_double(text)
            .map(Any::from)
            .ok_or_else(|| self.error_at(start, EXPECTING_VALUE))
    }
}

/// `text` as a double, as C's `strtod` reads a whole buffer without setting `ERANGE`: `None`
/// for malformed text, an overflow to infinity, a non-zero number that rounds to zero, and
/// one that rounds to a subnormal unless it is exactly that subnormal.
fn parse_finite_double(text: &str) -> Option<f64> {
    let value: f64 = text.parse().ok()?;
    let (digits, _) = significant_digits(text);
    let underflow = (value == 0.0 && !digits.is_empty())
        || (value.is_subnormal()
            && significant_digits(&format!("{:.800e}", value.abs())) != significant_digits(text));
    (!value.is_infinite() && !underflow).then_some(value)
}

/// The significant digits of a decimal number (no leading or trailing zeros; empty for zero)
/// and the power of ten of the last one.
fn significant_digits(text: &str) -> (std::string::String, i64) {
    let unsigned = text.trim_start_matches(['+', '-']);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i64>().unwrap_or(i64::MAX)),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let trimmed = digits.trim_end_matches('0');
    let exponent = exponent
        .saturating_sub(fraction.len() as i64)
        .saturating_add((digits.len() - trimmed.len()) as i64);
    (trimmed.trim_start_matches('0').to_owned(), exponent)
}

/// Appends `code_point` (at most U+10FFFF, never a surrogate) as UTF-8.
fn push_utf8(out: &mut Vec<u8>, code_point: u32) {
    let mut buffer = [0u8; 4];
    match char::from_u32(code_point) {
        Some(c) => out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes()),
        None => out.extend_from_slice("\u{fffd}".as_bytes()),
    }
}

struct Writer {
    out: Vec<u8>,
    indent: i32,
    total_indent: i32,
    /// How many containers enclose the current position.
    depth: usize,
    /// The Lists being written (one met again inside itself is a cycle).
    active_lists: Vec<usize>,
}

impl Writer {
    fn value(&mut self, value: &AnyView<'_>) -> Result<()> {
        match TVMFFITypeIndex(value.type_index()) {
            TVMFFITypeIndex::NONE => self.out.extend_from_slice(b"null"),
            TVMFFITypeIndex::BOOL => {
                let text: &[u8] = if value.get::<bool>()? {
                    b"true"
                } else {
                    b"false"
                };
                self.out.extend_from_slice(text);
            }
            TVMFFITypeIndex::INT => self
                .out
                .extend_from_slice(value.get::<i64>()?.to_string().as_bytes()),
            TVMFFITypeIndex::FLOAT => self
                .out
                .extend_from_slice(format_json_float(value.get::<f64>()?).as_bytes()),
            TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                escape_into(
                    &mut self.out,
                    pactum_core::internal::view_bytes(value).unwrap_or(&[]),
                );
            }
            TVMFFITypeIndex::ARRAY => {
                let array = value.get::<Array>()?;
                self.sequence(array.as_slice())?;
            }
            TVMFFITypeIndex::LIST => {
                let list = value.get::<List>()?;
                let address = list.as_object_ref().as_raw() as usize;
                if self.active_lists.contains(&address) {
                    return Err(Error::new(
                        ErrorKind::VALUE_ERROR,
                        "Cycle detected: List contains itself",
                    ));
                }
                self.active_lists.push(address);
                self.sequence(&list.to_vec())?;
                self.active_lists.pop();
            }
            TVMFFITypeIndex::MAP => self.object(&value.get::<Map>()?)?,
            _ => {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("Unsupported type: `{}`", value.type_key()),
                ));
            }
        }
        Ok(())
    }

    /// Enters one level of nesting, refusing more than [`MAX_DEPTH`].
    fn open(&mut self, bracket: u8) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("Nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        self.out.push(bracket);
        self.total_indent = self.total_indent.wrapping_add(self.indent);
        Ok(())
    }

    fn close(&mut self, bracket: u8) {
        self.depth -= 1;
        self.total_indent = self.total_indent.wrapping_sub(self.indent);
        self.newline();
        self.out.push(bracket);
    }

    fn newline(&mut self) {
        if self.indent != 0 {
            self.out.push(b'\n');
            let spaces = usize::try_from(self.total_indent).unwrap_or(0);
            self.out.resize(self.out.len() + spaces, b' ');
        }
    }

    fn sequence(&mut self, items: &[Any]) -> Result<()> {
        self.open(b'[')?;
        for (i, item) in items.iter().enumerate() {
            if i != 0 {
                self.out.push(b',');
            }
            self.newline();
            self.value(item.as_view())?;
        }
        self.close(b']');
        Ok(())
    }

    fn object(&mut self, map: &Map) -> Result<()> {
        self.open(b'{')?;
        for (i, (key, value)) in map.iter().enumerate() {
            if i != 0 {
                self.out.push(b',');
            }
            self.newline();
            match TVMFFITypeIndex(key.type_index()) {
                TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                    escape_into(
                        &mut self.out,
                        pactum_core::internal::view_bytes(key.as_view()).unwrap_or(&[]),
                    );
                }
                _ => {
                    return Err(Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!("Expect key to be string, got `{}`", key.type_key()),
                    ));
                }
            }
            self.out.push(b':');
            if self.indent != 0 {
                self.out.push(b' ');
            }
            self.value(value.as_view())?;
        }
        self.close(b'}');
        Ok(())
    }
}

/// A float as the official writer prints it: `NaN`, `Infinity`, `-Infinity`, integral values
/// below 2^53 in magnitude with one decimal (`1.0`, `-0.0`), any other as `%.17g`.
fn format_json_float(value: f64) -> std::string::String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value < 0.0 { "-Infinity" } else { "Infinity" }.to_owned()
    } else if value.abs() < 9_007_199_254_740_992.0 && value.fract() == 0.0 {
        format!("{value:.1}")
    } else {
        format_general(value, 17)
    }
}

/// `bytes` as a quoted JSON string: `"`, `\` and `/` escaped with a backslash, `\b`, `\f`,
/// `\n`, `\r`, `\t`, other control bytes and DEL as `\u00XX`; all other bytes as they are.
fn escape_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &byte in bytes {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::{MAX_DEPTH, format_json_float, parse, stringify};
    use pactum_core::any::Any;
    use pactum_core::containers::{Array, Dict, List, Map};
    use pactum_sys::tvm_ffi::TVMFFITypeIndex;

    fn error(text: &str) -> std::string::String {
        parse(text.as_bytes()).unwrap_err().message().into_owned()
    }

    fn text(value: Any, indent: i32) -> std::string::String {
        let out = stringify(value.as_view(), indent).unwrap();
        out.get::<std::string::String>().unwrap()
    }

    #[test]
    fn malformed_documents_name_line_column_and_byte_offset() {
        for (input, message) in [
            ("", "Expecting value: line 1 column 1 (char 0)"),
            (
                "[1,\n  2,\n  ]",
                "Expecting value: line 3 column 3 (char 11)",
            ),
            ("[1,", "Syntax error near: line 1 column 4 (char 3)"),
            ("{\"a\":1,", "Syntax error near: line 1 column 8 (char 7)"),
            (
                "{\"a\" 1}",
                "Expecting ':' delimiter: line 1 column 6 (char 5)",
            ),
            ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
            (
                "{,}",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            ("1 2", "Extra data: line 1 column 3 (char 2)"),
            ("nul", "Expecting value: line 1 column 1 (char 0)"),
            ("-Inf", "Expecting value: line 1 column 1 (char 0)"),
            (
                "\"abc",
                "Unterminated string starting at: line 1 column 1 (char 0)",
            ),
            ("\"a\\", "Invalid \\escape: line 1 column 4 (char 3)"),
            (
                "\"a\tb\"",
                "Invalid control character at: line 1 column 3 (char 2)",
            ),
            (
                "\"\\u12\"",
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            (
                "\"\\udc00\"",
                "Invalid surrogate pair of \\uXXXX escapes: line 1 column 3 (char 2)",
            ),
            (
                "\"\\ud800\\u0041\"",
                "Invalid surrogate pair of \\uXXXX escapes: line 1 column 10 (char 9)",
            ),
            (
                "\"\\ud800\\u00\"",
                "Invalid \\uXXXX escape: line 1 column 10 (char 9)",
            ),
        ] {
            assert_eq!(error(input), message, "{input:?}");
        }
        assert_eq!(
            parse(b"\"a\xff").unwrap_err().message(),
            "Unterminated string starting at: line 1 column 1 (char 0)"
        );
    }

    #[test]
    fn numbers_are_ints_when_they_fit_and_finite_doubles_otherwise() {
        let int = |text: &str| parse(text.as_bytes()).unwrap().get::<i64>().unwrap();
        let float = |text: &str| {
            let value = parse(text.as_bytes()).unwrap();
            assert_eq!(value.type_index(), TVMFFITypeIndex::FLOAT.0, "{text}");
            value.get::<f64>().unwrap()
        };
        assert_eq!(int("+7"), 7);
        assert_eq!(int("007"), 7);
        assert_eq!(int("-9223372036854775808"), i64::MIN);
        assert_eq!(float("9223372036854775808"), 9.223372036854776e18);
        assert_eq!(float(".5"), 0.5);
        assert_eq!(float("5."), 5.0);
        assert_eq!(float("1e2"), 100.0);
        assert_eq!(float("0e-999"), 0.0);
        assert_eq!(float("2.2250738585072014e-308"), f64::MIN_POSITIVE);
        assert!(float("NaN").is_nan());
        assert_eq!(float("-Infinity"), f64::NEG_INFINITY);
        for overflowing in [
            "1e309", "-1e309", "1e-400", "5e-324", "1.5e", "1e5.5", "--1", ".",
        ] {
            assert_eq!(
                error(overflowing),
                "Expecting value: line 1 column 1 (char 0)",
                "{overflowing}"
            );
        }
    }

    #[test]
    fn strings_unescape_and_keep_the_official_storage() {
        let short = parse(b"\"abc\"").unwrap();
        assert_eq!(short.type_index(), TVMFFITypeIndex::SMALL_STR.0);
        let escaped = parse(b"\"\\u00e9\\ud83d\\ude00\\/\\b\"").unwrap();
        assert_eq!(escaped.type_index(), TVMFFITypeIndex::STR.0);
        assert_eq!(
            escaped.get::<std::string::String>().unwrap(),
            "\u{e9}\u{1f600}/\u{8}"
        );
        let raw = parse(b"\"\xff\xfe\"").unwrap();
        assert_eq!(
            pactum_core::internal::view_bytes(raw.as_view()).unwrap(),
            b"\xff\xfe"
        );
    }

    #[test]
    fn containers_parse_to_maps_and_arrays() {
        let value = parse(b"{\"a\": [1, {\"b\": null}], \"a\": true, \"c\": []}").unwrap();
        let map = value.get::<Map>().unwrap();
        assert_eq!(map.len(), 2);
        assert!(
            map.get(Any::from("a").as_view())
                .unwrap()
                .get::<bool>()
                .unwrap()
        );
        let empty = map.get(Any::from("c").as_view()).unwrap();
        assert_eq!(empty.get::<Array>().unwrap().len(), 0);
    }

    #[test]
    fn nesting_is_capped() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(ok.as_bytes()).is_ok());
        assert_eq!(
            error(&"[".repeat(100_000)),
            "Nesting deeper than 1000 levels at: line 1 column 1001 (char 1000)"
        );
        let mut deep = Any::from(Array::new([]));
        for _ in 0..MAX_DEPTH {
            deep = Any::from(Array::new([deep]));
        }
        let failure = stringify(deep.as_view(), 0).unwrap_err();
        assert_eq!(failure.message(), "Nesting deeper than 1000 levels");
    }

    #[test]
    fn floats_print_as_the_official_writer_prints_them() {
        for (value, printed) in [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.10000000000000001"),
            (1e-7, "9.9999999999999995e-08"),
            (1e16, "10000000000000000"),
            (1e20, "1e+20"),
            (9007199254740991.0, "9007199254740991.0"),
            (9007199254740992.0, "9007199254740992"),
            (123456789.123, "123456789.123"),
            // An exact tie at the 18th digit rounds to even, as glibc does.
            (4_000_000_000_000_001.0 / 4.0, "1000000000000000.2"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(format_json_float(value), printed, "{value}");
        }
    }

    #[test]
    fn writer_text_escapes_indent_and_errors() {
        let map = Map::from_pairs([
            (
                Any::from("a/\"\u{7f}"),
                Any::from(Array::new([Any::from(1i64)])),
            ),
            (Any::from("b"), Any::default()),
        ]);
        assert_eq!(
            text(Any::from(map.clone()), 0),
            r#"{"a\/\"\u007f":[1],"b":null}"#
        );
        assert_eq!(
            text(Any::from(map), 2),
            "{\n  \"a\\/\\\"\\u007f\": [\n    1\n  ],\n  \"b\": null\n}"
        );
        let list = List::new();
        list.push(Any::from(list.clone()));
        let cycle = stringify(Any::from(list).as_view(), 0).unwrap_err();
        assert_eq!(cycle.message(), "Cycle detected: List contains itself");
        let dict = stringify(Any::from(Dict::new()).as_view(), 0).unwrap_err();
        assert_eq!(dict.message(), "Unsupported type: `ffi.Dict`");
        let key = Map::from_pairs([(Any::from(1i64), Any::from(2i64))]);
        let key = stringify(Any::from(key).as_view(), 0).unwrap_err();
        assert_eq!(key.message(), "Expect key to be string, got `int`");
    }
}
