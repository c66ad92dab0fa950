//! DLPack import and export, and tensor views.

use core::ffi::c_int;

use pactum_sys::dlpack::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use pactum_sys::tvm_ffi::{TVMFFIObject, TVMFFIObjectHandle};

use super::args::{arg_ref, out_ptr};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::internal::boundary::{self, EntryKind::CApi};
use pactum_core::object::{ObjectRef, ObjectRefType};
use pactum_core::tensor::Tensor;

/// A borrowed tensor argument, checked to be a Tensor object.
fn tensor_arg(handle: TVMFFIObjectHandle) -> Result<Tensor> {
    let ptr = core::ptr::NonNull::new(handle.cast::<TVMFFIObject>())
        .ok_or_else(|| Error::new(ErrorKind::VALUE_ERROR, "argument `from` is NULL"))?;
    // SAFETY: the caller passes a live object; we take our own reference.
    let object = unsafe { ObjectRef::from_raw_borrowed(ptr) };
    object.downcast::<Tensor>().map_err(|o| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "expected ffi.Tensor, got {}",
                pactum_core::object::type_key_of(o.type_index())
            ),
        )
    })
}

fn write_tensor(out: *mut TVMFFIObjectHandle, tensor: Tensor) {
    // SAFETY: the caller checked `out`; the C caller receives the new reference.
    unsafe { *out = tensor.into_object_ref().into_raw().cast() };
}

#[allow(non_snake_case)]
/// `TVMFFITensorFromDLPack`: on success the tensor owns `from`; on failure the caller keeps it.
///
/// # Safety
/// The C contract of `TVMFFITensorFromDLPack` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITensorFromDLPack(
    from: *mut DLManagedTensor,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        let from = out_ptr(from, "from")?;
        // SAFETY: the caller hands over a valid managed tensor.
        let tensor =
            unsafe { Tensor::from_dlpack(from, require_alignment, require_contiguous != 0)? };
        write_tensor(out, tensor);
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFITensorFromDLPackVersioned`.
///
/// # Safety
/// The C contract of `TVMFFITensorFromDLPackVersioned` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITensorFromDLPackVersioned(
    from: *mut DLManagedTensorVersioned,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        let from = out_ptr(from, "from")?;
        // SAFETY: the caller hands over a valid managed tensor.
        let tensor = unsafe {
            Tensor::from_dlpack_versioned(from, require_alignment, require_contiguous != 0)?
        };
        write_tensor(out, tensor);
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFITensorToDLPack`: a new managed tensor holding a reference to the tensor.
///
/// # Safety
/// The C contract of `TVMFFITensorToDLPack` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITensorToDLPack(
    from: TVMFFIObjectHandle,
    out: *mut *mut DLManagedTensor,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        let tensor = tensor_arg(from)?;
        // SAFETY: checked out pointer.
        unsafe { *out = tensor.to_dlpack() };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFITensorToDLPackVersioned`: version 1.3, flags 0.
///
/// # Safety
/// The C contract of `TVMFFITensorToDLPackVersioned` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITensorToDLPackVersioned(
    from: TVMFFIObjectHandle,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        let tensor = tensor_arg(from)?;
        // SAFETY: checked out pointer.
        unsafe { *out = tensor.to_dlpack_versioned() };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFITensorCreateUnsafeView`: shares `source`'s memory with `prototype`'s metadata.
///
/// # Safety
/// The C contract of `TVMFFITensorCreateUnsafeView` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITensorCreateUnsafeView(
    source: TVMFFIObjectHandle,
    prototype: *const DLTensor,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        let source = tensor_arg(source)?;
        // SAFETY: checked non-null; the caller passes a valid prototype describing memory
        // inside `source` (the C contract of this function).
        let view = unsafe { source.unsafe_view(arg_ref(prototype, "prototype")?)? };
        write_tensor(out, view);
        Ok(())
    })
}
