//! Reading MLIR types and function signatures from their textual form.
//!
//! [`MlirType::parse`] reads one type; [`FunctionType::parse`] reads a function's signature,
//! given either as a bare function type or as a `func.func` header (a declaration, or a whole
//! definition pasted from a `.mlir` file, whose body is skipped):
//!
//! ```
//! use pactum_mlir::{Dim, FunctionType, Layout, MemRefType, MlirType, ScalarType};
//!
//! let ty = MlirType::parse("memref<?x4xf32, strided<[?, 1], offset: ?>>")?;
//! assert_eq!(
//!     ty,
//!     MlirType::MemRef(MemRefType {
//!         shape: vec![Dim::Dynamic, Dim::Static(4)],
//!         element: ScalarType::F32,
//!         layout: Layout::Strided { strides: vec![Dim::Dynamic, Dim::Static(1)], offset: Dim::Dynamic },
//!     })
//! );
//! assert_eq!(ty.to_string(), "memref<?x4xf32, strided<[?, 1], offset: ?>>");
//!
//! let f: FunctionType = "func.func @add_one(%in: memref<?xf32>, %n: index) -> f32 \
//!                        attributes {llvm.emit_c_interface} { return }"
//!     .parse()?;
//! assert_eq!(f.name.as_deref(), Some("add_one"));
//! assert!(f.emit_c_interface);
//! assert_eq!(f.to_string(), "(memref<?xf32>, index) -> f32");
//!
//! let bare = FunctionType::parse("(i64, i64) -> (i64, i64)")?;
//! assert_eq!((bare.name, bare.args.len(), bare.results.len()), (None, 2, 2));
//! # Ok::<(), pactum_text::ParseError>(())
//! ```
//!
//! # Grammar
//!
//! Whitespace and `//` comments may appear between any two tokens.
//!
//! ```text
//! signature  := function-type | header
//! function-type := '(' types? ')' ( '->' results )?      // no '->': no results (lenient)
//! results    := type | '(' types? ')'
//! header     := ('func.func' | 'func') ('private' | 'public' | 'nested')? '@' name
//!               '(' args? ')' ( '->' header-results )?
//!               ( 'attributes' dict )? body? loc?
//! name       := bare-id | string-literal                  // @add_one, @"quoted name"
//! args       := arg (',' arg)*
//! arg        := ( '%' value-name ':' )? type dict? loc?   // named (definition) or not (declaration)
//! header-results := type | '(' ( type dict? (',' type dict?)* )? ')'
//! body       := '{' ... '}'                               // skipped, balanced, strings respected
//! type       := scalar | memref
//! scalar     := 'i'N | 'si'N | 'ui'N | 'index' | 'f16' | 'bf16' | 'f32' | 'f64'   // N in 1..=64
//! memref     := 'memref' '<' ( '*' 'x' scalar | (dim 'x')* scalar (',' layout)? ) (',' '0')? '>'
//! dim        := '?' | decimal integer (non-negative, fits i64)
//! layout     := 'strided' '<' '[' ( stride (',' stride)* )? ']' ( ',' 'offset' ':' offset )? '>'
//!             | 'affine_map' '<' '(' d0, d1, ... ')' ( '[' symbols ']' )? '->' '(' d0, d1, ... ')' '>'
//! ```
//!
//! Strides are `?` or any 64-bit integer; an offset is `?` or a non-negative integer, and an
//! omitted offset is 0 (both may be written in hexadecimal, `0x10`, as MLIR allows). The strided
//! layout must have one stride per dimension. An affine map layout must be the identity map of
//! the memref's rank (symbols, which it ignores, are allowed), and reads as
//! [`Layout::Identity`]: other maps are refused (write them as `strided<...>`), and so are
//! attribute aliases (`#map`), which a lone signature cannot resolve. A memory space other than
//! the default (`0` or `0 : i64`, which MLIR drops) is refused: pactum calls CPU code only.
//!
//! Where MLIR is stricter than needed, the parser is lenient: a function type may leave out
//! `-> ()`, header arguments may mix named and unnamed forms, integer widths and extents may
//! have leading zeros (`i08` is `i8`, as in MLIR), and attribute values are skipped unchecked.
//!
//! In a header, [`FunctionType::emit_c_interface`] is set when the `attributes` dictionary has
//! the key `llvm.emit_c_interface` with no value (or `= unit`), which is what makes MLIR emit the
//! `_mlir_ciface_<name>` wrapper; other entries are skipped. Argument and result attribute
//! dictionaries, `loc(...)` locations and the body are skipped. A bare function type has no name
//! and `emit_c_interface` false.
//!
//! Errors are [`ParseError`]s with the format [`TYPE_FORMAT`] or [`SIGNATURE_FORMAT`], the byte
//! offset of the problem (never past the end of the input) and what was expected there. Inputs
//! over [`MAX_INPUT_LEN`] bytes, memrefs of rank over [`MAX_RANK`] and brackets nested deeper
//! than [`MAX_NESTING`] levels are refused. The parser does not recurse.

use std::ops::{Deref, DerefMut};
use std::str::FromStr;

use super::types::{Dim, FunctionType, Layout, MemRefType, MlirType, ScalarType, Signedness};
use pactum_text::{Cursor, ParseError};

/// The format named in errors from [`MlirType::parse`].
pub const TYPE_FORMAT: &str = "MLIR type";

/// The format named in errors from [`FunctionType::parse`].
pub const SIGNATURE_FORMAT: &str = "MLIR function signature";

/// The longest input accepted, in bytes (1 MiB).
pub const MAX_INPUT_LEN: usize = pactum_text::DEFAULT_MAX_INPUT_LEN;

/// The highest memref rank accepted.
pub const MAX_RANK: usize = 64;

/// The deepest nesting of brackets accepted in skipped text (attributes, bodies, locations).
pub const MAX_NESTING: usize = 256;

/// The types a signature may use, for messages.
const SUPPORTED: &str = "iN, siN, uiN, index, f16, bf16, f32, f64, memref<...>";

/// The element types a memref may have, for messages.
const SUPPORTED_ELEMENTS: &str = "iN, siN, uiN, index, f16, bf16, f32, f64";

impl MlirType {
    /// Reads one type: a scalar (`i32`, `ui8`, `index`, `bf16`, ...), a ranked memref
    /// (`memref<4x?xf32>`, `memref<f32>`, `memref<?xf32, strided<[?], offset: ?>>`) or an
    /// unranked one (`memref<*xf32>`). See the [module documentation](self) for the grammar.
    ///
    /// ```
    /// use pactum_mlir::{MlirType, ScalarType, Signedness};
    ///
    /// let ty = MlirType::parse("ui8")?;
    /// assert_eq!(ty, MlirType::Scalar(ScalarType::Integer { width: 8, signedness: Signedness::Unsigned }));
    /// assert_eq!(MlirType::parse("memref<*xf64>")?, MlirType::UnrankedMemRef(ScalarType::F64));
    ///
    /// let error = MlirType::parse("memref<4xvector<4xf32>>").unwrap_err();
    /// assert_eq!(error.offset, 9);
    /// assert!(error.message.contains("unsupported memref element type 'vector<4xf32>'"));
    /// # Ok::<(), pactum_text::ParseError>(())
    /// ```
    pub fn parse(text: &str) -> Result<MlirType, ParseError> {
        let mut cursor = Parser::new(text, TYPE_FORMAT)?;
        cursor.ws();
        let ty = cursor.ty()?;
        cursor.ws();
        if !cursor.at_end() {
            return Err(cursor.expected("the end of the text after the type"));
        }
        Ok(ty)
    }
}

impl FromStr for MlirType {
    type Err = ParseError;

    /// [`MlirType::parse`].
    fn from_str(text: &str) -> Result<MlirType, ParseError> {
        MlirType::parse(text)
    }
}

impl FunctionType {
    /// Reads a function signature: a function type (`(memref<?xf32>, f32) -> f32`; without
    /// `-> ...` it has no results), or a `func.func` (or old-style `func`) declaration or
    /// definition header, from which the name and `llvm.emit_c_interface` are taken too. See
    /// the [module documentation](self) for the grammar.
    ///
    /// ```
    /// use pactum_mlir::{FunctionType, MlirType, ScalarType};
    ///
    /// let f = FunctionType::parse("func.func private @ext(memref<?xf32>, f32) -> f32")?;
    /// assert_eq!(f.name.as_deref(), Some("ext"));
    /// assert!(!f.emit_c_interface);
    /// assert_eq!(f.results, vec![MlirType::Scalar(ScalarType::F32)]);
    ///
    /// let error = FunctionType::parse("(f32 f32) -> ()").unwrap_err();
    /// assert_eq!(error.offset, 5);
    /// assert!(error.message.starts_with("expected ',' or ')' after an argument type"));
    /// # Ok::<(), pactum_text::ParseError>(())
    /// ```
    pub fn parse(text: &str) -> Result<FunctionType, ParseError> {
        let mut cursor = Parser::new(text, SIGNATURE_FORMAT)?;
        cursor.signature()
    }
}

impl FromStr for FunctionType {
    type Err = ParseError;

    /// [`FunctionType::parse`].
    fn from_str(text: &str) -> Result<FunctionType, ParseError> {
        FunctionType::parse(text)
    }
}

/// What a type keyword names.
enum Keyword {
    /// A supported scalar.
    Scalar(ScalarType),
    /// `iN`, `siN` or `uiN` with `N` outside 1..=64.
    BadWidth,
    /// Anything else.
    Other,
}

/// The scalar a keyword names: `i1`...`i64` (leading zeros allowed, as in MLIR), `si`/`ui`
/// likewise, `index`, `f16`, `bf16`, `f32`, `f64`.
fn keyword(name: &str) -> Keyword {
    let scalar = match name {
        "index" => ScalarType::Index,
        "f16" => ScalarType::F16,
        "bf16" => ScalarType::BF16,
        "f32" => ScalarType::F32,
        "f64" => ScalarType::F64,
        _ => {
            let (signedness, digits) = if let Some(digits) = name.strip_prefix("si") {
                (Signedness::Signed, digits)
            } else if let Some(digits) = name.strip_prefix("ui") {
                (Signedness::Unsigned, digits)
            } else if let Some(digits) = name.strip_prefix('i') {
                (Signedness::Signless, digits)
            } else {
                return Keyword::Other;
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Keyword::Other;
            }
            let significant = digits.trim_start_matches('0');
            match significant.parse::<u8>() {
                Ok(width @ 1..=64) if significant.len() <= 2 => {
                    ScalarType::Integer { width, signedness }
                }
                _ => return Keyword::BadWidth,
            }
        }
    };
    Keyword::Scalar(scalar)
}

/// Whether `byte` may continue a bare identifier (`[A-Za-z0-9_$.]`).
fn is_ident_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'$' | b'.')
}

/// The bare identifier (`[A-Za-z_][A-Za-z0-9_$.]*`) at `cursor`, moving past it; empty, without
/// moving, if there is none.
fn bare_ident<'a>(cursor: &mut Cursor<'a>) -> &'a str {
    match cursor.peek() {
        Some(first) if first.is_ascii_alphabetic() || first == b'_' => {
            cursor.take_while(is_ident_byte)
        }
        _ => "",
    }
}

/// The parser: a [`Cursor`] (reached through `Deref`) with MLIR's token rules on top.
struct Parser<'a> {
    cursor: Cursor<'a>,
}

impl<'a> Deref for Parser<'a> {
    type Target = Cursor<'a>;

    fn deref(&self) -> &Cursor<'a> {
        &self.cursor
    }
}

impl DerefMut for Parser<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.cursor
    }
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`, if it is not over [`MAX_INPUT_LEN`] bytes.
    fn new(text: &'a str, format: &'static str) -> Result<Parser<'a>, ParseError> {
        Ok(Parser {
            cursor: Cursor::with_limit(text, format, MAX_INPUT_LEN)?,
        })
    }

    /// Skips whitespace and `//` comments.
    fn ws(&mut self) {
        self.skip_spaces_and_comments("//");
    }

    /// The bare identifier (`[A-Za-z_][A-Za-z0-9_$.]*`) at the cursor, without moving.
    fn peek_ident(&self) -> &'a str {
        bare_ident(&mut self.cursor.clone())
    }

    /// The bare identifier at the cursor (empty if there is none), moving past it.
    fn ident(&mut self) -> &'a str {
        bare_ident(&mut self.cursor)
    }

    /// The type written at `start`, for messages: its keyword and a balanced `<...>` body
    /// when one follows, shortened if long.
    fn describe(&self, start: usize) -> String {
        let mut probe = self.cursor.clone();
        probe.set_offset(start);
        probe.eat_byte(b'!');
        probe.take_while(is_ident_byte);
        let mut end = probe.offset();
        let bytes = self.bytes();
        if probe.peek() == Some(b'<') {
            let mut depth = 0usize;
            let mut at = end;
            while let Some(&byte) = bytes.get(at) {
                match byte {
                    b'-' if bytes.get(at + 1) == Some(&b'>') => at += 1,
                    b'<' => depth += 1,
                    b'>' => {
                        depth -= 1;
                        if depth == 0 {
                            end = at + 1;
                            break;
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        let written = &self.text()[start..end];
        if written.len() <= 60 {
            return written.to_string();
        }
        let mut cut = 57;
        while !written.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &written[..cut])
    }

    /// A non-negative decimal integer at the cursor (`what` names it in messages).
    fn unsigned(&mut self, what: &str) -> Result<i64, ParseError> {
        let start = self.offset();
        let digits = self.take_while(|b| b.is_ascii_digit());
        if digits.is_empty() {
            return Err(self.expected(what));
        }
        digits.parse().map_err(|_| {
            self.error_at(
                start,
                format!("{what} does not fit in a 64-bit signed integer"),
            )
        })
    }

    /// `?` or an integer (decimal, or hexadecimal `0x...` as MLIR also reads in layouts),
    /// negative only if `signed`.
    fn dim(&mut self, what: &str, signed: bool) -> Result<Dim, ParseError> {
        if self.eat("?") {
            return Ok(Dim::Dynamic);
        }
        let start = self.offset();
        let negative = self.eat("-");
        if negative && !signed {
            return Err(self.error_at(start, format!("{what} must be non-negative or '?'")));
        }
        let hex = self.starts_with("0x") && self.peek_at(2).is_some_and(|b| b.is_ascii_hexdigit());
        let radix = if hex {
            self.advance(2);
            16
        } else {
            10
        };
        let body = self.take_while(|b| {
            if hex {
                b.is_ascii_hexdigit()
            } else {
                b.is_ascii_digit()
            }
        });
        if body.is_empty() {
            return Err(if negative {
                self.expected(&format!("digits after '-' in {what}"))
            } else {
                self.expected(&format!("{what} (an integer or '?')"))
            });
        }
        u64::from_str_radix(body, radix)
            .ok()
            .and_then(|magnitude| {
                let value = i128::from(magnitude);
                i64::try_from(if negative { -value } else { value }).ok()
            })
            .map(Dim::Static)
            .ok_or_else(|| {
                self.error_at(
                    start,
                    format!("{what} does not fit in a 64-bit signed integer"),
                )
            })
    }

    /// One type.
    fn ty(&mut self) -> Result<MlirType, ParseError> {
        let start = self.offset();
        let bang = self.eat("!");
        let name = self.ident();
        if name.is_empty() {
            self.set_offset(start);
            return Err(self.expected("a type"));
        }
        if !bang && name == "memref" {
            return self.memref();
        }
        self.scalar(start, name, bang, "unknown type", SUPPORTED)
            .map(MlirType::Scalar)
    }

    /// The scalar `name` (read from `start`, after a `!` if `bang`), or an error: a bad
    /// integer width, or `unknown` naming the text and what is `supported`.
    fn scalar(
        &self,
        start: usize,
        name: &str,
        bang: bool,
        unknown: &str,
        supported: &str,
    ) -> Result<ScalarType, ParseError> {
        match keyword(name) {
            Keyword::Scalar(scalar) if !bang => Ok(scalar),
            Keyword::BadWidth if !bang => Err(self.error_at(
                start,
                format!("unsupported integer width in '{name}': pactum supports 1..=64 bits"),
            )),
            _ => Err(self.error_at(
                start,
                format!(
                    "{unknown} '{}' (supported: {supported})",
                    self.describe(start)
                ),
            )),
        }
    }

    /// A memref's element type.
    fn element(&mut self) -> Result<ScalarType, ParseError> {
        let start = self.offset();
        let bang = self.eat("!");
        let name = self.ident();
        if name.is_empty() {
            self.set_offset(start);
            return Err(self.expected("a memref element type"));
        }
        self.scalar(
            start,
            name,
            bang,
            "unsupported memref element type",
            SUPPORTED_ELEMENTS,
        )
    }

    /// The rest of a memref type, after `memref`.
    fn memref(&mut self) -> Result<MlirType, ParseError> {
        self.ws();
        if !self.eat("<") {
            return Err(self.expected("'<' after 'memref'"));
        }
        self.ws();
        if self.eat("*") {
            self.ws();
            if !self.eat("x") {
                return Err(self.expected("'x' after '*' in an unranked memref"));
            }
            self.ws();
            let element = self.element()?;
            self.ws();
            if self.eat(",") {
                self.ws();
                self.memory_space()?;
                self.ws();
            }
            if !self.eat(">") {
                return Err(self.expected("'>' to close the memref type"));
            }
            return Ok(MlirType::UnrankedMemRef(element));
        }
        let mut shape = Vec::new();
        loop {
            self.ws();
            let start = self.offset();
            let dim = match self.peek() {
                Some(b'?') => {
                    self.advance(1);
                    Dim::Dynamic
                }
                Some(b'0'..=b'9') => Dim::Static(self.unsigned("a memref dimension")?),
                Some(b'-') => {
                    return Err(
                        self.error_at(start, "memref dimensions must be non-negative or '?'")
                    );
                }
                _ => break,
            };
            if shape.len() == MAX_RANK {
                return Err(self.error_at(
                    start,
                    format!("memrefs of rank over {MAX_RANK} are not supported"),
                ));
            }
            shape.push(dim);
            self.ws();
            if !self.eat("x") {
                return Err(self.expected("'x' after a memref dimension"));
            }
        }
        let element = self.element()?;
        let mut layout = Layout::Identity;
        self.ws();
        if self.eat(",") {
            self.ws();
            let start = self.offset();
            let had_layout = match self.peek_ident() {
                "strided" => {
                    self.advance("strided".len());
                    layout = self.strided(shape.len(), start)?;
                    true
                }
                "affine_map" => {
                    self.advance("affine_map".len());
                    self.affine_map(shape.len(), start)?;
                    true
                }
                _ => {
                    let alias = self.rest().strip_prefix('#').map_or("", |rest| {
                        let len = rest.bytes().take_while(|&b| is_ident_byte(b)).count();
                        &rest[..len]
                    });
                    if !alias.is_empty() && !alias.contains('.') {
                        return Err(self.error_at(
                            start,
                            format!(
                                "the attribute alias '#{alias}' cannot be resolved here; write \
                                 the layout inline as strided<[...], offset: ...>"
                            ),
                        ));
                    }
                    self.memory_space()?;
                    false
                }
            };
            self.ws();
            if had_layout && self.eat(",") {
                self.ws();
                self.memory_space()?;
                self.ws();
            }
        }
        if !self.eat(">") {
            return Err(self.expected("'>' to close the memref type"));
        }
        Ok(MlirType::MemRef(MemRefType {
            shape,
            element,
            layout,
        }))
    }

    /// A memory space: only the default, `0` (optionally `0 : iN`), is accepted.
    fn memory_space(&mut self) -> Result<(), ParseError> {
        let start = self.offset();
        let digits = self.take_while(|b| b.is_ascii_digit());
        if !digits.is_empty() && digits.bytes().all(|b| b == b'0') {
            let after = self.offset();
            self.ws();
            if self.eat(":") {
                self.ws();
                let ty_start = self.offset();
                let name = self.ident();
                if !matches!(keyword(name), Keyword::Scalar(ScalarType::Integer { .. }))
                    && name != "index"
                {
                    self.set_offset(ty_start);
                    return Err(self.expected("an integer type after ':' in the memory space"));
                }
            } else {
                self.set_offset(after);
            }
            return Ok(());
        }
        self.set_offset(start);
        if matches!(self.peek(), None | Some(b'>' | b',')) {
            return Err(self.expected("a layout (strided<...>) or a memory space after ','"));
        }
        Err(self.error_at(
            start,
            "memory spaces other than the default are not supported (CPU only)",
        ))
    }

    /// The rest of `strided<[...], offset: ...>` (after `strided`) for a memref of `rank`.
    fn strided(&mut self, rank: usize, start: usize) -> Result<Layout, ParseError> {
        self.ws();
        if !self.eat("<") {
            return Err(self.expected("'<' after 'strided'"));
        }
        self.ws();
        if !self.eat("[") {
            return Err(self.expected("'[' to start the strides"));
        }
        let mut strides = Vec::new();
        self.ws();
        if !self.eat("]") {
            loop {
                self.ws();
                let stride_start = self.offset();
                let stride = self.dim("a stride", true)?;
                if strides.len() == MAX_RANK {
                    return Err(self.error_at(
                        stride_start,
                        format!("strided layouts of over {MAX_RANK} strides are not supported"),
                    ));
                }
                strides.push(stride);
                self.ws();
                if self.eat(",") {
                    continue;
                }
                if self.eat("]") {
                    break;
                }
                return Err(self.expected("',' or ']' after a stride"));
            }
        }
        self.ws();
        let mut offset = Dim::Static(0);
        if self.eat(",") {
            self.ws();
            if self.peek_ident() != "offset" {
                return Err(self.expected("'offset' after ',' in a strided layout"));
            }
            self.advance("offset".len());
            self.ws();
            if !self.eat(":") {
                return Err(self.expected("':' after 'offset'"));
            }
            self.ws();
            offset = self.dim("a strided layout offset", false)?;
            self.ws();
        }
        if !self.eat(">") {
            return Err(self.expected("'>' to close the strided layout"));
        }
        if strides.len() != rank {
            return Err(self.error_at(
                start,
                format!(
                    "strided layout has {} stride(s) for a rank-{rank} memref",
                    strides.len()
                ),
            ));
        }
        Ok(Layout::Strided { strides, offset })
    }

    /// The rest of `affine_map<...>` (after `affine_map`), which must be the identity map of
    /// `rank` dimensions.
    fn affine_map(&mut self, rank: usize, start: usize) -> Result<(), ParseError> {
        let not_identity = |cursor: &Cursor<'_>| {
            cursor.error_at(
                start,
                "only identity affine maps (affine_map<(d0, d1) -> (d0, d1)>) are supported as \
                 memref layouts; write other layouts as strided<[...], offset: ...>",
            )
        };
        self.ws();
        if !self.eat("<") {
            return Err(self.expected("'<' after 'affine_map'"));
        }
        self.ws();
        if !self.eat("(") {
            return Err(not_identity(self));
        }
        let mut dims = Vec::new();
        self.ident_list(")", &mut dims)
            .map_err(|()| not_identity(self))?;
        self.ws();
        if self.eat("[") {
            // Symbols: an identity map ignores them.
            let mut symbols = Vec::new();
            self.ident_list("]", &mut symbols)
                .map_err(|()| not_identity(self))?;
            self.ws();
        }
        if !self.eat("->") {
            return Err(not_identity(self));
        }
        self.ws();
        if !self.eat("(") {
            return Err(not_identity(self));
        }
        let mut results = Vec::new();
        self.ident_list(")", &mut results)
            .map_err(|()| not_identity(self))?;
        self.ws();
        if !self.eat(">") {
            return Err(not_identity(self));
        }
        for (i, dim) in dims.iter().enumerate() {
            if dims[..i].contains(dim) {
                return Err(self.error_at(
                    start,
                    format!("the affine map repeats the dimension '{dim}'"),
                ));
            }
        }
        if dims != results {
            return Err(not_identity(self));
        }
        if dims.len() != rank {
            return Err(self.error_at(
                start,
                format!(
                    "identity affine map has {} dimension(s) for a rank-{rank} memref",
                    dims.len()
                ),
            ));
        }
        Ok(())
    }

    /// `ident, ident, ...` (at most [`MAX_RANK`]) up to and including `close` (after the
    /// opening bracket).
    fn ident_list(&mut self, close: &str, list: &mut Vec<&'a str>) -> Result<(), ()> {
        self.ws();
        if self.eat(close) {
            return Ok(());
        }
        loop {
            self.ws();
            let ident = self.ident();
            // More names than any memref has dimensions cannot be an identity map for one.
            if ident.is_empty() || list.len() == MAX_RANK {
                return Err(());
            }
            list.push(ident);
            self.ws();
            if self.eat(",") {
                continue;
            }
            return if self.eat(close) { Ok(()) } else { Err(()) };
        }
    }

    /// A whole signature, up to the end of the text.
    fn signature(&mut self) -> Result<FunctionType, ParseError> {
        self.ws();
        if self.peek() == Some(b'(') {
            let args = self.type_list(List::Args, false)?;
            self.ws();
            let results = if self.eat("->") {
                self.ws();
                self.results(false)?
            } else if self.at_end() {
                Vec::new()
            } else {
                return Err(self.expected("'->' or the end of the text after the argument list"));
            };
            self.ws();
            if !self.at_end() {
                return Err(self.expected("the end of the text after the function type"));
            }
            return Ok(FunctionType {
                name: None,
                args,
                results,
                emit_c_interface: false,
            });
        }
        match self.peek_ident() {
            keyword @ ("func.func" | "func") => {
                self.advance(keyword.len());
                self.header()
            }
            "module" => {
                Err(self.error("expected one function, found a module: pass a single func.func"))
            }
            _ => Err(self.expected("a function type '(...) -> ...' or a 'func.func' header")),
        }
    }

    /// The rest of a `func.func` header (after the keyword), with any body.
    fn header(&mut self) -> Result<FunctionType, ParseError> {
        self.ws();
        if matches!(self.peek_ident(), "private" | "public" | "nested") {
            self.ident();
            self.ws();
        }
        if !self.eat("@") {
            return Err(self.expected("'@' and the function name"));
        }
        let name = self.symbol_name()?;
        self.ws();
        if self.peek() != Some(b'(') {
            return Err(self.expected("'(' to start the argument list"));
        }
        let args = self.type_list(List::Args, true)?;
        self.ws();
        let results = if self.eat("->") {
            self.ws();
            self.results(true)?
        } else {
            Vec::new()
        };
        self.ws();
        let mut emit_c_interface = false;
        if self.peek_ident() == "attributes" {
            self.ident();
            self.ws();
            if self.peek() != Some(b'{') {
                return Err(self.expected("'{' after 'attributes'"));
            }
            emit_c_interface = self.attributes()?;
            self.ws();
        }
        if self.peek() == Some(b'{') {
            self.skip_group()?;
            self.ws();
        }
        self.location()?;
        if !self.at_end() {
            return Err(self.expected(
                "'attributes {...}', a body '{...}' or the end of the text after the signature",
            ));
        }
        Ok(FunctionType {
            name: Some(name),
            args,
            results,
            emit_c_interface,
        })
    }

    /// The function name after `@`: a bare identifier or a string literal.
    fn symbol_name(&mut self) -> Result<String, ParseError> {
        let start = self.offset();
        let name = if self.peek() == Some(b'"') {
            self.string_literal()?
        } else {
            let name = self.ident();
            if name.is_empty() {
                return Err(self.expected("a function name after '@'"));
            }
            name.to_string()
        };
        if name.is_empty() {
            return Err(self.error_at(start, "the function name is empty"));
        }
        Ok(name)
    }

    /// `loc(...)`, skipped, then whitespace; nothing if there is none.
    fn location(&mut self) -> Result<(), ParseError> {
        if self.peek_ident() == "loc" {
            self.ident();
            self.ws();
            if self.peek() != Some(b'(') {
                return Err(self.expected("'(' after 'loc'"));
            }
            self.skip_group()?;
            self.ws();
        }
        Ok(())
    }

    /// Results after `->`: one type, or a parenthesized list (with attribute dictionaries in a
    /// header).
    fn results(&mut self, header: bool) -> Result<Vec<MlirType>, ParseError> {
        if self.peek() == Some(b'(') {
            self.type_list(List::Results, header)
        } else if self.peek().is_none() {
            Err(self.expected("a result type after '->'"))
        } else {
            Ok(vec![self.ty()?])
        }
    }

    /// `(T, T, ...)` from the `(` at the cursor. In a header, arguments may be named
    /// (`%x: T`), and each type may carry an attribute dictionary (and arguments a location).
    fn type_list(&mut self, list: List, header: bool) -> Result<Vec<MlirType>, ParseError> {
        let what = match list {
            List::Args => "an argument",
            List::Results => "a result",
        };
        self.advance(1);
        self.ws();
        let mut types = Vec::new();
        if self.eat(")") {
            return Ok(types);
        }
        loop {
            self.ws();
            if header && list == List::Args && self.eat("%") {
                if self
                    .take_while(|b| is_ident_byte(b) || b == b'-')
                    .is_empty()
                {
                    return Err(self.expected("a value name after '%'"));
                }
                self.ws();
                if !self.eat(":") {
                    return Err(self.expected("':' after the argument name"));
                }
                self.ws();
            }
            if self.at_end() {
                return Err(self.expected(&format!("{what} type")));
            }
            types.push(self.ty()?);
            self.ws();
            if header {
                if self.peek() == Some(b'{') {
                    self.skip_group()?;
                    self.ws();
                }
                if list == List::Args {
                    self.location()?;
                }
            }
            if self.eat(",") {
                continue;
            }
            if self.eat(")") {
                return Ok(types);
            }
            return Err(self.expected(&format!("',' or ')' after {what} type")));
        }
    }

    /// A `{...}` attribute dictionary at the cursor: whether it has `llvm.emit_c_interface`
    /// as a unit attribute.
    fn attributes(&mut self) -> Result<bool, ParseError> {
        let mut emit_c_interface = false;
        self.advance(1);
        self.ws();
        if self.eat("}") {
            return Ok(false);
        }
        loop {
            self.ws();
            let key = if self.peek() == Some(b'"') {
                self.string_literal()?
            } else {
                let key = self.ident();
                if key.is_empty() {
                    return Err(self.expected("an attribute name"));
                }
                key.to_string()
            };
            self.ws();
            let mut unit = true;
            if self.eat("=") {
                self.ws();
                let start = self.offset();
                self.skip_value()?;
                let value = self.text()[start..self.offset()].trim_end();
                if value.is_empty() {
                    return Err(self.error_at(start, "expected an attribute value after '='"));
                }
                unit = value == "unit";
            }
            if key == "llvm.emit_c_interface" && unit {
                emit_c_interface = true;
            }
            self.ws();
            if self.eat(",") {
                continue;
            }
            if self.eat("}") {
                return Ok(emit_c_interface);
            }
            return Err(self.expected("',' or '}' after an attribute"));
        }
    }

    /// A string literal at the cursor (on its `"`), unescaped.
    fn string_literal(&mut self) -> Result<String, ParseError> {
        let quote = self.offset();
        let bytes = self.bytes();
        let mut value = Vec::new();
        // Walks bytes (an escape may spell half a character); every stop is at an ASCII byte.
        let mut pos = quote + 1;
        loop {
            match bytes.get(pos) {
                None => return Err(self.error_at(quote, "unterminated string literal")),
                Some(b'\n') => {
                    return Err(self.error_at(
                        pos,
                        "unterminated string literal (a line break before the closing '\"')",
                    ));
                }
                Some(b'"') => {
                    pos += 1;
                    break;
                }
                Some(b'\\') => {
                    let escaped = match bytes.get(pos + 1) {
                        Some(&b @ (b'"' | b'\\')) => Some((b, 2)),
                        Some(b'n') => Some((b'\n', 2)),
                        Some(b't') => Some((b'\t', 2)),
                        Some(&high) if high.is_ascii_hexdigit() => match bytes.get(pos + 2) {
                            Some(&low) if low.is_ascii_hexdigit() => {
                                let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                                Some((hex(high) << 4 | hex(low), 3))
                            }
                            _ => None,
                        },
                        _ => None,
                    };
                    let Some((byte, len)) = escaped else {
                        return Err(self.error_at(
                            pos,
                            "unknown escape in a string literal (expected \\\\, \\\", \\n, \\t \
                             or two hex digits)",
                        ));
                    };
                    value.push(byte);
                    pos += len;
                }
                Some(&b) => {
                    value.push(b);
                    pos += 1;
                }
            }
        }
        self.set_offset(pos);
        String::from_utf8(value)
            .map_err(|_| self.error_at(quote, "the string literal is not valid UTF-8"))
    }

    /// Skips the balanced group (`{...}`, `(...)`, `[...]`) that opens at the cursor.
    fn skip_group(&mut self) -> Result<(), ParseError> {
        self.scan(true)
    }

    /// Skips an attribute value, up to a `,` or `}` outside brackets.
    fn skip_value(&mut self) -> Result<(), ParseError> {
        self.scan(false)
    }

    /// Skips text with balanced brackets, iteratively. Strings and `//` comments are skipped
    /// whole. With `group`, the cursor is on an opening bracket and the scan ends after its
    /// match; otherwise it stops (without consuming) at a `,` or `}` outside brackets, or at
    /// the end. Angle brackets are tracked only in values (where `<...>` may hold commas); a
    /// `>` that closes nothing is an operator (`->`, `>=`) and is ignored.
    fn scan(&mut self, group: bool) -> Result<(), ParseError> {
        let bytes = self.bytes();
        let mut open: Vec<(usize, u8)> = Vec::new();
        // Walks bytes; the cursor is moved to `pos` only where it is at an ASCII byte.
        let mut pos = self.offset();
        while let Some(&byte) = bytes.get(pos) {
            match byte {
                b'"' => {
                    self.set_offset(pos);
                    self.skip_string()?;
                    pos = self.offset();
                    continue;
                }
                b'/' if bytes.get(pos + 1) == Some(&b'/') => {
                    self.set_offset(pos);
                    self.skip_spaces_and_comments("//");
                    pos = self.offset();
                    continue;
                }
                b'-' if bytes.get(pos + 1) == Some(&b'>') => pos += 1,
                b'(' | b'[' | b'{' | b'<' if byte != b'<' || !group => {
                    if open.len() >= MAX_NESTING {
                        return Err(self.error_at(
                            pos,
                            format!("brackets nested deeper than {MAX_NESTING} levels"),
                        ));
                    }
                    let close = match byte {
                        b'(' => b')',
                        b'[' => b']',
                        b'{' => b'}',
                        _ => b'>',
                    };
                    open.push((pos, close));
                }
                b'>' if open.last().is_some_and(|&(_, close)| close == b'>') => {
                    open.pop();
                }
                b')' | b']' | b'}' => match open.last() {
                    Some(&(_, close)) if close == byte => {
                        open.pop();
                        if group && open.is_empty() {
                            self.set_offset(pos + 1);
                            return Ok(());
                        }
                    }
                    Some(&(at, close)) => {
                        return Err(self.error_at(
                            pos,
                            format!(
                                "unbalanced brackets: expected '{}' (closing the '{}' at byte \
                                 {at}), found '{}'",
                                close as char, bytes[at] as char, byte as char
                            ),
                        ));
                    }
                    None if byte == b'}' => {
                        self.set_offset(pos);
                        return Ok(());
                    }
                    None => {
                        return Err(self.error_at(
                            pos,
                            format!("unbalanced brackets: '{}' closes nothing", byte as char),
                        ));
                    }
                },
                b',' if open.is_empty() => {
                    self.set_offset(pos);
                    return Ok(());
                }
                _ => {}
            }
            pos += 1;
        }
        self.set_offset(pos);
        match open.last() {
            Some(&(at, close)) => Err(self.error_at(
                at,
                format!(
                    "unclosed '{}': expected '{}' before the end of the text",
                    bytes[at] as char, close as char
                ),
            )),
            None => Ok(()),
        }
    }

    /// Skips the string literal at the cursor (on its `"`).
    fn skip_string(&mut self) -> Result<(), ParseError> {
        let quote = self.offset();
        let bytes = self.bytes();
        let mut pos = quote + 1;
        loop {
            match bytes.get(pos) {
                None => return Err(self.error_at(quote, "unterminated string literal")),
                Some(b'\\') => pos = (pos + 2).min(bytes.len()),
                Some(b'"') => {
                    self.set_offset(pos + 1);
                    return Ok(());
                }
                Some(_) => pos += 1,
            }
        }
    }
}

/// Which list [`Parser::type_list`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    Args,
    Results,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const F32: ScalarType = ScalarType::F32;
    const DYN: Dim = Dim::Dynamic;

    fn d(value: i64) -> Dim {
        Dim::Static(value)
    }

    fn int(width: u8, signedness: Signedness) -> ScalarType {
        ScalarType::Integer { width, signedness }
    }

    fn memref(shape: &[Dim], element: ScalarType, layout: Layout) -> MlirType {
        MlirType::MemRef(MemRefType {
            shape: shape.to_vec(),
            element,
            layout,
        })
    }

    fn strided(strides: &[Dim], offset: Dim) -> Layout {
        Layout::Strided {
            strides: strides.to_vec(),
            offset,
        }
    }

    fn ty(text: &str) -> MlirType {
        MlirType::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn sig(text: &str) -> FunctionType {
        FunctionType::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    /// Checks the error's format, offset and message, and returns it.
    #[track_caller]
    fn check(
        result: Result<impl std::fmt::Debug, ParseError>,
        text: &str,
        offset: usize,
        part: &str,
    ) {
        let error = result.expect_err(text);
        assert!(
            error.message.contains(part),
            "{text:?}: message {:?} lacks {part:?}",
            error.message
        );
        assert_eq!(error.offset, offset, "{text:?}: {error}");
        assert!(error.offset <= text.len());
    }

    #[track_caller]
    fn ty_err(text: &str, offset: usize, part: &str) {
        let result = MlirType::parse(text);
        if let Err(error) = &result {
            assert_eq!(error.format, TYPE_FORMAT);
        }
        check(result, text, offset, part);
    }

    #[track_caller]
    fn sig_err(text: &str, offset: usize, part: &str) {
        let result = FunctionType::parse(text);
        if let Err(error) = &result {
            assert_eq!(error.format, SIGNATURE_FORMAT);
        }
        check(result, text, offset, part);
    }

    #[test]
    fn scalars() {
        use Signedness::*;
        for (text, scalar) in [
            ("i1", int(1, Signless)),
            ("i32", int(32, Signless)),
            ("i64", int(64, Signless)),
            ("i24", int(24, Signless)),
            ("si8", int(8, Signed)),
            ("si64", int(64, Signed)),
            ("ui1", int(1, Unsigned)),
            ("ui16", int(16, Unsigned)),
            ("i08", int(8, Signless)),
            ("index", ScalarType::Index),
            ("f16", ScalarType::F16),
            ("bf16", ScalarType::BF16),
            ("f32", ScalarType::F32),
            ("f64", ScalarType::F64),
            ("  f32 // trailing comment", ScalarType::F32),
        ] {
            assert_eq!(ty(text), MlirType::Scalar(scalar), "{text}");
            assert_eq!(text.parse::<MlirType>(), Ok(MlirType::Scalar(scalar)));
        }
    }

    #[test]
    fn integer_widths() {
        for (text, offset) in [
            ("i0", 0),
            ("i65", 0),
            ("si128", 0),
            ("ui0", 0),
            (" i99999999999999999999999", 1),
            ("i000", 0),
        ] {
            ty_err(text, offset, "pactum supports 1..=64 bits");
        }
        ty_err("memref<4xi128>", 9, "unsupported integer width in 'i128'");
        sig_err("(i32, i65) -> ()", 6, "pactum supports 1..=64 bits");
    }

    #[test]
    fn unknown_types() {
        let supported = "(supported: iN, siN, uiN, index, f16, bf16, f32, f64, memref<...>)";
        for text in [
            "f128",
            "f80",
            "tf32",
            "f8E4M3FN",
            "none",
            "vector<4xf32>",
            "tensor<?xf32>",
            "complex<f32>",
            "tuple<i32, f32>",
            "!llvm.ptr",
            "u8",
        ] {
            ty_err(text, 0, &format!("unknown type '{text}' {supported}"));
        }
        // Long types are shortened in the message.
        let long = format!("vector<{}f32>", "4x".repeat(100));
        let error = MlirType::parse(&long).unwrap_err();
        assert!(
            error.message.contains("unknown type 'vector<4x4x"),
            "{error}"
        );
        assert!(error.message.len() < 200, "{error}");
        ty_err("", 0, "expected a type, found the end of the text");
        ty_err("  ?", 2, "expected a type, found \"?\"");
        ty_err("f32 f32", 4, "expected the end of the text after the type");
    }

    #[test]
    fn ranked_memrefs() {
        let identity = Layout::Identity;
        for (text, expected) in [
            ("memref<f32>", memref(&[], F32, identity.clone())),
            ("memref<?xf32>", memref(&[DYN], F32, identity.clone())),
            (
                "memref<4x?x8xf32>",
                memref(&[d(4), DYN, d(8)], F32, identity.clone()),
            ),
            (
                "memref<0x9223372036854775807xi1>",
                memref(
                    &[d(0), d(i64::MAX)],
                    int(1, Signedness::Signless),
                    identity.clone(),
                ),
            ),
            (
                "memref < 4 x ? x index >",
                memref(&[d(4), DYN], ScalarType::Index, identity.clone()),
            ),
            (
                "memref<004xbf16>",
                memref(&[d(4)], ScalarType::BF16, identity.clone()),
            ),
            // The default memory space, which MLIR drops.
            ("memref<4xf32, 0>", memref(&[d(4)], F32, identity.clone())),
            (
                "memref<4xf32, 0 : i64>",
                memref(&[d(4)], F32, identity.clone()),
            ),
        ] {
            assert_eq!(ty(text), expected, "{text}");
        }
    }

    #[test]
    fn strided_layouts() {
        for (text, expected) in [
            (
                "memref<?xf32, strided<[?, 1], offset: ?>>",
                None, // rank mismatch: checked below
            ),
            (
                "memref<?x?xf32, strided<[?, 1], offset: ?>>",
                Some(memref(&[DYN, DYN], F32, strided(&[DYN, d(1)], DYN))),
            ),
            (
                "memref<4x4xf32, strided<[4, 1]>>",
                Some(memref(&[d(4), d(4)], F32, strided(&[d(4), d(1)], d(0)))),
            ),
            (
                "memref<4xf32, strided<[1], offset: 0>>",
                Some(memref(&[d(4)], F32, strided(&[d(1)], d(0)))),
            ),
            (
                "memref<f64, strided<[], offset: 7>>",
                Some(memref(&[], ScalarType::F64, strided(&[], d(7)))),
            ),
            (
                "memref<2x3xf32, strided<[-1, -9223372036854775808], offset: 9>>",
                Some(memref(
                    &[d(2), d(3)],
                    F32,
                    strided(&[d(-1), d(i64::MIN)], d(9)),
                )),
            ),
            (
                "memref<4xf32,strided<[0],offset:?>,0>",
                Some(memref(&[d(4)], F32, strided(&[d(0)], DYN))),
            ),
            (
                " memref <\n 4 x f32 ,\n strided < [ 2 ] , offset : 3 > > ",
                Some(memref(&[d(4)], F32, strided(&[d(2)], d(3)))),
            ),
        ] {
            match expected {
                Some(expected) => assert_eq!(ty(text), expected, "{text}"),
                None => ty_err(
                    text,
                    14,
                    "strided layout has 2 stride(s) for a rank-1 memref",
                ),
            }
        }
        ty_err(
            "memref<?x?xf32, strided<[1]>>",
            16,
            "strided layout has 1 stride(s) for a rank-2 memref",
        );
        ty_err(
            "memref<4xf32, strided<[1], offset: -1>>",
            35,
            "a strided layout offset must be non-negative or '?'",
        );
        ty_err(
            "memref<4xf32, strided<[99999999999999999999]>>",
            23,
            "a stride does not fit in a 64-bit signed integer",
        );
        ty_err(
            "memref<4xf32, strided<[-9223372036854775809]>>",
            23,
            "a stride does not fit in a 64-bit signed integer",
        );
        ty_err(
            "memref<4xf32, strided<[1 2]>>",
            25,
            "expected ',' or ']' after a stride",
        );
        ty_err(
            "memref<4xf32, strided<[-]>>",
            24,
            "expected digits after '-' in a stride",
        );
        ty_err(
            "memref<4xf32, strided<[x]>>",
            23,
            "expected a stride (an integer or '?')",
        );
        ty_err(
            "memref<4xf32, strided<[1], 0>>",
            27,
            "expected 'offset' after ','",
        );
        ty_err(
            "memref<4xf32, strided<[1], offset 0>>",
            34,
            "expected ':' after 'offset'",
        );
        ty_err(
            "memref<4xf32, strided<[1]>",
            26,
            "expected '>' to close the memref type",
        );
        ty_err(
            "memref<4xf32, strided[1]>",
            21,
            "expected '<' after 'strided'",
        );
        ty_err(
            "memref<4xf32, strided<1>>",
            22,
            "expected '[' to start the strides",
        );
        ty_err(
            "memref<4xf32, strided<[1]",
            25,
            "expected '>' to close the strided layout",
        );
        let many = format!("memref<f32, strided<[{}1]>>", "1, ".repeat(64));
        ty_err(
            &many,
            21 + 64 * 3,
            "strided layouts of over 64 strides are not supported",
        );
    }

    #[test]
    fn affine_map_layouts() {
        for (text, shape) in [
            (
                "memref<4x?xf32, affine_map<(d0, d1) -> (d0, d1)>>",
                vec![d(4), DYN],
            ),
            ("memref<4xf32, affine_map<(i) -> (i)>>", vec![d(4)]),
            ("memref<f32, affine_map<() -> ()>>", vec![]),
            ("memref<4xf32, affine_map<(d0)[s0] -> (d0)>>", vec![d(4)]),
            (
                "memref<4xf32, affine_map < ( d0 ) [ ] -> ( d0 ) >, 0>",
                vec![d(4)],
            ),
        ] {
            assert_eq!(ty(text), memref(&shape, F32, Layout::Identity), "{text}");
        }
        for text in [
            "memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>",
            "memref<4x4xf32, affine_map<(d0, d1) -> (d0 * 4 + d1)>>",
            "memref<4xf32, affine_map<(d0)[s0] -> (d0 + s0)>>",
            "memref<4xf32, affine_map<(d0) -> (d0, d0)>>",
            "memref<4xf32, affine_map<(d0) -> (0)>>",
            "memref<4xf32, affine_map<(d0) (d0)>>",
            "memref<4xf32, affine_map<(d0) -> (d0)",
            "memref<4xf32, affine_map<(d0) -> d0>>",
            "memref<4xf32, affine_map<d0 -> (d0)>>",
        ] {
            let offset = if text.starts_with("memref<4x4") {
                16
            } else {
                14
            };
            ty_err(text, offset, "only identity affine maps");
            ty_err(
                text,
                offset,
                "write other layouts as strided<[...], offset: ...>",
            );
        }
        ty_err(
            "memref<4xf32, affine_map<(d0) -> (d0)>",
            38,
            "expected '>' to close the memref type",
        );
        ty_err(
            "memref<4xf32, affine_map<(d0) -> (d0)>>"
                .replace(
                    "affine_map<(d0) -> (d0)>",
                    "affine_map<(d0, d1) -> (d0, d1)>",
                )
                .as_str(),
            14,
            "identity affine map has 2 dimension(s) for a rank-1 memref",
        );
        let names: Vec<String> = (0..=MAX_RANK).map(|i| format!("d{i}")).collect();
        let huge = format!(
            "memref<{}f32, affine_map<({}) -> ({})>>",
            "1x".repeat(MAX_RANK),
            names.join(", "),
            names.join(", ")
        );
        ty_err(&huge, 7 + 2 * MAX_RANK + 5, "only identity affine maps");
        ty_err(
            "memref<4x4xf32, affine_map<(d0, d0) -> (d0, d0)>>",
            16,
            "the affine map repeats the dimension 'd0'",
        );
        ty_err(
            "memref<4xf32, affine_map(d0) -> (d0)>",
            24,
            "expected '<' after 'affine_map'",
        );
        ty_err(
            "memref<4xf32, #map>",
            14,
            "the attribute alias '#map' cannot be resolved here",
        );
    }

    #[test]
    fn memory_spaces() {
        let message = "memory spaces other than the default are not supported (CPU only)";
        for (text, offset) in [
            ("memref<?xf32, 1>", 14),
            ("memref<?xf32, #gpu.address_space<global>>", 14),
            ("memref<?xf32, strided<[1]>, 1>", 28),
            (
                "memref<?xf32, strided<[1]>, #gpu.address_space<workgroup>>",
                28,
            ),
            ("memref<?xf32, affine_map<(d0) -> (d0)>, 3>", 40),
            ("memref<*xf32, 1>", 14),
            ("memref<?xf32, \"space\">", 14),
            ("memref<?xf32, 0, strided<[1]>>", 15),
        ] {
            if text.ends_with("strided<[1]>>") {
                ty_err(text, offset, "expected '>' to close the memref type");
            } else {
                ty_err(text, offset, message);
            }
        }
        ty_err(
            "memref<?xf32, >",
            14,
            "expected a layout (strided<...>) or a memory space",
        );
        ty_err(
            "memref<?xf32, 0 : f32>",
            18,
            "expected an integer type after ':'",
        );
    }

    #[test]
    fn unranked_memrefs() {
        assert_eq!(ty("memref<*xf32>"), MlirType::UnrankedMemRef(F32));
        assert_eq!(
            ty("memref< * x ui8, 0 >"),
            MlirType::UnrankedMemRef(int(8, Signedness::Unsigned))
        );
        ty_err(
            "memref<*f32>",
            8,
            "expected 'x' after '*' in an unranked memref",
        );
        ty_err(
            "memref<*xf32, strided<[1]>>",
            14,
            "memory spaces other than the default",
        );
        ty_err("memref<4x*xf32>", 9, "expected a memref element type");
    }

    #[test]
    fn memref_errors() {
        let elements = "(supported: iN, siN, uiN, index, f16, bf16, f32, f64)";
        for (text, name) in [
            ("memref<4xvector<4xf32>>", "vector<4xf32>"),
            ("memref<4xcomplex<f32>>", "complex<f32>"),
            ("memref<4xtensor<4xf32>>", "tensor<4xf32>"),
            ("memref<4xtuple<i32>>", "tuple<i32>"),
            ("memref<4xf80>", "f80"),
            ("memref<4xf128>", "f128"),
            ("memref<4xf8E5M2>", "f8E5M2"),
            ("memref<4xmemref<4xf32>>", "memref<4xf32>"),
            ("memref<4x!llvm.ptr>", "!llvm.ptr"),
        ] {
            ty_err(
                text,
                9,
                &format!("unsupported memref element type '{name}' {elements}"),
            );
        }
        ty_err(
            "memref<-1xf32>",
            7,
            "memref dimensions must be non-negative or '?'",
        );
        ty_err(
            "memref<9223372036854775808xf32>",
            7,
            "a memref dimension does not fit in a 64-bit signed integer",
        );
        ty_err("memref<4f32>", 8, "expected 'x' after a memref dimension");
        ty_err(
            "memref<4x>",
            9,
            "expected a memref element type, found \">\"",
        );
        ty_err("memref<>", 7, "expected a memref element type");
        ty_err(
            "memref<4xf32",
            12,
            "expected '>' to close the memref type, found the end",
        );
        ty_err("memref<4xf32]", 12, "expected '>' to close the memref type");
        ty_err("memref 4xf32", 7, "expected '<' after 'memref'");
        ty_err("memref", 6, "expected '<' after 'memref'");
        let rank_64 = format!("memref<{}f32>", "1x".repeat(64));
        assert_eq!(
            MlirType::parse(&rank_64).map(|t| match t {
                MlirType::MemRef(m) => m.rank(),
                _ => 0,
            }),
            Ok(64)
        );
        let rank_65 = format!("memref<{}f32>", "1x".repeat(65));
        ty_err(
            &rank_65,
            7 + 128,
            "memrefs of rank over 64 are not supported",
        );
    }

    #[test]
    fn function_types() {
        let f32 = MlirType::Scalar(F32);
        let i64 = MlirType::Scalar(int(64, Signedness::Signless));
        let vector = memref(&[DYN], F32, Layout::Identity);
        for (text, args, results) in [
            (
                "(memref<?xf32>, f32) -> f32",
                vec![vector.clone(), f32.clone()],
                vec![f32.clone()],
            ),
            (
                "(i64, i64) -> (i64, i64)",
                vec![i64.clone(), i64.clone()],
                vec![i64.clone(), i64.clone()],
            ),
            ("() -> ()", vec![], vec![]),
            ("(f32) -> ()", vec![f32.clone()], vec![]),
            ("(f32) -> (f32)", vec![f32.clone()], vec![f32.clone()]),
            // Lenient: no arrow, no results.
            ("(f32)", vec![f32.clone()], vec![]),
            ("()", vec![], vec![]),
            (
                "// a comment\n  ( memref<?xf32> ,f32 )->( ) // another\n",
                vec![vector.clone(), f32.clone()],
                vec![],
            ),
        ] {
            let expected = FunctionType {
                name: None,
                args,
                results,
                emit_c_interface: false,
            };
            assert_eq!(sig(text), expected, "{text}");
            assert_eq!(text.parse::<FunctionType>().as_ref(), Ok(&expected));
        }
    }

    #[test]
    fn function_type_errors() {
        sig_err(
            "(f32 f32) -> ()",
            5,
            "expected ',' or ')' after an argument type",
        );
        sig_err(
            "(f32) -> (f32 f32)",
            14,
            "expected ',' or ')' after a result type",
        );
        sig_err("(f32,) -> ()", 5, "expected a type, found \")");
        sig_err(
            "(f32",
            4,
            "expected ',' or ')' after an argument type, found the end",
        );
        sig_err(
            "(f32,",
            5,
            "expected an argument type, found the end of the text",
        );
        sig_err("(f32) ->", 8, "expected a result type after '->'");
        sig_err(
            "(f32) -> f32 f32",
            13,
            "expected the end of the text after the function type",
        );
        sig_err(
            "(f32) f32",
            6,
            "expected '->' or the end of the text after the argument list",
        );
        sig_err("(%x: f32) -> ()", 1, "expected a type, found \"%x");
        sig_err(
            "(f32 {llvm.noalias}) -> ()",
            5,
            "expected ',' or ')' after an argument type",
        );
        sig_err("((f32) -> f32) -> ()", 1, "expected a type");
        sig_err(
            "",
            0,
            "expected a function type '(...) -> ...' or a 'func.func' header",
        );
        sig_err("llvm.func @f()", 0, "expected a function type");
        sig_err("module {\n func.func @f() }", 0, "found a module");
        sig_err("(vector<4xf32>) -> ()", 1, "unknown type 'vector<4xf32>'");
        sig_err(
            "(memref<?xf32, 1>) -> ()",
            15,
            "memory spaces other than the default",
        );
    }

    #[test]
    fn headers() {
        let f32 = MlirType::Scalar(F32);
        let index = MlirType::Scalar(ScalarType::Index);
        let vector = memref(&[DYN], F32, Layout::Identity);
        let function =
            |name: &str, args: Vec<MlirType>, results: Vec<MlirType>, emit: bool| FunctionType {
                name: Some(name.to_string()),
                args,
                results,
                emit_c_interface: emit,
            };
        let definition = r#"
// Test module for pactum.
// out[i] = in[i] + 1.0
func.func @add_one(%in: memref<?xf32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %n = memref.dim %in, %c0 : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %in[%i] : memref<?xf32>   // a comment with } and " in it
      memref.store %x, %out[%i] : memref<?xf32>
    }
    "test.op"() {s = "}{", m = affine_map<(d0) -> (d0)>} : () -> ()
    return
}
"#;
        for (text, expected) in [
            (
                "func.func @f(%arg0: memref<?xf32>, %n: index) -> (f32, index) attributes {llvm.emit_c_interface}",
                function(
                    "f",
                    vec![vector.clone(), index.clone()],
                    vec![f32.clone(), index.clone()],
                    true,
                ),
            ),
            (
                definition,
                function(
                    "add_one",
                    vec![vector.clone(), vector.clone()],
                    vec![],
                    true,
                ),
            ),
            (
                "func.func private @ext(memref<?xf32>, f32) -> f32",
                function(
                    "ext",
                    vec![vector.clone(), f32.clone()],
                    vec![f32.clone()],
                    false,
                ),
            ),
            (
                "func.func public @p() -> ()",
                function("p", vec![], vec![], false),
            ),
            (
                "func.func nested @n(f32)",
                function("n", vec![f32.clone()], vec![], false),
            ),
            (
                "func @old(%a: f32) -> f32 attributes {llvm.emit_c_interface} { return %a : f32 }",
                function("old", vec![f32.clone()], vec![f32.clone()], true),
            ),
            (
                r#"func.func @"quoted name \"x\" \\ \41\n"() -> ()"#,
                function("quoted name \"x\" \\ A\n", vec![], vec![], false),
            ),
            (
                "func.func @f(%a: memref<?xf32> {llvm.noalias}, %b-1.x$: f32 {a = {b = [1, {c}]}, s = \"}\"}) -> (f32 {llvm.x = 1}, index) attributes {sym = \"a, b\", llvm.emit_c_interface, d = {x = [1, 2], y = #a<b, c>}}",
                function(
                    "f",
                    vec![vector.clone(), f32.clone()],
                    vec![f32.clone(), index.clone()],
                    true,
                ),
            ),
            (
                "func.func @unit() attributes {llvm.emit_c_interface = unit}",
                function("unit", vec![], vec![], true),
            ),
            (
                "func.func @quoted_key() attributes {\"llvm.emit_c_interface\"}",
                function("quoted_key", vec![], vec![], true),
            ),
            (
                "func.func @off() attributes {llvm.emit_c_interface = false}",
                function("off", vec![], vec![], false),
            ),
            (
                "func.func @other() attributes {emit_c_interface, llvm.emit_c_interfaces, a = \"llvm.emit_c_interface\"}",
                function("other", vec![], vec![], false),
            ),
            (
                "func.func @empty() attributes {} {}",
                function("empty", vec![], vec![], false),
            ),
            (
                "func.func @loc(%a: f32 loc(\"x.mlir\":1:2), %b: f32 {x} loc(#loc1)) -> f32 { return } loc(fused[\"a\", \"b\"])",
                function(
                    "loc",
                    vec![f32.clone(), f32.clone()],
                    vec![f32.clone()],
                    false,
                ),
            ),
            (
                "func.func@tight(%a:f32)->f32attributes{llvm.emit_c_interface}{}"
                    .replace("f32attributes", "f32 attributes")
                    .as_str(),
                function("tight", vec![f32.clone()], vec![f32.clone()], true),
            ),
            (
                "func.func @v(f32) -> memref<*xf32> attributes {a = affine_set<(d0) : (d0 >= 0)>, llvm.emit_c_interface}",
                function(
                    "v",
                    vec![f32.clone()],
                    vec![MlirType::UnrankedMemRef(F32)],
                    true,
                ),
            ),
        ] {
            assert_eq!(sig(text), expected, "{text}");
        }
    }

    #[test]
    fn header_errors() {
        sig_err("func.func f()", 10, "expected '@' and the function name");
        sig_err(
            "func.func private",
            17,
            "expected '@' and the function name",
        );
        sig_err("func.func @(f32)", 11, "expected a function name after '@'");
        sig_err("func.func @\"\"()", 11, "the function name is empty");
        sig_err("func.func @\"abc()", 11, "unterminated string literal");
        sig_err(
            "func.func @\"a\nb\"()",
            13,
            "unterminated string literal (a line break",
        );
        sig_err(
            "func.func @\"a\\q\"()",
            13,
            "unknown escape in a string literal",
        );
        sig_err("func.func @\"\\ff\"()", 11, "not valid UTF-8");
        sig_err(
            "func.func @f",
            12,
            "expected '(' to start the argument list",
        );
        sig_err(
            "func.func @f(%: f32)",
            14,
            "expected a value name after '%'",
        );
        sig_err(
            "func.func @f(%a f32)",
            16,
            "expected ':' after the argument name",
        );
        sig_err(
            "func.func @f(%a: f32 %b: f32)",
            21,
            "expected ',' or ')' after an argument type",
        );
        sig_err(
            "func.func @f() -> (f32 {a} {b})",
            27,
            "expected ',' or ')' after a result type",
        );
        sig_err(
            "func.func @f() attributes",
            25,
            "expected '{' after 'attributes'",
        );
        sig_err(
            "func.func @f() attributes {a b}",
            29,
            "expected ',' or '}' after an attribute",
        );
        sig_err(
            "func.func @f() attributes {a = }",
            31,
            "expected an attribute value after '='",
        );
        sig_err(
            "func.func @f() attributes {a = 1,}",
            33,
            "expected an attribute name",
        );
        sig_err(
            "func.func @f() attributes {a = [1}",
            33,
            "unbalanced brackets: expected ']' (closing the '[' at byte 31), found '}'",
        );
        sig_err(
            "func.func @f() attributes {a = 1)}",
            32,
            "unbalanced brackets: ')' closes nothing",
        );
        sig_err(
            "func.func @f() attributes {a = \"x}",
            31,
            "unterminated string literal",
        );
        sig_err(
            "func.func @f() attributes {a = 1",
            32,
            "expected ',' or '}' after an attribute",
        );
        sig_err(
            "func.func @f() { return",
            15,
            "unclosed '{': expected '}' before the end of the text",
        );
        sig_err(
            "func.func @f() { (] }",
            18,
            "unbalanced brackets: expected ')' (closing the '(' at byte 17), found ']'",
        );
        sig_err("func.func @f() { \"}\" ", 15, "unclosed '{'");
        sig_err(
            "func.func @f() {} {}",
            18,
            "expected 'attributes {...}', a body '{...}' or the end of the text",
        );
        sig_err(
            "func.func @f() -> f32 -> f32",
            22,
            "or the end of the text after the signature",
        );
        sig_err("func.func @f() {} loc", 21, "expected '(' after 'loc'");
        sig_err("func.func @f(%a: f32 {x) -> ()", 23, "unbalanced brackets");
        // Nesting is bounded, iteratively.
        let deep = |levels: usize| {
            format!(
                "func.func @f() {{{}{}}}",
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        assert!(FunctionType::parse(&deep(MAX_NESTING - 1)).is_ok());
        sig_err(
            &deep(MAX_NESTING),
            15 + MAX_NESTING,
            "brackets nested deeper than 256 levels",
        );
        let very_deep = format!("func.func @f() {{{}", "{".repeat(100_000));
        sig_err(
            &very_deep,
            15 + MAX_NESTING,
            "brackets nested deeper than 256 levels",
        );
    }

    #[test]
    fn input_size() {
        let long = format!("func.func @f() {{ {} }}", " ".repeat(MAX_INPUT_LEN));
        sig_err(&long, 0, "at most 1048576 bytes are accepted");
        let long_type = format!("f32{}", " ".repeat(MAX_INPUT_LEN));
        ty_err(&long_type, 0, "at most 1048576 bytes are accepted");
        let just_fits = format!("f32{}", " ".repeat(MAX_INPUT_LEN - 3));
        assert_eq!(ty(&just_fits), MlirType::Scalar(F32));
    }

    #[test]
    fn every_prefix_errors_inside_the_input() {
        let text = "// c\nfunc.func private @\"n\\41\"(%a: memref<4x?xf32, strided<[?, 1], offset: 3>> {x = [\"]\"]}, %b: memref<*xsi8> loc(\"f\":1:2)) -> (memref<f32, affine_map<() -> ()>> {y}, index) attributes {llvm.emit_c_interface, z = #a<(d0) -> (d0), 2>} { return } loc(#l)";
        assert_eq!(sig(text).name.as_deref(), Some("nA"));
        for (end, _) in text.char_indices() {
            let prefix = &text[..end];
            for result in [
                FunctionType::parse(prefix).map(drop),
                MlirType::parse(prefix).map(drop),
            ] {
                if let Err(error) = result {
                    assert!(error.offset <= prefix.len(), "{prefix:?}: {error}");
                    assert!(!error.message.is_empty());
                }
            }
        }
    }

    #[test]
    fn non_ascii() {
        sig_err("(f32) -> é", 9, "expected a type, found \"é\"");
        let text = "func.func @\"é\"(f32) {\"\\é\" } // é";
        assert_eq!(sig(text).name.as_deref(), Some("é"));
        sig_err(
            "func.func @é()",
            11,
            "expected a function name after '@', found \"é()\"",
        );
        sig_err(
            "func.func @f() attributes {é}",
            27,
            "expected an attribute name, found \"é}\"",
        );
    }

    fn scalar_type() -> impl Strategy<Value = ScalarType> {
        prop_oneof![
            (
                1u8..=64,
                prop_oneof![
                    Just(Signedness::Signless),
                    Just(Signedness::Signed),
                    Just(Signedness::Unsigned)
                ]
            )
                .prop_map(|(width, signedness)| ScalarType::Integer { width, signedness }),
            Just(ScalarType::Index),
            Just(ScalarType::F16),
            Just(ScalarType::BF16),
            Just(ScalarType::F32),
            Just(ScalarType::F64),
        ]
    }

    fn extent() -> impl Strategy<Value = Dim> {
        prop_oneof![
            Just(Dim::Dynamic),
            (0i64..16).prop_map(Dim::Static),
            (0i64..=i64::MAX).prop_map(Dim::Static),
        ]
    }

    fn stride() -> impl Strategy<Value = Dim> {
        prop_oneof![
            Just(Dim::Dynamic),
            (-4i64..16).prop_map(Dim::Static),
            any::<i64>().prop_map(Dim::Static),
        ]
    }

    fn memref_type() -> impl Strategy<Value = MemRefType> {
        (proptest::collection::vec(extent(), 0..6), scalar_type()).prop_flat_map(
            |(shape, element)| {
                let rank = shape.len();
                let layout = prop_oneof![
                    Just(Layout::Identity),
                    (proptest::collection::vec(stride(), rank), extent())
                        .prop_map(|(strides, offset)| Layout::Strided { strides, offset }),
                ];
                layout.prop_map(move |layout| MemRefType {
                    shape: shape.clone(),
                    element,
                    layout,
                })
            },
        )
    }

    fn mlir_type() -> impl Strategy<Value = MlirType> {
        prop_oneof![
            scalar_type().prop_map(MlirType::Scalar),
            memref_type().prop_map(MlirType::MemRef),
            scalar_type().prop_map(MlirType::UnrankedMemRef),
        ]
    }

    fn function_type() -> impl Strategy<Value = FunctionType> {
        (
            proptest::collection::vec(mlir_type(), 0..5),
            proptest::collection::vec(mlir_type(), 0..4),
        )
            .prop_map(|(args, results)| FunctionType {
                name: None,
                args,
                results,
                emit_c_interface: false,
            })
    }

    /// `@name` as MLIR writes it: bare when it can be, else quoted with escapes.
    fn symbol(name: &str) -> String {
        let bare = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(is_ident_byte);
        if bare {
            return format!("@{name}");
        }
        let mut out = String::from("@\"");
        for byte in name.bytes() {
            match byte {
                b'"' | b'\\' => {
                    out.push('\\');
                    out.push(byte as char);
                }
                b' '..=b'~' => out.push(byte as char),
                _ => out.push_str(&format!("\\{byte:02X}")),
            }
        }
        out.push('"');
        out
    }

    fn list(types: &[MlirType], attrs: bool) -> String {
        let items: Vec<String> = types
            .iter()
            .map(|ty| {
                if attrs {
                    format!("{ty} {{llvm.noalias}}")
                } else {
                    ty.to_string()
                }
            })
            .collect();
        items.join(", ")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn types_round_trip(ty in mlir_type()) {
            let text = ty.to_string();
            prop_assert_eq!(MlirType::parse(&text), Ok(ty.clone()), "{}", text);
            // Spaced out, with comments, it reads the same.
            let spaced = text
                .replace('<', " <\n ")
                .replace(',', " , // c\n")
                .replace("?x", "? x ")
                .replace("*x", "* x ")
                .replace('>', " > ");
            prop_assert_eq!(MlirType::parse(&spaced), Ok(ty), "{}", spaced);
        }

        #[test]
        fn function_types_round_trip(function in function_type()) {
            let text = function.to_string();
            prop_assert_eq!(FunctionType::parse(&text), Ok(function), "{}", text);
        }

        #[test]
        fn headers_round_trip(
            function in function_type(),
            name in prop_oneof![
                "[A-Za-z_][A-Za-z0-9_$.]{0,12}",
                "\\PC{1,12}",
                proptest::collection::vec(any::<char>(), 1..8).prop_map(|c| c.into_iter().collect()),
            ],
            emit in any::<bool>(),
            named in any::<bool>(),
            attrs in any::<bool>(),
            visibility in proptest::sample::select(vec!["", "private ", "public ", "nested "]),
            body in proptest::sample::select(vec!["", " {\n  return\n}", " { \"}\" }"]),
        ) {
            let args: Vec<String> = function
                .args
                .iter()
                .enumerate()
                .map(|(i, ty)| {
                    let attr = if attrs { " {llvm.noalias}" } else { "" };
                    if named { format!("%arg{i}: {ty}{attr}") } else { format!("{ty}{attr}") }
                })
                .collect();
            let results = match function.results.as_slice() {
                [] if !attrs => String::new(),
                [single] if !attrs => format!(" -> {single}"),
                many => format!(" -> ({})", list(many, attrs)),
            };
            let attributes = if emit {
                " attributes {sym = \"x\", llvm.emit_c_interface, d = {a = [1, 2]}}"
            } else {
                " attributes {llvm.other}"
            };
            let text = format!(
                "func.func {visibility}{}({}){results}{attributes}{body}",
                symbol(&name),
                args.join(", ")
            );
            let expected = FunctionType {
                name: Some(name),
                emit_c_interface: emit,
                ..function
            };
            prop_assert_eq!(FunctionType::parse(&text), Ok(expected), "{}", text);
        }

        #[test]
        fn errors_stay_inside_the_input(
            tokens in proptest::collection::vec(proptest::sample::select(vec![
                "func.func", "func", " ", "@f", "@\"", "\"", "\\", "(", ")", "{", "}", "[", "]",
                "<", ">", "->", ",", ":", "%a", "memref", "strided", "offset", "affine_map",
                "d0", "?", "x", "4", "-", "0", "f32", "i65", "index", "*", "attributes",
                "llvm.emit_c_interface", "=", "loc", "//", "\n", "é", "#map", "#gpu.x",
            ]), 0..40),
        ) {
            let text: String = tokens.concat();
            for result in [FunctionType::parse(&text).map(drop), MlirType::parse(&text).map(drop)] {
                if let Err(error) = result {
                    prop_assert!(error.offset <= text.len(), "{:?}: {}", text, error);
                    prop_assert!(!error.message.is_empty());
                }
            }
            if let Ok(function) = FunctionType::parse(&text) {
                let printed = function.to_string();
                let again = FunctionType::parse(&printed);
                prop_assert_eq!(
                    again,
                    Ok(FunctionType { name: None, emit_c_interface: false, ..function }),
                    "{}", printed
                );
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,64}") {
            for result in [FunctionType::parse(&text).map(drop), MlirType::parse(&text).map(drop)] {
                if let Err(error) = result {
                    prop_assert!(error.offset <= text.len());
                }
            }
        }
    }
}
