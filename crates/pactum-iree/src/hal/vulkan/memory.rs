//! Device memory: memory types chosen for each buffer as IREE's Vulkan driver chooses them,
//! and the host's access to buffers whose memory it cannot map.
//!
//! Every buffer is a `VkBuffer` bound to memory (a range of a block, `blocks`) of the type that
//! IREE's driver places a buffer of its HAL memory type and usage in ([`device_memory_type`]:
//! among the types with every HAL bit asked and allowing the usage, the best score, device-local
//! memory counting most for dispatch use and host-visible memory for mapped use). The host
//! reads and writes a buffer's bytes in place through a [`HostMemory::device_mapped`] block,
//! over:
//!
//! - the buffer's own memory, mapped for the buffer's life, when that memory is host-visible
//!   (lavapipe, integrated GPUs, a discrete GPU's host-visible types);
//! - otherwise a **staging buffer**: a host-visible `VkBuffer` of the same size, mapped for the
//!   buffer's life, which holds the buffer's bytes between submissions. Each submission that
//!   uses the buffer copies the range it binds from the staging buffer to the device's memory
//!   first and back after its work ([`HostSync`], transfer commands in the same command
//!   buffer), so the host, the VM and the HAL's host-side transfers see the bytes as if the
//!   memory were mapped.
//!
//! Memory that is host-visible but not host-coherent is flushed (after the host's writes,
//! before a submission) and invalidated (when the queue sees the submission completed, before
//! the host can see its semaphores signalled: [`HostInvalidation`]) over the ranges a
//! submission binds, rounded to the device's `nonCoherentAtomSize`.
//!
//! [`VulkanMemoryMode`] forces the two uncommon cases on a device that has neither (lavapipe's
//! one memory type is device-local, host-visible and host-coherent), so tests run the staging
//! and the flush paths: `device-local-only` treats device-local memory as not host-visible,
//! `non-coherent` treats every type as not host-coherent.
//!
//! Buffers are sub-allocated from blocks of device memory (`blocks`), so drivers' bound on
//! allocations (`maxMemoryAllocationCount`) does not bound the number of buffers.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use ash::vk;

use super::blocks::Placement;
use super::context::{VulkanContext, every_later_access, vk_error};
use super::options::VulkanMemoryMode;
use crate::hal::allocator::{BufferParams, HalAllocator};
use crate::hal::buffer::HalBuffer;
use crate::host_memory::HostMemory;
use crate::memory_budget::MemoryBudget;
use crate::status::{StatusCode, StatusError};

// IREE's HAL memory type and usage bits (`iree_hal_memory_type_t`, `iree_hal_buffer_usage_t`),
// as compiled programs pass them.
const HAL_OPTIMAL: u32 = 1;
const HAL_HOST_VISIBLE: u32 = 1 << 1;
const HAL_HOST_COHERENT: u32 = 1 << 2;
const HAL_HOST_CACHED: u32 = 1 << 3;
const HAL_HOST_LOCAL: u32 = HAL_HOST_VISIBLE | HAL_HOST_COHERENT | 1 << 6;
const HAL_DEVICE_VISIBLE: u32 = 1 << 4;
const HAL_DEVICE_LOCAL: u32 = HAL_DEVICE_VISIBLE | 1 << 5;
const HAL_OPTIMAL_FOR_HOST: u32 = HAL_OPTIMAL | HAL_HOST_LOCAL;
const HAL_OPTIMAL_FOR_DEVICE: u32 = HAL_OPTIMAL | HAL_DEVICE_LOCAL;
const HAL_USAGE_TRANSFER: u32 = 0b11;
/// Indirect parameters, uniform reads, storage, images (bits 8 to 13).
const HAL_USAGE_DISPATCH: u32 = 0x3f00;
/// Sharing: replicate, concurrent, immutable.
const HAL_USAGE_SHARING: u32 = 0b111 << 17;
const HAL_USAGE_MAPPING_OPTIONAL: u32 = 1 << 26;
/// Scoped, persistent, optional, random access, sequential write.
const HAL_USAGE_MAPPING: u32 = 0x1f << 24;

type Flags = vk::MemoryPropertyFlags;

/// Memory type `index`'s properties as the device's memory mode presents them.
fn presented_flags(context: &VulkanContext, index: usize) -> Flags {
    let flags = context.memory.memory_types_as_slice()[index].property_flags;
    match context.memory_mode {
        VulkanMemoryMode::AsReported => flags,
        VulkanMemoryMode::DeviceLocalOnly if flags.contains(Flags::DEVICE_LOCAL) => {
            flags & !(Flags::HOST_VISIBLE | Flags::HOST_COHERENT | Flags::HOST_CACHED)
        }
        VulkanMemoryMode::DeviceLocalOnly => flags,
        VulkanMemoryMode::NonCoherent => flags & !Flags::HOST_COHERENT,
    }
}

/// The HAL memory type of a Vulkan memory type with `flags`, as IREE's driver names it:
/// device-visible always; device-local, host-visible, host-coherent, host-cached as the flags
/// say; host-local when host-visible and host-coherent but not device-local.
fn hal_memory_type(flags: Flags) -> u32 {
    let mut hal = HAL_DEVICE_VISIBLE;
    if flags.contains(Flags::DEVICE_LOCAL) {
        hal |= HAL_DEVICE_LOCAL;
    }
    if flags.contains(Flags::HOST_VISIBLE) {
        hal |= HAL_HOST_VISIBLE;
    }
    if flags.contains(Flags::HOST_COHERENT) {
        hal |= HAL_HOST_COHERENT;
    }
    if flags.contains(Flags::HOST_CACHED) {
        hal |= HAL_HOST_CACHED;
    }
    if flags.contains(Flags::HOST_VISIBLE | Flags::HOST_COHERENT)
        && !flags.contains(Flags::DEVICE_LOCAL)
    {
        hal |= HAL_HOST_LOCAL;
    }
    hal
}

/// IREE's score of a memory type (`hal`, its HAL memory type) for a buffer with `params`
/// whose usage the type allows: device-local 100 for dispatch use without mapping (20
/// otherwise), host-visible 80 when mapped (5 otherwise), host-cached 20 and host-coherent 10
/// when mapped, 50 for host-local memory asked as optimal for the host and for device-local
/// memory asked as optimal for the device.
fn score(params: BufferParams, hal: u32) -> u32 {
    let mapping = params.usage & HAL_USAGE_MAPPING != 0;
    let dispatch = params.usage & HAL_USAGE_DISPATCH != 0;
    let has = |bits: u32| hal & bits == bits;
    let mut score = 0;
    if has(HAL_DEVICE_LOCAL) {
        score += if dispatch && !mapping { 100 } else { 20 };
    }
    if has(HAL_HOST_VISIBLE) {
        score += if mapping { 80 } else { 5 };
    }
    if mapping && has(HAL_HOST_CACHED) {
        score += 20;
    }
    if mapping && has(HAL_HOST_COHERENT) {
        score += 10;
    }
    if params.memory_type & HAL_OPTIMAL_FOR_HOST == HAL_OPTIMAL_FOR_HOST && has(HAL_HOST_LOCAL) {
        score += 50;
    }
    if params.memory_type & HAL_OPTIMAL_FOR_DEVICE == HAL_OPTIMAL_FOR_DEVICE
        && has(HAL_DEVICE_LOCAL)
    {
        score += 50;
    }
    score
}

/// The usages a memory of HAL type `hal` allows: transfers, dispatches and sharing always,
/// mappings when host-visible.
fn allowed_usage(hal: u32) -> u32 {
    let mut usage = HAL_USAGE_TRANSFER | HAL_USAGE_DISPATCH | HAL_USAGE_SHARING;
    if hal & HAL_HOST_VISIBLE != 0 {
        usage |= HAL_USAGE_MAPPING;
    }
    usage
}

/// The memory type of a buffer the program asks for with `params`, among the types `allowed`
/// by the buffer's requirements, as IREE's driver places it
/// (`iree_hal_vulkan_allocator_resolve_memory_placement`): among the types whose HAL memory
/// type has every bit asked (but "optimal") and that allow the usage (an optional mapping
/// dropped where the type cannot map), the best [`score`], the first of equals.
///
/// Where IREE fails (no type qualifies), pactum relaxes the request, as the host reaches any
/// buffer through staging and flushes: first without the usage check, then without the host
/// properties asked (host-local, host-coherent, host-cached, host-visible), then any type.
pub(super) fn device_memory_type(
    context: &VulkanContext,
    params: BufferParams,
    allowed: u32,
) -> Option<u32> {
    let count = context.memory.memory_types_as_slice().len();
    let presented: Vec<Flags> = (0..count).map(|i| presented_flags(context, i)).collect();
    choose_device_type(&presented, params, allowed)
}

/// [`device_memory_type`] over the types' properties as presented.
fn choose_device_type(presented: &[Flags], params: BufferParams, allowed: u32) -> Option<u32> {
    let required = params.memory_type & !HAL_OPTIMAL;
    let host = HAL_HOST_LOCAL | HAL_HOST_CACHED;
    [
        (required, true),
        (required, false),
        (required & !host, false),
        (0, false),
    ]
    .into_iter()
    .find_map(|(required, check_usage)| {
        let mut best: Option<(u32, u32)> = None;
        for (index, &flags) in presented.iter().enumerate() {
            let hal = hal_memory_type(flags);
            if index >= 32
                || allowed & (1 << index) == 0
                || hal & required != required
                || flags.intersects(Flags::LAZILY_ALLOCATED | Flags::PROTECTED)
            {
                continue;
            }
            let mut candidate = params;
            if check_usage && candidate.usage & !allowed_usage(hal) != 0 {
                if candidate.usage & HAL_USAGE_MAPPING_OPTIONAL == 0 {
                    continue;
                }
                candidate.usage &= !HAL_USAGE_MAPPING;
                if candidate.usage & !allowed_usage(hal) != 0 {
                    continue;
                }
            }
            let score = score(candidate, hal);
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((index as u32, score));
            }
        }
        best.map(|(index, _)| index)
    })
}

/// The memory type of a staging buffer (and of a submission's mirror of memory the device did
/// not make), among the types `allowed`: host-visible as the driver reports it (a forced mode
/// only changes where the program's buffers go), preferring memory in the host's heap (not
/// device-local: IREE's "bulk" transfer memory), then host-cached (the host reads results back
/// through it), then host-coherent.
fn staging_memory_type(context: &VulkanContext, allowed: u32) -> Option<u32> {
    let reported: Vec<Flags> = context
        .memory
        .memory_types_as_slice()
        .iter()
        .map(|t| t.property_flags)
        .collect();
    choose_staging_type(&reported, allowed)
}

/// [`staging_memory_type`] over the types' properties as reported.
fn choose_staging_type(reported: &[Flags], allowed: u32) -> Option<u32> {
    let mut best: Option<(u32, u32)> = None;
    for (index, &flags) in reported.iter().enumerate() {
        if index >= 32
            || allowed & (1 << index) == 0
            || !flags.contains(Flags::HOST_VISIBLE)
            || flags.intersects(Flags::LAZILY_ALLOCATED | Flags::PROTECTED)
        {
            continue;
        }
        let score = u32::from(!flags.contains(Flags::DEVICE_LOCAL)) * 4
            + u32::from(flags.contains(Flags::HOST_CACHED)) * 2
            + u32::from(flags.contains(Flags::HOST_COHERENT));
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((index as u32, score));
        }
    }
    best.map(|(index, _)| index)
}

/// The usages every buffer is made with: bound as storage by dispatches, copied, read as
/// indirect workgroup counts.
fn buffer_usage() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST
        | vk::BufferUsageFlags::INDIRECT_BUFFER
}

/// Which memory a [`BoundBuffer`] is made in.
#[derive(Clone, Copy)]
enum Purpose {
    /// A program's buffer: the type [`device_memory_type`] chooses for these params.
    Device(BufferParams),
    /// A staging buffer or a mirror: [`staging_memory_type`], always mapped.
    Staging,
}

/// A `VkBuffer`, the memory it is bound to, and that memory's mapping when the host may map
/// it. Destroyed by its owner ([`DeviceAllocation`]'s `drop`).
struct BoundBuffer {
    buffer: vk::Buffer,
    /// Where its memory is (a block's range, or an allocation of its own).
    placement: Placement,
    /// The buffer's first byte in the host's mapping; null when the memory is not mapped.
    mapped: *mut u8,
    /// Whether the host's and the device's accesses need no flush or invalidation.
    coherent: bool,
}

impl BoundBuffer {
    /// A buffer of `size` bytes in the memory `purpose` says, mapped when that memory is
    /// host-visible as the device's memory mode presents it.
    fn new(
        context: &VulkanContext,
        size: u64,
        purpose: Purpose,
    ) -> Result<BoundBuffer, StatusError> {
        let device = &context.device;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(buffer_usage())
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a valid device and create info.
        let buffer = unsafe { device.create_buffer(&info, None) }
            .map_err(|e| vk_error(&format!("vkCreateBuffer of {size} bytes"), e))?;
        // Each later failure destroys what was made before it.
        let destroy_buffer = |error: StatusError| {
            // SAFETY: the buffer was made above and nothing else holds it.
            unsafe { device.destroy_buffer(buffer, None) };
            error
        };
        // SAFETY: a buffer of this device.
        let requirements = unsafe { device.get_buffer_memory_requirements(buffer) };
        let allowed = requirements.memory_type_bits;
        let chosen = match purpose {
            Purpose::Device(params) => device_memory_type(context, params, allowed)
                .map(|index| (index, presented_flags(context, index as usize))),
            Purpose::Staging => staging_memory_type(context, allowed).map(|index| {
                let reported = context.memory.memory_types_as_slice()[index as usize];
                let mut flags = reported.property_flags;
                if context.memory_mode == VulkanMemoryMode::NonCoherent {
                    flags &= !Flags::HOST_COHERENT;
                }
                (index, flags)
            }),
        };
        let Some((memory_type, flags)) = chosen else {
            return Err(destroy_buffer(StatusError::new(
                StatusCode::Unavailable,
                format!(
                    "vulkan: device {} ({}) has no {} memory type for storage buffers",
                    context.index,
                    context.name,
                    match purpose {
                        Purpose::Device(_) => "usable",
                        Purpose::Staging => "host-visible",
                    }
                ),
            )));
        };
        let map = flags.contains(Flags::HOST_VISIBLE);
        let coherent = flags.contains(Flags::HOST_COHERENT);
        // 64 bytes at least, so the mapped address is as aligned as `HostMemory` needs (a
        // mapping starts at `minMemoryMapAlignment`, 64 or more); whole atoms for memory that
        // is flushed, so flushing one buffer's range never touches another's bytes.
        let mut alignment = requirements.alignment.max(64);
        if map && !coherent {
            alignment = alignment.max(context.limits.non_coherent_atom_size);
        }
        // A forced mode only takes properties away: memory mapped here is host-visible as
        // reported.
        let placement = context
            .blocks
            .allocate(
                device,
                buffer,
                memory_type,
                requirements.size,
                alignment,
                map,
            )
            .map_err(|(what, e)| {
                destroy_buffer(vk_error(&format!("{what} for a buffer of {size} bytes"), e))
            })?;
        // SAFETY: a range of memory of a type the buffer allows, at a multiple of its
        // alignment, holding its size; bound once.
        let bound =
            unsafe { device.bind_buffer_memory(buffer, placement.memory, placement.offset) };
        if let Err(e) = bound {
            // SAFETY: the placement was made above for this buffer, which is unused.
            unsafe { context.blocks.free(device, &placement) };
            return Err(destroy_buffer(vk_error("vkBindBufferMemory", e)));
        }
        Ok(BoundBuffer {
            buffer,
            mapped: placement.mapped,
            placement,
            coherent,
        })
    }
    /// Destroys the buffer and gives its memory back.
    ///
    /// # Safety
    /// Made on `context`'s device, called once, with no submitted work using the buffer.
    unsafe fn destroy(&self, context: &VulkanContext) {
        // SAFETY: the caller's contract: objects of the device, destroyed once, unused; the
        // buffer goes first, then its memory.
        unsafe {
            context.device.destroy_buffer(self.buffer, None);
            context.blocks.free(&context.device, &self.placement);
        }
    }

    /// The mapped-memory range covering bytes `start..end` of the buffer, widened to the
    /// device's `nonCoherentAtomSize` as flushes and invalidations require.
    fn atom_range(
        &self,
        context: &VulkanContext,
        start: u64,
        end: u64,
    ) -> vk::MappedMemoryRange<'static> {
        // In the memory's bytes: the buffer starts at its placement's offset, a whole number
        // of atoms (its alignment), and its reserved range ends on an atom too.
        let (start, end) = (start + self.placement.offset, end + self.placement.offset);
        let atom = context.limits.non_coherent_atom_size.max(1);
        let offset = start - start % atom;
        let end = end.div_ceil(atom).saturating_mul(atom);
        let size = if end >= self.placement.memory_size {
            vk::WHOLE_SIZE
        } else {
            end - offset
        };
        vk::MappedMemoryRange::default()
            .memory(self.placement.memory)
            .offset(offset)
            .size(size)
    }
}

/// One buffer of the device: the `VkBuffer` its work binds, and where the host reaches its
/// bytes (that buffer's own mapped memory, or a staging buffer). Destroyed when the last
/// [`HostMemory`] over it is dropped; the device's queue holds every buffer a submission uses
/// until the submission has completed, so no work of the device uses it then.
pub(crate) struct DeviceAllocation {
    pub(super) context: Arc<VulkanContext>,
    /// The buffer dispatches and transfers bind.
    pub(super) buffer: vk::Buffer,
    /// `buffer` and its memory.
    device_side: BoundBuffer,
    /// The host-visible buffer holding the bytes between submissions, when `buffer`'s memory
    /// is not host-visible.
    staging: Option<BoundBuffer>,
    /// The buffer's size in bytes (at least 4: Vulkan has no empty buffers).
    pub(super) size: u64,
}

impl fmt::Debug for DeviceAllocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAllocation")
            .field("buffer", &self.buffer)
            .field("size", &self.size)
            .field("staged", &self.staging.is_some())
            .finish()
    }
}

// SAFETY: the handles are plain identifiers that Vulkan lets any thread use (buffer and
// memory objects need external synchronisation only when destroyed, which happens once, in
// `drop`); the mappings are only handed to `HostMemory`, which shares them as atomic cells.
unsafe impl Send for DeviceAllocation {}
// SAFETY: as above: nothing is mutated through `&DeviceAllocation` (flushes and invalidations
// are calls on the device that Vulkan lets any thread make).
unsafe impl Sync for DeviceAllocation {}

impl Drop for DeviceAllocation {
    fn drop(&mut self) {
        // SAFETY: both buffers were made on `context.device`, are destroyed once, here, and no
        // submitted work uses them (a submission holds its buffers until it has completed).
        unsafe {
            self.device_side.destroy(&self.context);
            if let Some(staging) = &self.staging {
                staging.destroy(&self.context);
            }
        }
    }
}

impl DeviceAllocation {
    /// A program's buffer of `size` bytes (rounded up to a multiple of 4, at least 4) in the
    /// memory `params` ask for, with a staging buffer when that memory is not host-visible.
    pub(super) fn new(
        context: &Arc<VulkanContext>,
        params: BufferParams,
        size: u64,
    ) -> Result<Arc<DeviceAllocation>, StatusError> {
        DeviceAllocation::made(context, size, Purpose::Device(params))
    }

    /// A host-visible buffer of `size` bytes (rounded as [`DeviceAllocation::new`] rounds):
    /// a submission's mirror of memory the device did not make.
    pub(super) fn host_visible(
        context: &Arc<VulkanContext>,
        size: u64,
    ) -> Result<Arc<DeviceAllocation>, StatusError> {
        DeviceAllocation::made(context, size, Purpose::Staging)
    }

    fn made(
        context: &Arc<VulkanContext>,
        size: u64,
        purpose: Purpose,
    ) -> Result<Arc<DeviceAllocation>, StatusError> {
        let size = size.max(4).div_ceil(4) * 4;
        let device_side = BoundBuffer::new(context, size, purpose)?;
        let staging = if device_side.mapped.is_null() {
            match BoundBuffer::new(context, size, Purpose::Staging) {
                Ok(staging) => Some(staging),
                Err(e) => {
                    // SAFETY: made above, never used, destroyed once.
                    unsafe { device_side.destroy(context) };
                    return Err(e);
                }
            }
        } else {
            None
        };
        Ok(Arc::new(DeviceAllocation {
            context: context.clone(),
            buffer: device_side.buffer,
            device_side,
            staging,
            size,
        }))
    }

    /// Where the host reaches the bytes: the staging buffer, or the buffer's own memory.
    fn host_side(&self) -> &BoundBuffer {
        self.staging.as_ref().unwrap_or(&self.device_side)
    }

    /// Whether the host reaches the bytes through a staging buffer.
    pub(super) fn is_staged(&self) -> bool {
        self.staging.is_some()
    }

    /// A [`HostMemory`] block over the first `len` bytes of the host's mapping, holding the
    /// allocation until the block is dropped.
    pub(super) fn host_memory(
        self: &Arc<DeviceAllocation>,
        len: u64,
    ) -> Result<HostMemory, StatusError> {
        let len = usize::try_from(len.min(self.size)).unwrap_or(0).max(1);
        let mapped = self.host_side().mapped;
        let owner: Arc<dyn Any + Send + Sync> = self.clone();
        if mapped.is_null() {
            return Err(StatusError::new(
                StatusCode::Internal,
                format!(
                    "vulkan: device {} made a buffer without a mapping for the host",
                    self.context.index
                ),
            ));
        }
        // The host reaches these bytes only as atomic cells (`HostMemory`): a device write
        // racing a host access gives unspecified bytes, never undefined behaviour. Submissions
        // copy staged ranges and flush/invalidate non-coherent ones around them (`HostSync`).
        // SAFETY: the mapping covers `size` bytes and stays mapped while the allocation lives.
        unsafe { HostMemory::device_mapped(mapped, len, owner) }.ok_or_else(|| {
            StatusError::new(
                StatusCode::Internal,
                format!(
                    "vulkan: device {} mapped memory at {mapped:p}, not 64-byte aligned",
                    self.context.index
                ),
            )
        })
    }
}

/// What keeps one submission's buffers in step with the host: for each device allocation it
/// uses (by its `Arc`'s address), the hull of the byte ranges it binds. Before the work, ranges
/// of non-coherent memory the host wrote are flushed and staged ranges are copied to the
/// device; after it, staged ranges are copied back and non-coherent ranges invalidated.
#[derive(Default)]
pub(super) struct HostSync<'a> {
    ranges: Vec<(&'a DeviceAllocation, u64, u64)>,
}

impl<'a> HostSync<'a> {
    /// Adds bytes `start..start+len` of `allocation`.
    pub(super) fn add(&mut self, allocation: &'a DeviceAllocation, start: u64, len: u64) {
        let needs_care = allocation.is_staged() || !allocation.host_side().coherent;
        if !needs_care || len == 0 {
            return;
        }
        let end = (start + len).min(allocation.size);
        match self
            .ranges
            .iter_mut()
            .find(|(a, _, _)| std::ptr::eq(*a, allocation))
        {
            Some((_, s, e)) => {
                *s = (*s).min(start);
                *e = (*e).max(end);
            }
            None => self.ranges.push((allocation, start, end)),
        }
    }

    /// The non-coherent host-side ranges, as flushes and invalidations take them.
    fn non_coherent(&self) -> Vec<vk::MappedMemoryRange<'static>> {
        self.ranges
            .iter()
            .filter(|(a, _, _)| !a.host_side().coherent)
            .map(|(a, s, e)| a.host_side().atom_range(&a.context, *s, *e))
            .collect()
    }

    /// Makes the host's writes to non-coherent memory available to the device: before the
    /// submission.
    pub(super) fn flush_host_writes(&self, device: &ash::Device) -> Result<(), StatusError> {
        let ranges = self.non_coherent();
        if ranges.is_empty() {
            return Ok(());
        }
        // SAFETY: ranges of mapped memory of this device (the host sides are mapped for their
        // allocations' lives, which the submission holds), aligned to `nonCoherentAtomSize` or
        // reaching the allocation's end.
        unsafe { device.flush_mapped_memory_ranges(&ranges) }
            .map_err(|e| vk_error("vkFlushMappedMemoryRanges", e))
    }

    /// Records the copies of staged ranges to the device's buffers, and a barrier making them
    /// visible to all later work: first in the command buffer's work, after the barrier on
    /// everything submitted before (queued batches do not wait for each other).
    pub(super) fn record_uploads(&self, device: &ash::Device, commands: vk::CommandBuffer) {
        self.record_copies(device, commands, true);
    }

    /// Records the copies of staged ranges back to their staging buffers: last in the command
    /// buffer, after the barrier that ends the work (the final barrier to the host covers the
    /// copies' writes).
    pub(super) fn record_downloads(&self, device: &ash::Device, commands: vk::CommandBuffer) {
        self.record_copies(device, commands, false);
    }

    fn record_copies(&self, device: &ash::Device, commands: vk::CommandBuffer, upload: bool) {
        let mut any = false;
        for (allocation, start, end) in &self.ranges {
            let Some(staging) = &allocation.staging else {
                continue;
            };
            if end <= start {
                continue;
            }
            let region = [vk::BufferCopy::default()
                .src_offset(*start)
                .dst_offset(*start)
                .size(end - start)];
            let (from, to) = if upload {
                (staging.buffer, allocation.buffer)
            } else {
                (allocation.buffer, staging.buffer)
            };
            // SAFETY: the command buffer is recording; both buffers are this device's, alive
            // until the submission completes (the caller holds the allocation), distinct, and
            // at least `end` bytes long; `region` lives across the call.
            unsafe { device.cmd_copy_buffer(commands, from, to, &region) };
            any = true;
        }
        if upload && any {
            let barrier = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(every_later_access())];
            // SAFETY: the command buffer is recording; the barrier array lives across the call.
            unsafe {
                device.cmd_pipeline_barrier(
                    commands,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::COMPUTE_SHADER
                        | vk::PipelineStageFlags::TRANSFER
                        | vk::PipelineStageFlags::DRAW_INDIRECT,
                    vk::DependencyFlags::empty(),
                    &barrier,
                    &[],
                    &[],
                )
            };
        }
    }

    /// What makes the device's writes to non-coherent memory visible to the host, to be done
    /// once the submission has completed ([`HostInvalidation::apply`]); kept by the queue with
    /// the submission, which holds the allocations until then.
    pub(super) fn invalidation(&self) -> HostInvalidation {
        HostInvalidation {
            ranges: self
                .non_coherent()
                .iter()
                .map(|r| (r.memory, r.offset, r.size))
                .collect(),
        }
    }
}

/// The ranges of non-coherent mapped memory a submission wrote (memory, offset, size, aligned
/// as [`HostSync`] rounds them), to be invalidated once it has completed and before the host
/// reads them: when the queue retires the submission (before a semaphore it signals reports
/// the value to the host), or right after the wait of a submission the host waits for.
#[derive(Default)]
pub(super) struct HostInvalidation {
    ranges: Vec<(vk::DeviceMemory, u64, u64)>,
}

impl HostInvalidation {
    /// Invalidates the ranges. The caller has seen the submission complete and still holds
    /// the allocations (and so the blocks) the ranges lie in.
    pub(super) fn apply(&self, device: &ash::Device) -> Result<(), StatusError> {
        if self.ranges.is_empty() {
            return Ok(());
        }
        let ranges: Vec<vk::MappedMemoryRange<'static>> = self
            .ranges
            .iter()
            .map(|&(memory, offset, size)| {
                vk::MappedMemoryRange::default()
                    .memory(memory)
                    .offset(offset)
                    .size(size)
            })
            .collect();
        // SAFETY: as for the flush: mapped ranges of live allocations of this device (held by
        // the caller), aligned to `nonCoherentAtomSize` or reaching the memory's end.
        unsafe { device.invalidate_mapped_memory_ranges(&ranges) }
            .map_err(|e| vk_error("vkInvalidateMappedMemoryRanges", e))
    }
}

/// The allocator of a [`VulkanDevice`](super::VulkanDevice): every buffer its own device
/// allocation, in the memory its params ask for.
pub(crate) struct VulkanAllocator {
    pub(super) context: Arc<VulkanContext>,
    pub(super) budget: Option<Arc<MemoryBudget>>,
}

impl fmt::Debug for VulkanAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VulkanAllocator")
            .field("device", &self.context)
            .finish()
    }
}

impl HalAllocator for VulkanAllocator {
    fn allocate(&self, params: BufferParams, size: i64) -> Result<HalBuffer, StatusError> {
        let length = u64::try_from(size).map_err(|_| {
            StatusError::invalid_argument(format!("allocation size {size} is negative"))
        })?;
        let allocation = DeviceAllocation::new(&self.context, params, length)?;
        let buffer =
            HalBuffer::device_memory(allocation.host_memory(length)?, self.budget.as_ref())?;
        // An empty buffer is an empty view of a 4-byte allocation.
        if length == 0 {
            buffer.subspan(0, 0)
        } else {
            Ok(buffer)
        }
    }

    fn import_copy(&self, params: BufferParams, bytes: &[u8]) -> Result<HalBuffer, StatusError> {
        let buffer = self.allocate(params, bytes.len() as i64)?;
        buffer.write(0, bytes)?;
        Ok(buffer)
    }
}

/// The device allocation of `context` that `memory` maps, if any.
pub(super) fn allocation_of<'m>(
    memory: &'m HostMemory,
    context: &Arc<VulkanContext>,
) -> Option<&'m DeviceAllocation> {
    let allocation = memory.device_allocation()?;
    let allocation = (**allocation).downcast_ref::<DeviceAllocation>()?;
    Arc::ptr_eq(&allocation.context, context).then_some(allocation)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DL: Flags = Flags::DEVICE_LOCAL;
    const HV: Flags = Flags::HOST_VISIBLE;
    const HC: Flags = Flags::HOST_COHERENT;
    const CACHED: Flags = Flags::HOST_CACHED;

    /// A discrete GPU's memory types, as NVIDIA's and AMD's drivers list them.
    fn discrete() -> Vec<Flags> {
        vec![DL, HV | HC, HV | HC | CACHED, DL | HV | HC]
    }

    fn params(memory_type: u32, usage: u32) -> BufferParams {
        BufferParams { memory_type, usage }
    }

    const ALL: u32 = u32::MAX;
    /// What compiled programs ask for their buffers: transfer and dispatch storage.
    const STORAGE: u32 = 3075;
    const MAPPED: u32 = 1 << 24;

    #[test]
    fn buffers_go_where_iree_places_them() {
        let types = discrete();
        // Device-local dispatch storage: device-local memory, the host-visible one (the BAR)
        // scoring 5 more, as in IREE.
        let device = params(HAL_DEVICE_LOCAL, STORAGE);
        assert_eq!(choose_device_type(&types, device, ALL), Some(3));
        // Without a host-visible device-local type: the device's own memory (then staged).
        assert_eq!(choose_device_type(&[DL, HV | HC], device, ALL), Some(0));
        assert_eq!(choose_device_type(&types, device, 0b0001), Some(0));
        // Host-local, device-visible and mapped: host memory, cached scoring more.
        let host = params(HAL_HOST_LOCAL | HAL_DEVICE_VISIBLE, STORAGE | MAPPED);
        assert_eq!(choose_device_type(&types, host, ALL), Some(2));
        // A mapping usage needs host-visible memory...
        let mapped = params(HAL_DEVICE_LOCAL, STORAGE | MAPPED);
        assert_eq!(choose_device_type(&types, mapped, ALL), Some(3));
        // ...unless the mapping is optional: then it is dropped where it cannot be had.
        let optional = params(
            HAL_DEVICE_LOCAL,
            STORAGE | MAPPED | HAL_USAGE_MAPPING_OPTIONAL,
        );
        assert_eq!(choose_device_type(&[DL, HV | HC], optional, ALL), Some(0));
        // Optimal for the host: host-local memory.
        let optimal = params(HAL_OPTIMAL_FOR_HOST, STORAGE);
        assert_eq!(choose_device_type(&types, optimal, ALL), Some(1));
    }

    #[test]
    fn requests_no_type_satisfies_are_relaxed_instead_of_refused() {
        // lavapipe in the forced `device-local-only` mode: its one type, presented without the
        // host properties, serves even host-local requests (through staging).
        let host = params(HAL_HOST_LOCAL | HAL_DEVICE_VISIBLE, STORAGE | MAPPED);
        assert_eq!(choose_device_type(&[DL], host, ALL), Some(0));
        // `non-coherent`: a coherent request takes the non-coherent type (flushed).
        let coherent = params(HAL_HOST_VISIBLE | HAL_HOST_COHERENT, STORAGE);
        assert_eq!(
            choose_device_type(&[DL | HV | CACHED], coherent, ALL),
            Some(0)
        );
        // Lazily allocated and protected types are never used.
        let odd = [DL | Flags::LAZILY_ALLOCATED, DL | Flags::PROTECTED];
        let device = params(HAL_DEVICE_LOCAL, STORAGE);
        assert_eq!(choose_device_type(&odd, device, ALL), None);
    }

    #[test]
    fn staging_prefers_host_memory_then_cached_then_coherent() {
        assert_eq!(choose_staging_type(&discrete(), ALL), Some(2));
        assert_eq!(choose_staging_type(&[DL, DL | HV | HC], ALL), Some(1));
        assert_eq!(choose_staging_type(&[DL], ALL), None);
    }
}
