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

// Parsers of untrusted text: safe Rust only.
#![forbid(unsafe_code)]

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

/// A signature that the target format cannot express: the target, where in the signature,
/// and a [`ConvertErrorKind`] to match on.
///
/// ```
/// use pactum_iree::signature::raw::RawSignature;
/// use pactum_iree::signature::{ConvertErrorKind, Signature, Type};
///
/// let signature = Signature { args: vec![Type::String], results: vec![] };
/// let error = RawSignature::from_signature(&signature).unwrap_err();
/// assert!(matches!(error.kind, ConvertErrorKind::NotFlat(Type::String)));
/// assert_eq!(error.path, "args[0]");
/// assert!(error.to_string().starts_with("cannot express args[0] as a raw signature: string is not"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertError {
    /// The format converted to (`a raw signature`, `iree.abi JSON`, ...; each codec module
    /// names its own in a `FORMAT` or `TARGET` constant).
    pub target: &'static str,
    /// Where in the signature (`args[1]`, `results[0][2]`, `results[0]["key"]`).
    pub path: std::string::String,
    /// Why it cannot be expressed.
    pub kind: ConvertErrorKind,
}

impl ConvertError {
    /// An error converting the item at `path` to `target`.
    pub fn new(
        target: &'static str,
        path: impl Into<std::string::String>,
        kind: ConvertErrorKind,
    ) -> ConvertError {
        ConvertError {
            target,
            path: path.into(),
            kind,
        }
    }
}

/// `cannot express args[1] as a raw signature: ...`.
impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot express {} as {}: {}",
            self.path, self.target, self.kind
        )
    }
}

/// Why a [`ConvertError`] happened. Its `Display` is the reason alone.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConvertErrorKind {
    // -- Nesting and shape of the structure.
    /// Types nest deeper than pactum's bound.
    TooDeep {
        /// What nests (`type records`, `structures`, `types`).
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// A [`Type::Named`] below the top level.
    NestedName(Type),
    /// A [`Type::Named`] anywhere but a top-level argument: the raw signature drops names.
    NameDropped(Type),
    /// A SIP structure with several root values, where the model has one per side.
    SeveralRoots {
        /// How many.
        count: usize,
    },

    // -- Types the target has no form for.
    /// An integer with a signedness `iree.abi` cannot record (it has signless integers only).
    NotSignless(ScalarType),
    /// An integer width outside 1 to 64 bits.
    IntegerWidth(ScalarType),
    /// A type `iree.abi` has no record for (strings, opaque references).
    NoRecord(Type),
    /// A scalar type the raw signature has no type code for.
    NoScalarCode(ScalarType),
    /// A buffer whose elements are not numbers (raw signature).
    NonNumericBuffer(Type),
    /// A buffer of unknown rank (raw signature).
    UnknownRank,
    /// An extent that does not fit the raw signature's 32 bits.
    ExtentTooLarge(u64),
    /// Not a buffer, scalar or reference: the raw signature has only flat items.
    NotFlat(Type),
    /// An array whose elements have no MLIR tensor element type.
    NoTensorType(Type),
    /// A type with no MLIR source type (null, unknown).
    NoMlirType(Type),
    /// A type with no VM type in a calling convention (unknown).
    NoVmType(Type),
    /// A declaration type with no counterpart in the signature model (`complex<f32>`).
    NoModelType {
        /// The type as the declaration writes it.
        declared: std::string::String,
    },
    /// The element type of a declaration's `!util.list<...>` does not parse.
    ElementType {
        /// The list type as the declaration writes it.
        declared: std::string::String,
        /// Why its element type does not parse.
        error: ParseError,
    },

    // -- Raw indices and keys of a SIP structure.
    /// A SIP leaf's raw index is past the raw signature's items.
    RawIndexOutOfRange {
        /// The raw index.
        index: i32,
        /// How many items the raw signature has.
        items: usize,
    },
    /// A raw index below zero.
    NegativeRawIndex(i32),
    /// A sequence key outside `0..limit`.
    SequenceKeyOutOfRange {
        /// The key.
        key: i32,
        /// The bound.
        limit: usize,
    },
    /// A sequence key below zero.
    NegativeSequenceKey(i32),
    /// A sequence key that appears twice.
    DuplicateSequenceKey(i32),
    /// A dict key that appears twice.
    DuplicateDictKey(std::string::String),

    // -- Building a SIP structure ([`sip::SipMangler`]).
    /// A key path longer than the nesting bound.
    PathTooLong {
        /// The number of keys.
        keys: usize,
        /// The bound.
        limit: usize,
    },
    /// A key path that continues past a leaf.
    PathThroughLeaf {
        /// The leaf's raw index.
        raw_index: i32,
    },
    /// A dict key at a level that is a sequence.
    DictKeyInSequence(std::string::String),
    /// A sequence key at a level that is a dict.
    SequenceKeyInDict(i32),
    /// The leaf at the path already holds a raw index.
    LeafTaken {
        /// The raw index it holds.
        raw_index: i32,
    },
    /// A key path that ends on a sequence or dict, not on a leaf.
    PathEndsOnStructure,
}

impl fmt::Display for ConvertErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConvertErrorKind::TooDeep { what, limit } => {
                write!(f, "{what} nested deeper than {limit} levels")
            }
            ConvertErrorKind::NestedName(_) => {
                f.write_str("a named value is only allowed as a top-level argument or result")
            }
            ConvertErrorKind::NameDropped(ty) => write!(
                f,
                "{ty}: only a top-level argument can be named, and the raw signature drops names"
            ),
            ConvertErrorKind::SeveralRoots { count } => write!(
                f,
                "the SIP structure has {count} root values; the model has one structure per side"
            ),
            ConvertErrorKind::NotSignless(ty) => write!(
                f,
                "{ty} has no record: iree.abi integers are signless (i8, i32, ...)"
            ),
            ConvertErrorKind::IntegerWidth(ty) => {
                write!(f, "{ty} has no record: integers are 1 to 64 bits")
            }
            ConvertErrorKind::NoRecord(Type::String) => {
                f.write_str("strings have no iree.abi record")
            }
            ConvertErrorKind::NoRecord(Type::Opaque) => {
                f.write_str("opaque references have no iree.abi record")
            }
            ConvertErrorKind::NoRecord(ty) => write!(f, "{ty} has no iree.abi record"),
            ConvertErrorKind::NoScalarCode(scalar) => write!(
                f,
                "{scalar} has no raw type code (codes exist for 8/16/32/64-bit integers, i1, \
                 f16, bf16, f32 and f64)"
            ),
            ConvertErrorKind::NonNumericBuffer(element) => {
                write!(f, "a buffer's elements must be numbers, not {element}")
            }
            ConvertErrorKind::UnknownRank => f.write_str("a buffer needs a known rank"),
            ConvertErrorKind::ExtentTooLarge(extent) => write!(
                f,
                "extent {extent} does not fit the raw signature's 32 bits"
            ),
            ConvertErrorKind::NotFlat(ty) => write!(
                f,
                "{ty} is not a buffer, scalar or reference; the raw signature has only flat \
                 items (a SIP signature describes structures)"
            ),
            ConvertErrorKind::NoTensorType(element) => {
                write!(f, "arrays of {element} have no MLIR tensor type")
            }
            ConvertErrorKind::NoMlirType(Type::Unknown) => {
                f.write_str("an unknown type has no MLIR type")
            }
            ConvertErrorKind::NoMlirType(ty) => write!(f, "{ty} has no MLIR type"),
            ConvertErrorKind::NoVmType(Type::Unknown) => {
                f.write_str("an unknown type has no VM type")
            }
            ConvertErrorKind::NoVmType(ty) => write!(f, "{ty} has no VM type"),
            ConvertErrorKind::NoModelType { declared } => write!(
                f,
                "the type {declared} has no counterpart in the signature model"
            ),
            ConvertErrorKind::ElementType { declared, error } => write!(
                f,
                "cannot read the element type of {declared}: {}",
                error.message
            ),
            ConvertErrorKind::RawIndexOutOfRange { index, items } => write!(
                f,
                "raw index {index} is outside the raw signature's {items} items"
            ),
            ConvertErrorKind::NegativeRawIndex(index) => {
                write!(f, "raw index {index} is negative")
            }
            ConvertErrorKind::SequenceKeyOutOfRange { key, limit } => {
                write!(f, "sequence key {key} is outside 0..{limit}")
            }
            ConvertErrorKind::NegativeSequenceKey(key) => {
                write!(f, "a sequence key must not be negative (got {key})")
            }
            ConvertErrorKind::DuplicateSequenceKey(key) => {
                write!(f, "sequence key {key} appears twice")
            }
            ConvertErrorKind::DuplicateDictKey(key) => write!(f, "dict key {key:?} appears twice"),
            ConvertErrorKind::PathTooLong { keys, limit } => {
                write!(f, "the path has {keys} keys; at most {limit} are allowed")
            }
            ConvertErrorKind::PathThroughLeaf { raw_index } => write!(
                f,
                "the path continues past this leaf (raw index {raw_index}); a leaf has no \
                 children"
            ),
            ConvertErrorKind::DictKeyInSequence(name) => write!(
                f,
                "this level is a sequence (integer keys), so the dict key {name:?} cannot be \
                 used here"
            ),
            ConvertErrorKind::SequenceKeyInDict(index) => write!(
                f,
                "this level is a dict (string keys), so the sequence key {index} cannot be used \
                 here"
            ),
            ConvertErrorKind::LeafTaken { raw_index } => {
                write!(f, "this leaf already holds raw index {raw_index}")
            }
            ConvertErrorKind::PathEndsOnStructure => {
                f.write_str("the path ends on a sequence or dict, not on a leaf")
            }
        }
    }
}

impl std::error::Error for ConvertError {}

#[cfg(feature = "structured")]
impl From<ConvertError> for pactum::Error {
    fn from(error: ConvertError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}
