//! Sub-allocation: device memory taken from the driver in blocks of [`BLOCK_BYTES`], each
//! buffer placed in a range of one, so that the number of buffers is not bounded by the
//! driver's `maxMemoryAllocationCount` (4096 on many GPUs) and a buffer costs no
//! `vkAllocateMemory`. Buffers larger than [`MAX_POOLED_BYTES`] get an allocation of their own
//! (dedicated to the buffer), as IREE's driver gives allocations past a slab's length one.
//!
//! Blocks are kept per memory type and per mapping (a block the host maps is mapped whole, for
//! its life); a range is found first-fit among a block's free ranges, at the alignment asked,
//! and freed ranges are merged with their free neighbours and reused. A block whose last range
//! is freed goes back to the driver, except one per memory type and mapping, kept for the next
//! buffer (a model called in a loop then allocates no memory). A reused range holds what its
//! last buffer left (IREE's allocations are uninitialised too); every buffer of a device,
//! whichever VM context made it, shares its blocks.

use std::sync::Mutex;

use ash::vk;

/// The size of a block of device memory.
pub(super) const BLOCK_BYTES: u64 = 32 << 20;

/// The largest buffer placed in a block; larger ones get an allocation each.
pub(super) const MAX_POOLED_BYTES: u64 = BLOCK_BYTES / 4;

/// Where a buffer's memory is: `offset` bytes into `memory`, an allocation of `memory_size`
/// bytes, mapped at `mapped` (the buffer's first byte) when the host maps it.
#[derive(Debug)]
pub(super) struct Placement {
    pub(super) memory: vk::DeviceMemory,
    pub(super) offset: u64,
    pub(super) memory_size: u64,
    /// The buffer's first byte in the host's mapping; null when not mapped.
    pub(super) mapped: *mut u8,
    /// The reserved range's length (a multiple of the alignment asked).
    reserved: u64,
    /// Whether `memory` is a block (shared) or the buffer's own allocation.
    pooled: bool,
}

/// One block: its memory, mapping, and free ranges.
struct Block {
    memory: vk::DeviceMemory,
    memory_type: u32,
    /// The whole block's mapping; null when not mapped.
    mapped: *mut u8,
    /// Free ranges (offset, length), sorted by offset, never touching each other.
    free: Vec<(u64, u64)>,
    /// How many ranges are in use.
    live: usize,
}

impl Block {
    /// The first free range that holds `size` bytes at a multiple of `alignment`, taken.
    fn take(&mut self, size: u64, alignment: u64) -> Option<u64> {
        for k in 0..self.free.len() {
            let (start, len) = self.free[k];
            let at = start.div_ceil(alignment) * alignment;
            let end = start + len;
            if at.checked_add(size).is_none_or(|e| e > end) {
                continue;
            }
            // What is left before and after the taken range stays free.
            let mut rest = Vec::with_capacity(2);
            if at > start {
                rest.push((start, at - start));
            }
            if at + size < end {
                rest.push((at + size, end - at - size));
            }
            self.free.splice(k..=k, rest);
            self.live += 1;
            return Some(at);
        }
        None
    }

    /// Gives `offset..offset+size` back, merged with the free ranges it touches.
    fn give(&mut self, offset: u64, size: u64) {
        let k = self.free.partition_point(|&(start, _)| start < offset);
        let (mut start, mut end) = (offset, offset + size);
        let mut from = k;
        let mut to = k;
        if k > 0 && self.free[k - 1].0 + self.free[k - 1].1 == offset {
            start = self.free[k - 1].0;
            from = k - 1;
        }
        if k < self.free.len() && self.free[k].0 == end {
            end = self.free[k].0 + self.free[k].1;
            to = k + 1;
        }
        self.free.splice(from..to, [(start, end - start)]);
        self.live -= 1;
    }
}

/// A device's blocks.
#[derive(Default)]
pub(super) struct MemoryBlocks {
    blocks: Mutex<Vec<Block>>,
}

// SAFETY: the blocks hold handles Vulkan lets any thread use and mapping addresses that are
// only read (to hand out placements) under the lock.
unsafe impl Send for MemoryBlocks {}
// SAFETY: as above: every access goes through the mutex.
unsafe impl Sync for MemoryBlocks {}

impl std::fmt::Debug for MemoryBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBlocks")
            .field("blocks", &self.block_count())
            .finish()
    }
}

/// Allocates `size` bytes of `memory_type` (dedicated to `buffer` when given) and maps them
/// when `map`.
fn allocate_memory(
    device: &ash::Device,
    memory_type: u32,
    size: u64,
    dedicated_to: Option<vk::Buffer>,
    map: bool,
) -> Result<(vk::DeviceMemory, *mut u8), (&'static str, vk::Result)> {
    let mut dedicated = vk::MemoryDedicatedAllocateInfo::default();
    let mut allocate = vk::MemoryAllocateInfo::default()
        .allocation_size(size)
        .memory_type_index(memory_type);
    if let Some(buffer) = dedicated_to {
        dedicated = dedicated.buffer(buffer);
        allocate = allocate.push_next(&mut dedicated);
    }
    // SAFETY: a valid allocate info whose chain lives across the call.
    let memory =
        unsafe { device.allocate_memory(&allocate, None) }.map_err(|e| ("vkAllocateMemory", e))?;
    if !map {
        return Ok((memory, std::ptr::null_mut()));
    }
    // SAFETY: memory just allocated, of a host-visible type (the caller maps only those), not
    // mapped yet, mapped whole.
    match unsafe { device.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) } {
        Ok(mapped) => Ok((memory, mapped.cast::<u8>())),
        Err(e) => {
            // SAFETY: allocated above, used by nothing.
            unsafe { device.free_memory(memory, None) };
            Err(("vkMapMemory", e))
        }
    }
}

impl MemoryBlocks {
    /// Memory for `buffer`, whose requirements are `size` bytes at a multiple of `alignment`,
    /// in `memory_type`, mapped when `map` (the type must then be host-visible): a range of a
    /// block, or for a buffer past [`MAX_POOLED_BYTES`] an allocation of its own. The error
    /// names the Vulkan call that failed.
    pub(super) fn allocate(
        &self,
        device: &ash::Device,
        buffer: vk::Buffer,
        memory_type: u32,
        size: u64,
        alignment: u64,
        map: bool,
    ) -> Result<Placement, (&'static str, vk::Result)> {
        let alignment = alignment.max(1);
        let reserved = size.div_ceil(alignment).saturating_mul(alignment);
        if reserved > MAX_POOLED_BYTES {
            let (memory, mapped) = allocate_memory(device, memory_type, size, Some(buffer), map)?;
            return Ok(Placement {
                memory,
                offset: 0,
                memory_size: size,
                mapped,
                reserved: size,
                pooled: false,
            });
        }
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let fits = |block: &mut Block| {
            if block.memory_type != memory_type || block.mapped.is_null() == map {
                return None;
            }
            block.take(reserved, alignment).map(|offset| Placement {
                memory: block.memory,
                offset,
                memory_size: BLOCK_BYTES,
                mapped: if block.mapped.is_null() {
                    std::ptr::null_mut()
                } else {
                    block.mapped.wrapping_add(offset as usize)
                },
                reserved,
                pooled: true,
            })
        };
        if let Some(placement) = blocks.iter_mut().find_map(fits) {
            return Ok(placement);
        }
        let (memory, mapped) = allocate_memory(device, memory_type, BLOCK_BYTES, None, map)?;
        let mut block = Block {
            memory,
            memory_type,
            mapped,
            free: vec![(0, BLOCK_BYTES)],
            live: 0,
        };
        let placement = fits(&mut block).expect("a new block holds any pooled buffer");
        blocks.push(block);
        Ok(placement)
    }

    /// Gives `placement`'s memory back: its range to its block (the block to the driver when
    /// it is empty and another empty one of its kind is kept), or its own allocation to the
    /// driver.
    ///
    /// # Safety
    /// `placement` came from this pool's [`allocate`](Self::allocate) on `device`, is freed
    /// once, and no buffer bound to it is in use by submitted work (the buffer is destroyed
    /// first).
    pub(super) unsafe fn free(&self, device: &ash::Device, placement: &Placement) {
        if !placement.pooled {
            // SAFETY: the caller's contract: the buffer's own allocation, unused, freed once
            // (freeing unmaps it).
            unsafe { device.free_memory(placement.memory, None) };
            return;
        }
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let Some(at) = blocks.iter().position(|b| b.memory == placement.memory) else {
            return;
        };
        blocks[at].give(placement.offset, placement.reserved);
        if blocks[at].live > 0 {
            return;
        }
        let (memory_type, mapped) = (blocks[at].memory_type, blocks[at].mapped.is_null());
        let another_empty = blocks.iter().enumerate().any(|(k, b)| {
            k != at && b.live == 0 && b.memory_type == memory_type && b.mapped.is_null() == mapped
        });
        if another_empty {
            let block = blocks.swap_remove(at);
            // SAFETY: an empty block of `device` (no range of it is bound to a live buffer),
            // freed once, having been taken out of the pool.
            unsafe { device.free_memory(block.memory, None) };
        }
    }

    /// Frees every block: when the device is destroyed, after every buffer.
    ///
    /// # Safety
    /// The blocks were allocated on `device`, and no buffer is bound to them any more.
    pub(super) unsafe fn destroy_all(&self, device: &ash::Device) {
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        for block in blocks.drain(..) {
            // SAFETY: the caller's contract: blocks of `device`, unused, each freed once.
            unsafe { device.free_memory(block.memory, None) };
        }
    }

    /// How many blocks the pool holds.
    pub(super) fn block_count(&self) -> usize {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Block {
        Block {
            memory: vk::DeviceMemory::null(),
            memory_type: 0,
            mapped: std::ptr::null_mut(),
            free: vec![(0, 1024)],
            live: 0,
        }
    }

    #[test]
    fn ranges_are_aligned_reused_and_merged_when_freed() {
        let mut b = block();
        assert_eq!(b.take(100, 64), Some(0));
        assert_eq!(b.take(100, 64), Some(128));
        assert_eq!(b.free, [(100, 28), (228, 796)]);
        // A small range fits in the gap the alignment left.
        assert_eq!(b.take(16, 4), Some(100));
        assert_eq!(b.take(2000, 64), None);
        b.give(0, 100);
        b.give(100, 16);
        assert_eq!(b.free, [(0, 128), (228, 796)]);
        b.give(128, 100);
        assert_eq!(b.free, [(0, 1024)]);
        assert_eq!(b.live, 0);
        // The whole block is one range again.
        assert_eq!(b.take(1024, 256), Some(0));
        assert!(b.free.is_empty());
    }
}
