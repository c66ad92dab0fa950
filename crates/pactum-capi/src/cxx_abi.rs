//! The C++ part of the library (`cxx/`, compiled by build.rs against the official headers):
//! the C++ symbols of the official `libtvm_ffi.so`, written over the C API. This module gives
//! it the runtime's hooks when the library is loaded.

use core::ffi::{c_char, c_int, c_void};

use pactum_core::internal::boundary;
use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIObject, TVMFFITypeIndex};

/// A context-symbol visitor of the C++ part: `(visitor, name, name_size, symbol)`.
type VisitContextSymbol = unsafe extern "C" fn(*mut c_void, *const c_char, usize, *mut c_void);

/// `PactumCxxHooks` of `cxx/cxx_abi_hooks.h`, field for field.
#[repr(C)]
struct CxxHooks {
    is_runtime_module: extern "C" fn(*const TVMFFIObject) -> c_int,
    visit_context_symbols: unsafe extern "C" fn(*mut c_void, VisitContextSymbol),
    release_runtime_module: unsafe extern "C" fn(*const TVMFFIObject, *mut c_void),
}

// SAFETY: these declarations match cxx/cxx_abi_hooks.h, compiled into this library by build.rs.
unsafe extern "C" {
    /// Stores a copy of `hooks` for the C++ part (hidden: not exported by the library).
    fn pactum_cxx_abi_install_hooks(hooks: *const CxxHooks);
    /// A new module object of the runtime's, a C++ `ModuleObj` of kind `kind` (`kind_size`
    /// bytes) holding `state`; a new reference to its handle, or NULL when memory ran out.
    fn pactum_cxx_new_runtime_module(
        kind: *const c_char,
        kind_size: usize,
        state: *mut c_void,
    ) -> *mut TVMFFIObject;
    /// A new reference to the C++ function that runs `ModuleObj`'s member functions on modules
    /// made by C++ code (`cxx/cxx_abi_hooks.h`).
    fn pactum_cxx_module_operations() -> *mut TVMFFIObject;
    /// `ModuleObj::kind()` of a module (its handle) as a String in `*out`: 0; 1 for the
    /// runtime's own modules; -1 with the error raised.
    fn pactum_cxx_module_kind(module: *const TVMFFIObject, out: *mut TVMFFIAny) -> c_int;
    /// `ModuleObj::GetPropertyMask()` of a module (its handle) in `*out`, as above.
    fn pactum_cxx_module_property_mask(module: *const TVMFFIObject, out: *mut i64) -> c_int;
    /// `TVMFFIEnvModLookupFromImports` for a C++ module's `ModuleObj*`: 0 and a borrowed
    /// function in `*out`, or -1 with the error raised.
    fn pactum_cxx_module_lookup_from_imports(
        ctx: *mut c_void,
        name: *const c_char,
        out: *mut *mut c_void,
    ) -> c_int;
}

/// Whether `ctx` can be a live C++ module's `ModuleObj*`, checked without dereferencing it:
/// its first 32 bytes are read through the kernel (which reports unmapped memory as EFAULT
/// instead of faulting), and must hold a vtable pointer into a loaded object, then an object
/// header of type `ffi.Module` with a strong reference and a deleter. A wild pointer is refused
/// with an error, as pactum refuses any other context it cannot vouch for; a dangling pointer
/// to a dead module's memory can still pass, as it does on the official library.
fn plausible_cxx_module(ctx: *mut c_void) -> bool {
    if ctx.is_null() || ctx as usize % core::mem::align_of::<usize>() != 0 {
        return false;
    }
    let mut words = [0u64; 4];
    let local = libc::iovec {
        iov_base: words.as_mut_ptr().cast(),
        iov_len: core::mem::size_of_val(&words),
    };
    let remote = libc::iovec {
        iov_base: ctx,
        iov_len: core::mem::size_of_val(&words),
    };
    // SAFETY: process_vm_readv copies through the kernel into our own buffer `words` (of the
    // length given), and fails with EFAULT when `ctx` is not readable; nothing is dereferenced.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if read != core::mem::size_of_val(&words) as isize {
        return false;
    }
    let [vptr, combined_ref_count, type_index_word, deleter] = words;
    let strong = combined_ref_count & 0xffff_ffff;
    let type_index = (type_index_word & 0xffff_ffff) as u32 as i32;
    if vptr == 0 || strong == 0 || deleter == 0 || type_index != TVMFFITypeIndex::MODULE.0 {
        return false;
    }
    // SAFETY: an all-zero Dl_info (null pointers) is a valid value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only looks the address up in the loader's tables.
    unsafe { libc::dladdr(vptr as *const c_void, &mut info) != 0 }
}

/// The runtime's lookup from a C++ module's imports, through the C++ part.
///
/// # Safety
/// `ctx` is the library context of a module: the `ModuleObj*` of a live C++ module (contexts
/// that cannot be one are refused with an error).
unsafe fn cxx_lookup_from_imports(
    ctx: *mut c_void,
    name: &str,
) -> pactum_core::error::Result<*mut TVMFFIObject> {
    if !plausible_cxx_module(ctx) {
        return Err(pactum_core::error::Error::new(
            pactum_core::error::ErrorKind::VALUE_ERROR,
            "library_ctx is not the context of a loaded module",
        ));
    }
    let name = std::ffi::CString::new(name).map_err(|_| {
        pactum_core::error::Error::new(
            pactum_core::error::ErrorKind::VALUE_ERROR,
            "function name contains a NUL byte",
        )
    })?;
    let mut out: *mut c_void = core::ptr::null_mut();
    // SAFETY: `ctx` per this function's contract, a NUL-terminated name and a valid out slot;
    // the C++ function catches every exception.
    let rc = unsafe { pactum_cxx_module_lookup_from_imports(ctx, name.as_ptr(), &mut out) };
    if rc != 0 {
        return Err(pactum_core::error::Error::take_raised_after_failure(
            "the C++ module lookup",
        ));
    }
    Ok(out.cast())
}

/// Gives the runtime the C++ part's module operations, so the `ffi.Module*` globals accept
/// modules made by C++ code.
fn install_module_operations() {
    // SAFETY: the C++ part returns a new reference to a function object (never NULL: it
    // throws, and so aborts, only when memory runs out).
    let raw = unsafe { pactum_cxx_module_operations() };
    let Some(raw) = core::ptr::NonNull::new(raw) else {
        return;
    };
    // SAFETY: we own the reference the C++ part returned.
    let object = unsafe { pactum_core::object::ObjectRef::from_raw_owned(raw) };
    match object.downcast::<pactum_core::function::Function>() {
        Ok(operations) => pactum_runtime::cxx_support::set_cxx_module_operations(operations),
        Err(_) => eprintln!("libtvm_ffi.so (pactum): the C++ module operations are no function"),
    }
}

/// Runs a hook's body inside the FFI boundary; a panic gives `fallback` (its payload is
/// forgotten: dropping it could panic again, with no caller to tell).
fn contained<R>(fallback: R, body: impl FnOnce() -> R) -> R {
    match boundary::enter(boundary::EntryKind::Callback, body) {
        Ok(value) => value,
        Err(payload) => {
            core::mem::forget(payload);
            fallback
        }
    }
}

extern "C" fn is_runtime_module(module: *const TVMFFIObject) -> c_int {
    contained(0, || {
        c_int::from(pactum_runtime::cxx_support::is_runtime_module(module))
    })
}

/// Calls `visit` for each registered context symbol, over a copy of the list (the visitor may
/// register more). `visit` is the C++ part's, which catches every exception of the callback it
/// runs (and rethrows it once this hook has returned), so nothing unwinds through here.
unsafe extern "C" fn visit_context_symbols(visitor: *mut c_void, visit: VisitContextSymbol) {
    let symbols = contained(Vec::new(), pactum_runtime::cxx_support::context_symbols);
    for (name, symbol) in &symbols {
        // SAFETY: the C++ part passes a visitor and a function that accepts it, with a name
        // of `name.len()` bytes that stays alive for the call.
        unsafe { visit(visitor, name.as_ptr().cast(), name.len(), *symbol) };
    }
}

/// Called by the destructor of the runtime's C++ module objects (`RuntimeModuleObj`).
///
/// # Safety
/// `module` is the handle of a dying module object made by `new_runtime_module`, and `state`
/// the state it was made with (the C++ destructor runs once).
unsafe extern "C" fn release_runtime_module(module: *const TVMFFIObject, state: *mut c_void) {
    contained((), || {
        // SAFETY: forwarded from this function's contract.
        unsafe { pactum_runtime::cxx_support::release_module_state(module, state) }
    })
}

/// The runtime's module allocator: the C++ part's `RuntimeModuleObj`.
///
/// # Safety
/// `state` is a module state of the runtime, which the object owns from here on.
unsafe fn new_runtime_module(
    kind: &str,
    state: *mut c_void,
) -> Option<core::ptr::NonNull<TVMFFIObject>> {
    // SAFETY: `kind` is `kind.len()` readable bytes (copied); `state` per this function's
    // contract; the C++ function catches every exception.
    let handle = unsafe { pactum_cxx_new_runtime_module(kind.as_ptr().cast(), kind.len(), state) };
    core::ptr::NonNull::new(handle)
}

static HOOKS: CxxHooks = CxxHooks {
    is_runtime_module,
    visit_context_symbols,
    release_runtime_module,
};

/// Installs the hooks when the dynamic loader loads the library (an `.init_array` entry),
/// before any C++ client can call into the C++ part.
extern "C" fn install_hooks_at_load() {
    boundary::initializer("libtvm_ffi.so installing its C++ hooks", || {
        // SAFETY: HOOKS matches PactumCxxHooks and lives for the process; the C++ side copies it.
        unsafe { pactum_cxx_abi_install_hooks(&HOOKS) };
        // The runtime may not have registered itself yet (the order of constructors is the
        // linker's); it must serve the type checks of the downcast below.
        pactum_runtime::register();
        install_module_operations();
        // SAFETY: cxx_lookup_from_imports is the official lookup for a C++ module's
        // `ModuleObj*` (cxx/cxx_abi.cc), returning a function the module's cache keeps alive.
        unsafe {
            pactum_runtime::cxx_support::set_cxx_lookup_from_imports(cxx_lookup_from_imports)
        };
        // SAFETY: new_runtime_module makes C++ ModuleObjs of the official layout (type index
        // ffi.Module) holding the state at handle+40 and releasing it when they die.
        unsafe { pactum_runtime::cxx_support::set_cxx_module_allocator(new_runtime_module) };
        // The two queries (cxx/cxx_abi.cc) call a ModuleObj's virtual function inside a C++
        // try block that raises what it throws.
        // SAFETY: they answer 1 for new_runtime_module's objects (known by their deleter).
        unsafe {
            pactum_runtime::cxx_support::set_cxx_module_queries(
                pactum_runtime::cxx_support::CxxModuleQueries {
                    kind: pactum_cxx_module_kind,
                    property_mask: pactum_cxx_module_property_mask,
                },
            )
        };
    });
}

#[used]
// SAFETY: `.init_array` holds pointers to `extern "C" fn()` constructors the dynamic loader
// calls once at load time; the entry is exactly such a function, which catches every panic.
#[unsafe(link_section = ".init_array")]
static INSTALL_HOOKS_AT_LOAD: extern "C" fn() = install_hooks_at_load;
