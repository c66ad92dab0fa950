//! Helpers shared by pactum's test suites.
//!
//! [`hostile`] holds what the hostile-input suites of every crate use: a time limit on
//! refusals, the printed failure message, sparse files and big stacks. [`iree`] runs the
//! pinned IREE runtime (`iree-run-module`) on `.vmfb` files and parses what it prints, and
//! lists the runs recorded with the `.vmfb` fixtures.

pub mod hostile {
    //! Hostile-input checks: every refusal that could cost time must come back within
    //! [`LIMIT`] of the calling thread's CPU time, and its message is printed
    //! (`HOSTILE <what>: <error>`) so that `--nocapture` shows exactly what a user reads.
    //!
    //! The limit counts the thread's own CPU time ([`Stopwatch`]), not wall-clock time: a
    //! refusal is work done on the calling thread, and what it must not do is work through a
    //! hostile claim, however busy the machine is with other tests. A wall-clock ceiling of
    //! [`WALL_LIMIT`] catches what CPU time cannot see: a refusal that blocks, or that hands
    //! its work to other threads.

    use std::fs;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIAnyValue, TVMFFITypeIndex};

    /// How much of the thread's CPU time a refusal may take. Generous: debug build.
    pub const LIMIT: Duration = Duration::from_secs(2);

    /// The wall-clock time a refusal may take, however busy the machine: generous, it only
    /// tells a refusal that blocks or works on other threads from one that does not.
    pub const WALL_LIMIT: Duration = Duration::from_secs(60);

    /// Times a piece of work by the CPU time the calling thread spends on it
    /// (`CLOCK_THREAD_CPUTIME_ID`), whatever else the machine runs, and by the wall clock.
    pub struct Stopwatch {
        cpu: Duration,
        wall: Instant,
    }

    impl Stopwatch {
        /// Starts both clocks now.
        pub fn start() -> Stopwatch {
            Stopwatch {
                cpu: thread_cpu_time(),
                wall: Instant::now(),
            }
        }

        /// The thread's CPU time since the start.
        pub fn cpu(&self) -> Duration {
            thread_cpu_time().saturating_sub(self.cpu)
        }

        /// Asserts that `what` took less than `limit` of the thread's CPU time and less than
        /// [`WALL_LIMIT`] of wall-clock time.
        pub fn assert_within(&self, what: &str, limit: Duration) {
            let (cpu, wall) = (self.cpu(), self.wall.elapsed());
            assert!(
                cpu < limit,
                "{what} took {cpu:?} of CPU time (limit {limit:?})"
            );
            assert!(
                wall < WALL_LIMIT,
                "{what} took {wall:?} of wall-clock time (limit {WALL_LIMIT:?})"
            );
        }
    }

    fn thread_cpu_time() -> Duration {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid out pointer; the clock exists on every Linux.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
    }

    /// One GiB: the size of the sparse files.
    pub const GIB: u64 = 1 << 30;

    /// Runs `f`, checks it took at most [`LIMIT`] of the thread's CPU time, and returns its
    /// value.
    pub fn quickly<T>(what: &str, f: impl FnOnce() -> T) -> T {
        // Instrumented runs (scripts/sanitize.sh sets PACTUM_SANITIZER) are several times slower;
        // the limit still separates "refused at once" from "worked through the claim".
        let limit = if std::env::var_os("PACTUM_SANITIZER").is_some() {
            LIMIT * 10
        } else {
            LIMIT
        };
        let stopwatch = Stopwatch::start();
        let value = f();
        stopwatch.assert_within(what, limit);
        value
    }

    /// The message of an expected failure, printed for the record.
    pub fn failure<T: std::fmt::Debug, E: std::fmt::Display>(
        what: &str,
        result: Result<T, E>,
    ) -> String {
        let message = match result {
            Ok(value) => panic!("{what}: expected an error, got {value:?}"),
            Err(error) => error.to_string(),
        };
        eprintln!("HOSTILE {what}: {message}");
        message
    }

    /// Asserts that `message` contains every part.
    pub fn assert_says(message: &str, parts: &[&str]) {
        for part in parts {
            assert!(
                message.contains(part),
                "{message:?} should contain {part:?}"
            );
        }
    }

    /// A fresh scratch directory for one test.
    pub fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pactum-hostile-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A sparse file of `len` bytes that starts with `head`.
    pub fn sparse_file(path: &Path, head: &[u8], len: u64) {
        fs::write(path, head).unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap();
    }

    /// Runs `f` on a thread with a large stack: deep values are built and dropped recursively, and
    /// debug builds spend several KiB of stack per level of a 256-level parse.
    pub fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    /// A shared library this process has loaded (the C library), for copies to damage.
    pub fn a_loaded_library() -> PathBuf {
        let maps = fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter_map(|line| line.split_whitespace().nth(5))
            .find(|path| path.contains("libc.so"))
            .map(PathBuf::from)
            .expect("libc is mapped")
    }

    /// A raw packed-call value (for arguments no safe constructor makes).
    pub fn raw_any(type_index: TVMFFITypeIndex, value: TVMFFIAnyValue) -> TVMFFIAny {
        TVMFFIAny {
            type_index: type_index.0,
            small_str_len: 0,
            value,
        }
    }
}

pub mod iree;
