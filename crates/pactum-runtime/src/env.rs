//! The environment API: streams, the DLPack tensor allocator, signal checks, init-once
//! handles, and symbol registration for modules.

use core::cell::RefCell;
use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::collections::HashMap;
use std::sync::Mutex;

use pactum_sys::dlpack::{DLManagedTensorVersioned, DLPackManagedTensorAllocator, DLTensor};
use pactum_sys::tvm_ffi::{TVMFFIObjectHandle, TVMFFIStreamHandle};

use super::args::{c_str_bytes, out_ptr};
use pactum_core::error::{Error, ErrorKind};
use pactum_core::internal::boundary::{self, EntryKind::CApi, EntryKind::Callback};
use pactum_core::object::ObjectRefType;
use pactum_core::tensor::Tensor;

thread_local! {
    static STREAMS: RefCell<HashMap<(i32, i32), usize>> = RefCell::new(HashMap::new());
    static TLS_ALLOCATOR: RefCell<DLPackManagedTensorAllocator> = const { RefCell::new(None) };
}

static GLOBAL_ALLOCATOR: AtomicUsize = AtomicUsize::new(0);

#[allow(non_snake_case)]
/// `TVMFFIEnvSetStream`: a per-thread table; writes the previous stream to `opt_out_original_stream`.
///
/// # Safety
/// The C contract of `TVMFFIEnvSetStream` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvSetStream(
    device_type: i32,
    device_id: i32,
    stream: TVMFFIStreamHandle,
    opt_out_original_stream: *mut TVMFFIStreamHandle,
) -> c_int {
    boundary::status(CApi, || {
        if device_type < 0 || device_id < 0 {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("invalid device ({device_type}, {device_id})"),
            ));
        }
        let old = STREAMS.with(|s| {
            let mut s = s.borrow_mut();
            if stream.is_null() {
                s.remove(&(device_type, device_id))
            } else {
                s.insert((device_type, device_id), stream as usize)
            }
        });
        if !opt_out_original_stream.is_null() {
            // SAFETY: checked non-null out pointer.
            unsafe { *opt_out_original_stream = old.unwrap_or(0) as TVMFFIStreamHandle };
        }
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvGetStream`: NULL when unset on this thread.
///
/// # Safety
/// The C contract of `TVMFFIEnvGetStream` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvGetStream(
    device_type: i32,
    device_id: i32,
) -> TVMFFIStreamHandle {
    boundary::value(CApi, core::ptr::null_mut(), || {
        Ok(STREAMS.with(|s| {
            s.borrow()
                .get(&(device_type, device_id))
                .copied()
                .unwrap_or(0) as TVMFFIStreamHandle
        }))
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvSetDLPackManagedTensorAllocator`: sets this thread's allocator (and the
/// process-wide one when asked); reports the previous thread-local one.
///
/// # Safety
/// The C contract of `TVMFFIEnvSetDLPackManagedTensorAllocator` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvSetDLPackManagedTensorAllocator(
    allocator: DLPackManagedTensorAllocator,
    write_to_global_context: c_int,
    opt_out_original_allocator: *mut DLPackManagedTensorAllocator,
) -> c_int {
    boundary::status(CApi, || {
        let old = TLS_ALLOCATOR.with(|a| a.replace(allocator));
        if !opt_out_original_allocator.is_null() {
            // SAFETY: checked non-null out pointer.
            unsafe { *opt_out_original_allocator = old };
        }
        if write_to_global_context != 0 {
            GLOBAL_ALLOCATOR.store(allocator.map_or(0, |f| f as usize), Ordering::Release);
        }
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvGetDLPackManagedTensorAllocator`: this thread's allocator, else the global one.
///
/// # Safety
/// The C contract of `TVMFFIEnvGetDLPackManagedTensorAllocator` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvGetDLPackManagedTensorAllocator() -> DLPackManagedTensorAllocator
{
    boundary::value(CApi, None, || Ok(dlpack_allocator()))
}

/// This thread's DLPack allocator, else the global one.
fn dlpack_allocator() -> DLPackManagedTensorAllocator {
    if let Some(local) = TLS_ALLOCATOR.with(|a| *a.borrow()) {
        return Some(local);
    }
    let global = GLOBAL_ALLOCATOR.load(Ordering::Acquire);
    // SAFETY: the value was stored from a function pointer of this exact type (or is 0).
    (global != 0).then(|| unsafe {
        core::mem::transmute::<usize, unsafe extern "C" fn(_, _, _, _) -> i32>(global)
    })
}

/// The `SetError` callback handed to DLPack allocators.
unsafe extern "C" fn allocator_set_error(
    _ctx: *mut c_void,
    kind: *const c_char,
    message: *const c_char,
) {
    boundary::void(Callback, || {
        // SAFETY: the allocator passes NUL-terminated strings (NULL is reported, not read).
        unsafe { super::errors::raise_from_c_strs(kind, message) }
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvTensorAlloc`: allocates through the environment's DLPack allocator.
///
/// # Safety
/// The C contract of `TVMFFIEnvTensorAlloc` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvTensorAlloc(
    prototype: *mut DLTensor,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::value(CApi, -1, || {
        let Some(allocator) = dlpack_allocator() else {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                "TVMFFIEnvTensorAlloc: allocator is nullptr, likely because TVMFFIEnvSetDLPackManagedTensorAllocator has not been called.",
            ));
        };
        if out.is_null() || prototype.is_null() {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "argument `prototype` or `out` is NULL",
            ));
        }
        let mut managed: *mut DLManagedTensorVersioned = core::ptr::null_mut();
        // SAFETY: the allocator contract: prototype in, a managed tensor out, errors via
        // SetError.
        let rc = unsafe {
            allocator(
                prototype,
                &mut managed,
                core::ptr::null_mut(),
                Some(allocator_set_error),
            )
        };
        if rc != 0 {
            return Ok(rc);
        }
        if managed.is_null() {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                "Check failed: (dlpack_tensor != nullptr) is false: TVMFFIEnvTensorAlloc: failed to allocate a tensor from the allocator",
            ));
        }
        // SAFETY: the allocator handed us a valid managed tensor.
        let tensor = unsafe { Tensor::from_dlpack_versioned_unchecked(managed) };
        // SAFETY: checked out pointer.
        unsafe { *out = tensor.into_object_ref().into_raw().cast() };
        Ok(0)
    })
}

/// The environment C APIs a frontend may register (Python's signal check and GIL calls).
static CHECK_SIGNALS: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
static GIL_ENSURE: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());
static GIL_RELEASE: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

#[allow(non_snake_case)]
/// `TVMFFIEnvCheckSignals`: 0 unless a registered signal check reports a pending signal.
///
/// # Safety
/// The C contract of `TVMFFIEnvCheckSignals` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvCheckSignals() -> c_int {
    boundary::value(CApi, -1, || {
        let check = CHECK_SIGNALS.load(Ordering::Acquire);
        if check.is_null() {
            return Ok(0);
        }
        let (ensure, release) = (
            GIL_ENSURE.load(Ordering::Acquire),
            GIL_RELEASE.load(Ordering::Acquire),
        );
        if ensure.is_null() || release.is_null() {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                "PyErr_CheckSignals is registered without the GIL functions",
            ));
        }
        // SAFETY: the frontend registered these CPython functions with these signatures.
        Ok(unsafe {
            // The GIL state is passed back untouched, as a pointer-sized value.
            let ensure: unsafe extern "C" fn() -> *mut c_void = core::mem::transmute(ensure);
            let release: unsafe extern "C" fn(*mut c_void) = core::mem::transmute(release);
            let check: unsafe extern "C" fn() -> c_int = core::mem::transmute(check);
            let state = ensure();
            let failed = check() != 0;
            release(state);
            if failed { -1 } else { 0 }
        })
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvRegisterCAPI`: accepts `PyErr_CheckSignals`, `PyGILState_Ensure` and
/// `PyGILState_Release`.
///
/// # Safety
/// The C contract of `TVMFFIEnvRegisterCAPI` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvRegisterCAPI(name: *const c_char, symbol: *mut c_void) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { c_str_bytes(name, "name")? };
        let slot = match name {
            b"PyErr_CheckSignals" => &CHECK_SIGNALS,
            b"PyGILState_Ensure" => &GIL_ENSURE,
            b"PyGILState_Release" => &GIL_RELEASE,
            _ => {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("Unknown env API {}", String::from_utf8_lossy(name)),
                ));
            }
        };
        slot.store(symbol, Ordering::Release);
        Ok(())
    })
}

static INIT_ONCE: Mutex<()> = Mutex::new(());

#[allow(non_snake_case)]
/// `TVMFFIHandleInitOnce`: runs `init_func` once (under one process-wide lock) and publishes
/// its non-NULL result.
///
/// # Safety
/// The C contract of `TVMFFIHandleInitOnce` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIHandleInitOnce(
    handle_addr: *mut *mut c_void,
    init_func: Option<unsafe extern "C" fn(*mut *mut c_void) -> c_int>,
) -> c_int {
    boundary::value(CApi, -1, || {
        let handle_addr = out_ptr(handle_addr, "handle_addr")?;
        // SAFETY: the caller's handle slot, accessed atomically by every party.
        let slot = unsafe { AtomicPtr::from_ptr(handle_addr) };
        if !slot.load(Ordering::Acquire).is_null() {
            return Ok(0);
        }
        let _lock = INIT_ONCE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !slot.load(Ordering::Acquire).is_null() {
            return Ok(0);
        }
        let init = init_func
            .ok_or_else(|| Error::new(ErrorKind::VALUE_ERROR, "argument `init_func` is NULL"))?;
        let mut result: *mut c_void = core::ptr::null_mut();
        // SAFETY: the caller's initialiser, with a valid out pointer.
        let rc = unsafe { init(&mut result) };
        if rc != 0 {
            return Ok(rc);
        }
        if result.is_null() {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                "init_func must return a non-NULL handle",
            ));
        }
        slot.store(result, Ordering::Release);
        Ok(0)
    })
}

#[allow(non_snake_case)]
/// `TVMFFIHandleDeinitOnce`: swaps NULL in and runs `deinit_func` on the old handle.
///
/// # Safety
/// The C contract of `TVMFFIHandleDeinitOnce` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIHandleDeinitOnce(
    handle_addr: *mut *mut c_void,
    deinit_func: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
) -> c_int {
    boundary::value(CApi, -1, || {
        let handle_addr = out_ptr(handle_addr, "handle_addr")?;
        // SAFETY: the caller's handle slot, accessed atomically by every party.
        let old = unsafe { AtomicPtr::from_ptr(handle_addr) }
            .swap(core::ptr::null_mut(), Ordering::AcqRel);
        Ok(match (old.is_null(), deinit_func) {
            // SAFETY: the caller's finaliser for its own handle.
            (false, Some(deinit)) => unsafe { deinit(old) },
            _ => 0,
        })
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvModLookupFromImports`: a function from the module's imports or the global
/// registry, cached by the module (so the result is a borrowed reference).
///
/// # Safety
/// The C contract of `TVMFFIEnvModLookupFromImports` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvModLookupFromImports(
    library_ctx: TVMFFIObjectHandle,
    func_name: *const c_char,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { c_str_bytes(func_name, "func_name")? };
        let name = core::str::from_utf8(name)
            .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "function name is not UTF-8"))?;
        // SAFETY: the C contract of the function: `library_ctx` is a module's library context.
        let function = unsafe { super::modules::lookup_from_imports(library_ctx, name)? };
        // SAFETY: checked out pointer; the module's cache keeps the function alive.
        unsafe { *out = function.cast() };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvModRegisterContextSymbol`: libraries loaded later that define `name` get
/// `*name = symbol`.
///
/// # Safety
/// The C contract of `TVMFFIEnvModRegisterContextSymbol` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvModRegisterContextSymbol(
    name: *const c_char,
    symbol: *mut c_void,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { c_str_bytes(name, "name")? };
        super::modules::register_context_symbol(name, symbol);
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIEnvModRegisterSystemLibSymbol`: feeds `ffi.SystemLib`.
///
/// # Safety
/// The C contract of `TVMFFIEnvModRegisterSystemLibSymbol` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIEnvModRegisterSystemLibSymbol(
    name: *const c_char,
    symbol: *mut c_void,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { c_str_bytes(name, "name")? };
        super::modules::register_system_lib_symbol(name, symbol);
        Ok(())
    })
}
