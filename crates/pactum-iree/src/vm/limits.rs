//! The resource limits of a VM context. Its memory budget
//! ([`MemoryBudget`](crate::memory_budget::MemoryBudget)) lives in [`crate::memory_budget`],
//! below the VM and the HAL, which share it.

/// The resource limits of a [`Context`](super::Context).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The deepest call stack one invocation may reach, in frames.
    pub max_frames: usize,
    /// Register storage of all frames of one invocation, in bytes (4 per i32 slot, one
    /// pointer-sized word and more per ref slot; the reference runtime allows 1 MiB).
    pub max_stack_bytes: usize,
    /// Instructions one invocation may execute; `None` for no limit.
    pub fuel: Option<u64>,
    /// Bytes of buffers, lists and module globals the context may hold at once; `None` for
    /// no limit (a hostile module can then exhaust the host's memory).
    pub memory: Option<usize>,
    /// Whether float arithmetic flushes subnormal operands and results to zero (x86's
    /// DAZ + FTZ, Arm's FZ), as IREE's local devices do around every dispatch; on for the
    /// contexts of vmvx executables, off by default.
    pub flush_denormals: bool,
    /// The longest one wait on a HAL fence may block inside an invocation (`hal.fence.await`,
    /// a queue operation's wait fence) before it fails with `DEADLINE_EXCEEDED`; `None` for no
    /// limit, as IREE waits. Queue work is synchronous here, so a fence the program waits on
    /// that is not reached yet can only be reached from another thread: a module that waits
    /// for a fence nothing signals would otherwise hang its caller.
    pub max_wait: Option<std::time::Duration>,
}

impl Default for Limits {
    /// 1024 frames, 8 MiB of registers, no instruction limit, 1 GiB of memory, fence waits
    /// of at most a minute.
    fn default() -> Limits {
        Limits {
            max_frames: 1024,
            max_stack_bytes: 8 << 20,
            fuel: None,
            memory: Some(1 << 30),
            flush_denormals: false,
            max_wait: Some(std::time::Duration::from_secs(60)),
        }
    }
}

impl Limits {
    /// The defaults with an instruction budget.
    pub fn with_fuel(fuel: u64) -> Limits {
        Limits {
            fuel: Some(fuel),
            ..Limits::default()
        }
    }
}
