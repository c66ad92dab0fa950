//! What the handlers see of a linked module: its instance (functions, types, rodata,
//! globals, import bindings).

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::memory_budget::{Charge, MemoryBudget};
use crate::vm::buffer::VmBuffer;
use crate::vm::code::FunctionCode;
use crate::vm::native::NativeModule;
use crate::vm::value::{Ref, VmType};

/// What an import is bound to.
pub enum ImportTarget {
    /// An optional import nobody exports.
    Unresolved,
    /// A function of an earlier bytecode instance.
    Bytecode {
        /// Index of the instance in the context.
        instance: u32,
        /// Internal ordinal of the function.
        function: u32,
    },
    /// A function of a native module.
    Native {
        /// The module.
        module: Arc<dyn NativeModule>,
        /// Index into its function table.
        index: usize,
        /// `module.func`, for errors.
        name: String,
    },
}

/// A bytecode module linked into a context.
pub struct Instance {
    /// The module's name.
    pub name: String,
    /// The verified functions, by internal ordinal.
    pub functions: Arc<[FunctionCode]>,
    /// The resolved type table.
    pub types: Arc<[VmType]>,
    /// One read-only buffer per rodata segment.
    pub rodata: Arc<[Arc<VmBuffer>]>,
    /// The globals.
    pub globals: Globals,
    /// Import bindings, by import ordinal.
    pub imports: Vec<ImportTarget>,
}

/// A module's mutable state in one context: value globals (bytes) and ref globals.
pub struct Globals {
    pub(super) bytes: Box<[AtomicU8]>,
    refs: Mutex<Vec<Option<Ref>>>,
    _charge: Charge,
}

impl Globals {
    /// Zeroed storage of `bytes` bytes and `refs` null references, charged to `budget`.
    pub fn new(bytes: usize, refs: usize, budget: Option<&Arc<MemoryBudget>>) -> Option<Globals> {
        let total = refs
            .checked_mul(std::mem::size_of::<Option<Ref>>())?
            .checked_add(bytes)?;
        let charge = Charge::new(budget, total).ok()?;
        let mut cells = Vec::new();
        cells.try_reserve_exact(bytes).ok()?;
        cells.resize_with(bytes, || AtomicU8::new(0));
        let mut slots = Vec::new();
        slots.try_reserve_exact(refs).ok()?;
        slots.resize(refs, None);
        Some(Globals {
            bytes: cells.into_boxed_slice(),
            refs: Mutex::new(slots),
            _charge: charge,
        })
    }

    #[inline]
    pub(super) fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let cells = self.bytes.get(offset..offset.checked_add(N)?)?;
        let mut out = [0u8; N];
        for (o, c) in out.iter_mut().zip(cells) {
            *o = c.load(Relaxed);
        }
        Some(out)
    }

    #[inline]
    pub(super) fn store<const N: usize>(&self, offset: usize, value: [u8; N]) -> Option<()> {
        let cells = self.bytes.get(offset..offset.checked_add(N)?)?;
        for (c, b) in cells.iter().zip(value) {
            c.store(b, Relaxed);
        }
        Some(())
    }

    pub(super) fn refs(&self) -> std::sync::MutexGuard<'_, Vec<Option<Ref>>> {
        self.refs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
