//! The device's queue: how a recorded command list runs.
//!
//! A command list is recorded into one `VkCommandBuffer`: per dispatch (or indirect dispatch)
//! the pipeline bound, a descriptor set per set layout written with the bound buffers, the
//! push constants pushed; fills of 1, 2 or 4-byte patterns and updates of 4-byte aligned
//! ranges as `vkCmdFillBuffer` and `vkCmdUpdateBuffer`, copies between ranges that do not
//! overlap as `vkCmdCopyBuffer`; a full barrier after each step (every shader and transfer
//! write visible to every later read, write and indirect count read: IREE's
//! `execution_barrier`s are subsumed by it), then a barrier making the writes visible to the
//! host.
//!
//! A queue operation whose fences the device can keep (every signalled semaphore one of its
//! timeline semaphores) and whose commands are all recorded on the device is one batch: the
//! host waits for the wait fence's other semaphores (another device's, the host's), the batch
//! is submitted waiting for the device's own semaphores and signalling the signal fence, and
//! the call returns. Only values nothing has submitted yet are waited for on the device: a
//! value already reached needs no wait, and one an earlier batch of this queue signals is
//! reached in submission order (each command buffer starts with a full barrier against the
//! work before it, and a signal follows everything submitted before it), which keeps
//! lavapipe's submission in the calling thread. Every batch also signals the queue's progress semaphore to its ticket;
//! a submitted batch holds its command pool, descriptor pool, operands, command list (with
//! its executables) and semaphores until the progress counter passes its ticket, which is
//! checked on every queue operation and every read of a semaphore (`retire`). A semaphore the
//! batch waited for that failed (its counter moved past the wait by the failure) fails the
//! semaphores the batch signalled, when it is retired.
//!
//! The host's side of the memory a batch binds (`memory::HostSync`) is settled without a host
//! wait: ranges of staged buffers are copied from their staging buffers after the leading
//! barrier and back before the barrier to the host, in the batch's own command buffer;
//! non-coherent ranges are flushed before `vkQueueSubmit` and invalidated when the batch is
//! retired (`memory::HostInvalidation`), which comes before any semaphore the batch signals
//! reports the value to the host (a semaphore read retires the batches that signalled it
//! first), so the host never reads them between the device's signal and the invalidation.
//!
//! Anything else runs on the host's terms, as before there were device semaphores: the host
//! waits for the whole wait fence, the batches are submitted and waited for one by one, the
//! other transfers (unaligned fills and updates, 8-byte patterns, overlapping copies) run on
//! the host through the buffers' mappings (or staging buffers) between them, in command order,
//! each batch's non-coherent ranges invalidated right after its wait, and the host signals the
//! signal fence.
//!
//! A buffer the device did not make (a caller's tensor imported without a copy, the host
//! allocator's argument copies, a file's pages, another device's buffer) has no `VkBuffer`:
//! for each submission, the range of its memory that the dispatches bind is copied into a
//! temporary device buffer (a mirror) before the submission, and the bytes the dispatches
//! changed are copied back after it: the host does both, so such an operation runs on the
//! host's terms.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ash::vk;

use super::context::{VulkanContext, every_later_access, vk_error};
use super::executable::{Export, VulkanExecutable};
use super::memory::{DeviceAllocation, HostInvalidation, HostSync, allocation_of};
use super::timeline::{RetireSignals, VulkanTimeline, create_timeline_semaphore};
use crate::hal::buffer::{Binding, HalBuffer};
use crate::hal::command::{BufferRef, Command};
use crate::hal::device::{Submission, run_now, wait_on_host};
use crate::hal::semaphore::{DeviceTimeline, HalFence, HalSemaphore};
use crate::host_memory::HostMemory;
use crate::status::{StatusCode, StatusError};

fn invalid(message: impl Into<String>) -> StatusError {
    StatusError::invalid_argument(message)
}

/// A command pool and its one command buffer: one submission's, reused once it completes
/// (Vulkan requires pools to be externally synchronised: the queue's lock guards them).
struct Slot {
    pool: vk::CommandPool,
    commands: vk::CommandBuffer,
}

/// What a queue operation's device work waits for and signals: points of this device's
/// timeline semaphores, and the points of other semaphores the host waits for before it
/// submits.
pub(super) struct DeviceOrder {
    waits: Vec<(HalSemaphore, u64)>,
    host_waits: HalFence,
    signals: Vec<(HalSemaphore, u64)>,
}

/// What a submitted batch uses, held (never read) until the device has completed it.
#[derive(Default)]
struct Held {
    operands: Vec<Operand>,
    /// The command list (holding its executables, whose pipelines the batch binds).
    _commands: Option<Arc<[Command]>>,
    /// Buffers an operation names without the batch binding them (`queue_dealloca`'s).
    _buffers: Vec<HalBuffer>,
}

/// A submitted batch the device may still be running.
struct Pending {
    /// The value of the queue's progress semaphore the batch signals.
    ticket: u64,
    slot: Option<Slot>,
    descriptors: vk::DescriptorPool,
    waits: Vec<(HalSemaphore, u64)>,
    signals: Vec<(HalSemaphore, u64)>,
    _held: Held,
    /// The non-coherent memory the batch wrote, invalidated when it is seen complete (empty
    /// for a batch the host waits for: the host invalidates it right after the wait).
    invalidation: HostInvalidation,
    /// Whether the progress counter has reached the ticket and failures were passed on.
    completed: bool,
}

struct QueueState {
    /// The ticket of the last batch submitted.
    submitted: u64,
    /// Command pools of completed batches, to be reset and reused.
    free: Vec<Slot>,
    /// Submitted batches, oldest first, not yet seen complete.
    pending: VecDeque<Pending>,
}

/// The device's one queue. Every batch submitted signals the queue's own timeline semaphore
/// (`progress`) to its ticket, so completed batches are found (and their resources released)
/// by reading one counter: on every later queue operation and host wait.
pub(super) struct Queue {
    context: Arc<VulkanContext>,
    progress: vk::Semaphore,
    state: Mutex<QueueState>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let device = &self.context.device;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        // A batch waiting for a semaphore nothing will signal any more would hold the device
        // forever: the semaphores still awaited fail (moving their counters past the waits),
        // until every batch has completed.
        let dropped = StatusError::new(
            StatusCode::Cancelled,
            "the vulkan device was dropped while a submission waited for this semaphore",
        );
        let last = state.submitted;
        loop {
            for pending in &state.pending {
                for (semaphore, value) in &pending.waits {
                    let Some(timeline) = VulkanTimeline::of(semaphore, &self.context) else {
                        continue;
                    };
                    if timeline.counter().is_ok_and(|at| at < *value) {
                        semaphore.fail(dropped.clone());
                        timeline.wake_after_failure();
                    }
                }
            }
            match wait_for_value(
                &self.context,
                self.progress,
                last,
                Duration::from_millis(50),
            ) {
                Ok(true) => break,
                Ok(false) => continue,
                Err(_) => {
                    // SAFETY: the queue is used under its owner only (dropping it); waiting
                    // has no other precondition. A lost device has finished everything.
                    let _ = unsafe { device.device_wait_idle() };
                    break;
                }
            }
        }
        // Every batch has completed; the queue's own bookkeeping too once it is idle.
        // SAFETY: the queue is used by its owner only (dropping it).
        let _ = unsafe { device.queue_wait_idle(self.context.queue) };
        for pending in state.pending.drain(..) {
            if !pending.completed {
                complete(&self.context, &pending);
            }
            release(&self.context, pending, &mut state.free);
        }
        for slot in state.free.drain(..) {
            // SAFETY: made on this device, destroyed once; every batch using it completed.
            unsafe { device.destroy_command_pool(slot.pool, None) };
        }
        // SAFETY: made on this device, destroyed once; every batch signalling it completed.
        unsafe { device.destroy_semaphore(self.progress, None) };
    }
}

impl RetireSignals for Queue {
    /// Completes the batches that signal `semaphore` to at most `value` (which it has
    /// reached, so they have run: only the progress signal of the same batch may lag behind),
    /// then everything else completed.
    fn retire_signals_of(&self, semaphore: vk::Semaphore, value: u64) {
        let ticket = {
            let state = self.lock();
            state
                .pending
                .iter()
                .filter(|p| {
                    p.signals.iter().any(|(s, v)| {
                        *v <= value
                            && VulkanTimeline::of(s, &self.context)
                                .is_some_and(|t| t.semaphore == semaphore)
                    })
                })
                .map(|p| p.ticket)
                .max()
        };
        if let Some(ticket) = ticket {
            // An error (a lost device) is found by the retire below.
            let _ = wait_for_value(&self.context, self.progress, ticket, Duration::MAX);
        }
        self.retire();
    }
}

/// Vulkan's bound on how far a value waited for or signalled may be from the semaphore's
/// counter (`maxTimelineSemaphoreValueDifference`): past it, an `OUT_OF_RANGE` error.
fn check_difference(value: u64, counter: u64, context: &VulkanContext) -> Result<(), StatusError> {
    let limit = context.max_timeline_difference;
    if value.saturating_sub(counter) > limit {
        return Err(StatusError::out_of_range(format!(
            "semaphore value {value} is more than the device's limit of {limit} past the \
             semaphore's {counter} (maxTimelineSemaphoreValueDifference)"
        )));
    }
    Ok(())
}

/// Waits up to `limit` for `semaphore` (a timeline semaphore of `context`'s device) to reach
/// `value`; whether it did.
fn wait_for_value(
    context: &VulkanContext,
    semaphore: vk::Semaphore,
    value: u64,
    limit: Duration,
) -> Result<bool, StatusError> {
    let semaphores = [semaphore];
    let values = [value];
    let info = vk::SemaphoreWaitInfo::default()
        .semaphores(&semaphores)
        .values(&values);
    let nanos = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: a live timeline semaphore of this device; the arrays live across the call.
    match unsafe { context.device.wait_semaphores(&info, nanos) } {
        Ok(()) => Ok(true),
        Err(vk::Result::TIMEOUT) => Ok(false),
        Err(e) => Err(vk_error("vkWaitSemaphores", e)),
    }
}

/// For a batch seen complete, before anything reports its signals to the host: the
/// non-coherent memory it wrote is invalidated, so the host reads the device's bytes (staged
/// buffers were copied back to their staging buffers by the batch itself); the failure of a
/// semaphore it waited for becomes the failure of the semaphores it signalled (the device ran
/// it once the failure moved the counter), as does a failed invalidation.
fn complete(context: &Arc<VulkanContext>, pending: &Pending) {
    let invalidated = pending.invalidation.apply(&context.device).err();
    let failure = pending
        .waits
        .iter()
        .find_map(|(s, _)| s.failure())
        .or(invalidated);
    for (semaphore, _) in &pending.signals {
        if let Some(failure) = &failure {
            semaphore.fail(failure.clone());
        }
        // A failure recorded while this batch's signal was queued moves the counter now.
        if semaphore.failure().is_some()
            && let Some(timeline) = VulkanTimeline::of(semaphore, context)
        {
            timeline.wake_after_failure();
        }
    }
}

/// Releases what a completed batch held: its descriptor pool is destroyed, its command pool
/// kept for reuse.
fn release(context: &VulkanContext, pending: Pending, free: &mut Vec<Slot>) {
    if pending.descriptors != vk::DescriptorPool::null() {
        // SAFETY: made on this device for this batch only, which has completed.
        unsafe {
            context
                .device
                .destroy_descriptor_pool(pending.descriptors, None)
        };
    }
    free.extend(pending.slot);
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
        Ok(Queue {
            context: context.clone(),
            progress: create_timeline_semaphore(context, 0)?,
            state: Mutex::new(QueueState {
                submitted: 0,
                free: Vec::new(),
                pending: VecDeque::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // Every change of the state completes under the lock before anything can fail: a
        // poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Releases what completed batches held; the failure of a semaphore a batch waited for
    /// becomes the failure of the semaphores it signalled. A lost device fails every batch.
    pub(super) fn retire(&self) {
        let mut state = self.lock();
        if state.pending.is_empty() {
            return;
        }
        let state = &mut *state;
        // SAFETY: the queue's live timeline semaphore.
        let done = match unsafe {
            self.context
                .device
                .get_semaphore_counter_value(self.progress)
        } {
            Ok(done) => done,
            Err(e) => {
                let error = vk_error("vkGetSemaphoreCounterValue", e);
                // SAFETY: waiting has no precondition; a lost device has finished everything,
                // so nothing the batches use is in use after it.
                let _ = unsafe { self.context.device.device_wait_idle() };
                for pending in state.pending.drain(..) {
                    if !pending.completed {
                        for (semaphore, _) in &pending.signals {
                            semaphore.fail(error.clone());
                        }
                    }
                    release(&self.context, pending, &mut state.free);
                }
                return;
            }
        };
        for pending in state.pending.iter_mut() {
            if pending.ticket > done {
                break;
            }
            if !pending.completed {
                complete(&self.context, pending);
                pending.completed = true;
            }
        }
        // A batch is released once a later one has completed too: a driver may still be
        // finishing its signals' bookkeeping when its progress signal is seen (lavapipe's
        // submit thread does, touching the semaphores), and it handles batches in order.
        while state.pending.front().is_some_and(|p| p.ticket < done) {
            let Some(pending) = state.pending.pop_front() else {
                break;
            };
            release(&self.context, pending, &mut state.free);
        }
    }

    /// How `submission`'s fences order device work: `None` when the device cannot signal its
    /// signal fence (a semaphore another device or the host made): the operation then runs
    /// on the host's terms (waited for, then signalled from the host).
    fn device_order(&self, submission: &Submission<'_>) -> Option<DeviceOrder> {
        let mut signals = Vec::new();
        for (semaphore, value) in submission.signal.points() {
            VulkanTimeline::of(semaphore, &self.context)?;
            signals.push((semaphore.clone(), value));
        }
        let mut waits = Vec::new();
        let mut host_waits = HalFence::empty();
        for (semaphore, value) in submission.wait.points() {
            if VulkanTimeline::of(semaphore, &self.context).is_some() {
                waits.push((semaphore.clone(), value));
            } else {
                host_waits.insert(semaphore.clone(), value);
            }
        }
        Some(DeviceOrder {
            waits,
            host_waits,
            signals,
        })
    }

    /// A queue operation: `commands` (none: only the fences' order) with binding-table slots
    /// filled from `table`, after `submission`'s wait fence, signalling its signal fence,
    /// `buffers` held until then. When every command is recorded on the device, needs no
    /// mirror, and every signalled semaphore is this device's, the batch is submitted with
    /// the waits and signals on the device and the call returns; otherwise it waits on the
    /// host, runs, and signals from the host (as before timeline semaphores).
    pub(super) fn execute(
        &self,
        submission: Submission<'_>,
        commands: Option<Arc<[Command]>>,
        table: &[Binding],
        buffers: Vec<HalBuffer>,
    ) -> Result<(), StatusError> {
        self.retire();
        let on_device = commands
            .as_deref()
            .is_none_or(|list| list.iter().all(|c| recorded_on_device(c, table)));
        if on_device && let Some(order) = self.device_order(&submission) {
            let submitted = (|| {
                wait_on_host(&order.host_waits, submission.wait_limit)?;
                for (semaphore, _) in &order.waits {
                    if let Some(failure) = semaphore.failure() {
                        return Err(failure);
                    }
                }
                let batch: Vec<&Command> = commands.iter().flat_map(|c| c.iter()).collect();
                let held = Held {
                    operands: Vec::new(),
                    _commands: commands.clone(),
                    _buffers: buffers,
                };
                self.submit_batch(&batch, table, Some(&order), held)
            })();
            match submitted {
                Ok(true) => return Ok(()),
                // Mirrors are needed: the host path below copies them around the batch.
                Ok(false) => {}
                Err(error) => {
                    submission.signal.fail(&error);
                    return Err(error);
                }
            }
        }
        run_now(submission, || match &commands {
            Some(list) => self.run(list, table),
            None => Ok(()),
        })
    }

    /// Runs `commands` with binding-table slots filled from `table`, in order; returns when
    /// every command has completed.
    fn run(&self, commands: &[Command], table: &[Binding]) -> Result<(), StatusError> {
        let mut batch: Vec<&Command> = Vec::new();
        for command in commands {
            if recorded_on_device(command, table) {
                batch.push(command);
            } else {
                self.submit_batch(&batch, table, None, Held::default())?;
                batch.clear();
                command.run_transfer_on_host(table)?;
            }
        }
        self.submit_batch(&batch, table, None, Held::default())
            .map(|_| ())
    }

    /// Records `dispatches` (dispatches and the transfers [`recorded_on_device`] accepts) into
    /// a command buffer and submits it. With `order`, the batch waits for and signals its
    /// points on the device, `held` and the operands are kept until it completes, and the call
    /// returns once it is submitted (or returns `false`, submitting nothing, when an operand
    /// needs a mirror, which the host fills and reads back around the batch). Without, the
    /// call waits for the batch.
    fn submit_batch(
        &self,
        dispatches: &[&Command],
        table: &[Binding],
        order: Option<&DeviceOrder>,
        mut held: Held,
    ) -> Result<bool, StatusError> {
        if dispatches.is_empty() && order.is_none() {
            return Ok(true);
        }
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
        if order.is_some() && !mirrors.is_empty() {
            return Ok(false);
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
        let pool = if dispatches.is_empty() {
            vk::DescriptorPool::null()
        } else {
            // SAFETY: a valid device and create info.
            unsafe { device.create_descriptor_pool(&pool_info, None) }
                .map_err(|e| vk_error("vkCreateDescriptorPool", e))?
        };

        let mut state = self.lock();
        // A batch of no commands (a barrier, an alloca's signal) submits only its semaphores.
        let slot = if dispatches.is_empty() {
            Ok(None)
        } else {
            match state.free.pop() {
                Some(slot) => Ok(Some(slot)),
                None => new_slot(&self.context).map(Some),
            }
        };
        let recorded = slot.and_then(|slot| {
            let cb = (|| -> Result<Option<vk::CommandBuffer>, StatusError> {
                let Some(slot) = &slot else {
                    return Ok(None);
                };
                self.record(slot, &planned, pool, &device_range, &host_sync)?;
                // The host's writes to non-coherent memory reach the device before it runs.
                host_sync.flush_host_writes(device)?;
                Ok(Some(slot.commands))
            })();
            match cb {
                Ok(cb) => Ok((slot, cb)),
                Err(e) => {
                    state.free.extend(slot);
                    Err(e)
                }
            }
        });
        let submitted =
            recorded.and_then(
                |(slot, cb)| match self.submit_recorded(&mut state, cb, order) {
                    Ok(ticket) => Ok((slot, ticket)),
                    Err(e) => {
                        state.free.extend(slot);
                        Err(e)
                    }
                },
            );
        let (slot, ticket) = match submitted {
            Ok(done) => done,
            Err(e) => {
                if pool != vk::DescriptorPool::null() {
                    // SAFETY: nothing submitted uses the pool's sets.
                    unsafe { device.destroy_descriptor_pool(pool, None) };
                }
                return Err(e);
            }
        };
        let (waits, signals) = match order {
            Some(order) => (order.waits.clone(), order.signals.clone()),
            None => (Vec::new(), Vec::new()),
        };
        // A batch the host does not wait for is invalidated when the queue sees it complete;
        // one it waits for, right after the wait (below).
        let mut invalidation = host_sync.invalidation();
        if order.is_some() {
            held.operands = std::mem::take(&mut operands);
        }
        state.pending.push_back(Pending {
            ticket,
            slot,
            descriptors: pool,
            waits,
            signals,
            _held: held,
            invalidation: match order {
                Some(_) => std::mem::take(&mut invalidation),
                None => HostInvalidation::default(),
            },
            completed: false,
        });
        if order.is_some() {
            return Ok(true);
        }
        drop(state);
        // The wait is not bounded: a dispatch that never ends holds the call (see the trust
        // note of `hal::vulkan`).
        let waited = wait_for_value(&self.context, self.progress, ticket, Duration::MAX);
        if waited.is_err() {
            // The wait failed without the batch completing (host memory, a lost device): wait
            // for the whole device, so that nothing the batch uses (the operands and mirrors
            // here) is freed while it may still run (a lost device has finished everything).
            // SAFETY: waiting has no precondition.
            let _ = unsafe { device.device_wait_idle() };
        }
        self.retire();
        waited?;
        invalidation.apply(device)?;

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
        drop(operands);
        Ok(true)
    }

    /// Submits `cb` (none: only semaphores) after `order`'s waits, signalling its signals and
    /// the queue's progress to the batch's ticket, which it returns.
    fn submit_recorded(
        &self,
        state: &mut QueueState,
        cb: Option<vk::CommandBuffer>,
        order: Option<&DeviceOrder>,
    ) -> Result<u64, StatusError> {
        let ticket = state.submitted + 1;
        let mut wait_semaphores = Vec::new();
        let mut wait_values = Vec::new();
        let mut wait_stages = Vec::new();
        let mut signal_semaphores = Vec::new();
        let mut signal_values = Vec::new();
        let mut queued = Vec::new();
        fn own<'s>(
            semaphore: &'s HalSemaphore,
            context: &Arc<VulkanContext>,
        ) -> Result<&'s VulkanTimeline, StatusError> {
            VulkanTimeline::of(semaphore, context).ok_or_else(|| {
                StatusError::new(
                    StatusCode::Internal,
                    "a device wait or signal names a semaphore the vulkan device did not make",
                )
            })
        }
        if let Some(order) = order {
            for (semaphore, value) in &order.waits {
                let timeline = own(semaphore, &self.context)?;
                let (queued, current) = timeline.lock_queued()?;
                check_difference(*value, current, &self.context)?;
                // A value already reached needs no wait; a value a batch submitted earlier to
                // this queue signals is reached in submission order: every batch's command
                // buffer starts with a full barrier against earlier work, and a signal comes
                // after everything submitted before it. Waiting on the device only for values
                // nothing has submitted yet keeps the driver's submission path simple
                // (lavapipe hands batches with pending timeline waits to a thread).
                let queued_here = queued.last().is_some_and(|&last| last >= *value);
                drop(queued);
                if current >= *value || queued_here {
                    continue;
                }
                timeline.note_wait(*value);
                wait_semaphores.push(timeline.semaphore);
                wait_values.push(*value);
                wait_stages.push(vk::PipelineStageFlags::ALL_COMMANDS);
            }
            for (semaphore, value) in &order.signals {
                let timeline = own(semaphore, &self.context)?;
                // Held until the submission is made: a host signal or failure of the semaphore
                // meanwhile would break Vulkan's rule that values only grow.
                let (guard, current) = timeline.lock_queued()?;
                if let Some(failure) = semaphore.failure() {
                    return Err(failure);
                }
                let at = current.max(guard.last().copied().unwrap_or(0));
                if *value <= at {
                    return Err(StatusError::out_of_range(format!(
                        "semaphore values must increase: the semaphore is at {at}, a queue \
                         operation signals it to {value}"
                    )));
                }
                check_difference(*value, current, &self.context)?;
                signal_semaphores.push(timeline.semaphore);
                signal_values.push(*value);
                queued.push((guard, *value));
            }
        }
        signal_semaphores.push(self.progress);
        signal_values.push(ticket);
        let buffers: Vec<vk::CommandBuffer> = cb.into_iter().collect();
        let mut values = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let submit = [vk::SubmitInfo::default()
            .wait_semaphores(&wait_semaphores)
            .wait_dst_stage_mask(&wait_stages)
            .command_buffers(&buffers)
            .signal_semaphores(&signal_semaphores)
            .push_next(&mut values)];
        // Each semaphore is a timeline semaphore of this device, held (by the pending batch or
        // the queue) until the batch completes; every signal value is above its counter and
        // queued signals (checked above under the locks in `queued`; no host signal passes).
        // SAFETY: the queue is used under the state lock; the buffer is recorded; arrays live.
        unsafe {
            self.context
                .device
                .queue_submit(self.context.queue, &submit, vk::Fence::null())
        }
        .map_err(|e| vk_error("vkQueueSubmit", e))?;
        for (mut guard, value) in queued {
            guard.push(value);
        }
        state.submitted = ticket;
        Ok(ticket)
    }

    /// Records `planned` into `slot`'s command buffer, descriptor sets from `pool`, between
    /// `host_sync`'s uploads to staged buffers (first) and downloads from them (last).
    fn record(
        &self,
        slot: &Slot,
        planned: &[Step<'_>],
        pool: vk::DescriptorPool,
        device_range: &dyn Fn(usize) -> DeviceRange,
        host_sync: &HostSync<'_>,
    ) -> Result<(), StatusError> {
        let device = &self.context.device;
        let alignment = self
            .context
            .limits
            .min_storage_buffer_offset_alignment
            .max(1);
        {
            let cb = slot.commands;
            // SAFETY: the pool is ours (the queue's lock is held) and none of its command
            // buffers is pending: a slot is reused only once its batch has completed.
            unsafe { device.reset_command_pool(slot.pool, vk::CommandPoolResetFlags::empty()) }
                .map_err(|e| vk_error("vkResetCommandPool", e))?;
            let begin = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: a reset command buffer of our pool.
            unsafe { device.begin_command_buffer(cb, &begin) }
                .map_err(|e| vk_error("vkBeginCommandBuffer", e))?;
            let between = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(every_later_access())];
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
            // Work submitted earlier to the queue (which a wait left to submission order may
            // depend on) completes, and its writes are visible, before this batch starts.
            // That includes earlier batches' copies back to staging buffers: this batch's
            // copies from them (its staged ranges are hulls, possibly wider than what the
            // earlier batch wrote) come after it.
            barrier();
            host_sync.record_uploads(device, cb);
            let max_range = u64::from(self.context.limits.max_storage_buffer_range);
            for step in planned {
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
            Ok(())
        }
    }
}
/// A new command pool with one command buffer.
fn new_slot(context: &VulkanContext) -> Result<Slot, StatusError> {
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
    // SAFETY: the pool was made above.
    match unsafe { device.allocate_command_buffers(&allocate) } {
        Ok(buffers) => Ok(Slot {
            pool,
            commands: buffers[0],
        }),
        Err(e) => {
            // SAFETY: the pool was made above and nothing uses it.
            unsafe { device.destroy_command_pool(pool, None) };
            Err(vk_error("vkAllocateCommandBuffers", e))
        }
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
