//! [`String`] (`ffi.String`) and [`Bytes`] (`ffi.Bytes`): immutable byte strings stored inline
//! in the value when at most 7 bytes long (SmallStr/SmallBytes), otherwise in a heap object
//! whose bytes follow the header and byte array, NUL-terminated.

pub(crate) mod storage;

use core::fmt;
use core::ops::Deref;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::any::{Any, AnyView, FromAny, FromAnyView, type_mismatch, view_bytes};
use crate::error::{Error, ErrorKind, Result};

pub use storage::SMALL_STRING_MAX_LEN;

/// Builds an owned value of `small_index` (inline) or `heap_index` (object) holding `bytes`.
pub(crate) fn new_value(
    bytes: &[u8],
    small_index: TVMFFITypeIndex,
    heap_index: TVMFFITypeIndex,
) -> Any {
    // SAFETY: a fresh value whose ownership the Any takes.
    unsafe { Any::from_raw(storage::new_raw(bytes, small_index, heap_index)) }
}

/// Builds a heap String or Bytes object of `heap_index` holding `bytes`, whatever its length.
pub(crate) fn heap_value(bytes: &[u8], heap_index: TVMFFITypeIndex) -> Any {
    // SAFETY: a fresh object whose single strong reference the Any takes.
    unsafe { Any::from_raw(storage::heap_raw(bytes, heap_index)) }
}

/// An immutable UTF-8 string (`ffi.String`): inline when short, shared when long.
#[derive(Clone)]
pub struct String(Any);

impl String {
    /// Copies `text`.
    pub fn new(text: &str) -> String {
        String(new_value(
            text.as_bytes(),
            TVMFFITypeIndex::SMALL_STR,
            TVMFFITypeIndex::STR,
        ))
    }

    /// A string value (SmallStr or Str) holding `bytes`, which need not be UTF-8: C strings
    /// and registry names are byte strings. Returned as `Any`, since a `String` promises UTF-8.
    #[doc(hidden)]
    pub fn value_from_bytes(bytes: &[u8]) -> Any {
        new_value(bytes, TVMFFITypeIndex::SMALL_STR, TVMFFITypeIndex::STR)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        let bytes = view_bytes(self.0.as_view()).unwrap_or(&[]);
        // Invariant: a String is built from a `&str` or checked when converted from a value.
        core::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The text as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        view_bytes(self.0.as_view()).unwrap_or(&[])
    }

    /// Whether the string is stored inline (7 bytes or fewer).
    pub fn is_inline(&self) -> bool {
        self.0.type_index() == TVMFFITypeIndex::SMALL_STR.0
    }

    /// The value form.
    pub fn as_any(&self) -> &Any {
        &self.0
    }

    fn checked(any: Any) -> Result<String> {
        match TVMFFITypeIndex(any.type_index()) {
            TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                let bytes = view_bytes(any.as_view()).unwrap_or(&[]);
                if let Err(e) = core::str::from_utf8(bytes) {
                    return Err(Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!("string is not valid UTF-8: {e}"),
                    ));
                }
                Ok(String(any))
            }
            _ => Err(type_mismatch("ffi.String", any.type_index())),
        }
    }
}

impl Deref for String {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for String {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for String {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq for String {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for String {}
impl PartialEq<str> for String {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}
impl PartialEq<&str> for String {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
impl core::hash::Hash for String {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl From<&str> for String {
    fn from(text: &str) -> Self {
        String::new(text)
    }
}

impl From<String> for Any {
    fn from(value: String) -> Self {
        value.0
    }
}

impl<'a> From<&'a String> for AnyView<'a> {
    fn from(value: &'a String) -> Self {
        value.0.view()
    }
}

impl FromAny for String {
    fn from_any(any: Any) -> Result<Self> {
        match TVMFFITypeIndex(any.type_index()) {
            TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => String::checked(any),
            _ => Err(type_mismatch("ffi.String", any.type_index())),
        }
    }
}

impl<'a> FromAnyView<'a> for String {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.type_index()) {
            TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                String::checked(view.to_any()?)
            }
            _ => Err(type_mismatch("ffi.String", view.type_index())),
        }
    }
}

/// An immutable byte string (`ffi.Bytes`): inline when short, shared when long.
#[derive(Clone)]
pub struct Bytes(Any);

impl Bytes {
    /// Copies `bytes`.
    pub fn new(bytes: &[u8]) -> Bytes {
        Bytes(new_value(
            bytes,
            TVMFFITypeIndex::SMALL_BYTES,
            TVMFFITypeIndex::BYTES,
        ))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        view_bytes(self.0.as_view()).unwrap_or(&[])
    }

    /// Whether the bytes are stored inline (7 or fewer).
    pub fn is_inline(&self) -> bool {
        self.0.type_index() == TVMFFITypeIndex::SMALL_BYTES.0
    }

    /// The value form.
    pub fn as_any(&self) -> &Any {
        &self.0
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.as_bytes().escape_ascii())
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for Bytes {}

impl From<&[u8]> for Bytes {
    fn from(bytes: &[u8]) -> Self {
        Bytes::new(bytes)
    }
}

impl From<Bytes> for Any {
    fn from(value: Bytes) -> Self {
        value.0
    }
}

impl<'a> From<&'a Bytes> for AnyView<'a> {
    fn from(value: &'a Bytes) -> Self {
        value.0.view()
    }
}

impl FromAny for Bytes {
    fn from_any(any: Any) -> Result<Self> {
        match TVMFFITypeIndex(any.type_index()) {
            TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES => Ok(Bytes(any)),
            _ => Err(type_mismatch("ffi.Bytes", any.type_index())),
        }
    }
}

impl<'a> FromAnyView<'a> for Bytes {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.type_index()) {
            TVMFFITypeIndex::BYTE_ARRAY_PTR
            | TVMFFITypeIndex::SMALL_BYTES
            | TVMFFITypeIndex::BYTES => Ok(Bytes(view.to_any()?)),
            _ => Err(type_mismatch("ffi.Bytes", view.type_index())),
        }
    }
}

impl From<&str> for Any {
    fn from(value: &str) -> Self {
        crate::String::new(value).into()
    }
}
impl From<std::string::String> for Any {
    fn from(value: std::string::String) -> Self {
        crate::String::new(&value).into()
    }
}
impl From<&[u8]> for Any {
    fn from(value: &[u8]) -> Self {
        crate::Bytes::new(value).into()
    }
}
impl From<Vec<u8>> for Any {
    fn from(value: Vec<u8>) -> Self {
        crate::Bytes::new(&value).into()
    }
}
