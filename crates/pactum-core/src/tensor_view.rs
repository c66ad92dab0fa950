//! Borrowed tensor arguments: [`TensorView`] (read) and [`TensorViewMut`] (write), optionally
//! typed by element (`TensorView<'_, f32>`) and rank (`TensorView<'_, f32, 2>`).
//!
//! A view borrows the caller's `DLTensor` for the duration of a call. It accepts both forms a
//! caller may pass: a `DLTensor*` (type index 7) or a Tensor object (70). No reference is
//! taken and nothing is copied.

use core::fmt;
use core::marker::PhantomData;

use pactum_sys::dlpack::{DLDeviceType, DLTensor};
use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::any::{AnyView, FromAnyView, Payload, type_mismatch};
use crate::dtype::{DataType, Device};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{Element, compact_strides, is_contiguous_raw};

/// Rank of a view that accepts any number of dimensions.
pub const ANY_NDIM: i32 = -1;

/// The element-type expectation of a view: [`AnyDType`] or a concrete [`Element`] type.
pub trait ElementSpec: 'static {
    /// The required data type, if any.
    const DTYPE: Option<DataType>;
}

/// No element-type expectation.
pub enum AnyDType {}

impl ElementSpec for AnyDType {
    const DTYPE: Option<DataType> = None;
}

impl<T: Element> ElementSpec for T {
    const DTYPE: Option<DataType> = Some(T::DTYPE);
}

/// The `DLTensor` an argument carries, if it is a tensor (a `DLTensor*` or a Tensor object).
#[inline]
pub fn dl_tensor_of<'a>(view: &'a AnyView<'_>) -> Option<&'a DLTensor> {
    let raw = view.as_raw();
    match TVMFFITypeIndex(raw.type_index) {
        // SAFETY: a DLTensorPtr argument points at a DLTensor valid for the call.
        TVMFFITypeIndex::DL_TENSOR_PTR => unsafe { raw.ptr().cast::<DLTensor>().as_ref() },
        // SAFETY: a Tensor object has its DLTensor right after the 24-byte header and stays
        // alive for the call.
        TVMFFITypeIndex::TENSOR => unsafe { raw.obj().add(1).cast::<DLTensor>().as_ref() },
        _ => None,
    }
}

/// The name a view's expectation reads as in messages and signatures.
fn expectation<T: ElementSpec, const NDIM: i32>() -> std::string::String {
    match (T::DTYPE, NDIM) {
        (None, ANY_NDIM) => "ffi.Tensor".to_owned(),
        (Some(dtype), ANY_NDIM) => format!("ffi.Tensor[{dtype}]"),
        (None, ndim) => format!("ffi.Tensor[{ndim}d]"),
        (Some(dtype), ndim) => format!("ffi.Tensor[{dtype}, {ndim}d]"),
    }
}

#[inline]
fn check<T: ElementSpec, const NDIM: i32>(view: &AnyView<'_>) -> Result<*const DLTensor> {
    let Some(tensor) = dl_tensor_of(view) else {
        return Err(type_mismatch(&expectation::<T, NDIM>(), view.type_index()));
    };
    if let Some(expected) = T::DTYPE {
        let actual = DataType::from(tensor.dtype);
        if actual != expected {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!("expected a {expected} tensor, got {actual}"),
            ));
        }
    }
    if NDIM != ANY_NDIM && tensor.ndim != NDIM {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!(
                "expected a {NDIM}-d tensor, got {} dimension(s)",
                tensor.ndim
            ),
        ));
    }
    if tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape.is_null()) {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "malformed tensor: negative ndim or NULL shape",
        ));
    }
    Ok(tensor)
}

/// Shared accessors of both view kinds.
macro_rules! view_accessors {
    () => {
        /// The underlying DLPack description.
        pub fn dl_tensor(&self) -> &DLTensor {
            // SAFETY: checked at construction; the caller keeps it alive for 'a.
            unsafe { &*self.tensor }
        }

        /// Number of dimensions.
        pub fn ndim(&self) -> usize {
            self.dl_tensor().ndim as usize
        }

        /// Extents.
        pub fn shape(&self) -> &[i64] {
            let t = self.dl_tensor();
            if t.ndim == 0 {
                return &[];
            }
            // SAFETY: checked non-null at construction; `ndim` extents, valid for 'a.
            unsafe { core::slice::from_raw_parts(t.shape, t.ndim as usize) }
        }

        /// Strides in elements (compact ones when the producer gave none).
        pub fn strides(&self) -> Vec<i64> {
            let t = self.dl_tensor();
            if t.strides.is_null() {
                return compact_strides(self.shape());
            }
            // SAFETY: `ndim` strides, valid for 'a.
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

        /// Number of elements.
        pub fn numel(&self) -> usize {
            self.shape().iter().map(|&d| d.max(0) as usize).product()
        }

        /// Address of the first element (a device address off the CPU).
        pub fn data_ptr(&self) -> *mut core::ffi::c_void {
            let t = self.dl_tensor();
            t.data
                .cast::<u8>()
                .wrapping_add(t.byte_offset as usize)
                .cast()
        }

        /// Whether the layout is compact row-major.
        pub fn is_contiguous(&self) -> bool {
            // SAFETY: shape and strides hold `ndim` values, valid for 'a.
            unsafe { is_contiguous_raw(self.dl_tensor()) }
        }

        /// Names the argument in the errors this view reports (exported functions do this).
        #[doc(hidden)]
        pub fn __with_argument_name(mut self, name: &'static str) -> Self {
            self.argument = name;
            self
        }

        fn check_host_slice<E: Element>(&self) -> Result<usize> {
            self.check_host_slice_unnamed::<E>().map_err(|e| {
                if self.argument.is_empty() {
                    e
                } else {
                    Error::new(
                        ErrorKind::custom(&e.kind()),
                        format!("argument `{}`: {}", self.argument, e.message()),
                    )
                }
            })
        }

        fn check_host_slice_unnamed<E: Element>(&self) -> Result<usize> {
            if self.device().device_type != DLDeviceType::CPU {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("expected a CPU tensor, got one on {}", self.device()),
                ));
            }
            if self.dtype() != E::DTYPE {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("expected dtype {}, got {}", E::DTYPE, self.dtype()),
                ));
            }
            if !self.is_contiguous() {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    "expected a contiguous tensor",
                ));
            }
            let len = self.numel();
            if len > 0 && (self.data_ptr() as usize) % core::mem::align_of::<E>() != 0 {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    "tensor data is not aligned for its dtype",
                ));
            }
            Ok(len)
        }
    };
}

/// The extents of a tensor whose shape pointer was checked (non-NULL when `ndim > 0`).
fn shape_of(tensor: &DLTensor) -> &[i64] {
    if tensor.ndim <= 0 {
        return &[];
    }
    // SAFETY: checked non-NULL by callers; a DLPack producer provides `ndim` extents.
    unsafe { core::slice::from_raw_parts(tensor.shape, tensor.ndim as usize) }
}

/// The lowest and highest byte a tensor's elements touch.
fn byte_span(tensor: &DLTensor, strides: &[i64]) -> Option<(usize, usize)> {
    let shape = shape_of(tensor);
    if shape.iter().any(|&d| d <= 0) {
        return None;
    }
    let element = DataType::from(tensor.dtype).element_bytes()? as i128;
    let (mut low, mut high) = (0i128, 0i128);
    for (&dim, &stride) in shape.iter().zip(strides) {
        let reach = (dim as i128 - 1) * stride as i128 * element;
        if reach < 0 {
            low += reach
        } else {
            high += reach
        }
    }
    let base = tensor.data as i128 + tensor.byte_offset as i128;
    Some((
        (base + low).max(0) as usize,
        (base + high + element).max(0) as usize,
    ))
}

/// Variance and auto traits of the views: borrowed for `'a` (shared or exclusive), typed by
/// `T` without owning one.
type ReadMarker<'a, T> = (&'a DLTensor, fn() -> T);
type WriteMarker<'a, T> = (&'a mut DLTensor, fn() -> T);

/// A read-only tensor argument.
pub struct TensorView<'a, T: ElementSpec = AnyDType, const NDIM: i32 = { ANY_NDIM }> {
    tensor: *const DLTensor,
    argument: &'static str,
    _marker: PhantomData<ReadMarker<'a, T>>,
}

impl<'a, T: ElementSpec, const NDIM: i32> TensorView<'a, T, NDIM> {
    view_accessors!();

    /// Checks and wraps a tensor argument.
    #[inline]
    pub fn new(view: &'a AnyView<'_>) -> Result<Self> {
        Ok(TensorView {
            tensor: check::<T, NDIM>(view)?,
            argument: "",
            _marker: PhantomData,
        })
    }

    /// The expectation as text (`ffi.Tensor[float32, 2d]`).
    pub fn type_name() -> std::string::String {
        expectation::<T, NDIM>()
    }
}

impl<'a, E: Element, const NDIM: i32> TensorView<'a, E, NDIM> {
    /// The elements (CPU, contiguous).
    ///
    /// The slice borrows memory the caller owns; the call contract is that nobody writes to an
    /// argument while the call runs.
    pub fn as_slice(&self) -> Result<&'a [E]> {
        let len = self.check_host_slice::<E>()?;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: checked CPU, dtype, contiguity and alignment; `len` elements from the first.
        Ok(unsafe { core::slice::from_raw_parts(self.data_ptr().cast::<E>(), len) })
    }
}

impl<'a, T: ElementSpec, const NDIM: i32> FromAnyView<'a> for TensorView<'a, T, NDIM> {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        TensorView::new(view)
    }
}

impl<T: ElementSpec, const NDIM: i32> fmt::Debug for TensorView<'_, T, NDIM> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorView")
            .field("shape", &self.shape())
            .field("dtype", &self.dtype())
            .finish()
    }
}

/// A writable tensor argument: output parameters. A call refuses arguments whose memory
/// overlaps a mutable view's (`check_no_alias`), so its slice is the only access.
pub struct TensorViewMut<'a, T: ElementSpec = AnyDType, const NDIM: i32 = { ANY_NDIM }> {
    tensor: *const DLTensor,
    argument: &'static str,
    _marker: PhantomData<WriteMarker<'a, T>>,
}

impl<'a, T: ElementSpec, const NDIM: i32> TensorViewMut<'a, T, NDIM> {
    view_accessors!();

    /// Checks and wraps a tensor argument.
    #[inline]
    ///
    /// # Safety
    /// Nothing else may access the tensor's memory while the view is alive (exported
    /// functions ensure this with an overlap check across their arguments).
    pub unsafe fn new(view: &'a AnyView<'_>) -> Result<Self> {
        Ok(TensorViewMut {
            tensor: check::<T, NDIM>(view)?,
            argument: "",
            _marker: PhantomData,
        })
    }

    /// The expectation as text.
    pub fn type_name() -> std::string::String {
        expectation::<T, NDIM>()
    }
}

impl<'a, E: Element, const NDIM: i32> TensorViewMut<'a, E, NDIM> {
    /// The elements (CPU, contiguous).
    pub fn as_slice(&self) -> Result<&[E]> {
        let len = self.check_host_slice::<E>()?;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: checked CPU, dtype, contiguity and alignment.
        Ok(unsafe { core::slice::from_raw_parts(self.data_ptr().cast::<E>(), len) })
    }

    /// The elements, writable (CPU, contiguous).
    pub fn as_mut_slice(&mut self) -> Result<&mut [E]> {
        let len = self.check_host_slice::<E>()?;
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: checked as above; exclusive by the view's construction contract.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.data_ptr().cast::<E>(), len) })
    }
}

impl<T: ElementSpec, const NDIM: i32> fmt::Debug for TensorViewMut<'_, T, NDIM> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorViewMut")
            .field("shape", &self.shape())
            .field("dtype", &self.dtype())
            .finish()
    }
}

/// The memory of a tensor argument, for the overlap check of exported functions.
pub fn argument_span(view: &AnyView<'_>) -> Option<(usize, usize)> {
    let tensor = dl_tensor_of(view)?;
    if tensor.device.device_type != DLDeviceType::CPU
        || tensor.ndim < 0
        || (tensor.ndim > 0 && tensor.shape.is_null())
    {
        // Non-CPU memory cannot be sliced from Rust, so it cannot alias a Rust slice.
        return None;
    }
    let strides = if tensor.strides.is_null() {
        compact_strides(shape_of(tensor))
    } else {
        // SAFETY: `ndim` strides.
        unsafe { core::slice::from_raw_parts(tensor.strides, tensor.ndim as usize) }.to_vec()
    };
    byte_span(tensor, &strides)
}
