//! The global function registry's storage: functions by name, with their metadata, in
//! registration order. The process has one, made on first use holding the built-in `ffi.*`
//! globals; which globals those are is decided above this layer (`functions.rs` passes them
//! in), so the storage depends on none of them.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use pactum_sys::tvm_ffi::field_flags;

use pactum_core::function::Function;

/// A built-in global function ready for the registry.
pub(crate) struct BuiltinGlobal {
    pub(crate) name: &'static str,
    pub(crate) function: Function,
    pub(crate) metadata: std::string::String,
}

/// A registry entry.
pub(crate) struct GlobalEntry {
    pub(crate) function: Option<Function>,
    pub(crate) metadata: Box<[u8]>,
    #[allow(dead_code)]
    pub(crate) flags: i64,
    order: u64,
}

#[derive(Default)]
pub(crate) struct Registry {
    entries: HashMap<Box<[u8]>, GlobalEntry>,
    next_order: u64,
}

impl Registry {
    pub(crate) fn insert(
        &mut self,
        name: &[u8],
        function: Option<Function>,
        metadata: &[u8],
        flags: i64,
    ) {
        let order = self.next_order;
        self.next_order += 1;
        self.entries.insert(
            name.into(),
            GlobalEntry {
                function,
                metadata: metadata.into(),
                flags,
                order,
            },
        );
    }

    /// Names in registration order.
    pub(crate) fn names(&self) -> Vec<Box<[u8]>> {
        let mut names: Vec<(&Box<[u8]>, u64)> =
            self.entries.iter().map(|(k, v)| (k, v.order)).collect();
        names.sort_by_key(|(_, order)| *order);
        names.into_iter().map(|(k, _)| k.clone()).collect()
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<&GlobalEntry> {
        self.entries.get(name)
    }

    pub(crate) fn remove(&mut self, name: &[u8]) -> Option<GlobalEntry> {
        self.entries.remove(name)
    }
}

static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();

/// The process's registry, made on first use holding what `builtins` makes, as static methods.
/// Every caller passes the same function, so whichever comes first fills it the same way.
pub(crate) fn get_or_init(builtins: fn() -> Vec<BuiltinGlobal>) -> &'static RwLock<Registry> {
    REGISTRY.get_or_init(|| {
        let mut registry = Registry::default();
        for global in builtins() {
            registry.insert(
                global.name.as_bytes(),
                Some(global.function),
                global.metadata.as_bytes(),
                field_flags::IS_STATIC_METHOD,
            );
        }
        RwLock::new(registry)
    })
}
