//! NumPy `.npy` files: [`read()`] and [`write()`] map them to and from CPU [`Tensor`]s.
//!
//! The format (versions 1.0, 2.0 and 3.0) is a magic string `\x93NUMPY`, a major and a minor
//! version byte, a little-endian header length (`u16` for 1.0, `u32` for 2.0 and 3.0), then a
//! header holding a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and a
//! final newline, then the raw elements.
//!
//! Supported element types, both ways: `bool` (`|b1`), `int8`..`int64` (`i1`..`i8`),
//! `uint8`..`uint64` (`u1`..`u8`), `float16`/`32`/`64` (`f2`, `f4`, `f8`) and
//! `complex64`/`128` (`c8`, `c16`, DLPack code `COMPLEX`). Files may be little- or big-endian
//! and in C or Fortran order; [`read()`] always returns a native-endian, C-contiguous tensor.
//! [`write()`] produces what `numpy.save` would: a little-endian descr, `fortran_order: False`,
//! and elements starting at a multiple of 64 bytes.
//!
//! The reader is meant for untrusted input: it never panics, bounds its allocations by the
//! size of the input, and reports every problem as a `ValueError` naming the part of the file
//! and the byte offset, e.g. `npy: header at byte 10: expected ':' after key 'descr'`.
//!
//! ```
//! use pactum::Tensor;
//! use pactum_npy as npy;
//!
//! let tensor = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let bytes = npy::write(&tensor)?;
//! assert_eq!(&bytes[..6], b"\x93NUMPY");
//! let back = npy::read(&bytes)?;
//! assert_eq!(back.shape(), &[2, 3]);
//! assert_eq!(back.to_vec::<f32>()?, tensor.to_vec::<f32>()?);
//! # Ok::<(), pactum::Error>(())
//! ```

use core::fmt::{self, Write as _};
use std::path::Path;

use pactum_sys::dlpack::{DLDataTypeCode, DLDeviceType};

use pactum::dtype::DataType;
use pactum::error::{Error, ErrorKind, Result};
use pactum::tensor::Tensor;
use pactum_text::{Cursor, ParseError};

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// The largest header [`read()`] accepts (and [`write()`] produces), in bytes.
const MAX_HEADER_LEN: usize = 1 << 20;
/// The format named in the header dict parser's [`ParseError`]s.
const HEADER_FORMAT: &str = ".npy header";
/// How deeply lists and tuples may nest inside the header.
const MAX_DEPTH: usize = 32;
/// Header values longer than this are shortened in error messages.
const MAX_QUOTED: usize = 64;
/// Shapes with more dimensions than this are shortened in error messages.
const MAX_SHOWN_DIMS: usize = 16;

/// Reads a `.npy` file held in memory into a new C-contiguous CPU tensor.
///
/// Accepts format versions 1.0, 2.0 and 3.0, little-, big- and native-endian descrs, and
/// Fortran-ordered data (reordered to C order). `bool` elements are normalised to 0 or 1.
/// Anything malformed, truncated, followed by extra bytes, or of an unsupported dtype is a
/// `ValueError` naming the byte offset of the problem.
pub fn read(bytes: &[u8]) -> Result<Tensor> {
    let header = parse_file(bytes, bytes.len())?;
    let data = &bytes[header.data_start..];
    let tensor = Tensor::empty(&header.shape, header.element.dtype)?;
    let nbytes = data.len();
    if nbytes == 0 {
        return Ok(tensor);
    }
    // SAFETY: `tensor` is a fresh compact CPU tensor from `Tensor::empty` whose buffer holds
    // exactly numel * itemsize = `nbytes` bytes (checked by `parse_file`); nothing else can
    // reach it yet, so this is the only reference to that memory.
    let out = unsafe { core::slice::from_raw_parts_mut(tensor.data_ptr().cast::<u8>(), nbytes) };
    let itemsize = header.element.itemsize;
    if header.fortran_order && header.shape.len() > 1 {
        // Element (i0, .., in) of a Fortran-ordered array sits at sum(i_k * prod(shape[..k])).
        let mut strides = Vec::with_capacity(header.shape.len());
        let mut step = itemsize as i128;
        for &dim in &header.shape {
            strides.push(step);
            step *= i128::from(dim);
        }
        let shape: Vec<usize> = header.shape.iter().map(|&d| d as usize).collect();
        gather(data, 0, &shape, &strides, itemsize, out);
    } else {
        out.copy_from_slice(data);
    }
    if header.element.swap {
        swap_bytes(out, header.element.swap_unit());
    }
    if header.element.dtype == DataType::BOOL {
        normalise_bools(out);
    }
    Ok(tensor)
}

/// Where the elements of a `.npy` array lie in its file, when they are already the bytes of a
/// C-contiguous tensor on this machine ([`in_place_layout`]): a reader may then use them in
/// place (map the file) instead of copying them out with [`read()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InPlaceLayout {
    /// The element type.
    pub dtype: DataType,
    /// The extents, C order.
    pub shape: Vec<i64>,
    /// The offset of the first element from the start of the array's bytes. NumPy pads the
    /// header so that this is a multiple of 64 (`numpy.lib.format.ARRAY_ALIGN`, "to support
    /// memory mapping"); files written by NumPy before 1.14 padded to 16.
    pub data_start: usize,
    /// The bytes the elements take (to the end of the array).
    pub data_len: usize,
}

/// The layout of the `.npy` array that `bytes` starts with (a whole array of `file_len` bytes,
/// or at least its preamble and header), checked as [`read()`] checks it, when its elements
/// are what [`read()`] would return byte for byte: C order (or at most one dimension), this
/// machine's byte order (or one-byte elements), and not `bool` (whose bytes [`read()`]
/// normalises to 0 or 1). `Ok(None)` when they must be converted, which [`read()`] does.
pub fn in_place_layout(bytes: &[u8], file_len: usize) -> Result<Option<InPlaceLayout>> {
    let header = parse_file(bytes, file_len)?;
    let reordered = header.fortran_order && header.shape.len() > 1;
    if reordered || header.element.swap || header.element.dtype == DataType::BOOL {
        return Ok(None);
    }
    Ok(Some(InPlaceLayout {
        dtype: header.element.dtype,
        shape: header.shape,
        data_start: header.data_start,
        data_len: file_len - header.data_start,
    }))
}

/// Reads a `.npy` file; I/O errors (a `RuntimeError`) and format errors name the path.
///
/// The header is checked against the file's size before the data is read, so a file whose
/// header disagrees with its length (a small shape in a huge file, a huge shape in a small
/// one) is refused after reading at most the header, whatever the file's size.
pub fn read_file(path: impl AsRef<Path>) -> Result<Tensor> {
    use std::io::Read as _;
    let path = path.as_ref();
    let io_error = |error: std::io::Error| {
        Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!("npy: cannot read '{}': {error}", path.display()),
        )
    };
    let in_path = |error: Error| {
        Error::new(
            ErrorKind::custom(&error.kind()),
            format!("{} (in '{}')", error.message(), path.display()),
        )
    };
    let mut file = std::fs::File::open(path).map_err(io_error)?;
    let len = usize::try_from(file.metadata().map_err(io_error)?.len()).unwrap_or(usize::MAX);
    // The magic string, version, header length (at most 4 bytes) and the header itself.
    let head_len = len.min(MAGIC.len() + 2 + 4 + MAX_HEADER_LEN);
    let mut bytes = vec![0; head_len];
    file.read_exact(&mut bytes).map_err(io_error)?;
    if len > head_len {
        // Only now is allocating for the rest of the file known to be what the header needs.
        parse_file(&bytes, len).map_err(in_path)?;
        file.read_to_end(&mut bytes).map_err(io_error)?;
    }
    read(&bytes).map_err(in_path)
}

/// Serialises a CPU tensor as a `.npy` file (format 1.0, or 2.0 when the header needs more
/// than 64 KiB), C order, little-endian, data starting at a multiple of 64 bytes.
///
/// Non-contiguous tensors are written in C order by walking their strides from
/// `data + byte_offset`. The types `ml_dtypes` adds to NumPy (bfloat16, the float8 types,
/// int4, ...) are written with their names as the descr (`'descr': 'float8_e4m3fn'`), which
/// `numpy.load` reads when `ml_dtypes` is imported. Tensors off the CPU, vector dtypes
/// (lanes != 1) and dtypes NumPy has no equivalent for (complex32, float6, ...) are refused
/// with a `ValueError`.
///
/// Like [`Tensor::to_vec`], this reads the tensor's memory directly: nobody may write to it
/// while `write` runs.
pub fn write(tensor: &Tensor) -> Result<Vec<u8>> {
    let dtype = tensor.dtype();
    let element = ElementType::from_dtype(dtype)?;
    let device = tensor.device();
    if device.device_type != DLDeviceType::CPU {
        return Err(write_error(format!(
            "only CPU tensors can be written, this one is on {device}; copy it to the CPU first"
        )));
    }
    let shape = tensor.shape();
    if let Some(&dim) = shape.iter().find(|&&d| d < 0) {
        return Err(write_error(format!(
            "the tensor has a negative dimension {dim} in shape {}",
            ShapeText(shape)
        )));
    }
    let itemsize = element.itemsize;
    let nbytes = data_bytes(shape, itemsize).ok_or_else(|| {
        write_error(format!(
            "shape {} with dtype {dtype} does not fit in memory",
            ShapeText(shape)
        ))
    })?;
    let mut out = header_bytes(&element.descr(), shape)?;
    let data_start = out.len();
    out.try_reserve_exact(nbytes).map_err(|_| {
        Error::new(
            ErrorKind::MEMORY_ERROR,
            format!("npy: cannot allocate {nbytes} bytes for the file"),
        )
    })?;
    out.resize(data_start + nbytes, 0);
    if nbytes > 0 {
        copy_elements(tensor, itemsize, &mut out[data_start..])?;
        let data = &mut out[data_start..];
        if cfg!(target_endian = "big") {
            swap_bytes(data, element.swap_unit());
        }
        if dtype == DataType::BOOL {
            normalise_bools(data);
        }
    }
    Ok(out)
}

/// Writes a tensor to a `.npy` file (see [`write()`]); I/O errors (a `RuntimeError`) name the
/// path.
pub fn write_file(path: impl AsRef<Path>, tensor: &Tensor) -> Result<()> {
    let path = path.as_ref();
    let bytes = write(tensor)?;
    std::fs::write(path, bytes).map_err(|error| {
        Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!("npy: cannot write '{}': {error}", path.display()),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Errors and message helpers.

/// A `ValueError` about the part of the file `section` at byte `offset`.
fn error_at(section: &str, offset: usize, message: impl fmt::Display) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("npy: {section} at byte {offset}: {message}"),
    )
}

/// A [`ParseError`] of the header dict parser (its offset counted from the header's first byte,
/// at `header_start` in the file) as the reader's `ValueError`: `npy: header at byte N: ...`,
/// the form every other part of the file reports in.
fn header_error(error: ParseError, header_start: usize) -> Error {
    let error = error.shifted(header_start);
    error_at("header", error.offset, error.message)
}

fn write_error(message: impl fmt::Display) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("npy: cannot write the tensor: {message}"),
    )
}

/// Bytes from the file shown the way Python would quote them, shortened when long.
struct Quoted<'a>(&'a [u8]);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Like Python's repr: single quotes unless the text holds one and no double quote.
        let quote = if self.0.contains(&b'\'') && !self.0.contains(&b'"') {
            b'"'
        } else {
            b'\''
        };
        f.write_char(char::from(quote))?;
        let shown = &self.0[..self.0.len().min(MAX_QUOTED)];
        for &byte in shown {
            match byte {
                _ if byte == quote => write!(f, "\\{}", char::from(quote))?,
                b'\\' => f.write_str("\\\\")?,
                0x20..=0x7e => f.write_char(char::from(byte))?,
                _ => write!(f, "\\x{byte:02x}")?,
            }
        }
        f.write_char(char::from(quote))?;
        if self.0.len() > MAX_QUOTED {
            write!(f, "... ({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

/// A shape written as a Python tuple (`()`, `(5,)`, `(2, 3)`), shortened when long.
struct ShapeText<'a>(&'a [i64]);

impl fmt::Display for ShapeText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('(')?;
        for (i, dim) in self.0.iter().take(MAX_SHOWN_DIMS).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{dim}")?;
        }
        if self.0.len() > MAX_SHOWN_DIMS {
            write!(f, ", ... ({} dimensions)", self.0.len())?;
        } else if self.0.len() == 1 {
            f.write_char(',')?;
        }
        f.write_char(')')
    }
}

/// Bytes needed for `shape` (non-negative extents) with `itemsize`-byte elements. `None`
/// when the element count, ignoring zero-sized dimensions, overflows `i64` (so that a tensor
/// of that shape can be described), or when the byte size overflows `i64` or `usize`.
fn data_bytes(shape: &[i64], itemsize: usize) -> Option<usize> {
    let mut nonzero: i64 = 1;
    let mut any_zero = false;
    for &dim in shape {
        if dim == 0 {
            any_zero = true;
        } else {
            nonzero = nonzero.checked_mul(dim)?;
        }
    }
    if any_zero {
        return Some(0);
    }
    usize::try_from(nonzero)
        .ok()?
        .checked_mul(itemsize)
        .filter(|&b| i64::try_from(b).is_ok())
}

// ---------------------------------------------------------------------------------------------
// Element types.

/// An element type NumPy and DLPack share.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ElementType {
    dtype: DataType,
    /// NumPy kind character: `b`, `i`, `u`, `f` or `c`.
    kind: u8,
    itemsize: usize,
    /// Whether the file's byte order differs from this machine's.
    swap: bool,
}

/// The NumPy kind of the element types `ml_dtypes` adds (its own marker: their descr is the
/// type's name, not a kind and a size).
const ML_DTYPES_KIND: u8 = b'm';

/// The element types `ml_dtypes` gives NumPy, by the names NumPy knows them by once
/// `ml_dtypes` is imported (`numpy.dtype("float8_e4m3fn")`), which are also DLPack's names.
/// `numpy.save` writes them as raw bytes (`<V1`), losing the type; pactum writes the name as
/// the descr, which `numpy.load` reads back as the type when `ml_dtypes` is imported. Each
/// element takes whole bytes: the sub-byte integers hold their bits in the low bits of a
/// byte, as `ml_dtypes` stores them.
const ML_DTYPES: [DataType; 14] = [
    DataType::BF16,
    DataType::scalar(DLDataTypeCode::FLOAT8_E3M4, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E4M3, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E4M3B11FNUZ, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E4M3FN, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E4M3FNUZ, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E5M2, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E5M2FNUZ, 8),
    DataType::scalar(DLDataTypeCode::FLOAT8_E8M0FNU, 8),
    DataType::scalar(DLDataTypeCode::FLOAT4_E2M1FN, 4),
    DataType::scalar(DLDataTypeCode::INT, 2),
    DataType::scalar(DLDataTypeCode::INT, 4),
    DataType::scalar(DLDataTypeCode::UINT, 2),
    DataType::scalar(DLDataTypeCode::UINT, 4),
];

impl ElementType {
    /// An `ml_dtypes` type ([`ML_DTYPES`]).
    fn ml_dtype(dtype: DataType) -> ElementType {
        ElementType {
            dtype,
            kind: ML_DTYPES_KIND,
            itemsize: dtype.element_bytes().unwrap_or(1),
            swap: false,
        }
    }

    /// Parses a descr string (`<f4`, `|b1`, `>c16`, `i8`, or an `ml_dtypes` name such as
    /// `float8_e4m3fn`); `None` when unsupported.
    fn from_descr(descr: &[u8]) -> Option<ElementType> {
        if let Some(&dtype) = ML_DTYPES
            .iter()
            .find(|dtype| dtype.to_string().as_bytes() == descr)
        {
            return Some(ElementType::ml_dtype(dtype));
        }
        let (order, rest) = match descr.split_first() {
            Some((&order @ (b'<' | b'>' | b'|' | b'='), rest)) => (order, rest),
            _ => (b'=', descr),
        };
        let (&kind, size) = rest.split_first()?;
        if size.is_empty() || size.len() > 2 || !size.iter().all(u8::is_ascii_digit) {
            return None;
        }
        if size[0] == b'0' {
            return None;
        }
        let itemsize = size
            .iter()
            .fold(0usize, |acc, &d| acc * 10 + usize::from(d - b'0'));
        let code = match (kind, itemsize) {
            (b'b', 1) => DLDataTypeCode::BOOL,
            (b'i', 1 | 2 | 4 | 8) => DLDataTypeCode::INT,
            (b'u', 1 | 2 | 4 | 8) => DLDataTypeCode::UINT,
            (b'f', 2 | 4 | 8) => DLDataTypeCode::FLOAT,
            (b'c', 8 | 16) => DLDataTypeCode::COMPLEX,
            _ => return None,
        };
        let file_big_endian = match order {
            b'<' => false,
            b'>' => true,
            _ => cfg!(target_endian = "big"),
        };
        Some(ElementType {
            dtype: DataType::scalar(code, (itemsize * 8) as u8),
            kind,
            itemsize,
            swap: itemsize > 1 && file_big_endian != cfg!(target_endian = "big"),
        })
    }

    /// The NumPy element type of `dtype`, or an error saying why there is none.
    fn from_dtype(dtype: DataType) -> Result<ElementType> {
        if dtype.lanes != 1 {
            return Err(write_error(format!(
                "dtype {dtype} has {} lanes; NumPy has no vector dtypes (lanes must be 1)",
                dtype.lanes
            )));
        }
        let kind = match (dtype.code, dtype.bits) {
            (DLDataTypeCode::BOOL, 8) => Some(b'b'),
            (DLDataTypeCode::INT, 8 | 16 | 32 | 64) => Some(b'i'),
            (DLDataTypeCode::UINT, 8 | 16 | 32 | 64) => Some(b'u'),
            (DLDataTypeCode::FLOAT, 16 | 32 | 64) => Some(b'f'),
            (DLDataTypeCode::COMPLEX, 64 | 128) => Some(b'c'),
            _ if ML_DTYPES.contains(&dtype) => return Ok(ElementType::ml_dtype(dtype)),
            _ => None,
        };
        let kind = kind.ok_or_else(|| {
            write_error(format!(
                "dtype {dtype} has no NumPy equivalent (supported: bool, int8-64, uint8-64, \
                 float16/32/64, complex64/128, and ml_dtypes' bfloat16, float8_*, \
                 float4_e2m1fn, int2/4, uint2/4)"
            ))
        })?;
        Ok(ElementType {
            dtype,
            kind,
            itemsize: usize::from(dtype.bits / 8),
            swap: false,
        })
    }

    /// The little-endian descr `numpy.save` writes for this type.
    fn descr(&self) -> String {
        if self.kind == ML_DTYPES_KIND {
            return self.dtype.to_string();
        }
        let order = if self.itemsize == 1 { '|' } else { '<' };
        format!("{order}{}{}", char::from(self.kind), self.itemsize)
    }

    /// The size of the units whose bytes a byte swap reverses (each half of a complex).
    fn swap_unit(&self) -> usize {
        if self.kind == b'c' {
            self.itemsize / 2
        } else {
            self.itemsize
        }
    }
}

fn swap_bytes(data: &mut [u8], unit: usize) {
    if unit > 1 {
        for chunk in data.chunks_exact_mut(unit) {
            chunk.reverse();
        }
    }
}

fn normalise_bools(data: &mut [u8]) {
    for byte in data {
        *byte = u8::from(*byte != 0);
    }
}

/// Copies the elements of `src` laid out with `strides` (in bytes, element 0 at byte `start`)
/// into `out` in C order. Every element position must lie inside `src`.
fn gather(
    src: &[u8],
    start: usize,
    shape: &[usize],
    strides: &[i128],
    itemsize: usize,
    out: &mut [u8],
) {
    // Size-1 dimensions do not change the order; leaving them out bounds the work per element
    // (there are at most log2(numel) other dimensions), however many the header lists.
    let mut dims: Vec<(usize, i128)> = shape
        .iter()
        .zip(strides)
        .filter(|&(&extent, _)| extent != 1)
        .map(|(&extent, &stride)| (extent, stride))
        .collect();
    // Copy whole rows when the innermost dimension is compact.
    let mut run = itemsize;
    if let Some(&(extent, stride)) = dims.last() {
        if stride == itemsize as i128 {
            run = extent * itemsize;
            dims.pop();
        }
    }
    let mut index = vec![0usize; dims.len()];
    let mut offset = start as i128;
    for chunk in out.chunks_exact_mut(run) {
        let at = offset as usize;
        chunk.copy_from_slice(&src[at..at + run]);
        for (k, &(extent, stride)) in dims.iter().enumerate().rev() {
            index[k] += 1;
            offset += stride;
            if index[k] < extent {
                break;
            }
            offset -= stride * extent as i128;
            index[k] = 0;
        }
    }
}

/// Copies `tensor`'s elements (numel > 0) into `out` in C order, native byte order.
fn copy_elements(tensor: &Tensor, itemsize: usize, out: &mut [u8]) -> Result<()> {
    if tensor.dl_tensor().data.is_null() {
        return Err(write_error("the tensor's data pointer is null"));
    }
    let base = tensor.data_ptr().cast::<u8>().cast_const();
    if tensor.is_contiguous() {
        // SAFETY: a contiguous CPU tensor with numel > 0 holds numel * itemsize = out.len()
        // readable bytes from data + byte_offset; the caller of `write` excludes writers.
        let src = unsafe { core::slice::from_raw_parts(base, out.len()) };
        out.copy_from_slice(src);
        return Ok(());
    }
    // Walk the strides: find the lowest and highest element the view reaches.
    let shape = tensor.shape();
    let strides = tensor.strides();
    let too_far = || write_error("the tensor's strides reach beyond addressable memory");
    let (mut low, mut high) = (0i128, 0i128);
    for (&dim, &stride) in shape.iter().zip(&strides) {
        let reach = i128::from(dim - 1) * i128::from(stride);
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    let item = itemsize as i128;
    let span = (high - low + 1)
        .checked_mul(item)
        .and_then(|s| usize::try_from(s).ok())
        .filter(|&s| isize::try_from(s).is_ok())
        .ok_or_else(too_far)?;
    let low_bytes = isize::try_from(low * item).map_err(|_| too_far())?;
    let first = base.wrapping_offset(low_bytes);
    // SAFETY: a tensor's shape and strides address memory of its allocation (its maker's
    // contract); its elements lie in the `span` CPU bytes from its lowest one at `first`, and
    // the caller of `write` excludes writers while it runs.
    let src = unsafe { core::slice::from_raw_parts(first, span) };
    let byte_strides: Vec<i128> = strides.iter().map(|&s| i128::from(s) * item).collect();
    let extents: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    gather(
        src,
        (-low * item) as usize,
        &extents,
        &byte_strides,
        itemsize,
        out,
    );
    Ok(())
}

/// The magic, version, header length and padded header for `descr` and `shape`.
fn header_bytes(descr: &str, shape: &[i64]) -> Result<Vec<u8>> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (");
    for (i, dim) in shape.iter().enumerate() {
        if i > 0 {
            dict.push_str(", ");
        }
        write!(dict, "{dim}").map_err(Error::from)?;
    }
    if shape.len() == 1 {
        dict.push(',');
    }
    dict.push_str("), }");
    for (major, prefix) in [(1u8, 10usize), (2, 12)] {
        // The header (dict, spaces, newline) ends where the data starts: a multiple of 64.
        let total = (prefix + dict.len() + 1).next_multiple_of(64);
        let header_len = total - prefix;
        if major == 1 && header_len > usize::from(u16::MAX) {
            continue;
        }
        if header_len > MAX_HEADER_LEN {
            break;
        }
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[major, 0]);
        if major == 1 {
            out.extend_from_slice(&(header_len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(header_len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        return Ok(out);
    }
    Err(write_error(format!(
        "the header for {} dimensions would exceed the {MAX_HEADER_LEN}-byte limit of readers",
        shape.len()
    )))
}

// ---------------------------------------------------------------------------------------------
// Reading the preamble and header.

/// What the header says, checked against the file.
#[derive(Debug)]
struct Header {
    element: ElementType,
    fortran_order: bool,
    shape: Vec<i64>,
    /// Offset of the first data byte; the rest of the file is exactly the data.
    data_start: usize,
}

/// Reads the header from `bytes`, the start of a file of `file_len` bytes (all of it, or at
/// least the preamble and the header), and checks that the rest of the file is exactly the data
/// the header describes.
fn parse_file(bytes: &[u8], file_len: usize) -> Result<Header> {
    // Magic string.
    if let Some(bad) = (0..MAGIC.len().min(bytes.len())).find(|&i| bytes[i] != MAGIC[i]) {
        return Err(error_at(
            "magic",
            bad,
            format!(
                "not a .npy file: expected the magic string \\x93NUMPY, found {}",
                Quoted(&bytes[..MAGIC.len().min(bytes.len())])
            ),
        ));
    }
    if file_len < MAGIC.len() {
        return Err(error_at(
            "magic",
            file_len,
            format!("file ends after {file_len} bytes, inside the magic string \\x93NUMPY"),
        ));
    }
    // Version.
    let Some(&[major, minor]) = bytes.get(6..8) else {
        return Err(error_at(
            "version",
            6,
            "file ends inside the format version",
        ));
    };
    let length_size = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => {
            return Err(error_at(
                "version",
                6,
                format!("unsupported format version {major}.{minor} (supported: 1.0, 2.0, 3.0)"),
            ));
        }
    };
    // Header length.
    let Some(length_bytes) = bytes.get(8..8 + length_size) else {
        return Err(error_at(
            "header length",
            8,
            format!(
                "file ends inside the {length_size}-byte header length (file is {file_len} bytes)"
            ),
        ));
    };
    let header_len = length_bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    let header_start = 8 + length_size;
    if header_len > MAX_HEADER_LEN as u64 {
        return Err(error_at(
            "header length",
            8,
            format!("header length {header_len} exceeds the limit of {MAX_HEADER_LEN} bytes"),
        ));
    }
    let header_len = header_len as usize;
    let available = file_len - header_start;
    if header_len > available {
        return Err(error_at(
            "header length",
            8,
            format!(
                "header length {header_len} goes beyond the end of the file \
                 (only {available} bytes follow byte {header_start})"
            ),
        ));
    }
    let text = &bytes[header_start..header_start + header_len];
    if major == 3 {
        if let Err(error) = core::str::from_utf8(text) {
            return Err(error_at(
                "header",
                header_start + error.valid_up_to(),
                "a version 3.0 header must be UTF-8",
            ));
        }
    }
    let dict =
        HeaderDict::parse(text, major < 3).map_err(|error| header_error(error, header_start))?;
    let element = ElementType::from_descr(dict.descr).ok_or_else(|| {
        let what = if dict.descr.first() == Some(&b'[') {
            "structured dtypes are not supported"
        } else {
            "supported: |b1, i1/i2/i4/i8, u1/u2/u4/u8, f2/f4/f8, c8/c16 with byte order <, >, | or ="
        };
        error_at(
            "header",
            header_start + dict.descr_offset,
            format!("unsupported descr {} ({what})", Quoted(dict.descr)),
        )
    })?;
    let data_start = header_start + header_len;
    let needed = data_bytes(&dict.shape, element.itemsize).ok_or_else(|| {
        error_at(
            "header",
            header_start + dict.shape_offset,
            format!(
                "shape {} with dtype {} is too large: its size in bytes overflows 64 bits",
                ShapeText(&dict.shape),
                element.dtype
            ),
        )
    })?;
    let held = file_len - data_start;
    if held != needed {
        let extra = if held > needed {
            format!(" ({} trailing bytes)", held - needed)
        } else {
            String::new()
        };
        return Err(error_at(
            "data",
            data_start,
            format!(
                "file holds {held} bytes of data, shape {} with dtype {} needs {needed}{extra}",
                ShapeText(&dict.shape),
                element.dtype
            ),
        ));
    }
    Ok(Header {
        element,
        fortran_order: dict.fortran_order,
        shape: dict.shape,
        data_start,
    })
}

/// A parsed Python literal with the offsets (in the header) of its first and last-plus-one
/// byte.
#[derive(Debug)]
struct Value {
    start: usize,
    end: usize,
    kind: ValueKind,
}

#[derive(Debug)]
enum ValueKind {
    /// The content between the quotes, as a range of the header text.
    Str(core::ops::Range<usize>),
    /// An integer: its sign and magnitude (`None` when it does not fit in 64 bits).
    Int {
        negative: bool,
        magnitude: Option<u64>,
    },
    Bool(bool),
    None,
    Tuple(Vec<Value>),
    /// A list (only structured descrs use them; the items are checked, then dropped).
    List,
}

impl ValueKind {
    fn name(&self) -> &'static str {
        match self {
            ValueKind::Str(_) => "a string",
            ValueKind::Int { .. } => "an integer",
            ValueKind::Bool(_) => "a bool",
            ValueKind::None => "None",
            ValueKind::Tuple(_) => "a tuple",
            ValueKind::List => "a list",
        }
    }
}

/// The three entries of the header dict; offsets count from the header's first byte.
struct HeaderDict<'a> {
    descr: &'a [u8],
    descr_offset: usize,
    fortran_order: bool,
    shape: Vec<i64>,
    shape_offset: usize,
}

/// A strict parser for the Python literal subset `.npy` headers use: a [`Cursor`] over the
/// header, and the header's own bytes for messages.
///
/// The grammar is ASCII, so a byte outside ASCII is only ever part of a string's content or
/// an error. A header that is not UTF-8 (1.0 and 2.0 headers are Latin-1 to NumPy) is read
/// with each such byte stood in for by a NUL, one byte for one, so offsets and decisions are
/// the same; messages quote the file's own bytes.
struct Parser<'t> {
    cursor: Cursor<'t>,
    /// The header as it is in the file.
    raw: &'t [u8],
    /// Whether Python 2 long literals (`3L`) are accepted (format 1.0 and 2.0).
    python2_longs: bool,
}

const KEYS: [&str; 3] = ["descr", "fortran_order", "shape"];

impl<'a> HeaderDict<'a> {
    fn parse(raw: &'a [u8], python2_longs: bool) -> Result<HeaderDict<'a>, ParseError> {
        let stand_in: String;
        let text = match core::str::from_utf8(raw) {
            Ok(text) => text,
            Err(_) => {
                stand_in = raw
                    .iter()
                    .map(|&byte| {
                        if byte.is_ascii() {
                            char::from(byte)
                        } else {
                            '\0'
                        }
                    })
                    .collect();
                &stand_in
            }
        };
        let mut p = Parser {
            cursor: Cursor::with_limit(text, HEADER_FORMAT, MAX_HEADER_LEN)?,
            raw,
            python2_longs,
        };
        let mut values: [Option<Value>; 3] = [None, None, None];
        p.skip_space();
        if !p.cursor.eat_byte(b'{') {
            return Err(p.unexpected("expected '{' starting the header dict"));
        }
        loop {
            p.skip_space();
            match p.cursor.peek() {
                Some(b'}') => {
                    p.cursor.advance(1);
                    break;
                }
                Some(b'\'' | b'"') => {}
                _ => return Err(p.unexpected("expected a quoted key or '}' in the header dict")),
            }
            let key_offset = p.cursor.offset();
            let key = p.parse_string()?;
            let key_text = &raw[key];
            let Some(slot) = KEYS.iter().position(|k| k.as_bytes() == key_text) else {
                return Err(p.cursor.error_at(
                    key_offset,
                    format!(
                        "unknown key {} (the header dict holds exactly 'descr', \
                         'fortran_order' and 'shape')",
                        Quoted(key_text)
                    ),
                ));
            };
            let name = KEYS[slot];
            if values[slot].is_some() {
                return Err(p
                    .cursor
                    .error_at(key_offset, format!("duplicate key '{name}'")));
            }
            p.skip_space();
            if !p.cursor.eat_byte(b':') {
                return Err(p.unexpected(&format!("expected ':' after key '{name}'")));
            }
            values[slot] = Some(p.parse_value(0)?);
            p.skip_space();
            if !p.cursor.eat_byte(b',') && p.cursor.peek() != Some(b'}') {
                return Err(
                    p.unexpected(&format!("expected ',' or '}}' after the value of '{name}'"))
                );
            }
        }
        p.skip_space();
        if !p.cursor.at_end() {
            return Err(p.unexpected("unexpected text after the header dict"));
        }
        let [descr, fortran_order, shape] = values;
        let missing = |name: &str| p.error(format!("the header dict has no '{name}' key"));
        let descr = descr.ok_or_else(|| missing("descr"))?;
        let fortran_order = fortran_order.ok_or_else(|| missing("fortran_order"))?;
        let shape = shape.ok_or_else(|| missing("shape"))?;

        let descr_bytes = match &descr.kind {
            ValueKind::Str(range) => &raw[range.clone()],
            // Structured dtypes: name them by their source text.
            ValueKind::List => &raw[descr.start..descr.end],
            other => {
                return Err(p.cursor.error_at(
                    descr.start,
                    format!("'descr' must be a string, found {}", other.name()),
                ));
            }
        };
        let ValueKind::Bool(fortran_order) = fortran_order.kind else {
            return Err(p.cursor.error_at(
                fortran_order.start,
                format!(
                    "'fortran_order' must be True or False, found {}",
                    fortran_order.kind.name()
                ),
            ));
        };
        let ValueKind::Tuple(dims) = &shape.kind else {
            return Err(p.cursor.error_at(
                shape.start,
                format!(
                    "'shape' must be a tuple of integers, found {} (a one-dimensional shape is \
                     written '(5,)')",
                    shape.kind.name()
                ),
            ));
        };
        let mut extents = Vec::with_capacity(dims.len());
        for dim in dims {
            let source = &raw[dim.start..dim.end];
            match dim.kind {
                ValueKind::Int {
                    negative: false,
                    magnitude: Some(value),
                } if value <= i64::MAX as u64 => extents.push(value as i64),
                ValueKind::Int {
                    negative: false, ..
                } => {
                    return Err(p.cursor.error_at(
                        dim.start,
                        format!(
                            "dimension {} in 'shape' does not fit in 63 bits",
                            Quoted(source)
                        ),
                    ));
                }
                ValueKind::Int { negative: true, .. } => {
                    return Err(p.cursor.error_at(
                        dim.start,
                        format!("negative dimension {} in 'shape'", Quoted(source)),
                    ));
                }
                ref other => {
                    return Err(p.cursor.error_at(
                        dim.start,
                        format!(
                            "'shape' must hold non-negative integers, found {}",
                            other.name()
                        ),
                    ));
                }
            }
        }
        Ok(HeaderDict {
            descr: descr_bytes,
            descr_offset: descr.start,
            fortran_order,
            shape: extents,
            shape_offset: shape.start,
        })
    }
}

impl Parser<'_> {
    /// Skips Python's whitespace (space, tab, newline, carriage return, form feed).
    fn skip_space(&mut self) {
        self.cursor
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'));
    }

    /// An error at the cursor.
    fn error(&self, message: impl Into<String>) -> ParseError {
        self.cursor.error(message)
    }

    /// `expected`, plus the byte found at the cursor.
    fn unexpected(&self, expected: &str) -> ParseError {
        let found = match self.raw.get(self.cursor.offset()) {
            None => "the end of the header".to_owned(),
            Some(&byte) => format!("{}", Quoted(&[byte])),
        };
        self.error(format!("{expected}, found {found}"))
    }

    fn parse_value(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.skip_space();
        let start = self.cursor.offset();
        let kind = match self.cursor.peek() {
            Some(b'\'' | b'"') => ValueKind::Str(self.parse_string()?),
            Some(b'0'..=b'9' | b'-' | b'+') => self.parse_int()?,
            Some(b'(' | b'[') => return self.parse_sequence(depth),
            Some(b'A'..=b'Z' | b'a'..=b'z' | b'_') => {
                match self
                    .cursor
                    .take_while(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    "True" => ValueKind::Bool(true),
                    "False" => ValueKind::Bool(false),
                    "None" => ValueKind::None,
                    word => {
                        return Err(self.cursor.error_at(
                            start,
                            format!(
                                "unknown name {} (values are strings, integers, True, False, \
                                 None, tuples and lists)",
                                Quoted(word.as_bytes())
                            ),
                        ));
                    }
                }
            }
            _ => return Err(self.unexpected("expected a value")),
        };
        Ok(Value {
            start,
            end: self.cursor.offset(),
            kind,
        })
    }

    /// A quoted string without escapes, the cursor on its opening quote; returns the
    /// content's range in the header.
    fn parse_string(&mut self) -> Result<core::ops::Range<usize>, ParseError> {
        let start = self.cursor.offset();
        let Some(quote) = self.cursor.peek() else {
            return Err(self.unexpected("expected a string"));
        };
        self.cursor.advance(1);
        let content = self.cursor.offset();
        self.cursor
            .take_while(|b| b != quote && !matches!(b, b'\n' | b'\r' | b'\\'));
        match self.cursor.peek() {
            None | Some(b'\n' | b'\r') => Err(self.cursor.error_at(start, "unterminated string")),
            Some(b'\\') => Err(self.error("escape sequences in header strings are not supported")),
            Some(_) => {
                let end = self.cursor.offset();
                self.cursor.advance(1);
                Ok(content..end)
            }
        }
    }

    fn parse_int(&mut self) -> Result<ValueKind, ParseError> {
        let start = self.cursor.offset();
        let negative = self.cursor.eat_byte(b'-');
        if !negative {
            self.cursor.eat_byte(b'+');
        }
        let digits = self.cursor.take_while(|b| b.is_ascii_digit());
        if digits.is_empty() {
            return Err(self.unexpected("expected digits after the sign"));
        }
        if digits.len() > 1 && digits.starts_with('0') {
            return Err(self.cursor.error_at(
                start,
                format!(
                    "integer {} has leading zeros",
                    Quoted(&self.raw[start..self.cursor.offset()])
                ),
            ));
        }
        let magnitude = digits.parse::<u64>().ok();
        if self.python2_longs && !self.cursor.eat_byte(b'L') {
            self.cursor.eat_byte(b'l');
        }
        if matches!(
            self.cursor.peek(),
            Some(b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.')
        ) {
            return Err(self.unexpected("expected an integer"));
        }
        Ok(ValueKind::Int {
            negative,
            magnitude,
        })
    }

    /// A tuple `(..)` or list `[..]`, the cursor on its opening bracket; a parenthesised
    /// single value without a comma is that value, as in Python.
    fn parse_sequence(&mut self, depth: usize) -> Result<Value, ParseError> {
        let start = self.cursor.offset();
        if depth >= MAX_DEPTH {
            return Err(self.error(format!("tuples and lists nest more than {MAX_DEPTH} deep")));
        }
        let open = self.cursor.peek();
        let close = if open == Some(b'(') { b')' } else { b']' };
        self.cursor.advance(1);
        let mut items = Vec::new();
        let mut saw_comma = false;
        loop {
            self.skip_space();
            if self.cursor.eat_byte(close) {
                break;
            }
            items.push(self.parse_value(depth + 1)?);
            self.skip_space();
            if self.cursor.eat_byte(b',') {
                saw_comma = true;
            } else if self.cursor.peek() != Some(close) {
                return Err(self.unexpected(&format!("expected ',' or '{}'", char::from(close))));
            }
        }
        let end = self.cursor.offset();
        let tuple = open == Some(b'(');
        if tuple && items.len() == 1 && !saw_comma {
            let mut inner = items.pop().expect("one item");
            inner.start = start;
            inner.end = end;
            return Ok(inner);
        }
        Ok(Value {
            start,
            end,
            kind: if tuple {
                ValueKind::Tuple(items)
            } else {
                ValueKind::List
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with header dict `dict` (padded to 64 like numpy) and `data`.
    fn file_with(dict: &str, data: &[u8]) -> Vec<u8> {
        let total = (10 + dict.len() + 1).next_multiple_of(64);
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&((total - 10) as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        out.extend_from_slice(data);
        out
    }

    fn message(result: Result<Tensor>) -> String {
        match result {
            Ok(tensor) => panic!("expected an error, got {tensor:?}"),
            Err(error) => {
                assert_eq!(error.kind(), ErrorKind::VALUE_ERROR, "{error}");
                error.message().into_owned()
            }
        }
    }

    fn assert_error(bytes: &[u8], expected: &[&str]) {
        let text = message(read(bytes));
        for part in expected {
            assert!(text.contains(part), "{text:?} should contain {part:?}");
        }
    }

    fn raw_bytes(tensor: &Tensor) -> Vec<u8> {
        let bytes = write(tensor).unwrap();
        let start =
            bytes.len() - data_bytes(tensor.shape(), tensor.dtype().bits as usize / 8).unwrap();
        bytes[start..].to_vec()
    }

    fn f32_file() -> Vec<u8> {
        let tensor = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        write(&tensor).unwrap()
    }

    #[test]
    fn writes_what_numpy_writes() {
        let bytes = f32_file();
        let header =
            b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        assert_eq!(&bytes[..header.len()], header);
        assert_eq!(bytes.len(), 128 + 24);
        assert_eq!(bytes[127], b'\n');
        assert!(bytes[header.len()..127].iter().all(|&b| b == b' '));
        assert_eq!(&bytes[128..132], &1.0f32.to_le_bytes());
    }

    #[test]
    fn shapes_are_python_tuples() {
        for (shape, text) in [
            (&[][..], "'shape': (), }"),
            (&[5][..], "'shape': (5,), }"),
            (&[0, 3][..], "'shape': (0, 3), }"),
        ] {
            let tensor = Tensor::empty(shape, DataType::I32).unwrap();
            let bytes = write(&tensor).unwrap();
            let header = String::from_utf8_lossy(&bytes[10..]).into_owned();
            assert!(header.contains(text), "{header}");
            assert_eq!(read(&bytes).unwrap().shape(), shape);
        }
    }

    fn complex(bits: u8) -> DataType {
        DataType::scalar(DLDataTypeCode::COMPLEX, bits)
    }

    fn all_dtypes() -> Vec<(DataType, &'static str)> {
        vec![
            (DataType::BOOL, "|b1"),
            (DataType::I8, "|i1"),
            (DataType::I16, "<i2"),
            (DataType::I32, "<i4"),
            (DataType::I64, "<i8"),
            (DataType::U8, "|u1"),
            (DataType::U16, "<u2"),
            (DataType::U32, "<u4"),
            (DataType::U64, "<u8"),
            (DataType::F16, "<f2"),
            (DataType::F32, "<f4"),
            (DataType::F64, "<f8"),
            (complex(64), "<c8"),
            (complex(128), "<c16"),
        ]
    }

    /// A tensor of `dtype` and `shape` whose bytes follow a fixed pattern (bools 0/1).
    fn patterned(dtype: DataType, shape: &[i64]) -> Tensor {
        let tensor = Tensor::empty(shape, dtype).unwrap();
        let n = data_bytes(shape, usize::from(dtype.bits / 8)).unwrap();
        // SAFETY: a fresh compact CPU tensor of exactly n bytes, not shared yet.
        let data = unsafe { core::slice::from_raw_parts_mut(tensor.data_ptr().cast::<u8>(), n) };
        for (i, byte) in data.iter_mut().enumerate() {
            *byte = if dtype == DataType::BOOL {
                u8::from(i % 3 == 0)
            } else {
                (i * 31 + 7) as u8
            };
        }
        tensor
    }

    #[test]
    fn every_dtype_round_trips() {
        for (dtype, descr) in all_dtypes() {
            for shape in [&[][..], &[7][..], &[2, 3, 4][..], &[0, 3][..]] {
                let tensor = patterned(dtype, shape);
                let bytes = write(&tensor).unwrap();
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).into_owned();
                assert!(text.contains(&format!("'descr': '{descr}'")), "{text}");
                assert_eq!((bytes.len() - raw_bytes(&tensor).len()) % 64, 0);
                let back = read(&bytes).unwrap();
                assert_eq!(back.dtype(), dtype);
                assert_eq!(back.shape(), shape);
                assert!(back.is_contiguous());
                assert_eq!(raw_bytes(&back), raw_bytes(&tensor), "{dtype} {shape:?}");
            }
        }
    }

    #[test]
    fn reads_big_endian_fortran_and_old_headers() {
        // (2, 3) int16 in Fortran order, big-endian: logical [[1, 2, 3], [4, 5, 6]].
        let mut data = Vec::new();
        for v in [1i16, 4, 2, 5, 3, 6] {
            data.extend_from_slice(&v.to_be_bytes());
        }
        let bytes = file_with(
            "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }",
            &data,
        );
        let tensor = read(&bytes).unwrap();
        assert_eq!(tensor.shape(), &[2, 3]);
        assert_eq!(tensor.to_vec::<i16>().unwrap(), vec![1, 2, 3, 4, 5, 6]);

        // Big-endian complex64: each half swaps separately.
        let mut data = Vec::new();
        for v in [1.5f32, -2.0, 3.0, 0.25] {
            data.extend_from_slice(&v.to_be_bytes());
        }
        let bytes = file_with(
            "{'descr': '>c8', 'fortran_order': False, 'shape': (2,)}",
            &data,
        );
        let tensor = read(&bytes).unwrap();
        let mut expected = Vec::new();
        for v in [1.5f32, -2.0, 3.0, 0.25] {
            expected.extend_from_slice(&v.to_ne_bytes());
        }
        assert_eq!(raw_bytes(&tensor), expected);

        // A 16-byte aligned, double-quoted, Python 2 style header without a trailing comma.
        let dict = b"{\"descr\":\"<u4\",\"fortran_order\":False,\"shape\":(2L,)}";
        let mut bytes = MAGIC.to_vec();
        let len = (10 + dict.len() + 1).next_multiple_of(16) - 10;
        bytes.extend_from_slice(&[1, 0, len as u8, 0]);
        bytes.extend_from_slice(dict);
        bytes.resize(10 + len - 1, b' ');
        bytes.push(b'\n');
        bytes.extend_from_slice(&7u32.to_le_bytes());
        bytes.extend_from_slice(&9u32.to_le_bytes());
        assert_eq!(read(&bytes).unwrap().to_vec::<u32>().unwrap(), vec![7, 9]);

        // Versions 2.0 and 3.0 (UTF-8 allowed in the header).
        for major in [2u8, 3] {
            let dict = "{'shape': (1,), 'fortran_order': False, 'descr': '<f8'}      \n";
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&[major, 0]);
            bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
            bytes.extend_from_slice(dict.as_bytes());
            bytes.extend_from_slice(&2.5f64.to_le_bytes());
            assert_eq!(read(&bytes).unwrap().to_vec::<f64>().unwrap(), vec![2.5]);
        }

        // Native and '|' orders; bools are normalised.
        let bytes = file_with(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
            &[0, 1, 7],
        );
        assert_eq!(raw_bytes(&read(&bytes).unwrap()), vec![0, 1, 1]);
        let bytes = file_with(
            "{'descr': '=i4', 'fortran_order': False, 'shape': (), }",
            &5i32.to_ne_bytes(),
        );
        assert_eq!(read(&bytes).unwrap().to_vec::<i32>().unwrap(), vec![5]);
    }

    #[test]
    fn many_unit_dimensions_cost_nothing_per_element() {
        // (4096, 1, 1, ..., 1) in Fortran order with 200000 unit dimensions: walking them for
        // every element would take ~10^9 steps.
        let dict = format!(
            "{{'descr': '|u1', 'fortran_order': True, 'shape': (4096, {}), }}\n",
            "1, ".repeat(200_000)
        );
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[2, 0]);
        bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        let data: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        bytes.extend_from_slice(&data);
        let tensor = read(&bytes).unwrap();
        assert_eq!(tensor.shape().len(), 200_001);
        assert_eq!(tensor.to_vec::<u8>().unwrap(), data);
    }

    #[test]
    fn fortran_order_three_dims() {
        let shape = [2i64, 3, 4];
        // Logical value at (i, j, k) = 100i + 10j + k, stored in Fortran order.
        let mut data = Vec::new();
        for k in 0..4 {
            for j in 0..3 {
                for i in 0..2 {
                    data.extend_from_slice(&(100 * i + 10 * j + k as i64).to_le_bytes());
                }
            }
        }
        let bytes = file_with(
            "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3, 4), }",
            &data,
        );
        let tensor = read(&bytes).unwrap();
        assert_eq!(tensor.shape(), &shape);
        let mut expected = Vec::new();
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    expected.push(100 * i + 10 * j + k);
                }
            }
        }
        assert_eq!(tensor.to_vec::<i64>().unwrap(), expected);
    }

    #[test]
    fn writes_strided_views_in_c_order() {
        let base = Tensor::from_slice(&(0..24).collect::<Vec<i32>>(), &[4, 6]).unwrap();
        let mut dl = *base.dl_tensor();
        // base[1:3, ::2] -> [[6, 8, 10], [12, 14, 16]]
        let mut shape = [2i64, 3];
        let mut strides = [6i64, 2];
        dl.shape = shape.as_mut_ptr();
        dl.strides = strides.as_mut_ptr();
        dl.byte_offset = 6 * 4;
        // SAFETY: the view addresses elements 6..=16 of base's 24.
        let view = unsafe { base.unsafe_view(&dl) }.unwrap();
        assert!(!view.is_contiguous());
        let back = read(&write(&view).unwrap()).unwrap();
        assert_eq!(back.shape(), &[2, 3]);
        assert_eq!(back.to_vec::<i32>().unwrap(), vec![6, 8, 10, 12, 14, 16]);

        // The transpose, and a reversed (negative stride) row.
        let mut shape = [6i64, 4];
        let mut strides = [1i64, 6];
        dl.shape = shape.as_mut_ptr();
        dl.strides = strides.as_mut_ptr();
        dl.byte_offset = 0;
        // SAFETY: the transpose addresses exactly base's elements.
        let view = unsafe { base.unsafe_view(&dl) }.unwrap();
        let back = read(&write(&view).unwrap()).unwrap();
        let expected: Vec<i32> = (0..6)
            .flat_map(|j| (0..4).map(move |i| i * 6 + j))
            .collect();
        assert_eq!(back.to_vec::<i32>().unwrap(), expected);

        let mut shape = [6i64];
        let mut strides = [-1i64];
        dl.ndim = 1;
        dl.shape = shape.as_mut_ptr();
        dl.strides = strides.as_mut_ptr();
        dl.byte_offset = 11 * 4;
        // SAFETY: elements 11 down to 6 of base.
        let view = unsafe { base.unsafe_view(&dl) }.unwrap();
        let back = read(&write(&view).unwrap()).unwrap();
        assert_eq!(back.to_vec::<i32>().unwrap(), vec![11, 10, 9, 8, 7, 6]);
    }

    #[test]
    fn huge_headers_use_version_2() {
        let shape = vec![1i64; 30_000];
        let tensor = Tensor::from_slice(&[3.5f64], &shape).unwrap();
        let bytes = write(&tensor).unwrap();
        assert_eq!(&bytes[6..8], &[2, 0]);
        assert_eq!((bytes.len() - 8) % 64, 0);
        let back = read(&bytes).unwrap();
        assert_eq!(back.shape().len(), 30_000);
        assert_eq!(back.to_vec::<f64>().unwrap(), vec![3.5]);

        let too_many = vec![1i64; 400_000];
        let tensor = Tensor::empty(&too_many, DataType::U8).unwrap();
        let text = write(&tensor).unwrap_err().message().into_owned();
        assert!(text.contains("exceed"), "{text}");
    }

    #[test]
    fn ml_dtypes_types_are_written_by_name_and_read_back() {
        for dtype in ML_DTYPES {
            let tensor = Tensor::empty(&[3], dtype).unwrap();
            let bytes = write(&tensor).unwrap();
            let text = String::from_utf8_lossy(&bytes[..128]).into_owned();
            assert!(text.contains(&format!("'descr': '{dtype}'")), "{text}");
            let back = read(&bytes).unwrap();
            assert_eq!(back.dtype(), dtype);
            assert_eq!(back.shape(), &[3]);
        }
    }

    #[test]
    fn refuses_dtypes_without_numpy_equivalent() {
        for dtype in [
            DataType::scalar(DLDataTypeCode::FLOAT6_E2M3FN, 6),
            DataType {
                code: DLDataTypeCode::FLOAT,
                bits: 32,
                lanes: 4,
            },
            DataType::scalar(DLDataTypeCode::INT, 3),
        ] {
            let tensor = Tensor::empty(&[2], dtype).unwrap();
            let error = write(&tensor).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::VALUE_ERROR);
            let text = error.message().into_owned();
            assert!(text.contains(&dtype.to_string()), "{text}");
            assert!(text.contains("NumPy"), "{text}");
        }
    }

    #[test]
    fn refuses_tensors_off_the_cpu() {
        let base = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let mut dl = *base.dl_tensor();
        let mut shape = [2i64];
        let mut strides = [1i64];
        dl.shape = shape.as_mut_ptr();
        dl.strides = strides.as_mut_ptr();
        dl.device = pactum::Device::cuda(0).into();
        // SAFETY: same memory; only the device label differs and nothing dereferences it.
        let view = unsafe { base.unsafe_view(&dl) }.unwrap();
        let text = write(&view).unwrap_err().message().into_owned();
        assert!(text.contains("CPU") && text.contains("cuda:0"), "{text}");
    }

    #[test]
    fn malformed_preamble() {
        assert_error(b"", &["magic at byte 0", "file ends after 0 bytes"]);
        assert_error(b"\x93NUM", &["magic at byte 4", "inside the magic string"]);
        assert_error(
            b"\x93NUMPX\x01\x00",
            &["magic at byte 5", "not a .npy file"],
        );
        assert_error(b"PK\x03\x04", &["magic at byte 0", "not a .npy file"]);
        assert_error(b"\x93NUMPY\x01", &["version at byte 6", "file ends"]);
        assert_error(b"\x93NUMPY\x04\x00\x10\x00", &["version at byte 6", "4.0"]);
        assert_error(b"\x93NUMPY\x01\x01\x10\x00", &["version at byte 6", "1.1"]);
        assert_error(
            b"\x93NUMPY\x01\x00\x10",
            &["header length at byte 8", "file ends"],
        );
        assert_error(
            b"\x93NUMPY\x02\x00\x10\x00\x00",
            &["header length at byte 8", "file ends"],
        );
        assert_error(
            b"\x93NUMPY\x01\x00\x76\x00{'descr'",
            &[
                "header length at byte 8",
                "118",
                "beyond the end",
                "only 8 bytes follow byte 10",
            ],
        );
        assert_error(
            b"\x93NUMPY\x02\x00\xff\xff\xff\xff{",
            &["header length at byte 8", "4294967295", "exceeds the limit"],
        );
        assert_error(
            b"\x93NUMPY\x03\x00\x04\x00\x00\x00{\xff}\n",
            &["header at byte 13", "UTF-8"],
        );
    }

    #[test]
    fn malformed_headers() {
        let cases: &[(&str, &[&str])] = &[
            ("", &["header at byte 10", "expected '{'"]),
            (
                "{'descr' '<f4'}",
                &["header at byte 19", "expected ':' after key 'descr'"],
            ),
            (
                "{'descr': '<f4' 'shape': ()}",
                &[
                    "header at byte 26",
                    "expected ',' or '}' after the value of 'descr'",
                ],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}",
                &["header at byte 64", "unknown key 'extra'"],
            ),
            (
                "{'descr': '<f4', 'descr': '<f4'}",
                &["header at byte 27", "duplicate key 'descr'"],
            ),
            ("{'fortran_order': False, 'shape': ()}", &["no 'descr' key"]),
            (
                "{'descr': '<f4', 'fortran_order': False}",
                &["no 'shape' key"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
                &[
                    "header at byte 44",
                    "'fortran_order' must be True or False, found an integer",
                ],
            ),
            (
                "{'descr': '<f4', 'fortran_order': false, 'shape': ()}",
                &["header at byte 44", "unknown name 'false'"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}",
                &["header at byte 61", "negative dimension '-1'"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (5)}",
                &["header at byte 60", "'shape' must be a tuple", "(5,)"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': [5]}",
                &["'shape' must be a tuple", "found a list"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}",
                &["header at byte 62", "expected an integer, found '.'"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (,)}",
                &["header at byte 61", "expected a value"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1,, 2)}",
                &["header at byte 63", "expected a value"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1 2)}",
                &["header at byte 63", "expected ',' or ')'"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (01,)}",
                &["leading zeros"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}",
                &["header at byte 61", "found a string"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                &["header at byte 61", "does not fit"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904)}",
                &["header at byte 60", "too large", "overflows"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2305843009213693952,)}",
                &["header at byte 60", "too large"],
            ),
            (
                "{'descr': '<U5', 'fortran_order': False, 'shape': ()}",
                &["header at byte 20", "unsupported descr '<U5'"],
            ),
            (
                "{'descr': '|O', 'fortran_order': False, 'shape': ()}",
                &["unsupported descr '|O'"],
            ),
            (
                "{'descr': '<M8[ns]', 'fortran_order': False, 'shape': ()}",
                &["unsupported descr '<M8[ns]'"],
            ),
            (
                "{'descr': '<f16', 'fortran_order': False, 'shape': ()}",
                &["unsupported descr '<f16'"],
            ),
            (
                "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': ()}",
                &[
                    "header at byte 20",
                    "unsupported descr \"[('a', '<i4')]\"",
                    "structured dtypes",
                ],
            ),
            (
                "{'descr': 5, 'fortran_order': False, 'shape': ()}",
                &["'descr' must be a string"],
            ),
            (
                "{'descr': '<f4, 'fortran_order': False, 'shape': ()}",
                &[
                    "header at byte 27",
                    "expected ',' or '}' after the value of 'descr', found 'f'",
                ],
            ),
            (
                "{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}",
                &["header at byte 23", "escape"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x",
                &["header at byte 64", "unexpected text after the header dict"],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': ()",
                &[
                    "header at byte 62",
                    "after the value of 'shape', found the end of the header",
                ],
            ),
        ];
        let mut failures = Vec::new();
        for (dict, expected) in cases {
            // Build the file by hand: `file_with` pads, and unterminated cases need no padding.
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&[1, 0]);
            bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
            bytes.extend_from_slice(dict.as_bytes());
            let text = message(read(&bytes));
            for part in *expected {
                if !text.contains(part) {
                    failures.push(format!("{dict}: {text:?} should contain {part:?}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let dict = format!("{{'descr': {}", "[".repeat(60_000));
        let text = message(read(&file_with(&dict, &[])));
        assert!(text.contains("nest more than 32 deep"), "{text}");
    }

    #[test]
    fn data_must_match_exactly() {
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let bytes = file_with(dict, &[0; 12]);
        assert_error(
            &bytes,
            &[
                "npy: data at byte 128: file holds 12 bytes of data, shape (2, 3) with dtype float32 needs 24",
            ],
        );
        let bytes = file_with(dict, &[0; 30]);
        assert_error(
            &bytes,
            &[
                "data at byte 128",
                "holds 30 bytes",
                "needs 24",
                "6 trailing bytes",
            ],
        );
        // Zero-sized shapes need no data, however large their other dimensions.
        let bytes = file_with(
            "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 9223372036854775807), }",
            &[],
        );
        assert_eq!(read(&bytes).unwrap().shape(), &[0, i64::MAX]);
        assert_error(
            &file_with(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 9223372036854775807), }",
                &[1],
            ),
            &["data at byte 128", "needs 0", "1 trailing bytes"],
        );
    }

    #[test]
    fn non_ascii_header_bytes_are_quoted_from_the_file() {
        // A 1.0 header is Latin-1 to NumPy, so it need not be UTF-8: offsets and the bytes
        // quoted are the file's own either way.
        let with = |dict: &[u8]| {
            let mut bytes = file_with(&" ".repeat(dict.len()), &[]);
            bytes[10..10 + dict.len()].copy_from_slice(dict);
            bytes
        };
        assert_error(
            &with(b"{'d\xe9scr': '<f4'}"),
            &["header at byte 11", "unknown key 'd\\xe9scr'"],
        );
        assert_error(
            &with("{'d\u{e9}scr': '<f4'}".as_bytes()),
            &["header at byte 11", "unknown key 'd\\xc3\\xa9scr'"],
        );
        assert_error(
            &with(b"{'descr': '<f\xff', 'fortran_order': False, 'shape': ()}"),
            &["header at byte 20", "unsupported descr '<f\\xff'"],
        );
        assert_error(
            &with(b"{'descr': '<f4'}\xa0"),
            &[
                "header at byte 26",
                "unexpected text after the header dict, found '\\xa0'",
            ],
        );
        assert_error(
            &with(b"{'descr': \xe9}"),
            &["header at byte 20", "expected a value, found '\\xe9'"],
        );
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_a_tensor() {
        let mut files = vec![f32_file()];
        let base = patterned(complex(64), &[3, 2]);
        files.push(write(&base).unwrap());
        files.push(file_with(
            "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }",
            &[1; 12],
        ));
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for file in &files {
            for len in 0..file.len() {
                assert!(read(&file[..len]).is_err());
            }
            for _ in 0..3000 {
                let mut mutated = file.clone();
                for _ in 0..1 + (state % 3) {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let at = (state as usize) % mutated.len();
                    mutated[at] = (state >> 32) as u8;
                }
                if let Ok(tensor) = read(&mutated) {
                    assert!(tensor.is_contiguous());
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Headers spliced from dict-like tokens, with random data: always an error or a
        /// tensor whose size matches the data, never a panic.
        #[test]
        fn token_soup_headers_never_panic(
            tokens in proptest::collection::vec(proptest::sample::select(vec![
                "{", "}", "(", ")", "[", "]", ",", ":", " ", "\n", "'descr'", "'shape'",
                "'fortran_order'", "'<f4'", "'>i2'", "'|b1'", "'<c16'", "True", "False",
                "None", "0", "1", "3", "-2", "9223372036854775807", "18446744073709551616",
                "'", "\"", "L", "\\", "\u{e9}",
            ]), 0..40),
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            major in 1u8..4,
        ) {
            let dict: String = tokens.concat();
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&[major, 0]);
            if major == 1 {
                bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
            } else {
                bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
            }
            bytes.extend_from_slice(dict.as_bytes());
            bytes.extend_from_slice(&data);
            match read(&bytes) {
                Ok(tensor) => {
                    let size = usize::from(tensor.dtype().bits / 8) * tensor.numel() as usize;
                    proptest::prop_assert_eq!(size, data.len());
                }
                Err(error) => {
                    proptest::prop_assert_eq!(&*error.kind(), ErrorKind::VALUE_ERROR);
                    proptest::prop_assert!(error.message().starts_with("npy: "));
                    proptest::prop_assert!(error.message().contains(" at byte "));
                }
            }
        }
    }

    #[test]
    fn read_file_names_the_path() {
        let missing = std::env::temp_dir().join("pactum-npy-no-such-file.npy");
        let error = read_file(&missing).unwrap_err();
        assert!(
            error.message().contains("pactum-npy-no-such-file.npy"),
            "{error}"
        );
        let path = std::env::temp_dir().join(format!("pactum-npy-unit-{}.npy", std::process::id()));
        let tensor = Tensor::from_slice(&[1u16, 2, 3], &[3]).unwrap();
        write_file(&path, &tensor).unwrap();
        assert_eq!(
            read_file(&path).unwrap().to_vec::<u16>().unwrap(),
            vec![1, 2, 3]
        );
        std::fs::write(&path, b"\x93NUMPY\x09\x00").unwrap();
        let error = read_file(&path).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::VALUE_ERROR);
        assert!(error.message().contains("version at byte 6"), "{error}");
        assert!(
            error.message().contains(&*path.display().to_string()),
            "{error}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
