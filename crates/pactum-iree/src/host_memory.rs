//! Host memory for HAL buffers: zero-filled, 64-byte aligned byte cells that the VM, the
//! HAL and native dispatch code share.
//!
//! Code compiled by IREE for `llvm-cpu` assumes its bindings are aligned to 64 bytes (IREE's
//! heap buffers are), so a `Vec` cannot hold them. Large blocks come from anonymous
//! mappings: zero pages cost nothing until they are touched, as with IREE's `malloc`.
//! Allocation failures are errors, never aborts.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU8;

/// The alignment of every block.
pub const HOST_MEMORY_ALIGNMENT: usize = 64;

/// Blocks of at least this many bytes are anonymous mappings.
const MAPPED_THRESHOLD: usize = 1 << 20;

/// A fixed-size, zero-initialised, 64-byte aligned block of bytes with interior mutability.
pub struct HostMemory {
    ptr: NonNull<AtomicU8>,
    len: usize,
    owner: Owner,
}

enum Owner {
    Heap(Layout),
    // Never read: holding it keeps the mapping alive until the block is dropped.
    Mapped(#[allow(dead_code)] memmap2::MmapMut),
}

// SAFETY: the block is only ever accessed as `AtomicU8` cells (which are `Sync`) or through
// raw pointers handed to native code under the HAL's synchronisation; the owner is not
// tied to a thread.
unsafe impl Send for HostMemory {}
// SAFETY: as above; shared access goes through atomics.
unsafe impl Sync for HostMemory {}

impl std::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostMemory")
            .field("len", &self.len)
            .finish()
    }
}

impl HostMemory {
    /// A zero-filled block of `len` bytes, or `None` when the system cannot provide it.
    pub fn zeroed(len: usize) -> Option<HostMemory> {
        if len >= MAPPED_THRESHOLD {
            let mut map = memmap2::MmapMut::map_anon(len).ok()?;
            let ptr = NonNull::new(map.as_mut_ptr().cast::<AtomicU8>())?;
            return Some(HostMemory {
                ptr,
                len,
                owner: Owner::Mapped(map),
            });
        }
        // One byte at least, so that even an empty block has a unique aligned address.
        let layout = Layout::from_size_align(len.max(1), HOST_MEMORY_ALIGNMENT).ok()?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw.cast::<AtomicU8>())?;
        Some(HostMemory {
            ptr,
            len,
            owner: Owner::Heap(layout),
        })
    }

    /// A block holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Option<HostMemory> {
        let memory = HostMemory::zeroed(bytes.len())?;
        // SAFETY: the block has `bytes.len()` bytes, is not yet shared, and `bytes` cannot
        // overlap a block allocated just now.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), memory.as_mut_ptr(), bytes.len());
        }
        Some(memory)
    }

    /// The bytes as atomic cells.
    pub fn cells(&self) -> &[AtomicU8] {
        // SAFETY: `ptr` points to `len` initialised (zeroed or written) bytes that live as long
        // as `self`; `AtomicU8` has the size and alignment of `u8` and every bit pattern is a
        // valid value; all mutation goes through the cells' interior mutability or through
        // native code given `as_mut_ptr`, never through a `&mut`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first byte, for native code (64-byte aligned).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr().cast::<u8>()
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        if let Owner::Heap(layout) = self.owner {
            // SAFETY: `ptr` was returned by `alloc_zeroed(layout)` and is freed once, here.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast::<u8>(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn blocks_are_zeroed_aligned_and_writable_at_every_size() {
        for len in [0, 1, 63, 64, 4097, MAPPED_THRESHOLD, MAPPED_THRESHOLD + 3] {
            let memory = HostMemory::zeroed(len).unwrap();
            assert_eq!(memory.len(), len);
            assert_eq!(
                memory.as_mut_ptr() as usize % HOST_MEMORY_ALIGNMENT,
                0,
                "{len}"
            );
            assert!(memory.cells().iter().all(|c| c.load(Relaxed) == 0));
            if let Some(last) = memory.cells().last() {
                last.store(7, Relaxed);
                assert_eq!(memory.cells()[len - 1].load(Relaxed), 7);
            }
        }
        let copy = HostMemory::from_bytes(&[1, 2, 3]).unwrap();
        let bytes: Vec<u8> = copy.cells().iter().map(|c| c.load(Relaxed)).collect();
        assert_eq!(bytes, [1, 2, 3]);
    }

    #[test]
    fn an_impossible_size_is_refused_not_aborted() {
        assert!(HostMemory::zeroed(usize::MAX - 8).is_none());
    }
}
