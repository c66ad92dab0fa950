//! The device's queue: how a recorded command list runs.
//!
//! A command list is recorded into one `VkCommandBuffer`: per dispatch (or indirect dispatch)
//! the pipeline bound, a descriptor set per set layout written with the bound buffers, the
//! push constants pushed; fills of 1, 2 or 4-byte patterns and updates of 4-byte aligned
//! ranges as `vkCmdFillBuffer` and `vkCmdUpdateBuffer`, copies between ranges that do not
//! overlap as `vkCmdCopyBuffer`; a full barrier after each step (every shader and transfer
//! write visible to every later read, write and indirect count read: IREE's
//! `execution_barrier`s are subsumed by it), then a barrier making the writes visible to the
//! host. The command buffer is submitted with a `VkFence` and waited for before anything else
//! runs, so a queue operation completes before it returns, as the local device's do.
//!
//! The other transfers (unaligned fills and updates, 8-byte patterns, overlapping copies) run
//! on the host through the buffers' mappings, between submissions, in command order (all
//! memory is host-visible and coherent).
//!
//! A buffer the device did not make (a caller's tensor imported without a copy, the host
//! allocator's argument copies, a file's pages, another device's buffer) has no `VkBuffer`:
//! for each submission, the range of its memory that the dispatches bind is copied into a
//! temporary device buffer (a mirror) before the submission, and the bytes the dispatches
//! changed are copied back after it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};

use ash::vk;

use super::context::{VulkanContext, vk_error};
use super::executable::{Export, VulkanExecutable};
use super::memory::{DeviceAllocation, HostSync, allocation_of};
use crate::hal::buffer::{Binding, HalBuffer};
use crate::hal::command::{BufferRef, Command};
use crate::host_memory::HostMemory;
use crate::status::{StatusCode, StatusError};

fn invalid(message: impl Into<String>) -> StatusError {
    StatusError::invalid_argument(message)
}

/// The command pool, its one command buffer and the fence of submissions: used by one
/// submission at a time (Vulkan requires pools and queues to be externally synchronised).
struct Submitter {
    pool: vk::CommandPool,
    commands: vk::CommandBuffer,
    fence: vk::Fence,
}

/// The device's one queue.
pub(super) struct Queue {
    context: Arc<VulkanContext>,
    submitter: Mutex<Submitter>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let submitter = self.submitter.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: made on this device, destroyed once; every submission was waited for
        // before the call that made it returned.
        unsafe {
            self.context.device.destroy_fence(submitter.fence, None);
            self.context
                .device
                .destroy_command_pool(submitter.pool, None);
        }
    }
}

/// Where a dispatch operand lies: a range of a buffer's memory.
struct Operand {
    memory: Arc<HostMemory>,
    start: usize,
    len: usize,
    /// Holds the buffer (a subspan made for a table slot) until the submission completes.
    _buffer: HalBuffer,
}

/// A temporary device buffer standing for `len` bytes at `base` of memory the device did not
/// make.
struct Mirror {
    memory: Arc<HostMemory>,
    base: usize,
    end: usize,
    allocation: Option<Arc<DeviceAllocation>>,
    cells: Option<HostMemory>,
}

/// A bound range as the device sees it.
#[derive(Clone, Copy)]
struct DeviceRange {
    buffer: vk::Buffer,
    offset: u64,
    len: u64,
}

impl Queue {
    pub(super) fn new(context: &Arc<VulkanContext>) -> Result<Queue, StatusError> {
        let device = &context.device;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(context.queue_family)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT);
        // SAFETY: a valid device and create info.
        let pool = unsafe { device.create_command_pool(&info, None) }
            .map_err(|e| vk_error("vkCreateCommandPool", e))?;
        let allocate = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool was made above; the fence create info is valid.
        let made = unsafe {
            device
                .allocate_command_buffers(&allocate)
                .and_then(|buffers| {
                    device
                        .create_fence(&vk::FenceCreateInfo::default(), None)
                        .map(|fence| (buffers[0], fence))
                })
        };
        match made {
            Ok((commands, fence)) => Ok(Queue {
                context: context.clone(),
                submitter: Mutex::new(Submitter {
                    pool,
                    commands,
                    fence,
                }),
            }),
            Err(e) => {
                // SAFETY: the pool was made above and nothing uses it.
                unsafe { device.destroy_command_pool(pool, None) };
                Err(vk_error("vkAllocateCommandBuffers", e))
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Submitter> {
        // A submission that failed leaves the pool to be reset by the next one.
        self.submitter.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `commands` with binding-table slots filled from `table`, in order; returns when
    /// every command has completed.
    pub(super) fn run(&self, commands: &[Command], table: &[Binding]) -> Result<(), StatusError> {
        let mut batch: Vec<&Command> = Vec::new();
        for command in commands {
            if recorded_on_device(command, table) {
                batch.push(command);
            } else {
                self.submit_dispatches(&batch, table)?;
                batch.clear();
                command.run_transfer_on_host(table)?;
            }
        }
        self.submit_dispatches(&batch, table)
    }

    /// Records `dispatches` (dispatches and the transfers [`recorded_on_device`] accepts) into
    /// the command buffer, submits it and waits for it.
    fn submit_dispatches(
        &self,
        dispatches: &[&Command],
        table: &[Binding],
    ) -> Result<(), StatusError> {
        if dispatches.is_empty() {
            return Ok(());
        }
        let submitter = self.lock();
        // Every operand, resolved once: (dispatch, bindings, optional indirect count).
        let mut operands: Vec<Operand> = Vec::new();
        let mut operand = |r: &BufferRef, offset: i64, length: i64| -> Result<usize, StatusError> {
            let buffer = r.resolve(table)?;
            let (memory, range) = buffer.memory_range(offset, length)?;
            operands.push(Operand {
                memory: memory.clone(),
                start: range.start,
                len: range.len(),
                _buffer: buffer.clone(),
            });
            Ok(operands.len() - 1)
        };
        let mut planned = Vec::with_capacity(dispatches.len());
        for command in dispatches {
            let (executable, ordinal, count, constants, bindings, indirect) = match command {
                Command::Fill {
                    target,
                    offset,
                    length,
                    pattern,
                    pattern_length,
                } => {
                    let at = operand(target, *offset, *length)?;
                    // The pattern repeated over four bytes, as vkCmdFillBuffer takes it.
                    let bytes = pattern.to_le_bytes();
                    let n = (*pattern_length as usize).clamp(1, 4);
                    let word = [0, 1, 2, 3].map(|k| bytes[k % n]);
                    planned.push(Step::Fill {
                        at,
                        word: u32::from_le_bytes(word),
                    });
                    continue;
                }
                Command::Copy {
                    source,
                    source_offset,
                    target,
                    target_offset,
                    length,
                } => {
                    let from = operand(source, *source_offset, *length)?;
                    let to = operand(target, *target_offset, *length)?;
                    planned.push(Step::Copy { from, to });
                    continue;
                }
                Command::Update {
                    data,
                    target,
                    offset,
                } => {
                    let at = operand(target, *offset, data.len() as i64)?;
                    planned.push(Step::Update { at, data });
                    continue;
                }
                Command::Dispatch {
                    executable,
                    ordinal,
                    count,
                    constants,
                    bindings,
                } => (
                    executable,
                    *ordinal,
                    Some(*count),
                    constants,
                    bindings,
                    None,
                ),
                Command::DispatchIndirect {
                    executable,
                    ordinal,
                    workgroups,
                    workgroups_offset,
                    constants,
                    bindings,
                } => {
                    if workgroups_offset % 4 != 0 {
                        return Err(invalid(format!(
                            "indirect workgroup count at byte {workgroups_offset}: Vulkan reads \
                             it only at a multiple of 4"
                        )));
                    }
                    let at = operand(workgroups, *workgroups_offset, 12)?;
                    (executable, *ordinal, None, constants, bindings, Some(at))
                }
            };
            let executable = executable
                .as_any()
                .downcast_ref::<VulkanExecutable>()
                .filter(|e| Arc::ptr_eq(&e.context, &self.context))
                .ok_or_else(|| {
                    invalid(format!(
                        "the vulkan device cannot run an executable another device made \
                         ({executable:?})"
                    ))
                })?;
            let export = usize::try_from(ordinal)
                .ok()
                .and_then(|o| executable.exports.get(o))
                .ok_or_else(|| {
                    invalid(format!(
                        "export ordinal {ordinal} is out of range: the executable has {} exports",
                        executable.exports.len()
                    ))
                })?;
            if bindings.len() != export.binding_slots.len() {
                return Err(invalid(format!(
                    "dispatch of {} gives {} bindings; the export declares {}",
                    export.name,
                    bindings.len(),
                    export.binding_slots.len()
                )));
            }
            // As IREE's driver: at most the constants the layout declares (those not given
            // are left as they were).
            if constants.len() * 4 > export.constant_bytes as usize {
                return Err(invalid(format!(
                    "dispatch of {} gives {} push constants; the export declares {}",
                    export.name,
                    constants.len(),
                    export.constant_bytes / 4
                )));
            }
            if let Some(count) = count {
                let max = self.context.limits.max_compute_work_group_count;
                if (0..3).any(|d| count[d] > max[d]) {
                    return Err(StatusError::new(
                        StatusCode::OutOfRange,
                        format!(
                            "dispatch of {} over {count:?} workgroups exceeds the device's \
                             {max:?}",
                            export.name
                        ),
                    ));
                }
            }
            let bound = bindings
                .iter()
                .map(|(r, offset, length)| operand(r, *offset, *length))
                .collect::<Result<Vec<_>, _>>()?;
            planned.push(Step::Dispatch {
                export,
                count,
                constants,
                bound,
                indirect,
            });
        }

        // Where each operand is on the device: its own buffer, or a mirror.
        let mut mirrors: Vec<Mirror> = Vec::new();
        let mut mirror_of = vec![None; operands.len()];
        for (i, op) in operands.iter().enumerate() {
            if allocation_of(&op.memory, &self.context).is_some() {
                continue;
            }
            let at = match mirrors
                .iter()
                .position(|m| Arc::ptr_eq(&m.memory, &op.memory))
            {
                Some(at) => at,
                None => {
                    mirrors.push(Mirror {
                        memory: op.memory.clone(),
                        base: op.start,
                        end: op.start + op.len,
                        allocation: None,
                        cells: None,
                    });
                    mirrors.len() - 1
                }
            };
            let mirror = &mut mirrors[at];
            mirror.base = mirror.base.min(op.start);
            mirror.end = mirror.end.max(op.start + op.len);
            mirror_of[i] = Some(at);
        }
        // A mirror starts at a multiple of the device's binding alignment in the memory it
        // stands for, so offsets keep their alignment in it.
        let align = (self.context.limits.min_storage_buffer_offset_alignment as usize).max(4);
        for mirror in &mut mirrors {
            mirror.base -= mirror.base % align;
            let len = (mirror.end - mirror.base) as u64;
            let allocation = DeviceAllocation::host_visible(&self.context, len)?;
            let cells = allocation.host_memory(len)?;
            let source = &mirror.memory.cells()[mirror.base..mirror.end];
            for (to, from) in cells.cells().iter().zip(source) {
                to.store(from.load(Relaxed), Relaxed);
            }
            mirror.allocation = Some(allocation);
            mirror.cells = Some(cells);
        }
        let alignment = self
            .context
            .limits
            .min_storage_buffer_offset_alignment
            .max(1);
        let device_range = |i: usize| -> DeviceRange {
            let op = &operands[i];
            match mirror_of[i] {
                Some(m) => {
                    let mirror = &mirrors[m];
                    DeviceRange {
                        buffer: mirror
                            .allocation
                            .as_ref()
                            .map_or(vk::Buffer::null(), |a| a.buffer),
                        offset: (op.start - mirror.base) as u64,
                        len: op.len as u64,
                    }
                }
                None => DeviceRange {
                    buffer: allocation_of(&op.memory, &self.context)
                        .map_or(vk::Buffer::null(), |a| a.buffer),
                    offset: op.start as u64,
                    len: op.len as u64,
                },
            }
        };

        // The ranges of staged and non-coherent memory the submission reaches, kept in step
        // with the host around it (`memory::HostSync`).
        let mut host_sync = HostSync::default();
        for (i, op) in operands.iter().enumerate() {
            if mirror_of[i].is_none()
                && let Some(allocation) = allocation_of(&op.memory, &self.context)
            {
                host_sync.add(allocation, op.start as u64, op.len as u64);
            }
        }
        for mirror in &mirrors {
            if let Some(allocation) = &mirror.allocation {
                host_sync.add(allocation, 0, (mirror.end - mirror.base) as u64);
            }
        }

        // Descriptor sets for every dispatch, from one pool for this submission.
        let dispatched = || {
            planned.iter().filter_map(|step| match step {
                Step::Dispatch { export, bound, .. } => Some((export, bound)),
                _ => None,
            })
        };
        let set_count: usize = dispatched().map(|(e, _)| e.set_layouts.len()).sum();
        let binding_count: usize = dispatched().map(|(_, b)| b.len()).sum();
        let device = &self.context.device;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(binding_count.max(1) as u32)];
        let pool_info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(set_count.max(1) as u32)
            .pool_sizes(&sizes);
        // SAFETY: a valid device and create info.
        let pool = unsafe { device.create_descriptor_pool(&pool_info, None) }
            .map_err(|e| vk_error("vkCreateDescriptorPool", e))?;

        let recorded = (|| -> Result<(), StatusError> {
            let cb = submitter.commands;
            // SAFETY: the pool is ours (the lock is held) and none of its command buffers is
            // pending: every submission is waited for.
            unsafe {
                device.reset_command_pool(submitter.pool, vk::CommandPoolResetFlags::empty())
            }
            .map_err(|e| vk_error("vkResetCommandPool", e))?;
            let begin = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: a reset command buffer of our pool.
            unsafe { device.begin_command_buffer(cb, &begin) }
                .map_err(|e| vk_error("vkBeginCommandBuffer", e))?;
            host_sync.record_uploads(device, cb);
            let between = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(
                    vk::AccessFlags::SHADER_READ
                        | vk::AccessFlags::SHADER_WRITE
                        | vk::AccessFlags::TRANSFER_READ
                        | vk::AccessFlags::TRANSFER_WRITE
                        | vk::AccessFlags::INDIRECT_COMMAND_READ,
                )];
            let work = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
            // A full barrier after every step: each reads what the ones before wrote.
            let barrier = || {
                // SAFETY: the command buffer is recording; the barrier array lives across the
                // call.
                unsafe {
                    device.cmd_pipeline_barrier(
                        cb,
                        work,
                        work | vk::PipelineStageFlags::DRAW_INDIRECT,
                        vk::DependencyFlags::empty(),
                        &between,
                        &[],
                        &[],
                    )
                }
            };
            let max_range = u64::from(self.context.limits.max_storage_buffer_range);
            for step in &planned {
                let (export, count, constants, bound, indirect) = match step {
                    Step::Dispatch {
                        export,
                        count,
                        constants,
                        bound,
                        indirect,
                    } => (export, count, constants, bound, indirect),
                    Step::Fill { at, word } => {
                        let range = device_range(*at);
                        if range.len > 0 {
                            // SAFETY: a range of a live buffer of this device, 4-byte aligned
                            // in offset and size (`recorded_on_device`).
                            unsafe {
                                device.cmd_fill_buffer(
                                    cb,
                                    range.buffer,
                                    range.offset,
                                    range.len,
                                    *word,
                                )
                            };
                            barrier();
                        }
                        continue;
                    }
                    Step::Copy { from, to } => {
                        let (from, to) = (device_range(*from), device_range(*to));
                        if from.len > 0 {
                            let region = [vk::BufferCopy::default()
                                .src_offset(from.offset)
                                .dst_offset(to.offset)
                                .size(from.len)];
                            // SAFETY: ranges of live buffers of this device that do not
                            // overlap (`recorded_on_device`); `region` lives across the call.
                            unsafe { device.cmd_copy_buffer(cb, from.buffer, to.buffer, &region) };
                            barrier();
                        }
                        continue;
                    }
                    Step::Update { at, data } => {
                        let range = device_range(*at);
                        for (k, piece) in data.chunks(UPDATE_CHUNK).enumerate() {
                            // SAFETY: a 4-byte aligned range of a live buffer of this device
                            // (`recorded_on_device`), pieces of at most 65536 bytes, each a
                            // multiple of 4; the bytes are copied into the command buffer.
                            unsafe {
                                device.cmd_update_buffer(
                                    cb,
                                    range.buffer,
                                    range.offset + (k * UPDATE_CHUNK) as u64,
                                    piece,
                                )
                            };
                        }
                        if !data.is_empty() {
                            barrier();
                        }
                        continue;
                    }
                };
                let allocate = vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(pool)
                    .set_layouts(&export.set_layouts);
                let sets = if export.set_layouts.is_empty() {
                    Vec::new()
                } else {
                    // SAFETY: the pool holds enough sets and descriptors for every dispatch of
                    // this submission (counted above); the layouts are the export's, alive.
                    unsafe { device.allocate_descriptor_sets(&allocate) }
                        .map_err(|e| vk_error("vkAllocateDescriptorSets", e))?
                };
                let mut infos = Vec::with_capacity(bound.len());
                for (k, &at) in bound.iter().enumerate() {
                    let range = device_range(at);
                    if range.offset % alignment != 0 {
                        return Err(invalid(format!(
                            "binding {k} of {} starts at byte {} of its buffer; the device \
                             binds storage buffers at multiples of {alignment}",
                            export.name, range.offset
                        )));
                    }
                    if range.len > max_range {
                        return Err(StatusError::new(
                            StatusCode::OutOfRange,
                            format!(
                                "binding {k} of {} is {} bytes; the device binds at most {max_range}",
                                export.name, range.len
                            ),
                        ));
                    }
                    // As IREE's driver answers it (Vulkan has no empty descriptor ranges).
                    if range.len == 0 {
                        return Err(invalid(format!(
                            "Vulkan dispatch binding {k} of {} resolved to an empty buffer range",
                            export.name
                        )));
                    }
                    let info = vk::DescriptorBufferInfo::default()
                        .buffer(range.buffer)
                        .offset(range.offset)
                        .range(range.len);
                    infos.push([info]);
                }
                let writes: Vec<_> = export
                    .binding_slots
                    .iter()
                    .zip(&infos)
                    .map(|(&(set, binding), info)| {
                        vk::WriteDescriptorSet::default()
                            .dst_set(sets[set as usize])
                            .dst_binding(binding)
                            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                            .buffer_info(info)
                    })
                    .collect();
                let constant_bytes: Vec<u8> =
                    constants.iter().flat_map(|c| c.to_le_bytes()).collect();
                // Every handle is this device's and alive until the submission completes
                // (buffers held by `operands` and the mirrors, the executable by the command
                // list); `writes` and `infos` live across the calls; the push constants fit
                // the layout's range (checked against the export above).
                // SAFETY: valid, live handles and arguments, as said above.
                unsafe {
                    device.update_descriptor_sets(&writes, &[]);
                    device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, export.pipeline);
                    if !sets.is_empty() {
                        device.cmd_bind_descriptor_sets(
                            cb,
                            vk::PipelineBindPoint::COMPUTE,
                            export.layout,
                            0,
                            &sets,
                            &[],
                        );
                    }
                    if !constant_bytes.is_empty() {
                        device.cmd_push_constants(
                            cb,
                            export.layout,
                            vk::ShaderStageFlags::COMPUTE,
                            0,
                            &constant_bytes,
                        );
                    }
                    match (count, indirect) {
                        (Some([x, y, z]), _) => device.cmd_dispatch(cb, *x, *y, *z),
                        (None, Some(at)) => {
                            let range = device_range(*at);
                            device.cmd_dispatch_indirect(cb, range.buffer, range.offset)
                        }
                        (None, None) => {}
                    }
                }
                barrier();
            }
            host_sync.record_downloads(device, cb);
            let to_host = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ | vk::AccessFlags::HOST_WRITE)];
            // SAFETY: the command buffer is recording; the barrier array lives across the call.
            unsafe {
                device.cmd_pipeline_barrier(
                    cb,
                    work,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &to_host,
                    &[],
                    &[],
                );
                device.end_command_buffer(cb)
            }
            .map_err(|e| vk_error("vkEndCommandBuffer", e))?;
            host_sync.flush_host_writes(device)?;
            let buffers = [cb];
            let submit = [vk::SubmitInfo::default().command_buffers(&buffers)];
            // SAFETY: the queue and fence are used under the lock only; the command buffer is
            // fully recorded and every object it uses lives until the wait below returns.
            unsafe { device.queue_submit(self.context.queue, &submit, submitter.fence) }
                .map_err(|e| vk_error("vkQueueSubmit", e))?;
            // SAFETY: the fence was submitted above; waiting has no other precondition. The
            // wait is not bounded: a dispatch that never ends holds the call (see the trust
            // note of `hal::vulkan`).
            let waited = unsafe { device.wait_for_fences(&[submitter.fence], true, u64::MAX) };
            if waited.is_err() {
                // The wait failed without the fence signalling (host memory, a lost device):
                // wait for the whole device, so that nothing the submission uses is freed while
                // it may still run (a lost device has finished everything).
                // SAFETY: the queue is used under the lock only; waiting has no other
                // precondition.
                let _ = unsafe { device.device_wait_idle() };
            }
            // SAFETY: the fence is signalled or the device is lost; either way it is no
            // longer in use by a pending submission.
            let reset = unsafe { device.reset_fences(&[submitter.fence]) };
            waited
                .map_err(|e| vk_error("vkWaitForFences", e))
                .and(reset.map_err(|e| vk_error("vkResetFences", e)))
        })();
        // SAFETY: the submission (if any) has completed: the pool's sets are in use by nothing.
        unsafe { device.destroy_descriptor_pool(pool, None) };
        recorded?;
        host_sync.invalidate_for_host(device)?;

        // The bytes the dispatches changed go back to the memory the mirrors stand for.
        for mirror in &mirrors {
            if let Some(cells) = &mirror.cells {
                let target = &mirror.memory.cells()[mirror.base..mirror.end];
                for (to, from) in target.iter().zip(cells.cells()) {
                    let value = from.load(Relaxed);
                    if to.load(Relaxed) != value {
                        to.store(value, Relaxed);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The most bytes one `vkCmdUpdateBuffer` writes.
const UPDATE_CHUNK: usize = 65536;

/// One recorded command, its buffer operands as indices of the submission's operands.
enum Step<'c> {
    Dispatch {
        export: &'c Export,
        count: Option<[u32; 3]>,
        constants: &'c [i32],
        bound: Vec<usize>,
        indirect: Option<usize>,
    },
    Fill {
        at: usize,
        /// The pattern repeated over 4 bytes.
        word: u32,
    },
    Copy {
        from: usize,
        to: usize,
    },
    Update {
        at: usize,
        data: &'c [u8],
    },
}

/// Whether `command` is recorded into the device's command buffer: dispatches; fills of 1, 2
/// or 4-byte patterns and updates of 4-byte aligned ranges (as `vkCmdFillBuffer` and
/// `vkCmdUpdateBuffer` require; the pattern alignment the HAL asks is checked as the host
/// fill checks it); copies between ranges that do not overlap. Anything else (and an
/// operand that does not resolve, whose error the host path then reports) runs on the host
/// between submissions.
fn recorded_on_device(command: &Command, table: &[Binding]) -> bool {
    let at = |r: &BufferRef, offset: i64, length: i64| {
        let buffer = r.resolve(table).ok()?;
        let relative = buffer.range(offset, length).ok()?;
        let (memory, absolute) = buffer.memory_range(offset, length).ok()?;
        Some((Arc::as_ptr(memory), relative, absolute))
    };
    match command {
        Command::Dispatch { .. } | Command::DispatchIndirect { .. } => true,
        Command::Fill {
            target,
            offset,
            length,
            pattern_length,
            ..
        } => at(target, *offset, *length).is_some_and(|(_, relative, absolute)| {
            let n = *pattern_length as usize;
            matches!(n, 1 | 2 | 4)
                && relative.start % n == 0
                && relative.len() % n == 0
                && absolute.start % 4 == 0
                && absolute.len() % 4 == 0
        }),
        Command::Update {
            data,
            target,
            offset,
        } => at(target, *offset, data.len() as i64)
            .is_some_and(|(_, _, absolute)| absolute.start % 4 == 0 && absolute.len() % 4 == 0),
        Command::Copy {
            source,
            source_offset,
            target,
            target_offset,
            length,
        } => match (
            at(source, *source_offset, *length),
            at(target, *target_offset, *length),
        ) {
            (Some((from, _, a)), Some((to, _, b))) => {
                !(std::ptr::eq(from, to) && a.start < b.end && b.start < a.end)
            }
            _ => false,
        },
    }
}
