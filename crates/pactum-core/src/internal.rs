//! What pactum's own runtime (crate `pactum-runtime`) is written with besides the public API:
//! the FFI boundary every `extern "C"` entry point passes through, object memory and headers,
//! string storage, the key hash and equality of maps, and type-table helpers. Not a stable
//! API: nothing outside pactum's own crates uses it.

/// The FFI boundary (see the crate's `boundary` module).
pub mod boundary {
    pub use crate::boundary::{
        EntryKind, SafeCallArgs, deleter, enter, initializer, object_deleter, safe_call, status,
        status_unraised, value, void,
    };
}
pub use crate::any::{display_type_name, view_bytes, view_of_object};
pub use crate::containers::hash::{hash_combine, raw_words, stable_hash_bytes};
/// The reference-counting protocol of object headers.
pub mod header {
    pub use crate::object::header::{dec_ref, inc_ref, strong_count, try_upgrade};
}
pub use crate::object::alloc::{
    ObjectBox, alloc_raw_object, free_raw_object, fresh_header, new_object_box,
};
pub use crate::object::types::{STATIC_TYPE_KEYS, is_instance};

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::any::{Any, AnyView};

/// `AnyHash`, the key hash of Map and Dict, of a live value.
pub fn any_hash(value: &AnyView<'_>) -> u64 {
    crate::containers::hash::any_hash(value.as_raw())
}

/// `AnyEqual`, the key equality of Map and Dict, of two live values.
pub fn any_equal(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> bool {
    crate::containers::hash::any_equal(lhs.as_raw(), rhs.as_raw())
}

/// Which byte-string type a value is made as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteString {
    /// `ffi.String` (SmallStr inline).
    Str,
    /// `ffi.Bytes` (SmallBytes inline).
    Bytes,
}

/// A value of `kind` holding `bytes`: inline when at most 7 bytes long, else an object.
pub fn byte_string_value(bytes: &[u8], kind: ByteString) -> Any {
    match kind {
        ByteString::Str => {
            crate::string::new_value(bytes, TVMFFITypeIndex::SMALL_STR, TVMFFITypeIndex::STR)
        }
        ByteString::Bytes => {
            crate::string::new_value(bytes, TVMFFITypeIndex::SMALL_BYTES, TVMFFITypeIndex::BYTES)
        }
    }
}

/// A heap object of `kind` holding `bytes`, however short (the official runtime returns some
/// strings as objects only).
pub fn heap_byte_string(bytes: &[u8], kind: ByteString) -> Any {
    let index = match kind {
        ByteString::Str => TVMFFITypeIndex::STR,
        ByteString::Bytes => TVMFFITypeIndex::BYTES,
    };
    crate::string::heap_value(bytes, index)
}
