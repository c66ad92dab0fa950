//! A byte budget shared by everything one context allocates: VM buffers, lists and globals,
//! and the HAL buffers of its device. It sits below both the VM and the HAL.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A byte budget: allocations are charged before they are made and refunded when dropped.
pub struct MemoryBudget {
    limit: usize,
    used: AtomicUsize,
}

impl fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("limit", &self.limit)
            .field("used", &self.used())
            .finish()
    }
}

/// The budget was too small for an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverBudget {
    /// The budget's limit in bytes.
    pub limit: usize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes charged now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Charges `bytes`, or fails without charging anything.
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Result<Charge, OverBudget> {
        self.add(bytes)?;
        Ok(Charge {
            budget: Some(self.clone()),
            bytes,
        })
    }

    fn add(&self, bytes: usize) -> Result<(), OverBudget> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used
                .checked_add(bytes)
                .filter(|&n| n <= self.limit)
                .ok_or(OverBudget { limit: self.limit })?;
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }
}

/// Bytes charged to a budget, refunded on drop. A charge without a budget is free.
#[derive(Debug, Default)]
pub struct Charge {
    budget: Option<Arc<MemoryBudget>>,
    bytes: usize,
}

impl Charge {
    /// Charges `bytes` to `budget` when there is one.
    pub fn new(budget: Option<&Arc<MemoryBudget>>, bytes: usize) -> Result<Charge, OverBudget> {
        match budget {
            Some(budget) => budget.charge(bytes),
            None => Ok(Charge::default()),
        }
    }

    /// The budget this charge counts against.
    pub fn budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.budget.as_ref()
    }

    /// Grows or shrinks the charge to `bytes`; on failure it is unchanged.
    pub fn resize(&mut self, bytes: usize) -> Result<(), OverBudget> {
        if let Some(budget) = &self.budget {
            if bytes > self.bytes {
                budget.add(bytes - self.bytes)?;
            } else {
                budget.used.fetch_sub(self.bytes - bytes, Ordering::Relaxed);
            }
        }
        self.bytes = bytes;
        Ok(())
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.used.fetch_sub(self.bytes, Ordering::Relaxed);
        }
    }
}
