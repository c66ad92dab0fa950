//! [`HalModule`]: IREE's `hal` VM module, binding the functions compiled programs import to a
//! [`HalDevice`].
//!
//! Each function is a typed closure over the module's state, registered with the calling
//! convention `iree-compile` 3.13 imports it with; the two are checked against each other
//! when the module is registered in a context. The functions take the device, allocator,
//! buffers, fences and executables they work on from their arguments, as IREE's do, so they
//! work for any [`HalDevice`]. Everything the VM needs to see HAL objects (the [`RefObject`]
//! impls, `!vm.buffer` files) lives here, not in the device layer.

use std::sync::Arc;
use std::time::Duration;

use super::allocator::{BufferParams, HalAllocator};
use super::buffer::{Binding, HalBuffer, HalBufferView, OPAQUE_ENCODING, shape_text};
use super::command::{BufferRef, Command, HalCommandBuffer};
use super::device::{HalDevice, Submission};
use super::element::HalElementType;
use super::executable::HalExecutable;
use super::file::{FileContents, HalFile};
use super::semaphore::{HalFence, HalSemaphore, Timeout, wait_limit_exceeded};
use crate::status::{StatusCode, StatusError};
use crate::vm::{
    BuiltNativeModule, NativeError, NativeModuleBuilder, Ref, RefObject, RefObjectType, Text,
    Value, Variadic, VmBuffer,
};

/// The reference types the module registers (without `!`).
pub const REF_TYPES: &[&str] = &[
    "hal.allocator",
    "hal.buffer",
    "hal.buffer_view",
    "hal.channel",
    "hal.command_buffer",
    "hal.device",
    "hal.event",
    "hal.executable",
    "hal.executable_cache",
    "hal.fence",
    "hal.file",
    "hal.semaphore",
];

/// The module's version, compared with the minimum version importers require.
pub const HAL_MODULE_VERSION: u32 = 7;

macro_rules! ref_object_types {
    ($($ty:ty => $name:literal,)*) => {$(
        impl RefObject for $ty {
            fn type_name(&self) -> &str {
                $name
            }
        }

        impl RefObjectType for $ty {
            const TYPE_NAME: &'static str = $name;
        }
    )*};
}

ref_object_types! {
    Arc<dyn HalAllocator> => "hal.allocator",
    HalBuffer => "hal.buffer",
    HalBufferView => "hal.buffer_view",
    HalCommandBuffer => "hal.command_buffer",
    Arc<dyn HalDevice> => "hal.device",
    Arc<dyn HalExecutable> => "hal.executable",
    HalFence => "hal.fence",
    HalFile => "hal.file",
    HalSemaphore => "hal.semaphore",
}

/// A `!vm.buffer` as the contents of a file (`hal.ex.file.from_memory`).
impl FileContents for VmBuffer {
    fn len(&self) -> u64 {
        VmBuffer::len(self) as u64
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), StatusError> {
        VmBuffer::read(self, offset, out).map_err(|e| StatusError::out_of_range(e.to_string()))
    }
}

fn invalid(message: impl Into<String>) -> NativeError {
    StatusError::invalid_argument(message)
}

fn out_of_range(message: impl Into<String>) -> NativeError {
    StatusError::out_of_range(message)
}

/// What the functions share: the device `hal.devices.get` hands out, and references to it and
/// to its allocator made once, so that every call sees the same objects.
struct State {
    device: Arc<dyn HalDevice>,
    device_ref: Ref,
    allocator_ref: Ref,
    /// The longest one wait may block (`Limits::max_wait`); `None`: as long as it takes.
    max_wait: Option<Duration>,
    /// Where `buffer_view.trace` sends what it traces, when the host asked for it.
    trace_sink: Option<TraceSink>,
}

/// Receives what a program traces with `hal.buffer_view.trace`: the key (the program's text)
/// and the views, as IREE's debug sink does (`iree-run-module` prints them to stderr). An
/// error it returns fails the program's call.
pub type TraceSink = Arc<dyn Fn(&str, &[&HalBufferView]) -> Result<(), StatusError> + Send + Sync>;

/// The most views one `buffer_view.trace` may hand to a sink (IREE's limit).
pub const MAX_TRACED_VIEWS: usize = 128;

/// The `hal` module over one device (IREE's `hal` module with a single device).
pub struct HalModule {
    module: BuiltNativeModule<State>,
}

impl std::fmt::Debug for HalModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HalModule")
            .field("device", &self.module.state().device)
            .finish_non_exhaustive()
    }
}

/// A buffer operand of a recorded command: the buffer, or (null) a binding-table slot.
fn buffer_operand(buffer: Option<&HalBuffer>, slot: i32) -> Result<BufferRef, NativeError> {
    match buffer {
        Some(buffer) => Ok(BufferRef::Direct(buffer.clone())),
        None => u32::try_from(slot)
            .map(BufferRef::Slot)
            .map_err(|_| invalid(format!("binding slot {slot} is negative"))),
    }
}

/// A shape given as a span of dimensions.
fn dims(span: Variadic<'_, i64>) -> Result<Vec<u64>, NativeError> {
    span.iter()
        .enumerate()
        .map(|(k, d)| {
            let d = d?;
            u64::try_from(d).map_err(|_| invalid(format!("shape dimension {k} is negative ({d})")))
        })
        .collect()
}

/// The fence a queue operation's (nullable) fence argument names: null is the empty fence.
fn fence_or_empty<'a>(fence: Option<&'a HalFence>, empty: &'a HalFence) -> &'a HalFence {
    fence.unwrap_or(empty)
}

/// A queue operation's submission: null fences are the empty fence, and a device that blocks
/// on the wait fence does so for at most the module's wait limit.
fn submission<'a>(
    state: &State,
    affinity: i64,
    wait: Option<&'a HalFence>,
    signal: Option<&'a HalFence>,
    empty: &'a HalFence,
) -> Result<Submission<'a>, NativeError> {
    Ok(Submission {
        affinity: affinity as u64,
        wait: fence_or_empty(wait, empty),
        signal: fence_or_empty(signal, empty),
        wait_limit: state.max_wait,
    })
}

fn same_device(a: &Arc<dyn HalDevice>, b: &Arc<dyn HalDevice>) -> bool {
    std::ptr::eq(Arc::as_ptr(a).cast::<()>(), Arc::as_ptr(b).cast::<()>())
}

fn buffer_view_assert(
    view: Option<&HalBufferView>,
    message: Text<'_>,
    element_type: i32,
    encoding: i32,
    shape: Variadic<'_, i64>,
) -> Result<(), NativeError> {
    // The message and the shapes are only read and formatted for an error: the check runs
    // on every tensor argument of every call.
    let message = || message.to_string_lossy();
    let Some(view) = view else {
        return Err(invalid(format!(
            "{} is not a buffer view (null)",
            message()
        )));
    };
    let element_type = HalElementType(element_type as u32);
    let encoding = encoding as u32;
    let expected = dims(shape)?;
    // IREE checks the encoding first (a wrong encoding is worse than a wrong shape); an
    // opaque encoding (0) passes, as the caller then only carries the bytes around.
    if view.encoding_type != OPAQUE_ENCODING && view.encoding_type != encoding {
        return Err(invalid(format!(
            "{} encoding mismatch; expected {encoding:#010x} but have {:#010x}",
            message(),
            view.encoding_type
        )));
    }
    if !view.element_type.satisfies(element_type) {
        return Err(invalid(format!(
            "{} element type mismatch; expected {} but have {}",
            message(),
            element_type.describe(),
            view.element_type.describe()
        )));
    }
    let shapes = || {
        format!(
            "expected shape `{}`, actual shape `{}`",
            shape_text(&expected),
            shape_text(&view.shape)
        )
    };
    if view.shape.len() != expected.len() {
        return Err(invalid(format!(
            "{} shape rank mismatch; expected {} but have {}; {}",
            message(),
            expected.len(),
            view.shape.len(),
            shapes()
        )));
    }
    if let Some(k) = (0..expected.len()).find(|&k| expected[k] != view.shape[k]) {
        return Err(invalid(format!(
            "{} shape dimension {k} mismatch; expected {} but have {}; {}",
            message(),
            expected[k],
            view.shape[k],
            shapes()
        )));
    }
    Ok(())
}

fn allocator_import(
    allocator: &Arc<dyn HalAllocator>,
    is_try: i32,
    params: BufferParams,
    source: &Arc<VmBuffer>,
    offset: i64,
    length: i64,
) -> Result<Option<HalBuffer>, NativeError> {
    let available = source.len() as i64;
    let length = if length == -1 { available } else { length };
    if length < 0
        || offset < 0
        || offset > available
        || offset.checked_add(length).is_none_or(|end| end > available)
    {
        return Err(invalid(format!(
            "byte range out of bounds (requested {offset}-{} of available {available})",
            offset.saturating_add(length).saturating_sub(1)
        )));
    }
    if source.is_mutable() {
        // IREE aliases a mutable source; pactum's buffers own their bytes, so it cannot. A
        // `try` import returns null and the module allocates and copies.
        if is_try != 0 {
            return Ok(None);
        }
        return Err(StatusError::new(
            StatusCode::Unimplemented,
            "importing a mutable !vm.buffer without copying is not supported",
        ));
    }
    // A read-only source (rodata) is imported for constant use: a copy behaves the same.
    let mut bytes = vec![0; length as usize];
    source
        .read(offset as u64, &mut bytes)
        .map_err(|e| invalid(format!("argument 5: {e}")))?;
    allocator.import_copy(params, &bytes).map(Some)
}

/// The bindings of a recorded dispatch: (ordinal, slot, buffer or null, offset, length).
fn dispatch_bindings(
    bindings: Variadic<'_, (i32, i32, Option<&HalBuffer>, i64, i64)>,
) -> Result<Vec<(BufferRef, i64, i64)>, NativeError> {
    bindings
        .iter()
        .map(|binding| {
            let (_, slot, buffer, offset, length) = binding?;
            Ok((buffer_operand(buffer, slot)?, offset, length))
        })
        .collect()
}

/// IREE's `IREE_HAL_MEMORY_ACCESS_READ` bit.
const MEMORY_ACCESS_READ: i32 = 1;

/// `length` bytes of a `!vm.buffer` from `offset`, copied (what `queue.update` and
/// `command_buffer.update_buffer` take from the program when they are called).
fn program_bytes(source: &VmBuffer, offset: i64, length: i64) -> Result<Vec<u8>, NativeError> {
    let range = u64::try_from(offset)
        .ok()
        .zip(u64::try_from(length).ok())
        .and_then(|(offset, length)| source.range(offset, length).ok())
        .ok_or_else(|| {
            out_of_range(format!(
                "source range {offset}+{length} is outside the buffer of {} bytes",
                source.len()
            ))
        })?;
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(range.len()).map_err(|_| {
        StatusError::new(
            StatusCode::ResourceExhausted,
            format!(
                "could not copy {} bytes of the program's buffer",
                range.len()
            ),
        )
    })?;
    bytes.resize(range.len(), 0);
    source
        .read(range.start as u64, &mut bytes)
        .map_err(|e| out_of_range(e.to_string()))?;
    Ok(bytes)
}

/// The error for a `!hal.channel` argument. No channel can exist: the local devices have no
/// collectives (`channel.create` fails as IREE's local devices fail), so whatever stands in a
/// channel's place is null or some other object.
fn not_a_channel(at: usize, channel: Option<&Ref>) -> NativeError {
    invalid(match channel {
        None => format!("argument {at}: expected a hal.channel, got null"),
        Some(other) => format!(
            "argument {at}: expected a hal.channel, got {}",
            other.type_name()
        ),
    })
}

/// The functions: name, calling convention (what `iree-compile` 3.13 imports) and the typed
/// closure implementing it, in `call` index order.
fn functions() -> NativeModuleBuilder<State> {
    NativeModuleBuilder::new("hal", HAL_MODULE_VERSION)
        .ref_types(REF_TYPES.iter().copied())
        .function(
            "ex.file.from_memory",
            "0rIirIIi_r",
            |_: &State,
             _device: Option<&Ref>,
             _affinity: i64,
             access: i32,
             buffer: &Arc<VmBuffer>,
             offset: i64,
             length: i64,
             _flags: i32| {
                // IREE 3.13 maps memory files read-only and refuses any other access.
                if access & !MEMORY_ACCESS_READ != 0 {
                    return Err(StatusError::new(
                        StatusCode::PermissionDenied,
                        "only read-only memory can be accessed via a file handle",
                    ));
                }
                HalFile::from_memory(buffer.clone(), offset, length)
            },
        )
        .function(
            "allocator.allocate",
            "0rIiiI_r",
            |_: &State,
             allocator: &Arc<dyn HalAllocator>,
             _affinity: i64,
             memory_type: i32,
             usage: i32,
             size: i64| {
                let params = BufferParams {
                    memory_type: memory_type as u32,
                    usage: usage as u32,
                };
                allocator.allocate(params, size)
            },
        )
        .function(
            "allocator.import",
            "0riIiirII_r",
            |_: &State,
             allocator: &Arc<dyn HalAllocator>,
             is_try: i32,
             _affinity: i64,
             memory_type: i32,
             usage: i32,
             source: &Arc<VmBuffer>,
             offset: i64,
             length: i64| {
                let params = BufferParams {
                    memory_type: memory_type as u32,
                    usage: usage as u32,
                };
                allocator_import(allocator, is_try, params, source, offset, length)
            },
        )
        .function(
            "buffer.assert",
            "0rrrIii_v",
            |_: &State,
             buffer: Option<&HalBuffer>,
             message: Text<'_>,
             _allocator: Option<&Ref>,
             minimum: i64,
             _memory_type: i32,
             _usage: i32| {
                let Some(buffer) = buffer else {
                    return Err(invalid(format!(
                        "{} buffer is null",
                        message.to_string_lossy()
                    )));
                };
                if (buffer.len() as i128) < i128::from(minimum) {
                    return Err(out_of_range(format!(
                        "{} buffer byte length {} less than expected minimum {minimum}",
                        message.to_string_lossy(),
                        buffer.len()
                    )));
                }
                Ok(())
            },
        )
        .function(
            "buffer.load",
            "0rIi_i",
            |_: &State, buffer: &HalBuffer, offset: i64, length: i32| {
                if !matches!(length, 1 | 2 | 4) {
                    return Err(invalid(format!(
                        "buffer.load of {length} bytes (1, 2 or 4)"
                    )));
                }
                let mut bytes = [0u8; 4];
                buffer.read(offset, &mut bytes[..length as usize])?;
                Ok(i32::from_le_bytes(bytes))
            },
        )
        .function(
            "buffer_view.create",
            "0rIIiiCID_r",
            |_: &State,
             buffer: &HalBuffer,
             offset: i64,
             length: i64,
             element_type: i32,
             encoding: i32,
             shape: Variadic<'_, i64>| {
                let buffer = buffer.subspan(offset, length)?;
                let element_type = HalElementType(element_type as u32);
                HalBufferView::new(buffer, dims(shape)?, element_type, encoding as u32)
            },
        )
        .function(
            "buffer_view.assert",
            "0rriiCID_v",
            |_: &State,
             view: Option<&HalBufferView>,
             message: Text<'_>,
             element_type: i32,
             encoding: i32,
             shape: Variadic<'_, i64>| {
                buffer_view_assert(view, message, element_type, encoding, shape)
            },
        )
        .function(
            "buffer_view.buffer",
            "0r_r",
            |_: &State, view: &HalBufferView| Ok(view.buffer.clone()),
        )
        .function(
            "buffer_view.dim",
            "0ri_I",
            |_: &State, view: &HalBufferView, k: i32| {
                let dim = usize::try_from(k)
                    .ok()
                    .and_then(|k| view.shape.get(k))
                    .ok_or_else(|| {
                        out_of_range(format!(
                            "dimension {k} of a buffer view of rank {}",
                            view.shape.len()
                        ))
                    })?;
                Ok(*dim as i64)
            },
        )
        .function(
            "command_buffer.create",
            "0riiIi_r",
            |_: &State,
             device: &Arc<dyn HalDevice>,
             _modes: i32,
             _categories: i32,
             _affinity: i64,
             binding_capacity: i32| {
                let capacity = u32::try_from(binding_capacity)
                    .map_err(|_| invalid("negative binding capacity"))?;
                device.create_command_buffer(capacity)
            },
        )
        .function(
            "command_buffer.finalize",
            "0r_v",
            |_: &State, command_buffer: &HalCommandBuffer| command_buffer.finalize(),
        )
        .function(
            "command_buffer.execution_barrier",
            "0riiI_v",
            |_: &State,
             _command_buffer: &HalCommandBuffer,
             _source_stage: i32,
             _target_stage: i32,
             _flags: i64| Ok(()),
        )
        .function(
            "command_buffer.fill_buffer",
            "0rrIIiIiI_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             target: Option<&HalBuffer>,
             offset: i64,
             length: i64,
             target_slot: i32,
             pattern: i64,
             pattern_length: i32,
             _flags: i64| {
                command_buffer.record(Command::Fill {
                    target: buffer_operand(target, target_slot)?,
                    offset,
                    length,
                    pattern: pattern as u64,
                    pattern_length: i64::from(pattern_length),
                })
            },
        )
        .function(
            "command_buffer.copy_buffer",
            "0riirIrIII_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             source_slot: i32,
             target_slot: i32,
             source: Option<&HalBuffer>,
             source_offset: i64,
             target: Option<&HalBuffer>,
             target_offset: i64,
             length: i64,
             _flags: i64| {
                command_buffer.record(Command::Copy {
                    source: buffer_operand(source, source_slot)?,
                    source_offset,
                    target: buffer_operand(target, target_slot)?,
                    target_offset,
                    length,
                })
            },
        )
        .function(
            "command_buffer.dispatch",
            "0rrIiiiICiDCiirIID_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             executable: &Arc<dyn HalExecutable>,
             ordinal: i64,
             x: i32,
             y: i32,
             z: i32,
             _flags: i64,
             constants: Variadic<'_, i32>,
             bindings: Variadic<'_, (i32, i32, Option<&HalBuffer>, i64, i64)>| {
                command_buffer.record(Command::Dispatch {
                    executable: executable.clone(),
                    ordinal,
                    count: [x as u32, y as u32, z as u32],
                    constants: constants.iter().collect::<Result<Vec<i32>, _>>()?,
                    bindings: dispatch_bindings(bindings)?,
                })
            },
        )
        .function(
            "device.allocator",
            "0r_r",
            |state: &State, device: &Arc<dyn HalDevice>| {
                Ok(if same_device(device, &state.device) {
                    state.allocator_ref.clone()
                } else {
                    Ref::Object(Arc::new(device.allocator()))
                })
            },
        )
        .function(
            "device.query.i64",
            "0rrr_iI",
            |_: &State, device: &Arc<dyn HalDevice>, category: Text<'_>, key: Text<'_>| {
                let answer = device.query_i64(&category.to_string_lossy(), &key.to_string_lossy());
                Ok(match answer {
                    Some(value) => (1, value),
                    None => (0, 0),
                })
            },
        )
        .function(
            "device.queue.alloca",
            "0rIrrIiiII_r",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             _pool: i64,
             memory_type: i32,
             usage: i32,
             size: i64,
             _flags: i64| {
                let empty = HalFence::empty();
                let params = BufferParams {
                    memory_type: memory_type as u32,
                    usage: usage as u32,
                };
                device.queue_alloca(
                    submission(state, affinity, wait, signal, &empty)?,
                    params,
                    size,
                )
            },
        )
        .function(
            "device.queue.dealloca",
            "0rIrrrI_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             buffer: &HalBuffer,
             _flags: i64| {
                let empty = HalFence::empty();
                device.queue_dealloca(submission(state, affinity, wait, signal, &empty)?, buffer)
            },
        )
        .function(
            "device.queue.fill",
            "0rIrrrIIIiI_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             target: &HalBuffer,
             offset: i64,
             length: i64,
             pattern: i64,
             pattern_length: i32,
             _flags: i64| {
                let empty = HalFence::empty();
                device.queue_fill(
                    submission(state, affinity, wait, signal, &empty)?,
                    target,
                    offset,
                    length,
                    pattern as u64,
                    i64::from(pattern_length),
                )
            },
        )
        .function(
            "device.queue.copy",
            "0rIrrrIrIII_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             source: &HalBuffer,
             source_offset: i64,
             target: &HalBuffer,
             target_offset: i64,
             length: i64,
             _flags: i64| {
                let empty = HalFence::empty();
                device.queue_copy(
                    submission(state, affinity, wait, signal, &empty)?,
                    source,
                    source_offset,
                    target,
                    target_offset,
                    length,
                )
            },
        )
        .function(
            "device.queue.read",
            "0rIrrrIrIII_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             source: &HalFile,
             source_offset: i64,
             target: &HalBuffer,
             target_offset: i64,
             length: i64,
             _flags: i64| {
                let empty = HalFence::empty();
                device.queue_read(
                    submission(state, affinity, wait, signal, &empty)?,
                    source,
                    source_offset,
                    target,
                    target_offset,
                    length,
                )
            },
        )
        .function(
            "device.queue.execute",
            "0rIrrrI_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             command_buffer: &HalCommandBuffer,
             _flags: i64| {
                let empty = HalFence::empty();
                device.queue_execute(
                    submission(state, affinity, wait, signal, &empty)?,
                    Some(command_buffer),
                    &[],
                )
            },
        )
        .function(
            "device.queue.execute.indirect",
            "0rIrrrICrIID_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             command_buffer: &HalCommandBuffer,
             _flags: i64,
             table: Variadic<'_, (&HalBuffer, i64, i64)>| {
                // Sized once: collecting through `Result` would grow the list step by step.
                let mut entries = Vec::with_capacity(table.len());
                for entry in table.iter() {
                    let (buffer, offset, length) = entry?;
                    entries.push(Binding {
                        buffer: buffer.clone(),
                        offset,
                        length,
                    });
                }
                let table = entries;
                let empty = HalFence::empty();
                device.queue_execute(
                    submission(state, affinity, wait, signal, &empty)?,
                    Some(command_buffer),
                    &table,
                )
            },
        )
        .function("devices.count", "0v_i", |_: &State| Ok(1i32))
        .function("devices.get", "0i_r", |state: &State, index: i32| {
            if index != 0 {
                return Err(out_of_range(format!("device {index} of 1")));
            }
            Ok(state.device_ref.clone())
        })
        .function(
            "executable.create",
            "0rIrrr_r",
            |_: &State,
             device: &Arc<dyn HalDevice>,
             _affinity: i64,
             format: Text<'_>,
             data: &Arc<VmBuffer>,
             constants: Option<&Arc<VmBuffer>>| {
                let format = format.to_string_lossy();
                let data = data.to_vec();
                let constants = match constants {
                    Some(buffer) => buffer
                        .to_vec()
                        .chunks(4)
                        .map(|c| {
                            c.try_into().map(u32::from_le_bytes).map_err(|_| {
                                invalid("argument 4: executable constants are not 4-byte values")
                            })
                        })
                        .collect::<Result<Vec<u32>, NativeError>>()?,
                    None => Vec::new(),
                };
                device.create_executable(&format, data, &constants)
            },
        )
        .function(
            "executable.lookup.function",
            "0rr_I",
            |_: &State, executable: &Arc<dyn HalExecutable>, name: Text<'_>| {
                let name = name.to_string_lossy();
                let ordinal = executable.lookup(&name).ok_or_else(|| {
                    StatusError::new(
                        StatusCode::NotFound,
                        format!("executable has no function `{name}`"),
                    )
                })?;
                Ok(ordinal as i64)
            },
        )
        .function(
            "fence.create",
            "0rI_r",
            |_: &State, device: &Arc<dyn HalDevice>, _flags: i64| {
                Ok(HalFence::at(device.create_semaphore(0)?, 1))
            },
        )
        .function(
            "fence.join",
            "0ICrD_r",
            |_: &State, _flags: i64, fences: Variadic<'_, Option<&HalFence>>| {
                let mut joined = HalFence::empty();
                for fence in fences.iter() {
                    for (semaphore, value) in fence?.iter().flat_map(|f| f.points()) {
                        joined.insert(semaphore.clone(), value);
                    }
                }
                Ok(joined)
            },
        )
        .function(
            "fence.await",
            "0iICrD_i",
            |state: &State, timeout: i32, _flags: i64, fences: Variadic<'_, Option<&HalFence>>| {
                // Every argument is checked before any wait.
                for fence in fences.iter() {
                    fence?;
                }
                let fences = fences.iter().filter_map(|fence| fence.ok().flatten());
                // The program's own timeout, unless the wait budget ends first.
                let asked = Timeout::from_millis(timeout as u32);
                let budget_first = match (asked, state.max_wait) {
                    (_, None) => None,
                    (Timeout::Infinite, Some(max)) => Some(max),
                    (Timeout::After(asked), Some(max)) => (max < asked).then_some(max),
                };
                let timeout = budget_first.map_or(asked, Timeout::After);
                match HalFence::wait_all(fences, timeout) {
                    Ok(()) => Ok(0i32),
                    Err(e) if e.status == StatusCode::DeadlineExceeded => match budget_first {
                        Some(max) => Err(wait_limit_exceeded(max)),
                        // A timeout is an answer the program handles; a failure fails the call.
                        None => Ok(e.status.code() as i32),
                    },
                    Err(e) => Err(e),
                }
            },
        )
        .function("buffer.length", "0r_I", |_: &State, buffer: &HalBuffer| {
            Ok(buffer.len() as i64)
        })
        .function(
            "buffer.subspan",
            "0rII_r",
            |_: &State, buffer: &HalBuffer, offset: i64, length: i64| {
                buffer.subspan(offset, length)
            },
        )
        .function(
            "buffer.store",
            "0irIi_v",
            |_: &State, value: i32, buffer: &HalBuffer, offset: i64, length: i32| {
                if !matches!(length, 1 | 2 | 4) {
                    return Err(invalid(format!(
                        "buffer.store of {length} bytes (1, 2 or 4)"
                    )));
                }
                buffer.write(offset, &value.to_le_bytes()[..length as usize])
            },
        )
        .function(
            "buffer_view.rank",
            "0r_i",
            |_: &State, view: &HalBufferView| Ok(view.shape.len() as i32),
        )
        .function(
            "buffer_view.element_type",
            "0r_i",
            |_: &State, view: &HalBufferView| Ok(view.element_type.0 as i32),
        )
        .function(
            "buffer_view.encoding_type",
            "0r_i",
            |_: &State, view: &HalBufferView| Ok(view.encoding_type as i32),
        )
        .function(
            "command_buffer.begin_debug_group",
            "0rr_v",
            |_: &State, _command_buffer: &HalCommandBuffer, _label: Option<&Ref>| Ok(()),
        )
        .function(
            "command_buffer.end_debug_group",
            "0r_v",
            |_: &State, _command_buffer: &HalCommandBuffer| Ok(()),
        )
        .function(
            "device.queue.flush",
            "0rI_v",
            |_: &State, device: &Arc<dyn HalDevice>, _affinity: i64| device.queue_flush(),
        )
        .function("fence.signal", "0r_v", |_: &State, fence: &HalFence| {
            fence.signal()
        })
        .function("fence.query", "0r_i", |_: &State, fence: &HalFence| {
            Ok(match fence.is_reached() {
                Ok(true) => 0,
                Ok(false) => StatusCode::Deferred.code() as i32,
                Err(failure) => failure.status.code() as i32,
            })
        })
        .function(
            "fence.fail",
            "0ri_v",
            |_: &State, fence: &HalFence, status: i32| {
                let status = StatusCode::from_code(status as u32);
                if status == StatusCode::Ok {
                    return Err(invalid("hal.fence.fail with status OK fails nothing"));
                }
                fence.fail(&StatusError::new(status, "failed by hal.fence.fail"));
                Ok(())
            },
        )
        .function(
            "allocator.select",
            "0iiICrID_rI",
            |_: &State,
             _memory_types: i32,
             _usage: i32,
             _flags: i64,
             from: Variadic<'_, (&Ref, i64)>| {
                // One device and no selection policy: the first pair, as IREE without one.
                let (device, affinity) = from.iter().next().ok_or_else(|| {
                    invalid("at least one device/queue affinity pair must be provided")
                })??;
                if device.downcast_ref::<Arc<dyn HalDevice>>().is_none() {
                    return Err(invalid(format!(
                        "argument 3: expected a hal.device, got {}",
                        device.type_name()
                    )));
                }
                Ok((device.clone(), affinity))
            },
        )
        .function(
            "buffer.allocation.preserve",
            "0r_v",
            |_: &State, buffer: &HalBuffer| {
                buffer.allocation_preserve();
                Ok(())
            },
        )
        .function(
            "buffer.allocation.discard",
            "0r_i",
            |_: &State, buffer: &HalBuffer| Ok(i32::from(buffer.allocation_discard())),
        )
        .function(
            "buffer.allocation.is_terminal",
            "0r_i",
            |_: &State, buffer: &HalBuffer| Ok(i32::from(buffer.allocation_is_terminal())),
        )
        .function(
            "buffer_view.trace",
            "0rCrD_v",
            // As IREE: with no sink installed nothing is done and nothing checked.
            |state: &State, key: Option<&Ref>, views: Variadic<'_, Option<&Ref>>| {
                let Some(sink) = &state.trace_sink else {
                    return Ok(());
                };
                let key = key.and_then(Ref::as_buffer).ok_or_else(|| {
                    invalid("argument 0: expected a vm.buffer holding the trace key")
                })?;
                if views.len() > MAX_TRACED_VIEWS {
                    return Err(StatusError::new(
                        StatusCode::ResourceExhausted,
                        format!(
                            "{} buffer views for one trace call (at most {MAX_TRACED_VIEWS})",
                            views.len()
                        ),
                    ));
                }
                let views = views
                    .iter()
                    .enumerate()
                    .map(|(k, view)| {
                        view?
                            .and_then(|r| r.downcast_ref::<HalBufferView>())
                            .ok_or_else(|| {
                                invalid(format!("traced value {k} is not a buffer view"))
                            })
                    })
                    .collect::<Result<Vec<&HalBufferView>, NativeError>>()?;
                sink(&String::from_utf8_lossy(&key.to_vec()), &views)
            },
        )
        .function(
            "channel.create",
            "0rIIrrii_r",
            |_: &State,
             _device: &Arc<dyn HalDevice>,
             _affinity: i64,
             _flags: i64,
             _id: Option<&Arc<VmBuffer>>,
             _group: Option<&Arc<VmBuffer>>,
             _rank: i32,
             _count: i32|
             -> Result<Ref, NativeError> {
                Err(StatusError::new(
                    StatusCode::Unimplemented,
                    "collectives not implemented",
                ))
            },
        )
        .function(
            "channel.split",
            "0riiI_r",
            |_: &State,
             channel: Option<&Ref>,
             _color: i32,
             _key: i32,
             _flags: i64|
             -> Result<Ref, NativeError> { Err(not_a_channel(0, channel)) },
        )
        .function(
            "channel.rank_and_count",
            "0r_ii",
            |_: &State, channel: Option<&Ref>| -> Result<(i32, i32), NativeError> {
                Err(not_a_channel(0, channel))
            },
        )
        .function(
            "command_buffer.advise_buffer",
            "0rrIIIi_v",
            // Host memory needs no residency or caching advice.
            |_: &State,
             _command_buffer: &HalCommandBuffer,
             _buffer: Option<&HalBuffer>,
             _flags: i64,
             _arg0: i64,
             _arg1: i64,
             _slot: i32| Ok(()),
        )
        .function(
            "command_buffer.flush_buffer",
            "0rirII_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             _slot: i32,
             _buffer: Option<&HalBuffer>,
             _offset: i64,
             _length: i64| command_buffer.cache_control("flush_buffer"),
        )
        .function(
            "command_buffer.invalidate_buffer",
            "0rirII_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             _slot: i32,
             _buffer: Option<&HalBuffer>,
             _offset: i64,
             _length: i64| command_buffer.cache_control("invalidate_buffer"),
        )
        .function(
            "command_buffer.update_buffer",
            "0rrIrIIiI_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             source: &Arc<VmBuffer>,
             source_offset: i64,
             target: Option<&HalBuffer>,
             target_offset: i64,
             length: i64,
             target_slot: i32,
             _flags: i64| {
                let data = program_bytes(source, source_offset, length)?;
                command_buffer.record(Command::Update {
                    data: Arc::from(data),
                    target: buffer_operand(target, target_slot)?,
                    offset: target_offset,
                })
            },
        )
        .function(
            "command_buffer.collective",
            "0rriiiirrIIIII_v",
            |_: &State,
             _command_buffer: &HalCommandBuffer,
             channel: Option<&Ref>,
             _op: i32,
             _param: i32,
             _send_slot: i32,
             _recv_slot: i32,
             _send: Option<&HalBuffer>,
             _recv: Option<&HalBuffer>,
             _send_offset: i64,
             _send_length: i64,
             _recv_offset: i64,
             _recv_length: i64,
             _element_count: i64| Err::<(), _>(not_a_channel(1, channel)),
        )
        .function(
            "command_buffer.dispatch.indirect",
            "0rrIirIICiDCiirIID_v",
            |_: &State,
             command_buffer: &HalCommandBuffer,
             executable: &Arc<dyn HalExecutable>,
             ordinal: i64,
             workgroups_slot: i32,
             workgroups: Option<&HalBuffer>,
             workgroups_offset: i64,
             _flags: i64,
             constants: Variadic<'_, i32>,
             bindings: Variadic<'_, (i32, i32, Option<&HalBuffer>, i64, i64)>| {
                command_buffer.record(Command::DispatchIndirect {
                    executable: executable.clone(),
                    ordinal,
                    workgroups: buffer_operand(workgroups, workgroups_slot)?,
                    workgroups_offset,
                    constants: constants.iter().collect::<Result<Vec<i32>, _>>()?,
                    bindings: dispatch_bindings(bindings)?,
                })
            },
        )
        .function(
            "device.queue.barrier",
            "0rIrrI_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             _flags: i64| {
                let empty = HalFence::empty();
                device.queue_barrier(submission(state, affinity, wait, signal, &empty)?)
            },
        )
        .function(
            "device.queue.update",
            "0rIrrrIrIII_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             source: &Arc<VmBuffer>,
             source_offset: i64,
             target: &HalBuffer,
             target_offset: i64,
             length: i64,
             _flags: i64| {
                let data = program_bytes(source, source_offset, length)?;
                let empty = HalFence::empty();
                device.queue_update(
                    submission(state, affinity, wait, signal, &empty)?,
                    &data,
                    target,
                    target_offset,
                )
            },
        )
        .function(
            "device.queue.write",
            "0rIrrrIrIII_v",
            // Every file is read-only (`ex.file.from_memory` refuses other access, as IREE
            // 3.13 does), so a write is refused before it is queued, as IREE's file check
            // refuses it.
            |_: &State,
             _device: &Arc<dyn HalDevice>,
             _affinity: i64,
             _wait: Option<&HalFence>,
             _signal: Option<&HalFence>,
             _source: &HalBuffer,
             _source_offset: i64,
             _target: &HalFile,
             _target_offset: i64,
             _length: i64,
             _flags: i64| {
                Err::<(), _>(StatusError::new(
                    StatusCode::PermissionDenied,
                    "file operation cannot be performed; file allows READ, operation requires \
                     WRITE",
                ))
            },
        )
}

impl HalModule {
    /// The module over `device`: `hal.devices.get(0)` returns it, and every function works
    /// on the objects its arguments name. Its waits on fences are bounded by the default
    /// [`Limits::max_wait`](crate::vm::Limits::max_wait) (see [`HalModule::with_wait_limit`]).
    pub fn new(device: Arc<dyn HalDevice>) -> HalModule {
        HalModule::with_wait_limit(device, crate::vm::Limits::default().max_wait)
    }

    /// The module over `device`, whose waits on fences (`hal.fence.await`, a queue operation's
    /// wait fence) fail with `DEADLINE_EXCEEDED` after `max_wait` (a context's
    /// `Limits::max_wait`), so that a module from an untrusted file cannot hang its caller on a
    /// fence nothing signals; `None` waits as long as it takes, as IREE does.
    pub fn with_wait_limit(device: Arc<dyn HalDevice>, max_wait: Option<Duration>) -> HalModule {
        HalModule::build(device, max_wait, None)
    }

    /// The module handing what programs trace (`hal.buffer_view.trace`) to `sink`, as IREE
    /// hands it to its host's debug sink. Without one, as in IREE without a sink, tracing does
    /// nothing. (The module is made anew over the same device: set it before registering.)
    pub fn with_trace_sink(self, sink: TraceSink) -> HalModule {
        let state = self.module.state();
        HalModule::build(state.device.clone(), state.max_wait, Some(sink))
    }

    fn build(
        device: Arc<dyn HalDevice>,
        max_wait: Option<Duration>,
        trace_sink: Option<TraceSink>,
    ) -> HalModule {
        let allocator_ref = Ref::Object(Arc::new(device.allocator()));
        let device_ref = Ref::Object(Arc::new(device.clone()));
        HalModule {
            module: functions().build(State {
                device,
                device_ref,
                allocator_ref,
                max_wait,
                trace_sink,
            }),
        }
    }

    /// The device `hal.devices.get(0)` returns.
    pub fn device(&self) -> &Arc<dyn HalDevice> {
        &self.module.state().device
    }

    /// The reference to the device that `hal.devices.get(0)` returns, for passing it to the
    /// module's functions.
    pub fn device_ref(&self) -> &Ref {
        &self.module.state().device_ref
    }
}

crate::vm::native_module_is_built!(HalModule, module);

/// A reference to a new HAL object, for passing to the module's functions.
pub fn hal_ref<T: RefObjectType>(object: T) -> Value {
    Value::Ref(Some(Ref::Object(Arc::new(object))))
}
