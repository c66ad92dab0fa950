//! Who runs the workgroups of a dispatch (vmvx or ELF): the caller's thread alone (IREE's
//! `local-sync`: deterministic, nothing shared) or a pool of worker threads (IREE's
//! `local-task`). Pools are shared: one process-wide pool sized to the machine serves every
//! device that does not ask for its own, so no call ever spawns threads.

use std::sync::{Arc, OnceLock};

use crate::status::{StatusCode, StatusError};

/// Where dispatches run.
#[derive(Clone)]
pub enum Workers {
    /// Every workgroup on the calling thread, in order (x fastest, then y, then z).
    CallerThread,
    /// Workgroups spread over a thread pool; the caller waits for all of them.
    Pool(Arc<rayon::ThreadPool>),
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workers::CallerThread => f.write_str("Workers::CallerThread"),
            Workers::Pool(pool) => {
                write!(f, "Workers::Pool({} threads)", pool.current_num_threads())
            }
        }
    }
}

impl Default for Workers {
    /// The shared pool.
    fn default() -> Workers {
        Workers::shared()
    }
}

impl Workers {
    /// The process-wide pool, one thread per available core (created on first use).
    pub fn shared() -> Workers {
        static SHARED: OnceLock<Option<Arc<rayon::ThreadPool>>> = OnceLock::new();
        let pool = SHARED.get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            build_pool(threads).ok().map(Arc::new)
        });
        match pool {
            Some(pool) => Workers::Pool(pool.clone()),
            // The system would not give us threads: run inline rather than fail.
            None => Workers::CallerThread,
        }
    }

    /// A pool of its own with `threads` threads (1 to 255).
    pub fn with_threads(threads: usize) -> Result<Workers, StatusError> {
        if !(1..=255).contains(&threads) {
            return Err(StatusError::new(
                StatusCode::InvalidArgument,
                format!("{threads} worker threads: expected 1 to 255"),
            ));
        }
        Ok(Workers::Pool(Arc::new(build_pool(threads)?)))
    }

    /// How many workgroups may run at once.
    pub fn concurrency(&self) -> usize {
        match self {
            Workers::CallerThread => 1,
            Workers::Pool(pool) => pool.current_num_threads(),
        }
    }

    /// IREE's name for a device of this kind.
    pub fn device_name(&self) -> &'static str {
        match self {
            Workers::CallerThread => "local-sync",
            Workers::Pool(_) => "local-task",
        }
    }
}

fn build_pool(threads: usize) -> Result<rayon::ThreadPool, StatusError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|k| format!("pactum-hal-{k}"))
        .build()
        .map_err(|e| {
            StatusError::new(
                StatusCode::ResourceExhausted,
                format!("could not start {threads} worker threads: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_report_their_size_and_refuse_nonsense() {
        assert_eq!(Workers::CallerThread.concurrency(), 1);
        assert_eq!(Workers::with_threads(3).unwrap().concurrency(), 3);
        assert!(Workers::with_threads(0).is_err());
        assert!(Workers::shared().concurrency() >= 1);
    }
}
