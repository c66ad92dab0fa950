//! The storage of string and bytes values: inline in the 16-byte value when short, otherwise
//! a heap object (header, byte array, bytes, NUL). Raw values only, so that `Any` can make
//! strings without depending on the `String` type built on it.

use core::alloc::Layout;
use core::ffi::{c_char, c_int, c_void};

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFIObject, TVMFFITypeIndex,
};

use crate::object::{alloc_raw_object, free_raw_object};

/// Longest string stored inline.
pub const SMALL_STRING_MAX_LEN: usize = 7;

const HEAP_HEADER: usize =
    core::mem::size_of::<TVMFFIObject>() + core::mem::size_of::<TVMFFIByteArray>();

fn heap_layout(len: usize) -> Layout {
    // One extra byte for the trailing NUL that C readers may rely on.
    Layout::from_size_align(HEAP_HEADER + len + 1, 8)
        .expect("string length overflows the address space")
}

unsafe extern "C" fn heap_bytes_deleter(obj: *mut c_void, flags: c_int) {
    crate::boundary::object_deleter(
        flags,
        || {},
        || {
            let obj = obj.cast::<TVMFFIObject>();
            // SAFETY: the byte array right after the header records the length we allocated for.
            let len = unsafe { (*obj.add(1).cast::<TVMFFIByteArray>()).size };
            // SAFETY: allocated by `new_raw` with this layout; the weak flag comes once.
            unsafe { free_raw_object(obj, heap_layout(len)) }
        },
    )
}

/// An owned value of `small_index` (inline) or `heap_index` (object) holding `bytes`; the
/// caller owns the reference a heap value carries.
pub(crate) fn new_raw(
    bytes: &[u8],
    small_index: TVMFFITypeIndex,
    heap_index: TVMFFITypeIndex,
) -> TVMFFIAny {
    if bytes.len() <= SMALL_STRING_MAX_LEN {
        let mut inline = [0u8; 8];
        inline[..bytes.len()].copy_from_slice(bytes);
        let raw = TVMFFIAny {
            type_index: small_index.0,
            small_str_len: bytes.len() as u32,
            value: TVMFFIAnyValue { v_bytes: inline },
        };
        return raw;
    }
    heap_raw(bytes, heap_index)
}

/// A heap String or Bytes object of `heap_index` holding `bytes`, whatever its length; the
/// caller owns its one strong reference.
pub(crate) fn heap_raw(bytes: &[u8], heap_index: TVMFFITypeIndex) -> TVMFFIAny {
    let obj = alloc_raw_object(
        heap_layout(bytes.len()),
        heap_index.0,
        Some(heap_bytes_deleter),
    )
    .as_ptr();
    // SAFETY: the allocation holds header + byte array + len + 1 bytes.
    unsafe {
        let data = obj.cast::<u8>().add(HEAP_HEADER);
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len());
        *data.add(bytes.len()) = 0;
        obj.add(1).cast::<TVMFFIByteArray>().write(TVMFFIByteArray {
            data: data.cast::<c_char>(),
            size: bytes.len(),
        });
    }
    TVMFFIAny {
        type_index: heap_index.0,
        small_str_len: 0,
        value: TVMFFIAnyValue { v_obj: obj },
    }
}
