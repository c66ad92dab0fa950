//! The one place where Rust code meets a C caller: panics are caught, errors are raised into
//! the thread-local slot, and the C status code is produced.

use core::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{Error, Result};

/// Runs `body` for a C entry point: 0 on success; -1 after raising the error (or the caught
/// panic, as a `RustPanic` error carrying the panic message).
///
/// The entry points calling this are `extern "C"`, so even a panic escaping from here (from
/// raising the error itself) aborts the process instead of unwinding into C.
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(error)) => {
            error.set_raised();
            -1
        }
        Err(payload) => {
            Error::from_panic(payload).set_raised();
            -1
        }
    }
}
