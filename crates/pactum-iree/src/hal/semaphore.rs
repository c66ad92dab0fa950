//! Timeline semaphores and fences: how queue operations wait for each other and tell the host
//! they are done.
//!
//! A [`HalSemaphore`] holds a value that only grows; waiters wait for it to reach a value, and
//! a failure (a status) ends it for good: every wait, past and future, returns that failure. A
//! [`HalFence`] is a set of semaphore points (a semaphore and a value): it is reached when
//! every point is, and signalling it signals each point. Queue operations take a wait fence
//! (reached before they start) and a signal fence (signalled when they are done, failed when
//! they fail), as IREE's do.
//!
//! A semaphore lives on the host (a counter under a lock) unless a device made it with a
//! [`DeviceTimeline`] behind it (the Vulkan device's timeline semaphores): then the device holds
//! the counter, host signals, waits and queries go through the device, and queue operations
//! of that device wait for and signal it without the host. The failure is kept here in both
//! cases.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::status::{StatusCode, StatusError};

/// How long a wait may block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// Until the wait is satisfied or fails.
    Infinite,
    /// At most this long (zero: only check).
    After(Duration),
}

impl Timeout {
    /// Do not block: only check.
    pub const IMMEDIATE: Timeout = Timeout::After(Duration::ZERO);

    /// IREE's VM form: milliseconds, `u32::MAX` meaning no limit (`hal.fence.await`).
    pub fn from_millis(millis: u32) -> Timeout {
        if millis == u32::MAX {
            Timeout::Infinite
        } else {
            Timeout::After(Duration::from_millis(u64::from(millis)))
        }
    }

    fn deadline(self) -> Option<Instant> {
        match self {
            Timeout::Infinite => None,
            // A duration too long to add is as good as no limit.
            Timeout::After(duration) => Instant::now().checked_add(duration),
        }
    }
}

/// When a wait of `timeout` ends, read from the clock only once a wait finds a point not yet
/// reached: a queue operation waits on fences that are almost always reached already (work
/// completes before it is submitted further), and those checks then read no clock at all.
struct Deadline {
    timeout: Timeout,
    /// `None` until asked; then the deadline (`None` inside: no limit).
    at: Option<Option<Instant>>,
}

impl Deadline {
    fn of(timeout: Timeout) -> Deadline {
        Deadline { timeout, at: None }
    }

    fn get(&mut self) -> Option<Instant> {
        *self.at.get_or_insert_with(|| self.timeout.deadline())
    }
}

#[derive(Debug)]
struct State {
    value: u64,
    failure: Option<StatusError>,
    /// Threads blocked in `wait`: a signal wakes them only when there are some.
    waiters: usize,
}

/// A counter a device holds for a semaphore (a Vulkan timeline semaphore): what
/// [`HalSemaphore`] asks instead of its host counter when a device made it. The semaphore keeps
/// the failure; the device only tells values, takes host signals and wakes waiters.
pub trait DeviceTimeline: Send + Sync + fmt::Debug {
    /// The counter's current value.
    fn value(&self) -> Result<u64, StatusError>;

    /// Moves the counter to `value` from the host: an `OUT_OF_RANGE` error when `value` is not
    /// above the current value; an error of the device's own rules otherwise (a Vulkan
    /// timeline: `FAILED_PRECONDITION` at or past a device signal still queued).
    fn signal(&self, value: u64) -> Result<(), StatusError>;

    /// Blocks until the counter reaches `value` or `limit` passes; whether it was reached.
    fn wait(&self, value: u64, limit: Duration) -> Result<bool, StatusError>;

    /// Called once the semaphore has failed: moves the counter past every value waited for (on
    /// the host or on the device), as soon as no device signal of it is still queued, so that
    /// waiters wake and see the failure.
    fn wake_after_failure(&self);

    /// The implementation, for its device to recognise its own semaphores.
    fn as_any(&self) -> &dyn Any;
}

/// How long a host wait on a device counter blocks before it checks again for a failure
/// recorded on the host (a failure moves the counter too, but only once no device signal of
/// it is queued).
const FAILURE_CHECK_INTERVAL: Duration = Duration::from_millis(20);

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// The device's counter, for a semaphore a device made.
    timeline: Option<Box<dyn DeviceTimeline>>,
}

/// A timeline semaphore. Clones are handles to the same semaphore.
#[derive(Clone)]
pub struct HalSemaphore(Arc<Shared>);

impl fmt::Debug for HalSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        let mut out = f.debug_struct("HalSemaphore");
        match &self.0.timeline {
            Some(timeline) => out.field("device", timeline),
            None => out.field("value", &state.value),
        };
        out.field("failure", &state.failure).finish()
    }
}

impl HalSemaphore {
    /// A semaphore at `initial`.
    pub fn new(initial: u64) -> HalSemaphore {
        HalSemaphore(Arc::new(Shared {
            state: Mutex::new(State {
                value: initial,
                failure: None,
                waiters: 0,
            }),
            changed: Condvar::new(),
            timeline: None,
        }))
    }

    /// A semaphore whose counter `timeline` holds (a device's; its value is the semaphore's
    /// initial value).
    pub fn on_device(timeline: Box<dyn DeviceTimeline>) -> HalSemaphore {
        HalSemaphore(Arc::new(Shared {
            state: Mutex::new(State {
                value: 0,
                failure: None,
                waiters: 0,
            }),
            changed: Condvar::new(),
            timeline: Some(timeline),
        }))
    }

    /// The device counter behind the semaphore, for one a device made.
    pub fn device_timeline(&self) -> Option<&dyn DeviceTimeline> {
        self.0.timeline.as_deref()
    }

    /// The failure, once the semaphore has failed.
    pub fn failure(&self) -> Option<StatusError> {
        self.lock().failure.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each change is one field written under the lock, so a panic elsewhere cannot leave
        // the state inconsistent: a poisoned lock is used as it is.
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `self` and `other` are handles to the same semaphore.
    pub fn same_as(&self, other: &HalSemaphore) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The current value, or the failure once the semaphore has failed.
    pub fn value(&self) -> Result<u64, StatusError> {
        if let Some(timeline) = &self.0.timeline {
            let value = timeline.value()?;
            // Read after the counter: a failure moves the counter only once it is recorded.
            return match self.failure() {
                Some(failure) => Err(failure),
                None => Ok(value),
            };
        }
        let state = self.lock();
        match &state.failure {
            Some(failure) => Err(failure.clone()),
            None => Ok(state.value),
        }
    }

    /// Moves the value to `value`, waking the waiters it satisfies. Values only grow: a value
    /// not above the current one is an `OUT_OF_RANGE` error; a failed semaphore returns its
    /// failure.
    pub fn signal(&self, value: u64) -> Result<(), StatusError> {
        if let Some(timeline) = &self.0.timeline {
            if let Some(failure) = self.failure() {
                return Err(failure);
            }
            return timeline.signal(value);
        }
        let mut state = self.lock();
        if let Some(failure) = &state.failure {
            return Err(failure.clone());
        }
        if value <= state.value {
            return Err(StatusError::out_of_range(format!(
                "semaphore values must increase: the semaphore is at {}, signalled to {value}",
                state.value
            )));
        }
        state.value = value;
        if state.waiters > 0 {
            self.0.changed.notify_all();
        }
        Ok(())
    }

    /// Fails the semaphore with `error`: every wait returns it from now on. A semaphore
    /// keeps its first failure.
    pub fn fail(&self, error: StatusError) {
        let mut state = self.lock();
        let first = state.failure.is_none();
        if first {
            state.failure = Some(error);
        }
        if state.waiters > 0 {
            self.0.changed.notify_all();
        }
        drop(state);
        if let (true, Some(timeline)) = (first, &self.0.timeline) {
            timeline.wake_after_failure();
        }
    }

    /// Waits until the value is at least `value`: `Ok` then, the failure if the semaphore
    /// fails first, a `DEADLINE_EXCEEDED` error if `timeout` passes first.
    pub fn wait(&self, value: u64, timeout: Timeout) -> Result<(), StatusError> {
        self.wait_until(value, &mut Deadline::of(timeout))
    }

    fn wait_until(&self, value: u64, deadline: &mut Deadline) -> Result<(), StatusError> {
        if let Some(timeline) = &self.0.timeline {
            return self.wait_on_device(timeline.as_ref(), value, deadline);
        }
        let timeout = deadline.timeout;
        let mut state = self.lock();
        loop {
            if let Some(failure) = &state.failure {
                return Err(failure.clone());
            }
            if state.value >= value {
                return Ok(());
            }
            let remaining = match (timeout, deadline.get()) {
                (Timeout::Infinite, _) | (_, None) => None,
                (Timeout::After(limit), Some(deadline)) => {
                    match deadline.checked_duration_since(Instant::now()) {
                        Some(left) if !left.is_zero() => Some(left),
                        _ => {
                            return Err(StatusError::new(
                                StatusCode::DeadlineExceeded,
                                format!(
                                    "semaphore at {} did not reach {value} within {limit:?}",
                                    state.value
                                ),
                            ));
                        }
                    }
                }
            };
            state.waiters += 1;
            state = match remaining {
                None => self
                    .0
                    .changed
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner()),
                Some(left) => {
                    self.0
                        .changed
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
            state.waiters -= 1;
        }
    }
}

impl HalSemaphore {
    /// [`wait_until`](Self::wait_until) for a device counter: the device blocks, in slices
    /// of [`FAILURE_CHECK_INTERVAL`] at most, between which a failure recorded on the host
    /// ends the wait.
    fn wait_on_device(
        &self,
        timeline: &dyn DeviceTimeline,
        value: u64,
        deadline: &mut Deadline,
    ) -> Result<(), StatusError> {
        loop {
            let current = self.value()?;
            if current >= value {
                return Ok(());
            }
            let slice = match (deadline.timeout, deadline.get()) {
                (Timeout::Infinite, _) | (_, None) => FAILURE_CHECK_INTERVAL,
                (Timeout::After(limit), Some(at)) => {
                    match at.checked_duration_since(Instant::now()) {
                        Some(left) if !left.is_zero() => left.min(FAILURE_CHECK_INTERVAL),
                        _ => {
                            return Err(StatusError::new(
                                StatusCode::DeadlineExceeded,
                                format!(
                                    "semaphore at {current} did not reach {value} within {limit:?}"
                                ),
                            ));
                        }
                    }
                }
            };
            timeline.wait(value, slice)?;
        }
    }
}

/// A set of semaphore points: reached when every semaphore has reached its value. An empty
/// fence is always reached. Cheap to clone (the points are handles).
#[derive(Clone, Debug)]
pub struct HalFence {
    // Most fences have one point (a queue operation's, `hal.fence.create`'s): it is kept
    // inline, so making such a fence allocates nothing beyond its semaphore.
    first: Option<(HalSemaphore, u64)>,
    more: Vec<(HalSemaphore, u64)>,
}

impl HalFence {
    /// A fence with no points: always reached, and signalling it does nothing (what a queue
    /// operation that waits for nothing, or signals nothing, takes).
    pub fn empty() -> HalFence {
        HalFence {
            first: None,
            more: Vec::new(),
        }
    }

    /// A fence of one new semaphore's first point (the semaphore at 0, the point at 1): not
    /// reached until it is signalled, by [`signal`](Self::signal) or by a queue operation
    /// given it as its signal fence. (`hal.fence.create`.)
    pub fn pending() -> HalFence {
        HalFence::at(HalSemaphore::new(0), 1)
    }

    /// A fence of one point: `semaphore` at `value`.
    pub fn at(semaphore: HalSemaphore, value: u64) -> HalFence {
        HalFence {
            first: Some((semaphore, value)),
            more: Vec::new(),
        }
    }

    /// The union of `fences`' points; a semaphore in several keeps its highest value.
    /// (`hal.fence.join`.)
    pub fn join<'a>(fences: impl IntoIterator<Item = &'a HalFence>) -> HalFence {
        let mut joined = HalFence::empty();
        for fence in fences {
            for (semaphore, value) in fence.points() {
                joined.insert(semaphore.clone(), value);
            }
        }
        joined
    }

    /// Adds the point `semaphore` at `value` (raising the value of a semaphore already in the
    /// fence).
    pub fn insert(&mut self, semaphore: HalSemaphore, value: u64) {
        let existing = self
            .first
            .iter_mut()
            .chain(self.more.iter_mut())
            .find(|(s, _)| s.same_as(&semaphore));
        if let Some((_, existing)) = existing {
            *existing = (*existing).max(value);
        } else if self.first.is_none() {
            self.first = Some((semaphore, value));
        } else {
            self.more.push((semaphore, value));
        }
    }

    /// The points: each semaphore and the value it must reach.
    pub fn points(&self) -> impl Iterator<Item = (&HalSemaphore, u64)> {
        self.first
            .iter()
            .chain(self.more.iter())
            .map(|(s, v)| (s, *v))
    }

    /// Whether the fence has no points.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Whether every point is reached; the failure of a failed semaphore.
    pub fn is_reached(&self) -> Result<bool, StatusError> {
        for (semaphore, value) in self.points() {
            if semaphore.value()? < value {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Waits until every point is reached (see [`HalSemaphore::wait`]); `timeout` bounds the
    /// whole wait.
    pub fn wait(&self, timeout: Timeout) -> Result<(), StatusError> {
        HalFence::wait_all([self], timeout)
    }

    /// Waits until every point of every fence is reached; `timeout` bounds the whole wait.
    pub fn wait_all<'a>(
        fences: impl IntoIterator<Item = &'a HalFence>,
        timeout: Timeout,
    ) -> Result<(), StatusError> {
        let mut deadline = Deadline::of(timeout);
        for fence in fences {
            for (semaphore, value) in fence.points() {
                semaphore.wait_until(value, &mut deadline)?;
            }
        }
        Ok(())
    }

    /// Signals every point (see [`HalSemaphore::signal`]).
    pub fn signal(&self) -> Result<(), StatusError> {
        for (semaphore, value) in self.points() {
            semaphore.signal(value)?;
        }
        Ok(())
    }

    /// Fails every semaphore of the fence with `error`.
    pub fn fail(&self, error: &StatusError) {
        for (semaphore, _) in self.points() {
            semaphore.fail(error.clone());
        }
    }
}

/// The error of a wait that a wait limit cut short: the fence was not reached within `limit`.
/// Work on the local device completes before its operations return, so a fence still pending
/// after any wait could only be signalled by another thread; a module waiting on a fence nothing
/// signals would otherwise hang its caller. (On the Vulkan device, work queued on the device
/// may also still be running.)
pub fn wait_limit_exceeded(limit: Duration) -> StatusError {
    StatusError::new(
        StatusCode::DeadlineExceeded,
        format!(
            "a HAL fence was not reached within the wait limit of {limit:?}: nothing signalled \
             it (the local device completes queue work before it returns, so only another thread \
             could), or the device work it waits for is still running"
        ),
    )
}
