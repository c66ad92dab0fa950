//! Allocators: where a device's buffers come from. [`HalAllocator`] is what every device offers;
//! [`HostAllocator`] is the local CPU device's, over host memory.

use std::fmt;
use std::sync::Arc;

use super::buffer::HalBuffer;
use crate::host_memory::{BlockCache, HOST_MEMORY_ALIGNMENT};
use crate::memory_budget::MemoryBudget;
use crate::status::{StatusCode, StatusError};

/// What a buffer is for: IREE's memory type and usage bits (`iree_hal_buffer_params_t`), as
/// compiled programs pass them. The host allocator serves every combination from host
/// memory; a device with several kinds of memory would choose by them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BufferParams {
    /// `iree_hal_memory_type_t` bits (device-local, host-visible, ...).
    pub memory_type: u32,
    /// `iree_hal_buffer_usage_t` bits (transfer, dispatch storage, mapping, ...).
    pub usage: u32,
}

/// A device's allocator.
pub trait HalAllocator: Send + Sync + fmt::Debug {
    /// A buffer of `size` bytes for `params`. Its contents are unspecified, as IREE's
    /// allocations are uninitialised (the host allocator's are zero or what a freed buffer of
    /// the same size held).
    fn allocate(&self, params: BufferParams, size: i64) -> Result<HalBuffer, StatusError>;

    /// A new buffer holding a copy of `bytes`. (IREE's allocators can also import host memory
    /// without copying; pactum does so for a caller's aligned tensor arguments,
    /// `module::tensor_to_buffer_view`, and a file's pages, [`HalAllocator::map_file`], while
    /// the bytes a program hands `hal.allocator.import` are copied here.)
    fn import_copy(&self, params: BufferParams, bytes: &[u8]) -> Result<HalBuffer, StatusError>;

    /// A buffer of `length` bytes reading as those at `offset` of `file` without copying
    /// them, where the allocator can make one: the file's pages mapped copy-on-write, so
    /// writes to the buffer stay in it and the file never changes. `Ok(None)` when it cannot
    /// (the default: a device whose memory the host cannot map; an offset the device's
    /// alignment does not allow; a mapping the system refuses): the caller then allocates and
    /// copies. An error is a refusal that a copy would meet too (the memory budget).
    fn map_file(
        &self,
        params: BufferParams,
        file: &std::fs::File,
        offset: u64,
        length: u64,
    ) -> Result<Option<HalBuffer>, StatusError> {
        let _ = (params, file, offset, length);
        Ok(None)
    }
}

/// The fewest bytes the host allocator maps from a file ([`HalAllocator::map_file`]): smaller
/// ranges are copied, as cheap as a mapping is and without spending one of the process's
/// mappings (Linux allows about 65,000) on each small parameter.
pub const MIN_FILE_MAPPING_BYTES: u64 = 64 << 10;

/// The most bytes of freed blocks a host allocator keeps for reuse.
pub const FREE_BLOCK_CACHE_BYTES: usize = 256 << 20;

/// The local CPU device's allocator: 64-byte aligned host memory
/// ([`HostMemory`](crate::host_memory::HostMemory)), charged to an optional memory budget.
/// Freed blocks are kept (large ones up to [`FREE_BLOCK_CACHE_BYTES`], a few small ones) and
/// handed out again, so a model called in a loop takes no page faults for its outputs and no
/// allocation for its small transient buffers; a reused block holds what the
/// same allocator's buffers left in it, so share an allocator only between code that may see
/// each other's data.
pub struct HostAllocator {
    budget: Option<Arc<MemoryBudget>>,
    blocks: Arc<BlockCache>,
}

impl fmt::Debug for HostAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostAllocator")
            .field("budget", &self.budget)
            .field("cached_bytes", &self.blocks.held_bytes())
            .finish()
    }
}

impl HostAllocator {
    /// An allocator charging `budget` (when given) for every buffer while it lives.
    pub fn new(budget: Option<Arc<MemoryBudget>>) -> HostAllocator {
        HostAllocator {
            budget,
            blocks: BlockCache::new(FREE_BLOCK_CACHE_BYTES),
        }
    }

    /// The budget buffers are charged to.
    pub fn budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.budget.as_ref()
    }
}

impl HalAllocator for HostAllocator {
    fn allocate(&self, _params: BufferParams, size: i64) -> Result<HalBuffer, StatusError> {
        HalBuffer::allocate_in(size, self.budget.as_ref(), Some(&self.blocks))
    }

    fn import_copy(&self, _params: BufferParams, bytes: &[u8]) -> Result<HalBuffer, StatusError> {
        HalBuffer::from_bytes(bytes, self.budget.as_ref())
    }

    /// Maps ranges of at least [`MIN_FILE_MAPPING_BYTES`] whose `offset` is a multiple of 64
    /// (the alignment compiled code assumes of every binding; IREE aligns an archive's
    /// entries so); `None` for other ranges, or when the system refuses the mapping.
    ///
    /// The budget is charged the whole `length`, as for a copy: the program may write every
    /// page of the buffer, each then a private copy, so that is the most memory the buffer
    /// can come to hold; and whether an entry is mapped or copied never changes what a budget
    /// admits. (Pages only read are the file's, in the page cache, shared and reclaimable.)
    fn map_file(
        &self,
        _params: BufferParams,
        file: &std::fs::File,
        offset: u64,
        length: u64,
    ) -> Result<Option<HalBuffer>, StatusError> {
        if length < MIN_FILE_MAPPING_BYTES || offset % HOST_MEMORY_ALIGNMENT as u64 != 0 {
            return Ok(None);
        }
        match HalBuffer::map_file(file, offset, length, self.budget.as_ref()) {
            Ok(buffer) => Ok(Some(buffer)),
            Err(e) if e.status == StatusCode::ResourceExhausted => Err(e),
            // The system refused the mapping (too many mappings, a file that cannot be
            // mapped): a copy serves as well.
            Err(_) => Ok(None),
        }
    }
}
