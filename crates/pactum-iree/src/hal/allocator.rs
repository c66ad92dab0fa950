//! Allocators: where a device's buffers come from. [`HalAllocator`] is what every device offers;
//! [`HostAllocator`] is the local CPU device's, over host memory.

use std::fmt;
use std::sync::Arc;

use super::buffer::HalBuffer;
use crate::host_memory::BlockCache;
use crate::memory_budget::MemoryBudget;
use crate::status::StatusError;

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

    /// A new buffer holding a copy of `bytes`. (IREE can also import memory without copying;
    /// pactum's buffers always own their bytes, so an import is a copy.)
    fn import_copy(&self, params: BufferParams, bytes: &[u8]) -> Result<HalBuffer, StatusError>;
}

/// The most bytes of freed blocks a host allocator keeps for reuse.
pub const FREE_BLOCK_CACHE_BYTES: usize = 256 << 20;

/// The local CPU device's allocator: 64-byte aligned host memory
/// ([`HostMemory`](crate::host_memory::HostMemory)), charged to an optional memory budget.
/// Large freed blocks are kept (up to [`FREE_BLOCK_CACHE_BYTES`]) and handed out again, so a
/// model called in a loop takes no page faults for its outputs; a reused block holds what the
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
}
