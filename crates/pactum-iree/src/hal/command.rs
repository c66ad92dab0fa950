//! Command buffers: transfer and dispatch commands recorded once and replayed by a device's
//! queue each time it executes them (directly, or with a binding table that fills the slots a
//! reusable command buffer leaves open). Recording is device-neutral, as IREE's local devices
//! replay a recorded list too; a device that records into its own command format would
//! translate the list when it executes it.

use std::sync::{Arc, Mutex, MutexGuard};

use super::buffer::{Binding, HalBuffer};
use super::executable::HalExecutable;
use crate::status::{StatusCode, StatusError};

fn invalid(message: impl Into<String>) -> StatusError {
    StatusError::invalid_argument(message)
}

/// The most commands one command buffer may record.
pub const MAX_COMMANDS: usize = 1 << 16;

/// A buffer operand: a buffer, or a slot of the binding table given at execution.
#[derive(Debug, Clone)]
pub enum BufferRef {
    /// A buffer recorded directly.
    Direct(HalBuffer),
    /// A binding-table slot.
    Slot(u32),
}

/// One recorded command.
#[derive(Debug, Clone)]
pub enum Command {
    /// Fill a range with a pattern.
    Fill {
        /// The target.
        target: BufferRef,
        /// Offset in the target.
        offset: i64,
        /// Length in bytes.
        length: i64,
        /// The pattern (little-endian).
        pattern: u64,
        /// Its length in bytes.
        pattern_length: i64,
    },
    /// Copy a range.
    Copy {
        /// The source.
        source: BufferRef,
        /// Offset in the source.
        source_offset: i64,
        /// The target.
        target: BufferRef,
        /// Offset in the target.
        target_offset: i64,
        /// Length in bytes.
        length: i64,
    },
    /// Write bytes copied from the program when the command was recorded.
    Update {
        /// The bytes.
        data: Arc<[u8]>,
        /// The target.
        target: BufferRef,
        /// Offset in the target.
        offset: i64,
    },
    /// Run a dispatch.
    Dispatch {
        /// The executable.
        executable: Arc<dyn HalExecutable>,
        /// The export ordinal.
        ordinal: i64,
        /// The workgroup count.
        count: [u32; 3],
        /// The push constants.
        constants: Vec<i32>,
        /// The bindings: buffer, offset and length.
        bindings: Vec<(BufferRef, i64, i64)>,
    },
    /// Run a dispatch whose workgroup count is read when the command executes: three
    /// little-endian `u32`s at an offset of a buffer (which earlier commands may write).
    DispatchIndirect {
        /// The executable.
        executable: Arc<dyn HalExecutable>,
        /// The export ordinal.
        ordinal: i64,
        /// The buffer holding the workgroup count.
        workgroups: BufferRef,
        /// Offset of the count in it.
        workgroups_offset: i64,
        /// The push constants.
        constants: Vec<i32>,
        /// The bindings: buffer, offset and length.
        bindings: Vec<(BufferRef, i64, i64)>,
    },
}

#[derive(Debug)]
enum State {
    Recording(Vec<Command>),
    /// Finalized: shared by every execution without a copy.
    Finalized(Arc<[Command]>),
}

/// A `!hal.command_buffer`: a list of recorded commands.
#[derive(Debug)]
pub struct HalCommandBuffer {
    binding_capacity: u32,
    accepts_cache_control: bool,
    state: Mutex<State>,
}

impl Command {
    /// Runs a fill, copy or update on the host, through the buffers' bytes, with slots
    /// resolved from `table`; dispatches are the device's, and are left alone here.
    pub(crate) fn run_transfer_on_host(&self, table: &[Binding]) -> Result<(), StatusError> {
        match self {
            Command::Fill {
                target,
                offset,
                length,
                pattern,
                pattern_length,
            } => target
                .resolve(table)?
                .fill(*offset, *length, *pattern, *pattern_length),
            Command::Copy {
                source,
                source_offset,
                target,
                target_offset,
                length,
            } => HalBuffer::copy(
                &source.resolve(table)?,
                *source_offset,
                &target.resolve(table)?,
                *target_offset,
                *length,
            ),
            Command::Update {
                data,
                target,
                offset,
            } => target.resolve(table)?.write(*offset, data),
            Command::Dispatch { .. } | Command::DispatchIndirect { .. } => Ok(()),
        }
    }
}

impl HalCommandBuffer {
    /// An empty command buffer whose commands may refer to `binding_capacity` table slots.
    pub fn new(binding_capacity: u32) -> HalCommandBuffer {
        HalCommandBuffer {
            binding_capacity,
            accepts_cache_control: true,
            state: Mutex::new(State::Recording(Vec::new())),
        }
    }

    /// The same command buffer refusing `flush_buffer` and `invalidate_buffer` (as IREE's
    /// local-task command buffers refuse them, `UNIMPLEMENTED`).
    pub fn without_cache_control(self) -> HalCommandBuffer {
        HalCommandBuffer {
            accepts_cache_control: false,
            ..self
        }
    }

    /// Accepts a `flush_buffer` or `invalidate_buffer` (`what`) of a buffer operand: over
    /// coherent host memory there is nothing to do, so nothing is recorded; a command buffer
    /// [`without_cache_control`](Self::without_cache_control) refuses it.
    pub fn cache_control(&self, what: &str) -> Result<(), StatusError> {
        if self.accepts_cache_control {
            Ok(())
        } else {
            Err(StatusError::new(
                StatusCode::Unimplemented,
                format!("command buffer does not support {what}"),
            ))
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each change is one push or one replacement: a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The number of binding-table slots its commands may refer to.
    pub fn binding_capacity(&self) -> u32 {
        self.binding_capacity
    }

    /// Records `command`.
    pub fn record(&self, command: Command) -> Result<(), StatusError> {
        let mut state = self.lock();
        let State::Recording(commands) = &mut *state else {
            return Err(StatusError::new(
                StatusCode::FailedPrecondition,
                "command buffer is finalized",
            ));
        };
        if commands.len() >= MAX_COMMANDS {
            return Err(StatusError::new(
                StatusCode::ResourceExhausted,
                format!("command buffer holds more than {MAX_COMMANDS} commands"),
            ));
        }
        let slots: Vec<Option<u32>> = match &command {
            Command::Fill { target, .. } | Command::Update { target, .. } => vec![slot_of(target)],
            Command::Copy { source, target, .. } => vec![slot_of(source), slot_of(target)],
            Command::Dispatch { bindings, .. } => bindings.iter().map(|b| slot_of(&b.0)).collect(),
            Command::DispatchIndirect {
                workgroups,
                bindings,
                ..
            } => std::iter::once(slot_of(workgroups))
                .chain(bindings.iter().map(|b| slot_of(&b.0)))
                .collect(),
        };
        if let Some(slot) = slots
            .into_iter()
            .flatten()
            .find(|&s| s >= self.binding_capacity)
        {
            return Err(invalid(format!(
                "binding slot {slot} is outside the command buffer's binding capacity {}",
                self.binding_capacity
            )));
        }
        commands.push(command);
        Ok(())
    }

    /// Records a dispatch of export `ordinal` of `executable` over `count` workgroups, with
    /// push `constants` and `bindings` (buffers bound directly, in the export's binding
    /// order).
    pub fn dispatch(
        &self,
        executable: &Arc<dyn HalExecutable>,
        ordinal: usize,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
    ) -> Result<(), StatusError> {
        self.record(Command::Dispatch {
            executable: executable.clone(),
            ordinal: i64::try_from(ordinal)
                .map_err(|_| invalid(format!("export ordinal {ordinal} is too large")))?,
            count,
            constants: constants.to_vec(),
            bindings: bindings
                .iter()
                .map(|b| (BufferRef::Direct(b.buffer.clone()), b.offset, b.length))
                .collect(),
        })
    }

    /// Ends recording.
    pub fn finalize(&self) -> Result<(), StatusError> {
        let mut state = self.lock();
        let State::Recording(commands) = &mut *state else {
            return Err(StatusError::new(
                StatusCode::FailedPrecondition,
                "command buffer is already finalized",
            ));
        };
        let commands = Arc::from(std::mem::take(commands));
        *state = State::Finalized(commands);
        Ok(())
    }

    /// The commands recorded so far, for a queue to replay (a finalized buffer's without a
    /// copy).
    pub fn commands(&self) -> Arc<[Command]> {
        match &*self.lock() {
            State::Recording(commands) => Arc::from(commands.as_slice()),
            State::Finalized(commands) => commands.clone(),
        }
    }
}

impl BufferRef {
    /// The buffer a command operates on, with the binding table `table` filling slots (a
    /// slot's buffer is the subspan its table entry names).
    pub fn resolve(&self, table: &[Binding]) -> Result<HalBuffer, StatusError> {
        match self {
            BufferRef::Direct(b) => Ok(b.clone()),
            BufferRef::Slot(slot) => {
                let entry = table
                    .get(*slot as usize)
                    .ok_or_else(|| slot_not_in_table(*slot, table.len()))?;
                entry.buffer.subspan(entry.offset, entry.length)
            }
        }
    }
}

/// The error for a command naming binding-table `slot` of a table of `entries` entries.
pub(crate) fn slot_not_in_table(slot: u32, entries: usize) -> StatusError {
    invalid(format!(
        "binding slot {slot} is not in the binding table of {entries} entries"
    ))
}

/// The binding-table slot a buffer operand names (`None` for a buffer bound directly).
fn slot_of(r: &BufferRef) -> Option<u32> {
    match r {
        BufferRef::Direct(_) => None,
        BufferRef::Slot(s) => Some(*s),
    }
}
