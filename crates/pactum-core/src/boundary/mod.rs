//! The FFI boundary: the one place where a C caller enters Rust code.
//!
//! Every `extern "C"` function of this crate runs its body through one of the shapes below:
//! the 50 C API functions of pactum's own runtime (`pactum-runtime`), the `__tvm_ffi_<name>` symbols (and the
//! metadata and doc getters) that `#[pactum::export]` generates, through
//! [`export::__private`](crate::export::__private), the callbacks pactum hands to C code (the
//! `safe_call` of every function pactum makes, allocator, hash and backtrace hooks), and
//! deleters. Each shape catches panics, so none unwinds into C and none aborts the process:
//!
//! | shape | on `Err(error)` | on a panic |
//! |---|---|---|
//! | [`status`] | raises `error`, returns -1 | raises a `RustPanic` error, returns -1 |
//! | [`status_unraised`] | returns -1; the error slot is untouched | the same |
//! | [`value`] (and [`void`]) | raises `error`, returns the fallback | raises `RustPanic`, returns the fallback |
//! | [`safe_call`] | as [`status`]; the result slot is restored | the same |
//! | [`deleter`], [`object_deleter`] | (none) | reported on stderr; an object's memory is still freed |
//!
//! A `RustPanic` error carries the panic message. Raising the error cannot unwind either: if
//! that panics too (a panic payload whose destructor panics), the entry point still returns
//! its failure value, without an error.
//!
//! With the `fault-injection` feature (tests only), [`fault_injection`] makes the next entry of
//! a kind panic before its body runs, inside the boundary, to show that such a panic is caught
//! too. Without it, entering costs nothing: a body that cannot unwind compiles to a plain call.

use core::ffi::{c_int, c_void};

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFITypeIndex};

use crate::error::{Error, ErrorKind, Result};
use crate::object::header;

mod containment;

pub use containment::EntryKind;
#[cfg(feature = "fault-injection")]
pub use containment::fault_injection;
pub(crate) use containment::{Payload, callback, contain};
pub use containment::{deleter, enter, initializer, object_deleter};

/// Raises `error` in the calling thread's error slot and returns `fallback` (returning it
/// from here lets the entry point return the call's result directly).
#[cold]
#[inline(never)]
fn failed<T>(error: Error, fallback: T) -> T {
    contain(|| error.set_raised());
    fallback
}

/// Raises a caught panic as a `RustPanic` error carrying the panic message, and returns
/// `fallback`.
#[cold]
#[inline(never)]
fn panicked<T>(payload: Payload, fallback: T) -> T {
    contain(|| Error::from_panic(payload).set_raised());
    fallback
}

/// A C function returning a status: 0 on success; -1 after raising the error (or the caught
/// panic, as a `RustPanic` error).
#[inline(always)]
pub fn status(kind: EntryKind, body: impl FnOnce() -> Result<()>) -> c_int {
    match enter(kind, body) {
        Ok(Ok(())) => 0,
        Ok(Err(error)) => failed(error, -1),
        Err(payload) => panicked(payload, -1),
    }
}

/// A C function returning a status that must leave the error slot alone (the functions that
/// make error objects): 0 on success, -1 on an error or a panic, neither of which is raised.
#[inline(always)]
pub fn status_unraised(kind: EntryKind, body: impl FnOnce() -> Result<()>) -> c_int {
    match enter(kind, body) {
        Ok(Ok(())) => 0,
        Ok(Err(error)) => {
            contain(|| drop(error));
            -1
        }
        Err(payload) => {
            contain(|| drop(payload));
            -1
        }
    }
}

/// A C function returning a value (or a status code it passes through from a callee): on an
/// error or a panic, the error is raised and `fallback` returned.
#[inline(always)]
pub fn value<T>(kind: EntryKind, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    match enter(kind, body) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => failed(error, fallback),
        Err(payload) => panicked(payload, fallback),
    }
}

/// A C function with no result: an error or a panic is raised.
#[inline(always)]
pub fn void(kind: EntryKind, body: impl FnOnce() -> Result<()>) {
    value(kind, (), body)
}

/// A packed function's `safe_call` (`TVMFFISafeCallType`), with its result slot: `body` runs
/// on the call's arguments with None in `result`, and returns 0 after writing the result
/// there, or the nonzero code of a callee that raised its own error. The entry point returns
/// 0, or -1 after a nonzero code, an error or a panic (the last two raised as in [`status`]).
///
/// C callers preset the slot to None as the convention asks. C++ code built from the official
/// headers calls functions that have no `cpp_call` (every function pactum makes) through
/// `safe_call` with a slot that may still hold an owned value from an earlier call
/// (`Function::CallPacked` reusing an `Any`). So the previous value is moved aside, released
/// once the call succeeds, and put back if it fails. A NULL `result` is a `ValueError`.
///
/// The arguments travel separately from `body` (which normally captures nothing), so the
/// common case, a slot holding no object, passes them on in registers.
///
/// # Safety
/// `result` must be NULL or a valid result slot for the duration of the call.
#[inline(always)]
pub unsafe fn safe_call<F>(
    kind: EntryKind,
    (handle, args, num_args, result): SafeCallArgs,
    body: F,
) -> c_int
where
    F: FnOnce(*mut c_void, *const TVMFFIAny, i32, *mut TVMFFIAny) -> Result<c_int>,
{
    // SAFETY: the caller passes a valid result slot, or NULL (not read).
    let holds_object = result.is_null()
        || unsafe { (*result).type_index } >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0;
    if holds_object {
        // SAFETY: forwarded from the caller.
        return unsafe { safe_call_moving_previous(handle, args, num_args, result, kind, body) };
    }
    safe_call_code(enter(kind, move || body(handle, args, num_args, result)))
}

/// The arguments of a `TVMFFISafeCallType` call: handle, arguments, count, result slot.
pub type SafeCallArgs = (*mut c_void, *const TVMFFIAny, i32, *mut TVMFFIAny);

/// [`safe_call`] with a slot that holds an object (or is NULL, reported): kept out of line,
/// so the common case keeps no state across the call. The arguments come in the order of the
/// C call, so they stay in their registers.
///
/// # Safety
/// As for [`safe_call`].
#[cold]
#[inline(never)]
unsafe fn safe_call_moving_previous<F>(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
    kind: EntryKind,
    body: F,
) -> c_int
where
    F: FnOnce(*mut c_void, *const TVMFFIAny, i32, *mut TVMFFIAny) -> Result<c_int>,
{
    let mut previous: Option<TVMFFIAny> = None;
    let outcome = enter(kind, || {
        // SAFETY: the caller passes a valid result slot, or NULL (reported).
        let Some(slot) = (unsafe { result.as_mut() }) else {
            return Err(Error::new(ErrorKind::VALUE_ERROR, "result pointer is NULL"));
        };
        if slot.type_index >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
            previous = Some(take_previous(slot));
        }
        body(handle, args, num_args, result)
    });
    let rc = safe_call_code(outcome);
    if let Some(previous) = previous {
        // SAFETY: `previous` was taken out of the valid slot `result`.
        unsafe { settle_previous(result, previous, rc) };
    }
    rc
}

/// The status a `safe_call` returns for the body's outcome.
#[inline(always)]
fn safe_call_code(outcome: std::thread::Result<Result<c_int>>) -> c_int {
    match outcome {
        Ok(Ok(0)) => 0,
        Ok(Ok(_)) => -1,
        Ok(Err(error)) => failed(error, -1),
        Err(payload) => panicked(payload, -1),
    }
}

/// Moves the owned object out of a result slot, leaving None.
fn take_previous(slot: &mut TVMFFIAny) -> TVMFFIAny {
    core::mem::replace(slot, TVMFFIAny::NONE)
}

/// Releases the object moved out of the slot after success, or puts it back after failure.
///
/// # Safety
/// `result` must be the valid slot `previous` (an owned object) was taken from.
unsafe fn settle_previous(result: *mut TVMFFIAny, previous: TVMFFIAny, rc: c_int) {
    if rc == 0 {
        // SAFETY: an object in the slot is an owned value (the only kind C++ leaves there),
        // whose reference we took over; deleters contain their own panics.
        contain(|| unsafe { header::dec_ref(previous.value.v_obj) });
    } else {
        // SAFETY: the slot is valid (from the caller); a failed callee leaves no owned value
        // in it.
        unsafe { result.write(previous) };
    }
}
