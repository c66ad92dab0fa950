//! Device memory: every buffer is a `VkBuffer` bound to a dedicated allocation of
//! host-visible, host-coherent memory, mapped for as long as it lives, so the HAL, the VM and
//! the host read and write its bytes in place through the mapping ([`HostMemory::device_mapped`])
//! and dispatches bind the `VkBuffer`.
//!
//! Device-local memory that the host cannot map (discrete GPUs' fastest memory, reached
//! through staging copies) and sub-allocation from large blocks are not done yet: a discrete
//! GPU runs from the host-visible memory it offers, and each buffer is one allocation.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use ash::vk;

use super::context::{VulkanContext, vk_error};
use crate::hal::allocator::{BufferParams, HalAllocator};
use crate::hal::buffer::HalBuffer;
use crate::host_memory::HostMemory;
use crate::memory_budget::MemoryBudget;
use crate::status::{StatusCode, StatusError};

/// The usages every buffer is made with: bound as storage by dispatches, copied, read as
/// indirect workgroup counts.
fn buffer_usage() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST
        | vk::BufferUsageFlags::INDIRECT_BUFFER
}

/// One `VkBuffer` and the memory it is bound to, mapped at `mapped`. Destroyed (unmapped,
/// buffer destroyed, memory freed) when the last [`HostMemory`] over it is dropped; the
/// device's queue holds every buffer a submission uses until the submission completes, so no
/// work of the device uses it then.
pub(crate) struct DeviceAllocation {
    pub(super) context: Arc<VulkanContext>,
    pub(super) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    mapped: *mut u8,
    /// The buffer's size in bytes (at least 4: Vulkan has no empty buffers).
    pub(super) size: u64,
}

impl fmt::Debug for DeviceAllocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceAllocation")
            .field("buffer", &self.buffer)
            .field("size", &self.size)
            .finish()
    }
}

// SAFETY: the handles are plain identifiers that Vulkan lets any thread use (buffer and
// memory objects need external synchronisation only when destroyed, which happens once, in
// `drop`); `mapped` is only handed to `HostMemory`, which shares it as atomic cells.
unsafe impl Send for DeviceAllocation {}
// SAFETY: as above: nothing is mutated through `&DeviceAllocation`.
unsafe impl Sync for DeviceAllocation {}

impl Drop for DeviceAllocation {
    fn drop(&mut self) {
        // SAFETY: the objects were made on `context.device`, are destroyed once, here, and no
        // submitted work uses them (a submission holds its buffers until it completes).
        unsafe {
            self.context.device.unmap_memory(self.memory);
            self.context.device.destroy_buffer(self.buffer, None);
            self.context.device.free_memory(self.memory, None);
        }
    }
}

impl DeviceAllocation {
    /// A new buffer of `size` bytes (rounded up to a multiple of 4, at least 4), mapped.
    pub(super) fn new(
        context: &Arc<VulkanContext>,
        size: u64,
    ) -> Result<Arc<DeviceAllocation>, StatusError> {
        let size = size.max(4).div_ceil(4) * 4;
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
        let Some(memory_type) = context.host_visible_memory_type(requirements.memory_type_bits)
        else {
            return Err(destroy_buffer(StatusError::new(
                StatusCode::Unavailable,
                format!(
                    "vulkan: device {} ({}) has no host-visible, host-coherent memory for \
                     storage buffers (device-local memory with staging is not done yet)",
                    context.index, context.name
                ),
            )));
        };
        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(buffer);
        let allocate = vk::MemoryAllocateInfo::default()
            .allocation_size(requirements.size)
            .memory_type_index(memory_type)
            .push_next(&mut dedicated);
        // SAFETY: a valid allocate info whose chain lives across the call.
        let memory = unsafe { device.allocate_memory(&allocate, None) }.map_err(|e| {
            destroy_buffer(vk_error(&format!("vkAllocateMemory of {size} bytes"), e))
        })?;
        let free_all = |error: StatusError| {
            // SAFETY: made above, not used by anything else.
            unsafe { device.free_memory(memory, None) };
            destroy_buffer(error)
        };
        // SAFETY: the memory is new, of the buffer's requirements, bound at offset 0.
        unsafe { device.bind_buffer_memory(buffer, memory, 0) }
            .map_err(|e| free_all(vk_error("vkBindBufferMemory", e)))?;
        // SAFETY: host-visible memory, not mapped yet, mapped whole.
        let mapped =
            unsafe { device.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .map_err(|e| free_all(vk_error("vkMapMemory", e)))?;
        Ok(Arc::new(DeviceAllocation {
            context: context.clone(),
            buffer,
            memory,
            mapped: mapped.cast::<u8>(),
            size,
        }))
    }

    /// A [`HostMemory`] block over the first `len` bytes of the mapping, holding the
    /// allocation until the block is dropped.
    pub(super) fn host_memory(
        self: &Arc<DeviceAllocation>,
        len: u64,
    ) -> Result<HostMemory, StatusError> {
        let len = usize::try_from(len.min(self.size)).unwrap_or(0).max(1);
        let owner: Arc<dyn Any + Send + Sync> = self.clone();
        // SAFETY: the mapping covers `size` bytes, stays mapped while the allocation lives
        // (the block holds it), and is host-coherent; the device touches it only in work the
        // HAL submits, which is ordered with the host's accesses by its fences.
        unsafe { HostMemory::device_mapped(self.mapped, len, owner) }.ok_or_else(|| {
            StatusError::new(
                StatusCode::Internal,
                format!(
                    "vulkan: device {} mapped memory at {:p}, not 64-byte aligned",
                    self.context.index, self.mapped
                ),
            )
        })
    }
}

/// The allocator of a [`VulkanDevice`](super::VulkanDevice): every buffer its own mapped
/// device allocation.
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
    fn allocate(&self, _params: BufferParams, size: i64) -> Result<HalBuffer, StatusError> {
        let length = u64::try_from(size).map_err(|_| {
            StatusError::invalid_argument(format!("allocation size {size} is negative"))
        })?;
        let allocation = DeviceAllocation::new(&self.context, length)?;
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
