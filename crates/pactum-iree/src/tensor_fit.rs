//! The buffer-description oracle of IREE's raw function ABI: given the buffer type a
//! signature asks for and a concrete tensor, is the tensor usable as it is, usable after a
//! conversion, or not usable at all?
//!
//! Signatures leave layout out on purpose (see `iree-function-abi-raw-and-sip.md`, "Memory
//! layout"); compiled code takes dense row-major buffers. So a strided tensor is converted by
//! copying it into a contiguous one, always; a different element type is converted by a cast
//! only when the caller allows it, because a silent cast changes values (integers of the same
//! width are not different: IREE's runtime takes `uint16` data for an `i16` argument as it
//! is, and so does this oracle); a rank, extent or non-numeric mismatch is incompatible.
//!
//! ```
//! use pactum_iree::tensor_fit::{BufferType, Verdict, assess};
//! use pactum_iree::signature::{ScalarType, Type};
//! use pactum::{AnyView, Tensor, TensorView};
//!
//! let wanted = BufferType::from_type(&Type::ndarray(ScalarType::F32, &[None, Some(3)])).unwrap();
//! let tensor = Tensor::from_slice(&[1.0f64; 6], &[2, 3])?;
//! let any = AnyView::from(&tensor);
//! let view: TensorView = any.get()?;
//! match assess(&wanted, &view) {
//!     Verdict::Convert(conversion) => assert_eq!(conversion.to_string(), "cast float64 to float32"),
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), pactum::Error>(())
//! ```

use std::fmt;

use pactum_sys::dlpack::{DLDataTypeCode, DLDeviceType};

use crate::signature::{ScalarType, Signedness, Type};
use pactum::dtype::DataType;
use pactum::error::{Error, ErrorKind, Result};
use pactum::tensor::Tensor;
use pactum::tensor_view::TensorView;

/// The buffer a signature asks for: a numeric element type and what is known of the shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferType {
    /// The element type.
    pub element: ScalarType,
    /// `None` when the rank is unknown; otherwise the extents, `None` where dynamic.
    pub dims: Option<Vec<Option<u64>>>,
}

impl BufferType {
    /// The buffer type of an ndarray of a value type; `None` for anything else (other types,
    /// arrays of references).
    pub fn from_type(ty: &Type) -> Option<BufferType> {
        match ty.unnamed() {
            Type::NdArray(array) => Some(BufferType {
                element: array.scalar_element()?,
                dims: array.dims.clone(),
            }),
            _ => None,
        }
    }

    /// The DLPack data type of the elements (`i1` is DLPack `bool`).
    pub fn dtype(&self) -> DataType {
        scalar_dtype(self.element)
    }

    /// The extents, when every one is known.
    pub fn static_shape(&self) -> Option<Vec<i64>> {
        self.dims
            .as_ref()?
            .iter()
            .map(|dim| dim.and_then(|extent| i64::try_from(extent).ok()))
            .collect()
    }
}

/// The DLPack data type of a value type (`i1` is DLPack `bool`; signless integers are
/// signed, as NumPy and the IREE Python binding read them).
pub fn scalar_dtype(scalar: ScalarType) -> DataType {
    match scalar {
        ScalarType::Int { bits: 1, .. } => DataType::BOOL,
        ScalarType::Int {
            bits,
            signedness: Signedness::Unsigned,
        } => DataType::scalar(DLDataTypeCode::UINT, bits),
        ScalarType::Int { bits, .. } => DataType::scalar(DLDataTypeCode::INT, bits),
        ScalarType::F16 => DataType::F16,
        ScalarType::BF16 => DataType::BF16,
        ScalarType::F32 => DataType::F32,
        ScalarType::F64 => DataType::F64,
    }
}

/// The value type of a DLPack data type, for messages (`int32` → `i32`, `uint8` → `ui8`,
/// `bool` → `i1`); `None` for types IREE signatures cannot name.
pub fn dtype_scalar(dtype: DataType) -> Option<ScalarType> {
    if dtype.lanes != 1 {
        return None;
    }
    Some(match (dtype.code, dtype.bits) {
        (DLDataTypeCode::BOOL, 8) => ScalarType::int(1, Signedness::Signless),
        (DLDataTypeCode::INT, bits @ (8 | 16 | 32 | 64)) => {
            ScalarType::int(bits, Signedness::Signless)
        }
        (DLDataTypeCode::UINT, bits @ (8 | 16 | 32 | 64)) => {
            ScalarType::int(bits, Signedness::Unsigned)
        }
        (DLDataTypeCode::FLOAT, 16) => ScalarType::F16,
        (DLDataTypeCode::BFLOAT, 16) => ScalarType::BF16,
        (DLDataTypeCode::FLOAT, 32) => ScalarType::F32,
        (DLDataTypeCode::FLOAT, 64) => ScalarType::F64,
        _ => return None,
    })
}

/// How a concrete tensor reads as a signature type: `ndarray<f64, [2, 3]>`.
pub fn describe_tensor(view: &TensorView<'_>) -> String {
    let element = match dtype_scalar(view.dtype()) {
        Some(scalar) => scalar.to_string(),
        None => view.dtype().to_string(),
    };
    let dims: Vec<String> = view.shape().iter().map(i64::to_string).collect();
    format!("ndarray<{element}, [{}]>", dims.join(", "))
}

/// What it takes to make a tensor usable for a buffer type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The tensor can be passed as it is.
    AsIs,
    /// The tensor can be passed after this conversion (see [`convert`]).
    Convert(Conversion),
    /// The tensor cannot be used; the reason.
    Incompatible(String),
}

/// A conversion that makes a tensor usable: a cast, a copy to a contiguous layout, or both
/// (one copy does both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    /// Cast the elements from the first type to the second.
    pub cast: Option<(DataType, DataType)>,
    /// Copy the elements into a dense row-major layout.
    pub relayout: bool,
}

/// `cast float64 to float32`, `copy to a contiguous layout`, or both joined by `and`.
impl fmt::Display for Conversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((from, to)) = self.cast {
            write!(f, "cast {from} to {to}")?;
            if self.relayout {
                f.write_str(" and ")?;
            }
        }
        if self.relayout {
            f.write_str("copy to a contiguous layout")?;
        }
        Ok(())
    }
}

/// Whether `dtype` is one this module can read and write element by element.
fn is_numeric(dtype: DataType) -> bool {
    dtype_scalar(dtype).is_some()
}

/// Judges `tensor` against `wanted`: shape first (a mismatch cannot be converted away), then
/// element type, then layout. Conversions need host memory; a device tensor that needs one is
/// incompatible.
pub fn assess(wanted: &BufferType, tensor: &TensorView<'_>) -> Verdict {
    assess_parts(wanted.element, wanted.dims.as_deref(), tensor)
}

/// Whether [`assess`] would say [`Verdict::AsIs`]: the quick test for the common case, with
/// the element type already as a DLPack type. Nothing is allocated.
#[inline]
pub fn fits_as_is(dtype: DataType, dims: Option<&[Option<u64>]>, tensor: &TensorView<'_>) -> bool {
    let shape = tensor.shape();
    if let Some(dims) = dims {
        if dims.len() != shape.len() {
            return false;
        }
        for (expected, &actual) in dims.iter().zip(shape) {
            if let Some(expected) = *expected
                && u64::try_from(actual).ok() != Some(expected)
            {
                return false;
            }
        }
    }
    same_storage(tensor.dtype(), dtype) && tensor.is_contiguous()
}

/// Whether elements of `actual` can be passed where `wanted` is expected without a cast, by
/// IREE's rule for tensor arguments (`iree_hal_element_types_are_compatible`, which
/// `hal.buffer_view.assert` applies; `HalElementType::satisfies` is the HAL's side): equal types, or integers of the same width whatever their signedness (DLPack
/// `bool` is IREE's 8-bit boolean, an integer), since the program reads the same bytes.
#[inline]
pub fn same_storage(actual: DataType, wanted: DataType) -> bool {
    let integer = |dtype: DataType| {
        dtype.lanes == 1
            && matches!(
                dtype.code,
                DLDataTypeCode::INT | DLDataTypeCode::UINT | DLDataTypeCode::BOOL
            )
    };
    actual == wanted || (integer(actual) && integer(wanted) && actual.bits == wanted.bits)
}

/// [`assess`] on the parts of a buffer type, for callers that keep them apart.
pub fn assess_parts(
    element: ScalarType,
    dims: Option<&[Option<u64>]>,
    tensor: &TensorView<'_>,
) -> Verdict {
    let shape = tensor.shape();
    if let Some(dims) = dims {
        if dims.len() != shape.len() {
            return Verdict::Incompatible(format!(
                "rank {} does not match the expected rank {}",
                shape.len(),
                dims.len()
            ));
        }
        for (axis, (expected, &actual)) in dims.iter().zip(shape).enumerate() {
            if let Some(expected) = *expected
                && u64::try_from(actual).ok() != Some(expected)
            {
                return Verdict::Incompatible(format!(
                    "dimension {axis} is {actual}, expected {expected}"
                ));
            }
        }
    }
    let (from, to) = (tensor.dtype(), scalar_dtype(element));
    let cast = if same_storage(from, to) {
        None
    } else if is_numeric(from) && is_numeric(to) {
        Some((from, to))
    } else {
        return Verdict::Incompatible(format!("element type {from} cannot be converted to {to}"));
    };
    let conversion = Conversion {
        cast,
        relayout: !tensor.is_contiguous(),
    };
    if conversion.cast.is_none() && !conversion.relayout {
        return Verdict::AsIs;
    }
    if tensor.device().device_type != DLDeviceType::CPU {
        return Verdict::Incompatible(format!(
            "it needs a conversion ({conversion}), and pactum converts only host tensors; this \
             one is on {}",
            tensor.device()
        ));
    }
    Verdict::Convert(conversion)
}

/// A tensor made usable for a buffer type: the caller's own, or a converted copy.
#[derive(Debug)]
pub enum Prepared {
    /// Use the tensor as it is.
    AsIs,
    /// Use this converted copy.
    Converted(Tensor),
}

/// Assesses `tensor` and performs the conversion it needs. A cast is refused (an error that
/// says so) unless `allow_cast`; a relayout is always performed.
pub fn prepare(wanted: &BufferType, tensor: &TensorView<'_>, allow_cast: bool) -> Result<Prepared> {
    match assess(wanted, tensor) {
        Verdict::AsIs => Ok(Prepared::AsIs),
        Verdict::Convert(conversion) => {
            if let (Some((from, to)), false) = (conversion.cast, allow_cast) {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("element type {from} is not {to} (casting it needs allow_casts)"),
                ));
            }
            convert(tensor, &conversion).map(Prepared::Converted)
        }
        Verdict::Incompatible(reason) => Err(Error::new(ErrorKind::VALUE_ERROR, reason)),
    }
}

/// One element read as the widest type of its kind, for casting.
#[derive(Clone, Copy)]
enum Element {
    Int(i128),
    Float(f64),
}

/// Reads the element at `src` (`dtype` must satisfy [`is_numeric`]).
///
/// # Safety
/// `src` must point at a readable element of type `dtype`.
unsafe fn read_element(src: *const u8, dtype: DataType) -> Element {
    // Unaligned reads: a strided producer's elements need not be aligned.
    // SAFETY: every arm reads one element of `dtype` at `src`, readable per the caller.
    unsafe {
        match (dtype.code, dtype.bits) {
            (DLDataTypeCode::BOOL, _) => Element::Int(i128::from(src.read() != 0)),
            (DLDataTypeCode::INT, 8) => Element::Int(i128::from(src.cast::<i8>().read())),
            (DLDataTypeCode::INT, 16) => Element::Int(src.cast::<i16>().read_unaligned().into()),
            (DLDataTypeCode::INT, 32) => Element::Int(src.cast::<i32>().read_unaligned().into()),
            (DLDataTypeCode::INT, _) => Element::Int(src.cast::<i64>().read_unaligned().into()),
            (DLDataTypeCode::UINT, 8) => Element::Int(i128::from(src.read())),
            (DLDataTypeCode::UINT, 16) => Element::Int(src.cast::<u16>().read_unaligned().into()),
            (DLDataTypeCode::UINT, 32) => Element::Int(src.cast::<u32>().read_unaligned().into()),
            (DLDataTypeCode::UINT, _) => Element::Int(src.cast::<u64>().read_unaligned().into()),
            (DLDataTypeCode::BFLOAT, _) => {
                Element::Float(half::bf16::from_bits(src.cast::<u16>().read_unaligned()).into())
            }
            (_, 16) => {
                Element::Float(half::f16::from_bits(src.cast::<u16>().read_unaligned()).into())
            }
            (_, 32) => Element::Float(src.cast::<f32>().read_unaligned().into()),
            _ => Element::Float(src.cast::<f64>().read_unaligned()),
        }
    }
}

/// Writes `value` at `dst` as `dtype`, with NumPy's `astype` rules: integers wrap, floats
/// truncate toward zero into integers (saturating), anything non-zero is `true`.
///
/// # Safety
/// `dst` must point at a writable element of type `dtype`.
unsafe fn write_element(dst: *mut u8, dtype: DataType, value: Element) {
    let as_int = |value: Element| match value {
        Element::Int(i) => i,
        Element::Float(f) => f as i128,
    };
    let as_float = |value: Element| match value {
        Element::Int(i) => i as f64,
        Element::Float(f) => f,
    };
    // Unaligned writes cost nothing here and keep this function's contract simple.
    // SAFETY: every arm writes one element of `dtype` at `dst`, writable per the caller.
    unsafe {
        match (dtype.code, dtype.bits) {
            (DLDataTypeCode::BOOL, _) => {
                let truthy = match value {
                    Element::Int(i) => i != 0,
                    Element::Float(f) => f != 0.0,
                };
                dst.write(u8::from(truthy))
            }
            (DLDataTypeCode::INT | DLDataTypeCode::UINT, 8) => dst.write(as_int(value) as u8),
            (DLDataTypeCode::INT | DLDataTypeCode::UINT, 16) => {
                dst.cast::<u16>().write_unaligned(as_int(value) as u16)
            }
            (DLDataTypeCode::INT | DLDataTypeCode::UINT, 32) => {
                dst.cast::<u32>().write_unaligned(as_int(value) as u32)
            }
            (DLDataTypeCode::INT | DLDataTypeCode::UINT, _) => {
                dst.cast::<u64>().write_unaligned(as_int(value) as u64)
            }
            (DLDataTypeCode::BFLOAT, _) => dst
                .cast::<u16>()
                .write_unaligned(half::bf16::from_f64(as_float(value)).to_bits()),
            (_, 16) => dst
                .cast::<u16>()
                .write_unaligned(half::f16::from_f64(as_float(value)).to_bits()),
            (_, 32) => dst.cast::<f32>().write_unaligned(as_float(value) as f32),
            _ => dst.cast::<f64>().write_unaligned(as_float(value)),
        }
    }
}

/// Performs `conversion` on a host tensor: one pass over the source in row-major order,
/// writing a new dense tensor.
pub fn convert(tensor: &TensorView<'_>, conversion: &Conversion) -> Result<Tensor> {
    if tensor.device().device_type != DLDeviceType::CPU {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!(
                "cannot convert a tensor on {}: pactum converts only host tensors",
                tensor.device()
            ),
        ));
    }
    let from = tensor.dtype();
    let to = conversion.cast.map_or(from, |(_, to)| to);
    if conversion.cast.is_some() && !(is_numeric(from) && is_numeric(to)) {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!("cannot cast {from} to {to}"),
        ));
    }
    let (Some(src_size), Some(dst_size)) = (from.element_bytes(), to.element_bytes()) else {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!("cannot copy elements of {from}"),
        ));
    };
    let shape = tensor.shape().to_vec();
    let strides = tensor.strides();
    let out = Tensor::empty(&shape, to)?;
    let count = tensor.numel();
    if count == 0 {
        return Ok(out);
    }
    let src_base = tensor.data_ptr().cast::<u8>().cast_const();
    let dst_base = out.data_ptr().cast::<u8>();
    let mut index = vec![0i64; shape.len()];
    for linear in 0..count {
        // Element offset of `index` in the source, in elements (strides may be negative).
        let offset: i64 = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let src = src_base.wrapping_offset(offset as isize * src_size as isize);
        let dst = dst_base.wrapping_add(linear * dst_size);
        if conversion.cast.is_some() {
            // SAFETY: `index` stays inside the shape, so `src` is an element of the source
            // tensor (valid for the view's lifetime); `dst` is element `linear` of the fresh
            // dense output of `count` elements.
            unsafe { write_element(dst, to, read_element(src, from)) };
        } else {
            // SAFETY: as above, copying one element's bytes between distinct allocations.
            unsafe { core::ptr::copy_nonoverlapping(src, dst, src_size) };
        }
        // Advance the row-major multi-index.
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(out)
}
