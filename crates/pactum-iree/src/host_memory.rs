//! Host memory for HAL buffers: 64-byte aligned byte cells that the VM, the HAL and compiled
//! dispatch code share.
//!
//! Code compiled by IREE for `llvm-cpu` assumes its bindings are aligned to 64 bytes (IREE's
//! heap buffers are), so a `Vec` cannot hold them. Large blocks come from anonymous
//! mappings (with transparent huge pages where the system offers them). Allocation failures
//! are errors, never aborts.
//!
//! A block can also be a file's pages ([`HostMemory::file_pages`]): a private copy-on-write
//! mapping that reads as the file and whose written pages the kernel copies, so the file never
//! changes. Such a block is unmapped when dropped, never cached.
//!
//! A block can also be memory someone else owns ([`HostMemory::borrowed`]): a caller's tensor
//! imported without a copy, as IREE's heap allocator imports a host allocation
//! (`IREE_HAL_EXTERNAL_BUFFER_TYPE_HOST_ALLOCATION`, `iree_hal_heap_buffer_wrap`). The block
//! holds the owner until it is dropped, never frees the memory and never caches it.
//!
//! A block can also be a device's memory mapped into the process
//! ([`HostMemory::device_mapped`]: the Vulkan device's host-visible buffers, or the staging
//! buffers of those the host cannot map), holding the
//! device's allocation, which the device finds again with [`HostMemory::device_allocation`] to
//! bind the buffer in its work. Never cached.
//!
//! Fresh blocks are zero-filled. A [`BlockCache`] keeps blocks its owner freed and hands them
//! out again as they are, like IREE's allocator reusing freed memory: a model called in a
//! loop then takes no page faults for its outputs, and spends no allocation and zero-fill on
//! its small transient buffers (IREE's heap buffers are not zero-filled either). A HAL module
//! owns one cache, so a reused block only ever holds bytes that the same module's buffers held
//! before.

use std::alloc::Layout;
use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex, Weak};

/// The alignment of every block.
pub const HOST_MEMORY_ALIGNMENT: usize = 64;

/// Blocks of at least this many bytes are anonymous mappings.
const MAPPED_THRESHOLD: usize = 1 << 20;

/// Mappings of at least this many bytes ask for transparent huge pages.
const HUGE_PAGE_THRESHOLD: usize = 2 << 20;

/// A fixed-size, 64-byte aligned block of bytes with interior mutability.
pub struct HostMemory {
    ptr: NonNull<AtomicU8>,
    len: usize,
    owner: Owner,
    /// Where the block goes back when dropped.
    cache: Option<Weak<BlockCache>>,
}

enum Owner {
    Heap(Layout),
    // Never read: holding it keeps the mapping alive until the block is dropped.
    Mapped(#[allow(dead_code)] memmap2::MmapMut),
    /// A private (copy-on-write) mapping of a file's pages; never read, held to keep the
    /// mapping alive until the block is dropped.
    FilePages(#[allow(dead_code)] memmap2::MmapMut),
    /// Memory owned by someone else ([`HostMemory::borrowed`]); never read, held to keep the
    /// memory alive until the block is dropped.
    Borrowed(#[allow(dead_code)] Box<dyn Send + Sync>),
    /// A device's memory mapped into the process ([`HostMemory::device_mapped`]); the
    /// allocation that owns the mapping, which the device reaches again through
    /// [`HostMemory::device_allocation`].
    Device(Arc<dyn Any + Send + Sync>),
    /// Moved into a cache: nothing to free.
    Moved,
}

// SAFETY: the block is only ever accessed as `AtomicU8` cells (which are `Sync`) or through
// raw pointers handed to compiled code under the HAL's synchronisation; the owner is not
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
            #[cfg(target_os = "linux")]
            if len >= HUGE_PAGE_THRESHOLD {
                // Only advice: where huge pages are off the mapping works as before.
                let _ = map.advise(memmap2::Advice::HugePage);
            }
            let ptr = NonNull::new(map.as_mut_ptr().cast::<AtomicU8>())?;
            return Some(HostMemory {
                ptr,
                len,
                owner: Owner::Mapped(map),
                cache: None,
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
            cache: None,
        })
    }

    /// A block of `len` bytes from `cache` (holding whatever its last user left in it) or,
    /// when it has none of that size, a fresh zero-filled one; either goes back to `cache`
    /// when dropped.
    pub fn reused_or_zeroed(len: usize, cache: &Arc<BlockCache>) -> Option<HostMemory> {
        let mut block = match cache.take(len) {
            Some(block) => block,
            None => HostMemory::zeroed(len)?,
        };
        block.cache = Some(Arc::downgrade(cache));
        Some(block)
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

    /// A block over the `len` bytes at `offset` of `file`, mapped privately (copy-on-write):
    /// it reads as the file does, and a write copies the page it falls in (the kernel does),
    /// so neither the file nor other mappings of it ever see the block's writes. `offset` must
    /// be a multiple of [`HOST_MEMORY_ALIGNMENT`] (the block's address then is: the mapping
    /// starts at a page boundary) and `len` non-zero. The block is unmapped when dropped and
    /// never goes to a [`BlockCache`].
    ///
    /// As with every mapped file, another process truncating or rewriting the file while it
    /// is mapped changes (or, truncated, faults on) the pages not yet written.
    pub fn file_pages(
        file: &std::fs::File,
        offset: u64,
        len: usize,
    ) -> std::io::Result<HostMemory> {
        let invalid =
            |message: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, message);
        if offset % HOST_MEMORY_ALIGNMENT as u64 != 0 {
            return Err(invalid(format!(
                "offset {offset} is not a multiple of {HOST_MEMORY_ALIGNMENT}"
            )));
        }
        if len == 0 {
            return Err(invalid("an empty range cannot be mapped".to_owned()));
        }
        let available = file.metadata()?.len();
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > available)
        {
            return Err(invalid(format!(
                "{len} bytes at {offset} are outside the {available}-byte file"
            )));
        }
        // A private mapping: writes through it never reach the file or any other mapping, and
        // pactum only touches it through the block's atomic cells and the raw pointer compiled
        // code receives. A file truncated or rewritten by another process while mapped is
        // outside what Rust can guard against, as for every memory-mapped file.
        // SAFETY: private copy-on-write mapping of a range checked against the file's length.
        let mut map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset)
                .len(len)
                .map_copy(file)
        }?;
        // memmap2 maps from the page holding `offset` and points at `offset` within it: the
        // page is aligned, `offset` is a multiple of the alignment, so the address is.
        let ptr = NonNull::new(map.as_mut_ptr().cast::<AtomicU8>())
            .filter(|p| p.as_ptr() as usize % HOST_MEMORY_ALIGNMENT == 0)
            .ok_or_else(|| std::io::Error::other("the mapping is not 64-byte aligned"))?;
        Ok(HostMemory {
            ptr,
            len,
            owner: Owner::FilePages(map),
            cache: None,
        })
    }

    /// A block over `len` bytes at `ptr` that `owner` keeps alive, without copying them: the
    /// HAL, the VM and compiled code read and write those bytes in place, and the block holds
    /// `owner` until it is dropped (then drops it; the memory is never freed or cached here).
    /// `None` when `ptr` is not aligned to [`HOST_MEMORY_ALIGNMENT`] (compiled code assumes
    /// it of every binding; IREE's `iree_hal_heap_buffer_wrap` refuses such memory with
    /// `OUT_OF_RANGE`) or `len` is zero (an empty block needs no memory of anyone's).
    ///
    /// # Safety
    /// While `owner` lives, the `len` bytes at `ptr` must stay allocated, readable and
    /// writable, and must not be accessed other than through this block (or, as for every
    /// buffer shared with compiled code, under the caller's own synchronisation: nobody
    /// writes them while a call that reads them runs).
    pub unsafe fn borrowed(
        ptr: *mut u8,
        len: usize,
        owner: Box<dyn Send + Sync>,
    ) -> Option<HostMemory> {
        HostMemory::over_memory_of(ptr, len, Owner::Borrowed(owner))
    }

    /// A block over `len` bytes of a device's memory mapped at `ptr`, which `allocation` (the
    /// device's own record of it: its buffer and memory objects) keeps mapped until it is
    /// dropped. The HAL, the VM and the host read and write the bytes through the mapping, and
    /// the device finds its allocation again with [`HostMemory::device_allocation`]. Never
    /// cached. `None` when `ptr` is not aligned to [`HOST_MEMORY_ALIGNMENT`] or `len` is zero.
    ///
    /// # Safety
    /// While `allocation` lives, the `len` bytes at `ptr` must stay mapped, readable and
    /// writable and kept coherent with the device by the device's queue (writes on either side
    /// visible to the other once the device's work is ordered with the host's: the queue
    /// flushes, invalidates or copies staged bytes around each submission as needed), and
    /// not be accessed other than through this block or by the device's work that the HAL
    /// submits.
    pub unsafe fn device_mapped(
        ptr: *mut u8,
        len: usize,
        allocation: Arc<dyn Any + Send + Sync>,
    ) -> Option<HostMemory> {
        HostMemory::over_memory_of(ptr, len, Owner::Device(allocation))
    }

    /// A block over `len` bytes at `ptr` that `owner` keeps alive (the two public
    /// constructors above, whose safety contracts the caller has met); `None` when `ptr` is
    /// not aligned to [`HOST_MEMORY_ALIGNMENT`] or `len` is zero.
    fn over_memory_of(ptr: *mut u8, len: usize, owner: Owner) -> Option<HostMemory> {
        if len == 0 || ptr as usize % HOST_MEMORY_ALIGNMENT != 0 {
            return None;
        }
        let ptr = NonNull::new(ptr.cast::<AtomicU8>())?;
        Some(HostMemory {
            ptr,
            len,
            owner,
            cache: None,
        })
    }

    /// The device allocation a [`HostMemory::device_mapped`] block maps (`None` for other
    /// blocks).
    pub fn device_allocation(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        match &self.owner {
            Owner::Device(allocation) => Some(allocation),
            _ => None,
        }
    }

    /// Whether the block is memory someone else owns ([`HostMemory::borrowed`]).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.owner, Owner::Borrowed(_))
    }

    /// Whether the block is a file's pages ([`HostMemory::file_pages`]).
    pub fn is_file_pages(&self) -> bool {
        matches!(self.owner, Owner::FilePages(_))
    }

    /// The bytes as atomic cells.
    pub fn cells(&self) -> &[AtomicU8] {
        // `ptr` points to `len` initialised (zeroed or written) bytes that live as long as
        // `self`; `AtomicU8` has the size and alignment of `u8` and every bit pattern is a valid
        // value; all mutation goes through the cells' interior mutability or through compiled
        // code given `as_mut_ptr`, never through a `&mut`.
        // SAFETY: `len` initialised bytes at `ptr`, alive and never mutably borrowed (above).
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

    /// The address of the first byte, for compiled code (64-byte aligned).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr().cast::<u8>()
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        if let Some(cache) = self.cache.take().and_then(|c| c.upgrade()) {
            // A file's pages hold the file's bytes (or the program's writes over them), and
            // borrowed memory is its owner's, not memory to hand out again: never cached
            // (they never get a cache).
            if !self.is_file_pages() && !self.is_borrowed() {
                let block = HostMemory {
                    ptr: self.ptr,
                    len: self.len,
                    owner: std::mem::replace(&mut self.owner, Owner::Moved),
                    cache: None,
                };
                cache.give(block);
                return;
            }
        }
        if let Owner::Heap(layout) = self.owner {
            // SAFETY: `ptr` was returned by `alloc_zeroed(layout)` and is freed once, here
            // (a block moved into a cache has `Owner::Moved`).
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast::<u8>(), layout) };
        }
    }
}

/// Freed blocks kept for reuse, by exact size, the oldest evicted first: large blocks up to a
/// bound on their bytes, small ones (under [`BlockCache::MIN_BLOCK`]) up to a bound on their
/// number ([`BlockCache::SMALL_BLOCKS`]), so that a program freeing many small buffers neither
/// evicts the large ones nor makes finding a block slow.
#[derive(Debug)]
pub struct BlockCache {
    max_bytes: usize,
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    blocks: std::collections::VecDeque<HostMemory>,
    bytes: usize,
    small: std::collections::VecDeque<HostMemory>,
}

impl BlockCache {
    /// The smallest block kept under the bound on bytes; smaller ones are kept under the
    /// bound on their number.
    pub const MIN_BLOCK: usize = 64 << 10;

    /// The most small blocks (under [`BlockCache::MIN_BLOCK`]) kept: enough for the transient
    /// buffers of a call, few enough to search quickly.
    pub const SMALL_BLOCKS: usize = 32;

    /// A cache holding at most `max_bytes` of free blocks.
    pub fn new(max_bytes: usize) -> Arc<BlockCache> {
        Arc::new(BlockCache {
            max_bytes,
            state: Mutex::new(CacheState::default()),
        })
    }

    /// The bytes held now, in large blocks (small ones are bounded by their number).
    pub fn held_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The small blocks held now.
    pub fn held_small_blocks(&self) -> usize {
        self.lock().small.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        // A panic while holding the lock cannot leave the state inconsistent (each change is
        // one push or pop with its byte count), so a poisoned lock is used as is.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self, len: usize) -> Option<HostMemory> {
        let mut state = self.lock();
        if len < Self::MIN_BLOCK {
            let index = state.small.iter().rposition(|b| b.len == len)?;
            return state.small.remove(index);
        }
        let index = state.blocks.iter().rposition(|b| b.len == len)?;
        let block = state.blocks.remove(index)?;
        state.bytes -= block.len;
        Some(block)
    }

    fn give(&self, block: HostMemory) {
        if block.len < Self::MIN_BLOCK {
            let evicted = {
                let mut state = self.lock();
                state.small.push_back(block);
                if state.small.len() > Self::SMALL_BLOCKS {
                    state.small.pop_front()
                } else {
                    None
                }
            };
            // Freed outside the lock.
            drop(evicted);
            return;
        }
        if block.len > self.max_bytes {
            return;
        }
        let evicted = {
            let mut state = self.lock();
            state.bytes += block.len;
            state.blocks.push_back(block);
            let mut evicted = Vec::new();
            while state.bytes > self.max_bytes {
                match state.blocks.pop_front() {
                    Some(old) => {
                        state.bytes -= old.len;
                        evicted.push(old);
                    }
                    None => break,
                }
            }
            evicted
        };
        // Freed outside the lock.
        drop(evicted);
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
    fn caches_hand_freed_blocks_back_and_stay_within_their_bound() {
        let cache = BlockCache::new(3 * BlockCache::MIN_BLOCK);
        let len = BlockCache::MIN_BLOCK;
        let block = HostMemory::reused_or_zeroed(len, &cache).unwrap();
        block.cells()[5].store(9, Relaxed);
        let address = block.as_mut_ptr();
        drop(block);
        assert_eq!(cache.held_bytes(), len);
        let again = HostMemory::reused_or_zeroed(len, &cache).unwrap();
        assert_eq!(again.as_mut_ptr(), address, "the freed block is reused");
        assert_eq!(again.cells()[5].load(Relaxed), 9, "as it was left");
        assert_eq!(cache.held_bytes(), 0);
        // Another size gets a fresh, zeroed block.
        let other = HostMemory::reused_or_zeroed(2 * len, &cache).unwrap();
        assert!(other.cells().iter().all(|c| c.load(Relaxed) == 0));
        drop((again, other));
        assert_eq!(cache.held_bytes(), 3 * len);
        // Over the bound, the oldest go first.
        drop(HostMemory::reused_or_zeroed(2 * len, &cache).unwrap());
        assert!(cache.held_bytes() <= 3 * len);
        // Blocks outliving their cache are simply freed.
        let orphan = HostMemory::reused_or_zeroed(len, &cache).unwrap();
        drop(cache);
        drop(orphan);
    }

    #[test]
    fn small_blocks_are_reused_as_left_and_bounded_by_their_number() {
        let cache = BlockCache::new(BlockCache::MIN_BLOCK);
        let block = HostMemory::reused_or_zeroed(100, &cache).unwrap();
        block.cells()[99].store(4, Relaxed);
        let address = block.as_mut_ptr();
        drop(block);
        assert_eq!(cache.held_small_blocks(), 1);
        assert_eq!(
            cache.held_bytes(),
            0,
            "small blocks do not count against the bytes"
        );
        let again = HostMemory::reused_or_zeroed(100, &cache).unwrap();
        assert_eq!(again.as_mut_ptr(), address, "the freed block is reused");
        assert_eq!(again.cells()[99].load(Relaxed), 4, "as it was left");
        assert_eq!(cache.held_small_blocks(), 0);
        // Another size gets a fresh, zeroed block.
        let other = HostMemory::reused_or_zeroed(64, &cache).unwrap();
        assert!(other.cells().iter().all(|c| c.load(Relaxed) == 0));
        drop((again, other));
        // Over the bound, the oldest go first.
        let many: Vec<_> = (0..2 * BlockCache::SMALL_BLOCKS)
            .map(|i| HostMemory::reused_or_zeroed(64 * (i + 1), &cache).unwrap())
            .collect();
        drop(many);
        assert_eq!(cache.held_small_blocks(), BlockCache::SMALL_BLOCKS);
    }

    #[test]
    fn file_pages_read_as_the_file_and_keep_their_writes_to_themselves() {
        let path = std::env::temp_dir().join(format!("pactum-file-pages-{}", std::process::id()));
        let contents: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &contents).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // From byte 4160 (inside the second page, a multiple of 64) to the end.
        let memory = HostMemory::file_pages(&file, 4160, contents.len() - 4160).unwrap();
        assert!(memory.is_file_pages());
        assert_eq!(memory.as_mut_ptr() as usize % HOST_MEMORY_ALIGNMENT, 0);
        let read =
            |m: &HostMemory| -> Vec<u8> { m.cells().iter().map(|c| c.load(Relaxed)).collect() };
        assert_eq!(read(&memory), contents[4160..]);
        memory.cells()[0].store(255, Relaxed);
        let other = HostMemory::file_pages(&file, 4160, 64).unwrap();
        assert_eq!(
            read(&other),
            contents[4160..4224],
            "another mapping is unchanged"
        );
        assert_eq!(memory.cells()[0].load(Relaxed), 255);
        drop((memory, other));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            contents,
            "the file is unchanged"
        );
        // Unaligned, empty and out-of-file ranges are refused.
        for (offset, len) in [(4100, 64), (0, 0), (4096, contents.len())] {
            assert!(
                HostMemory::file_pages(&file, offset, len).is_err(),
                "{offset} {len}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn borrowed_blocks_use_the_owners_memory_hold_the_owner_and_are_never_cached() {
        #[repr(C, align(64))]
        struct Aligned([u8; 2 * BlockCache::MIN_BLOCK]);
        let mut storage = Box::new(Aligned([3; 2 * BlockCache::MIN_BLOCK]));
        let address = storage.0.as_mut_ptr();
        let owner = Arc::new(());
        let len = BlockCache::MIN_BLOCK;
        // SAFETY: `storage` outlives every block made over it below, and is only reached
        // through them while they live.
        let memory = unsafe { HostMemory::borrowed(address, len, Box::new(owner.clone())) };
        let mut memory = memory.expect("an aligned range is borrowed");
        assert!(memory.is_borrowed() && !memory.is_file_pages());
        assert_eq!(
            memory.as_mut_ptr(),
            address,
            "the owner's memory, not a copy"
        );
        memory.cells()[0].store(9, Relaxed);
        assert_eq!(Arc::strong_count(&owner), 2, "the block holds the owner");
        // A block returning to a cache is kept for reuse; a borrowed one never is.
        let cache = BlockCache::new(4 * len);
        memory.cache = Some(Arc::downgrade(&cache));
        drop(memory);
        assert_eq!(cache.held_bytes(), 0);
        assert_eq!(
            Arc::strong_count(&owner),
            1,
            "the owner is dropped with the block"
        );
        assert_eq!(storage.0[0], 9);
        // Misaligned and empty ranges are refused (the caller copies).
        for (offset, len) in [(4, 64), (0, 0)] {
            let start = address.wrapping_add(offset);
            // SAFETY: as above; a refused range is never touched.
            let refused = unsafe { HostMemory::borrowed(start, len, Box::new(())) };
            assert!(refused.is_none(), "{offset} {len}");
        }
    }

    #[test]
    fn an_impossible_size_is_refused_not_aborted() {
        assert!(HostMemory::zeroed(usize::MAX - 8).is_none());
    }
}
