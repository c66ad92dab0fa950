//! Memref descriptors built from tensors, and tensors built from returned descriptors.
//!
//! A descriptor is written as 64-bit words into a caller-provided buffer: `[allocated, aligned,
//! offset, sizes..., strides...]` (rank `r` takes `3 + 2r` words), which is exactly the C layout
//! of `pactum_sys::mlir::MemRefDescriptor<r>`.

use core::ffi::c_void;

use pactum_sys::dlpack::{DLDeviceType, DLTensor};

use super::types::{Dim, Layout, MemRefType, ScalarType};
use pactum::dtype::{DataType, Device};
use pactum::error::{Error, ErrorKind, Result};
use pactum::strided;
use pactum::tensor::Tensor;

/// Words a ranked descriptor of `rank` takes.
pub const fn descriptor_words(rank: usize) -> usize {
    3 + 2 * rank
}

/// What to do with a tensor whose layout the memref type cannot describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutMismatch {
    /// Refuse the call with an error naming the argument.
    Reject,
    /// Pass a compact copy, and copy it back into the tensor after the call (so functions that
    /// write their argument still work).
    Copy,
}

/// Why a tensor does not fit a memref type; `None` from [`check_tensor`] means it fits as is.
#[derive(Debug)]
pub(crate) enum Fit {
    /// Pass it directly.
    Direct,
    /// Everything matches but the layout; a compact copy would fit.
    NeedsCompactCopy(Error),
}

/// The extents of a DLTensor (empty for rank 0).
pub(crate) fn shape_of(tensor: &DLTensor) -> &[i64] {
    // SAFETY: every DLTensor this crate handles comes from a `Tensor` or a checked DLPack
    // view, whose producer provides `ndim` extents.
    unsafe { strided::extents(tensor) }
}

/// The strides of a DLTensor in elements (compact when the producer gave none).
pub(crate) fn strides_of(tensor: &DLTensor, out: &mut [i64]) {
    // SAFETY: as in `shape_of`; `out` has room for `ndim` strides (checked by `strided`).
    unsafe { strided::strides_in_elements(tensor, out) }
}

fn describe_shape(shape: &[i64]) -> String {
    format!("{shape:?}")
}

fn error_at(index: usize, kind: ErrorKind<'_>, message: String) -> Error {
    Error::new(kind, format!("argument {index}: {message}"))
}

/// Checks everything about `tensor` that no copy can fix: device, dtype, rank, static extents,
/// data alignment. `ty_text` names the expected type in errors.
pub(crate) fn check_tensor_basics(
    index: usize,
    tensor: &DLTensor,
    element: ScalarType,
    rank: Option<usize>,
    static_shape: Option<&[Dim]>,
    ty_text: &dyn Fn() -> String,
) -> Result<()> {
    if tensor.device.device_type != DLDeviceType::CPU {
        return Err(error_at(
            index,
            ErrorKind::VALUE_ERROR,
            format!(
                "{} needs a CPU tensor (MLIR host code reads the memory directly), got one on {}",
                ty_text(),
                Device::from(tensor.device)
            ),
        ));
    }
    let expected = element.data_type().ok_or_else(|| {
        error_at(
            index,
            ErrorKind::TYPE_ERROR,
            format!("{}: element type {element} has no DLPack dtype", ty_text()),
        )
    })?;
    let dtype = DataType::from(tensor.dtype);
    if dtype != expected {
        return Err(error_at(
            index,
            ErrorKind::TYPE_ERROR,
            format!("{} needs dtype {expected}, got a {dtype} tensor", ty_text()),
        ));
    }
    let shape = shape_of(tensor);
    if tensor.ndim > 0 && tensor.shape.is_null() {
        return Err(error_at(
            index,
            ErrorKind::VALUE_ERROR,
            "the tensor has no shape array".to_owned(),
        ));
    }
    if let Some(rank) = rank
        && shape.len() != rank
    {
        return Err(error_at(
            index,
            ErrorKind::VALUE_ERROR,
            format!(
                "{} needs rank {rank}, got a rank-{} tensor of shape {}",
                ty_text(),
                shape.len(),
                describe_shape(shape)
            ),
        ));
    }
    if let Some(dims) = static_shape {
        for (axis, (dim, &extent)) in dims.iter().zip(shape).enumerate() {
            if let Dim::Static(expected) = dim
                && *expected != extent
            {
                return Err(error_at(
                    index,
                    ErrorKind::VALUE_ERROR,
                    format!(
                        "{} needs extent {expected} in dimension {axis}, got shape {}",
                        ty_text(),
                        describe_shape(shape)
                    ),
                ));
            }
        }
    }
    if shape.iter().any(|&d| d < 0) {
        return Err(error_at(
            index,
            ErrorKind::VALUE_ERROR,
            format!("negative extent in shape {}", describe_shape(shape)),
        ));
    }
    let size = expected.element_bytes().unwrap_or(1);
    let base = (tensor.data as usize).wrapping_add(tensor.byte_offset as usize);
    if !shape.contains(&0) && base % size != 0 {
        return Err(error_at(
            index,
            ErrorKind::VALUE_ERROR,
            format!(
                "{}: the data pointer (0x{base:x}) is not aligned to its {size}-byte elements",
                ty_text()
            ),
        ));
    }
    Ok(())
}

/// Whether `strides` are compact row-major for `shape` (size-1 dimensions may have any
/// stride: they are never stepped over; an empty tensor is compact).
fn is_compact(shape: &[i64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1i64;
    for (&dim, &stride) in shape.iter().zip(strides).rev() {
        if dim != 1 && stride != expected {
            return false;
        }
        expected = expected.wrapping_mul(dim);
    }
    true
}

/// Writes the descriptor for `tensor` as a memref of type `ty` into `words`
/// (`descriptor_words(rank)` long), after checking the layout. Basics must be checked first.
pub(crate) fn fill_ranked(
    index: usize,
    tensor: &DLTensor,
    ty: &MemRefType,
    words: &mut [u64],
) -> Result<Fit> {
    let rank = ty.rank();
    let shape = shape_of(tensor);
    let mut strides = [0i64; 16];
    let mut heap;
    let strides: &mut [i64] = if rank <= 16 {
        &mut strides[..rank]
    } else {
        heap = vec![0i64; rank];
        &mut heap
    };
    strides_of(tensor, strides);
    let element = ty.element.byte_size() as i64;
    let base = (tensor.data as usize).wrapping_add(tensor.byte_offset as usize);
    let empty = shape.contains(&0);
    let (aligned, offset) = match &ty.layout {
        Layout::Identity => {
            if !is_compact(shape, strides) {
                return Ok(Fit::NeedsCompactCopy(error_at(
                    index,
                    ErrorKind::VALUE_ERROR,
                    format!(
                        "{ty} has the identity layout, so MLIR reads it as compact row-major and \
                         ignores strides; this tensor (shape {}, strides {:?}) is not. Pass a \
                         contiguous tensor, declare a strided<[...], offset: ?> layout, or ask \
                         for a copy (LayoutMismatch::Copy)",
                        describe_shape(shape),
                        strides
                    ),
                )));
            }
            // Compact strides from the extents: what the lowered code assumes.
            let mut running = 1i64;
            for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
                *stride = running;
                running = running.wrapping_mul(dim);
            }
            (base, 0i64)
        }
        Layout::Strided {
            strides: declared,
            offset,
        } => {
            for (axis, (dim, stride)) in declared.iter().zip(strides.iter_mut()).enumerate() {
                if let Dim::Static(expected) = *dim {
                    if shape[axis] > 1 && !empty && *stride != expected {
                        return Ok(Fit::NeedsCompactCopy(error_at(
                            index,
                            ErrorKind::VALUE_ERROR,
                            format!(
                                "{ty} has stride {expected} in dimension {axis}, but the tensor \
                                 (shape {}) has stride {}",
                                describe_shape(shape),
                                *stride
                            ),
                        )));
                    }
                    *stride = expected;
                }
            }
            match offset {
                // The aligned pointer steps back so that `aligned + offset` is the first element.
                Dim::Static(k) => (
                    base.wrapping_sub((*k as usize).wrapping_mul(element as usize)),
                    *k,
                ),
                Dim::Dynamic => (base, 0),
            }
        }
    };
    words[0] = tensor.data as usize as u64;
    words[1] = aligned as u64;
    words[2] = offset as u64;
    for (axis, &extent) in shape.iter().enumerate() {
        words[3 + axis] = extent as u64;
        words[3 + rank + axis] = strides[axis] as u64;
    }
    Ok(Fit::Direct)
}

/// Writes a compact descriptor of `tensor`'s own rank (what an unranked memref argument points
/// to); the tensor must be compact, since the callee may cast it to an identity layout.
pub(crate) fn fill_unranked_target(
    index: usize,
    tensor: &DLTensor,
    element: ScalarType,
    words: &mut [u64],
) -> Result<Fit> {
    let shape = shape_of(tensor);
    let ty = MemRefType {
        shape: vec![Dim::Dynamic; shape.len()],
        element,
        layout: Layout::Identity,
    };
    match fill_ranked(index, tensor, &ty, words)? {
        Fit::Direct => Ok(Fit::Direct),
        Fit::NeedsCompactCopy(_) => Ok(Fit::NeedsCompactCopy(error_at(
            index,
            ErrorKind::VALUE_ERROR,
            format!(
                "memref<*x{element}> needs a contiguous tensor (the callee may cast it to an \
                 identity layout, which ignores strides); got shape {} with other strides. \
                 Pass a contiguous tensor or ask for a copy (LayoutMismatch::Copy)",
                describe_shape(shape)
            ),
        ))),
    }
}

/// A compact copy of a CPU tensor.
pub(crate) fn compact_copy(tensor: &DLTensor) -> Result<Tensor> {
    // SAFETY: as in `shape_of`; the caller checked the device.
    unsafe { Tensor::compact_copy_of(tensor) }
}

/// A returned ranked descriptor, read from memory MLIR wrote.
pub(crate) struct ReturnedMemRef {
    pub allocated: *mut c_void,
    pub aligned: *mut c_void,
    pub offset: i64,
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
}

impl ReturnedMemRef {
    /// Reads a descriptor of `rank` from `words`.
    pub(crate) fn read(words: &[u64], rank: usize) -> ReturnedMemRef {
        ReturnedMemRef {
            allocated: core::ptr::with_exposed_provenance_mut(words[0] as usize),
            aligned: core::ptr::with_exposed_provenance_mut(words[1] as usize),
            offset: words[2] as i64,
            sizes: words[3..3 + rank].iter().map(|&w| w as i64).collect(),
            strides: words[3 + rank..3 + 2 * rank]
                .iter()
                .map(|&w| w as i64)
                .collect(),
        }
    }

    /// Checks that the descriptor is plausible before a tensor is built on it.
    pub(crate) fn validate(&self, result: usize) -> Result<()> {
        let bad = |what: String| {
            Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!("result {result}: the function returned an invalid memref ({what})"),
            )
        };
        if let Some(size) = self.sizes.iter().find(|&&s| s < 0) {
            return Err(bad(format!("negative extent {size}")));
        }
        if self.offset < 0 {
            return Err(bad(format!("negative offset {}", self.offset)));
        }
        if self.aligned.is_null() && !self.sizes.contains(&0) && !self.sizes.is_empty() {
            return Err(bad("null data pointer".to_owned()));
        }
        Ok(())
    }

    /// The address of the first element.
    pub(crate) fn data(&self, element: usize) -> *mut c_void {
        self.aligned
            .cast::<u8>()
            .wrapping_add((self.offset as usize).wrapping_mul(element))
            .cast()
    }
}

/// A ranked memref descriptor of a tensor, checked against a memref type: what a
/// `_mlir_ciface_` function takes for that memref, for callers who make the call themselves
/// ([`MlirFunction`](super::MlirFunction) does all of this for you). The rank is dynamic; the
/// layout is `pactum_sys::mlir::MemRefDescriptor<rank>`'s. It borrows the tensor, so the memory
/// it points to outlives it.
///
/// ```
/// use pactum_mlir::{Descriptor, MlirType};
/// use pactum::Tensor;
///
/// let MlirType::MemRef(ty) = "memref<?x3xf32>".parse::<MlirType>()? else { unreachable!() };
/// let matrix = Tensor::from_slice(&[0.0f32; 6], &[2, 3])?;
/// let descriptor = Descriptor::new(&matrix, &ty)?;
/// assert_eq!((descriptor.sizes(), descriptor.strides()), (vec![2, 3], vec![3, 1]));
/// let fixed = descriptor.to_static::<2>().unwrap();
/// assert_eq!(fixed.aligned, matrix.data_ptr());
///
/// // A tensor of the wrong shape is refused with the reason.
/// let wrong = Tensor::from_slice(&[0.0f32; 4], &[2, 2])?;
/// assert!(Descriptor::new(&wrong, &ty).unwrap_err().to_string().contains("extent 3 in dimension 1"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Descriptor<'a> {
    words: Vec<u64>,
    rank: usize,
    _tensor: core::marker::PhantomData<&'a Tensor>,
}

impl core::fmt::Debug for Descriptor<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Descriptor")
            .field("aligned", &self.aligned())
            .field("offset", &self.offset())
            .field("sizes", &self.sizes())
            .field("strides", &self.strides())
            .finish()
    }
}

impl<'a> Descriptor<'a> {
    /// The descriptor of `tensor` as a memref of type `ty`, after every check a call makes
    /// (device, dtype, rank, static extents, alignment, layout).
    pub fn new(tensor: &'a Tensor, ty: &MemRefType) -> Result<Descriptor<'a>> {
        let text = || ty.to_string();
        check_tensor_basics(
            0,
            tensor.dl_tensor(),
            ty.element,
            Some(ty.rank()),
            Some(&ty.shape),
            &text,
        )?;
        let mut words = vec![0u64; descriptor_words(ty.rank())];
        match fill_ranked(0, tensor.dl_tensor(), ty, &mut words)? {
            Fit::Direct => Ok(Descriptor {
                words,
                rank: ty.rank(),
                _tensor: core::marker::PhantomData,
            }),
            Fit::NeedsCompactCopy(error) => Err(error),
        }
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The allocated pointer (the tensor's data pointer).
    pub fn allocated(&self) -> *mut c_void {
        core::ptr::with_exposed_provenance_mut(self.words[0] as usize)
    }

    /// The aligned pointer elements are addressed from.
    pub fn aligned(&self) -> *mut c_void {
        core::ptr::with_exposed_provenance_mut(self.words[1] as usize)
    }

    /// The offset of the first element, in elements.
    pub fn offset(&self) -> i64 {
        self.words[2] as i64
    }

    /// The extents.
    pub fn sizes(&self) -> Vec<i64> {
        self.words[3..3 + self.rank]
            .iter()
            .map(|&w| w as i64)
            .collect()
    }

    /// The strides, in elements.
    pub fn strides(&self) -> Vec<i64> {
        self.words[3 + self.rank..]
            .iter()
            .map(|&w| w as i64)
            .collect()
    }

    /// A pointer to the descriptor, to pass to a `_mlir_ciface_` function.
    pub fn as_mut_ptr(&mut self) -> *mut c_void {
        self.words.as_mut_ptr().cast()
    }

    /// The descriptor as the static-rank C struct, if the rank is `RANK`.
    pub fn to_static<const RANK: usize>(&self) -> Option<pactum_sys::mlir::MemRefDescriptor<RANK>> {
        if RANK != self.rank {
            return None;
        }
        let mut sizes = [0isize; RANK];
        let mut strides = [0isize; RANK];
        for axis in 0..RANK {
            sizes[axis] = self.words[3 + axis] as isize;
            strides[axis] = self.words[3 + RANK + axis] as isize;
        }
        Some(pactum_sys::mlir::MemRefDescriptor {
            allocated: self.allocated(),
            aligned: self.aligned(),
            offset: self.offset() as isize,
            sizes,
            strides,
        })
    }
}

/// A tensor over a ranked descriptor that MLIR-compiled code returned (or any descriptor of
/// `rank` with `element`s): shape and strides from the descriptor, data at `aligned + offset`.
/// `release` runs once when the last reference dies; for a fresh `memref.alloc` it should
/// `free` the allocated pointer (what [`MlirFunction`](super::MlirFunction) does).
///
/// # Safety
/// `descriptor` must point to a valid ranked descriptor of `rank`, whose extents and strides
/// address memory that stays valid until `release` runs.
pub unsafe fn tensor_from_descriptor(
    descriptor: *const c_void,
    rank: usize,
    element: ScalarType,
    release: impl FnOnce() + Send + 'static,
) -> Result<Tensor> {
    let dtype = element.data_type().ok_or_else(|| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!("element type {element} has no DLPack dtype"),
        )
    })?;
    // SAFETY: the caller vouches for a descriptor of `rank`.
    let words =
        unsafe { core::slice::from_raw_parts(descriptor.cast::<u64>(), descriptor_words(rank)) };
    let returned = ReturnedMemRef::read(words, rank);
    returned.validate(0)?;
    let data = returned.data(element.byte_size());
    // SAFETY: forwarded from the caller.
    unsafe {
        Tensor::from_raw_parts(
            data,
            dtype,
            Device::CPU,
            &returned.sizes,
            &returned.strides,
            release,
        )
    }
}
