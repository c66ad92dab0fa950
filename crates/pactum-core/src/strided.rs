//! Element copies between strided DLPack tensors on the CPU, for the adapters (MLIR memref
//! calls, IREE buffers) and [`Tensor::to_contiguous`](crate::Tensor::to_contiguous).
//!
//! These functions take raw [`DLTensor`]s, whose pointers the type system cannot vouch for,
//! so they are `unsafe`: the caller promises the DLPack contract (a `shape` of `ndim` extents,
//! `strides` of `ndim` entries or NULL for compact row-major, `data + byte_offset` addressing
//! every element those describe).

use pactum_sys::dlpack::DLTensor;

use crate::dtype::DataType;

/// The extents of a DLTensor (empty for rank 0 or a NULL shape).
///
/// # Safety
/// A non-NULL `tensor.shape` must point to `tensor.ndim` extents that outlive the borrow of
/// `tensor`.
pub unsafe fn extents(tensor: &DLTensor) -> &[i64] {
    if tensor.ndim <= 0 || tensor.shape.is_null() {
        return &[];
    }
    // SAFETY: the caller's contract: `ndim` extents at `shape`.
    unsafe { core::slice::from_raw_parts(tensor.shape, tensor.ndim as usize) }
}

/// Writes the strides of a DLTensor, in elements, into `out[..ndim]` (compact row-major
/// strides when the producer gave none).
///
/// # Safety
/// As [`extents`]; a non-NULL `tensor.strides` must point to `tensor.ndim` strides.
///
/// # Panics
/// If `out` is shorter than the tensor's rank.
pub unsafe fn strides_in_elements(tensor: &DLTensor, out: &mut [i64]) {
    // SAFETY: forwarded from the caller.
    let shape = unsafe { extents(tensor) };
    let out = &mut out[..shape.len()];
    if tensor.strides.is_null() {
        let mut running = 1i64;
        for (stride, &dim) in out.iter_mut().zip(shape).rev() {
            *stride = running;
            running = running.wrapping_mul(dim);
        }
    } else {
        // SAFETY: the caller's contract: a producer with strides provides `ndim` of them.
        let strides = unsafe { core::slice::from_raw_parts(tensor.strides, shape.len()) };
        out.copy_from_slice(strides);
    }
}

/// Copies every element of `src` into `dst` (same shape and element size, any strides).
///
/// # Safety
/// Both tensors must be valid CPU tensors of the same shape and element size, `dst` writable,
/// and the two must not overlap unless they are the same elements.
pub unsafe fn copy_elements(src: &DLTensor, dst: &DLTensor) {
    // SAFETY: forwarded from the caller.
    let shape = unsafe { extents(src) };
    let element = DataType::from(src.dtype).element_bytes().unwrap_or(1);
    if shape.contains(&0) {
        return;
    }
    let mut src_strides = vec![0i64; shape.len()];
    let mut dst_strides = vec![0i64; shape.len()];
    // SAFETY: forwarded from the caller; both vectors have room for the rank.
    unsafe {
        strides_in_elements(src, &mut src_strides);
        strides_in_elements(dst, &mut dst_strides);
    }
    let src_base = (src.data as *const u8).wrapping_add(src.byte_offset as usize);
    let dst_base = (dst.data as *mut u8).wrapping_add(dst.byte_offset as usize);
    let mut index = vec![0i64; shape.len()];
    loop {
        let (mut s, mut d) = (0isize, 0isize);
        for axis in 0..shape.len() {
            s += (index[axis] * src_strides[axis]) as isize * element as isize;
            d += (index[axis] * dst_strides[axis]) as isize * element as isize;
        }
        // SAFETY: both offsets address an element inside its tensor (caller's contract).
        unsafe { core::ptr::copy_nonoverlapping(src_base.offset(s), dst_base.offset(d), element) };
        // Odometer increment, last axis fastest.
        let mut axis = shape.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}
