//! `iree.abi.declaration`: the human-readable signature IREE stores on every wrapped export.
//!
//! The compiler writes it from the source function, before tensors become buffer views:
//!
//! ```text
//! sync func @add_one(%x_in: tensor<4xf32>) -> (%y_out: tensor<4xf32>)
//! async func @f(%input0: tensor<?x3xf32> {iree.abi.affinity = #hal.device.promise<@dev>}) -> ()
//! ```
//!
//! `sync` or `async` (the `coarse-fences` invocation model, whose VM function also takes a
//! wait and a signal fence that the declaration does not list), the export name, then the
//! arguments and results: `%name: type`, with the value's other attributes appended as
//! ` {k = v, …}`. Names default to `input0…` and `output0…`; an `iree.abi.name` attribute
//! replaces them. Separators are exactly `, `, `: ` and ` -> `, as the compiler writes them;
//! [`Declaration::parse`] requires them, so that [`Declaration`]'s `Display` gives back the
//! parsed text byte for byte.
//!
//! Types are read into [`DeclType`]: `tensor<4x?x3xf32>`, `tensor<f32>` (rank 0),
//! `tensor<*xf32>` (unranked), optionally with an encoding (`tensor<4xf32, #enc>`); the
//! scalars `i1`…`i64`, `si8`, `ui64`, `f16`, `bf16`, `f32`, `f64` and `index`; dialect types
//! `!dialect.name` with an optional balanced `<…>` body (`!util.list<?>`, `!hal.fence`); and
//! any other builtin type (`complex<f32>`, `f8E4M3FN`, `i128`), kept as written.
//!
//! [`Declaration::to_signature`] maps the types to the model:
//!
//! | declaration | [`Type`] |
//! |---|---|
//! | `tensor<…xT>` | [`Type::NdArray`] of `T` (`*x`: rank unknown; any encoding is dropped) |
//! | `i32`, `si8`, `ui64`, `f32`, … | [`Type::Scalar`] |
//! | `index` | [`Type::Scalar`] `i64` (signless; the VM passes `index` as 64 bits) |
//! | `!hal.buffer_view` | [`Type::NdArray`] of [`Type::Unknown`], rank unknown |
//! | `!util.list<?>` | [`Type::TypedList`] of [`Type::Unknown`]: a list of values of any type |
//! | `!util.list<i8>` | [`Type::String`] (the V1 ABI's byte string) |
//! | `!util.list<T>` | [`Type::TypedList`] of `T` |
//! | any other `!dialect.type` | [`Type::Opaque`] |
//!
//! A name other than the default `inputN`/`outputN` becomes a [`Type::Named`] wrapper.
//!
//! [`Declaration::implied_by`] goes the other way, writing what the compiler writes for the
//! source function of an `iree.abi` signature. It is not a perfect inverse: structures of
//! every kind become `!util.list<?>`, and when the results are inlined (one `slist`,
//! `stuple` or `sdict` result, see [`inlined_results`](super::cconv::inlined_results)) the
//! source function returns the slots, so the declaration lists them as `%output0…`: a
//! declaration alone cannot tell inlined slots from separate results.
//!
//! ```
//! use pactum_iree::signature::declaration::Declaration;
//! use pactum_iree::signature::{ScalarType, Type};
//!
//! let text = "sync func @add_one(%x_in: tensor<4xf32>) -> (%output0: tensor<4xf32>)";
//! let declaration = Declaration::parse(text)?;
//! assert_eq!(declaration.to_string(), text);
//! let signature = declaration.to_signature()?;
//! let vector = Type::ndarray(ScalarType::F32, &[Some(4)]);
//! assert_eq!(signature.args, vec![Type::Named("x_in".into(), Box::new(vector.clone()))]);
//! assert_eq!(signature.results, vec![vector]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::ops::{Deref, DerefMut};

use pactum_text::Cursor;

use super::{
    ConvertError, ConvertErrorKind, NdArray, ParseError, ScalarType, Signature, Signedness, Type,
};

/// The format name used in [`ParseError`]s and in [`ConvertError`]s from
/// [`Declaration::implied_by`].
pub const FORMAT: &str = "iree.abi.declaration";

/// The target named in [`ConvertError`]s from [`Declaration::to_signature`].
pub const SIGNATURE_TARGET: &str = "a pactum signature";

/// The deepest nesting of types and brackets accepted.
pub const MAX_DEPTH: usize = 256;

/// How the export is invoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvocationModel {
    /// `sync`: the call returns when the results are ready.
    Sync,
    /// `async`: the `coarse-fences` model; the VM function takes two more arguments, a wait
    /// fence and a signal fence, which the declaration does not list.
    Async,
}

/// `sync` or `async`.
impl fmt::Display for InvocationModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InvocationModel::Sync => "sync",
            InvocationModel::Async => "async",
        })
    }
}

/// A parsed `iree.abi.declaration`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Declaration {
    /// `sync` or `async`.
    pub model: InvocationModel,
    /// The export's name (after `@`).
    pub name: String,
    /// The arguments.
    pub args: Vec<Param>,
    /// The results.
    pub results: Vec<Param>,
}

/// One argument or result: `%name: type {attrs}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    /// The name, without the `%`.
    pub name: String,
    /// The type.
    pub ty: DeclType,
    /// The attribute text between the braces (`iree.abi.affinity = #hal.device.promise<@dev>`),
    /// when there are attributes.
    pub attrs: Option<String>,
}

/// A type as written in a declaration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeclType {
    /// `tensor<…>`.
    Tensor(TensorType),
    /// `i32`, `si8`, `ui64`, `f16`, `bf16`, `f32`, `f64` (integers of 1 to 64 bits).
    Scalar(ScalarType),
    /// `index`.
    Index,
    /// `!name` or `!name<body>`, e.g. `!util.list<?>` (name `util.list`, body `?`).
    Dialect {
        /// The name after `!`: `hal.buffer_view`, `util.list`.
        name: String,
        /// The text between the outer angle brackets, when there are any.
        body: Option<String>,
    },
    /// Any other builtin type, as written: `complex<f32>`, `f8E4M3FN`, `i128`, `none`.
    Builtin {
        /// The keyword: `complex`, `f8E4M3FN`.
        name: String,
        /// The text between the outer angle brackets, when there are any.
        body: Option<String>,
    },
}

/// `tensor<4x?xf32>`: a tensor type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// `None` for `tensor<*x…>` (unranked); otherwise the extents, `None` for `?`.
    pub dims: Option<Vec<Option<u64>>>,
    /// The element type.
    pub element: Box<DeclType>,
    /// The encoding attribute after `, `, as written.
    pub encoding: Option<String>,
}

/// MLIR's spelling, as parsed.
impl fmt::Display for DeclType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = |f: &mut fmt::Formatter<'_>, body: &Option<String>| match body {
            Some(body) => write!(f, "<{body}>"),
            None => Ok(()),
        };
        match self {
            DeclType::Tensor(tensor) => {
                f.write_str("tensor<")?;
                match &tensor.dims {
                    None => f.write_str("*x")?,
                    Some(dims) => {
                        for dim in dims {
                            match dim {
                                Some(extent) => write!(f, "{extent}x")?,
                                None => f.write_str("?x")?,
                            }
                        }
                    }
                }
                write!(f, "{}", tensor.element)?;
                if let Some(encoding) = &tensor.encoding {
                    write!(f, ", {encoding}")?;
                }
                f.write_str(">")
            }
            DeclType::Scalar(scalar) => write!(f, "{scalar}"),
            DeclType::Index => f.write_str("index"),
            DeclType::Dialect { name, body: b } => {
                write!(f, "!{name}")?;
                body(f, b)
            }
            DeclType::Builtin { name, body: b } => {
                f.write_str(name)?;
                body(f, b)
            }
        }
    }
}

/// `%name: type` or `%name: type {attrs}`.
impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}: {}", self.name, self.ty)?;
        if let Some(attrs) = &self.attrs {
            write!(f, " {{{attrs}}}")?;
        }
        Ok(())
    }
}

/// `sync func @name(%a: t, %b: t) -> (%c: t)`: the text it was parsed from.
impl fmt::Display for Declaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, params: &[Param]| -> fmt::Result {
            for (i, param) in params.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{param}")?;
            }
            Ok(())
        };
        write!(f, "{} func @{}(", self.model, self.name)?;
        list(f, &self.args)?;
        f.write_str(") -> (")?;
        list(f, &self.results)?;
        f.write_str(")")
    }
}

impl Declaration {
    /// Parses a declaration.
    pub fn parse(text: &str) -> Result<Declaration, ParseError> {
        let mut cursor = Parser::new(text);
        let model = if cursor.eat("sync ") {
            InvocationModel::Sync
        } else if cursor.eat("async ") {
            InvocationModel::Async
        } else {
            return Err(cursor.expected("'sync ' or 'async ' (the invocation model)"));
        };
        cursor.expect_exactly("func @", "after the invocation model")?;
        let Some(name_len) = cursor.rest().find('(') else {
            return Err(cursor.error_at(text.len(), "expected '(' after the function name"));
        };
        if name_len == 0 {
            return Err(cursor.expected("a function name after '@'"));
        }
        let name_start = cursor.offset();
        cursor.advance(name_len);
        let name = text[name_start..cursor.offset()].to_string();
        cursor.expect_exactly("(", "")?;
        let args = cursor.params()?;
        cursor.expect_exactly(") -> (", "after the arguments")?;
        let results = cursor.params()?;
        cursor.expect_exactly(")", "after the results")?;
        if !cursor.at_end() {
            return Err(cursor.expected("the end of the text after the closing ')'"));
        }
        Ok(Declaration {
            model,
            name,
            args,
            results,
        })
    }

    /// The signature the declaration describes (see the module documentation for the
    /// mapping). Fails for types the model has no counterpart for, such as `complex<f32>`.
    pub fn to_signature(&self) -> Result<Signature, ConvertError> {
        let convert =
            |params: &[Param], side: &str, default: &str| -> Result<Vec<Type>, ConvertError> {
                params
                    .iter()
                    .enumerate()
                    .map(|(i, param)| {
                        let ty = param.ty.convert(&format!("{side}[{i}]"), 0)?;
                        Ok(if param.name == format!("{default}{i}") {
                            ty
                        } else {
                            Type::Named(param.name.clone(), Box::new(ty))
                        })
                    })
                    .collect()
            };
        Ok(Signature {
            args: convert(&self.args, "args", "input")?,
            results: convert(&self.results, "results", "output")?,
        })
    }

    /// What the compiler writes for the source function of an `iree.abi` signature named
    /// `name`.
    ///
    /// Arguments are `%input0…` and results `%output0…`, except that a top-level
    /// [`Type::Named`] keeps its name (as `iree.abi.name` does); arrays of values become
    /// `tensor<…>` (arrays of [`Type::Unknown`] `!hal.buffer_view`), structures
    /// `!util.list<?>`, strings `!util.list<i8>`, opaque references `!util.object`, scalars
    /// their MLIR names. Inlined results (see
    /// [`inlined_results`](super::cconv::inlined_results)) are listed slot by slot.
    /// Fails for [`Type::Null`], [`Type::Unknown`], arrays of references and nested
    /// [`Type::Named`], which have no source type.
    pub fn implied_by(
        name: &str,
        signature: &Signature,
        model: InvocationModel,
    ) -> Result<Declaration, ConvertError> {
        let param = |ty: &Type, path: String, default: String| -> Result<Param, ConvertError> {
            let (name, ty) = match ty {
                Type::Named(name, inner) => (name.clone(), &**inner),
                ty => (default, ty),
            };
            Ok(Param {
                name,
                ty: source_type(ty, &path)?,
                attrs: None,
            })
        };
        let args = signature
            .args
            .iter()
            .enumerate()
            .map(|(i, ty)| param(ty, format!("args[{i}]"), format!("input{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        let slots: Vec<(&Type, String)> = match signature.results.as_slice() {
            // The single-structure cases are exactly those of `inlined_results`.
            [Type::List(slots) | Type::Tuple(slots)] => slots
                .iter()
                .enumerate()
                .map(|(i, slot)| (slot, format!("results[0][{i}]")))
                .collect(),
            [Type::Dict(entries)] => entries
                .iter()
                .map(|(key, slot)| (slot, format!("results[0][{key:?}]")))
                .collect(),
            all => all
                .iter()
                .enumerate()
                .map(|(i, ty)| (ty, format!("results[{i}]")))
                .collect(),
        };
        let results = slots
            .into_iter()
            .enumerate()
            .map(|(i, (ty, path))| param(ty, path, format!("output{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Declaration {
            model,
            name: name.to_string(),
            args,
            results,
        })
    }
}

/// [`Declaration::parse`].
impl std::str::FromStr for Declaration {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Declaration, ParseError> {
        Declaration::parse(text)
    }
}

/// [`DeclType::parse`].
impl std::str::FromStr for DeclType {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<DeclType, ParseError> {
        DeclType::parse(text)
    }
}

/// The source (MLIR) type for a value of type `ty`.
fn source_type(ty: &Type, path: &str) -> Result<DeclType, ConvertError> {
    let list = |body: &str| DeclType::Dialect {
        name: "util.list".into(),
        body: Some(body.into()),
    };
    match ty {
        Type::Scalar(scalar) => Ok(DeclType::Scalar(*scalar)),
        Type::NdArray(array) => match &*array.element {
            Type::Scalar(scalar) => Ok(DeclType::Tensor(TensorType {
                dims: array.dims.clone(),
                element: Box::new(DeclType::Scalar(*scalar)),
                encoding: None,
            })),
            Type::Unknown => Ok(DeclType::Dialect {
                name: "hal.buffer_view".into(),
                body: None,
            }),
            other => Err(ConvertError::new(
                FORMAT,
                path,
                ConvertErrorKind::NoTensorType(other.clone()),
            )),
        },
        Type::List(_) | Type::Tuple(_) | Type::Dict(_) | Type::TypedList(_) => Ok(list("?")),
        Type::String => Ok(list("i8")),
        Type::Opaque => Ok(DeclType::Dialect {
            name: "util.object".into(),
            body: None,
        }),
        Type::Named(..) => Err(ConvertError::new(
            FORMAT,
            path,
            ConvertErrorKind::NestedName(ty.clone()),
        )),
        Type::Null | Type::Unknown => Err(ConvertError::new(
            FORMAT,
            path,
            ConvertErrorKind::NoMlirType(ty.clone()),
        )),
    }
}

impl DeclType {
    /// Parses one type, which must be the whole of `text`.
    pub fn parse(text: &str) -> Result<DeclType, ParseError> {
        DeclType::parse_at(text, 0)
    }

    fn parse_at(text: &str, depth: usize) -> Result<DeclType, ParseError> {
        let mut cursor = Parser::new(text);
        let ty = cursor.ty(depth)?;
        if !cursor.at_end() {
            return Err(cursor.expected("the end of the text after the type"));
        }
        Ok(ty)
    }

    /// The model's type for a value of this type (see the module documentation).
    pub fn to_type(&self) -> Result<Type, ConvertError> {
        self.convert("type", 0)
    }

    /// [`to_type`](DeclType::to_type) for the value at `path`, `depth` levels down.
    fn convert(&self, path: &str, depth: usize) -> Result<Type, ConvertError> {
        let unsupported = || {
            ConvertError::new(
                SIGNATURE_TARGET,
                path,
                ConvertErrorKind::NoModelType {
                    declared: self.to_string(),
                },
            )
        };
        if depth > MAX_DEPTH {
            return Err(ConvertError::new(
                SIGNATURE_TARGET,
                path,
                ConvertErrorKind::TooDeep {
                    what: "types",
                    limit: MAX_DEPTH,
                },
            ));
        }
        match self {
            DeclType::Scalar(scalar) => Ok(Type::Scalar(*scalar)),
            DeclType::Index => Ok(Type::Scalar(ScalarType::I64)),
            DeclType::Tensor(tensor) => {
                let element = match &*tensor.element {
                    DeclType::Scalar(scalar) => *scalar,
                    DeclType::Index => ScalarType::I64,
                    _ => return Err(unsupported()),
                };
                Ok(Type::NdArray(NdArray {
                    element: Box::new(Type::Scalar(element)),
                    dims: tensor.dims.clone(),
                }))
            }
            DeclType::Dialect { name, body } => match (name.as_str(), body.as_deref()) {
                ("hal.buffer_view", None) => Ok(Type::NdArray(NdArray {
                    element: Box::new(Type::Unknown),
                    dims: None,
                })),
                ("util.list", None | Some("?")) => Ok(Type::TypedList(Box::new(Type::Unknown))),
                ("util.list", Some("i8")) => Ok(Type::String),
                ("util.list", Some(element)) => {
                    let element = DeclType::parse_at(element, depth + 1).map_err(|e| {
                        ConvertError::new(
                            SIGNATURE_TARGET,
                            path,
                            ConvertErrorKind::ElementType {
                                declared: self.to_string(),
                                error: e,
                            },
                        )
                    })?;
                    let element = element.convert(&format!("{path}.element"), depth + 1)?;
                    Ok(Type::TypedList(Box::new(element)))
                }
                _ => Ok(Type::Opaque),
            },
            DeclType::Builtin { .. } => Err(unsupported()),
        }
    }
}

/// The parser: a [`Cursor`] (reached through `Deref`) with the declaration's rules on top.
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
    /// A parser at the start of `text`. Declarations have no length limit: the parser is
    /// linear and bounds nesting by [`MAX_DEPTH`], so a huge one is refused as quickly as it
    /// is read (and the hostile suite expects the nesting error from an 11 MB one).
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            cursor: Cursor::unbounded(text, FORMAT),
        }
    }

    /// Moves past `literal`, or fails with `expected "{literal}" {context}, found ...` at the
    /// first byte that differs from it (the separators are exact, so that is the byte at
    /// fault).
    fn expect_exactly(&mut self, literal: &str, context: &str) -> Result<(), ParseError> {
        if self.eat(literal) {
            return Ok(());
        }
        let same = self
            .rest()
            .bytes()
            .zip(literal.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        self.advance(same);
        let context = if context.is_empty() {
            String::new()
        } else {
            format!(" {context}")
        };
        Err(self.expected(&format!("{literal:?}{context}")))
    }

    /// Zero or more `%name: type {attrs}`, separated by `, `, up to a `)`.
    fn params(&mut self) -> Result<Vec<Param>, ParseError> {
        let mut params = Vec::new();
        if self.peek() == Some(b')') {
            return Ok(params);
        }
        loop {
            params.push(self.param()?);
            if !self.eat(", ") {
                return Ok(params);
            }
        }
    }

    fn param(&mut self) -> Result<Param, ParseError> {
        self.expect_exactly("%", "(the start of a value name)")?;
        // The name is `iree.abi.name`'s text, written unquoted, so it runs to the ':'; a
        // separator before it means the ':' is missing.
        let name = self
            .take_while(|b| !matches!(b, b':' | b',' | b'(' | b')'))
            .to_string();
        self.expect_exactly(": ", "after the value name")?;
        let ty = self.ty(0)?;
        let attrs = if self.starts_with(" {") {
            let open = self.offset() + 1;
            let close = scan_until(self.text(), open + 1, b'}', 0)?;
            self.set_offset(close + 1);
            Some(self.text()[open + 1..close].to_string())
        } else {
            None
        };
        Ok(Param { name, ty, attrs })
    }

    /// `[A-Za-z0-9_.$]*` at the cursor.
    fn ident(&mut self) -> &'a str {
        self.take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'))
    }

    /// `<…>` at the cursor, balanced: its inner text.
    fn body(&mut self, depth: usize) -> Result<Option<String>, ParseError> {
        if self.peek() != Some(b'<') {
            return Ok(None);
        }
        let open = self.offset();
        let close = scan_until(self.text(), open + 1, b'>', depth + 1)?;
        self.set_offset(close + 1);
        Ok(Some(self.text()[open + 1..close].to_string()))
    }

    fn ty(&mut self, depth: usize) -> Result<DeclType, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.expected(&format!("types nested at most {MAX_DEPTH} levels deep")));
        }
        let start = self.offset();
        if self.eat("!") {
            let name = self.ident();
            if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                self.set_offset(start + 1);
                return Err(self.expected("a dialect type name after '!'"));
            }
            let name = name.to_string();
            let body = self.body(depth)?;
            return Ok(DeclType::Dialect { name, body });
        }
        let name = self.ident();
        if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            self.set_offset(start);
            return Err(self.expected("a type"));
        }
        if name == "tensor" {
            self.expect_exactly("<", "after 'tensor'")?;
            return self.tensor(depth);
        }
        if self.peek() != Some(b'<') {
            if name == "index" {
                return Ok(DeclType::Index);
            }
            if let Some(scalar) = scalar(name) {
                return Ok(DeclType::Scalar(scalar));
            }
        }
        let name = name.to_string();
        let body = self.body(depth)?;
        Ok(DeclType::Builtin { name, body })
    }

    /// The rest of `tensor<` … `>`.
    fn tensor(&mut self, depth: usize) -> Result<DeclType, ParseError> {
        let dims = if self.eat("*x") {
            None
        } else {
            let mut dims = Vec::new();
            loop {
                match self.peek() {
                    Some(b'?') => {
                        self.advance(1);
                        dims.push(None);
                    }
                    Some(b'0'..=b'9') => {
                        let start = self.offset();
                        let digits = self.take_while(|b| b.is_ascii_digit());
                        let extent = if digits.len() > 1 && digits.starts_with('0') {
                            Err("a dimension without a leading zero")
                        } else {
                            digits
                                .parse::<u64>()
                                .map_err(|_| "a dimension that fits in 64 bits")
                        };
                        match extent {
                            Ok(extent) => dims.push(Some(extent)),
                            Err(what) => {
                                self.set_offset(start);
                                return Err(self.expected(what));
                            }
                        }
                    }
                    _ => break,
                }
                self.expect_exactly("x", "after the dimension")?;
            }
            Some(dims)
        };
        let element = self.ty(depth + 1)?;
        let encoding = if self.eat(", ") {
            let start = self.offset();
            let close = scan_until(self.text(), start, b'>', depth + 1)?;
            if close == start {
                return Err(self.expected("an encoding attribute after ', '"));
            }
            self.set_offset(close);
            Some(self.text()[start..close].to_string())
        } else {
            None
        };
        self.expect_exactly(">", "to close the tensor type")?;
        Ok(DeclType::Tensor(TensorType {
            dims,
            element: Box::new(element),
            encoding,
        }))
    }
}

/// `i1`…`i64`, `si…`, `ui…`, `f16`, `bf16`, `f32`, `f64`; `None` for anything else
/// (including widths with leading zeros, which would not print back the same).
fn scalar(name: &str) -> Option<ScalarType> {
    match name {
        "f16" => return Some(ScalarType::F16),
        "bf16" => return Some(ScalarType::BF16),
        "f32" => return Some(ScalarType::F32),
        "f64" => return Some(ScalarType::F64),
        _ => {}
    }
    let (signedness, digits) = if let Some(digits) = name.strip_prefix("si") {
        (Signedness::Signed, digits)
    } else if let Some(digits) = name.strip_prefix("ui") {
        (Signedness::Unsigned, digits)
    } else {
        (Signedness::Signless, name.strip_prefix('i')?)
    };
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
        .then_some(ScalarType::int(bits, signedness))
}

/// The offset of the first `stop` byte at bracket depth 0 from `start`, skipping balanced
/// `<>`, `()`, `[]`, `{}`, quoted strings and `->` arrows (as in affine maps).
fn scan_until(text: &str, start: usize, stop: u8, depth: usize) -> Result<usize, ParseError> {
    let bytes = text.as_bytes();
    let mut open: Vec<(usize, u8)> = Vec::new();
    let mut pos = start;
    while let Some(&byte) = bytes.get(pos) {
        match byte {
            b'"' => {
                let quote = pos;
                pos += 1;
                loop {
                    match bytes.get(pos) {
                        Some(b'\\') => pos += 2,
                        Some(b'"') => break,
                        Some(_) => pos += 1,
                        None => {
                            return Err(ParseError::new(FORMAT, quote, "unterminated string"));
                        }
                    }
                }
            }
            b'-' if bytes.get(pos + 1) == Some(&b'>') => pos += 1,
            b'<' | b'(' | b'[' | b'{' => {
                if depth + open.len() >= MAX_DEPTH {
                    return Err(ParseError::new(
                        FORMAT,
                        pos,
                        format!("brackets nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
                let close = match byte {
                    b'<' => b'>',
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                open.push((pos, close));
            }
            b'>' | b')' | b']' | b'}' => match open.last() {
                Some(&(_, close)) if close == byte => {
                    open.pop();
                }
                Some(&(at, close)) => {
                    return Err(ParseError::new(
                        FORMAT,
                        pos,
                        format!(
                            "unbalanced brackets: expected '{}' (closing the '{}' at byte {at}), \
                             found '{}'",
                            close as char, bytes[at] as char, byte as char
                        ),
                    ));
                }
                None if byte == stop => return Ok(pos),
                None => {
                    return Err(ParseError::new(
                        FORMAT,
                        pos,
                        format!(
                            "unbalanced brackets: expected '{}', found '{}'",
                            stop as char, byte as char
                        ),
                    ));
                }
            },
            _ => {}
        }
        pos += 1;
    }
    let at = open.last().map_or(start.saturating_sub(1), |&(at, _)| at);
    Err(ParseError::new(
        FORMAT,
        at,
        format!(
            "unclosed bracket: expected '{}' before the end of the text",
            stop as char
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets() {
        let text = "<(d0) -> (d0), \"a>b\", [1]>";
        assert_eq!(scan_until(text, 1, b'>', 0).unwrap(), text.len() - 1);
        assert_eq!(scan_until("<a)>", 1, b'>', 0).unwrap_err().offset, 2);
        assert_eq!(scan_until("<a(b>", 1, b'>', 0).unwrap_err().offset, 4);
        assert_eq!(scan_until("<\"ab", 1, b'>', 0).unwrap_err().offset, 1);
    }

    #[test]
    fn scalars() {
        assert_eq!(scalar("si8"), Some(ScalarType::int(8, Signedness::Signed)));
        assert_eq!(
            scalar("ui64"),
            Some(ScalarType::int(64, Signedness::Unsigned))
        );
        for other in ["i128", "i0", "si08", "index", "f8E4M3FN", "u8"] {
            assert_eq!(scalar(other), None, "{other}");
        }
    }
}
