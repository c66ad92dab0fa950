//! Reading the arguments of the C functions: required pointers, byte arrays and C strings,
//! with a `ValueError` naming the argument when one is NULL or impossible. The lowest layer
//! of the runtime: it uses nothing else here.

use core::ffi::c_char;

use pactum_sys::tvm_ffi::TVMFFIByteArray;

use pactum_core::error::{Error, ErrorKind, Result};

/// `TVMFFISafeCallType` without the `Option`.
pub(crate) type SafeCallFn = unsafe extern "C" fn(
    *mut core::ffi::c_void,
    *const pactum_sys::tvm_ffi::TVMFFIAny,
    i32,
    *mut pactum_sys::tvm_ffi::TVMFFIAny,
) -> core::ffi::c_int;

fn null_argument(name: &str) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, format!("argument `{name}` is NULL"))
}

/// A required pointer argument as a reference.
///
/// # Safety
/// A non-null `ptr` must point to a valid `T` for the duration of the call.
pub(crate) unsafe fn arg_ref<'a, T>(ptr: *const T, name: &str) -> Result<&'a T> {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_argument(name))
}

/// A required out pointer.
pub(crate) fn out_ptr<T>(ptr: *mut T, name: &str) -> Result<*mut T> {
    if ptr.is_null() {
        Err(null_argument(name))
    } else {
        Ok(ptr)
    }
}

/// The bytes of a required `TVMFFIByteArray*` argument (a `{NULL, 0}` array is empty).
pub(crate) fn arg_bytes<'a>(bytes: *const TVMFFIByteArray, name: &str) -> Result<&'a [u8]> {
    if bytes.is_null() {
        return Err(null_argument(name));
    }
    // SAFETY: checked non-NULL; the caller passes a valid byte array for the call.
    let size = unsafe { (*bytes).size };
    if size > isize::MAX as usize {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!("argument `{name}` claims {size} bytes, more than any allocation can hold"),
        ));
    }
    // SAFETY: the caller passes a valid byte array for the duration of the call.
    Ok(unsafe { byte_array_bytes(&*bytes) })
}

/// The bytes a byte array describes (empty for NULL data).
///
/// # Safety
/// `bytes` must describe readable memory for the returned lifetime.
pub(crate) unsafe fn byte_array_bytes<'a>(bytes: &TVMFFIByteArray) -> &'a [u8] {
    if bytes.data.is_null() || bytes.size == 0 {
        return &[];
    }
    // No allocation exceeds isize::MAX bytes, so such a size is a corrupt array; making a slice
    // of it would be undefined behaviour. Every caller runs inside the FFI boundary, which
    // reports the panic as an error (arguments are checked with a clearer message in `arg_bytes`).
    assert!(
        bytes.size <= isize::MAX as usize,
        "a TVMFFIByteArray claims {} bytes, more than any allocation can hold",
        bytes.size
    );
    // SAFETY: forwarded from the caller.
    unsafe { core::slice::from_raw_parts(bytes.data.cast::<u8>(), bytes.size) }
}

/// The bytes of a C string argument.
///
/// # Safety
/// A non-null `text` must be NUL-terminated and readable for the returned lifetime.
pub(crate) unsafe fn c_str_bytes<'a>(text: *const c_char, name: &str) -> Result<&'a [u8]> {
    if text.is_null() {
        return Err(null_argument(name));
    }
    // SAFETY: forwarded from the caller.
    Ok(unsafe { core::ffi::CStr::from_ptr(text) }.to_bytes())
}

/// A permanent, NUL-terminated copy (for registration records that live forever).
/// A borrowed view of `bytes` (valid while they are).
pub(crate) fn byte_view(bytes: &[u8]) -> TVMFFIByteArray {
    TVMFFIByteArray {
        data: if bytes.is_empty() {
            core::ptr::null()
        } else {
            bytes.as_ptr().cast()
        },
        size: bytes.len(),
    }
}

pub(crate) fn permanent_bytes(bytes: &[u8]) -> TVMFFIByteArray {
    if bytes.is_empty() {
        return TVMFFIByteArray {
            data: core::ptr::null(),
            size: 0,
        };
    }
    let mut copy = Vec::with_capacity(bytes.len() + 1);
    copy.extend_from_slice(bytes);
    copy.push(0);
    let leaked: &'static [u8] = Box::leak(copy.into_boxed_slice());
    TVMFFIByteArray {
        data: leaked.as_ptr().cast(),
        size: bytes.len(),
    }
}
