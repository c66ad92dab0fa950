//! Containers whose memory layout is exactly the one header-inlined C++ code reads and writes:
//! [`Array`] and [`List`] (sequences of owned values), [`Map`] and [`Dict`] (hash maps keyed
//! by `AnyHash`, the key hash the official headers inline).

mod array;
pub(crate) mod hash;
mod list;
mod map;
mod seq;

pub use array::Array;
pub use list::List;
pub use map::{Dict, Map, MapIter};

use crate::any::AnyView;

/// Whether two values are the same map key: `AnyEqual`, the key equality of [`Map`] and
/// [`Dict`] (and of the official headers): equal payloads, equal string or bytes content, or
/// a registered `__any_equal__` hook's answer.
#[inline]
pub fn same_key(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> bool {
    hash::any_equal_fast(lhs.as_raw(), rhs.as_raw())
}
