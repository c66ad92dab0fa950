//! The device's semaphores: each [`HalSemaphore`] the device makes is backed by a Vulkan
//! timeline semaphore ([`VulkanTimeline`]), whose counter the device holds. Queue operations
//! wait for and signal it on the device (`VkTimelineSemaphoreSubmitInfo`); the host signals it
//! with `vkSignalSemaphore`, waits with `vkWaitSemaphores` and reads it with
//! `vkGetSemaphoreCounterValue`. The failure stays in the [`HalSemaphore`]: a failure moves the
//! counter past every value waited for (as IREE's driver moves it to a reserved failure
//! value), so that device and host waiters wake, and host waiters then see the failure.
//!
//! Vulkan requires a host signal to stay below every device signal still queued, so the
//! timeline keeps the values queued submissions signal: a host signal past one is refused
//! (`FAILED_PRECONDITION`), and a failure moves the counter only once none is queued (the
//! queue retries when it retires the submission).

use std::any::Any;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use ash::vk;

use super::context::{VulkanContext, vk_error};
use crate::hal::semaphore::{DeviceTimeline, HalSemaphore};
use crate::status::{StatusCode, StatusError};

/// What a timeline asks of the queue whose submissions signal it (implemented by the queue;
/// a trait, so that this file does not reach up to the queue).
pub(super) trait RetireSignals: Send + Sync {
    /// Completes the submissions that signal `semaphore` to at most `value`, which it has
    /// reached, so that failures they carry are on their semaphores.
    fn retire_signals_of(&self, semaphore: vk::Semaphore, value: u64);
}

/// A Vulkan timeline semaphore behind a [`HalSemaphore`]. Destroyed when the semaphore's last
/// handle goes; every submission that waits for or signals it holds a handle until it has
/// completed, so no queued work refers to it then.
pub(crate) struct VulkanTimeline {
    pub(super) context: Arc<VulkanContext>,
    pub(super) semaphore: vk::Semaphore,
    /// The queue whose submissions signal it: asked to retire the submissions that brought
    /// the counter to a value read, so that their failures reach their semaphores.
    queue: Weak<dyn RetireSignals>,
    /// The values submitted device signals move the counter to, ascending (as submissions
    /// signal them); those the counter reached are dropped when the lock is taken. Locked by
    /// the queue while it submits signals.
    queued_signals: Mutex<Vec<u64>>,
    /// The highest value any submission waits for: what a failure must move the counter to.
    highest_wait: AtomicU64,
}

impl fmt::Debug for VulkanTimeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VulkanTimeline")
            .field("value", &self.counter().ok())
            .finish()
    }
}

impl Drop for VulkanTimeline {
    fn drop(&mut self) {
        // SAFETY: made on this device, destroyed once; every submission that refers to it
        // holds its `HalSemaphore` until the submission has completed (`Queue::retire`).
        unsafe { self.context.device.destroy_semaphore(self.semaphore, None) };
    }
}

impl VulkanTimeline {
    /// A semaphore of `queue`'s device at `initial`.
    pub(super) fn create(
        context: &Arc<VulkanContext>,
        queue: Arc<dyn RetireSignals>,
        initial: u64,
    ) -> Result<HalSemaphore, StatusError> {
        let semaphore = create_timeline_semaphore(context, initial)?;
        Ok(HalSemaphore::on_device(Box::new(VulkanTimeline {
            context: context.clone(),
            semaphore,
            queue: Arc::downgrade(&queue),
            queued_signals: Mutex::new(Vec::new()),
            highest_wait: AtomicU64::new(0),
        })))
    }

    /// The timeline behind `semaphore` when `context`'s device made it.
    pub(super) fn of<'s>(
        semaphore: &'s HalSemaphore,
        context: &Arc<VulkanContext>,
    ) -> Option<&'s VulkanTimeline> {
        let timeline = semaphore
            .device_timeline()?
            .as_any()
            .downcast_ref::<VulkanTimeline>()?;
        Arc::ptr_eq(&timeline.context, context).then_some(timeline)
    }

    /// The counter as the device holds it (without retiring anything).
    pub(super) fn counter(&self) -> Result<u64, StatusError> {
        // SAFETY: a live timeline semaphore of this device.
        unsafe {
            self.context
                .device
                .get_semaphore_counter_value(self.semaphore)
        }
        .map_err(|e| vk_error("vkGetSemaphoreCounterValue", e))
    }

    /// The values queued device signals still move the counter to, locked (a submission holds
    /// the lock over its signal of this semaphore), and the counter.
    pub(super) fn lock_queued(&self) -> Result<(MutexGuard<'_, Vec<u64>>, u64), StatusError> {
        // Values pushed and dropped under the lock: a poisoned lock is as good as any.
        let mut queued = self
            .queued_signals
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let current = self.counter()?;
        queued.retain(|&value| value > current);
        Ok((queued, current))
    }

    /// Notes that a submission waits for `value`.
    pub(super) fn note_wait(&self, value: u64) {
        self.highest_wait.fetch_max(value, Relaxed);
    }

    /// Moves the counter to `value` from the host; the caller holds the queued-signal lock.
    fn signal_locked(&self, value: u64) -> Result<(), StatusError> {
        let info = vk::SemaphoreSignalInfo::default()
            .semaphore(self.semaphore)
            .value(value);
        // SAFETY: a live timeline semaphore of this device; `value` is above its counter and
        // below every queued device signal of it (checked by the callers, under the
        // queued-signal lock).
        unsafe { self.context.device.signal_semaphore(&info) }
            .map_err(|e| vk_error("vkSignalSemaphore", e))
    }

    /// Blocks until the counter reaches `value` or `limit` passes; whether it was reached.
    fn wait_counter(&self, value: u64, limit: Duration) -> Result<bool, StatusError> {
        let semaphores = [self.semaphore];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&semaphores)
            .values(&values);
        let nanos = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: a live timeline semaphore of this device; the arrays live across the call.
        match unsafe { self.context.device.wait_semaphores(&info, nanos) } {
            Ok(()) => Ok(true),
            Err(vk::Result::TIMEOUT) => Ok(false),
            Err(e) => Err(vk_error("vkWaitSemaphores", e)),
        }
    }
}

/// A new timeline semaphore at `initial`.
pub(super) fn create_timeline_semaphore(
    context: &VulkanContext,
    initial: u64,
) -> Result<vk::Semaphore, StatusError> {
    let mut kind = vk::SemaphoreTypeCreateInfo::default()
        .semaphore_type(vk::SemaphoreType::TIMELINE)
        .initial_value(initial);
    let info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
    // SAFETY: a valid device (with timeline semaphores, checked when it was opened) and create
    // info whose chain lives across the call.
    unsafe { context.device.create_semaphore(&info, None) }
        .map_err(|e| vk_error("vkCreateSemaphore", e))
}

impl DeviceTimeline for VulkanTimeline {
    fn value(&self) -> Result<u64, StatusError> {
        let value = self.counter()?;
        // The batches that brought the counter there are completed before the value is
        // reported, so that a failure they carry (from a semaphore they waited for) is on the
        // semaphore when the caller checks it.
        if let Some(queue) = self.queue.upgrade() {
            queue.retire_signals_of(self.semaphore, value);
        }
        Ok(value)
    }

    fn signal(&self, value: u64) -> Result<(), StatusError> {
        let (queued, current) = self.lock_queued()?;
        if value <= current {
            return Err(StatusError::out_of_range(format!(
                "semaphore values must increase: the semaphore is at {current}, signalled to \
                 {value}"
            )));
        }
        if let Some(&next) = queued.first()
            && value >= next
        {
            return Err(StatusError::new(
                StatusCode::FailedPrecondition,
                format!(
                    "semaphore at {current} signalled to {value} from the host while a device \
                     signal to {next} is queued: a host signal must stay below it until the \
                     device reaches it (Vulkan's rule for timeline semaphores)"
                ),
            ));
        }
        let limit = self.context.max_timeline_difference;
        if value - current > limit {
            return Err(StatusError::out_of_range(format!(
                "semaphore at {current} signalled to {value}: more than the device's limit of \
                 {limit} at once (maxTimelineSemaphoreValueDifference)"
            )));
        }
        self.signal_locked(value)
    }

    fn wait(&self, value: u64, limit: Duration) -> Result<bool, StatusError> {
        self.wait_counter(value, limit)
    }

    fn wake_after_failure(&self) {
        let Ok((queued, current)) = self.lock_queued() else {
            return;
        };
        if !queued.is_empty() {
            // The queue calls again when it retires the submission that signals it.
            return;
        }
        let limit = current.saturating_add(self.context.max_timeline_difference);
        let target = self
            .highest_wait
            .load(Relaxed)
            .max(current.saturating_add(1))
            .min(limit);
        if target > current {
            // Failing as it is, the semaphore has nothing to report if the signal fails too.
            let _ = self.signal_locked(target);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
