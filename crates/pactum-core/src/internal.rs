//! What pactum's own runtime (crate `pactum-runtime`) is written with besides the public API:
//! the FFI boundary every `extern "C"` entry point passes through, object memory and headers,
//! string storage, the key hash and equality of maps, and type-table helpers. Not a stable
//! API: nothing outside pactum's own crates uses it.

/// The FFI boundary (see the crate's `boundary` module).
pub mod boundary {
    pub use crate::boundary::{
        EntryKind, SafeCallArgs, deleter, enter, object_deleter, safe_call, status,
        status_unraised, value, void,
    };
}
pub use crate::any::{display_type_name, view_bytes, view_of_object};
pub use crate::containers::hash::{
    any_equal, any_hash, hash_combine, raw_words, stable_hash_bytes,
};
/// The reference-counting protocol of object headers.
pub mod header {
    pub use crate::object::header::{dec_ref, inc_ref, strong_count, try_upgrade};
}
pub use crate::object::types::{STATIC_TYPE_KEYS, is_instance};
pub use crate::object::{
    ObjectBox, alloc_raw_object, free_raw_object, fresh_header, new_object_box,
};
pub use crate::string::{heap_value, new_value};
