//! The per-thread raised-error slot, error creation and backtraces.

use core::cell::{Cell, RefCell};
use core::ffi::{c_char, c_int};

use pactum_sys::tvm_ffi::{TVMFFIByteArray, TVMFFIObject, TVMFFIObjectHandle};

use super::args::{arg_bytes, c_str_bytes, out_ptr};
use pactum_core::error::{Error, Result};
use pactum_core::internal::boundary::{self, EntryKind::CApi};
use pactum_core::internal::header;
use pactum_core::object::ObjectRef;

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
    replace_raised(into_raw_object(error));
}

/// The error object's pointer, carrying the reference `error` held.
fn into_raw_object(error: Error) -> *mut TVMFFIObject {
    pactum_core::object::ObjectRefType::into_object_ref(error).into_raw()
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
/// caller outward, most recent first, one `  File "<unknown>", line 0, in <symbol>` line each,
/// stopping at the FFI boundary, as the official runtime writes frames it has no debug
/// information for. Frames are named with `dladdr` (no debug-info lookup, so this costs
/// microseconds).
pub(crate) fn current_backtrace() -> Vec<u8> {
    native_backtrace(None, true)
}

/// `TVM_TRACEBACK_LIMIT` (frames), 512 unless set to a valid count.
fn backtrace_limit() -> usize {
    std::env::var("TVM_TRACEBACK_LIMIT")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .and_then(|v| i32::try_from(v).ok())
        .map_or(512, |v| v as usize)
}

/// Where a backtrace stops at the FFI boundary: the C call entry and the Python interpreter,
/// whose frames the Python side reports itself.
fn is_boundary_frame(symbol: &str) -> bool {
    [
        "TVMFFIFunctionCall",
        "slot_tp_call",
        "object_is_not_callable",
        "_Py",
        "PyObject",
    ]
    .iter()
    .any(|prefix| symbol.starts_with(prefix))
}

/// Frames the official runtime leaves out: its function-call and error plumbing, the C
/// library's start-up and libffi trampolines.
fn is_excluded_frame(symbol: &str) -> bool {
    [
        "tvm::ffi::Function",
        "tvm::ffi::detail::",
        "TVMFFIBacktrace",
        "TVMFFIErrorSetRaisedFromCStr",
        "__libc_",
        "ffi_call_",
    ]
    .iter()
    .any(|prefix| symbol.starts_with(prefix))
}

/// A C++ symbol demangled with the process's `__cxa_demangle`, when one is loaded (the
/// official runtime prints demangled names); otherwise as it is.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn demangled(symbol: &core::ffi::CStr) -> std::string::String {
    type Demangle = unsafe extern "C" fn(
        *const c_char,
        *mut c_char,
        *mut libc::size_t,
        *mut c_int,
    ) -> *mut c_char;
    static DEMANGLE: std::sync::OnceLock<Option<Demangle>> = std::sync::OnceLock::new();
    let demangle = *DEMANGLE.get_or_init(|| {
        // SAFETY: dlsym only reads loader tables; the name is NUL-terminated.
        let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__cxa_demangle".as_ptr()) };
        // SAFETY: the Itanium C++ ABI fixes `__cxa_demangle`'s signature.
        (!address.is_null())
            .then(|| unsafe { core::mem::transmute::<*mut core::ffi::c_void, Demangle>(address) })
    });
    let raw = symbol.to_string_lossy().into_owned();
    let Some(demangle) = demangle.filter(|_| raw.starts_with("_Z")) else {
        return raw;
    };
    let mut status: c_int = -1;
    // SAFETY: a NUL-terminated name; with a NULL buffer the demangler mallocs the result.
    let result = unsafe {
        demangle(
            symbol.as_ptr(),
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            &mut status,
        )
    };
    if result.is_null() {
        return raw;
    }
    // SAFETY: on success the result is a NUL-terminated string we own.
    let text = unsafe { core::ffi::CStr::from_ptr(result) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated with malloc by the demangler.
    unsafe { libc::free(result.cast()) };
    if status == 0 { text } else { raw }
}

/// Frames of the calling thread after an optional given frame line, with the official
/// filtering: pactum's own leading frames (and, after a given line, the caller that line
/// describes) skipped, plumbing frames and unnamed addresses left out, and the walk stopped
/// at the FFI boundary unless `stop_at_boundary` is false.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn native_backtrace(first_line: Option<&[u8]>, stop_at_boundary: bool) -> Vec<u8> {
    const MAX_FRAMES: usize = 512;
    let mut frames = vec![core::ptr::null_mut::<core::ffi::c_void>(); MAX_FRAMES];
    // SAFETY: glibc's backtrace writes at most MAX_FRAMES addresses into the buffer.
    let count =
        unsafe { libc::backtrace(frames.as_mut_ptr(), MAX_FRAMES as c_int) }.max(0) as usize;
    let own_object =
        object_of(native_backtrace as *const core::ffi::c_void).map(|(object, _)| object);
    let limit = backtrace_limit();
    let mut text = first_line.map(<[u8]>::to_vec).unwrap_or_default();
    let mut lines = usize::from(first_line.is_some());
    // The caller of TVMFFIBacktrace is the frame the given line already names.
    let mut skip = usize::from(first_line.is_some());
    for &address in &frames[..count] {
        let Some((object, symbol)) = object_of(address.cast_const()) else {
            continue;
        };
        if lines >= limit {
            break;
        }
        let symbol_name = if symbol.is_null() {
            None
        } else {
            Some(demangled_cached(symbol))
        };
        if stop_at_boundary && symbol_name.as_deref().is_some_and(is_boundary_frame) {
            break;
        }
        // pactum's own frames are its plumbing (the official runtime's are excluded by name).
        if Some(object) == own_object {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let line = match symbol_name {
            Some(symbol_name) if is_excluded_frame(&symbol_name) => continue,
            Some(symbol_name) => format!("  File \"<unknown>\", line 0, in {symbol_name}\n"),
            // The official runtime names a program's static functions from its symbol table,
            // which dladdr cannot see; the program and offset stand in. Unnamed frames in
            // shared libraries are left out, as the official runtime leaves them.
            None if is_main_program(object) => {
                // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
                let path = unsafe { core::ffi::CStr::from_ptr(object) }.to_string_lossy();
                format!("  File \"{path}\", line 0, in {:#x}\n", address as usize)
            }
            None => continue,
        };
        text.extend_from_slice(line.as_bytes());
        lines += 1;
    }
    text
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn native_backtrace(first_line: Option<&[u8]>, _stop_at_boundary: bool) -> Vec<u8> {
    first_line.map(<[u8]>::to_vec).unwrap_or_default()
}

/// [`demangled`], kept per symbol-name address (the loader's strings outlive their objects'
/// frames, and a backtrace names the same few functions again and again).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn demangled_cached(symbol: *const c_char) -> std::string::String {
    thread_local! {
        static NAMES: core::cell::RefCell<std::collections::HashMap<usize, std::string::String>> =
            core::cell::RefCell::default();
    }
    let key = symbol as usize;
    if let Some(name) = NAMES.with(|names| names.borrow().get(&key).cloned()) {
        return name;
    }
    // SAFETY: dladdr returns a NUL-terminated symbol name owned by the loader.
    let name = demangled(unsafe { core::ffi::CStr::from_ptr(symbol) });
    NAMES.with(|names| names.borrow_mut().insert(key, name.clone()));
    name
}

/// Whether `object` (a dladdr file name) is the running program rather than a library.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn is_main_program(object: *const c_char) -> bool {
    static PROGRAM: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let Some(program) = PROGRAM.get_or_init(|| std::fs::canonicalize("/proc/self/exe").ok()) else {
        return false;
    };
    if object.is_null() {
        return false;
    }
    // The loader's name strings live as long as their objects: the answer is kept per string
    // address (resolving the path costs system calls).
    thread_local! {
        static KNOWN: core::cell::RefCell<std::collections::HashMap<usize, bool>> =
            core::cell::RefCell::default();
    }
    let key = object as usize;
    if let Some(known) = KNOWN.with(|known| known.borrow().get(&key).copied()) {
        return known;
    }
    // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
    let name = unsafe { core::ffi::CStr::from_ptr(object) }
        .to_string_lossy()
        .into_owned();
    let is_program = std::fs::canonicalize(name).is_ok_and(|path| &path == program);
    KNOWN.with(|known| known.borrow_mut().insert(key, is_program));
    is_program
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
        unsafe { <Error as pactum_core::object::ObjectRefType>::from_object_ref_unchecked(c) }
    });
    let error = Error::with_parts(
        read(kind, "kind")?,
        read(message, "message")?,
        read(backtrace, "backtrace")?,
        cause,
        borrowed(extra),
    );
    // SAFETY: checked non-null out pointer; the caller receives the new reference.
    unsafe { *out = into_raw_object(error).cast() };
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
/// (`  File "<file>", line <n>, in <func>`), then the native frames of the caller. Should
/// that fail, an empty backtrace (and the error is raised).
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
