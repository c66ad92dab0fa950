//! Who runs the workgroups of a dispatch (vmvx or ELF): the caller's thread alone (IREE's `local-sync`:
//! deterministic, nothing shared) or a pool of worker threads (IREE's `local-task`). Pools are
//! shared: one process-wide pool sized to the machine serves every device that does not ask
//! for its own. A pool starts its threads at its first dispatch of more than one workgroup,
//! so a program that never needs them (a VM-only function, a short command-line run) does
//! not pay for them, and later dispatches never spawn threads.
//!
//! A pool of `n` threads is the calling thread plus `n - 1` helper threads. A dispatch is
//! cheap when it is small, which is most of a decode step's: the caller posts the dispatch,
//! wakes only as many sleeping helpers as there are other workgroups, and runs workgroups
//! itself while they come; helpers that are not yet running when the caller has claimed
//! every workgroup find nothing to do, so the caller never waits for a thread to wake, only
//! for workgroups in progress. A helper that finished a dispatch spins briefly for the next
//! one before it sleeps, so a chain of dispatches does not pay a wake-up each. A dispatch of
//! one workgroup runs on the caller alone.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crate::status::{StatusCode, StatusError};

/// Where dispatches run.
#[derive(Clone)]
pub enum Workers {
    /// Every workgroup on the calling thread, in order (x fastest, then y, then z).
    CallerThread,
    /// Workgroups spread over a thread pool (the caller among its threads); the caller
    /// returns when all of them are done.
    Pool(Arc<WorkerPool>),
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workers::CallerThread => f.write_str("Workers::CallerThread"),
            Workers::Pool(pool) => write!(f, "Workers::Pool({} threads)", pool.threads()),
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
    /// The process-wide pool, one thread per available core (made on first use; its threads
    /// start at its first dispatch of more than one workgroup). If the system will not give
    /// it threads then, its dispatches run on the threads it did get, the caller's at least.
    pub fn shared() -> Workers {
        static SHARED: OnceLock<Arc<WorkerPool>> = OnceLock::new();
        let pool = SHARED.get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            Arc::new(WorkerPool::new(
                threads.min(255),
                OnStartFailure::RunWithFewer,
            ))
        });
        Workers::Pool(pool.clone())
    }

    /// A pool of its own with `threads` threads (1 to 255), the caller's counted. Its threads
    /// start at its first dispatch of more than one workgroup; if the system will not give
    /// them, that dispatch fails (`ResourceExhausted`), and so does every later one.
    pub fn with_threads(threads: usize) -> Result<Workers, StatusError> {
        if !(1..=255).contains(&threads) {
            return Err(StatusError::new(
                StatusCode::InvalidArgument,
                format!("{threads} worker threads: expected 1 to 255"),
            ));
        }
        Ok(Workers::Pool(Arc::new(WorkerPool::new(
            threads,
            OnStartFailure::Fail,
        ))))
    }

    /// How many workgroups may run at once.
    pub fn concurrency(&self) -> usize {
        match self {
            Workers::CallerThread => 1,
            Workers::Pool(pool) => pool.threads(),
        }
    }

    /// IREE's name for a device of this kind.
    pub fn device_name(&self) -> &'static str {
        match self {
            Workers::CallerThread => "local-sync",
            Workers::Pool(_) => "local-task",
        }
    }

    /// Runs `body(state, index, processor)` for every workgroup `index` in `0..total`, and
    /// returns when all have run or one has failed (then with that error; workgroups not
    /// yet started are skipped). Every thread that takes part makes its state once with
    /// `init`, before its first workgroup (workgroup memory, say); `processor` is that
    /// thread's number, below [`Workers::concurrency`], and no two threads running
    /// workgroups of this call at the same time have the same one. On
    /// [`Workers::CallerThread`], and for a single workgroup, the workgroups run on the
    /// calling thread in order, as processor 0.
    pub fn run_workgroups<S>(
        &self,
        total: u64,
        init: impl Fn() -> Result<S, StatusError> + Sync,
        body: impl Fn(&mut S, u64, usize) -> Result<(), StatusError> + Sync,
    ) -> Result<(), StatusError> {
        match self {
            Workers::Pool(pool) if total > 1 => pool.run(total, &init, &body),
            _ => {
                if total == 0 {
                    return Ok(());
                }
                let mut state = init()?;
                (0..total).try_for_each(|index| body(&mut state, index, 0))
            }
        }
    }
}

/// A pool of threads running dispatches: the caller of [`Workers::run_workgroups`] and
/// `threads - 1` helpers. Made by [`Workers::shared`] and [`Workers::with_threads`].
pub struct WorkerPool {
    shared: Arc<Shared>,
    /// Dispatches take turns: the processor numbers of one are the pool's, so a caller waits
    /// while another caller's dispatch runs.
    turn: Mutex<()>,
    /// The helper threads, started at the first dispatch that needs them (under `turn`):
    /// `None` until then, then why some could not start, if any could not.
    helpers: Mutex<Option<Helpers>>,
    on_start_failure: OnStartFailure,
}

/// The started helpers of a pool, and the error of the first that could not start.
struct Helpers {
    running: Vec<JoinHandle<()>>,
    failure: Option<StatusError>,
}

/// What a pool's dispatches do when the system would not start all of its helper threads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnStartFailure {
    /// Fail with the error (a pool whose size the user asked for).
    Fail,
    /// Run on the threads that did start, the caller's at least (the shared pool).
    RunWithFewer,
}

/// What the caller and the helpers share.
struct Shared {
    /// Bumped when a dispatch is posted (and at shutdown): helpers wait for it to change.
    epoch: AtomicU64,
    /// The dispatch helpers may join, while its caller accepts them.
    job: Mutex<Option<Arc<Job>>>,
    /// Per helper: whether it sleeps (parked), and its thread to wake it.
    sleepers: Vec<Sleeper>,
    shutdown: AtomicBool,
}

struct Sleeper {
    asleep: AtomicBool,
    thread: OnceLock<Thread>,
}

/// One posted dispatch.
struct Job {
    /// Runs as many workgroups as the thread can claim, as the given processor.
    work: WorkRef,
    /// Helpers inside `work`.
    active: AtomicUsize,
    /// Whether the caller sleeps until `active` is 0.
    caller_asleep: AtomicBool,
    caller: Thread,
}

/// The caller's work function, its lifetime erased: it lives on the caller's stack, and the
/// caller withdraws the job and waits until no helper is inside `work` before it returns
/// (`Posted::drop`), so no helper calls it after it is gone.
struct WorkRef(*const (dyn Fn(usize) + Sync + 'static));

// SAFETY: the pointee is `Sync` (shared calls from several threads are what it is made for)
// and stays alive while any helper can reach it (see `WorkRef`).
unsafe impl Send for WorkRef {}
// SAFETY: as above.
unsafe impl Sync for WorkRef {}

/// How long a helper that ran out of work polls for the next dispatch before it sleeps, and
/// how long the caller polls for helpers finishing their last workgroups before it sleeps.
/// Past `BUSY_POLL` of either, a poller yields its core between polls: on a machine with
/// more runnable threads than cores, the thread it waits for may need that core.
const HELPER_POLL: Duration = Duration::from_micros(100);
const CALLER_POLL: Duration = Duration::from_micros(200);
const BUSY_POLL: Duration = Duration::from_micros(5);

/// Waits a little for a poller that has been polling since `started`: a spin at first, then a
/// yield of the core. False when `limit` has passed (the poller should sleep).
fn pause(started: Instant, limit: Duration) -> bool {
    let waited = started.elapsed();
    if waited < BUSY_POLL {
        std::hint::spin_loop();
        true
    } else if waited < limit {
        std::thread::yield_now();
        true
    } else {
        false
    }
}

thread_local! {
    /// The processor number of this thread while it runs a pool's workgroup (a workgroup
    /// that dispatches again runs that dispatch inline, as this processor).
    static RUNNING_AS: Cell<Option<usize>> = const { Cell::new(None) };
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WorkerPool({} threads)", self.threads())
    }
}

impl WorkerPool {
    fn new(threads: usize, on_start_failure: OnStartFailure) -> WorkerPool {
        let helper_count = threads.max(1) - 1;
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: Mutex::new(None),
            sleepers: (0..helper_count)
                .map(|_| Sleeper {
                    asleep: AtomicBool::new(false),
                    thread: OnceLock::new(),
                })
                .collect(),
            shutdown: AtomicBool::new(false),
        });
        WorkerPool {
            shared,
            turn: Mutex::new(()),
            helpers: Mutex::new(None),
            on_start_failure,
        }
    }

    /// Starts the helper threads if they have not been started; an error if some could not
    /// start and this pool fails then. Called with the `turn` held.
    fn start_helpers(&self) -> Result<(), StatusError> {
        let mut helpers = self.helpers.lock().unwrap_or_else(PoisonError::into_inner);
        let helpers = helpers.get_or_insert_with(|| {
            let count = self.shared.sleepers.len();
            let mut started = Helpers {
                running: Vec::with_capacity(count),
                failure: None,
            };
            for k in 0..count {
                let for_helper = self.shared.clone();
                match std::thread::Builder::new()
                    .name(format!("pactum-hal-{}", k + 1))
                    .spawn(move || helper(&for_helper, k))
                {
                    Ok(handle) => {
                        // Set before the dispatch is posted, so its caller can wake the
                        // helper. A helper that never started is never asleep, so no caller
                        // waits for it.
                        let _ = self.shared.sleepers[k].thread.set(handle.thread().clone());
                        started.running.push(handle);
                    }
                    Err(e) => {
                        started.failure = Some(StatusError::new(
                            StatusCode::ResourceExhausted,
                            format!("could not start {} worker threads: {e}", count + 1),
                        ));
                        break;
                    }
                }
            }
            started
        });
        match (&helpers.failure, self.on_start_failure) {
            (Some(error), OnStartFailure::Fail) => Err(error.clone()),
            _ => Ok(()),
        }
    }

    /// How many helper threads run (0 before the first dispatch that needs them).
    #[cfg(test)]
    fn running_helpers(&self) -> usize {
        self.helpers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map_or(0, |helpers| helpers.running.len())
    }

    /// Threads taking part in a dispatch, the caller's included.
    fn threads(&self) -> usize {
        self.shared.sleepers.len() + 1
    }

    fn run<S>(
        &self,
        total: u64,
        init: &(dyn Fn() -> Result<S, StatusError> + Sync),
        body: &(dyn Fn(&mut S, u64, usize) -> Result<(), StatusError> + Sync),
    ) -> Result<(), StatusError> {
        if let Some(processor) = RUNNING_AS.get() {
            let mut state = init()?;
            return (0..total).try_for_each(|index| body(&mut state, index, processor));
        }
        let threads = self.threads() as u64;
        // Claimed one at a time, or in chunks when there are very many (a chunk is at most a
        // 64th of a thread's share), so that threads finishing early take more.
        let chunk = (total / (threads * 64)).max(1);
        let next = AtomicU64::new(0);
        let failed = AtomicBool::new(false);
        let first_error: Mutex<Option<StatusError>> = Mutex::new(None);
        let fail = |error: StatusError| {
            failed.store(true, Ordering::Relaxed);
            first_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(error);
        };
        let work = |processor: usize| {
            let mut state = None;
            RUNNING_AS.set(Some(processor));
            'claims: while !failed.load(Ordering::Relaxed) {
                let start = next.fetch_add(chunk, Ordering::Relaxed);
                if start >= total {
                    break;
                }
                let state = match &mut state {
                    Some(state) => state,
                    None => match catch_unwind(AssertUnwindSafe(init)) {
                        Ok(Ok(made)) => state.insert(made),
                        Ok(Err(error)) => {
                            fail(error);
                            break;
                        }
                        Err(_) => {
                            fail(StatusError::new(
                                StatusCode::Internal,
                                "a worker's state could not be made (it panicked)",
                            ));
                            break;
                        }
                    },
                };
                for index in start..(start + chunk).min(total) {
                    let outcome = catch_unwind(AssertUnwindSafe(|| body(state, index, processor)))
                        .unwrap_or_else(|_| {
                            Err(StatusError::new(
                                StatusCode::Internal,
                                format!("workgroup {index} panicked"),
                            ))
                        });
                    if let Err(error) = outcome {
                        fail(error);
                        break 'claims;
                    }
                    if failed.load(Ordering::Relaxed) {
                        break 'claims;
                    }
                }
            }
            RUNNING_AS.set(None);
        };
        let _turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        self.start_helpers()?;
        {
            let work: &(dyn Fn(usize) + Sync) = &work;
            // SAFETY: only the lifetime is erased; `Posted`'s drop, which runs before `work`
            // goes out of scope (also when the caller's own part unwinds), withdraws the job
            // and waits until no helper is inside it.
            let work: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(work) };
            let posted = Posted::post(&self.shared, WorkRef(work), (total - 1) as usize);
            work(0);
            drop(posted);
        }
        match first_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// A dispatch open to helpers; dropping it closes it and waits for helpers inside it.
struct Posted<'a> {
    shared: &'a Shared,
    job: Arc<Job>,
}

impl<'a> Posted<'a> {
    /// Posts `work` and wakes up to `wanted` sleeping helpers.
    fn post(shared: &'a Shared, work: WorkRef, wanted: usize) -> Posted<'a> {
        let job = Arc::new(Job {
            work,
            active: AtomicUsize::new(0),
            caller_asleep: AtomicBool::new(false),
            caller: std::thread::current(),
        });
        *shared.job.lock().unwrap_or_else(PoisonError::into_inner) = Some(job.clone());
        shared.epoch.fetch_add(1, Ordering::SeqCst);
        let mut woken = 0;
        for sleeper in &shared.sleepers {
            if woken == wanted {
                break;
            }
            if sleeper.asleep.swap(false, Ordering::SeqCst) {
                if let Some(thread) = sleeper.thread.get() {
                    thread.unpark();
                }
                woken += 1;
            }
        }
        Posted { shared, job }
    }
}

impl Drop for Posted<'_> {
    fn drop(&mut self) {
        // No helper joins after this.
        *self
            .shared
            .job
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        let job = &self.job;
        let started = Instant::now();
        while job.active.load(Ordering::SeqCst) != 0 {
            if pause(started, CALLER_POLL) {
                continue;
            }
            job.caller_asleep.store(true, Ordering::SeqCst);
            if job.active.load(Ordering::SeqCst) == 0 {
                break;
            }
            std::thread::park();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        for sleeper in &self.shared.sleepers {
            if let Some(thread) = sleeper.thread.get() {
                thread.unpark();
            }
        }
        let helpers = self
            .helpers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for helper in helpers.into_iter().flat_map(|helpers| helpers.running) {
            let _ = helper.join();
        }
    }
}

/// Helper `k` (processor `k + 1`): waits for dispatches and runs their workgroups.
fn helper(shared: &Shared, k: usize) {
    let me = &shared.sleepers[k];
    let mut seen = 0;
    loop {
        let started = Instant::now();
        loop {
            let epoch = shared.epoch.load(Ordering::SeqCst);
            if epoch != seen {
                seen = epoch;
                break;
            }
            if pause(started, HELPER_POLL) {
                continue;
            }
            me.asleep.store(true, Ordering::SeqCst);
            if shared.epoch.load(Ordering::SeqCst) == seen {
                std::thread::park();
            }
            me.asleep.store(false, Ordering::SeqCst);
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let job = {
            let slot = shared.job.lock().unwrap_or_else(PoisonError::into_inner);
            match &*slot {
                Some(job) => {
                    job.active.fetch_add(1, Ordering::SeqCst);
                    job.clone()
                }
                None => continue,
            }
        };
        // SAFETY: the job was taken from the slot with `active` raised under the slot's lock,
        // so its caller, which empties the slot and then waits for `active` to fall to 0,
        // keeps the work function alive until this call returns.
        let work = unsafe { &*job.work.0 };
        work(k + 1);
        if job.active.fetch_sub(1, Ordering::SeqCst) == 1
            && job.caller_asleep.load(Ordering::SeqCst)
        {
            job.caller.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_report_their_size_and_refuse_nonsense() {
        assert_eq!(Workers::CallerThread.concurrency(), 1);
        assert_eq!(Workers::with_threads(3).unwrap().concurrency(), 3);
        assert!(Workers::with_threads(0).is_err());
        assert!(Workers::with_threads(256).is_err());
        assert!(Workers::shared().concurrency() >= 1);
    }

    /// A pool costs no threads until a dispatch needs them: a program that only runs VM code,
    /// or dispatches of one workgroup, never starts any.
    #[test]
    fn a_pool_starts_its_threads_at_its_first_dispatch_of_several_workgroups() {
        let pool = WorkerPool::new(3, OnStartFailure::Fail);
        assert_eq!(pool.running_helpers(), 0);
        let workers = Workers::Pool(Arc::new(pool));
        every_workgroup_runs_once(&workers, 1);
        let Workers::Pool(pool) = &workers else {
            unreachable!()
        };
        assert_eq!(pool.running_helpers(), 0);
        every_workgroup_runs_once(&workers, 8);
        assert_eq!(pool.running_helpers(), 2);
        every_workgroup_runs_once(&workers, 8);
        assert_eq!(pool.running_helpers(), 2);
    }

    /// Runs `total` workgroups on `workers`, each adding its index to its slot, and checks
    /// every workgroup ran exactly once with a processor number in range.
    fn every_workgroup_runs_once(workers: &Workers, total: u64) {
        let counts: Vec<AtomicU64> = (0..total).map(|_| AtomicU64::new(0)).collect();
        let concurrency = workers.concurrency();
        workers
            .run_workgroups(
                total,
                || Ok(()),
                |_, index, processor| {
                    assert!(processor < concurrency);
                    counts[index as usize].fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
            )
            .unwrap();
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn every_workgroup_runs_exactly_once() {
        for workers in [
            Workers::CallerThread,
            Workers::shared(),
            Workers::with_threads(1).unwrap(),
            Workers::with_threads(4).unwrap(),
        ] {
            for total in [0, 1, 2, 3, 7, 64, 1000] {
                every_workgroup_runs_once(&workers, total);
            }
        }
    }

    #[test]
    fn many_small_dispatches_in_a_row_all_complete() {
        let workers = Workers::with_threads(3).unwrap();
        let sum = AtomicU64::new(0);
        for _ in 0..2000 {
            workers
                .run_workgroups(
                    3,
                    || Ok(()),
                    |_, index, _| {
                        sum.fetch_add(index + 1, Ordering::Relaxed);
                        Ok(())
                    },
                )
                .unwrap();
        }
        assert_eq!(sum.load(Ordering::Relaxed), 2000 * 6);
    }

    #[test]
    fn a_failing_workgroup_fails_the_dispatch() {
        for workers in [Workers::CallerThread, Workers::with_threads(4).unwrap()] {
            let error = workers
                .run_workgroups(
                    100,
                    || Ok(()),
                    |_, index, _| {
                        if index == 37 {
                            Err(StatusError::new(StatusCode::Internal, "workgroup 37"))
                        } else {
                            Ok(())
                        }
                    },
                )
                .unwrap_err();
            assert_eq!(error.status, StatusCode::Internal);
            assert_eq!(error.message, "workgroup 37");
            let error = workers
                .run_workgroups(
                    10,
                    || -> Result<(), StatusError> {
                        Err(StatusError::new(StatusCode::ResourceExhausted, "no memory"))
                    },
                    |_, _, _| Ok(()),
                )
                .unwrap_err();
            assert_eq!(error.status, StatusCode::ResourceExhausted);
        }
    }

    #[test]
    fn each_thread_makes_its_state_once_per_dispatch() {
        let workers = Workers::with_threads(4).unwrap();
        let made = AtomicUsize::new(0);
        let ran = AtomicUsize::new(0);
        workers
            .run_workgroups(
                500,
                || {
                    made.fetch_add(1, Ordering::Relaxed);
                    Ok(0u64)
                },
                |count, _, _| {
                    *count += 1;
                    ran.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!(ran.load(Ordering::Relaxed), 500);
        assert!((1..=4).contains(&made.load(Ordering::Relaxed)));
    }

    #[test]
    fn callers_on_several_threads_share_a_pool() {
        let workers = Workers::with_threads(2).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for total in [2, 5, 50] {
                        every_workgroup_runs_once(&workers, total);
                    }
                });
            }
        });
    }

    #[test]
    fn a_dropped_pool_stops_its_threads() {
        let workers = Workers::with_threads(3).unwrap();
        every_workgroup_runs_once(&workers, 10);
        drop(workers);
    }
}
