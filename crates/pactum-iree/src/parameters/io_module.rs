//! [`IoParametersModule`]: IREE's `io_parameters` VM module, through which programs compiled
//! with their weights outside the module (`#flow.parameter.named<"scope"::"key">` globals,
//! `--iree-opt-export-parameters`) load them from a [`ParameterProvider`].
//!
//! The module has IREE 3.13's name, version (0) and exports, with the calling conventions
//! `iree-compile` imports them with:
//!
//! | function  | calling convention | what it does                                         |
//! |-----------|--------------------|------------------------------------------------------|
//! | `load`    | `0rIrrrIiirrr_r`   | a new buffer per parameter, returned in a list      |
//! | `gather`  | `0rIrrrrrrr_v`     | parameters copied into ranges of one target buffer   |
//! | `scatter` | `0rIrrrrrrr_v`     | ranges of one buffer written back into parameters    |
//!
//! Each takes the device, a queue affinity, a wait and a signal fence (null: none), the
//! scope (a `!vm.buffer` of text, null for the unnamed scope) and three `!vm.buffer`s that
//! describe the parameters: a key table (per parameter a little-endian `u32` offset and `u32`
//! length into the key data), the key data, and the spans (per parameter three little-endian
//! `u64`s: offset in the parameter, offset in the buffer, length). `load` also takes the
//! target queue affinity, memory type and usage of the buffers it makes.
//!
//! The work runs as the device's queue operations (`queue_alloca`, `queue_read` for data
//! entries, `queue_fill` or `queue_update` for splats), chained on a timeline of their own
//! that starts at the wait fence; a barrier then signals the signal fence. Every parameter
//! is looked up and its range checked before anything is queued; when something fails, the
//! signal fence is failed with the error (as IREE fails it) and the call returns it. Errors
//! name the scope and the key.
//!
//! `load` hands the device a data entry's own pages of the archive file, without a copy,
//! when the index was opened from a file ([`ParameterIndex::open`](super::ParameterIndex::open))
//! and the device's allocator can map the range
//! ([`HalAllocator::map_file`](crate::hal::HalAllocator::map_file); the local device's maps
//! ranges of at least [`MIN_FILE_MAPPING_BYTES`](crate::hal::MIN_FILE_MAPPING_BYTES) that start
//! at a multiple of 64 bytes in the file, as IREE aligns an archive's entries). Each such
//! buffer is a private copy-on-write mapping of its own: it reads as the file, the pages are
//! read from the file as the program first touches them, and a program writing the buffer
//! writes its own copy of the pages it writes (the file, the index and other loads never
//! change). The mapping is made when `load` is called (the queue's wait fence orders nothing
//! about a file's bytes) and unmapped when the last reference to the buffer is dropped; the
//! memory budget is charged its whole length, as for a copy. Other data entries (indexes
//! built in memory, unaligned or small ranges, `gather`) are copied into device buffers, and
//! splats filled. Parameters themselves are never written (`scatter` fails with
//! `PERMISSION_DENIED`, as it does in IREE for an archive opened for reading).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{ParameterEntry, ParameterProvider, ParameterStorage, SharedBytes};
use crate::hal::{
    BufferParams, FileContents, HalBuffer, HalDevice, HalFence, HalFile, HalSemaphore, Submission,
};
use crate::status::{StatusCode, StatusError};
use crate::vm::{
    BuiltNativeModule, ElementType, NativeError, NativeModuleBuilder, Ref, RefType, Value,
    VmBuffer, VmList,
};

/// The module's name, what programs import its functions by (`io_parameters.load`).
pub const IO_PARAMETERS_MODULE_NAME: &str = "io_parameters";

/// The module's version (IREE 3.13's `io_parameters` is version 0).
pub const IO_PARAMETERS_MODULE_VERSION: u32 = 0;

/// Bytes of one key table entry: `u32` offset, `u32` length.
const KEY_ENTRY_SIZE: usize = 8;

/// Bytes of one span: `u64` parameter offset, `u64` buffer offset, `u64` length.
const SPAN_SIZE: usize = 24;

/// What the functions share: the parameters and how long a queue operation may wait.
struct State {
    provider: Arc<ParameterProvider>,
    max_wait: Option<Duration>,
}

/// IREE's `io_parameters` module over a [`ParameterProvider`]: register it in a context
/// before the modules that import it (`IreeModule::builder().parameters(..)` does, when a
/// module imports it).
///
/// ```
/// use std::sync::Arc;
/// use pactum_iree::parameters::{
///     IoParametersModule, ParameterEntry, ParameterIndex, ParameterProvider, ParameterStorage,
/// };
/// use pactum_iree::vm::NativeModule;
///
/// let mut index = ParameterIndex::new();
/// index.insert(ParameterEntry {
///     key: "w".into(),
///     metadata: Vec::new(),
///     storage: ParameterStorage::Data {
///         source: Arc::new(vec![0u8; 16]),
///         offset: 0,
///         length: 16,
///     },
/// });
/// let mut provider = ParameterProvider::new();
/// provider.add("model", index);
/// let module = IoParametersModule::new(provider);
/// assert_eq!(module.name(), "io_parameters");
/// let names: Vec<_> = module.functions().iter().map(|f| f.name.as_ref()).collect();
/// assert_eq!(names, ["load", "gather", "scatter"]);
/// ```
pub struct IoParametersModule {
    module: BuiltNativeModule<State>,
}

impl fmt::Debug for IoParametersModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IoParametersModule")
            .field("provider", &self.module.state().provider)
            .field("max_wait", &self.module.state().max_wait)
            .finish()
    }
}

impl IoParametersModule {
    /// The module over `provider`, its waits on fences bounded by the default
    /// [`Limits::max_wait`](crate::vm::Limits::max_wait).
    pub fn new(provider: ParameterProvider) -> IoParametersModule {
        IoParametersModule::with_wait_limit(
            Arc::new(provider),
            crate::vm::Limits::default().max_wait,
        )
    }

    /// The module over `provider`, whose queue operations wait on the wait fence for at
    /// most `max_wait` (`None`: as long as it takes), as the `hal` module's do.
    pub fn with_wait_limit(
        provider: Arc<ParameterProvider>,
        max_wait: Option<Duration>,
    ) -> IoParametersModule {
        IoParametersModule {
            module: functions().build(State { provider, max_wait }),
        }
    }

    /// The parameters the module serves.
    pub fn provider(&self) -> &ParameterProvider {
        &self.module.state().provider
    }
}

crate::vm::native_module_is_built!(IoParametersModule, module);

/// The bytes of a data entry, as a file the device's `queue_read` reads from.
struct EntryBytes(SharedBytes);

impl fmt::Debug for EntryBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntryBytes")
            .field("len", &(*self.0).as_ref().len())
            .finish()
    }
}

impl FileContents for EntryBytes {
    fn len(&self) -> u64 {
        (*self.0).as_ref().len() as u64
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), StatusError> {
        let bytes = (*self.0).as_ref();
        let source = usize::try_from(offset)
            .ok()
            .and_then(|start| bytes.get(start..start.checked_add(out.len())?))
            .ok_or_else(|| {
                StatusError::out_of_range(format!(
                    "read of {} bytes at {offset} is outside the {} bytes of the parameter \
                     storage",
                    out.len(),
                    bytes.len()
                ))
            })?;
        out.copy_from_slice(source);
        Ok(())
    }
}

/// One parameter of a call: its key, where it is read from (or written to) and how much.
struct Span {
    key: String,
    parameter_offset: u64,
    buffer_offset: u64,
    length: u64,
}

/// The spans a call names, read from its key table, key data and span buffers (IREE's
/// layout, little-endian).
fn read_spans(
    key_table: &VmBuffer,
    key_data: &VmBuffer,
    spans: &VmBuffer,
) -> Result<Vec<Span>, NativeError> {
    if spans.len() % SPAN_SIZE != 0 {
        return Err(StatusError::invalid_argument(format!(
            "the span buffer's {} bytes are not a whole number of {SPAN_SIZE}-byte spans",
            spans.len()
        )));
    }
    let count = spans.len() / SPAN_SIZE;
    if key_table.len() / KEY_ENTRY_SIZE < count {
        return Err(StatusError::invalid_argument(format!(
            "the key table's {} bytes hold fewer than the {count} keys the spans need",
            key_table.len()
        )));
    }
    let table = key_table.to_vec();
    let data = key_data.to_vec();
    let span_bytes = spans.to_vec();
    let u32_at = |bytes: &[u8], at: usize| {
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default())
    };
    let u64_at = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
    };
    (0..count)
        .map(|i| {
            let offset = u32_at(&table, i * KEY_ENTRY_SIZE) as usize;
            let length = u32_at(&table, i * KEY_ENTRY_SIZE + 4) as usize;
            let key = offset
                .checked_add(length)
                .and_then(|end| data.get(offset..end))
                .ok_or_else(|| {
                    StatusError::out_of_range(format!(
                        "key {i} (offset={offset}, length={length}) is outside the {} bytes \
                         of key data",
                        data.len()
                    ))
                })?;
            let at = i * SPAN_SIZE;
            Ok(Span {
                key: String::from_utf8_lossy(key).into_owned(),
                parameter_offset: u64_at(&span_bytes, at),
                buffer_offset: u64_at(&span_bytes, at + 8),
                length: u64_at(&span_bytes, at + 16),
            })
        })
        .collect()
}

/// The scope a call names (a null buffer: the unnamed scope).
fn scope_text(scope: Option<&Arc<VmBuffer>>) -> String {
    scope.map_or_else(String::new, |buffer| {
        String::from_utf8_lossy(&buffer.to_vec()).into_owned()
    })
}

/// What an operation needs of a parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// The entries of `spans` in `scope`, each found and its range checked.
fn resolve<'p>(
    provider: &'p ParameterProvider,
    scope: &str,
    spans: &[Span],
    access: Access,
) -> Result<Vec<&'p ParameterEntry>, NativeError> {
    if !provider.scopes().any(|s| s == scope) {
        let known: Vec<String> = provider.scopes().map(|s| format!("{s:?}")).collect();
        return Err(StatusError::new(
            StatusCode::NotFound,
            format!(
                "no parameters registered for scope {scope:?} (scopes: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    spans
        .iter()
        .map(|span| {
            let entry = provider.find(scope, &span.key).ok_or_else(|| {
                StatusError::new(
                    StatusCode::NotFound,
                    format!("parameter {:?} not found in scope {scope:?}", span.key),
                )
            })?;
            if access == Access::Write {
                return Err(StatusError::new(
                    StatusCode::PermissionDenied,
                    format!(
                        "parameter {:?} in scope {scope:?} is read-only; the operation \
                         requires WRITE",
                        span.key
                    ),
                ));
            }
            let size = entry.storage.len();
            if span
                .parameter_offset
                .checked_add(span.length)
                .is_none_or(|end| end > size)
            {
                return Err(StatusError::out_of_range(format!(
                    "parameter {:?} in scope {scope:?}: range out of bounds (offset={}, \
                     length={}, size={size})",
                    span.key, span.parameter_offset, span.length
                )));
            }
            Ok(entry)
        })
        .collect()
}

/// The error of an operation on a parameter, its message naming the parameter.
fn about(span: &Span, scope: &str, error: StatusError) -> StatusError {
    StatusError::new(
        error.status,
        format!(
            "parameter {:?} in scope {scope:?}: {}",
            span.key, error.message
        ),
    )
}

fn to_i64(value: u64, what: &str, span: &Span, scope: &str) -> Result<i64, StatusError> {
    i64::try_from(value).map_err(|_| {
        about(
            span,
            scope,
            StatusError::out_of_range(format!("{what} {value} is too large")),
        )
    })
}

/// Queue operations of one call, chained on a timeline of their own: the first waits on
/// the call's wait fence, each later one on the one before, and [`finish`](Self::finish)
/// signals the call's signal fence after the last.
struct Batch<'a> {
    device: &'a dyn HalDevice,
    affinity: u64,
    wait: &'a HalFence,
    signal: &'a HalFence,
    max_wait: Option<Duration>,
    timeline: Option<(HalSemaphore, u64)>,
}

impl<'a> Batch<'a> {
    /// Runs `operation` with the submission of the next step.
    fn step<T>(
        &mut self,
        operation: impl FnOnce(&dyn HalDevice, Submission<'_>) -> Result<T, StatusError>,
    ) -> Result<T, StatusError> {
        let (semaphore, value) = match self.timeline.take() {
            Some(point) => point,
            None => (self.device.create_semaphore(0)?, 0),
        };
        let wait = if value == 0 {
            self.wait.clone()
        } else {
            HalFence::at(semaphore.clone(), value)
        };
        let signal = HalFence::at(semaphore.clone(), value + 1);
        self.timeline = Some((semaphore, value + 1));
        operation(
            self.device,
            Submission {
                affinity: self.affinity,
                wait: &wait,
                signal: &signal,
                wait_limit: self.max_wait,
            },
        )
    }

    /// Signals the call's signal fence once every step is done (once the wait fence is
    /// reached, when there was none).
    fn finish(self) -> Result<(), StatusError> {
        let last = self
            .timeline
            .map(|(semaphore, value)| HalFence::at(semaphore, value));
        self.device.queue_barrier(Submission {
            affinity: self.affinity,
            wait: last.as_ref().unwrap_or(self.wait),
            signal: self.signal,
            wait_limit: self.max_wait,
        })
    }
}

/// Queues the copy (or fill) of `span` of `entry` into `target` at the span's buffer offset.
fn enqueue_contents(
    batch: &mut Batch<'_>,
    entry: &ParameterEntry,
    span: &Span,
    scope: &str,
    target: &HalBuffer,
) -> Result<(), StatusError> {
    let buffer_offset = to_i64(span.buffer_offset, "buffer offset", span, scope)?;
    let length = to_i64(span.length, "length", span, scope)?;
    match &entry.storage {
        ParameterStorage::Data {
            source,
            offset,
            length: entry_length,
        } => {
            let file = HalFile::from_memory(
                Arc::new(EntryBytes(source.clone())),
                *offset as i64,
                *entry_length as i64,
            )
            .map_err(|e| about(span, scope, e))?;
            let parameter_offset = to_i64(span.parameter_offset, "offset", span, scope)?;
            batch
                .step(|device, submit| {
                    device.queue_read(
                        submit,
                        &file,
                        parameter_offset,
                        target,
                        buffer_offset,
                        length,
                    )
                })
                .map_err(|e| about(span, scope, e))
        }
        ParameterStorage::Splat { pattern, .. } => {
            // A splat's bytes are its pattern repeated from the entry's start, so a range of
            // it starting inside a pattern is the pattern rotated.
            if pattern.is_empty() {
                return Err(about(
                    span,
                    scope,
                    StatusError::invalid_argument("the splat's pattern is empty"),
                ));
            }
            let rotation = (span.parameter_offset % pattern.len() as u64) as usize;
            let mut rotated = pattern.clone();
            rotated.rotate_left(rotation);
            if matches!(rotated.len(), 1 | 2 | 4 | 8) {
                let mut bytes = [0u8; 8];
                bytes[..rotated.len()].copy_from_slice(&rotated);
                let value = u64::from_le_bytes(bytes);
                batch
                    .step(|device, submit| {
                        device.queue_fill(
                            submit,
                            target,
                            buffer_offset,
                            length,
                            value,
                            rotated.len() as i64,
                        )
                    })
                    .map_err(|e| about(span, scope, e))
            } else {
                let count = usize::try_from(span.length).map_err(|_| {
                    about(
                        span,
                        scope,
                        StatusError::out_of_range("splat length too large"),
                    )
                })?;
                let mut data = Vec::new();
                data.try_reserve_exact(count).map_err(|_| {
                    about(
                        span,
                        scope,
                        StatusError::new(
                            StatusCode::ResourceExhausted,
                            format!("could not hold the {count} bytes of the splat"),
                        ),
                    )
                })?;
                data.extend(rotated.iter().copied().cycle().take(count));
                batch
                    .step(|device, submit| {
                        device.queue_update(submit, &data, target, buffer_offset)
                    })
                    .map_err(|e| about(span, scope, e))
            }
        }
    }
}

/// The buffer `load` makes for `span` of `entry` over the entry's pages of its archive file,
/// without a copy: `None` when the entry is not in a file an index was opened from, when the
/// span does not start the buffer, or when the device's allocator does not map the range
/// (then the bytes are copied).
fn mapped_buffer(
    provider: &ParameterProvider,
    device: &dyn HalDevice,
    params: BufferParams,
    entry: &ParameterEntry,
    span: &Span,
) -> Result<Option<HalBuffer>, StatusError> {
    let ParameterStorage::Data { source, offset, .. } = &entry.storage else {
        return Ok(None);
    };
    if span.buffer_offset != 0 {
        return Ok(None);
    }
    let Some(archive) = provider.archive_of(source) else {
        return Ok(None);
    };
    let Some(start) = (*offset as u64).checked_add(span.parameter_offset) else {
        return Ok(None);
    };
    device
        .allocator()
        .map_file(params, archive.file(), start, span.length)
}

/// Runs `body` as one call's batch: on failure the signal fence is failed with the error.
fn run_batch<T>(
    state: &State,
    device: &Arc<dyn HalDevice>,
    affinity: i64,
    wait: Option<&HalFence>,
    signal: Option<&HalFence>,
    body: impl FnOnce(&mut Batch<'_>) -> Result<T, StatusError>,
) -> Result<T, StatusError> {
    let empty = HalFence::empty();
    let signal = signal.unwrap_or(&empty);
    let mut batch = Batch {
        device: &**device,
        affinity: affinity as u64,
        wait: wait.unwrap_or(&empty),
        signal,
        max_wait: state.max_wait,
        timeline: None,
    };
    let result = body(&mut batch).and_then(|value| batch.finish().map(|()| value));
    if let Err(error) = &result {
        signal.fail(error);
    }
    result
}

/// The functions, in `call` index order, with IREE 3.13's calling conventions.
fn functions() -> NativeModuleBuilder<State> {
    NativeModuleBuilder::new(IO_PARAMETERS_MODULE_NAME, IO_PARAMETERS_MODULE_VERSION)
        .function(
            "load",
            "0rIrrrIiirrr_r",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             scope: Option<&Arc<VmBuffer>>,
             _target_affinity: i64,
             memory_type: i32,
             usage: i32,
             key_table: &Arc<VmBuffer>,
             key_data: &Arc<VmBuffer>,
             spans: &Arc<VmBuffer>| {
                let scope = scope_text(scope);
                let params = BufferParams {
                    memory_type: memory_type as u32,
                    usage: usage as u32,
                };
                run_batch(state, device, affinity, wait, signal, |batch| {
                    let spans = read_spans(key_table, key_data, spans)?;
                    let entries = resolve(&state.provider, &scope, &spans, Access::Read)?;
                    let list = VmList::new(
                        ElementType::Ref(RefType::Object("hal.buffer".into())),
                        spans.len(),
                        None,
                    )
                    .map_err(|e| StatusError::new(StatusCode::ResourceExhausted, e.to_string()))?;
                    for (span, entry) in spans.iter().zip(entries) {
                        let mapped = mapped_buffer(&state.provider, &**device, params, entry, span)
                            .map_err(|e| about(span, &scope, e))?;
                        let buffer = match mapped {
                            Some(buffer) => buffer,
                            None => {
                                let length = to_i64(span.length, "length", span, &scope)?;
                                let buffer = batch
                                    .step(|device, submit| {
                                        device.queue_alloca(submit, params, length)
                                    })
                                    .map_err(|e| about(span, &scope, e))?;
                                enqueue_contents(batch, entry, span, &scope, &buffer)?;
                                buffer
                            }
                        };
                        list.push(Value::Ref(Some(Ref::Object(Arc::new(buffer)))))
                            .map_err(|e| {
                                about(span, &scope, StatusError::invalid_argument(e.to_string()))
                            })?;
                    }
                    Ok(Ref::List(Arc::new(list)))
                })
            },
        )
        .function(
            "gather",
            "0rIrrrrrrr_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             scope: Option<&Arc<VmBuffer>>,
             target: &HalBuffer,
             key_table: &Arc<VmBuffer>,
             key_data: &Arc<VmBuffer>,
             spans: &Arc<VmBuffer>| {
                let scope = scope_text(scope);
                run_batch(state, device, affinity, wait, signal, |batch| {
                    let spans = read_spans(key_table, key_data, spans)?;
                    let entries = resolve(&state.provider, &scope, &spans, Access::Read)?;
                    for (span, entry) in spans.iter().zip(entries) {
                        enqueue_contents(batch, entry, span, &scope, target)?;
                    }
                    Ok(())
                })
            },
        )
        .function(
            "scatter",
            "0rIrrrrrrr_v",
            |state: &State,
             device: &Arc<dyn HalDevice>,
             affinity: i64,
             wait: Option<&HalFence>,
             signal: Option<&HalFence>,
             _source: &HalBuffer,
             scope: Option<&Arc<VmBuffer>>,
             key_table: &Arc<VmBuffer>,
             key_data: &Arc<VmBuffer>,
             spans: &Arc<VmBuffer>| {
                let scope = scope_text(scope);
                run_batch(state, device, affinity, wait, signal, |_| {
                    let spans = read_spans(key_table, key_data, spans)?;
                    // Every entry is read-only (archives are mapped for reading, buffers
                    // shared immutably), so the first parameter named refuses the write.
                    resolve(&state.provider, &scope, &spans, Access::Write).map(|_| ())
                })
            },
        )
}
