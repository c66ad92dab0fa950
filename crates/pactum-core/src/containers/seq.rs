//! Shared reading of the sequence cell (`TVMFFISeqCell`) that Array and List objects carry.

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFISeqCell};

use crate::any::{Any, AnyView};
use crate::object::ObjectRef;

/// The cell right after the header.
#[inline]
pub(super) fn cell(object: &ObjectRef) -> *mut TVMFFISeqCell {
    // SAFETY: only computes the address; Array and List objects have the cell at +24.
    unsafe { object.as_raw().add(1).cast::<TVMFFISeqCell>() }
}

/// The elements as owned cells.
#[inline]
pub(super) fn elements(object: &ObjectRef) -> &[Any] {
    // SAFETY: `data` points to `size` owned values, alive while the object is.
    unsafe {
        let cell = &*cell(object);
        if cell.size <= 0 || cell.data.is_null() {
            &[]
        } else {
            core::slice::from_raw_parts(cell.data.cast::<Any>(), cell.size as usize)
        }
    }
}

/// Releases the `size` owned elements at `data` (used by deleters).
///
/// # Safety
/// `data` must point to `size` owned values that nobody else will use.
pub(super) unsafe fn drop_elements(data: *mut TVMFFIAny, size: i64) {
    let count = usize::try_from(size).unwrap_or(0);
    // SAFETY: forwarded from the caller; each value is taken exactly once.
    let values = (0..count).map(|i| unsafe { Any::from_raw(data.add(i).read()) });
    crate::object::release::release_values(values);
}

/// Element `index` as a view, or None past the end.
#[inline]
pub(super) fn get(object: &ObjectRef, index: usize) -> Option<AnyView<'_>> {
    elements(object).get(index).map(Any::view)
}
