//! The per-thread raised-error slot, error creation and backtraces.

use core::cell::{Cell, RefCell};
use core::ffi::{c_char, c_int};

use pactum_sys::tvm_ffi::{TVMFFIByteArray, TVMFFIObject, TVMFFIObjectHandle};

use super::args::{arg_bytes, c_str_bytes, out_ptr};
use crate::boundary::{self, EntryKind::CApi};
use crate::error::{Error, Result};
use crate::object::{ObjectRef, header};

thread_local! {
    /// The raised error of this thread (an owned object pointer, or NULL).
    static RAISED: Cell<*mut TVMFFIObject> = const { Cell::new(core::ptr::null_mut()) };
    /// Releases whatever is left in the slot when the thread exits.
    static RAISED_CLEANUP: SlotCleanup = const { SlotCleanup };
    /// The buffer `TVMFFIBacktrace` returns.
    static BACKTRACE: RefCell<(Vec<u8>, TVMFFIByteArray)> =
        const { RefCell::new((Vec::new(), TVMFFIByteArray { data: core::ptr::null(), size: 0 })) };
}

struct SlotCleanup;

impl Drop for SlotCleanup {
    fn drop(&mut self) {
        let _ = RAISED.try_with(|slot| {
            let old = slot.replace(core::ptr::null_mut());
            if !old.is_null() {
                // SAFETY: the slot owned one strong reference.
                unsafe { header::dec_ref(old) }
            }
        });
    }
}

fn replace_raised(new: *mut TVMFFIObject) {
    RAISED_CLEANUP.with(|_| {});
    let old = RAISED.with(|slot| slot.replace(new));
    if !old.is_null() {
        // SAFETY: the slot owned one strong reference to the previous error.
        unsafe { header::dec_ref(old) }
    }
}

#[allow(non_snake_case)]
/// `TVMFFIErrorSetRaised`: the slot takes its own reference; NULL clears it.
///
/// # Safety
/// The C contract of `TVMFFIErrorSetRaised` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIErrorSetRaised(error: TVMFFIObjectHandle) {
    boundary::void(CApi, || {
        let error = error.cast::<TVMFFIObject>();
        if !error.is_null() {
            // SAFETY: the caller passes a live error object.
            unsafe { header::inc_ref(error) };
        }
        replace_raised(error);
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIErrorMoveFromRaised`: hands over the slot's reference (or NULL) and clears it.
///
/// # Safety
/// The C contract of `TVMFFIErrorMoveFromRaised` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIErrorMoveFromRaised(result: *mut TVMFFIObjectHandle) {
    boundary::void(CApi, || {
        if result.is_null() {
            return Ok(());
        }
        RAISED_CLEANUP.with(|_| {});
        let taken = RAISED.with(|slot| slot.replace(core::ptr::null_mut()));
        // SAFETY: checked non-null out pointer.
        unsafe { *result = taken.cast() };
        Ok(())
    })
}

fn raise(error: Error) {
    replace_raised(error.into_object_ref_raw());
}

impl Error {
    fn into_object_ref_raw(self) -> *mut TVMFFIObject {
        crate::object::ObjectRefType::into_object_ref(self).into_raw()
    }
}

#[allow(non_snake_case)]
/// `TVMFFIErrorSetRaisedFromCStr`.
///
/// # Safety
/// The C contract of `TVMFFIErrorSetRaisedFromCStr` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStr(kind: *const c_char, message: *const c_char) {
    // SAFETY: the caller passes NUL-terminated strings or NULL.
    boundary::void(CApi, || unsafe { raise_from_c_strs(kind, message) })
}

/// Raises an error of `kind` with `message` and the caller's native backtrace.
///
/// # Safety
/// `kind` and `message` must be NULL (reported, not read) or NUL-terminated.
pub(crate) unsafe fn raise_from_c_strs(kind: *const c_char, message: *const c_char) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let (kind, message) = unsafe { (c_str_bytes(kind, "kind")?, c_str_bytes(message, "message")?) };
    raise(Error::with_parts(
        kind,
        message,
        &current_backtrace(),
        None,
        None,
    ));
    Ok(())
}

#[allow(non_snake_case)]
/// `TVMFFIErrorSetRaisedFromCStrParts`: the message is the concatenation of the non-NULL
/// parts, with no separator.
///
/// # Safety
/// The C contract of `TVMFFIErrorSetRaisedFromCStrParts` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIErrorSetRaisedFromCStrParts(
    kind: *const c_char,
    message_parts: *const *const c_char,
    num_parts: i32,
) {
    boundary::void(CApi, || {
        // SAFETY: the caller passes a NUL-terminated kind.
        let kind = unsafe { c_str_bytes(kind, "kind")? };
        let mut message = Vec::new();
        if num_parts > 0 {
            out_ptr(message_parts.cast_mut(), "message_parts")?;
            for i in 0..num_parts as usize {
                // SAFETY: the caller passes `num_parts` entries, each NULL or NUL-terminated.
                let part = unsafe { *message_parts.add(i) };
                if !part.is_null() {
                    // SAFETY: as above.
                    message
                        .extend_from_slice(unsafe { core::ffi::CStr::from_ptr(part) }.to_bytes());
                }
            }
        }
        raise(Error::with_parts(
            kind,
            &message,
            &current_backtrace(),
            None,
            None,
        ));
        Ok(())
    })
}

/// The backtrace recorded for errors raised through the C API: the native frames from the
/// caller outward to the FFI boundary, most recent first, one
/// `  File "<object>", line 0, in <symbol>` line each.
/// Frames are named with `dladdr` (no debug-info lookup, so this costs microseconds).
pub(crate) fn current_backtrace() -> Vec<u8> {
    native_backtrace(None, true)
}

/// Where the official runtime stops a backtrace that does not cross the FFI boundary
/// (`DetectFFIBoundary`, backtrace_utils.h): at `TVMFFIFunctionCall` and at the Python
/// interpreter, whose frames Python reports itself.
fn is_ffi_boundary(symbol: &[u8]) -> bool {
    [
        &b"TVMFFIFunctionCall"[..],
        b"slot_tp_call",
        b"object_is_not_callable",
        b"_Py",
        b"PyObject",
    ]
    .iter()
    .any(|prefix| symbol.starts_with(prefix))
}

/// Frames the official runtime leaves out (`ShouldExcludeFrame`): the error entry points,
/// libc's start-up and libffi's trampolines.
fn is_excluded_frame(symbol: &[u8]) -> bool {
    [
        &b"TVMFFIBacktrace"[..],
        b"TVMFFIErrorSetRaisedFromCStr",
        b"__libc_",
        b"ffi_call_",
    ]
    .iter()
    .any(|prefix| symbol.starts_with(prefix))
}

/// Frames of the calling thread after an optional given frame line, skipping the leading
/// frames that belong to pactum's own object (the runtime's internals) and, with a given
/// line, the caller's frame it stands for (as the official runtime does). With
/// `stop_at_boundary`, the walk ends at the FFI boundary (`is_ffi_boundary`).
///
/// Frames `dladdr` cannot name (static functions) are left out, as the official runtime
/// leaves out the frames it cannot name: each line costs Python a traceback frame when the
/// error reaches it. Should no frame have a name, they are all listed by address instead,
/// so a native backtrace is never empty.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn native_backtrace(first_line: Option<&[u8]>, stop_at_boundary: bool) -> Vec<u8> {
    const MAX_FRAMES: usize = 64;
    let mut frames = [core::ptr::null_mut::<core::ffi::c_void>(); MAX_FRAMES];
    // SAFETY: glibc's backtrace writes at most MAX_FRAMES addresses into the buffer.
    let count =
        unsafe { libc::backtrace(frames.as_mut_ptr(), MAX_FRAMES as c_int) }.max(0) as usize;
    let own_object =
        object_of(native_backtrace as *const core::ffi::c_void).map(|(object, _)| object);
    let mut text = first_line.map(<[u8]>::to_vec).unwrap_or_default();
    let mut in_own_frames = true;
    let mut skip_caller = first_line.is_some();
    let mut unnamed = Vec::new();
    let mut named = 0usize;
    for &address in &frames[..count] {
        let Some((object, symbol)) = object_of(address.cast_const()) else {
            continue;
        };
        if in_own_frames && Some(object) == own_object {
            continue;
        }
        in_own_frames = false;
        let symbol = (!symbol.is_null()).then(|| {
            // SAFETY: dladdr returns a NUL-terminated symbol name owned by the loader.
            unsafe { core::ffi::CStr::from_ptr(symbol) }.to_bytes()
        });
        if stop_at_boundary && symbol.is_some_and(is_ffi_boundary) {
            break;
        }
        if core::mem::take(&mut skip_caller) || symbol.is_some_and(is_excluded_frame) {
            continue;
        }
        let object_name = if object.is_null() {
            "<unknown>".into()
        } else {
            // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
            unsafe { core::ffi::CStr::from_ptr(object) }.to_string_lossy()
        };
        match symbol {
            Some(symbol) => {
                named += 1;
                text.extend_from_slice(format!("  File \"{object_name}\", line 0, in ").as_bytes());
                text.extend_from_slice(symbol);
                text.push(b'\n');
            }
            None if named == 0 => unnamed.push(format!(
                "  File \"{object_name}\", line 0, in 0x{:016x}\n",
                address as usize
            )),
            None => {}
        }
    }
    if named == 0 {
        text.extend(unnamed.iter().flat_map(|line| line.bytes()));
    }
    text
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn native_backtrace(first_line: Option<&[u8]>, _stop_at_boundary: bool) -> Vec<u8> {
    first_line.map(<[u8]>::to_vec).unwrap_or_default()
}

/// The object file and nearest dynamic symbol of a code address.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn object_of(address: *const core::ffi::c_void) -> Option<(*const c_char, *const c_char)> {
    // SAFETY: an all-zero Dl_info is a valid out value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads loader tables.
    (unsafe { libc::dladdr(address, &mut info) } != 0).then_some((info.dli_fname, info.dli_sname))
}

fn create_error(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    cause: TVMFFIObjectHandle,
    extra: TVMFFIObjectHandle,
    out: *mut TVMFFIObjectHandle,
) -> Result<()> {
    let out = out_ptr(out, "out")?;
    // NULL reads as empty; a size no allocation can have is refused (see `arg_bytes`).
    let read = |bytes: *const TVMFFIByteArray, name: &str| -> Result<&[u8]> {
        if bytes.is_null() {
            Ok(&[])
        } else {
            arg_bytes(bytes, name)
        }
    };
    let borrowed = |handle: TVMFFIObjectHandle| {
        // SAFETY: the caller passes live objects or NULL; we take our own reference.
        core::ptr::NonNull::new(handle.cast::<TVMFFIObject>())
            .map(|p| unsafe { ObjectRef::from_raw_borrowed(p) })
    };
    let cause = borrowed(cause).map(|c| {
        // SAFETY: the cause chain is documented to hold an Error; the official runtime does
        // not check it either, and we only store the pointer.
        unsafe { <Error as crate::object::ObjectRefType>::from_object_ref_unchecked(c) }
    });
    let error = Error::with_parts(
        read(kind, "kind")?,
        read(message, "message")?,
        read(backtrace, "backtrace")?,
        cause,
        borrowed(extra),
    );
    // SAFETY: checked non-null out pointer; the caller receives the new reference.
    unsafe { *out = error.into_object_ref_raw().cast() };
    Ok(())
}

#[allow(non_snake_case)]
/// `TVMFFIErrorCreate`: a new error from verbatim parts; failures never touch the slot.
///
/// # Safety
/// The C contract of `TVMFFIErrorCreate` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIErrorCreate(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status_unraised(CApi, || {
        create_error(
            kind,
            message,
            backtrace,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            out,
        )
    })
}

#[allow(non_snake_case)]
/// `TVMFFIErrorCreateWithCauseAndExtraContext`.
///
/// # Safety
/// The C contract of `TVMFFIErrorCreateWithCauseAndExtraContext` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIErrorCreateWithCauseAndExtraContext(
    kind: *const TVMFFIByteArray,
    message: *const TVMFFIByteArray,
    backtrace: *const TVMFFIByteArray,
    cause_chain: TVMFFIObjectHandle,
    extra_context: TVMFFIObjectHandle,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status_unraised(CApi, || {
        create_error(kind, message, backtrace, cause_chain, extra_context, out)
    })
}

/// What `TVMFFIBacktrace` returns when it fails: an empty backtrace.
static EMPTY_BACKTRACE: EmptyBacktrace = EmptyBacktrace(TVMFFIByteArray {
    data: core::ptr::null(),
    size: 0,
});

struct EmptyBacktrace(TVMFFIByteArray);

// SAFETY: an immutable empty byte array (a NULL pointer that is never written through).
unsafe impl Sync for EmptyBacktrace {}

#[allow(non_snake_case)]
/// `TVMFFIBacktrace`: a thread-local buffer overwritten by the next call: the given frame
/// (`  File "<file>", line <n>, in <func>`), then the native frames beyond the caller's, up to
/// the FFI boundary unless `cross_ffi_boundary` (see `native_backtrace`). Should that fail, an
/// empty backtrace (and the error is raised).
///
/// # Safety
/// The C contract of `TVMFFIBacktrace` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIBacktrace(
    filename: *const c_char,
    lineno: c_int,
    func: *const c_char,
    cross_ffi_boundary: c_int,
) -> *const TVMFFIByteArray {
    boundary::value(CApi, &EMPTY_BACKTRACE.0, || {
        Ok(BACKTRACE.with(|cell| {
            let mut cell = cell.borrow_mut();
            let (text, view) = &mut *cell;
            let mut given = None;
            if !filename.is_null() && !func.is_null() {
                // SAFETY: the caller passes NUL-terminated strings.
                let (file, func) = unsafe {
                    (
                        core::ffi::CStr::from_ptr(filename),
                        core::ffi::CStr::from_ptr(func),
                    )
                };
                let mut line = b"  File \"".to_vec();
                line.extend_from_slice(file.to_bytes());
                line.extend_from_slice(format!("\", line {lineno}, in ").as_bytes());
                line.extend_from_slice(func.to_bytes());
                line.push(b'\n');
                given = Some(line);
            }
            *text = native_backtrace(given.as_deref(), cross_ffi_boundary == 0);
            *view = TVMFFIByteArray {
                data: text.as_ptr().cast(),
                size: text.len(),
            };
            view as *const TVMFFIByteArray
        }))
    })
}
