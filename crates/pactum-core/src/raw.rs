//! Reads of raw ABI values that every layer of the crate needs, with nothing above
//! `pactum-sys` to lean on.

use pactum_sys::tvm_ffi::TVMFFIByteArray;

/// Reads a borrowed `TVMFFIByteArray*`.
///
/// # Safety
/// `bytes` must point to a valid byte array whose data lives for `'a`.
pub(crate) unsafe fn byte_array_slice<'a>(bytes: *const TVMFFIByteArray) -> &'a [u8] {
    // SAFETY: forwarded from the caller (a NULL pointer is caught below instead).
    let Some(bytes) = (unsafe { bytes.as_ref() }) else {
        corrupt_byte_array("a ByteArrayPtr value holds NULL")
    };
    if bytes.size == 0 {
        return &[];
    }
    // What C hands over cannot be trusted to be sane, and a slice of a NULL pointer or of more
    // than isize::MAX bytes (larger than any allocation) is undefined behaviour. Both are
    // detectable, so they panic instead; every C entry point turns the panic into an error.
    if bytes.data.is_null() {
        corrupt_byte_array(&format!(
            "a TVMFFIByteArray claims {} bytes of NULL data",
            bytes.size
        ))
    }
    if bytes.size > isize::MAX as usize {
        corrupt_byte_array(&format!(
            "a TVMFFIByteArray claims {} bytes, more than any allocation can hold",
            bytes.size
        ))
    }
    // SAFETY: forwarded from the caller.
    unsafe { core::slice::from_raw_parts(bytes.data.cast::<u8>(), bytes.size) }
}

#[cold]
#[inline(never)]
pub(crate) fn corrupt_byte_array(message: &str) -> ! {
    panic!("corrupt value from foreign code: {message}")
}
