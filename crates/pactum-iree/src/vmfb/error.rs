//! Why a `.vmfb` cannot be read: [`VmfbError`], a [`VmfbErrorKind`] a caller can match, the
//! [`FieldPath`] of the field in the module, and the byte offset in the file.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

/// A `.vmfb` that cannot be read: what is wrong ([`kind`](Self::kind)), where in the module
/// ([`path`](Self::path), such as `exported_functions[3].local_name`) and at which byte of the
/// file ([`offset`](Self::offset)).
///
/// ```
/// use pactum_iree::vmfb::{VmfbErrorKind, VmfbFile};
///
/// let error = VmfbFile::from_bytes(b"\x10\0\0\0\0\0\0\0TFL3\0\0\0\0\0\0\0\0".to_vec())
///     .module()
///     .unwrap_err();
/// assert!(matches!(error.kind, VmfbErrorKind::NotAVmfb { identifier } if &identifier == b"TFL3"));
/// assert_eq!(error.offset, Some(8));
/// assert_eq!(
///     error.to_string(),
///     r#"not an IREE bytecode module: the file identifier is "TFL3", expected "IREE" at 0x8"#
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmfbError {
    /// What is wrong.
    pub kind: VmfbErrorKind,
    /// The path of the field in the module; empty for the container and the file itself.
    pub path: FieldPath,
    /// The byte offset in the file, when one applies.
    pub offset: Option<u64>,
}

impl VmfbError {
    /// An error of `kind` at `path`, at byte `offset` of the file when one applies.
    pub fn new(kind: VmfbErrorKind, path: FieldPath, offset: Option<u64>) -> VmfbError {
        VmfbError { kind, path, offset }
    }

    /// An error about the container (no field path) at byte `offset` of the file.
    pub(crate) fn at(offset: usize, kind: VmfbErrorKind) -> VmfbError {
        VmfbError::new(kind, FieldPath::root(), Some(offset as u64))
    }
}

/// `exported_functions[3].local_name: data at 0x1f40..0x1f48 runs past the end of the buffer
/// (which ends at 0x1f44) at 0x1f40`.
impl fmt::Display for VmfbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{}", self.kind)?;
        if let Some(offset) = self.offset {
            write!(f, " at {offset:#x}")?;
        }
        Ok(())
    }
}

/// The message says everything (an I/O error's text included), so there is no
/// [`source`](std::error::Error::source) to print again.
impl std::error::Error for VmfbError {}

#[cfg(feature = "structured")]
impl From<VmfbError> for pactum::Error {
    fn from(error: VmfbError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}

/// What is wrong with a `.vmfb`, from the file down to IREE's own module checks.
///
/// Its `Display` is the message without the path and offset (see [`VmfbError`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VmfbErrorKind {
    // -- The file.
    /// The file could not be opened, examined or mapped.
    Io(IoFailure),

    // -- The container (facts sheet §2).
    /// The file starts like a ZIP archive but is shorter than a local file header.
    ZipHeaderTruncated {
        /// The file's length in bytes.
        file_len: usize,
    },
    /// The first ZIP entry is compressed; IREE maps the FlatBuffer in place, so it must be
    /// stored.
    CompressedEntry {
        /// The ZIP compression method (8 is deflate).
        method: u16,
    },
    /// Too short to hold a size prefix, a root offset, a file identifier and a vtable offset.
    TooShort {
        /// The file's length in bytes.
        file_len: usize,
    },
    /// The size prefix claims more bytes than the file holds.
    SizePrefixPastEnd {
        /// The size the prefix claims.
        size: u32,
        /// The file's length in bytes.
        file_len: usize,
    },
    /// The FlatBuffer's file identifier is not `IREE`.
    NotAVmfb {
        /// The identifier found.
        identifier: [u8; 4],
    },

    // -- The FlatBuffer's structure (the verifier).
    /// An offset or length points past the end of the buffer.
    OutOfBounds {
        /// The bytes the field needs, as file offsets (the end may overflow the file).
        range: Range<u64>,
        /// Where the buffer ends, as a file offset.
        buffer_end: u64,
    },
    /// A table's vtable offset points outside the buffer.
    VtableOutOfBounds {
        /// The signed offset stored in the table.
        soffset: i32,
    },
    /// A value is not aligned for its type.
    Misaligned {
        /// The type, as the verifier names it.
        type_name: String,
    },
    /// A union's tag is not one of its variants.
    UnknownUnionTag {
        /// The union type, e.g. `LocationTypeDef`.
        union: String,
        /// The tag found.
        tag: u8,
    },
    /// A string is not UTF-8.
    InvalidUtf8 {
        /// Why not.
        error: std::str::Utf8Error,
    },
    /// A string lacks its NUL terminator.
    MissingNulTerminator,
    /// A required field is absent.
    MissingRequiredField {
        /// The field, as the verifier names it.
        field: String,
    },
    /// Only one of a union's value and its type is present (or, for a vector of unions, the
    /// two vectors differ in length).
    InconsistentUnion {
        /// The union field.
        field: String,
        /// Its type field.
        type_field: String,
    },
    /// More tables than the buffer has room for (shared data).
    TooManyTables,
    /// Shared data makes the module look larger than the verifier allows.
    ApparentSizeTooLarge,
    /// Tables nest deeper than the schema allows.
    TooDeep,

    // -- IREE's module verifier, beyond structure.
    /// A name the runtime needs is empty.
    EmptyName {
        /// Whose name.
        of: NameOf,
    },
    /// `function_signatures` and `function_descriptors` differ in length.
    SignatureCountMismatch {
        /// The number of signatures.
        signatures: usize,
        /// The number of function descriptors.
        descriptors: usize,
    },
    /// An export's internal ordinal is not a function of the module.
    OrdinalOutOfRange {
        /// The ordinal.
        ordinal: i32,
        /// The number of functions.
        functions: usize,
    },
    /// An external read-only segment runs past the end of the file.
    ExternalDataOutOfFile {
        /// Its offset from the rodata base.
        offset: u64,
        /// Its length.
        length: u64,
        /// Where external offsets count from (the 64-aligned end of the FlatBuffer).
        rodata_base: u64,
        /// The file's length in bytes.
        file_len: u64,
    },
    /// A function's bytecode is empty or outside `bytecode_data`.
    BytecodeOutOfRange {
        /// Its offset in `bytecode_data`.
        offset: i32,
        /// Its length.
        length: i32,
        /// The length of `bytecode_data`.
        data_len: usize,
    },
}

impl fmt::Display for VmfbErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VmfbErrorKind::Io(failure) => write!(f, "{failure}"),
            VmfbErrorKind::ZipHeaderTruncated { .. } => {
                f.write_str("the ZIP local file header is truncated")
            }
            VmfbErrorKind::CompressedEntry { method } => write!(
                f,
                "ZIP archive: the FlatBuffer entry is compressed (method {method}); IREE needs it \
                 stored"
            ),
            VmfbErrorKind::TooShort { file_len } => write!(
                f,
                "too short for a size-prefixed FlatBuffer ({file_len} bytes)"
            ),
            VmfbErrorKind::SizePrefixPastEnd { size, file_len } => write!(
                f,
                "the size prefix says {size} bytes, past the end of the file ({file_len} bytes)"
            ),
            VmfbErrorKind::NotAVmfb { identifier } => write!(
                f,
                "not an IREE bytecode module: the file identifier is {:?}, expected \"IREE\"",
                String::from_utf8_lossy(identifier)
            ),
            VmfbErrorKind::OutOfBounds { range, buffer_end } => write!(
                f,
                "data at {:#x}..{:#x} runs past the end of the buffer (which ends at {buffer_end:#x})",
                range.start, range.end
            ),
            VmfbErrorKind::VtableOutOfBounds { soffset } => {
                write!(f, "vtable offset {soffset} points outside the buffer")
            }
            VmfbErrorKind::Misaligned { type_name } => write!(f, "misaligned {type_name}"),
            VmfbErrorKind::UnknownUnionTag { union, tag } => {
                write!(f, "{union} tag {tag} is not a known variant")
            }
            VmfbErrorKind::InvalidUtf8 { error } => write!(f, "string is not UTF-8 ({error})"),
            VmfbErrorKind::MissingNulTerminator => f.write_str("string lacks its NUL terminator"),
            VmfbErrorKind::MissingRequiredField { field } => {
                write!(f, "missing required field `{field}`")
            }
            VmfbErrorKind::InconsistentUnion { field, type_field } => write!(
                f,
                "union `{field}` and its type `{type_field}` must be present together"
            ),
            VmfbErrorKind::TooManyTables => f.write_str("more tables than the buffer can hold"),
            VmfbErrorKind::ApparentSizeTooLarge => {
                f.write_str("shared data makes the module's apparent size too large")
            }
            VmfbErrorKind::TooDeep => f.write_str("tables nest deeper than the schema allows"),
            VmfbErrorKind::EmptyName { of } => match of {
                NameOf::Module => f.write_str("the module name is empty"),
                other => write!(f, "empty {} name", other.noun()),
            },
            VmfbErrorKind::SignatureCountMismatch {
                signatures,
                descriptors,
            } => write!(
                f,
                "{signatures} signatures for {descriptors} function descriptors (they must be 1:1)"
            ),
            VmfbErrorKind::OrdinalOutOfRange { ordinal, functions } => write!(
                f,
                "ordinal {ordinal} is out of range ({functions} functions)"
            ),
            VmfbErrorKind::ExternalDataOutOfFile {
                offset,
                length,
                rodata_base,
                file_len,
            } => write!(
                f,
                "external data {offset:#x}+{length:#x} from the rodata base {rodata_base:#x} runs \
                 past the end of the file ({file_len:#x})"
            ),
            VmfbErrorKind::BytecodeOutOfRange {
                offset,
                length,
                data_len,
            } => write!(
                f,
                "bytecode {offset}+{length} is outside bytecode_data ({data_len} bytes)"
            ),
        }
    }
}

/// Whose name is empty in [`VmfbErrorKind::EmptyName`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameOf {
    /// The module itself (`name`).
    Module,
    /// A type (`types[i].full_name`).
    Type,
    /// A module dependency (`dependencies[i].name`).
    Dependency,
    /// An imported function (`imported_functions[i].full_name`).
    Import,
    /// An exported function (`exported_functions[i].local_name`).
    Export,
}

impl NameOf {
    fn noun(self) -> &'static str {
        match self {
            NameOf::Module | NameOf::Dependency => "module",
            NameOf::Type => "type",
            NameOf::Import => "import",
            NameOf::Export => "export",
        }
    }
}

/// What the reader was doing when the file system failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoOperation {
    /// Opening the file.
    Open,
    /// Reading its metadata (the length).
    Stat,
    /// Mapping it into memory.
    Map,
}

/// A file-system failure: the operation, the file and the [`std::io::Error`].
///
/// Two failures are equal when their operation, file and [`std::io::ErrorKind`] are.
#[derive(Clone, Debug)]
pub struct IoFailure {
    /// What failed.
    pub operation: IoOperation,
    /// The file.
    pub file: PathBuf,
    /// The error the system reported.
    pub error: Arc<std::io::Error>,
}

impl PartialEq for IoFailure {
    fn eq(&self, other: &IoFailure) -> bool {
        self.operation == other.operation
            && self.file == other.file
            && self.error.kind() == other.error.kind()
    }
}

impl Eq for IoFailure {}

/// `cannot open model.vmfb: No such file or directory (os error 2)`.
impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.operation {
            IoOperation::Open => "open",
            IoOperation::Stat => "stat",
            IoOperation::Map => "map",
        };
        write!(f, "cannot {verb} {}: {}", self.file.display(), self.error)
    }
}

/// The path of a field in a module: table fields, vector indices and union variants, from the
/// root table down. Renders as `exported_functions[3].local_name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldPath(Vec<FieldStep>);

/// One step of a [`FieldPath`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldStep {
    /// A table field, by its schema name.
    Field(Cow<'static, str>),
    /// An element of a vector.
    Index(usize),
    /// The variant a union holds, as the verifier names it.
    Variant(Cow<'static, str>),
}

impl FieldPath {
    /// The empty path: the container, or the file itself.
    pub fn root() -> FieldPath {
        FieldPath(Vec::new())
    }

    /// Whether the path is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The steps, from the root table down.
    pub fn steps(&self) -> &[FieldStep] {
        &self.0
    }

    /// The path extended by a table field.
    pub fn field(mut self, name: impl Into<Cow<'static, str>>) -> FieldPath {
        self.0.push(FieldStep::Field(name.into()));
        self
    }

    /// The path extended by a vector index.
    pub fn index(mut self, index: usize) -> FieldPath {
        self.0.push(FieldStep::Index(index));
        self
    }

    /// The path extended by a union variant.
    pub fn variant(mut self, name: impl Into<Cow<'static, str>>) -> FieldPath {
        self.0.push(FieldStep::Variant(name.into()));
        self
    }

    /// Appends a step.
    pub fn push(&mut self, step: FieldStep) {
        self.0.push(step);
    }
}

/// `exported_functions[3].local_name`; a union variant reads like a field.
impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                FieldStep::Field(name) | FieldStep::Variant(name) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(name)?;
                }
                FieldStep::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}
