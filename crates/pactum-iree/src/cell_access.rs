//! Reads and writes of 2, 4 or 8 adjacent byte cells as one machine access.
//!
//! VM buffers and HAL host memory are slices of `AtomicU8`, so that workgroups of one dispatch
//! racing on the same bytes (a hostile module can make them) are not undefined behaviour.
//! Reading an `f32` element as four relaxed byte loads costs a dozen instructions where IREE's
//! C does one load, and a wider Rust atomic over the same cells is not an option: racing
//! atomic accesses of different sizes to the same bytes are undefined unless both are reads,
//! and other code accesses these cells byte by byte.
//!
//! On x86-64 these functions therefore access the cells with one `mov` written in inline
//! assembly, which is outside Rust's memory model: the compiler treats the block as an opaque
//! operation on the memory it is given. What the block does is one of the things `N` relaxed
//! byte accesses in a row may do: every x86-64 load or store of 2, 4 or 8 bytes (aligned or
//! not, even across a cache line) reads or writes each byte atomically, so any other thread
//! sees, and the load returns, each byte either before or after every racing byte write, which
//! is exactly the set of outcomes of the byte-wise code (tearing between bytes included). This
//! is the argument of the C++ proposal P1478 (`atomic_load_per_byte_memcpy`) and of the
//! `atomic-memcpy` crate. On other targets the functions are the byte-wise loop itself.
//!
//! The functions take references to the cells, so the bounds are the caller's `&[AtomicU8; N]`
//! and no pointer arithmetic happens here.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// The `N` bytes of `cells`, each as a relaxed load would read it, read as one access where
/// the target allows (`N` of 2, 4 or 8 on x86-64).
#[inline(always)]
pub fn load<const N: usize>(cells: &[AtomicU8; N]) -> [u8; N] {
    #[cfg(target_arch = "x86_64")]
    {
        let mut out = [0u8; N];
        // `N` is a constant: each function is one branch of this `match`.
        match N {
            2 => out.copy_from_slice(&x86::load2(as_array(cells)).to_le_bytes()),
            4 => out.copy_from_slice(&x86::load4(as_array(cells)).to_le_bytes()),
            8 => out.copy_from_slice(&x86::load8(as_array(cells)).to_le_bytes()),
            _ => return std::array::from_fn(|i| cells[i].load(Relaxed)),
        }
        out
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::array::from_fn(|i| cells[i].load(Relaxed))
    }
}

/// Writes `bytes` to `cells`, each as a relaxed store would, as one access where the target
/// allows (`N` of 2, 4 or 8 on x86-64).
#[inline(always)]
pub fn store<const N: usize>(cells: &[AtomicU8; N], bytes: [u8; N]) {
    #[cfg(target_arch = "x86_64")]
    {
        match N {
            2 => x86::store2(as_array(cells), u16::from_le_bytes(as_bytes(&bytes))),
            4 => x86::store4(as_array(cells), u32::from_le_bytes(as_bytes(&bytes))),
            8 => x86::store8(as_array(cells), u64::from_le_bytes(as_bytes(&bytes))),
            _ => {
                for (c, b) in cells.iter().zip(bytes) {
                    c.store(b, Relaxed);
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        for (c, b) in cells.iter().zip(bytes) {
            c.store(b, Relaxed);
        }
    }
}

/// Element `index` of `cells` read as an array of `N`-cell elements: the cells
/// `index * N .. index * N + N`, or `None` when they are not all inside `cells`.
///
/// One comparison (`index < len / N`, which also rules out an overflowing `index * N`), where
/// slicing `index * N..index * N + N` costs an overflow check and two bounds checks: the
/// interpreter's buffer loads and stores run this once per element.
#[inline(always)]
pub fn cell_element<const N: usize>(cells: &[AtomicU8], index: usize) -> Option<&[AtomicU8; N]> {
    if N == 0 || index >= cells.len() / N {
        return None;
    }
    // `index < len / N`, so `index * N + N <= len`: the `N` cells from `index * N` are inside
    // `cells` (and `index * N` does not overflow), and an array of `N` cells has the layout
    // of `N` consecutive cells.
    // SAFETY: an in-bounds, aligned (align 1) pointer to `N` live cells, borrowed as `cells` is.
    Some(unsafe { &*cells.as_ptr().add(index * N).cast::<[AtomicU8; N]>() })
}

/// Element `index` of `bytes` read as an array of `N`-byte elements, as [`cell_element`]
/// (a read-only buffer's bytes).
#[inline(always)]
pub fn byte_element<const N: usize>(bytes: &[u8], index: usize) -> Option<&[u8; N]> {
    if N == 0 || index >= bytes.len() / N {
        return None;
    }
    // SAFETY: as in `cell_element`: `index * N + N <= len`, so `N` in-bounds bytes (align 1),
    // borrowed as `bytes` is.
    Some(unsafe { &*bytes.as_ptr().add(index * N).cast::<[u8; N]>() })
}

/// `cells` as an array of `M` cells, where `M` is the same constant as `N` (the callers'
/// `match N` makes sure; the conversion is then free and cannot fail).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn as_array<const N: usize, const M: usize>(cells: &[AtomicU8; N]) -> &[AtomicU8; M] {
    match <&[AtomicU8; M]>::try_from(&cells[..]) {
        Ok(cells) => cells,
        Err(_) => unreachable!("called with M == N"),
    }
}

/// `bytes` as an array of `M` bytes, where `M` is the same constant as `N`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn as_bytes<const N: usize, const M: usize>(bytes: &[u8; N]) -> [u8; M] {
    match <[u8; M]>::try_from(&bytes[..]) {
        Ok(bytes) => bytes,
        Err(_) => unreachable!("called with M == N"),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::asm;
    use std::sync::atomic::AtomicU8;

    #[inline(always)]
    pub(super) fn load2(cells: &[AtomicU8; 2]) -> u16 {
        let value: u16;
        // SAFETY: `cells` is a live reference to 2 cells, so the 2 bytes read are in bounds
        // and readable; one x86-64 load reads each byte atomically, which is what 2 relaxed
        // byte loads may do (module docs), and the block writes no memory and no flags.
        unsafe {
            asm!("mov {v:x}, word ptr [{p}]", p = in(reg) cells.as_ptr(), v = lateout(reg) value,
                 options(nostack, preserves_flags, readonly));
        }
        value
    }

    #[inline(always)]
    pub(super) fn load4(cells: &[AtomicU8; 4]) -> u32 {
        let value: u32;
        // SAFETY: as `load2`, for 4 cells.
        unsafe {
            asm!("mov {v:e}, dword ptr [{p}]", p = in(reg) cells.as_ptr(), v = lateout(reg) value,
                 options(nostack, preserves_flags, readonly));
        }
        value
    }

    #[inline(always)]
    pub(super) fn load8(cells: &[AtomicU8; 8]) -> u64 {
        let value: u64;
        // SAFETY: as `load2`, for 8 cells.
        unsafe {
            asm!("mov {v}, qword ptr [{p}]", p = in(reg) cells.as_ptr(), v = lateout(reg) value,
                 options(nostack, preserves_flags, readonly));
        }
        value
    }

    #[inline(always)]
    pub(super) fn store2(cells: &[AtomicU8; 2], value: u16) {
        // `cells` is a live shared reference to 2 cells with interior mutability, so writing
        // their 2 bytes is allowed and in bounds; one x86-64 store writes each byte atomically,
        // which is what 2 relaxed byte stores may do (module docs).
        // SAFETY: in-bounds writes of cells, as said above; no other memory, no flags.
        unsafe {
            asm!("mov word ptr [{p}], {v:x}", p = in(reg) cells.as_ptr(), v = in(reg) value,
                 options(nostack, preserves_flags));
        }
    }

    #[inline(always)]
    pub(super) fn store4(cells: &[AtomicU8; 4], value: u32) {
        // SAFETY: as `store2`, for 4 cells.
        unsafe {
            asm!("mov dword ptr [{p}], {v:e}", p = in(reg) cells.as_ptr(), v = in(reg) value,
                 options(nostack, preserves_flags));
        }
    }

    #[inline(always)]
    pub(super) fn store8(cells: &[AtomicU8; 8], value: u64) {
        // SAFETY: as `store2`, for 8 cells.
        unsafe {
            asm!("mov qword ptr [{p}], {v}", p = in(reg) cells.as_ptr(), v = in(reg) value,
                 options(nostack, preserves_flags));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(len: usize) -> Vec<AtomicU8> {
        (0..len).map(|i| AtomicU8::new(i as u8 ^ 0x5a)).collect()
    }

    fn window<const N: usize>(cells: &[AtomicU8], at: usize) -> &[AtomicU8; N] {
        cells[at..at + N].try_into().unwrap()
    }

    fn bytewise<const N: usize>(cells: &[AtomicU8], at: usize) -> [u8; N] {
        std::array::from_fn(|i| cells[at + i].load(Relaxed))
    }

    /// Every width at every offset of two cache lines (so unaligned and line-crossing
    /// accesses too) reads what byte loads read and writes only its own bytes.
    fn round_trip<const N: usize>() {
        for at in 0..=128 - N {
            let memory = cells(128);
            assert_eq!(
                load::<N>(window(&memory, at)),
                bytewise::<N>(&memory, at),
                "at {at}"
            );
            let written: [u8; N] = std::array::from_fn(|i| 0xc0 | i as u8);
            store::<N>(window(&memory, at), written);
            assert_eq!(bytewise::<N>(&memory, at), written, "at {at}");
            for (i, cell) in memory.iter().enumerate() {
                if !(at..at + N).contains(&i) {
                    assert_eq!(
                        cell.load(Relaxed),
                        i as u8 ^ 0x5a,
                        "byte {i} after a store at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn wide_accesses_match_byte_accesses_at_every_offset() {
        round_trip::<1>();
        round_trip::<2>();
        round_trip::<3>();
        round_trip::<4>();
        round_trip::<8>();
    }

    /// An element is found exactly when all its bytes are inside the slice, whatever the
    /// slice's length (multiples of the width or not) and however large the index.
    fn elements<const N: usize>() {
        for len in 0..3 * N + 2 {
            let memory = cells(len);
            let bytes: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            for index in (0..len + 2).chain([
                usize::MAX / N,
                (usize::MAX / N).saturating_add(1),
                usize::MAX,
            ]) {
                let inside = index
                    .checked_mul(N)
                    .and_then(|at| at.checked_add(N))
                    .is_some_and(|end| end <= len);
                let cell = cell_element::<N>(&memory, index);
                let byte = byte_element::<N>(&bytes, index);
                assert_eq!(cell.is_some(), inside, "len {len} index {index}");
                assert_eq!(byte.is_some(), inside, "len {len} index {index}");
                if let (Some(cell), Some(byte)) = (cell, byte) {
                    assert!(std::ptr::eq(&cell[0], &memory[index * N]));
                    assert_eq!(byte[..], bytes[index * N..index * N + N]);
                }
            }
        }
    }

    #[test]
    fn elements_are_found_exactly_when_inside() {
        elements::<1>();
        elements::<2>();
        elements::<4>();
        elements::<8>();
    }

    #[test]
    fn values_are_little_endian() {
        let memory = cells(8);
        store::<4>(window(&memory, 0), 0x1234_5678u32.to_le_bytes());
        assert_eq!(bytewise::<4>(&memory, 0), [0x78, 0x56, 0x34, 0x12]);
        assert_eq!(
            u32::from_le_bytes(load::<4>(window(&memory, 0))),
            0x1234_5678
        );
    }
}
