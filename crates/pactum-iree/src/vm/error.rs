//! Everything that can go wrong loading or running VM code: [`VmError`].

use std::fmt;

pub use crate::status::StatusCode;
use crate::vmfb::VmfbError;

/// A function, by name when the module records one, else by ordinal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FunctionName {
    /// The function's name.
    Named(String),
    /// An internal function without a recorded name.
    Ordinal(u32),
}

impl fmt::Display for FunctionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FunctionName::Named(name) => f.write_str(name),
            FunctionName::Ordinal(ordinal) => write!(f, "function #{ordinal}"),
        }
    }
}

/// Where in the bytecode something happened: the module, the function and the byte offset of
/// the instruction from the start of the function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// The module's name.
    pub module: String,
    /// The function.
    pub function: FunctionName,
    /// The byte offset of the instruction in the function's bytecode.
    pub pc: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{} at byte {:#x}",
            self.module, self.function, self.pc
        )
    }
}

/// The rule of the bytecode verifier a function broke (facts sheet §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VerifyRule {
    /// The descriptor's fields (offset, length, block count, register counts).
    Descriptor,
    /// The function needs a feature the VM does not provide.
    Requirements,
    /// The register counts, rounded up to a power of two, are too large.
    RegisterCount,
    /// The calling convention does not parse, has a variadic span, or its arguments do not fit
    /// the registers.
    CallingConvention,
    /// A block marker (`0x79`) is missing or misplaced.
    BlockMarker,
    /// An instruction runs past the end of the function.
    Truncated,
    /// An unknown opcode.
    UnknownOpcode,
    /// An `ExtF32`/`ExtF64` instruction in a function without that requirement bit.
    Extension,
    /// A register of the wrong bank (i32 vs ref).
    RegisterBank,
    /// A register past the function's register count.
    RegisterRange,
    /// A 64-bit register that is not an even i32 register.
    RegisterAlignment,
    /// The MOVE bit on a register that may not carry it.
    MoveBit,
    /// A type id past the type table.
    TypeId,
    /// A global byte offset past the module's global storage.
    GlobalOffset,
    /// A ref global ordinal past the module's ref globals.
    GlobalRef,
    /// A rodata ordinal past the module's segments.
    RodataOrdinal,
    /// A function or import ordinal out of range, or an import where one is required.
    CalleeOrdinal,
    /// Call operands or results that do not match the callee's calling convention.
    CallSignature,
    /// A variadic call's segment sizes are missing or wrong, or its callee is internal.
    Variadic,
    /// A `return` whose registers do not match the function's results.
    ReturnSignature,
    /// A branch target that is not a block marker.
    BranchTarget,
    /// The last block does not end with a terminator.
    Terminator,
    /// The number of blocks differs from the descriptor's `block_count`.
    BlockCount,
}

impl VerifyRule {
    /// A short kebab-case name (`register-range`).
    pub fn name(self) -> &'static str {
        use VerifyRule::*;
        match self {
            Descriptor => "descriptor",
            Requirements => "requirements",
            RegisterCount => "register-count",
            CallingConvention => "calling-convention",
            BlockMarker => "block-marker",
            Truncated => "truncated",
            UnknownOpcode => "unknown-opcode",
            Extension => "extension",
            RegisterBank => "register-bank",
            RegisterRange => "register-range",
            RegisterAlignment => "register-alignment",
            MoveBit => "move-bit",
            TypeId => "type-id",
            GlobalOffset => "global-offset",
            GlobalRef => "global-ref",
            RodataOrdinal => "rodata-ordinal",
            CalleeOrdinal => "callee-ordinal",
            CallSignature => "call-signature",
            Variadic => "variadic",
            ReturnSignature => "return-signature",
            BranchTarget => "branch-target",
            Terminator => "terminator",
            BlockCount => "block-count",
        }
    }
}

impl fmt::Display for VerifyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What stopped a running function (the reference runtime's status in parentheses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TrapKind {
    /// Integer division or remainder by zero (the reference dies with SIGFPE).
    DivisionByZero,
    /// `INT_MIN / -1` or `INT_MIN % -1` (the reference dies with SIGFPE).
    DivisionOverflow,
    /// A null buffer or list operand (INVALID_ARGUMENT).
    NullReference,
    /// An index or byte range outside a buffer, list or the globals (OUT_OF_RANGE).
    OutOfRange,
    /// A write into a read-only buffer (PERMISSION_DENIED).
    ReadOnly,
    /// A reference of the wrong type (INVALID_ARGUMENT).
    TypeMismatch,
    /// A list of the wrong kind for the access, or a variant slot holding something else
    /// (FAILED_PRECONDITION).
    WrongElementKind,
    /// A bad argument value, such as an alignment that is not a power of two
    /// (INVALID_ARGUMENT).
    InvalidArgument,
    /// A call to an optional import that is not bound (NOT_FOUND).
    UnresolvedImport,
    /// `fail` with status 0 (the reference runs past the terminator).
    FailWithOk,
    /// An instruction pactum does not execute (`yield`).
    Unsupported,
    /// A native function returned values that do not match its calling convention.
    BadNativeResults,
}

impl TrapKind {
    /// The IREE status the reference runtime reports for this trap.
    pub fn status(self) -> StatusCode {
        use TrapKind::*;
        match self {
            DivisionByZero | DivisionOverflow => StatusCode::InvalidArgument,
            NullReference | TypeMismatch | InvalidArgument => StatusCode::InvalidArgument,
            OutOfRange => StatusCode::OutOfRange,
            ReadOnly => StatusCode::PermissionDenied,
            WrongElementKind => StatusCode::FailedPrecondition,
            UnresolvedImport => StatusCode::NotFound,
            FailWithOk => StatusCode::Internal,
            Unsupported => StatusCode::Unimplemented,
            BadNativeResults => StatusCode::Internal,
        }
    }

    /// A short description.
    pub fn describe(self) -> &'static str {
        use TrapKind::*;
        match self {
            DivisionByZero => "integer division by zero",
            DivisionOverflow => "integer division overflow (INT_MIN / -1)",
            NullReference => "null reference",
            OutOfRange => "out of range",
            ReadOnly => "write to a read-only buffer",
            TypeMismatch => "reference type mismatch",
            WrongElementKind => "wrong element kind",
            InvalidArgument => "invalid argument",
            UnresolvedImport => "call to an unresolved optional import",
            FailWithOk => "fail with status 0",
            Unsupported => "unsupported instruction",
            BadNativeResults => "native function returned bad results",
        }
    }
}

impl fmt::Display for TrapKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Which budget of [`Limits`](super::Limits) ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BudgetKind {
    /// Instructions executed in one invocation (fuel).
    Fuel,
    /// Call frames in one invocation.
    Frames,
    /// Register storage of all frames of one invocation, in bytes.
    StackBytes,
    /// Bytes of buffers, lists and globals a context may allocate.
    Memory,
}

impl fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BudgetKind::Fuel => "instruction budget (fuel)",
            BudgetKind::Frames => "call depth limit (frames)",
            BudgetKind::StackBytes => "register stack limit (bytes)",
            BudgetKind::Memory => "memory budget (bytes)",
        })
    }
}

/// Why a module could not be loaded or linked into a context (other than a function failing
/// verification).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkError {
    /// The bytecode version is not 17.0.
    BytecodeVersion(u32),
    /// The module needs features the VM does not provide.
    Requirements(u32),
    /// A type name that is neither a value type, `!vm.opaque`, `!vm.list`, `!vm.buffer` nor a
    /// registered reference type.
    UnknownType(String),
    /// A module of this name is already registered.
    DuplicateModule(String),
    /// A module name that functions cannot be named through: empty, or holding a `.` (full
    /// names are `module.function`, split at the first `.`).
    BadModuleName(String),
    /// A required dependency is missing or too old.
    Dependency {
        /// The module depended on.
        name: String,
        /// The lowest version that satisfies it.
        minimum_version: u32,
        /// The registered version, if any.
        found: Option<u32>,
    },
    /// A required import has no export of that name in an earlier module.
    UnresolvedImport(String),
    /// An import's calling convention differs from the export it resolves to.
    ImportSignature {
        /// `module.func`.
        import: String,
        /// The import's calling convention.
        expected: String,
        /// The export's.
        found: String,
    },
    /// A calling convention that does not parse or that pactum cannot call.
    BadCallingConvention {
        /// The function.
        function: String,
        /// What is wrong.
        reason: String,
    },
    /// Module state larger than the memory budget allows, or a negative size.
    ModuleState(String),
    /// A typed native function whose declared calling convention is not the one its Rust
    /// signature implies.
    NativeSignature {
        /// `module.function`.
        function: String,
        /// The declared calling convention.
        declared: String,
        /// The one the function's parameter and result types imply.
        implied: String,
    },
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::BytecodeVersion(v) => write!(
                f,
                "bytecode version {}.{} is not supported (17.0 is)",
                v >> 16,
                v & 0xFFFF
            ),
            LinkError::Requirements(bits) => {
                write!(f, "the module needs unknown VM features {bits:#x}")
            }
            LinkError::UnknownType(name) => write!(f, "type {name:?} is not registered"),
            LinkError::DuplicateModule(name) => {
                write!(f, "a module named {name:?} is already registered")
            }
            LinkError::BadModuleName(name) => write!(
                f,
                "module name {name:?} cannot be used: full names are `module.function`, split \
                 at the first '.', so a module name must be non-empty and hold no '.'"
            ),
            LinkError::Dependency {
                name,
                minimum_version,
                found,
            } => match found {
                Some(v) => write!(
                    f,
                    "depends on module {name:?} version >= {minimum_version}, but version {v} is registered"
                ),
                None => write!(
                    f,
                    "depends on module {name:?} (version >= {minimum_version}), which is not registered"
                ),
            },
            LinkError::UnresolvedImport(name) => write!(
                f,
                "required import {name:?} is not exported by any module registered before it"
            ),
            LinkError::ImportSignature {
                import,
                expected,
                found,
            } => write!(
                f,
                "import {import:?} has calling convention {expected:?} but the export has {found:?}"
            ),
            LinkError::BadCallingConvention { function, reason } => {
                write!(f, "function {function:?}: {reason}")
            }
            LinkError::ModuleState(reason) => write!(f, "module state: {reason}"),
            LinkError::NativeSignature {
                function,
                declared,
                implied,
            } => write!(
                f,
                "native function `{function}` declares calling convention `{declared}`, but \
                 its Rust signature implies `{implied}`"
            ),
        }
    }
}

/// An error from loading, linking or running VM code.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum VmError {
    /// The `.vmfb` itself could not be read.
    Format(VmfbError),
    /// The module could not be loaded or linked.
    Link {
        /// The module's name.
        module: String,
        /// What is wrong.
        error: LinkError,
    },
    /// A function failed the bytecode verifier.
    Verify {
        /// The module's name.
        module: String,
        /// The function.
        function: FunctionName,
        /// Byte offset in the function's bytecode.
        offset: u32,
        /// The rule broken.
        rule: VerifyRule,
        /// Details.
        detail: String,
    },
    /// A running function trapped.
    Trap {
        /// What happened.
        kind: TrapKind,
        /// Details (indices, sizes).
        detail: String,
        /// Where.
        location: Location,
    },
    /// The bytecode executed `fail` with a non-zero status.
    Fail {
        /// The status code (`(u32)` of the register).
        code: u32,
        /// The message.
        message: String,
        /// Where.
        location: Location,
    },
    /// A native function returned an error.
    Native {
        /// `module.func`.
        function: String,
        /// The status it reported.
        status: StatusCode,
        /// Its message.
        message: String,
    },
    /// A budget of the context's limits ran out.
    BudgetExhausted {
        /// Which one.
        kind: BudgetKind,
        /// Its limit.
        limit: u64,
        /// Where, when inside bytecode.
        location: Option<Location>,
    },
    /// An argument passed to [`Context::invoke`](super::Context::invoke) does not fit the
    /// function's calling convention.
    BadCall {
        /// `module.func`.
        function: String,
        /// The argument's index.
        argument: usize,
        /// The kind the calling convention expects.
        expected: String,
        /// The kind given.
        got: String,
    },
    /// The wrong number of arguments.
    ArgumentCount {
        /// `module.func`.
        function: String,
        /// How many the calling convention takes.
        expected: usize,
        /// How many were given.
        got: usize,
    },
    /// No module exports this function, or the name is not `module.func`.
    NotFound(String),
    /// A function handle from another context.
    ForeignFunction(String),
    /// An invocation of an unresolved optional import by name.
    UnresolvedImport(String),
}

impl VmError {
    /// The IREE status closest to this error.
    pub fn status(&self) -> StatusCode {
        match self {
            VmError::Format(_) | VmError::Verify { .. } => StatusCode::InvalidArgument,
            VmError::Link { error, .. } => match error {
                LinkError::UnknownType(_)
                | LinkError::UnresolvedImport(_)
                | LinkError::Dependency { .. } => StatusCode::NotFound,
                LinkError::DuplicateModule(_) => StatusCode::AlreadyExists,
                LinkError::ModuleState(_) => StatusCode::ResourceExhausted,
                _ => StatusCode::InvalidArgument,
            },
            VmError::Trap { kind, .. } => kind.status(),
            VmError::Fail { code, .. } => StatusCode::from_code(*code),
            VmError::Native { status, .. } => *status,
            VmError::BudgetExhausted { .. } => StatusCode::ResourceExhausted,
            VmError::BadCall { .. } | VmError::ArgumentCount { .. } => StatusCode::InvalidArgument,
            VmError::NotFound(_) | VmError::UnresolvedImport(_) => StatusCode::NotFound,
            VmError::ForeignFunction(_) => StatusCode::InvalidArgument,
        }
    }
}

impl fmt::Display for VmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VmError::Format(error) => write!(f, "{error}"),
            VmError::Link { module, error } => write!(f, "module {module:?}: {error}"),
            VmError::Verify {
                module,
                function,
                offset,
                rule,
                detail,
            } => write!(
                f,
                "{module}.{function} at byte {offset:#x}: verification failed ({rule}): {detail}"
            ),
            VmError::Trap {
                kind,
                detail,
                location,
            } => {
                write!(f, "{location}: {kind} ({})", kind.status())?;
                if !detail.is_empty() {
                    write!(f, ": {detail}")?;
                }
                Ok(())
            }
            VmError::Fail {
                code,
                message,
                location,
            } => write!(
                f,
                "{location}: fail {} ({code}): {message}",
                StatusCode::from_code(*code)
            ),
            VmError::Native {
                function,
                status,
                message,
            } => write!(f, "native {function}: {status}: {message}"),
            VmError::BudgetExhausted {
                kind,
                limit,
                location,
            } => {
                if let Some(location) = location {
                    write!(f, "{location}: ")?;
                }
                write!(f, "{kind} of {limit} exhausted")
            }
            VmError::BadCall {
                function,
                argument,
                expected,
                got,
            } => write!(
                f,
                "{function}: argument {argument} must be {expected}, got {got}"
            ),
            VmError::ArgumentCount {
                function,
                expected,
                got,
            } => write!(f, "{function} takes {expected} arguments, got {got}"),
            VmError::NotFound(name) => write!(f, "no function {name:?} in the context"),
            VmError::ForeignFunction(name) => {
                write!(f, "function {name:?} belongs to another context")
            }
            VmError::UnresolvedImport(name) => write!(f, "import {name:?} is not resolved"),
        }
    }
}

impl std::error::Error for VmError {}

impl From<VmfbError> for VmError {
    fn from(error: VmfbError) -> VmError {
        VmError::Format(error)
    }
}

#[cfg(feature = "structured")]
impl From<VmError> for pactum::Error {
    fn from(error: VmError) -> pactum::Error {
        let kind = match &error {
            VmError::Format(_) | VmError::Verify { .. } | VmError::Link { .. } => {
                pactum::ErrorKind::VALUE_ERROR
            }
            VmError::BadCall { .. } | VmError::ArgumentCount { .. } => {
                pactum::ErrorKind::TYPE_ERROR
            }
            VmError::NotFound(_) => pactum::ErrorKind::KEY_ERROR,
            VmError::BudgetExhausted {
                kind: BudgetKind::Memory,
                ..
            } => pactum::ErrorKind::MEMORY_ERROR,
            _ => pactum::ErrorKind::RUNTIME_ERROR,
        };
        pactum::Error::new(kind, error.to_string())
    }
}
