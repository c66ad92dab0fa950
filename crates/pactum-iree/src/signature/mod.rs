//! IREE function signatures: one model, and a codec for each format IREE has written.
//!
//! A compiled IREE function carries its user-level signature in one or more of these forms.
//! Each codec parses into its own exact form, prints back the same text, and converts to and
//! from the shared model, [`Signature`], where the formats allow:
//!
//! | module | format | example |
//! |---|---|---|
//! | [`abi_json`] | V1 `iree.abi` reflection JSON | `{"a":[["ndarray","f32",1,16]],"r":["i32"],"v":1}` |
//! | [`raw`] | legacy raw function signature (`fv`/`f`) | `I15!B11!d10d128d64R6!S3!t6` |
//! | [`sip`] | legacy structured index path signature (`sipv`/`sip`) | `I12!S9!k0_0k1_1R3!_0` |
//! | [`cconv`] | VM calling convention of the function | `0rf_rI` |
//! | [`declaration`] | `iree.abi.declaration` text | `sync func @f(%x: tensor<4xf32>) -> (%y: i32)` |
//!
//! [`lexer`] splits the legacy formats into their tagged components. Every parser reports
//! malformed input as a [`ParseError`] with the byte offset and what was expected there.
//!
//! ```
//! use pactum_iree::signature::{ScalarType, Type};
//!
//! let matrix = Type::ndarray(ScalarType::F32, &[None, Some(3)]);
//! assert_eq!(matrix.to_string(), "ndarray<f32, [?, 3]>");
//! assert_eq!(Type::ndarray_of_rank(ScalarType::F32, 2).to_string(), "ndarray<f32, 2>");
//! ```

use std::fmt;

pub mod abi_json;
pub mod cconv;
pub mod declaration;
pub mod lexer;
pub mod raw;
pub mod sip;

/// Whether an integer type says how its bits are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    /// MLIR's and `iree.abi`'s `i32`: the bits, no sign stated.
    Signless,
    /// `si32`; the raw signature's `sint32`.
    Signed,
    /// `ui32`; the raw signature's `uint32`.
    Unsigned,
}

/// A value type: an integer of some width and signedness, or a floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// An integer of `bits` bits (1 to 64).
    Int {
        /// The width in bits.
        bits: u8,
        /// How the bits are read.
        signedness: Signedness,
    },
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ScalarType {
    /// `i8` (signless).
    pub const I8: ScalarType = ScalarType::int(8, Signedness::Signless);
    /// `i16` (signless).
    pub const I16: ScalarType = ScalarType::int(16, Signedness::Signless);
    /// `i32` (signless).
    pub const I32: ScalarType = ScalarType::int(32, Signedness::Signless);
    /// `i64` (signless).
    pub const I64: ScalarType = ScalarType::int(64, Signedness::Signless);

    /// An integer type.
    pub const fn int(bits: u8, signedness: Signedness) -> ScalarType {
        ScalarType::Int { bits, signedness }
    }

    /// The width in bits.
    pub const fn bits(self) -> u8 {
        match self {
            ScalarType::Int { bits, .. } => bits,
            ScalarType::F16 | ScalarType::BF16 => 16,
            ScalarType::F32 => 32,
            ScalarType::F64 => 64,
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        !matches!(self, ScalarType::Int { .. })
    }
}

/// MLIR spelling: `i32`, `si32`, `ui32`, `f16`, `bf16`, `f32`, `f64`.
impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ScalarType::Int { bits, signedness } => {
                let prefix = match signedness {
                    Signedness::Signless => "i",
                    Signedness::Signed => "si",
                    Signedness::Unsigned => "ui",
                };
                write!(f, "{prefix}{bits}")
            }
            ScalarType::F16 => f.write_str("f16"),
            ScalarType::BF16 => f.write_str("bf16"),
            ScalarType::F32 => f.write_str("f32"),
            ScalarType::F64 => f.write_str("f64"),
        }
    }
}

/// An n-dimensional array type: its element type and what is known of its shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NdArray {
    /// The element type: a [`Type::Scalar`] for numeric arrays, or a reference type
    /// ([`Type::String`], [`Type::Opaque`], ...) for arrays of references, which travel as a
    /// (values list, dims list) pair.
    pub element: Box<Type>,
    /// `None` when the rank is unknown; otherwise one entry per dimension, `None` where that
    /// extent is unknown (dynamic).
    pub dims: Option<Vec<Option<u64>>>,
}

impl NdArray {
    /// The rank, when known.
    pub fn rank(&self) -> Option<usize> {
        self.dims.as_ref().map(Vec::len)
    }

    /// The element type, when it is a value type.
    pub fn scalar_element(&self) -> Option<ScalarType> {
        match *self.element {
            Type::Scalar(scalar) => Some(scalar),
            _ => None,
        }
    }
}

/// The type of one argument, result or slot: what IREE's signature formats can describe.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A value type (integer or float), passed by value.
    Scalar(ScalarType),
    /// An n-dimensional array; numeric ones travel as `!hal.buffer_view`.
    NdArray(NdArray),
    /// A string, which travels as a list of bytes (`!util.list<i8>`).
    String,
    /// A reference to an object of unspecified type (raw `RefObject<?>`, `!hal.fence`, ...).
    Opaque,
    /// A structure of fixed arity whose slots are sequence positions (`iree.abi` `slist`).
    /// An empty slot has type [`Type::Null`].
    List(Vec<Type>),
    /// Like [`Type::List`], but read-only in languages that make the distinction (`stuple`).
    Tuple(Vec<Type>),
    /// A structure with named slots (`sdict`), in their declared order. Only the slot values
    /// are passed, in that order; the keys are not.
    Dict(Vec<(std::string::String, Type)>),
    /// A list of any length whose elements share one type (`py_homogeneous_list`).
    TypedList(Box<Type>),
    /// A named argument (`["named", key, T]`): a top-level argument that is passed by keyword.
    Named(std::string::String, Box<Type>),
    /// A null reference (`iree.abi` `null`).
    Null,
    /// A type the producer could not map (`"unknown"`, the raw signature's `U`).
    Unknown,
}

impl Type {
    /// An array with the given element type and dimensions (`None` = unknown extent).
    pub fn ndarray(element: ScalarType, dims: &[Option<u64>]) -> Type {
        Type::NdArray(NdArray {
            element: Box::new(Type::Scalar(element)),
            dims: Some(dims.to_vec()),
        })
    }

    /// An array of known rank whose extents are all unknown.
    pub fn ndarray_of_rank(element: ScalarType, rank: usize) -> Type {
        Type::ndarray(element, &vec![None; rank])
    }

    /// An array whose rank is unknown.
    pub fn ndarray_of_unknown_rank(element: ScalarType) -> Type {
        Type::NdArray(NdArray {
            element: Box::new(Type::Scalar(element)),
            dims: None,
        })
    }

    /// Whether values of this type are structures (lists, tuples, dicts, typed lists) that
    /// travel as one VM list.
    pub fn is_structure(&self) -> bool {
        matches!(
            self,
            Type::List(_) | Type::Tuple(_) | Type::Dict(_) | Type::TypedList(_)
        )
    }

    /// The type without a [`Type::Named`] wrapper.
    pub fn unnamed(&self) -> &Type {
        match self {
            Type::Named(_, inner) => inner.unnamed(),
            other => other,
        }
    }
}

/// A short readable form, used in explanations and error messages:
/// `i32`, `ndarray<f32, 2>` (rank 2, extents unknown), `ndarray<f32, [4, ?]>`, `ndarray<f32>`
/// (rank unknown), `string`, `ref`, `list[i32, f32]`, `tuple[...]`, `dict{a: i32}`,
/// `list<i32>` (typed list), `x: i32` (named), `null`, `unknown`.
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn slots(
            f: &mut fmt::Formatter<'_>,
            open: &str,
            types: &[Type],
            close: &str,
        ) -> fmt::Result {
            f.write_str(open)?;
            for (i, ty) in types.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{ty}")?;
            }
            f.write_str(close)
        }
        match self {
            Type::Scalar(scalar) => write!(f, "{scalar}"),
            Type::NdArray(array) => {
                write!(f, "ndarray<{}", array.element)?;
                match &array.dims {
                    None => {}
                    Some(dims) if !dims.is_empty() && dims.iter().all(Option::is_none) => {
                        write!(f, ", {}", dims.len())?
                    }
                    Some(dims) if dims.is_empty() => f.write_str(", 0")?,
                    Some(dims) => {
                        f.write_str(", [")?;
                        for (i, dim) in dims.iter().enumerate() {
                            if i > 0 {
                                f.write_str(", ")?;
                            }
                            match dim {
                                Some(extent) => write!(f, "{extent}")?,
                                None => f.write_str("?")?,
                            }
                        }
                        f.write_str("]")?
                    }
                }
                f.write_str(">")
            }
            Type::String => f.write_str("string"),
            Type::Opaque => f.write_str("ref"),
            Type::List(types) => slots(f, "list[", types, "]"),
            Type::Tuple(types) => slots(f, "tuple[", types, "]"),
            Type::Dict(entries) => {
                f.write_str("dict{")?;
                for (i, (key, ty)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{key:?}: {ty}")?;
                }
                f.write_str("}")
            }
            Type::TypedList(element) => write!(f, "list<{element}>"),
            Type::Named(name, ty) => write!(f, "{name}: {ty}"),
            Type::Null => f.write_str("null"),
            Type::Unknown => f.write_str("unknown"),
        }
    }
}

/// A function's user-level signature: its arguments and results, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The arguments. Top-level [`Type::Named`] entries are keyword arguments.
    pub args: Vec<Type>,
    /// The results.
    pub results: Vec<Type>,
}

/// `(a: i32, ndarray<f32, 2>) -> (i32)`.
impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, types: &[Type]| -> fmt::Result {
            f.write_str("(")?;
            for (i, ty) in types.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{ty}")?;
            }
            f.write_str(")")
        };
        list(f, &self.args)?;
        f.write_str(" -> ")?;
        list(f, &self.results)
    }
}

pub use pactum_text::ParseError;

/// A signature that the target format cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertError {
    /// The format converted to.
    pub target: &'static str,
    /// Where in the signature (`args[1]`, `results[0][2]`).
    pub path: std::string::String,
    /// Why it cannot be expressed.
    pub message: std::string::String,
}

impl ConvertError {
    /// An error converting the item at `path` to `target`.
    pub fn new(
        target: &'static str,
        path: impl Into<std::string::String>,
        message: impl Into<std::string::String>,
    ) -> ConvertError {
        ConvertError {
            target,
            path: path.into(),
            message: message.into(),
        }
    }
}

/// `cannot express args[1] as a raw signature: ...`.
impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot express {} as {}: {}",
            self.path, self.target, self.message
        )
    }
}

impl std::error::Error for ConvertError {}

impl From<ConvertError> for pactum::Error {
    fn from(error: ConvertError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}
