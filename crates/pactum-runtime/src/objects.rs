//! Version, reference counts, opaque objects and the object allocator hook.

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicPtr, Ordering};

use pactum_sys::tvm_ffi::{
    TVM_FFI_VERSION_MAJOR, TVM_FFI_VERSION_MINOR, TVM_FFI_VERSION_PATCH, TVMFFICustomAllocator,
    TVMFFIObject, TVMFFIObjectAllocHeader, TVMFFIObjectHandle, TVMFFIOpaqueObjectCell,
    TVMFFITypeIndex, TVMFFIVersion,
};

use super::args::out_ptr;
use pactum_core::error::{Error, ErrorKind};
use pactum_core::internal::boundary::{self, EntryKind::CApi, EntryKind::Callback};
use pactum_core::internal::{header, new_object_box};

#[allow(non_snake_case)]
/// `TVMFFIGetVersion`.
///
/// # Safety
/// The C contract of `TVMFFIGetVersion` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIGetVersion(out_version: *mut TVMFFIVersion) {
    boundary::void(CApi, || {
        // SAFETY: the caller passes a valid out pointer or NULL.
        if let Some(out) = unsafe { out_version.as_mut() } {
            *out = TVMFFIVersion {
                major: TVM_FFI_VERSION_MAJOR,
                minor: TVM_FFI_VERSION_MINOR,
                patch: TVM_FFI_VERSION_PATCH,
            };
        }
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIObjectIncRef`.
///
/// # Safety
/// The C contract of `TVMFFIObjectIncRef` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
#[inline]
pub unsafe extern "C" fn TVMFFIObjectIncRef(obj: TVMFFIObjectHandle) -> c_int {
    boundary::status(CApi, || {
        let obj = out_ptr(obj.cast::<TVMFFIObject>(), "obj")?;
        // SAFETY: the caller passes a live object.
        unsafe { header::inc_ref(obj) };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIObjectDecRef`: NULL is a no-op.
///
/// # Safety
/// The C contract of `TVMFFIObjectDecRef` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
#[inline]
pub unsafe extern "C" fn TVMFFIObjectDecRef(obj: TVMFFIObjectHandle) -> c_int {
    boundary::status(CApi, || {
        if !obj.is_null() {
            // SAFETY: the caller gives up one strong reference to a live object. Deleters
            // contain their own panics.
            unsafe { header::dec_ref(obj.cast()) };
        }
        Ok(())
    })
}

/// An opaque (foreign) object: the handle, then who releases it.
#[repr(C)]
struct OpaqueCell {
    cell: TVMFFIOpaqueObjectCell,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

// SAFETY: the handle is only passed back to its own deleter, once, as the C API requires.
unsafe impl Send for OpaqueCell {}

impl Drop for OpaqueCell {
    fn drop(&mut self) {
        if let Some(deleter) = self.deleter {
            // SAFETY: the creator asked for `deleter(handle)` once, when the object dies.
            unsafe { deleter(self.cell.handle) }
        }
    }
}

#[allow(non_snake_case)]
/// `TVMFFIObjectCreateOpaque`: only `kTVMFFIOpaquePyObject` (74) is accepted.
///
/// # Safety
/// The C contract of `TVMFFIObjectCreateOpaque` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIObjectCreateOpaque(
    handle: *mut c_void,
    type_index: i32,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        if type_index != TVMFFITypeIndex::OPAQUE_PY_OBJECT.0 {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                "Only kTVMFFIOpaquePyObject is supported for now",
            ));
        }
        let object = new_object_box(
            type_index,
            OpaqueCell {
                cell: TVMFFIOpaqueObjectCell { handle },
                deleter,
            },
        );
        // SAFETY: checked out pointer; the caller receives the new reference.
        unsafe { *out = object.as_ptr().cast() };
        Ok(())
    })
}

/// The builtin object allocator: a 16-byte-or-larger prefix holding the prefix size and the
/// `TVMFFIObjectAllocHeader` right before the body.
unsafe extern "C" fn builtin_allocate(
    size: usize,
    alignment: usize,
    _type_index: i32,
    _context: *mut c_void,
) -> *mut c_void {
    boundary::value(Callback, core::ptr::null_mut(), || {
        let prefix = alignment.max(16).next_power_of_two();
        let Some(total) = size.checked_add(prefix) else {
            return Ok(core::ptr::null_mut());
        };
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: posix_memalign with a power-of-two alignment that is a multiple of the
        // pointer size.
        if unsafe { libc::posix_memalign(&mut raw, prefix, total) } != 0 {
            return Err(Error::new(
                ErrorKind::MEMORY_ERROR,
                format!("cannot allocate {size} bytes for an object"),
            ));
        }
        // SAFETY: the allocation holds `prefix` bytes before the body; both words fit in 16
        // bytes.
        Ok(unsafe {
            let body = raw.cast::<u8>().add(prefix);
            body.sub(16).cast::<usize>().write(prefix);
            body.sub(8)
                .cast::<TVMFFIObjectAllocHeader>()
                .write(TVMFFIObjectAllocHeader {
                    delete_space: Some(builtin_delete_space),
                });
            body.cast()
        })
    })
}

unsafe extern "C" fn builtin_delete_space(body: *mut c_void) {
    boundary::deleter(|| {
        if body.is_null() {
            return;
        }
        // SAFETY: `body` came from builtin_allocate, which recorded the prefix size 16 bytes
        // before it.
        unsafe {
            let prefix = body.cast::<u8>().sub(16).cast::<usize>().read();
            libc::free(body.cast::<u8>().sub(prefix).cast());
        }
    })
}

struct AllocatorCell(TVMFFICustomAllocator);
// SAFETY: the builtin allocator is immutable and its context is NULL.
unsafe impl Sync for AllocatorCell {}

static BUILTIN_ALLOCATOR: AllocatorCell = AllocatorCell(TVMFFICustomAllocator {
    allocate: Some(builtin_allocate),
    context: core::ptr::null_mut(),
});
static CURRENT_ALLOCATOR: AtomicPtr<TVMFFICustomAllocator> = AtomicPtr::new(core::ptr::null_mut());

#[allow(non_snake_case)]
/// `TVMFFIGetCustomAllocator`: never NULL.
///
/// # Safety
/// The C contract of `TVMFFIGetCustomAllocator` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIGetCustomAllocator() -> *mut TVMFFICustomAllocator {
    let builtin = (&BUILTIN_ALLOCATOR.0 as *const TVMFFICustomAllocator).cast_mut();
    boundary::value(CApi, builtin, || {
        let current = CURRENT_ALLOCATOR.load(Ordering::Acquire);
        Ok(if current.is_null() { builtin } else { current })
    })
}

#[allow(non_snake_case)]
/// `TVMFFISetCustomAllocator`: NULL restores the builtin. Like the official runtime, objects
/// the runtime itself makes do not use the hook.
///
/// # Safety
/// The C contract of `TVMFFISetCustomAllocator` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFISetCustomAllocator(allocator: *mut TVMFFICustomAllocator) -> c_int {
    boundary::status(CApi, || {
        CURRENT_ALLOCATOR.store(allocator, Ordering::Release);
        Ok(())
    })
}
