//! [`HalDevice`]: what every HAL device offers, modelled on IREE's `iree_hal_device_t`: identity
//! and queries, an allocator, executables, semaphores, command buffers and queue operations
//! ordered by fences.
//!
//! The `hal` VM module ([`HalModule`](super::HalModule)) works over `Arc<dyn HalDevice>` only,
//! so a new kind of device (a GPU driver) implements this trait, with executable and buffer
//! types of its own where it needs them, and runs compiled programs without any change to the
//! VM or to the module's functions.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::allocator::{BufferParams, HalAllocator};
use super::buffer::{Binding, HalBuffer};
use super::command::{BufferRef, Command, HalCommandBuffer};
use super::executable::HalExecutable;
use super::file::HalFile;
use super::semaphore::{HalFence, HalSemaphore, Timeout, wait_limit_exceeded};
use crate::status::{StatusCode, StatusError};

/// IREE's "any queue" affinity (`-1`).
pub const ANY_QUEUE: u64 = u64::MAX;

/// Where a queue operation runs and what orders it: it starts once `wait` is reached, and
/// `signal` is signalled when it is done (or failed with its error when it fails).
#[derive(Clone, Copy, Debug)]
pub struct Submission<'a> {
    /// IREE's queue affinity bits ([`ANY_QUEUE`]: any); a device with one queue ignores them.
    pub affinity: u64,
    /// Reached before the operation starts.
    pub wait: &'a HalFence,
    /// Signalled when it is done.
    pub signal: &'a HalFence,
    /// How long a device that completes operations before it returns may block on `wait`
    /// (`None`: as long as it takes, as IREE waits); past it the operation fails with
    /// `DEADLINE_EXCEEDED` ([`wait_limit_exceeded`](super::semaphore::wait_limit_exceeded)).
    /// A device that queues work without blocking has nothing to bound.
    pub wait_limit: Option<Duration>,
}

impl<'a> Submission<'a> {
    /// On any queue, after `wait` (however long it takes), signalling `signal`.
    pub fn new(wait: &'a HalFence, signal: &'a HalFence) -> Submission<'a> {
        Submission {
            affinity: ANY_QUEUE,
            wait,
            signal,
            wait_limit: None,
        }
    }
}

/// A HAL device.
///
/// Queue operations are asynchronous in general: a device may return before the work is done
/// and signal the submission's fence later, so callers wait on fences, never on returns. (The
/// local CPU device finishes each operation before it returns.)
pub trait HalDevice: Send + Sync + fmt::Debug {
    /// IREE's identifier for the device (`local-task`, `local-sync`): what the
    /// `hal.device.id` query matches patterns against.
    fn id(&self) -> &str;

    /// The answer to an `i64` query (`device.query.i64`): `hal.device.id` with a pattern
    /// (1 when [`id`](Self::id) matches it, see [`id_matches`]), `hal.executable.format` with
    /// a format (1 when the device runs it), `hal.device` or `hal.dispatch` with
    /// `concurrency`; `None` for a query the device does not know.
    fn query_i64(&self, category: &str, key: &str) -> Option<i64>;

    /// The allocator of the device's buffers.
    fn allocator(&self) -> Arc<dyn HalAllocator>;

    /// Whether the device runs executables of `format`.
    fn supports_executable_format(&self, format: &str) -> bool;

    /// Loads executable `data` of `format` with its executable-level `constants`.
    fn create_executable(
        &self,
        format: &str,
        data: Vec<u8>,
        constants: &[u32],
    ) -> Result<Arc<dyn HalExecutable>, StatusError>;

    /// A semaphore at `initial`.
    fn create_semaphore(&self, initial: u64) -> Result<HalSemaphore, StatusError> {
        Ok(HalSemaphore::new(initial))
    }

    /// An empty command buffer whose commands may refer to `binding_capacity` slots of a
    /// binding table given when it is executed.
    fn create_command_buffer(
        &self,
        binding_capacity: u32,
    ) -> Result<HalCommandBuffer, StatusError> {
        Ok(HalCommandBuffer::new(binding_capacity))
    }

    /// Allocates a buffer of `size` bytes once the submission's wait fence is reached.
    fn queue_alloca(
        &self,
        submit: Submission<'_>,
        params: BufferParams,
        size: i64,
    ) -> Result<HalBuffer, StatusError>;

    /// Releases `buffer` to the device once the wait fence is reached (its memory is freed
    /// when the last reference to it is dropped).
    fn queue_dealloca(&self, submit: Submission<'_>, buffer: &HalBuffer)
    -> Result<(), StatusError>;

    /// Fills `length` bytes of `target` from `offset` with a 1, 2, 4 or 8-byte `pattern`.
    fn queue_fill(
        &self,
        submit: Submission<'_>,
        target: &HalBuffer,
        offset: i64,
        length: i64,
        pattern: u64,
        pattern_length: i64,
    ) -> Result<(), StatusError>;

    /// Copies `length` bytes from `source` to `target`.
    fn queue_copy(
        &self,
        submit: Submission<'_>,
        source: &HalBuffer,
        source_offset: i64,
        target: &HalBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), StatusError>;

    /// Reads `length` bytes of `source` into `target`.
    fn queue_read(
        &self,
        submit: Submission<'_>,
        source: &HalFile,
        source_offset: i64,
        target: &HalBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), StatusError>;

    /// Writes `data` (the program's bytes, copied when the operation is queued) into `target`
    /// at `offset`. By default a one-command command buffer run by
    /// [`queue_execute`](Self::queue_execute).
    fn queue_update(
        &self,
        submit: Submission<'_>,
        data: &[u8],
        target: &HalBuffer,
        offset: i64,
    ) -> Result<(), StatusError> {
        let commands = self.create_command_buffer(0)?;
        commands.record(Command::Update {
            data: Arc::from(data),
            target: BufferRef::Direct(target.clone()),
            offset,
        })?;
        commands.finalize()?;
        self.queue_execute(submit, Some(&commands), &[])
    }

    /// Runs `command_buffer`'s commands, its binding slots filled from `binding_table`; with
    /// no command buffer, only orders the fences (a barrier).
    fn queue_execute(
        &self,
        submit: Submission<'_>,
        command_buffer: Option<&HalCommandBuffer>,
        binding_table: &[Binding],
    ) -> Result<(), StatusError>;

    /// Signals the submission's fence once its wait fence is reached, doing nothing else.
    fn queue_barrier(&self, submit: Submission<'_>) -> Result<(), StatusError> {
        self.queue_execute(submit, None, &[])
    }

    /// Starts work submitted so far that the device may still be holding back.
    fn queue_flush(&self) -> Result<(), StatusError> {
        Ok(())
    }
}

/// Runs `work` as a queue operation that completes before it returns: after the wait fence
/// is reached, then signalling the signal fence, or failing it with the error (a failed wait
/// fence is the operation's error too, so failures flow down a chain of operations).
pub(crate) fn run_now<T>(
    submit: Submission<'_>,
    work: impl FnOnce() -> Result<T, StatusError>,
) -> Result<T, StatusError> {
    match wait_on_host(submit.wait, submit.wait_limit).and_then(|()| work()) {
        Ok(value) => {
            submit.signal.signal()?;
            Ok(value)
        }
        Err(error) => {
            submit.signal.fail(&error);
            Err(error)
        }
    }
}

/// Waits on the host until `fence` is reached, at most `wait_limit` (`None`: as long as it
/// takes); past the limit, the [`wait_limit_exceeded`] error.
pub(crate) fn wait_on_host(
    fence: &HalFence,
    wait_limit: Option<Duration>,
) -> Result<(), StatusError> {
    match wait_limit {
        None => fence.wait(Timeout::Infinite),
        Some(limit) => fence.wait(Timeout::After(limit)).map_err(|e| {
            if e.status == StatusCode::DeadlineExceeded {
                wait_limit_exceeded(limit)
            } else {
                e
            }
        }),
    }
}

/// Whether a device `id` matches `pattern`, as IREE's `hal.device.id` query matches: `*` any
/// run of characters, `?` any one. Linear backtracking (one retry point), so hostile patterns
/// cannot take exponential time.
pub fn id_matches(pattern: &str, id: &str) -> bool {
    let (pattern, text) = (pattern.as_bytes(), id.as_bytes());
    let (mut p, mut t) = (0, 0);
    let mut retry: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                retry = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match retry {
                Some((rp, rt)) => {
                    p = rp + 1;
                    t = rt + 1;
                    retry = Some((rp, rt + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_glob_patterns() {
        assert!(id_matches("local*", "local-sync"));
        assert!(id_matches("*", ""));
        assert!(!id_matches("cuda*", "local-sync"));
        assert!(id_matches("local-?ync", "local-sync"));
        assert!(id_matches("*sync", "local-sync"));
        assert!(!id_matches("local", "local-sync"));
        assert!(!id_matches("local-sync-x", "local-sync"));
        let hostile = "*a".repeat(10_000);
        assert!(!id_matches(&hostile, "local-sync"));
    }
}
