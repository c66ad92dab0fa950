//! MLIR's memref calling convention (`mlir-memref-calling-convention.md`, checked against what
//! MLIR 22 emits: `../shared/research/mlir_facts.md` §4).
//!
//! A ranked memref travels as a pointer to [`MemRefDescriptor`]: the allocated pointer (the one
//! to free), the aligned pointer (the one accessed), then offset, sizes and strides in
//! **elements**, all `intptr_t`. A rank-0 descriptor has no arrays (24 bytes). An unranked
//! memref travels as a pointer to [`UnrankedMemRefDescriptor`].

use core::ffi::c_void;

/// A ranked memref descriptor of static rank `RANK`
/// (`{T* allocated, T* aligned, intptr_t offset, intptr_t sizes[RANK], intptr_t strides[RANK]}`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemRefDescriptor<const RANK: usize> {
    /// The pointer the buffer was allocated at (what `free` takes); never accessed.
    pub allocated: *mut c_void,
    /// The pointer element 0 is addressed from (`aligned + offset` is the first element).
    pub aligned: *mut c_void,
    /// Offset of the first element from `aligned`, in elements.
    pub offset: isize,
    /// Extents, outermost first.
    pub sizes: [isize; RANK],
    /// Strides in elements.
    pub strides: [isize; RANK],
}

/// An unranked memref: its rank and a pointer to a ranked descriptor of that rank.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UnrankedMemRefDescriptor {
    /// The rank of the descriptor `descriptor` points to.
    pub rank: i64,
    /// The ranked descriptor. When a function *returns* an unranked memref, MLIR copies the
    /// descriptor into a fresh `malloc` block that the caller must `free`.
    pub descriptor: *mut c_void,
}

/// Bytes of a ranked descriptor of `rank` with 64-bit `intptr_t`: 24 + 16 × rank.
pub const fn ranked_descriptor_bytes(rank: usize) -> usize {
    3 * 8 + 2 * 8 * rank
}

/// The value MLIR stores as the allocated pointer of a memref that views a global constant
/// (`memref.get_global`): such memory belongs to the library and must never be freed.
pub const GLOBAL_MEMREF_ALLOCATED: usize = 0xdead_beef;
