//! The low half of the FFI boundary: entering (with the fault-injection check), containing a
//! panic, and the shapes that need no error object (deleters). The shapes that raise errors
//! are in the parent module; this half sits below `Error` so that the error object's own
//! callbacks and every object deleter can use it.

use core::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pactum_sys::tvm_ffi::{TVMFFI_OBJECT_DELETER_FLAG_STRONG, TVMFFI_OBJECT_DELETER_FLAG_WEAK};

/// The kinds of entry points, for `fault_injection` (and for reading call sites).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// One of the 50 C API functions of pactum's own runtime (`TVMFFIObjectIncRef`, ...).
    CApi,
    /// An exported `__tvm_ffi_<name>` symbol of `#[pactum::export]`, or its metadata or doc
    /// getter.
    Export,
    /// A function pointer pactum hands to C code to call back: the `safe_call` of the functions
    /// pactum makes (around closures, C callbacks and library symbols), the object allocator,
    /// BigInt hash hooks, an error's `update_backtrace`, a DLPack allocator's error setter.
    Callback,
    /// A deleter: of objects, of exported DLPack tensors, of container buffers, of allocator
    /// memory.
    Deleter,
}

/// A caught panic's payload.
pub type Payload = Box<dyn core::any::Any + Send>;

/// Runs `body` inside `catch_unwind`, after the fault-injection check (which panics inside).
///
/// Unwind safety: after a caught panic nothing the body touched is used again, except what
/// the shapes restore (the result slot) and locks, which pactum recovers from poisoning
/// everywhere.
#[inline(always)]
pub fn enter<R>(kind: EntryKind, body: impl FnOnce() -> R) -> std::thread::Result<R> {
    catch_unwind(AssertUnwindSafe(move || {
        #[cfg(feature = "fault-injection")]
        fault_injection::check(kind);
        #[cfg(not(feature = "fault-injection"))]
        let _ = kind;
        body()
    }))
}

/// Runs failure handling, which must not unwind either. A panic there (from dropping a panic
/// payload whose destructor panics) is dropped, and its payload forgotten: dropping it might
/// panic again.
#[cold]
pub(crate) fn contain(handling: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(handling)) {
        core::mem::forget(payload);
    }
}

/// A callback with nothing to return (an error's `update_backtrace`): a panic is handed to
/// `on_panic`, whose own panic is contained.
#[inline(always)]
pub(crate) fn callback(body: impl FnOnce(), on_panic: impl FnOnce(Payload)) {
    if let Err(payload) = enter(EntryKind::Callback, body) {
        contain(move || on_panic(payload));
    }
}

/// A load-time constructor (an `.init_array` entry, run by the C runtime before `main` or when
/// a library is loaded): nobody can be told of a failure but stderr, and a panic must not
/// unwind into the dynamic loader. `what` names the constructor in the message.
pub fn initializer(what: &str, body: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(body)) {
        contain(move || {
            drop(payload);
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "pactum: {what} panicked (contained)");
        });
    }
}

/// A deleter that has no error slot to report through (a DLPack deleter, a buffer's
/// `data_deleter`): a panic is reported on stderr and the process carries on.
#[inline(always)]
pub fn deleter(body: impl FnOnce()) {
    if let Err(payload) = enter(EntryKind::Deleter, body) {
        contained_in_deleter(payload);
    }
}

/// An object deleter (`TVMFFIObjectDeleter`) called with `flags`: `release` drops the contents
/// on the strong flag, then `free` returns the memory on the weak flag. A panic in either is
/// reported on stderr; the memory is freed even when `release` panicked.
#[inline(always)]
pub fn object_deleter(flags: c_int, release: impl FnOnce(), free: impl FnOnce()) {
    deleter(|| {
        if flags & TVMFFI_OBJECT_DELETER_FLAG_STRONG != 0 {
            release();
        }
    });
    if flags & TVMFFI_OBJECT_DELETER_FLAG_WEAK != 0 {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(free)) {
            contained_in_deleter(payload);
        }
    }
}

/// A panic inside a deleter, where nothing can be reported to a caller: say so on stderr and
/// carry on.
#[cold]
#[inline(never)]
fn contained_in_deleter(payload: Payload) {
    contain(move || {
        drop(payload);
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "pactum: a panic while an FFI object or buffer was being released was contained"
        );
    });
    #[cfg(feature = "fault-injection")]
    fault_injection::count_deleter_panic();
}

#[cfg(feature = "fault-injection")]
pub mod fault_injection {
    //! Fault injection at the FFI boundary, for tests (the `fault-injection` cargo feature, off
    //! by default; enable it only from test code, such as a dev-dependency).
    //!
    //! [`panic_at_next_entry`] arms the calling thread: the next entry point of that kind the
    //! thread enters panics inside the boundary, before its body runs, and the boundary reports
    //! the panic as it reports any other (a `RustPanic` error, a failure value, or a line on
    //! stderr for deleters). The flag is cleared when it fires.

    use core::cell::Cell;

    pub use super::EntryKind;

    thread_local! {
        static ARMED: Cell<Option<EntryKind>> = const { Cell::new(None) };
        static DELETER_PANICS: Cell<usize> = const { Cell::new(0) };
    }

    /// The message of injected panics.
    pub const MESSAGE: &str = "pactum fault injection: a panic at the FFI boundary";

    /// Makes the next entry point of `kind` this thread enters panic.
    pub fn panic_at_next_entry(kind: EntryKind) {
        ARMED.set(Some(kind));
    }

    /// The kind this thread is armed for, until the panic fires.
    pub fn armed() -> Option<EntryKind> {
        ARMED.get()
    }

    /// Clears this thread's flag without firing.
    pub fn disarm() {
        ARMED.set(None);
    }

    /// How many panics deleters have contained on this thread.
    pub fn deleter_panics() -> usize {
        DELETER_PANICS.get()
    }

    #[inline(always)]
    pub(super) fn check(kind: EntryKind) {
        if ARMED.get() == Some(kind) {
            fire();
        }
    }

    #[cold]
    #[inline(never)]
    fn fire() {
        ARMED.set(None);
        std::panic::panic_any(MESSAGE);
    }

    pub(super) fn count_deleter_panic() {
        DELETER_PANICS.set(DELETER_PANICS.get() + 1);
    }
}
