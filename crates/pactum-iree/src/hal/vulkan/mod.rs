//! The Vulkan HAL driver: [`VulkanDevice`], a [`HalDevice`] on any Vulkan 1.1+ driver with
//! timeline semaphores (core in Vulkan 1.2) the loader finds (lavapipe, Mesa's CPU driver, in
//! pactum's tests), running IREE's `vulkan-spirv-fb` executables (`iree-compile --iree-hal-target-device=vulkan`).
//!
//! libvulkan is loaded when a device is made (`ash`'s `loaded` feature), so pactum builds and
//! runs on machines without Vulkan; there, making a device fails `UNAVAILABLE` naming what is
//! missing (the loader, or any driver).
//!
//! - `context`: the loader, instance, physical device (`vulkan` is the loader's first,
//!   `vulkan://N` its `N`-th), a logical device with every core feature the driver has
//!   enabled, one compute queue, memory types.
//! - `blocks`: device memory taken in 32 MiB blocks per memory type, buffers of up to 8 MiB
//!   sub-allocated from them (first fit, freed ranges merged and reused), larger ones given an
//!   allocation each.
//! - `memory`: each buffer a `VkBuffer` in memory of the type IREE's driver would place it in
//!   (by the HAL memory type and usage the program asks); the host, the VM and the HAL read and
//!   write its bytes in place ([`HostMemory::device_mapped`](crate::host_memory::HostMemory))
//!   through its own mapping when the memory is host-visible, otherwise through a staging
//!   buffer that each submission copies to and from the device (the copies recorded in the
//!   submission's own command buffer); non-coherent memory is flushed before each submission
//!   and invalidated once the queue sees it complete. [`VulkanMemoryMode`]
//!   (`PACTUM_VULKAN_MEMORY=device-local-only` or `non-coherent`) forces those paths on a
//!   device that does not need them (lavapipe).
//! - `options`: what a device is opened with ([`VulkanOptions`]: the memory mode).
//! - `spirv_fb`: the executable format's reader (safe code, every offset checked).
//! - `executable`: shader modules, descriptor set layouts, pipeline layouts and one compute
//!   pipeline per export, made once when the executable is created.
//! - `timeline`: the device's semaphores ([`HalDevice::create_semaphore`], `hal.fence.create`),
//!   each a Vulkan timeline semaphore behind a [`HalSemaphore`].
//! - `queue`: queue operations as batches submitted with their fences' waits and signals on the
//!   device (`VkTimelineSemaphoreSubmitInfo`): the call returns once the batch is submitted,
//!   and what it uses is held until the device completes it. The host's side of memory the
//!   batch reaches is settled around it: staged ranges are copied in and out by the batch's
//!   own commands, non-coherent ranges flushed before the submit and invalidated when the
//!   batch is retired, which happens before any of its semaphores reports the value it
//!   signalled to the host. Recorded command lists run as `VkCommandBuffer`s; transfers
//!   Vulkan cannot do as recorded (unaligned fills and updates, 8-byte patterns, overlapping
//!   copies), dispatches of buffers the device did not make (mirrored), file reads, and
//!   operations signalling semaphores the device did not make run on the host's terms: the
//!   host waits for the wait fence, the work completes, the host signals.
//!
//! Not done yet (IREE's driver does them): staging only on demand (a buffer the host cannot
//! map keeps a staging buffer of its size for its life, and a submission copies every range
//! it binds both ways, where IREE copies only what the program transfers); mirrors filled and
//! read back by the device, so that operations on host memory need not wait on the host; a
//! flush of non-coherent memory the host writes after a batch that waits for a device
//! semaphore was submitted and before the host signals that semaphore (the flush is made at
//! the submit: a program that writes mapped non-coherent memory for work already queued must
//! not rely on it; lavapipe's memory is coherent, so only the forced `non-coherent` mode has
//! this case, and there the memory is coherent underneath); unaligned
//! transfers on the device (IREE uses built-in shaders for their edges); finer barriers than a
//! full one after each step; executable-level constants; collectives.
//!
//! **Trust.** The SPIR-V goes to the driver as the module carries it: pactum checks the
//! FlatBuffer around it (every offset, count and ordinal), not the shaders. A hostile shader
//! can do what the driver lets a compute shader do: read and write out of bounds of its
//! bindings where the driver does not enforce robust access (pactum enables
//! `robustBufferAccess` when the driver offers it), hang the device (pactum waits for a
//! submission without a bound, and a dropped device waits for its queued work), or crash a buggy driver's compiler. Indirect workgroup counts
//! (read by the device) and a required subgroup size against the device's range are not
//! checked against the device's limits yet. On lavapipe a shader runs
//! as machine code on the CPU, in this process. The VM around it stays verified and budgeted.

mod blocks;
mod context;
mod executable;
mod memory;
mod options;
mod queue;
mod spirv_fb;
mod timeline;

use std::sync::Arc;

pub use executable::{VULKAN_SPIRV_FORMAT, VulkanExecutable};
pub use options::{VulkanMemoryMode, VulkanOptions};
pub use spirv_fb::{
    ExecutableDef, LayoutBinding, PipelineDef, PipelineLayoutDef, PushConstantRange,
};

use context::VulkanContext;
use memory::VulkanAllocator;
use queue::Queue;
use timeline::VulkanTimeline;

use super::allocator::{BufferParams, HalAllocator};
use super::buffer::{Binding, HalBuffer};
use super::command::{BufferRef, Command, HalCommandBuffer};
use super::device::{HalDevice, Submission, id_matches, run_now};
use super::executable::HalExecutable;
use super::file::HalFile;
use super::semaphore::HalSemaphore;
use crate::memory_budget::MemoryBudget;
use crate::status::{StatusCode, StatusError};

/// IREE's identifier of Vulkan devices (what `hal.device.id` patterns match).
pub const VULKAN_DEVICE_ID: &str = "vulkan";

/// A Vulkan device. Clones share the Vulkan device and its queue (submissions made one at a
/// time, run in order; the last clone dropped waits for the queued ones); [`with_memory_budget`](Self::with_memory_budget) gives a clone charging its own
/// budget, one per VM context.
#[derive(Clone, Debug)]
pub struct VulkanDevice {
    context: Arc<VulkanContext>,
    allocator: Arc<VulkanAllocator>,
    queue: Arc<Queue>,
}

impl VulkanDevice {
    /// A device on the Vulkan loader's `index`-th physical device (0: `vulkan`, `N`:
    /// `vulkan://N`), with the options the environment gives ([`VulkanOptions::from_env`]:
    /// `PACTUM_VULKAN_MEMORY`). `UNAVAILABLE` when there is no loader or no driver,
    /// `NOT_FOUND` (listing the devices) when there are fewer, `INVALID_ARGUMENT` for an
    /// unknown memory mode.
    pub fn open(index: usize) -> Result<VulkanDevice, StatusError> {
        VulkanDevice::open_with_options(index, VulkanOptions::from_env()?)
    }

    /// A device on the Vulkan loader's `index`-th physical device with `options` (the
    /// environment is not read).
    pub fn open_with_options(
        index: usize,
        options: VulkanOptions,
    ) -> Result<VulkanDevice, StatusError> {
        let context = Arc::new(VulkanContext::open(index, options.memory)?);
        let queue = Arc::new(Queue::new(&context)?);
        Ok(VulkanDevice {
            allocator: Arc::new(VulkanAllocator {
                context: context.clone(),
                budget: None,
            }),
            context,
            queue,
        })
    }

    /// The device a device name chooses: `vulkan` (the first) or `vulkan://N`; `None` for
    /// a name that is not a Vulkan device's.
    pub fn open_named(name: &str) -> Option<Result<VulkanDevice, StatusError>> {
        let index = parse_device_name(name)?;
        Some(index.and_then(VulkanDevice::open))
    }

    /// The device (sharing the Vulkan device and queue) with its buffers charged to `budget`
    /// (a VM context's).
    pub fn with_memory_budget(&self, budget: Option<Arc<MemoryBudget>>) -> VulkanDevice {
        VulkanDevice {
            allocator: Arc::new(VulkanAllocator {
                context: self.context.clone(),
                budget,
            }),
            ..self.clone()
        }
    }

    /// The driver's name for the physical device (`llvmpipe (LLVM 19.1.7, 256 bits)`).
    pub fn device_name(&self) -> &str {
        &self.context.name
    }

    /// Which of the loader's physical devices this is.
    pub fn index(&self) -> usize {
        self.context.index
    }

    /// How the device's buffers use its memory types (the options it was opened with).
    pub fn memory_mode(&self) -> VulkanMemoryMode {
        self.context.memory_mode
    }

    /// How many blocks of device memory the device's buffers are sub-allocated from (buffers
    /// past 8 MiB have an allocation each, not counted).
    pub fn memory_block_count(&self) -> usize {
        self.context.blocks.block_count()
    }

    /// Whether the host reaches `buffer`'s bytes through a staging buffer (its memory is not
    /// host-visible, as the memory mode presents it); `None` for a buffer this device did not
    /// make.
    pub fn buffer_is_staged(&self, buffer: &HalBuffer) -> Option<bool> {
        let (memory, _) = buffer.memory_range(0, 0).ok()?;
        memory::allocation_of(memory, &self.context).map(|a| a.is_staged())
    }
}

/// The loader index a device name chooses: `Some(Ok(0))` for `vulkan`, `Some(Ok(N))` for
/// `vulkan://N`, `Some(Err)` for a malformed `vulkan://…`, `None` for other names.
pub fn parse_device_name(name: &str) -> Option<Result<usize, StatusError>> {
    if name == "vulkan" {
        return Some(Ok(0));
    }
    let index = name.strip_prefix("vulkan://")?;
    Some(index.parse::<usize>().map_err(|_| {
        StatusError::invalid_argument(format!(
            "device '{name}': expected `vulkan` or `vulkan://N` with N a device number"
        ))
    }))
}

impl HalDevice for VulkanDevice {
    fn id(&self) -> &str {
        VULKAN_DEVICE_ID
    }

    fn query_i64(&self, category: &str, key: &str) -> Option<i64> {
        match category {
            "hal.device.id" => Some(i64::from(id_matches(key, self.id()))),
            "hal.executable.format" => Some(i64::from(self.supports_executable_format(key))),
            // As IREE's Vulkan device: its queue count, and one dispatch at a time.
            "hal.device" | "hal.dispatch" if key == "concurrency" => Some(1),
            _ => None,
        }
    }

    fn allocator(&self) -> Arc<dyn HalAllocator> {
        self.allocator.clone()
    }

    fn supports_executable_format(&self, format: &str) -> bool {
        format == VULKAN_SPIRV_FORMAT
    }

    fn create_executable(
        &self,
        format: &str,
        data: Vec<u8>,
        constants: &[u32],
    ) -> Result<Arc<dyn HalExecutable>, StatusError> {
        if format != VULKAN_SPIRV_FORMAT {
            return Err(StatusError::new(
                StatusCode::Unimplemented,
                format!("the vulkan device does not run executables of format '{format}'"),
            ));
        }
        Ok(Arc::new(VulkanExecutable::load(
            &self.context,
            &data,
            constants,
        )?))
    }

    fn create_semaphore(&self, initial: u64) -> Result<HalSemaphore, StatusError> {
        VulkanTimeline::create(&self.context, self.queue.clone(), initial)
    }

    fn queue_alloca(
        &self,
        submission: Submission<'_>,
        params: BufferParams,
        size: i64,
    ) -> Result<HalBuffer, StatusError> {
        // The memory is made now (as IREE's driver makes it); the signal still waits for the
        // wait fence, which orders every use of the buffer after it. A failed wait fence is
        // the operation's error, before any allocation error.
        let made = submission
            .wait
            .is_reached()
            .and_then(|_| self.allocator.allocate(params, size));
        match made {
            Ok(buffer) => {
                self.queue.execute(submission, None, &[], Vec::new())?;
                Ok(buffer)
            }
            Err(error) => {
                submission.signal.fail(&error);
                Err(error)
            }
        }
    }

    fn queue_dealloca(
        &self,
        submission: Submission<'_>,
        buffer: &HalBuffer,
    ) -> Result<(), StatusError> {
        // The buffer is held until the device reaches the operation: work queued before it
        // may still use it.
        self.queue
            .execute(submission, None, &[], vec![buffer.clone()])
    }

    fn queue_fill(
        &self,
        submission: Submission<'_>,
        target: &HalBuffer,
        offset: i64,
        length: i64,
        pattern: u64,
        pattern_length: i64,
    ) -> Result<(), StatusError> {
        let fill = Command::Fill {
            target: BufferRef::Direct(target.clone()),
            offset,
            length,
            pattern,
            pattern_length,
        };
        self.queue
            .execute(submission, Some(Arc::from([fill])), &[], Vec::new())
    }

    fn queue_copy(
        &self,
        submission: Submission<'_>,
        source: &HalBuffer,
        source_offset: i64,
        target: &HalBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), StatusError> {
        let copy = Command::Copy {
            source: BufferRef::Direct(source.clone()),
            source_offset,
            target: BufferRef::Direct(target.clone()),
            target_offset,
            length,
        };
        self.queue
            .execute(submission, Some(Arc::from([copy])), &[], Vec::new())
    }

    fn queue_read(
        &self,
        submission: Submission<'_>,
        source: &HalFile,
        source_offset: i64,
        target: &HalBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), StatusError> {
        // The file is read on the host: after the wait fence, on the host.
        run_now(submission, || {
            source.checked_range(source_offset, length)?;
            target.range(target_offset, length)?;
            source.read_chunks(source_offset, length, |done, piece| {
                target.write(target_offset + done as i64, piece)
            })
        })
    }

    fn queue_execute(
        &self,
        submission: Submission<'_>,
        command_buffer: Option<&HalCommandBuffer>,
        binding_table: &[Binding],
    ) -> Result<(), StatusError> {
        self.queue.execute(
            submission,
            command_buffer.map(HalCommandBuffer::commands),
            binding_table,
            Vec::new(),
        )
    }
}
