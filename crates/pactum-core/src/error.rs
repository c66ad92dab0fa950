//! [`Error`] (`ffi.Error`): kind, message, backtrace, cause chain and extra context, and the
//! thread-local "raised" error that C entry points report failures through.

use core::cell::UnsafeCell;
use core::ffi::c_char;
use core::fmt;
use std::borrow::Cow;

use pactum_sys::tvm_ffi::{
    TVMFFI_BACKTRACE_UPDATE_MODE_APPEND, TVMFFIByteArray, TVMFFIErrorCell, TVMFFIObject,
    TVMFFIObjectHandle, TVMFFITypeIndex,
};

use crate::boundary;
use crate::object::{ObjectBox, ObjectRef, header, new_object_box, object_ref_type};
use crate::runtime;

/// `Result` with pactum's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// An error kind: TVM FFI's kinds are an open set of strings (`ValueError`, `MyError`, ...).
///
/// The common ones are constants, so a typo in one is a compile error rather than a new kind;
/// any other kind is spelt out with [`ErrorKind::custom`]. Python maps the kinds it knows to
/// its built-in exceptions (any other kind arrives as `RuntimeError`).
///
/// ```
/// use pactum::{Error, ErrorKind};
/// let error = Error::new(ErrorKind::VALUE_ERROR, "bad input");
/// assert_eq!(error.kind(), ErrorKind::VALUE_ERROR);
/// let custom = Error::new(ErrorKind::custom("ShapeError"), "rank 3, expected 2");
/// assert_eq!(custom.kind(), "ShapeError");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorKind<'a>(&'a str);

impl ErrorKind<'static> {
    /// `ValueError`.
    pub const VALUE_ERROR: ErrorKind<'static> = ErrorKind("ValueError");
    /// `TypeError`.
    pub const TYPE_ERROR: ErrorKind<'static> = ErrorKind("TypeError");
    /// `RuntimeError`.
    pub const RUNTIME_ERROR: ErrorKind<'static> = ErrorKind("RuntimeError");
    /// `AttributeError`.
    pub const ATTRIBUTE_ERROR: ErrorKind<'static> = ErrorKind("AttributeError");
    /// `KeyError`.
    pub const KEY_ERROR: ErrorKind<'static> = ErrorKind("KeyError");
    /// `IndexError`.
    pub const INDEX_ERROR: ErrorKind<'static> = ErrorKind("IndexError");
    /// `AssertionError`.
    pub const ASSERTION_ERROR: ErrorKind<'static> = ErrorKind("AssertionError");
    /// `MemoryError`.
    pub const MEMORY_ERROR: ErrorKind<'static> = ErrorKind("MemoryError");
    /// `InternalError`: a broken invariant inside a runtime.
    pub const INTERNAL_ERROR: ErrorKind<'static> = ErrorKind("InternalError");
    /// `RustPanic`: a panic caught at an FFI boundary (Python shows it as `RuntimeError`).
    pub const RUST_PANIC: ErrorKind<'static> = ErrorKind("RustPanic");
}

impl<'a> ErrorKind<'a> {
    /// A kind outside the common set, spelt out on purpose.
    pub const fn custom(name: &'a str) -> ErrorKind<'a> {
        ErrorKind(name)
    }

    /// The kind's name.
    pub const fn as_str(self) -> &'a str {
        self.0
    }
}

impl fmt::Display for ErrorKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl PartialEq<str> for ErrorKind<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ErrorKind<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<ErrorKind<'_>> for str {
    fn eq(&self, other: &ErrorKind<'_>) -> bool {
        self == other.0
    }
}

impl PartialEq<ErrorKind<'_>> for &str {
    fn eq(&self, other: &ErrorKind<'_>) -> bool {
        *self == other.0
    }
}

impl PartialEq<ErrorKind<'_>> for Cow<'_, str> {
    fn eq(&self, other: &ErrorKind<'_>) -> bool {
        self.as_ref() == other.0
    }
}

impl PartialEq<ErrorKind<'_>> for std::string::String {
    fn eq(&self, other: &ErrorKind<'_>) -> bool {
        self.as_str() == other.0
    }
}

/// The payload of error objects pactum makes: the ABI cell, then the storage it points into.
///
/// Each text is stored with a trailing NUL byte that its byte array does not count: C++ code
/// built from the official headers reads the message as a C string (`Error::what()` returns
/// its `data`), and the official runtime NUL-terminates kind, message and backtrace alike.
#[repr(C)]
pub(crate) struct ErrorPayload {
    /// Written by `update_backtrace` while the error is shared, hence the UnsafeCell.
    cell: UnsafeCell<TVMFFIErrorCell>,
    kind: Box<[u8]>,
    message: Box<[u8]>,
    backtrace: UnsafeCell<Box<[u8]>>,
}

impl Drop for ErrorPayload {
    fn drop(&mut self) {
        let cell = self.cell.get_mut();
        for handle in [cell.cause_chain, cell.extra_context] {
            if !handle.is_null() {
                // SAFETY: the cell owns one strong reference to each non-null handle.
                unsafe { header::dec_ref(handle.cast()) }
            }
        }
    }
}

/// `text` followed by a NUL byte, for storage that C code may read as a C string.
fn nul_terminated(text: &[u8]) -> Box<[u8]> {
    let mut stored = Vec::with_capacity(text.len() + 1);
    stored.extend_from_slice(text);
    stored.push(0);
    stored.into_boxed_slice()
}

/// The byte array of NUL-terminated storage: its text, not counting the NUL.
fn byte_array(stored: &[u8]) -> TVMFFIByteArray {
    TVMFFIByteArray {
        data: stored.as_ptr().cast::<c_char>(),
        size: stored.len().saturating_sub(1),
    }
}

/// `update_backtrace` of errors pactum makes.
unsafe extern "C" fn update_backtrace(
    handle: TVMFFIObjectHandle,
    backtrace: *const TVMFFIByteArray,
    mode: i32,
) {
    boundary::callback(
        || {
            if handle.is_null() || backtrace.is_null() {
                return;
            }
            let payload = handle.cast::<ObjectBox<ErrorPayload>>();
            // SAFETY: this function is only installed in objects laid out as
            // ObjectBox<ErrorPayload>; the caller holds a reference. Like the official runtime,
            // updates are not synchronised with concurrent readers of the same error.
            unsafe {
                let new_part = crate::raw::byte_array_slice(backtrace);
                let payload = ObjectBox::cell(payload);
                let storage = &mut *payload.backtrace.get();
                let updated = if mode == TVMFFI_BACKTRACE_UPDATE_MODE_APPEND {
                    let old_text = &storage[..storage.len().saturating_sub(1)];
                    nul_terminated(&[old_text, new_part].concat())
                } else {
                    nul_terminated(new_part)
                };
                *storage = updated;
                (*payload.cell.get()).backtrace = byte_array(storage);
            }
        },
        |payload| Error::from_panic(payload).set_raised(),
    );
}

/// A reference-counted error object (`ffi.Error`), made here or by any other runtime.
#[repr(transparent)]
#[derive(Clone)]
pub struct Error(ObjectRef);

object_ref_type!(Error, TVMFFITypeIndex::ERROR, "ffi.Error");

impl Error {
    /// A new error; the backtrace records the caller's source location.
    #[track_caller]
    pub fn new(kind: ErrorKind<'_>, message: impl Into<Cow<'static, str>>) -> Error {
        let location = core::panic::Location::caller();
        let backtrace = format!(
            "File \"{}\", line {}, in <rust>\n",
            location.file(),
            location.line()
        );
        Error::with_parts(
            kind.as_str().as_bytes(),
            message.into().as_bytes(),
            backtrace.as_bytes(),
            None,
            None,
        )
    }

    /// A new error from raw parts, with an optional cause and extra context.
    pub fn with_parts(
        kind: &[u8],
        message: &[u8],
        backtrace: &[u8],
        cause: Option<Error>,
        extra_context: Option<ObjectRef>,
    ) -> Error {
        let kind = nul_terminated(kind);
        let message = nul_terminated(message);
        let backtrace = nul_terminated(backtrace);
        let cell = TVMFFIErrorCell {
            kind: byte_array(&kind),
            message: byte_array(&message),
            backtrace: byte_array(&backtrace),
            update_backtrace: Some(update_backtrace),
            cause_chain: cause.map_or(core::ptr::null_mut(), |c| c.0.into_raw().cast()),
            extra_context: extra_context.map_or(core::ptr::null_mut(), |c| c.into_raw().cast()),
        };
        // The boxed slices do not move when the payload moves, so the cell stays valid.
        let payload = ErrorPayload {
            cell: UnsafeCell::new(cell),
            kind,
            message,
            backtrace: UnsafeCell::new(backtrace),
        };
        let ptr = new_object_box(TVMFFITypeIndex::ERROR.0, payload);
        // SAFETY: a fresh object whose single strong reference we take.
        Error(unsafe { ObjectRef::from_raw_owned(ptr.cast()) })
    }

    /// A new error caused by `cause`.
    #[track_caller]
    pub fn caused_by(
        kind: ErrorKind<'_>,
        message: impl Into<Cow<'static, str>>,
        cause: Error,
    ) -> Error {
        let base = Error::new(kind, message);
        Error::with_parts(
            base.kind().as_bytes(),
            base.message().as_bytes(),
            base.backtrace().as_bytes(),
            Some(cause),
            None,
        )
    }

    fn cell(&self) -> *const TVMFFIErrorCell {
        // Every Error object starts its body with a TVMFFIErrorCell.
        self.0.as_raw().wrapping_add(1).cast::<TVMFFIErrorCell>()
    }

    /// Reads a byte array of the cell that is never changed after creation.
    fn fixed_text(&self, field: impl FnOnce(&TVMFFIErrorCell) -> TVMFFIByteArray) -> Cow<'_, str> {
        // SAFETY: `self` keeps the object alive; kind and message are never rewritten, and
        // `field` copies the byte array out before any concurrent backtrace update matters.
        let bytes = field(unsafe { &*self.cell() });
        Self::text(bytes)
    }

    fn text<'a>(bytes: TVMFFIByteArray) -> Cow<'a, str> {
        if bytes.data.is_null() || bytes.size == 0 {
            return Cow::Borrowed("");
        }
        // SAFETY: the cell's byte arrays point into storage owned by the error object.
        let slice = unsafe { core::slice::from_raw_parts(bytes.data.cast::<u8>(), bytes.size) };
        std::string::String::from_utf8_lossy(slice)
    }

    /// The kind, e.g. `ValueError`.
    pub fn kind(&self) -> Cow<'_, str> {
        self.fixed_text(|cell| cell.kind)
    }

    /// The message.
    pub fn message(&self) -> Cow<'_, str> {
        self.fixed_text(|cell| cell.message)
    }

    /// The backtrace, most recent call first (a copy: the error's own may be updated).
    pub fn backtrace(&self) -> std::string::String {
        let _guard = crate::object::object_lock(&self.0);
        // SAFETY: Rust-side updates hold the same lock; the copy is taken before it is released.
        let bytes = unsafe { (*self.cell()).backtrace };
        Self::text(bytes).into_owned()
    }

    /// The error that caused this one.
    pub fn cause(&self) -> Option<Error> {
        // SAFETY: the cause is set at creation and never changed.
        let cause = unsafe { (*self.cell()).cause_chain };
        let cause = core::ptr::NonNull::new(cause.cast::<TVMFFIObject>())?;
        // SAFETY: the cell owns a reference to the cause, alive while `self` is.
        let object = unsafe { ObjectRef::from_raw_borrowed(cause) };
        object.downcast::<Error>().ok()
    }

    /// Extra context attached by the raiser.
    pub fn extra_context(&self) -> Option<ObjectRef> {
        // SAFETY: the extra context is set at creation and never changed.
        let context = core::ptr::NonNull::new(
            unsafe { (*self.cell()).extra_context }.cast::<TVMFFIObject>(),
        )?;
        // SAFETY: the cell owns a reference to the context, alive while `self` is.
        Some(unsafe { ObjectRef::from_raw_borrowed(context) })
    }

    /// Appends (or replaces) backtrace text through the object's own `update_backtrace`.
    pub fn update_backtrace(&self, text: &str, append: bool) {
        let _guard = crate::object::object_lock(&self.0);
        // SAFETY: the updater pointer is set at creation and never changed.
        if let Some(update) = unsafe { (*self.cell()).update_backtrace } {
            let bytes = TVMFFIByteArray {
                data: text.as_ptr().cast::<c_char>(),
                size: text.len(),
            };
            let mode = if append {
                TVMFFI_BACKTRACE_UPDATE_MODE_APPEND
            } else {
                0
            };
            // SAFETY: the object's own updater, called with the object and a valid byte array.
            unsafe { update(self.0.as_raw().cast(), &bytes, mode) }
        }
    }

    /// Stores this error in the calling thread's raised-error slot (replacing any other).
    pub fn set_raised(self) {
        // SAFETY: the slot takes its own reference; ours is released on drop.
        unsafe { (runtime::api().TVMFFIErrorSetRaised)(self.0.as_raw().cast()) }
    }

    /// Takes the error raised on the calling thread, if any, clearing the slot.
    pub fn take_raised() -> Option<Error> {
        let mut handle: TVMFFIObjectHandle = core::ptr::null_mut();
        // SAFETY: `handle` is a valid out pointer; the result is a new reference or NULL.
        unsafe { (runtime::api().TVMFFIErrorMoveFromRaised)(&mut handle) };
        let ptr = core::ptr::NonNull::new(handle.cast::<TVMFFIObject>())?;
        // SAFETY: MoveFromRaised hands us a strong reference.
        // SAFETY: MoveFromRaised hands over the slot's strong reference.
        unsafe { ObjectRef::from_raw_owned(ptr) }
            .downcast::<Error>()
            .ok()
    }

    /// The raised error after a failed C call, or an `InternalError` if a callee returned
    /// failure without raising one.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn take_raised_after_failure(what: &str) -> Error {
        Error::take_raised().unwrap_or_else(|| {
            Error::new(
                ErrorKind::INTERNAL_ERROR,
                format!("{what} failed without raising an error"),
            )
        })
    }

    /// An error from a caught panic payload.
    #[doc(hidden)]
    pub fn from_panic(payload: Box<dyn core::any::Any + Send>) -> Error {
        let message = if let Some(text) = payload.downcast_ref::<&'static str>() {
            (*text).to_owned()
        } else if let Some(text) = payload.downcast_ref::<std::string::String>() {
            text.clone()
        } else {
            "a Rust panic with a non-string payload".to_owned()
        };
        Error::new(ErrorKind::RUST_PANIC, message)
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind())
            .field("message", &self.message())
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        None
    }
}

macro_rules! error_from_std {
    ($($ty:ty => $kind:expr),* $(,)?) => {$(
        impl From<$ty> for Error {
            #[track_caller]
            fn from(error: $ty) -> Self {
                Error::new($kind, error.to_string())
            }
        }
    )*};
}
error_from_std!(
    std::io::Error => ErrorKind::RUNTIME_ERROR,
    core::num::ParseIntError => ErrorKind::VALUE_ERROR,
    core::num::ParseFloatError => ErrorKind::VALUE_ERROR,
    core::str::Utf8Error => ErrorKind::VALUE_ERROR,
    std::string::FromUtf8Error => ErrorKind::VALUE_ERROR,
    core::fmt::Error => ErrorKind::RUNTIME_ERROR,
);

/// Returns early with an [`Error`] of the given kind and formatted message.
///
/// The kind is one of the common kinds by its Python name (`ValueError`, `TypeError`,
/// `RuntimeError`, `AttributeError`, `KeyError`, `IndexError`, `AssertionError`,
/// `MemoryError`, `InternalError`, `RustPanic`); a misspelt one does not compile. Any other
/// kind is spelt out: `bail!(custom "ShapeError", ...)`.
///
/// ```
/// fn check(n: i64) -> pactum::Result<i64> {
///     if n < 0 {
///         pactum::bail!(ValueError, "negative input {n}");
///     }
///     if n > 100 {
///         pactum::bail!(custom "RangeError", "{n} is over 100");
///     }
///     Ok(n)
/// }
/// assert_eq!(check(-1).unwrap_err().to_string(), "ValueError: negative input -1");
/// assert_eq!(check(101).unwrap_err().kind(), "RangeError");
/// ```
///
/// ```compile_fail
/// fn check() -> pactum::Result<()> {
///     pactum::bail!(ValeuError, "a typo is not a new kind");
/// }
/// ```
#[macro_export]
macro_rules! bail {
    (custom $kind:literal, $($fmt:tt)+) => {
        return ::core::result::Result::Err(
            $crate::Error::new($crate::ErrorKind::custom($kind), format!($($fmt)+)).into(),
        )
    };
    ($kind:ident, $($fmt:tt)+) => {
        return ::core::result::Result::Err(
            $crate::Error::new($crate::error_kind!($kind), format!($($fmt)+)).into(),
        )
    };
}

/// The [`ErrorKind`] constant of a common kind, named as Python names it (`ValueError` ->
/// `ErrorKind::VALUE_ERROR`); anything else does not compile.
#[doc(hidden)]
#[macro_export]
macro_rules! error_kind {
    (ValueError) => {
        $crate::ErrorKind::VALUE_ERROR
    };
    (TypeError) => {
        $crate::ErrorKind::TYPE_ERROR
    };
    (RuntimeError) => {
        $crate::ErrorKind::RUNTIME_ERROR
    };
    (AttributeError) => {
        $crate::ErrorKind::ATTRIBUTE_ERROR
    };
    (KeyError) => {
        $crate::ErrorKind::KEY_ERROR
    };
    (IndexError) => {
        $crate::ErrorKind::INDEX_ERROR
    };
    (AssertionError) => {
        $crate::ErrorKind::ASSERTION_ERROR
    };
    (MemoryError) => {
        $crate::ErrorKind::MEMORY_ERROR
    };
    (InternalError) => {
        $crate::ErrorKind::INTERNAL_ERROR
    };
    (RustPanic) => {
        $crate::ErrorKind::RUST_PANIC
    };
    ($other:ident) => {
        compile_error!(concat!(
            "`",
            stringify!($other),
            "` is not a common error kind; write `custom \"",
            stringify!($other),
            "\"` to make a new one"
        ))
    };
}

/// Malformed text read by one of pactum's parsers is a `ValueError` carrying the format, the
/// byte offset and what was expected there.
impl From<pactum_text::ParseError> for Error {
    fn from(error: pactum_text::ParseError) -> Error {
        Error::new(ErrorKind::VALUE_ERROR, error.to_string())
    }
}
