//! [`Tensor`] (`ffi.Tensor`): a reference-counted DLPack tensor. The object body starts with a
//! `DLTensor` right after the header, as C++ code expects; what owns the memory (a DLPack
//! producer, a pactum allocation, or a source tensor for views) follows privately.

use core::alloc::Layout;
use core::ffi::c_void;
use core::fmt;

use pactum_sys::dlpack::{
    DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
    DLPackVersion, DLTensor,
};
use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::dtype::{DataType, Device};
use crate::error::{Error, ErrorKind, Result};
use crate::object::{ObjectBox, ObjectRef, new_object_box};

/// What keeps a tensor's memory alive.
enum Owner {
    /// A legacy DLPack producer; its deleter runs when the tensor dies.
    DLPack(*mut DLManagedTensor),
    /// A versioned DLPack producer.
    DLPackVersioned(*mut DLManagedTensorVersioned),
    /// A zeroed CPU buffer pactum allocated.
    Buffer { data: *mut u8, layout: Layout },
    /// The tensor whose memory this view shares.
    Source(#[allow(dead_code)] ObjectRef),
    /// Memory owned elsewhere (e.g. allocated by MLIR-compiled code); released by the closure.
    Foreign(Option<Box<dyn FnOnce() + Send>>),
}

/// The object body: the public DLTensor, then the owner and the storage shape/strides may
/// point into.
#[repr(C)]
pub(crate) struct TensorCell {
    dl_tensor: DLTensor,
    owner: Owner,
    shape: Box<[i64]>,
    strides: Box<[i64]>,
}

// SAFETY: the producer pointers are only used to call their deleter once, from whichever
// thread drops the last reference, as DLPack allows.
unsafe impl Send for TensorCell {}

impl Drop for TensorCell {
    fn drop(&mut self) {
        match self.owner {
            Owner::DLPack(managed) => {
                // SAFETY: the tensor owns `managed`, valid until its deleter runs.
                if let Some(deleter) = unsafe { (*managed).deleter } {
                    // SAFETY: the deleter runs exactly once, here, as DLPack requires.
                    unsafe { deleter(managed) }
                }
            }
            Owner::DLPackVersioned(managed) => {
                // SAFETY: the tensor owns `managed`, valid until its deleter runs.
                if let Some(deleter) = unsafe { (*managed).deleter } {
                    // SAFETY: the deleter runs exactly once, here, as DLPack requires.
                    unsafe { deleter(managed) }
                }
            }
            Owner::Buffer { data, layout } => {
                if layout.size() > 0 {
                    // SAFETY: allocated by Tensor::empty with this layout.
                    unsafe { std::alloc::dealloc(data, layout) }
                }
            }
            Owner::Source(_) => {}
            Owner::Foreign(ref mut release) => {
                if let Some(release) = release.take() {
                    release();
                }
            }
        }
    }
}

/// Compact row-major strides for `shape`.
pub(crate) fn compact_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    let mut expected = 1i64;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = expected;
        expected = expected.wrapping_mul(dim);
    }
    strides
}

/// The official contiguity rule: NULL strides, any zero-sized dimension, or strides that are
/// compact once size-1 dimensions are ignored.
///
/// # Safety
/// `tensor.shape` (and `strides`, when non-null) must hold `ndim` values.
pub(crate) unsafe fn is_contiguous_raw(tensor: &DLTensor) -> bool {
    if tensor.strides.is_null() || tensor.ndim <= 0 {
        return true;
    }
    let ndim = tensor.ndim as usize;
    // SAFETY: forwarded from the caller.
    let (shape, strides) = unsafe {
        (
            core::slice::from_raw_parts(tensor.shape, ndim),
            core::slice::from_raw_parts(tensor.strides, ndim),
        )
    };
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for k in (0..ndim).rev() {
        if shape[k] == 1 {
            continue;
        }
        if strides[k] != expected {
            return false;
        }
        expected = expected.wrapping_mul(shape[k]);
    }
    true
}

/// Devices whose `data` pointer is a plain address, so alignment can be checked on it.
fn is_direct_address_device(device_type: DLDeviceType) -> bool {
    device_type.0 <= DLDeviceType::CUDA_HOST.0
        || device_type == DLDeviceType::CUDA_MANAGED
        || device_type == DLDeviceType::ROCM
        || device_type == DLDeviceType::ROCM_HOST
}

/// The checks `TVMFFITensorFromDLPack` makes, with the official messages.
fn check_import(tensor: &DLTensor, require_alignment: i32, require_contiguous: bool) -> Result<()> {
    // Detectable corruption: the shape is read below and for the tensor's whole life, and a
    // slice of a NULL pointer (or a negative length) would be undefined behaviour.
    if tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape.is_null()) {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!(
                "FromDLPack: malformed tensor: ndim {} with a {} shape pointer",
                tensor.ndim,
                if tensor.shape.is_null() {
                    "NULL"
                } else {
                    "non-NULL"
                }
            ),
        ));
    }
    if require_alignment != 0 {
        let align = require_alignment as usize;
        let misaligned = if is_direct_address_device(tensor.device.device_type) {
            (tensor.data as usize).wrapping_add(tensor.byte_offset as usize) % align != 0
        } else {
            tensor.byte_offset as usize % align != 0
        };
        if misaligned {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!("FromDLPack: Data is not aligned to {require_alignment} bytes."),
            ));
        }
    }
    // SAFETY: a DLPack producer guarantees `ndim` entries in shape and strides.
    if require_contiguous && !unsafe { is_contiguous_raw(tensor) } {
        return Err(Error::new(
            ErrorKind::RUNTIME_ERROR,
            "FromDLPack: Tensor is not contiguous.",
        ));
    }
    Ok(())
}

/// A reference-counted tensor (`ffi.Tensor`).
#[repr(transparent)]
#[derive(Clone)]
pub struct Tensor(ObjectRef);

crate::any::builtin_object_ref!(Tensor, TVMFFITypeIndex::TENSOR, "ffi.Tensor");

impl Tensor {
    fn from_cell(cell: TensorCell) -> Tensor {
        let ptr = new_object_box(TVMFFITypeIndex::TENSOR.0, cell);
        // Shape and strides live in boxed slices that did not move with the cell, but a cell
        // built with pointers into them must point at the final copy: fix them up in place.
        // SAFETY: a fresh object we exclusively own.
        unsafe {
            let cell = &mut *(*ptr.as_ptr()).cell;
            if !cell.shape.is_empty() {
                cell.dl_tensor.shape = cell.shape.as_mut_ptr();
            }
            if !cell.strides.is_empty() {
                cell.dl_tensor.strides = cell.strides.as_mut_ptr();
            }
        }
        // SAFETY: a fresh object whose single strong reference we take.
        Tensor(unsafe { ObjectRef::from_raw_owned(ptr.cast()) })
    }

    /// Takes ownership of a legacy DLPack tensor (zero copy). On failure the caller keeps
    /// `managed` and must still call its deleter.
    ///
    /// # Safety
    /// `managed` must be a valid managed tensor whose `shape` (and `strides`, if non-null)
    /// arrays stay valid until its deleter runs, and nobody else may call its deleter.
    pub unsafe fn from_dlpack(
        managed: *mut DLManagedTensor,
        require_alignment: i32,
        require_contiguous: bool,
    ) -> Result<Tensor> {
        // SAFETY: forwarded from the caller.
        let tensor = unsafe { (*managed).dl_tensor };
        check_import(&tensor, require_alignment, require_contiguous)?;
        // SAFETY: forwarded from the caller.
        Ok(unsafe { Tensor::adopt(tensor, Owner::DLPack(managed)) })
    }

    /// Takes ownership of a versioned DLPack tensor (zero copy). On failure the caller keeps
    /// `managed`.
    ///
    /// # Safety
    /// As for [`Tensor::from_dlpack`].
    pub unsafe fn from_dlpack_versioned(
        managed: *mut DLManagedTensorVersioned,
        require_alignment: i32,
        require_contiguous: bool,
    ) -> Result<Tensor> {
        // SAFETY: forwarded from the caller.
        let (tensor, flags) = unsafe { ((*managed).dl_tensor, (*managed).flags) };
        check_import(&tensor, require_alignment, require_contiguous)?;
        if flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0 {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                "Subbyte type padded is not yet supported",
            ));
        }
        // SAFETY: forwarded from the caller.
        Ok(unsafe { Tensor::adopt(tensor, Owner::DLPackVersioned(managed)) })
    }

    /// Wraps a producer's tensor without checks (used by the environment allocator path).
    ///
    /// # Safety
    /// As for [`Tensor::from_dlpack`].
    #[doc(hidden)]
    pub unsafe fn from_dlpack_versioned_unchecked(
        managed: *mut DLManagedTensorVersioned,
    ) -> Tensor {
        // SAFETY: forwarded from the caller.
        unsafe { Tensor::adopt((*managed).dl_tensor, Owner::DLPackVersioned(managed)) }
    }

    /// Keeps the producer's shape (and strides) arrays; fills compact strides when absent.
    unsafe fn adopt(tensor: DLTensor, owner: Owner) -> Tensor {
        let strides: Box<[i64]> = if tensor.strides.is_null() && tensor.ndim > 0 {
            // SAFETY: the producer provides `ndim` extents.
            let shape = unsafe { core::slice::from_raw_parts(tensor.shape, tensor.ndim as usize) };
            compact_strides(shape).into_boxed_slice()
        } else {
            Box::default()
        };
        Tensor::from_cell(TensorCell {
            dl_tensor: tensor,
            owner,
            shape: Box::default(),
            strides,
        })
    }

    /// A new zero-filled CPU tensor of `shape` and `dtype`, 64-byte aligned, compact.
    pub fn empty(shape: &[i64], dtype: DataType) -> Result<Tensor> {
        let bad = || {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("cannot allocate a tensor of shape {shape:?} and dtype {dtype}"),
            )
        };
        if shape.iter().any(|&d| d < 0) {
            return Err(bad());
        }
        let numel = shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize))
            .ok_or_else(bad)?;
        let element = dtype.element_bytes().ok_or_else(bad)?;
        let bytes = numel.checked_mul(element).ok_or_else(bad)?;
        let layout = Layout::from_size_align(bytes, 64).map_err(|_| bad())?;
        let data = if bytes == 0 {
            core::ptr::without_provenance_mut::<u8>(64)
        } else {
            // SAFETY: positive size.
            let data = unsafe { std::alloc::alloc_zeroed(layout) };
            if data.is_null() {
                return Err(Error::new(
                    ErrorKind::MEMORY_ERROR,
                    format!("cannot allocate {bytes} bytes for a tensor"),
                ));
            }
            data
        };
        let shape_box: Box<[i64]> = shape.into();
        let strides: Box<[i64]> = compact_strides(shape).into_boxed_slice();
        let dl_tensor = DLTensor {
            data: data.cast(),
            device: Device::CPU.into(),
            ndim: shape.len() as i32,
            dtype: dtype.into(),
            shape: core::ptr::null_mut(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        };
        Ok(Tensor::from_cell(TensorCell {
            dl_tensor,
            owner: Owner::Buffer { data, layout },
            shape: shape_box,
            strides,
        }))
    }

    /// A tensor over memory that something else owns: `release` runs once, when the last
    /// reference dies (it typically frees the buffer, or drops what keeps it alive). Strides
    /// are in elements, as in DLPack.
    ///
    /// # Safety
    /// `data` must point to memory valid for every element `shape` and `strides` address, on
    /// `device`, until `release` runs; the memory may be written through the tensor.
    pub unsafe fn from_raw_parts(
        data: *mut c_void,
        dtype: DataType,
        device: Device,
        shape: &[i64],
        strides: &[i64],
        release: impl FnOnce() + Send + 'static,
    ) -> Result<Tensor> {
        if shape.len() != strides.len() || shape.iter().any(|&d| d < 0) {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("invalid tensor shape {shape:?} with strides {strides:?}"),
            ));
        }
        let dl_tensor = DLTensor {
            data,
            device: device.into(),
            ndim: shape.len() as i32,
            dtype: dtype.into(),
            shape: core::ptr::null_mut(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        };
        Ok(Tensor::from_cell(TensorCell {
            dl_tensor,
            owner: Owner::Foreign(Some(Box::new(release))),
            shape: shape.into(),
            strides: strides.into(),
        }))
    }

    /// A new CPU tensor holding a copy of `values` with `shape`.
    pub fn from_slice<T: Element>(values: &[T], shape: &[i64]) -> Result<Tensor> {
        let tensor = Tensor::empty(shape, T::DTYPE)?;
        if tensor.numel() as usize != values.len() {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("{} values do not fill shape {shape:?}", values.len()),
            ));
        }
        // SAFETY: a fresh compact buffer of exactly `values.len()` elements of T.
        unsafe {
            core::ptr::copy_nonoverlapping(
                values.as_ptr(),
                tensor.data_ptr().cast::<T>(),
                values.len(),
            )
        };
        Ok(tensor)
    }

    /// A view sharing `self`'s memory with the shape, strides, dtype, offset and data pointer
    /// of `prototype` (`TVMFFITensorCreateUnsafeView`).
    ///
    /// # Safety
    /// `prototype` must describe memory inside `self`'s allocation; its shape and strides
    /// arrays must hold `ndim` values (they are copied).
    pub unsafe fn unsafe_view(&self, prototype: &DLTensor) -> Result<Tensor> {
        if prototype.strides.is_null() {
            return Err(Error::new(
                ErrorKind::INTERNAL_ERROR,
                "Check not null: prototype.strides ",
            ));
        }
        let ndim = prototype.ndim.max(0) as usize;
        // SAFETY: forwarded from the caller.
        let (shape, strides) = unsafe {
            (
                core::slice::from_raw_parts(prototype.shape, ndim)
                    .to_vec()
                    .into_boxed_slice(),
                core::slice::from_raw_parts(prototype.strides, ndim)
                    .to_vec()
                    .into_boxed_slice(),
            )
        };
        let dl_tensor = DLTensor {
            shape: core::ptr::null_mut(),
            strides: core::ptr::null_mut(),
            ..*prototype
        };
        Ok(Tensor::from_cell(TensorCell {
            dl_tensor,
            owner: Owner::Source(self.0.clone()),
            shape,
            strides,
        }))
    }

    /// The DLTensor at the start of the object body.
    pub fn dl_tensor(&self) -> &DLTensor {
        // SAFETY: every Tensor object has a DLTensor right after the header.
        unsafe { &*self.0.as_raw().add(1).cast::<DLTensor>() }
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.dl_tensor().ndim.max(0) as usize
    }

    /// Extents.
    pub fn shape(&self) -> &[i64] {
        let t = self.dl_tensor();
        if t.ndim <= 0 || t.shape.is_null() {
            return &[];
        }
        // SAFETY: the tensor's producer keeps `ndim` extents alive while the tensor is.
        unsafe { core::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// Strides in elements (compact ones when the producer gave none).
    pub fn strides(&self) -> Vec<i64> {
        let t = self.dl_tensor();
        if t.ndim <= 0 {
            return Vec::new();
        }
        if t.strides.is_null() {
            return compact_strides(self.shape());
        }
        // SAFETY: as for `shape`.
        unsafe { core::slice::from_raw_parts(t.strides, t.ndim as usize) }.to_vec()
    }

    /// Element type.
    pub fn dtype(&self) -> DataType {
        DataType::from(self.dl_tensor().dtype)
    }

    /// Device.
    pub fn device(&self) -> Device {
        Device::from(self.dl_tensor().device)
    }

    /// Offset in bytes from the data pointer to the first element.
    pub fn byte_offset(&self) -> u64 {
        self.dl_tensor().byte_offset
    }

    /// Address of the first element (`data + byte_offset`); a device address off the CPU.
    pub fn data_ptr(&self) -> *mut c_void {
        let t = self.dl_tensor();
        t.data
            .cast::<u8>()
            .wrapping_add(t.byte_offset as usize)
            .cast()
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.shape().iter().product()
    }

    /// Whether the layout is compact row-major (the official rule).
    pub fn is_contiguous(&self) -> bool {
        // SAFETY: the tensor's shape/strides hold `ndim` values while it lives.
        unsafe { is_contiguous_raw(self.dl_tensor()) }
    }

    fn check_readable<T: Element>(&self) -> Result<()> {
        if self.dtype() != T::DTYPE {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!("expected dtype {}, got {}", T::DTYPE, self.dtype()),
            ));
        }
        if self.device().device_type != DLDeviceType::CPU {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("expected a CPU tensor, got one on {}", self.device()),
            ));
        }
        if !self.is_contiguous() {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "expected a contiguous tensor",
            ));
        }
        if self.numel() > 0 && (self.data_ptr() as usize) % core::mem::align_of::<T>() != 0 {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "tensor data is not aligned for its dtype",
            ));
        }
        Ok(())
    }

    /// A view of the same memory with another element type of the same size (a bit cast:
    /// e.g. `uint16` to `bfloat16`, for producers such as NumPy that lack the type).
    pub fn view_as(&self, dtype: DataType) -> Result<Tensor> {
        let current = self.dtype();
        if dtype.element_bytes() != current.element_bytes()
            || dtype.element_bytes().is_none()
            || dtype.bits % 8 != 0
            || current.bits % 8 != 0
        {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("cannot view a {current} tensor as {dtype}: the element sizes differ"),
            ));
        }
        let mut shape = self.shape().to_vec();
        let mut strides = self.strides();
        let prototype = DLTensor {
            dtype: dtype.into(),
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            ..*self.dl_tensor()
        };
        // SAFETY: the same memory, extents and strides; only the element type changes, to one
        // of the same size.
        unsafe { self.unsafe_view(&prototype) }
    }

    /// A compact row-major copy of a CPU tensor (any strides), e.g. to read a strided view
    /// with [`Tensor::to_vec`].
    pub fn to_contiguous(&self) -> Result<Tensor> {
        if self.device().device_type != DLDeviceType::CPU {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("expected a CPU tensor, got one on {}", self.device()),
            ));
        }
        // SAFETY: a Tensor's DLTensor is valid, and checked to be on the CPU above.
        unsafe { Tensor::compact_copy_of(self.dl_tensor()) }
    }

    /// A compact row-major copy of a CPU tensor described by a raw DLTensor (any strides).
    ///
    /// # Safety
    /// `tensor` must be a valid CPU tensor: the DLPack contract of [`crate::strided`].
    pub unsafe fn compact_copy_of(tensor: &DLTensor) -> Result<Tensor> {
        // SAFETY: forwarded from the caller.
        let shape = unsafe { crate::strided::extents(tensor) };
        let copy = Tensor::empty(shape, DataType::from(tensor.dtype))?;
        // SAFETY: same shape and dtype, a fresh destination; the source is the caller's.
        unsafe { crate::strided::copy_elements(tensor, copy.dl_tensor()) };
        Ok(copy)
    }

    /// Copies the elements out (CPU, contiguous, dtype `T`).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_readable::<T>()?;
        let len = self.numel().max(0) as usize;
        let mut out = Vec::<T>::with_capacity(len);
        // SAFETY: checked above: `len` aligned elements of T at data_ptr on the CPU.
        unsafe {
            core::ptr::copy_nonoverlapping(self.data_ptr().cast::<T>(), out.as_mut_ptr(), len);
            out.set_len(len);
        }
        Ok(out)
    }

    /// Overwrites the elements from `values` (CPU, contiguous, dtype `T`, same count).
    pub fn copy_from_slice<T: Element>(&self, values: &[T]) -> Result<()> {
        self.check_readable::<T>()?;
        if values.len() as i64 != self.numel() {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("expected {} values, got {}", self.numel(), values.len()),
            ));
        }
        // SAFETY: checked above; tensors are shared mutable memory, like their C++ and NumPy
        // counterparts, and this write goes through a raw pointer.
        unsafe {
            core::ptr::copy_nonoverlapping(
                values.as_ptr(),
                self.data_ptr().cast::<T>(),
                values.len(),
            )
        };
        Ok(())
    }

    /// The elements as a slice (CPU, contiguous, dtype `T`).
    ///
    /// # Safety
    /// Nobody may write to the tensor's memory while the slice is alive.
    pub unsafe fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_readable::<T>()?;
        // SAFETY: checked above; the caller excludes concurrent writes.
        Ok(unsafe {
            core::slice::from_raw_parts(self.data_ptr().cast::<T>(), self.numel().max(0) as usize)
        })
    }

    /// The elements as a mutable slice (CPU, contiguous, dtype `T`).
    ///
    /// # Safety
    /// Nobody else may read or write the tensor's memory while the slice is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice<T: Element>(&self) -> Result<&mut [T]> {
        self.check_readable::<T>()?;
        // SAFETY: checked above; the caller guarantees exclusive access.
        Ok(unsafe {
            core::slice::from_raw_parts_mut(
                self.data_ptr().cast::<T>(),
                self.numel().max(0) as usize,
            )
        })
    }

    /// Exports as a legacy DLPack tensor holding a reference to `self`; the consumer calls
    /// its deleter once.
    pub fn to_dlpack(&self) -> *mut DLManagedTensor {
        let managed = Box::new(DLManagedTensor {
            dl_tensor: *self.dl_tensor(),
            manager_ctx: self.0.clone().into_raw().cast(),
            deleter: Some(delete_exported),
        });
        Box::into_raw(managed)
    }

    /// Exports as a versioned DLPack tensor (version 1.3, flags 0) holding a reference to
    /// `self`; the consumer calls its deleter once.
    pub fn to_dlpack_versioned(&self) -> *mut DLManagedTensorVersioned {
        let managed = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: DLPACK_MINOR_VERSION,
            },
            manager_ctx: self.0.clone().into_raw().cast(),
            deleter: Some(delete_exported_versioned),
            flags: 0,
            dl_tensor: *self.dl_tensor(),
        });
        Box::into_raw(managed)
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

unsafe extern "C" fn delete_exported(managed: *mut DLManagedTensor) {
    crate::boundary::deleter(|| {
        if managed.is_null() {
            return;
        }
        // SAFETY: made by Box::new in to_dlpack; manager_ctx holds one strong reference.
        unsafe {
            let managed = Box::from_raw(managed);
            crate::object::header::dec_ref(managed.manager_ctx.cast());
        }
    })
}

unsafe extern "C" fn delete_exported_versioned(managed: *mut DLManagedTensorVersioned) {
    crate::boundary::deleter(|| {
        if managed.is_null() {
            return;
        }
        // SAFETY: made by Box::new in to_dlpack_versioned; manager_ctx holds one strong
        // reference.
        unsafe {
            let managed = Box::from_raw(managed);
            crate::object::header::dec_ref(managed.manager_ctx.cast());
        }
    })
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape())
            .field("dtype", &self.dtype())
            .field("device", &self.device())
            .finish()
    }
}

/// Rust element types with a DLPack data type.
///
/// # Safety
/// `DTYPE` must describe `Self` exactly (size, and every bit pattern of that size valid).
pub unsafe trait Element: Copy + 'static {
    /// The matching data type.
    const DTYPE: DataType;
}

macro_rules! element {
    ($($ty:ty => $dtype:expr),*) => {$(
        // SAFETY: plain numeric types of exactly that width; every bit pattern is valid.
        unsafe impl Element for $ty { const DTYPE: DataType = $dtype; }
    )*};
}
element!(f32 => DataType::F32, f64 => DataType::F64, i8 => DataType::I8, i16 => DataType::I16, i32 => DataType::I32,
         i64 => DataType::I64, u8 => DataType::U8, u16 => DataType::U16, u32 => DataType::U32, u64 => DataType::U64,
         half::f16 => DataType::F16, half::bf16 => DataType::BF16);

#[allow(dead_code)]
fn _assert_cell_layout() {
    const { assert!(core::mem::offset_of!(ObjectBox<TensorCell>, cell) == 24) };
}
