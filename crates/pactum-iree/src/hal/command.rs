//! `!hal.command_buffer`: recorded transfer and dispatch commands, replayed when a queue
//! executes them (directly, or with a binding table for reusable command buffers).

use std::sync::Mutex;

use super::executable::{Binding, HalExecutable};
use super::objects::{HalBuffer, invalid};
use super::workers::Workers;
use crate::vm::{NativeError, Ref, RefObject, StatusCode};

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
    /// Run a dispatch.
    Dispatch {
        /// The executable (a `!hal.executable` reference).
        executable: Ref,
        /// The export ordinal.
        ordinal: i64,
        /// The workgroup count.
        count: [u32; 3],
        /// The push constants.
        constants: Vec<i32>,
        /// The bindings: buffer, offset and length.
        bindings: Vec<(BufferRef, i64, i64)>,
    },
}

#[derive(Debug, Default)]
struct State {
    commands: Vec<Command>,
    finalized: bool,
}

/// A command buffer.
#[derive(Debug)]
pub struct HalCommandBuffer {
    binding_capacity: u32,
    state: Mutex<State>,
}

impl RefObject for HalCommandBuffer {
    fn type_name(&self) -> &str {
        "hal.command_buffer"
    }
}

/// A binding-table entry: buffer, offset, length.
pub type TableEntry = (HalBuffer, i64, i64);

impl HalCommandBuffer {
    /// An empty command buffer whose commands may refer to `binding_capacity` table slots.
    pub fn new(binding_capacity: u32) -> HalCommandBuffer {
        HalCommandBuffer {
            binding_capacity,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `command`.
    pub fn record(&self, command: Command) -> Result<(), NativeError> {
        let mut state = self.lock();
        if state.finalized {
            return Err(NativeError::new(
                StatusCode::FailedPrecondition,
                "command buffer is finalized",
            ));
        }
        if state.commands.len() >= MAX_COMMANDS {
            return Err(NativeError::new(
                StatusCode::ResourceExhausted,
                format!("command buffer holds more than {MAX_COMMANDS} commands"),
            ));
        }
        let slots: Vec<u32> = match &command {
            Command::Fill { target, .. } => vec![slot_of(target)],
            Command::Copy { source, target, .. } => vec![slot_of(source), slot_of(target)],
            Command::Dispatch { bindings, .. } => bindings.iter().map(|b| slot_of(&b.0)).collect(),
        };
        if let Some(slot) = slots
            .into_iter()
            .find(|&s| s != u32::MAX && s >= self.binding_capacity)
        {
            return Err(invalid(format!(
                "binding slot {slot} is outside the command buffer's binding capacity {}",
                self.binding_capacity
            )));
        }
        state.commands.push(command);
        Ok(())
    }

    /// Ends recording.
    pub fn finalize(&self) -> Result<(), NativeError> {
        let mut state = self.lock();
        if state.finalized {
            return Err(NativeError::new(
                StatusCode::FailedPrecondition,
                "command buffer is already finalized",
            ));
        }
        state.finalized = true;
        Ok(())
    }

    /// Runs every command, resolving slots through `table`.
    pub fn execute(&self, table: &[TableEntry], workers: &Workers) -> Result<(), NativeError> {
        let commands = self.lock().commands.clone();
        let resolve = |r: &BufferRef, offset: i64| -> Result<(HalBuffer, i64), NativeError> {
            match r {
                BufferRef::Direct(b) => Ok((b.clone(), offset)),
                BufferRef::Slot(slot) => {
                    let (buffer, base, length) = table.get(*slot as usize).ok_or_else(|| {
                        invalid(format!(
                            "binding slot {slot} is not in the binding table of {} entries",
                            table.len()
                        ))
                    })?;
                    let buffer = buffer.subspan(*base, *length)?;
                    Ok((buffer, offset))
                }
            }
        };
        for command in &commands {
            match command {
                Command::Fill {
                    target,
                    offset,
                    length,
                    pattern,
                    pattern_length,
                } => {
                    let (buffer, offset) = resolve(target, *offset)?;
                    buffer.fill(offset, *length, *pattern, *pattern_length)?;
                }
                Command::Copy {
                    source,
                    source_offset,
                    target,
                    target_offset,
                    length,
                } => {
                    let (src, src_offset) = resolve(source, *source_offset)?;
                    let (dst, dst_offset) = resolve(target, *target_offset)?;
                    HalBuffer::copy(&src, src_offset, &dst, dst_offset, *length)?;
                }
                Command::Dispatch {
                    executable,
                    ordinal,
                    count,
                    constants,
                    bindings,
                } => {
                    let bindings = bindings
                        .iter()
                        .map(|(r, offset, length)| {
                            let (buffer, offset) = resolve(r, *offset)?;
                            Ok(Binding {
                                buffer,
                                offset,
                                length: *length,
                            })
                        })
                        .collect::<Result<Vec<_>, NativeError>>()?;
                    let executable = executable
                        .downcast_ref::<HalExecutable>()
                        .ok_or_else(|| invalid("dispatch of something not an executable"))?;
                    executable.dispatch(*ordinal, *count, constants, &bindings, workers)?;
                }
            }
        }
        Ok(())
    }
}

fn slot_of(r: &BufferRef) -> u32 {
    match r {
        BufferRef::Direct(_) => u32::MAX,
        BufferRef::Slot(s) => *s,
    }
}
