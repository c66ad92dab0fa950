//! The local CPU device: IREE's `local-task` (workgroups of dispatches spread over a worker
//! pool) and `local-sync` (everything on the calling thread), by its [`Workers`].
//!
//! Queue operations run when they are submitted and finish before they return, on either kind:
//! each waits for its wait fence, does its work, then signals its signal fence (or fails it
//! with the error it returns). Buffers come from a [`HostAllocator`]; executables are
//! [`LocalExecutable`]s, loaded by the vmvx and ELF loaders.

mod executable;

use std::sync::Arc;

pub use executable::{LocalExecutable, MAX_WORKGROUPS, is_local_format};

use super::allocator::{BufferParams, HalAllocator, HostAllocator};
use super::buffer::{Binding, BindingRef, HalBuffer};
use super::command::{BufferRef, Command, HalCommandBuffer, slot_not_in_table};
use super::device::{HalDevice, Submission, id_matches, run_now as submit};
use super::executable::HalExecutable;
use super::file::HalFile;
use super::workers::Workers;
use crate::memory_budget::MemoryBudget;
use crate::status::StatusError;
use crate::vm::Limits;

/// The local CPU device.
#[derive(Debug)]
pub struct LocalDevice {
    workers: Workers,
    allocator: Arc<HostAllocator>,
    vmvx_limits: Limits,
}

impl LocalDevice {
    /// A device whose dispatches run on `workers` ([`Workers::shared`]: `local-task`;
    /// [`Workers::CallerThread`]: `local-sync`), with no memory budget and the default
    /// [`Limits`] for vmvx dispatches.
    pub fn new(workers: Workers) -> LocalDevice {
        LocalDevice {
            workers,
            allocator: Arc::new(HostAllocator::new(None)),
            vmvx_limits: Limits::default(),
        }
    }

    /// IREE's `local-task`: dispatches on the process-wide worker pool.
    pub fn task() -> LocalDevice {
        LocalDevice::new(Workers::shared())
    }

    /// IREE's `local-sync`: everything on the calling thread.
    pub fn sync() -> LocalDevice {
        LocalDevice::new(Workers::CallerThread)
    }

    /// The device with its buffers charged to `budget` (a VM context's, so that a module's
    /// buffers count against its limits).
    pub fn with_memory_budget(self, budget: Option<Arc<MemoryBudget>>) -> LocalDevice {
        LocalDevice {
            allocator: Arc::new(HostAllocator::new(budget)),
            ..self
        }
    }

    /// The device with `limits` for the VM contexts running vmvx dispatches.
    pub fn with_vmvx_limits(self, limits: Limits) -> LocalDevice {
        LocalDevice {
            vmvx_limits: limits,
            ..self
        }
    }

    /// Who runs the workgroups of dispatches.
    pub fn workers(&self) -> &Workers {
        &self.workers
    }

    /// The device's allocator, as its own type.
    pub fn host_allocator(&self) -> &HostAllocator {
        &self.allocator
    }

    /// Loads an executable, as its own type (what [`HalDevice::create_executable`] returns
    /// behind `dyn`).
    pub fn load_executable(
        &self,
        format: &str,
        data: Vec<u8>,
        constants: &[u32],
    ) -> Result<LocalExecutable, StatusError> {
        LocalExecutable::load(format, data, constants, self.vmvx_limits.clone())
    }

    /// Runs `command_buffer`'s commands now.
    fn run_commands(
        &self,
        command_buffer: &HalCommandBuffer,
        table: &[Binding],
    ) -> Result<(), StatusError> {
        let commands = command_buffer.commands();
        // Each table slot's buffer is made once per execution, not per dispatch binding; a
        // slot's error (a range outside its buffer) is returned where a command uses it, as
        // resolving it there would. A table of up to `INLINE_BINDINGS` slots (every one the
        // compiler makes for small programs) is kept on the stack: an execution allocates
        // nothing for it.
        let resolve = |slot: usize| Some(BufferRef::Slot(slot as u32).resolve(table));
        let mut inline: [Option<Result<HalBuffer, StatusError>>; INLINE_BINDINGS] =
            Default::default();
        let spilled: Vec<Option<Result<HalBuffer, StatusError>>>;
        let slots: &SlotBuffers = if table.len() <= INLINE_BINDINGS {
            for (slot, entry) in inline.iter_mut().enumerate().take(table.len()) {
                *entry = resolve(slot);
            }
            &inline[..table.len()]
        } else {
            spilled = (0..table.len()).map(resolve).collect();
            &spilled
        };
        for command in commands.iter() {
            match command {
                Command::Dispatch {
                    executable,
                    ordinal,
                    count,
                    constants,
                    bindings,
                } => self.dispatch(executable, *ordinal, *count, constants, (bindings, slots))?,
                Command::DispatchIndirect {
                    executable,
                    ordinal,
                    workgroups,
                    workgroups_offset,
                    constants,
                    bindings,
                } => {
                    let mut bytes = [0u8; 12];
                    workgroups
                        .resolve(table)?
                        .read(*workgroups_offset, &mut bytes)?;
                    let count = [0, 4, 8].map(|at| {
                        u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
                    });
                    self.dispatch(executable, *ordinal, count, constants, (bindings, slots))?
                }
                transfer => transfer.run_transfer_on_host(table)?,
            }
        }
        Ok(())
    }

    /// Runs one dispatch, its binding slots filled from `slots` (the binding table's buffers,
    /// or the error naming one). Up to `INLINE_BINDINGS` resolved bindings are gathered on the
    /// stack, more in a list made for the dispatch.
    fn dispatch(
        &self,
        executable: &Arc<dyn HalExecutable>,
        ordinal: i64,
        count: [u32; 3],
        constants: &[i32],
        (bindings, slots): (&[(BufferRef, i64, i64)], &SlotBuffers),
    ) -> Result<(), StatusError> {
        // The bindings are resolved before the executable is checked, so that a bad slot is
        // the error reported first, as it was when the replay gathered them into a list.
        let run = |resolved: &[BindingRef<'_>]| {
            let executable = executable
                .as_any()
                .downcast_ref::<LocalExecutable>()
                .ok_or_else(|| {
                    StatusError::invalid_argument(format!(
                        "the local device cannot run an executable another device made \
                         ({executable:?})"
                    ))
                })?;
            executable.dispatch_bindings(ordinal, count, constants, resolved, &self.workers)
        };
        match bindings.first() {
            None => run(&[]),
            Some(first) if bindings.len() <= INLINE_BINDINGS => {
                // Every entry past the dispatch's own bindings repeats the first (never read).
                let mut resolved = [bind_slot(first, slots)?; INLINE_BINDINGS];
                for index in 1..bindings.len() {
                    resolved[index] = bind_slot(&bindings[index], slots)?;
                }
                run(&resolved[..bindings.len()])
            }
            Some(_) => run(&bindings
                .iter()
                .map(|binding| bind_slot(binding, slots))
                .collect::<Result<Vec<_>, _>>()?),
        }
    }
}

/// A dispatch binding of a replay as the executable takes it: its buffer from the command
/// itself or from the execution's table `slots`.
#[inline(always)]
fn bind_slot<'a>(
    (r, offset, length): &'a (BufferRef, i64, i64),
    slots: &'a SlotBuffers,
) -> Result<BindingRef<'a>, StatusError> {
    let buffer = match r {
        BufferRef::Direct(buffer) => buffer,
        BufferRef::Slot(slot) => match slots.get(*slot as usize) {
            Some(Some(Ok(buffer))) => buffer,
            Some(Some(Err(error))) => return Err(error.clone()),
            Some(None) | None => return Err(slot_not_in_table(*slot, slots.len())),
        },
    };
    Ok(BindingRef {
        buffer,
        offset: *offset,
        length: *length,
    })
}

/// How many binding-table slots, and bindings of one dispatch, a replay keeps on the stack.
const INLINE_BINDINGS: usize = 8;

/// The buffers of a binding table's slots for one execution (or the error naming a slot's bad
/// range, returned where a command uses the slot).
type SlotBuffers = [Option<Result<HalBuffer, StatusError>>];

impl HalDevice for LocalDevice {
    fn id(&self) -> &str {
        self.workers.device_name()
    }

    fn query_i64(&self, category: &str, key: &str) -> Option<i64> {
        match category {
            "hal.device.id" => Some(i64::from(id_matches(key, self.id()))),
            "hal.executable.format" => Some(i64::from(self.supports_executable_format(key))),
            "hal.device" | "hal.dispatch" if key == "concurrency" => {
                Some(self.workers.concurrency() as i64)
            }
            _ => None,
        }
    }

    fn allocator(&self) -> Arc<dyn HalAllocator> {
        self.allocator.clone()
    }

    fn supports_executable_format(&self, format: &str) -> bool {
        is_local_format(format)
    }

    fn create_executable(
        &self,
        format: &str,
        data: Vec<u8>,
        constants: &[u32],
    ) -> Result<Arc<dyn HalExecutable>, StatusError> {
        Ok(Arc::new(self.load_executable(format, data, constants)?))
    }

    fn create_command_buffer(
        &self,
        binding_capacity: u32,
    ) -> Result<HalCommandBuffer, StatusError> {
        let commands = HalCommandBuffer::new(binding_capacity);
        // IREE's local-sync command buffers take flushes and invalidations as no-ops;
        // local-task's do not implement them.
        Ok(match self.workers {
            Workers::CallerThread => commands,
            Workers::Pool(_) => commands.without_cache_control(),
        })
    }

    fn queue_alloca(
        &self,
        submission: Submission<'_>,
        params: BufferParams,
        size: i64,
    ) -> Result<HalBuffer, StatusError> {
        submit(submission, || self.allocator.allocate(params, size))
    }

    fn queue_dealloca(
        &self,
        submission: Submission<'_>,
        _buffer: &HalBuffer,
    ) -> Result<(), StatusError> {
        submit(submission, || Ok(()))
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
        submit(submission, || {
            target.fill(offset, length, pattern, pattern_length)
        })
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
        submit(submission, || {
            HalBuffer::copy(source, source_offset, target, target_offset, length)
        })
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
        submit(submission, || {
            // Both ranges are checked before a byte moves; the bytes then go through one
            // chunk-sized piece, not a copy of the whole range (weights can be gigabytes).
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
        submit(submission, || match command_buffer {
            Some(commands) => self.run_commands(commands, binding_table),
            None => Ok(()),
        })
    }
}
