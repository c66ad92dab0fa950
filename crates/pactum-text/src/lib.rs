//! The text cursor and the parse-error type every hand-written parser of pactum shares: MLIR
//! signatures, IREE signature texts (`iree.abi.declaration`, raw and SIP signatures) and
//! `.npy` headers.
//!
//! A [`Cursor`] walks a `&str` by byte offset. Its errors are [`ParseError`]s that name the
//! format, the byte offset and what was expected there, so every parser reports a malformed
//! input the same way: `MLIR type: at byte 7: expected '>', found "x"`.
//!
//! ```
//! use pactum_text::{Cursor, ParseError};
//!
//! fn pair(text: &str) -> Result<(u64, u64), ParseError> {
//!     let mut cursor = Cursor::new(text, "pair")?;
//!     cursor.expect("(", "'('")?;
//!     let a = cursor.decimal("a number")?;
//!     cursor.skip_spaces();
//!     cursor.expect(",", "','")?;
//!     cursor.skip_spaces();
//!     let b = cursor.decimal("a number")?;
//!     cursor.expect(")", "')'")?;
//!     cursor.expect_end()?;
//!     Ok((a, b))
//! }
//!
//! assert_eq!(pair("(1, 2)")?, (1, 2));
//! let error = pair("(1; 2)").unwrap_err();
//! assert_eq!(error.offset, 2);
//! assert_eq!(error.to_string(), r#"pair: at byte 2: expected ',', found "; 2)""#);
//! # Ok::<(), ParseError>(())
//! ```

use std::fmt;

/// The longest input a [`Cursor`] accepts by default (1 MiB): no signature or header pactum
/// reads is anywhere near it, and the bound keeps every parser's time and memory small.
pub const DEFAULT_MAX_INPUT_LEN: usize = 1 << 20;

/// Malformed text: the format, where it went wrong (a byte offset into the input) and what was
/// expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The format being parsed (`iree.abi JSON`, `raw signature`, `MLIR type`, `.npy header`).
    pub format: &'static str,
    /// The byte offset into the input where the problem was found.
    pub offset: usize,
    /// What was expected there, or what rule the text breaks.
    pub message: String,
}

impl ParseError {
    /// An error in `format` at byte `offset`.
    #[inline]
    pub fn new(format: &'static str, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            format,
            offset,
            message: message.into(),
        }
    }

    /// The same error, its offset moved by `base` (for a parser that read a slice of a larger
    /// input and reports offsets into the whole).
    pub fn shifted(mut self, base: usize) -> ParseError {
        self.offset = self.offset.saturating_add(base);
        self
    }
}

/// `raw signature: at byte 7: expected '!' after the span length 4`.
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: at byte {}: {}",
            self.format, self.offset, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// A position in a text being parsed, and the helpers every pactum parser needs around it.
///
/// Offsets are byte offsets into the whole text. Every method that moves the cursor moves it
/// forward, so a loop that calls one per iteration and stops when it does not move terminates.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    format: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `text`; texts over [`DEFAULT_MAX_INPUT_LEN`] bytes are refused.
    #[inline]
    pub fn new(text: &'a str, format: &'static str) -> Result<Cursor<'a>, ParseError> {
        Cursor::with_limit(text, format, DEFAULT_MAX_INPUT_LEN)
    }

    /// A cursor at the start of `text`, refusing texts over `max_len` bytes.
    #[inline]
    pub fn with_limit(
        text: &'a str,
        format: &'static str,
        max_len: usize,
    ) -> Result<Cursor<'a>, ParseError> {
        if text.len() > max_len {
            return Err(ParseError::new(
                format,
                0,
                format!(
                    "the input is {} bytes long; at most {max_len} bytes are accepted",
                    text.len()
                ),
            ));
        }
        Ok(Cursor {
            text,
            pos: 0,
            format,
        })
    }

    /// A cursor at the start of `text`, whatever its length: for a parser whose time and
    /// memory are bounded some other way (a linear walk with bounded nesting), or that reads
    /// a slice of an input already accepted.
    #[inline]
    pub fn unbounded(text: &'a str, format: &'static str) -> Cursor<'a> {
        Cursor {
            text,
            pos: 0,
            format,
        }
    }

    /// The whole text.
    #[inline]
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The text's bytes.
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The format named in errors.
    #[inline]
    pub fn format(&self) -> &'static str {
        self.format
    }

    /// The byte offset of the cursor.
    #[inline]
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Moves the cursor to `offset` (clamped to the end; moved back to a character boundary).
    #[inline]
    pub fn set_offset(&mut self, offset: usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        self.pos = offset;
    }

    /// The text from the cursor on.
    #[inline]
    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// The byte at the cursor.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    /// The byte `ahead` bytes past the cursor.
    #[inline]
    pub fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes().get(self.pos.checked_add(ahead)?).copied()
    }

    /// Whether the cursor is at the end of the text.
    #[inline]
    pub fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    /// Whether the text at the cursor starts with `literal`.
    #[inline]
    pub fn starts_with(&self, literal: &str) -> bool {
        self.rest().starts_with(literal)
    }

    /// Moves past `literal` if the text at the cursor starts with it.
    #[inline]
    pub fn eat(&mut self, literal: &str) -> bool {
        if self.starts_with(literal) {
            self.pos += literal.len();
            true
        } else {
            false
        }
    }

    /// Moves past one byte if it is `byte`.
    #[inline]
    pub fn eat_byte(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Moves past `literal`, or fails with `expected {what}, found ...`.
    #[inline]
    pub fn expect(&mut self, literal: &str, what: &str) -> Result<(), ParseError> {
        if self.eat(literal) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Fails with `expected the end of the text, found ...` unless the cursor is at the end.
    #[inline]
    pub fn expect_end(&self) -> Result<(), ParseError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.expected("the end of the text"))
        }
    }

    /// Moves `len` bytes forward (clamped to the end; moved back to a character boundary).
    #[inline]
    pub fn advance(&mut self, len: usize) {
        self.set_offset(self.pos.saturating_add(len));
    }

    /// The longest run of bytes at the cursor that satisfy `accept`, moving past it. Stops at
    /// a character boundary whatever `accept` says of a non-ASCII byte.
    #[inline]
    pub fn take_while(&mut self, mut accept: impl FnMut(u8) -> bool) -> &'a str {
        let start = self.pos;
        let len = self.rest().bytes().take_while(|&b| accept(b)).count();
        self.advance(len);
        &self.text[start..self.pos]
    }

    /// Skips spaces, tabs, carriage returns and newlines.
    #[inline]
    pub fn skip_spaces(&mut self) {
        self.take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    }

    /// Skips whitespace and comments that start with `comment` and run to the end of the line.
    #[inline]
    pub fn skip_spaces_and_comments(&mut self, comment: &str) {
        loop {
            self.skip_spaces();
            if !comment.is_empty() && self.starts_with(comment) {
                let line = self
                    .rest()
                    .find('\n')
                    .map_or(self.rest().len(), |end| end + 1);
                self.pos += line;
            } else {
                return;
            }
        }
    }

    /// An unsigned decimal integer at the cursor (`what` names it in messages); an overflow of
    /// `u64` is an error at its first digit.
    #[inline]
    pub fn decimal(&mut self, what: &str) -> Result<u64, ParseError> {
        let start = self.pos;
        let digits = self.take_while(|b| b.is_ascii_digit());
        if digits.is_empty() {
            return Err(self.expected(what));
        }
        digits
            .parse::<u64>()
            .map_err(|_| self.error_at(start, format!("{what} {digits} is too large")))
    }

    /// What is at the cursor, for messages: `the end of the text`, or up to 24 bytes of it,
    /// quoted.
    #[cold]
    pub fn found(&self) -> String {
        let rest = self.rest();
        if rest.is_empty() {
            return "the end of the text".to_string();
        }
        let mut cut = rest.len().min(24);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{:?}", &rest[..cut])
    }

    /// An error at the cursor.
    pub fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.pos, message)
    }

    /// An error at byte `offset` (clamped to the end of the text).
    pub fn error_at(&self, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(self.format, offset.min(self.text.len()), message)
    }

    /// `expected {what}, found ...` at the cursor.
    #[cold]
    pub fn expected(&self, what: &str) -> ParseError {
        self.error(format!("expected {what}, found {}", self.found()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_only_forward_and_reports_offsets() {
        let mut cursor = Cursor::new("  ab12 // note\n x", "t").unwrap();
        cursor.skip_spaces();
        assert_eq!(cursor.offset(), 2);
        assert_eq!(cursor.take_while(|b| b.is_ascii_alphabetic()), "ab");
        assert_eq!(cursor.decimal("n").unwrap(), 12);
        cursor.skip_spaces_and_comments("//");
        assert_eq!(cursor.rest(), "x");
        let error = cursor.expect("y", "'y'").unwrap_err();
        assert_eq!(error.offset, 16);
        assert_eq!(error.message, r#"expected 'y', found "x""#);
        assert!(cursor.eat_byte(b'x'));
        assert!(cursor.at_end());
        assert_eq!(
            cursor.expected("more").message,
            "expected more, found the end of the text"
        );
    }

    #[test]
    fn refuses_long_inputs_and_huge_numbers() {
        let error = Cursor::with_limit("abcdef", "t", 5).unwrap_err();
        assert_eq!(
            error.to_string(),
            "t: at byte 0: the input is 6 bytes long; at most 5 bytes are accepted"
        );
        let long = " ".repeat(DEFAULT_MAX_INPUT_LEN + 1);
        assert!(Cursor::new(&long, "t").is_err());
        let mut cursor = Cursor::unbounded(&long, "t");
        cursor.skip_spaces();
        assert!(cursor.at_end());
        let mut cursor = Cursor::new("x99999999999999999999999", "t").unwrap();
        cursor.advance(1);
        let error = cursor.decimal("a size").unwrap_err();
        assert_eq!(error.offset, 1);
        assert!(error.message.contains("too large"), "{error}");
    }

    #[test]
    fn never_splits_a_character() {
        let mut cursor = Cursor::new("é!", "t").unwrap();
        cursor.advance(1);
        assert_eq!(cursor.offset(), 0);
        assert_eq!(cursor.take_while(|_| true), "é!");
        let mut cursor = Cursor::new("ééééééééééééééééééééééééé", "t").unwrap();
        assert!(cursor.found().ends_with("é\""));
        cursor.set_offset(3);
        assert_eq!(cursor.offset(), 2);
        assert_eq!(ParseError::new("t", 3, "m").shifted(4).offset, 7);
    }
}
