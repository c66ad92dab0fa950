//! IREE's `vmvx` VM module: the microkernels that vmvx executables compiled with
//! `--iree-vmvx-enable-microkernels` import (`vmvx.add.2d.f32`, `vmvx.mmt4d`, `vmvx.pack`, ...).
//!
//! [`vmvx_module`] exports every function of IREE 3.13's module, under its name and with its
//! calling convention (`runtime/src/iree/modules/vmvx/exports.inl`), each a typed function
//! bound with [`NativeModuleBuilder`]. Operands arrive as a `!vm.buffer` with an element
//! offset and element strides (`rIII`: a strided 2-D operand; `rII`: rows of contiguous
//! elements, for `fill` and `mmt4d`), then the sizes. Every element a call touches is
//! checked to lie inside its buffer before anything is read or written, and an output must
//! be writable and hold at least as many elements as it is given. A call that does not fit
//! fails naming the function and the operand, never with a panic: `OUT_OF_RANGE` when the
//! elements reach outside the buffer and `PERMISSION_DENIED` for a read-only output (the
//! codes of IREE's buffer mapping), `INVALID_ARGUMENT` for negative or oversized sizes,
//! strides and offsets and for flags the module does not handle.
//!
//! The semantics are those of IREE's portable microkernels (`runtime/src/iree/builtins/ukernel/`
//! and the module's own elementwise kernels):
//! - elementwise `x32b` (binary) and `x32u` (unary) kernels over 32-bit elements, element
//!   `[i, j]` at `offset + i * stride0 + j * stride1`; integer arithmetic wraps, shift
//!   amounts are taken modulo 32 (as x86's shifts do), and integer division by zero or
//!   `i32::MIN / -1` (undefined in IREE's C) is an error naming the element;
//! - `copy.2d.x8/x16/x32/x64` and `fill.2d.x32` move bits;
//! - `mmt4d`: `out[i, j, i0, j0] (+)= Σ_k Σ_k0 lhs[i, k, i0, k0] * rhs[j, k, j0, k0]` with the
//!   K loop outermost, unfused multiply-add (f32) or wrapping i32 (s8 * s8 -> s32), as IREE's
//!   generic tile function;
//! - `pack`/`unpack`: a 2-D tensor to tiles `[outer0, outer1, tile0, tile1]` and back, with
//!   the transposition flags and padding of IREE's `linalg.pack` kernels.
//!
//! Float arithmetic flushes subnormal operands and results to zero, as IREE's local devices
//! run dispatches (FTZ/DAZ); `abs`, `neg`, copies, fills, pack and unpack move bits only.
//! `query_tile_sizes.2d` answers IREE's portable tile sizes (M 8, K 4, N 8), not those of the
//! host's vector unit: pactum has no architecture-specific tile functions.

use std::sync::{Arc, OnceLock};

use crate::fpu::FlushDenormals;
use crate::status::{StatusCode, StatusError};
use crate::vm::{
    BuiltNativeModule, NativeError, NativeModuleBuilder, NativeParam, Value, VmBuffer,
};

/// The module's name: importers name its functions `vmvx.<function>`.
pub const VMVX_MODULE_NAME: &str = "vmvx";

/// The module's version (IREE's `IREE_VMVX_MODULE_VERSION_LATEST`).
pub const VMVX_MODULE_VERSION: u32 = 0;

/// The `vmvx` module, built once and shared by every context that registers it (it has no
/// state).
pub fn vmvx_module() -> Arc<BuiltNativeModule<()>> {
    static MODULE: OnceLock<Arc<BuiltNativeModule<()>>> = OnceLock::new();
    MODULE.get_or_init(|| Arc::new(build())).clone()
}

// ------------------------------------------------------------------------------- operands

/// A strided 2-D operand (`rIII`): the buffer, the offset of element `[0, 0]` and the strides
/// of both dimensions, all in elements.
#[derive(Clone, Copy, Debug)]
struct Strided2d<'a> {
    buffer: &'a Arc<VmBuffer>,
    offset: i64,
    stride0: i64,
    stride1: i64,
}

impl NativeParam for Strided2d<'_> {
    type Out<'a> = Strided2d<'a>;
    fn cconv(out: &mut String) {
        out.push_str("rIII");
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Strided2d<'a>, NativeError> {
        Ok(Strided2d {
            buffer: <&Arc<VmBuffer>>::read(args, at)?,
            offset: i64::read(args, at)?,
            stride0: i64::read(args, at)?,
            stride1: i64::read(args, at)?,
        })
    }
}

/// An operand of rows (`rII`): the buffer, the offset of the first element and the stride
/// between rows, in elements; the elements of a row are contiguous.
#[derive(Clone, Copy, Debug)]
struct Rows<'a> {
    buffer: &'a Arc<VmBuffer>,
    offset: i64,
    row_stride: i64,
}

impl NativeParam for Rows<'_> {
    type Out<'a> = Rows<'a>;
    fn cconv(out: &mut String) {
        out.push_str("rII");
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Rows<'a>, NativeError> {
        Ok(Rows {
            buffer: <&Arc<VmBuffer>>::read(args, at)?,
            offset: i64::read(args, at)?,
            row_stride: i64::read(args, at)?,
        })
    }
}

impl<'a> Rows<'a> {
    fn strided(self) -> Strided2d<'a> {
        Strided2d {
            buffer: self.buffer,
            offset: self.offset,
            stride0: self.row_stride,
            stride1: 1,
        }
    }
}

fn bad(function: &str, message: impl std::fmt::Display) -> NativeError {
    StatusError::invalid_argument(format!("{function}: {message}"))
}

/// Where the elements of a 2-D operand lie in its buffer, in bytes; checked when made, so
/// [`Layout::at`] of an element inside the sizes is inside the buffer.
#[derive(Clone, Copy, Debug)]
struct Layout {
    start: usize,
    stride0: usize,
    stride1: usize,
    size0: usize,
    size1: usize,
    element: usize,
}

impl Layout {
    /// The byte offset of element `[i, j]` (`i < size0`, `j < size1`).
    fn at(&self, i: usize, j: usize) -> usize {
        self.start + i * self.stride0 + j * self.stride1
    }
}

/// A non-negative `value` as a `usize`.
fn non_negative(function: &str, what: &str, value: i64) -> Result<usize, NativeError> {
    usize::try_from(value).map_err(|_| bad(function, format!("{what} is negative ({value})")))
}

/// The layout of `operand` with `sizes` and `element`-byte elements, every touched element
/// checked to lie inside its buffer.
fn layout(
    function: &str,
    name: &str,
    operand: Strided2d<'_>,
    sizes: [usize; 2],
    element: usize,
) -> Result<Layout, NativeError> {
    let offset = non_negative(function, &format!("{name} offset"), operand.offset)?;
    let stride0 = non_negative(function, &format!("{name} stride 0"), operand.stride0)?;
    let stride1 = non_negative(function, &format!("{name} stride 1"), operand.stride1)?;
    let [size0, size1] = sizes;
    let mut layout = Layout {
        start: 0,
        stride0: 0,
        stride1: 0,
        size0,
        size1,
        element,
    };
    if size0 == 0 || size1 == 0 {
        return Ok(layout);
    }
    let len = operand.buffer.len();
    let end = (size0 - 1)
        .checked_mul(stride0)
        .zip((size1 - 1).checked_mul(stride1))
        .and_then(|(a, b)| a.checked_add(b))
        .and_then(|last| last.checked_add(offset))
        .and_then(|last| last.checked_add(1))
        .and_then(|count| count.checked_mul(element));
    if end.is_none_or(|end| end > len) {
        return Err(StatusError::out_of_range(format!(
            "{function}: {name}: {size0}x{size1} elements of {element} bytes at offset {offset} \
             with strides [{stride0}, {stride1}] do not fit in its buffer of {len} bytes"
        )));
    }
    // Every product below is at most `end`: a dimension of size 1 never uses its stride.
    layout.start = offset * element;
    layout.stride0 = if size0 > 1 { stride0 * element } else { 0 };
    layout.stride1 = if size1 > 1 { stride1 * element } else { 0 };
    Ok(layout)
}

/// The layout of output `operand`: also writable, and holding at least as many elements as
/// it is given (so work and memory stay bounded by the buffer's size).
fn output_layout(
    function: &str,
    name: &str,
    operand: Strided2d<'_>,
    sizes: [usize; 2],
    element: usize,
) -> Result<Layout, NativeError> {
    let layout = layout(function, name, operand, sizes, element)?;
    if !operand.buffer.is_mutable() {
        return Err(StatusError::new(
            StatusCode::PermissionDenied,
            format!("{function}: {name}: the buffer is read-only"),
        ));
    }
    let len = operand.buffer.len();
    let bytes = layout
        .size0
        .checked_mul(layout.size1)
        .and_then(|n| n.checked_mul(element));
    if bytes.is_none_or(|bytes| bytes > len) {
        return Err(StatusError::out_of_range(format!(
            "{function}: {name}: {}x{} elements of {element} bytes are more than its buffer of \
             {len} bytes holds",
            layout.size0, layout.size1
        )));
    }
    Ok(layout)
}

fn buffer_error(function: &str, name: &str, error: impl std::fmt::Display) -> NativeError {
    bad(function, format!("{name}: {error}"))
}

/// Reads row `i` of `layout` from `buffer` into `row`, elements packed.
fn read_row(
    function: &str,
    name: &str,
    buffer: &VmBuffer,
    layout: &Layout,
    i: usize,
    row: &mut Vec<u8>,
) -> Result<(), NativeError> {
    let element = layout.element;
    row.clear();
    row.resize(layout.size1 * element, 0);
    let result = if layout.stride1 == element || layout.size1 == 1 {
        buffer.read(layout.at(i, 0) as u64, row)
    } else {
        row.chunks_exact_mut(element)
            .enumerate()
            .try_for_each(|(j, out)| buffer.read(layout.at(i, j) as u64, out))
    };
    result.map_err(|e| buffer_error(function, name, e))
}

/// Writes `row` (elements packed) as row `i` of `layout` in `buffer`.
fn write_row(
    function: &str,
    name: &str,
    buffer: &VmBuffer,
    layout: &Layout,
    i: usize,
    row: &[u8],
) -> Result<(), NativeError> {
    let element = layout.element;
    let result = if layout.stride1 == element || layout.size1 == 1 {
        buffer.write(layout.at(i, 0) as u64, row)
    } else {
        row.chunks_exact(element)
            .enumerate()
            .try_for_each(|(j, bytes)| buffer.write(layout.at(i, j) as u64, bytes))
    };
    result.map_err(|e| buffer_error(function, name, e))
}

fn sizes(function: &str, size0: i64, size1: i64) -> Result<[usize; 2], NativeError> {
    Ok([
        non_negative(function, "size 0", size0)?,
        non_negative(function, "size 1", size1)?,
    ])
}

/// The little-endian word in the first four bytes of `bytes` (at least four).
fn word(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(word)
}

/// `x`, or zero of its sign when it is subnormal (the FTZ/DAZ of IREE's dispatch threads).
/// Without a branch, so that loops of it vectorise.
#[inline(always)]
fn flush(x: f32) -> f32 {
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    f32::from_bits(if bits & 0x7f80_0000 == 0 { sign } else { bits })
}

// ------------------------------------------------------------------------------- elementwise

/// The binary (`x32b`) kernels.
#[derive(Clone, Copy, Debug)]
enum Binary {
    AddF,
    AddI,
    AndI,
    DivF,
    DivSI,
    DivUI,
    MulF,
    MulI,
    OrI,
    ShlI,
    ShrSI,
    ShrUI,
    SubF,
    SubI,
    XorI,
}

/// `out[j] = f(a[j], b[j])` over rows of packed little-endian words.
#[inline(always)]
fn each_word(a: &[u8], b: &[u8], out: &mut [u8], f: impl Fn(u32, u32) -> u32) {
    for ((o, x), y) in out
        .chunks_exact_mut(4)
        .zip(a.chunks_exact(4))
        .zip(b.chunks_exact(4))
    {
        o.copy_from_slice(&f(word(x), word(y)).to_le_bytes());
    }
}

/// `f`, one FPU instruction, on f32 operands as IREE's kernels compute it under the FPU's
/// flush: bare where the caller holds a [`FlushDenormals::on`] (the FPU's flush also flushes a
/// result below the smallest normal that rounds up to it, which a software flush keeps), its
/// operands and result flushed in software where this build cannot set the FPU's flush.
#[inline(always)]
fn float_words(f: impl Fn(f32, f32) -> f32) -> impl Fn(u32, u32) -> u32 {
    move |a, b| {
        if FlushDenormals::AVAILABLE {
            f(f32::from_bits(a), f32::from_bits(b)).to_bits()
        } else {
            flush(f(flush(f32::from_bits(a)), flush(f32::from_bits(b)))).to_bits()
        }
    }
}

impl Binary {
    /// `out = a op b` over a row of packed words (each `4 * n` bytes), one loop per kernel;
    /// an integer division that cannot be done stops it, naming the element.
    fn apply_row(self, a: &[u8], b: &[u8], out: &mut [u8]) -> Result<(), (usize, &'static str)> {
        match self {
            Binary::AddF => {
                let _fpu = FlushDenormals::on();
                each_word(a, b, out, float_words(|x, y| x + y));
            }
            Binary::SubF => {
                let _fpu = FlushDenormals::on();
                each_word(a, b, out, float_words(|x, y| x - y));
            }
            Binary::MulF => {
                let _fpu = FlushDenormals::on();
                each_word(a, b, out, float_words(|x, y| x * y));
            }
            Binary::DivF => {
                let _fpu = FlushDenormals::on();
                each_word(a, b, out, float_words(|x, y| x / y));
            }
            Binary::AddI => each_word(a, b, out, u32::wrapping_add),
            Binary::SubI => each_word(a, b, out, u32::wrapping_sub),
            Binary::MulI => each_word(a, b, out, u32::wrapping_mul),
            Binary::AndI => each_word(a, b, out, |x, y| x & y),
            Binary::OrI => each_word(a, b, out, |x, y| x | y),
            Binary::XorI => each_word(a, b, out, |x, y| x ^ y),
            Binary::ShlI => each_word(a, b, out, u32::wrapping_shl),
            Binary::ShrUI => each_word(a, b, out, u32::wrapping_shr),
            Binary::ShrSI => each_word(a, b, out, |x, y| (x as i32).wrapping_shr(y) as u32),
            Binary::DivSI | Binary::DivUI => {
                for (j, ((o, x), y)) in out
                    .chunks_exact_mut(4)
                    .zip(a.chunks_exact(4))
                    .zip(b.chunks_exact(4))
                    .enumerate()
                {
                    let v = self.apply(word(x), word(y)).map_err(|e| (j, e))?;
                    o.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        Ok(())
    }

    fn apply(self, a: u32, b: u32) -> Result<u32, &'static str> {
        let float = |op: fn(f32, f32) -> f32| {
            let _fpu = FlushDenormals::on();
            float_words(op)(a, b)
        };
        Ok(match self {
            Binary::AddF => float(|x, y| x + y),
            Binary::SubF => float(|x, y| x - y),
            Binary::MulF => float(|x, y| x * y),
            Binary::DivF => float(|x, y| x / y),
            Binary::AddI => a.wrapping_add(b),
            Binary::SubI => a.wrapping_sub(b),
            Binary::MulI => a.wrapping_mul(b),
            Binary::AndI => a & b,
            Binary::OrI => a | b,
            Binary::XorI => a ^ b,
            Binary::ShlI => a.wrapping_shl(b),
            Binary::ShrUI => a.wrapping_shr(b),
            Binary::ShrSI => (a as i32).wrapping_shr(b) as u32,
            Binary::DivSI => {
                let (x, y) = (a as i32, b as i32);
                if y == 0 {
                    return Err("signed integer division by zero");
                }
                x.checked_div(y)
                    .ok_or("signed integer division overflows (i32::MIN / -1)")?
                    as u32
            }
            Binary::DivUI => a
                .checked_div(b)
                .ok_or("unsigned integer division by zero")?,
        })
    }
}

/// The unary (`x32u`) kernels.
#[derive(Clone, Copy, Debug)]
enum Unary {
    AbsF,
    CeilF,
    Ctlz,
    ExpF,
    FloorF,
    LogF,
    NegF,
    RsqrtF,
}

/// `out[j] = f(a[j])` over a row of packed little-endian words.
#[inline(always)]
fn each_word_unary(a: &[u8], out: &mut [u8], f: impl Fn(u32) -> u32) {
    for (o, x) in out.chunks_exact_mut(4).zip(a.chunks_exact(4)) {
        o.copy_from_slice(&f(word(x)).to_le_bytes());
    }
}

impl Unary {
    /// `out = op a` over a row of packed words, one loop per kernel.
    fn apply_row(self, a: &[u8], out: &mut [u8]) {
        match self {
            Unary::AbsF => each_word_unary(a, out, |x| x & 0x7fff_ffff),
            Unary::NegF => each_word_unary(a, out, |x| x ^ 0x8000_0000),
            Unary::Ctlz => each_word_unary(a, out, u32::leading_zeros),
            op => each_word_unary(a, out, |x| op.apply(x)),
        }
    }

    fn apply(self, a: u32) -> u32 {
        let float = |op: fn(f32) -> f32| flush(op(flush(f32::from_bits(a)))).to_bits();
        match self {
            Unary::AbsF => a & 0x7fff_ffff,
            Unary::NegF => a ^ 0x8000_0000,
            Unary::Ctlz => a.leading_zeros(),
            Unary::CeilF => float(f32::ceil),
            Unary::FloorF => float(f32::floor),
            Unary::ExpF => float(f32::exp),
            Unary::LogF => float(f32::ln),
            Unary::RsqrtF => float(|x| 1.0 / x.sqrt()),
        }
    }
}

fn binary_2d(
    function: &str,
    op: Binary,
    lhs: Strided2d<'_>,
    rhs: Strided2d<'_>,
    out: Strided2d<'_>,
    size0: i64,
    size1: i64,
) -> Result<(), NativeError> {
    let sizes = sizes(function, size0, size1)?;
    let lhs_layout = layout(function, "lhs", lhs, sizes, 4)?;
    let rhs_layout = layout(function, "rhs", rhs, sizes, 4)?;
    let out_layout = output_layout(function, "out", out, sizes, 4)?;
    if sizes.contains(&0) {
        return Ok(());
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut c = vec![0u8; sizes[1] * 4];
    for i in 0..sizes[0] {
        read_row(function, "lhs", lhs.buffer, &lhs_layout, i, &mut a)?;
        read_row(function, "rhs", rhs.buffer, &rhs_layout, i, &mut b)?;
        op.apply_row(&a, &b, &mut c)
            .map_err(|(j, e)| bad(function, format!("element [{i}, {j}]: {e}")))?;
        write_row(function, "out", out.buffer, &out_layout, i, &c)?;
    }
    Ok(())
}

fn unary_2d(
    function: &str,
    op: Unary,
    input: Strided2d<'_>,
    out: Strided2d<'_>,
    size0: i64,
    size1: i64,
) -> Result<(), NativeError> {
    let sizes = sizes(function, size0, size1)?;
    let in_layout = layout(function, "in", input, sizes, 4)?;
    let out_layout = output_layout(function, "out", out, sizes, 4)?;
    if sizes.contains(&0) {
        return Ok(());
    }
    let mut a = Vec::new();
    let mut c = vec![0u8; sizes[1] * 4];
    for i in 0..sizes[0] {
        read_row(function, "in", input.buffer, &in_layout, i, &mut a)?;
        op.apply_row(&a, &mut c);
        write_row(function, "out", out.buffer, &out_layout, i, &c)?;
    }
    Ok(())
}

fn copy_2d(
    function: &str,
    element: usize,
    input: Strided2d<'_>,
    out: Strided2d<'_>,
    size0: i64,
    size1: i64,
) -> Result<(), NativeError> {
    let sizes = sizes(function, size0, size1)?;
    let in_layout = layout(function, "in", input, sizes, element)?;
    let out_layout = output_layout(function, "out", out, sizes, element)?;
    if sizes.contains(&0) {
        return Ok(());
    }
    let mut row = Vec::new();
    for i in 0..sizes[0] {
        read_row(function, "in", input.buffer, &in_layout, i, &mut row)?;
        write_row(function, "out", out.buffer, &out_layout, i, &row)?;
    }
    Ok(())
}

fn fill_2d_x32(value: i32, out: Rows<'_>, size0: i64, size1: i64) -> Result<(), NativeError> {
    const F: &str = "vmvx.fill.2d.x32";
    let sizes = sizes(F, size0, size1)?;
    let layout = output_layout(F, "out", out.strided(), sizes, 4)?;
    if sizes.contains(&0) {
        return Ok(());
    }
    let pattern = value.to_le_bytes();
    for i in 0..sizes[0] {
        out.buffer
            .fill(layout.at(i, 0) as u64, sizes[1] as u64, &pattern)
            .map_err(|e| buffer_error(F, "out", e))?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------- mmt4d

const MMT4D_TYPE_MASK: u32 = 0xFF;
const MMT4D_TYPE_F32F32F32: u32 = 0x01;
const MMT4D_TYPE_S8S8S32: u32 = 0x02;
const MMT4D_ACCUMULATE: u32 = 0x100;
const MMT4D_ALLOW_GENERIC_FALLBACK: u32 = 0x200;
const MMT4D_SKIP_INTERMEDIATE_ROUNDINGS: u32 = 0x400;

/// A size that must be in `0..=max`.
fn bounded(function: &str, what: &str, value: i64, max: i64) -> Result<usize, NativeError> {
    if (0..=max).contains(&value) {
        Ok(value as usize)
    } else {
        Err(bad(
            function,
            format!("{what} {value} is outside 0..={max}"),
        ))
    }
}

#[allow(clippy::too_many_arguments)]
fn mmt4d(
    lhs: Rows<'_>,
    rhs: Rows<'_>,
    out: Rows<'_>,
    m: i64,
    n: i64,
    k: i64,
    m0: i32,
    n0: i32,
    k0: i32,
    flags: i32,
) -> Result<(), NativeError> {
    const F: &str = "vmvx.mmt4d";
    let flags = flags as u32;
    let int8 = match flags & MMT4D_TYPE_MASK {
        MMT4D_TYPE_F32F32F32 => false,
        MMT4D_TYPE_S8S8S32 => true,
        other => {
            return Err(bad(
                F,
                format!(
                    "unhandled element types 0x{other:02x} (flags 0x{flags:x}): the vmvx \
                     module multiplies f32*f32->f32 (0x01) and s8*s8->s32 (0x02)"
                ),
            ));
        }
    };
    let known = MMT4D_TYPE_MASK
        | MMT4D_ACCUMULATE
        | MMT4D_ALLOW_GENERIC_FALLBACK
        | MMT4D_SKIP_INTERMEDIATE_ROUNDINGS;
    if flags & !known != 0 {
        return Err(bad(F, format!("unknown flags 0x{:x}", flags & !known)));
    }
    let accumulate = flags & MMT4D_ACCUMULATE != 0;
    let max = i64::from(i32::MAX);
    let (m, n, k) = (
        bounded(F, "M", m, max)?,
        bounded(F, "N", n, max)?,
        bounded(F, "K", k, max)?,
    );
    let tile_max = i64::from(i16::MAX);
    let (m0, n0, k0) = (
        bounded(F, "M0", m0.into(), tile_max)?,
        bounded(F, "N0", n0.into(), tile_max)?,
        bounded(F, "K0", k0.into(), tile_max)?,
    );
    let in_size = if int8 { 1 } else { 4 };
    // Tiles are at most 2^30 elements and K below 2^31, so the products fit in 64 bits.
    let lhs_row = k * m0 * k0;
    let rhs_row = k * n0 * k0;
    let out_tile = m0 * n0;
    let lhs_layout = layout(F, "lhs", lhs.strided(), [m, lhs_row], in_size)?;
    let rhs_layout = layout(F, "rhs", rhs.strided(), [n, rhs_row], in_size)?;
    let out_layout = output_layout(F, "out", out.strided(), [m, n * out_tile], 4)?;
    // Nothing to write (IREE returns early for M or N of zero too), or nothing to add.
    if m == 0 || n == 0 || out_tile == 0 || (k == 0 && accumulate) {
        return Ok(());
    }
    // A K0 of zero makes every K step empty: the sums are over nothing.
    let k = if k0 == 0 { 0 } else { k };
    let mut lhs_bytes = Vec::new();
    let mut out_bytes = Vec::new();
    if int8 {
        let mut rhs_bytes = Vec::new();
        for i in 0..m {
            read_row(F, "lhs", lhs.buffer, &lhs_layout, i, &mut lhs_bytes)?;
            read_out_row(&out_layout, out, i, accumulate, &mut out_bytes)?;
            for j in 0..n {
                read_row(F, "rhs", rhs.buffer, &rhs_layout, j, &mut rhs_bytes)?;
                let tile = &mut out_bytes[j * out_tile * 4..(j + 1) * out_tile * 4];
                mmt4d_tile_s8(tile, &lhs_bytes, &rhs_bytes, [m0, n0, k0], k, accumulate);
            }
            write_row(F, "out", out.buffer, &out_layout, i, &out_bytes)?;
        }
        return Ok(());
    }
    // Every rhs row is read once, flushed, and stored with each K step's tile transposed
    // (`[k][k0][n0]`), so the tile kernel runs along N0 over contiguous elements.
    let mut rhs_t = vec![0f32; n * rhs_row];
    let mut rhs_bytes = Vec::new();
    for (j, row_t) in rhs_t.chunks_exact_mut(rhs_row.max(1)).enumerate().take(n) {
        read_row(F, "rhs", rhs.buffer, &rhs_layout, j, &mut rhs_bytes)?;
        for (at, w) in words(&rhs_bytes).enumerate() {
            let (step, j0, c) = (at / (n0 * k0), at / k0 % n0, at % k0);
            row_t[step * n0 * k0 + c * n0 + j0] = flush(f32::from_bits(w));
        }
    }
    let mut lhs_f32 = Vec::with_capacity(lhs_row);
    let mut acc = vec![0f32; out_tile];
    for i in 0..m {
        read_row(F, "lhs", lhs.buffer, &lhs_layout, i, &mut lhs_bytes)?;
        lhs_f32.clear();
        lhs_f32.extend(words(&lhs_bytes).map(|w| flush(f32::from_bits(w))));
        read_out_row(&out_layout, out, i, accumulate, &mut out_bytes)?;
        for j in 0..n {
            let tile = &mut out_bytes[j * out_tile * 4..(j + 1) * out_tile * 4];
            for (a, cell) in acc.iter_mut().zip(words(tile)) {
                *a = if accumulate {
                    flush(f32::from_bits(cell))
                } else {
                    0.0
                };
            }
            let rhs_j = &rhs_t[j * rhs_row..(j + 1) * rhs_row];
            let fpu = FlushDenormals::on();
            mmt4d_tile_f32(&mut acc, &lhs_f32, rhs_j, [m0, n0, k0], k);
            drop(fpu);
            for (cell, a) in tile.chunks_exact_mut(4).zip(&acc) {
                cell.copy_from_slice(&a.to_le_bytes());
            }
        }
        write_row(F, "out", out.buffer, &out_layout, i, &out_bytes)?;
    }
    Ok(())
}

/// Row `i` of the output into `row`: its elements to add to, or zeros.
fn read_out_row(
    layout: &Layout,
    out: Rows<'_>,
    i: usize,
    accumulate: bool,
    row: &mut Vec<u8>,
) -> Result<(), NativeError> {
    if accumulate {
        read_row("vmvx.mmt4d", "out", out.buffer, layout, i, row)
    } else {
        row.clear();
        row.resize(layout.size1 * 4, 0);
        Ok(())
    }
}

/// One `m0 x n0` f32 tile, `acc[i0 * n0 + j0]`, of `lhs` (`[k][m0][k0]`) times `rhs_t` (`[k]
/// [k0][n0]`, each step transposed): each cell sums in IREE's generic order (K steps, then
/// K0, one unfused multiply and one add each, each flushed: by the FPU, whose flush the caller
/// holds, where this build can set it, as IREE's kernel runs), the N0 cells of a row side by side.
fn mmt4d_tile_f32(acc: &mut [f32], lhs: &[f32], rhs_t: &[f32], [m0, n0, k0]: [usize; 3], k: usize) {
    if n0 == 0 {
        return;
    }
    for step in 0..k {
        let l_step = &lhs[step * m0 * k0..][..m0 * k0];
        let r_step = &rhs_t[step * n0 * k0..][..n0 * k0];
        for c in 0..k0 {
            let r = &r_step[c * n0..][..n0];
            for (i0, a) in acc.chunks_exact_mut(n0).enumerate().take(m0) {
                let x = l_step[i0 * k0 + c];
                for (a, &y) in a.iter_mut().zip(r) {
                    *a = if FlushDenormals::AVAILABLE {
                        *a + x * y
                    } else {
                        flush(*a + flush(x * y))
                    };
                }
            }
        }
    }
}

/// One `m0 x n0` s8*s8->s32 tile, wrapping.
fn mmt4d_tile_s8(
    tile: &mut [u8],
    lhs: &[u8],
    rhs: &[u8],
    [m0, n0, k0]: [usize; 3],
    k: usize,
    accumulate: bool,
) {
    for i0 in 0..m0 {
        for j0 in 0..n0 {
            let cell = &mut tile[(i0 * n0 + j0) * 4..][..4];
            let mut acc = if accumulate { word(cell) as i32 } else { 0 };
            for kk in 0..k {
                let l = &lhs[kk * m0 * k0 + i0 * k0..][..k0];
                let r = &rhs[kk * n0 * k0 + j0 * k0..][..k0];
                for (&x, &y) in l.iter().zip(r) {
                    let product = i32::from(x as i8) * i32::from(y as i8);
                    acc = acc.wrapping_add(product);
                }
            }
            cell.copy_from_slice(&acc.to_le_bytes());
        }
    }
}

// ------------------------------------------------------------------------------- pack, unpack

const PACK_TYPE_MASK: u32 = 0xFF;
const PACK_TYPE_F32F32: u32 = 0x01;
const PACK_TYPE_I8I8: u32 = 0x02;
const PACK_TYPE_I32I32: u32 = 0x03;
const PACK_TRANSPOSE_INNER: u32 = 0x100;
const PACK_TRANSPOSE_OUTER: u32 = 0x200;

/// The element size of a pack or unpack by its flags, `i8` allowed or not.
fn pack_element(function: &str, flags: u32, with_i8: bool) -> Result<usize, NativeError> {
    let unknown = flags & !(PACK_TYPE_MASK | PACK_TRANSPOSE_INNER | PACK_TRANSPOSE_OUTER);
    if unknown != 0 {
        return Err(bad(function, format!("unknown flags 0x{unknown:x}")));
    }
    match flags & PACK_TYPE_MASK {
        PACK_TYPE_F32F32 | PACK_TYPE_I32I32 => Ok(4),
        PACK_TYPE_I8I8 if with_i8 => Ok(1),
        other => Err(bad(
            function,
            format!(
                "unhandled element type 0x{other:02x} (flags 0x{flags:x}): the vmvx module \
                 moves {} elements",
                if with_i8 {
                    "f32 (0x01), i8 (0x02) and i32 (0x03)"
                } else {
                    "f32 (0x01) and i32 (0x03)"
                }
            ),
        )),
    }
}

/// The tiled side of a pack or unpack: `[outer0, outer1, tile0, tile1]` as stored, the tile
/// sizes in the orientation of the 2-D side (after the transpositions the flags ask for), and
/// the transpositions.
#[derive(Clone, Copy, Debug)]
struct Tiling {
    stored: [usize; 4],
    tile: [usize; 2],
    transpose_outer: bool,
    transpose_inner: bool,
}

impl Tiling {
    fn new(
        function: &str,
        sizes: [i64; 4],
        stride1: i64,
        flags: u32,
        plain: [usize; 2],
    ) -> Result<Tiling, NativeError> {
        let mut stored = [0; 4];
        for (d, (out, size)) in stored.iter_mut().zip(sizes).enumerate() {
            *out = non_negative(function, &format!("tiled size {d}"), size)?;
        }
        let tile_len = stored[2].checked_mul(stored[3]);
        if tile_len.is_none_or(|t| i64::try_from(t) != Ok(stride1)) {
            return Err(bad(
                function,
                format!(
                    "the tiled operand's stride 1 ({stride1}) is not its tile size {}x{}",
                    stored[2], stored[3]
                ),
            ));
        }
        let transpose_outer = flags & PACK_TRANSPOSE_OUTER != 0;
        let transpose_inner = flags & PACK_TRANSPOSE_INNER != 0;
        let swap = |[a, b]: [usize; 2], yes: bool| if yes { [b, a] } else { [a, b] };
        let outer = swap([stored[0], stored[1]], transpose_outer);
        let tile = swap([stored[2], stored[3]], transpose_inner);
        for d in 0..2 {
            if outer[d]
                .checked_mul(tile[d])
                .is_none_or(|covered| covered < plain[d])
            {
                return Err(bad(
                    function,
                    format!(
                        "{} tiles of {} do not cover dimension {d} of size {}",
                        outer[d], tile[d], plain[d]
                    ),
                ));
            }
        }
        Ok(Tiling {
            stored,
            tile,
            transpose_outer,
            transpose_inner,
        })
    }

    fn is_empty(&self) -> bool {
        self.stored.contains(&0)
    }

    /// The stored position `[o0, o1, p0, p1]` of element `[r, c]` of the 2-D side (inside
    /// the tiles), as an offset from the start of row `o0` of the tiled side.
    fn locate(&self, r: usize, c: usize) -> (usize, usize) {
        let (i, a) = (r / self.tile[0], r % self.tile[0]);
        let (j, b) = (c / self.tile[1], c % self.tile[1]);
        let (o0, o1) = if self.transpose_outer { (j, i) } else { (i, j) };
        let (p0, p1) = if self.transpose_inner { (b, a) } else { (a, b) };
        let tile_len = self.stored[2] * self.stored[3];
        (o0, o1 * tile_len + p0 * self.stored[3] + p1)
    }

    /// The element `[r, c]` of the 2-D side stored at `[o0, o1, p0, p1]`.
    fn source(&self, [o0, o1, p0, p1]: [usize; 4]) -> (usize, usize) {
        let (i, j) = if self.transpose_outer {
            (o1, o0)
        } else {
            (o0, o1)
        };
        let (a, b) = if self.transpose_inner {
            (p1, p0)
        } else {
            (p0, p1)
        };
        (i * self.tile[0] + a, j * self.tile[1] + b)
    }
}

#[allow(clippy::too_many_arguments)]
fn pack(
    input: Strided2d<'_>,
    out: Strided2d<'_>,
    in_size0: i64,
    in_size1: i64,
    out_size0: i64,
    out_size1: i64,
    out_size2: i64,
    out_size3: i64,
    padding: i64,
    flags: i32,
) -> Result<(), NativeError> {
    const F: &str = "vmvx.pack";
    let flags = flags as u32;
    let element = pack_element(F, flags, true)?;
    let in_sizes = sizes(F, in_size0, in_size1)?;
    let tiling = Tiling::new(
        F,
        [out_size0, out_size1, out_size2, out_size3],
        out.stride1,
        flags,
        in_sizes,
    )?;
    let [rows, outer1, tile0, tile1] = tiling.stored;
    let row_len = outer1
        .checked_mul(tile0 * tile1)
        .ok_or_else(|| bad(F, "the tiled output is too large"))?;
    let rows_operand = Strided2d { stride1: 1, ..out };
    let out_layout = output_layout(F, "out", rows_operand, [rows, row_len], element)?;
    let in_layout = layout(F, "in", input, in_sizes, element)?;
    if tiling.is_empty() {
        return Ok(());
    }
    let padding_bytes = padding.to_le_bytes();
    let padding = &padding_bytes[..element];
    // The input read once, rows packed: the tiles cover it, so it holds at most as many
    // elements as the output.
    let width = in_sizes[1] * element;
    let mut plain = Vec::new();
    let mut in_row = Vec::new();
    for r in 0..in_sizes[0] {
        read_row(F, "in", input.buffer, &in_layout, r, &mut in_row)?;
        plain.extend_from_slice(&in_row);
    }
    let mut row = vec![0u8; row_len * element];
    for o0 in 0..rows {
        let mut at = 0;
        for o1 in 0..outer1 {
            for p0 in 0..tile0 {
                for p1 in 0..tile1 {
                    let (r, c) = tiling.source([o0, o1, p0, p1]);
                    let cell = &mut row[at..at + element];
                    if r < in_sizes[0] && c < in_sizes[1] {
                        cell.copy_from_slice(&plain[r * width + c * element..][..element]);
                    } else {
                        cell.copy_from_slice(padding);
                    }
                    at += element;
                }
            }
        }
        write_row(F, "out", out.buffer, &out_layout, o0, &row)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn unpack(
    input: Strided2d<'_>,
    out: Strided2d<'_>,
    in_size0: i64,
    in_size1: i64,
    in_size2: i64,
    in_size3: i64,
    out_size0: i64,
    out_size1: i64,
    flags: i32,
) -> Result<(), NativeError> {
    const F: &str = "vmvx.unpack";
    let flags = flags as u32;
    let element = pack_element(F, flags, false)?;
    let out_sizes = sizes(F, out_size0, out_size1)?;
    let tiling = Tiling::new(
        F,
        [in_size0, in_size1, in_size2, in_size3],
        input.stride1,
        flags,
        out_sizes,
    )?;
    let [rows, outer1, tile0, tile1] = tiling.stored;
    let row_len = outer1
        .checked_mul(tile0 * tile1)
        .ok_or_else(|| bad(F, "the tiled input is too large"))?;
    let rows_operand = Strided2d {
        stride1: 1,
        ..input
    };
    let in_layout = layout(F, "in", rows_operand, [rows, row_len], element)?;
    let out_layout = output_layout(F, "out", out, out_sizes, element)?;
    if out_sizes.contains(&0) {
        return Ok(());
    }
    let mut row = vec![0u8; out_sizes[1] * element];
    for r in 0..out_sizes[0] {
        for (c, cell) in row.chunks_exact_mut(element).enumerate() {
            let (o0, at) = tiling.locate(r, c);
            let byte = in_layout.at(o0, 0) + at * element;
            input
                .buffer
                .read(byte as u64, cell)
                .map_err(|e| buffer_error(F, "in", e))?;
        }
        write_row(F, "out", out.buffer, &out_layout, r, &row)?;
    }
    Ok(())
}

// ------------------------------------------------------------------------------- tile sizes

const QUERY_ROLE_MASK: u32 = 0xFF;
const QUERY_ROLE_LHS: u32 = 0x01;
const QUERY_ROLE_RHS: u32 = 0x02;
const QUERY_ROLE_RESULT: u32 = 0x03;
const QUERY_OPERATION_MASK: u32 = 0xFF00;
/// `MATMUL_F32F32F32` (0x0100) through `MATMUL_BF16BF16BF16` (0x0600).
const QUERY_MATMULS: std::ops::RangeInclusive<u32> = 0x0100..=0x0600;

/// IREE's portable matmul tile sizes `[M, K, N]`.
const GENERIC_MATMUL_TILE: [i64; 3] = [8, 4, 8];

fn query_tile_sizes_2d(flags: i32) -> Result<(i64, i64), NativeError> {
    const F: &str = "vmvx.query_tile_sizes.2d";
    let flags = flags as u32;
    let unknown = flags & !(QUERY_ROLE_MASK | QUERY_OPERATION_MASK);
    let operation = flags & QUERY_OPERATION_MASK;
    if unknown != 0 || !QUERY_MATMULS.contains(&operation) {
        return Err(bad(
            F,
            format!("flags 0x{flags:x} name no matmul operation (0x0100..=0x0600)"),
        ));
    }
    let [m, k, n] = GENERIC_MATMUL_TILE;
    match flags & QUERY_ROLE_MASK {
        QUERY_ROLE_LHS => Ok((m, k)),
        QUERY_ROLE_RHS => Ok((n, k)),
        QUERY_ROLE_RESULT => Ok((m, n)),
        role => Err(bad(
            F,
            format!("operand role 0x{role:02x} is none of lhs (1), rhs (2), result (3)"),
        )),
    }
}

// ------------------------------------------------------------------------------- the module

fn build() -> BuiltNativeModule<()> {
    const BINARY: &str = "0rIIIrIIIrIIIII_v";
    const UNARY: &str = "0rIIIrIIIII_v";
    macro_rules! binary {
        ($builder:expr, $name:literal, $op:expr) => {
            $builder.function(
                $name,
                BINARY,
                |_: &(),
                 lhs: Strided2d<'_>,
                 rhs: Strided2d<'_>,
                 out: Strided2d<'_>,
                 size0: i64,
                 size1: i64| {
                    binary_2d(concat!("vmvx.", $name), $op, lhs, rhs, out, size0, size1)
                },
            )
        };
    }
    macro_rules! unary {
        ($builder:expr, $name:literal, $op:expr) => {
            $builder.function(
                $name,
                UNARY,
                |_: &(), input: Strided2d<'_>, out: Strided2d<'_>, size0: i64, size1: i64| {
                    unary_2d(concat!("vmvx.", $name), $op, input, out, size0, size1)
                },
            )
        };
    }
    macro_rules! copy {
        ($builder:expr, $name:literal, $element:expr) => {
            $builder.function(
                $name,
                UNARY,
                |_: &(), input: Strided2d<'_>, out: Strided2d<'_>, size0: i64, size1: i64| {
                    copy_2d(concat!("vmvx.", $name), $element, input, out, size0, size1)
                },
            )
        };
    }
    // In the order of IREE's export table (sorted by name).
    let b = NativeModuleBuilder::new(VMVX_MODULE_NAME, VMVX_MODULE_VERSION);
    let b = unary!(b, "abs.2d.f32", Unary::AbsF);
    let b = binary!(b, "add.2d.f32", Binary::AddF);
    let b = binary!(b, "add.2d.i32", Binary::AddI);
    let b = binary!(b, "and.2d.i32", Binary::AndI);
    let b = unary!(b, "ceil.2d.f32", Unary::CeilF);
    let b = copy!(b, "copy.2d.x16", 2);
    let b = copy!(b, "copy.2d.x32", 4);
    let b = copy!(b, "copy.2d.x64", 8);
    let b = copy!(b, "copy.2d.x8", 1);
    let b = unary!(b, "ctlz.2d.i32", Unary::Ctlz);
    let b = binary!(b, "div.2d.f32", Binary::DivF);
    let b = binary!(b, "divs.2d.i32", Binary::DivSI);
    let b = binary!(b, "divu.2d.i32", Binary::DivUI);
    let b = unary!(b, "exp.2d.f32", Unary::ExpF);
    let b = b.function(
        "fill.2d.x32",
        "0irIIII_v",
        |_: &(), value: i32, out: Rows<'_>, size0: i64, size1: i64| {
            fill_2d_x32(value, out, size0, size1)
        },
    );
    let b = unary!(b, "floor.2d.f32", Unary::FloorF);
    let b = unary!(b, "log.2d.f32", Unary::LogF);
    let b = b.function(
        "mmt4d",
        "0rIIrIIrIIIIIiiii_v",
        |_: &(),
         lhs: Rows<'_>,
         rhs: Rows<'_>,
         out: Rows<'_>,
         m: i64,
         n: i64,
         k: i64,
         m0: i32,
         n0: i32,
         k0: i32,
         flags: i32| mmt4d(lhs, rhs, out, m, n, k, m0, n0, k0, flags),
    );
    let b = binary!(b, "mul.2d.f32", Binary::MulF);
    let b = binary!(b, "mul.2d.i32", Binary::MulI);
    let b = unary!(b, "neg.2d.f32", Unary::NegF);
    let b = binary!(b, "or.2d.i32", Binary::OrI);
    let b = b.function(
        "pack",
        "0rIIIrIIIIIIIIIIi_v",
        |_: &(),
         input: Strided2d<'_>,
         out: Strided2d<'_>,
         in_size0: i64,
         in_size1: i64,
         out_size0: i64,
         out_size1: i64,
         out_size2: i64,
         out_size3: i64,
         padding: i64,
         flags: i32| {
            pack(
                input, out, in_size0, in_size1, out_size0, out_size1, out_size2, out_size3,
                padding, flags,
            )
        },
    );
    let b = b.function(
        "query_tile_sizes.2d",
        "0IIi_II",
        |_: &(), _size0: i64, _size1: i64, flags: i32| query_tile_sizes_2d(flags),
    );
    let b = unary!(b, "rsqrt.2d.f32", Unary::RsqrtF);
    let b = binary!(b, "shl.2d.i32", Binary::ShlI);
    let b = binary!(b, "shrs.2d.i32", Binary::ShrSI);
    let b = binary!(b, "shru.2d.i32", Binary::ShrUI);
    let b = binary!(b, "sub.2d.f32", Binary::SubF);
    let b = binary!(b, "sub.2d.i32", Binary::SubI);
    let b = b.function(
        "unpack",
        "0rIIIrIIIIIIIIIi_v",
        |_: &(),
         input: Strided2d<'_>,
         out: Strided2d<'_>,
         in_size0: i64,
         in_size1: i64,
         in_size2: i64,
         in_size3: i64,
         out_size0: i64,
         out_size1: i64,
         flags: i32| {
            unpack(
                input, out, in_size0, in_size1, in_size2, in_size3, out_size0, out_size1, flags,
            )
        },
    );
    let b = binary!(b, "xor.2d.i32", Binary::XorI);
    b.build(())
}
