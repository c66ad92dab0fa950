//! The tagged-component layer shared by the legacy raw and SIP signatures.
//!
//! A legacy signature is a run of components, each a one-byte tag followed by its data:
//!
//! - an **integer** component: tag `_` or `a`–`z`, an optional `-`, then decimal digits that
//!   fit an `i32` (leading zeros allowed): `_5`, `d-1`, `k007`;
//! - a **span** component: tag `A`–`Z`, a decimal length `L` (at least 1, no sign), then `L`
//!   bytes that start with `!`; the contents are the `L - 1` bytes after the `!`:
//!   `A7!foobar`. Nesting is a span whose contents are themselves components: `X3!_6`.
//!
//! [`Lexer`] splits text into [`Component`]s; [`SignatureWriter`] writes them.
//!
//! ```
//! use pactum_iree::signature::lexer::{ComponentValue, Lexer, SignatureWriter};
//!
//! let mut inner = SignatureWriter::new();
//! inner.integer(b'_', 6);
//! let mut outer = SignatureWriter::new();
//! outer.integer(b'_', 5).span(b'X', inner.as_str());
//! assert_eq!(outer.as_str(), "_5X3!_6");
//!
//! let components: Vec<_> = Lexer::new(outer.as_str().as_bytes()).collect::<Result<_, _>>()?;
//! assert_eq!(components[0].value, ComponentValue::Integer(5));
//! assert_eq!(components[1].tag, b'X');
//! let nested = components[1].nested_lexer().unwrap();
//! assert_eq!(nested.collect::<Result<Vec<_>, _>>()?[0].offset, 5);
//! # Ok::<(), pactum_iree::signature::ParseError>(())
//! ```

use std::fmt;
use std::iter::FusedIterator;

use super::ParseError;

/// The format name a [`Lexer`] puts in its errors unless told otherwise.
pub const DEFAULT_FORMAT: &str = "signature component";

/// What a component carries after its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComponentValue<'a> {
    /// The value of an integer component (tag `_` or `a`–`z`).
    Integer(i32),
    /// The contents of a span component (tag `A`–`Z`): the bytes after the `!`.
    Span {
        /// The contents, without the `!`.
        contents: &'a [u8],
        /// The absolute byte offset of the first content byte in the original input.
        contents_offset: usize,
    },
}

/// One tagged component of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Component<'a> {
    /// The tag byte: `_` or `a`–`z` for integers, `A`–`Z` for spans.
    pub tag: u8,
    /// The absolute byte offset of the tag in the original input.
    pub offset: usize,
    /// The integer value or the span contents.
    pub value: ComponentValue<'a>,
}

impl<'a> Component<'a> {
    /// The value, when this is an integer component.
    pub fn integer(&self) -> Option<i32> {
        match self.value {
            ComponentValue::Integer(value) => Some(value),
            ComponentValue::Span { .. } => None,
        }
    }

    /// The contents, when this is a span component.
    pub fn span_contents(&self) -> Option<&'a [u8]> {
        match self.value {
            ComponentValue::Span { contents, .. } => Some(contents),
            ComponentValue::Integer(_) => None,
        }
    }

    /// A lexer over the contents of a span component (offsets stay absolute), or `None` for
    /// an integer component.
    pub fn nested_lexer(&self) -> Option<Lexer<'a>> {
        match self.value {
            ComponentValue::Span {
                contents,
                contents_offset,
            } => Some(Lexer::nested(contents, contents_offset)),
            ComponentValue::Integer(_) => None,
        }
    }
}

/// Splits signature text into [`Component`]s.
///
/// Yields `Ok(component)` for each well-formed component, then stops at the end of the input
/// or after yielding one `Err`: a malformed component ends the walk, because nothing after it
/// can be located reliably. Every error names the absolute byte offset of the problem.
#[derive(Clone, Debug)]
pub struct Lexer<'a> {
    input: &'a [u8],
    /// Absolute offset of `input[0]` in the original text, so nested lexers report positions
    /// in the text the user gave.
    base_offset: usize,
    position: usize,
    format: &'static str,
    /// Whether `input` is a span's contents, to word "end of the input" precisely.
    within_span: bool,
    fused: bool,
}

impl<'a> Lexer<'a> {
    /// A lexer over a whole signature.
    pub fn new(input: &'a [u8]) -> Lexer<'a> {
        Lexer {
            within_span: false,
            ..Lexer::nested(input, 0)
        }
    }

    /// A lexer over `contents`, which start at absolute byte `contents_offset` of the
    /// original input (for span contents).
    pub fn nested(contents: &'a [u8], contents_offset: usize) -> Lexer<'a> {
        Lexer {
            input: contents,
            base_offset: contents_offset,
            position: 0,
            format: DEFAULT_FORMAT,
            within_span: true,
            fused: false,
        }
    }

    /// The same lexer, naming `format` in its errors.
    pub fn with_format(mut self, format: &'static str) -> Lexer<'a> {
        self.format = format;
        self
    }

    /// The absolute byte offset of the next component (or of the end).
    pub fn offset(&self) -> usize {
        self.base_offset + self.position
    }

    /// The absolute byte offset just past the end of this lexer's input.
    pub fn end_offset(&self) -> usize {
        self.base_offset + self.input.len()
    }

    /// Whether all input has been consumed.
    pub fn is_at_end(&self) -> bool {
        self.position >= self.input.len()
    }

    /// The byte at the next component's start: its tag, even when the component turns out
    /// to be malformed.
    pub fn peek_tag(&self) -> Option<u8> {
        self.input.get(self.position).copied()
    }

    fn end_name(&self) -> &'static str {
        if self.within_span {
            "the end of the enclosing span"
        } else {
            "the end of the input"
        }
    }

    fn error(&mut self, relative: usize, message: String) -> ParseError {
        self.fused = true;
        ParseError::new(self.format, self.base_offset + relative, message)
    }

    /// Scans `-`? digits starting at `start`; returns (negative, digits range end, value if
    /// it fits an i32). The value is accumulated in i64 and stops growing once out of range,
    /// so long digit runs cannot overflow.
    fn scan_number(&self, start: usize) -> (bool, usize, usize, Option<i32>) {
        let negative = self.input.get(start) == Some(&b'-');
        let digits_start = start + usize::from(negative);
        let mut end = digits_start;
        let mut magnitude: i64 = 0;
        let mut in_range = true;
        while let Some(&byte) = self.input.get(end) {
            if !byte.is_ascii_digit() {
                break;
            }
            if in_range {
                magnitude = magnitude * 10 + i64::from(byte - b'0');
                // i32::MIN's magnitude is one more than i32::MAX's.
                in_range = magnitude <= i64::from(i32::MAX) + i64::from(negative);
            }
            end += 1;
        }
        let value = if in_range && end > digits_start {
            let signed = if negative { -magnitude } else { magnitude };
            i32::try_from(signed).ok()
        } else {
            None
        };
        (negative, digits_start, end, value)
    }

    fn next_component(&mut self) -> Result<Component<'a>, ParseError> {
        let start = self.position;
        let tag = self.input[start];
        let is_integer_tag = tag == b'_' || tag.is_ascii_lowercase();
        let is_span_tag = tag.is_ascii_uppercase();
        if !is_integer_tag && !is_span_tag {
            return Err(self.error(
                start,
                format!(
                    "unexpected {} where a component tag was expected ('_' or 'a'-'z' for an \
                     integer, 'A'-'Z' for a span)",
                    describe_byte(tag)
                ),
            ));
        }
        let (negative, digits_start, digits_end, value) = self.scan_number(start + 1);
        if digits_end == digits_start {
            let what = if is_integer_tag {
                "integer value"
            } else {
                "span length"
            };
            let found = match self.input.get(digits_start) {
                Some(&byte) => describe_byte(byte),
                None => self.end_name().to_string(),
            };
            return Err(self.error(
                digits_start,
                format!(
                    "expected the decimal digits of the {what} after tag '{}', found {found}",
                    tag as char
                ),
            ));
        }
        let number_text = || abbreviate(&self.input[start + 1..digits_end]);
        if is_integer_tag {
            let Some(value) = value else {
                let message = format!(
                    "integer {} after tag '{}' does not fit in 32 bits",
                    number_text(),
                    tag as char
                );
                return Err(self.error(start + 1, message));
            };
            self.position = digits_end;
            return Ok(Component {
                tag,
                offset: self.base_offset + start,
                value: ComponentValue::Integer(value),
            });
        }
        if negative {
            let message = format!(
                "span length {} after tag '{}' is negative; it must be at least 1",
                number_text(),
                tag as char
            );
            return Err(self.error(start + 1, message));
        }
        let Some(length) = value else {
            let message = format!(
                "span length {} after tag '{}' does not fit in 32 bits",
                number_text(),
                tag as char
            );
            return Err(self.error(start + 1, message));
        };
        if length == 0 {
            return Err(self.error(
                start + 1,
                format!(
                    "span length after tag '{}' is 0; it counts the '!' too, so it is at least 1",
                    tag as char
                ),
            ));
        }
        let length = length as usize;
        let available = self.input.len() - digits_end;
        if length > available {
            let message = format!(
                "span '{}' of length {length} runs past {}: only {available} bytes follow the \
                 length ({} is at byte {})",
                tag as char,
                self.end_name(),
                self.end_name(),
                self.end_offset()
            );
            return Err(self.error(digits_end, message));
        }
        if self.input[digits_end] != b'!' {
            let message = format!(
                "expected '!' after the span length {length}, found {}",
                describe_byte(self.input[digits_end])
            );
            return Err(self.error(digits_end, message));
        }
        let contents_start = digits_end + 1;
        let contents_end = digits_end + length;
        self.position = contents_end;
        Ok(Component {
            tag,
            offset: self.base_offset + start,
            value: ComponentValue::Span {
                contents: &self.input[contents_start..contents_end],
                contents_offset: self.base_offset + contents_start,
            },
        })
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Result<Component<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.fused || self.is_at_end() {
            return None;
        }
        Some(self.next_component())
    }
}

impl FusedIterator for Lexer<'_> {}

/// Finds the top-level span tagged `tag` the way IREE's `SeekTag` did, for the lenient
/// parsers: components with other tags are skipped, and the first component whose tag byte
/// is `tag` counts as found. IREE looked at the tag before the component's validity, so a
/// malformed component with that tag counts as found with empty contents (`I1!R` has empty
/// results). Where IREE would loop forever (a malformed component with another tag before the
/// sought one), this stops with `not_found` and says why.
pub(crate) fn seek_span_like_iree<'a>(
    input: &'a [u8],
    tag: u8,
    format: &'static str,
    not_found: &str,
) -> Result<Lexer<'a>, ParseError> {
    let mut lexer = Lexer::new(input).with_format(format);
    loop {
        let start = lexer.offset();
        let start_tag = lexer.peek_tag();
        match lexer.next() {
            None => {
                return Err(ParseError::new(
                    format,
                    input.len(),
                    format!(
                        "{not_found}: no span tagged '{}' in the signature",
                        tag as char
                    ),
                ));
            }
            Some(Ok(component)) if component.tag == tag => {
                if let Some(nested) = component.nested_lexer() {
                    return Ok(nested.with_format(format));
                }
            }
            Some(Ok(_)) => {}
            Some(Err(_)) if start_tag == Some(tag) => {
                return Ok(Lexer::nested(&[], start + 1).with_format(format));
            }
            Some(Err(error)) => {
                return Err(ParseError::new(
                    format,
                    error.offset,
                    format!(
                        "{not_found}: the search for '{}' stopped at a malformed component \
                         ({}); IREE's parser would never finish on this input",
                        tag as char, error.message
                    ),
                ));
            }
        }
    }
}

/// Splits a signature into its inputs and results spans for the strict parsers: exactly an
/// `I` span, then an `R` span, then the end. Messages start with IREE's own wording
/// (`inputs_missing`, `results_missing`) where it has one.
pub(crate) fn split_function_strict<'a>(
    input: &'a [u8],
    format: &'static str,
    inputs_missing: &str,
    results_missing: &str,
) -> Result<(Lexer<'a>, Lexer<'a>), ParseError> {
    let mut lexer = Lexer::new(input).with_format(format);
    let mut expect_span = |tag: u8, missing: &str, what: &str| -> Result<Lexer<'a>, ParseError> {
        let start = lexer.offset();
        match lexer.next() {
            Some(Ok(component)) if component.tag == tag => {
                // Uppercase tags are always spans, so this is never `None`.
                component
                    .nested_lexer()
                    .map(|nested| nested.with_format(format))
                    .ok_or_else(|| {
                        ParseError::new(
                            format,
                            start,
                            format!("{missing}: '{}' is not a span", tag as char),
                        )
                    })
            }
            Some(Ok(component)) => Err(ParseError::new(
                format,
                start,
                format!(
                    "{missing}: expected the {what} span '{}' here, found a component tagged '{}'",
                    tag as char, component.tag as char
                ),
            )),
            Some(Err(error)) => Err(error),
            None => Err(ParseError::new(
                format,
                start,
                format!(
                    "{missing}: expected the {what} span '{}' here, found the end of the input",
                    tag as char
                ),
            )),
        }
    };
    let inputs = expect_span(b'I', inputs_missing, "inputs")?;
    let results = expect_span(b'R', results_missing, "results")?;
    let trailing = lexer.offset();
    if trailing < input.len() {
        let detail = match lexer.next() {
            Some(Err(error)) => format!(": {}", error.message),
            _ => String::new(),
        };
        return Err(ParseError::new(
            format,
            trailing,
            format!("unexpected bytes after the results span (IREE ignores them){detail}"),
        ));
    }
    Ok((inputs, results))
}

/// `'x'` for printable ASCII, `byte 0x01` otherwise.
pub(crate) fn describe_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("'{}'", byte as char)
    } else {
        format!("byte 0x{byte:02x}")
    }
}

/// Bytes as text for a message, cut short so a huge input cannot make a huge message.
pub(crate) fn abbreviate(bytes: &[u8]) -> String {
    const LIMIT: usize = 24;
    let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(LIMIT)]).into_owned();
    if bytes.len() > LIMIT {
        format!("{shown}...")
    } else {
        shown
    }
}

/// Writes signature components: the encoder matching [`Lexer`].
///
/// Nest by writing one writer's text as the contents of a span in another. Spans always get
/// the `!`, so their length is the content length plus one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignatureWriter {
    encoded: String,
}

impl SignatureWriter {
    /// An empty writer.
    pub fn new() -> SignatureWriter {
        SignatureWriter::default()
    }

    /// Appends an integer component: `tag` then the decimal value.
    ///
    /// # Panics
    ///
    /// If `tag` is not `_` or `a`–`z` (a bug in the caller: tags are constants).
    pub fn integer(&mut self, tag: u8, value: i32) -> &mut SignatureWriter {
        assert!(
            tag == b'_' || tag.is_ascii_lowercase(),
            "integer component tag must be '_' or 'a'-'z', got {}",
            describe_byte(tag)
        );
        self.encoded.push(tag as char);
        self.encoded.push_str(&value.to_string());
        self
    }

    /// Appends a span component: `tag`, `len(contents) + 1`, `!`, then `contents`.
    ///
    /// # Panics
    ///
    /// If `tag` is not `A`–`Z` (a bug in the caller: tags are constants).
    pub fn span(&mut self, tag: u8, contents: &str) -> &mut SignatureWriter {
        assert!(
            tag.is_ascii_uppercase(),
            "span component tag must be 'A'-'Z', got {}",
            describe_byte(tag)
        );
        self.encoded.push(tag as char);
        self.encoded.push_str(&(contents.len() + 1).to_string());
        self.encoded.push('!');
        self.encoded.push_str(contents);
        self
    }

    /// The text written so far.
    pub fn as_str(&self) -> &str {
        &self.encoded
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.encoded.is_empty()
    }

    /// The text written.
    pub fn into_string(self) -> String {
        self.encoded
    }
}

impl fmt::Display for SignatureWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(input: &str) -> Vec<Result<Component<'_>, ParseError>> {
        Lexer::new(input.as_bytes()).collect()
    }

    #[test]
    fn integers_and_spans() {
        let components = lex("_5a1z10x-5991A7!foobar");
        let values: Vec<_> = components
            .iter()
            .map(|c| c.as_ref().unwrap().value)
            .collect();
        assert_eq!(values[..4], [5, 1, 10, -5991].map(ComponentValue::Integer));
        assert_eq!(
            values[4],
            ComponentValue::Span {
                contents: b"foobar",
                contents_offset: 16
            }
        );
    }

    #[test]
    fn extreme_integers_and_leading_zeros() {
        let values: Vec<_> = lex("_-2147483648_2147483647_007_-0")
            .into_iter()
            .map(|c| c.unwrap().integer().unwrap())
            .collect();
        assert_eq!(values, [i32::MIN, i32::MAX, 7, 0]);
        assert!(lex("_-2147483649")[0].is_err());
        assert!(lex("_99999999999999999999999999")[0].is_err());
    }

    #[test]
    fn errors_name_the_offset_and_fuse_the_lexer() {
        let cases = [
            ("\u{1}1 ", 0, "unexpected byte 0x01"),
            ("_+12", 1, "expected the decimal digits"),
            ("_", 1, "found the end of the input"),
            ("Z-3abc", 1, "negative"),
            ("Z0!", 1, "is 0"),
            ("Z4abc", 2, "runs past the end"),
            ("Z2?x", 2, "expected '!'"),
            ("_2147483648", 1, "does not fit in 32 bits"),
            ("_1-", 2, "unexpected '-'"),
        ];
        for (input, offset, message) in cases {
            let components = lex(input);
            let error = components.last().unwrap().as_ref().unwrap_err();
            assert_eq!(error.offset, offset, "{input:?}: {error}");
            assert!(error.message.contains(message), "{input:?}: {error}");
            assert!(components[..components.len() - 1].iter().all(Result::is_ok));
        }
    }

    #[test]
    fn nested_lexers_report_absolute_offsets() {
        let outer = lex("_5X5!_6Q1");
        let span = outer[1].as_ref().unwrap();
        let inner: Vec<_> = span.nested_lexer().unwrap().with_format("test").collect();
        assert_eq!(inner[0].as_ref().unwrap().offset, 5);
        let error = inner[1].as_ref().unwrap_err();
        assert_eq!((error.format, error.offset), ("test", 9));
    }

    #[test]
    fn writer_escapes_every_span() {
        let mut writer = SignatureWriter::new();
        writer.span(b'A', "!2345").span(b'Z', "-23").span(b'E', "");
        assert_eq!(writer.as_str(), "A6!!2345Z4!-23E1!");
    }
}
