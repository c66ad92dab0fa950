//! `!hal.executable` for the `vmvx-bytecode-fb` format: a VM bytecode module (usually
//! ZIP-wrapped, named `linked_module`) whose exports are dispatch functions, run by pactum's
//! VM in a context of its own.
//!
//! A dispatch export has calling convention `0rrriiiiiiiii_v`: the workgroup's local memory
//! (`!vm.buffer`), the push constants (`!vm.buffer` of i32s), the bindings (`!vm.list` of
//! `!vm.buffer`s, each a view of the bound HAL buffer range), then the workgroup id, the
//! workgroup size and the workgroup count, x, y, z each. Every workgroup of the grid runs
//! once, x fastest.
//!
//! The context has the `vmvx` module ([`vmvx_module`]) registered first, as IREE's vmvx
//! loader does, so executables compiled with `--iree-vmvx-enable-microkernels` link their
//! `vmvx.*` imports against it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::vmvx_module::vmvx_module;
use crate::hal::buffer::{Binding, DispatchBinding, HalBuffer};
use crate::hal::workers::Workers;
use crate::status::StatusError;
use crate::vm::{
    CallStack, Context, ElementType, Function, Limits, Ref, RefType, Value, VmBuffer, VmList,
};
use crate::vmfb::VmfbFile;

fn invalid(message: impl Into<String>) -> StatusError {
    StatusError::invalid_argument(message)
}

/// A `!vm.buffer` sharing `offset..offset+length` of `buffer`'s bytes (no copy): how a vmvx
/// dispatch sees its bindings.
pub fn vm_view(buffer: &HalBuffer, offset: i64, length: i64) -> Result<VmBuffer, StatusError> {
    let (memory, range) = buffer.memory_range(offset, length)?;
    VmBuffer::shared(memory.clone(), range)
        .ok_or_else(|| StatusError::out_of_range("buffer view outside its allocation"))
}

/// The calling convention of a vmvx dispatch function.
pub const DISPATCH_CCONV: &str = "0rrriiiiiiiii_v";

/// A loaded vmvx executable.
#[derive(Debug)]
pub struct VmvxExecutable {
    context: Context,
    exports: Vec<(String, Function)>,
    /// Call stacks of earlier dispatches, one per thread that ran workgroups at once, reused
    /// so that running a workgroup allocates nothing.
    stacks: Mutex<Vec<CallStack>>,
}

impl VmvxExecutable {
    /// Loads executable `data` with `limits` for its calls. Its float arithmetic flushes
    /// subnormals to zero whatever `limits` say, as IREE's local devices run dispatches
    /// (`iree_fpu_state_push(IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO)`).
    pub fn load(data: Vec<u8>, mut limits: Limits) -> Result<VmvxExecutable, StatusError> {
        limits.flush_denormals = true;
        let file = Arc::new(VmfbFile::from_bytes(data));
        let names = {
            let module = file
                .module()
                .map_err(|e| invalid(format!("vmvx executable is not a VM module: {e}")))?;
            module
                .exports()
                .map(|e| e.local_name.to_owned())
                .collect::<Vec<_>>()
        };
        let mut context = Context::new(limits);
        context
            .register_native(vmvx_module())
            .map_err(|e| invalid(format!("vmvx executable: {e}")))?;
        let name = context
            .load_bytecode(file)
            .map_err(|e| invalid(format!("vmvx executable failed to load: {e}")))?;
        let mut exports = Vec::new();
        for export in names {
            let function = context
                .lookup_export(&format!("{name}.{export}"))
                .map_err(|e| invalid(format!("vmvx executable: {e}")))?;
            if function.cconv() != DISPATCH_CCONV {
                return Err(invalid(format!(
                    "vmvx executable export `{export}` has calling convention `{}`, not \
                     `{DISPATCH_CCONV}`",
                    function.cconv()
                )));
            }
            exports.push((export, function));
        }
        Ok(VmvxExecutable {
            context,
            exports,
            stacks: Mutex::new(Vec::new()),
        })
    }

    /// The name of every export, by ordinal.
    pub fn export_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.exports.iter().map(|(n, _)| n.as_str())
    }

    /// The name of export `ordinal`.
    pub fn export_name(&self, ordinal: usize) -> Option<&str> {
        self.exports.get(ordinal).map(|(n, _)| n.as_str())
    }

    /// Runs export `ordinal` for every workgroup of `count` (at least one) on `workers`: in
    /// order on the caller's thread ([`Workers::CallerThread`], or a single workgroup), or
    /// spread over the pool, each of its threads taking the next workgroup (x fastest) until
    /// none is left. A pool changes who runs a workgroup, never what it computes; when
    /// workgroups fail, the error is that of the first failing one in grid order, the one
    /// the caller's thread would have stopped at.
    pub fn dispatch(
        &self,
        ordinal: usize,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        self.dispatch_bindings(ordinal, count, constants, bindings, workers)
    }

    /// [`VmvxExecutable::dispatch`] with bindings of any form (borrowed, by a replay).
    pub(crate) fn dispatch_bindings(
        &self,
        ordinal: usize,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[impl DispatchBinding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        let (name, function) = self.exports.get(ordinal).ok_or_else(|| {
            invalid(format!(
                "executable has no export {ordinal} ({} exports)",
                self.exports.len()
            ))
        })?;
        let call = Call {
            context: &self.context,
            function,
            name,
            count,
            constant_bytes: constants.iter().flat_map(|c| c.to_le_bytes()).collect(),
            bindings,
        };
        // Checked here first so that bad bindings fail the dispatch before any workgroup runs.
        for binding in bindings {
            vm_view(binding.buffer(), binding.offset(), binding.length())?;
        }
        let total = u64::from(count[0]) * u64::from(count[1]) * u64::from(count[2]);
        let first_failure = FirstFailure::new();
        workers.run_workgroups(
            total,
            || Ok((self.lease_stack(), call.arguments()?)),
            |(stack, args), index, _processor| {
                // Past a failed workgroup nothing can fail first: skip the rest.
                if index < first_failure.index() {
                    if let Err(e) = call.run(index, args, &mut stack.0) {
                        first_failure.record(index, e);
                    }
                }
                Ok(())
            },
        )?;
        first_failure.into_result()
    }

    /// A call stack for running workgroups, kept from an earlier dispatch or new, given back
    /// when the lease is dropped.
    fn lease_stack(&self) -> StackLease<'_> {
        let stack = self
            .stacks
            .lock()
            .ok()
            .and_then(|mut stacks| stacks.pop())
            .unwrap_or_default();
        StackLease(stack, self)
    }
}

/// A call stack of a [`VmvxExecutable`], returned to it on drop.
struct StackLease<'a>(CallStack, &'a VmvxExecutable);

impl Drop for StackLease<'_> {
    fn drop(&mut self) {
        if let Ok(mut stacks) = self.1.stacks.lock() {
            stacks.push(std::mem::take(&mut self.0));
        }
    }
}

/// One dispatch, shared by the threads running its workgroups.
struct Call<'a, B> {
    context: &'a Context,
    function: &'a Function,
    name: &'a str,
    count: [u32; 3],
    constant_bytes: Vec<u8>,
    bindings: &'a [B],
}

/// Where an argument of the dispatch calling convention is.
const WORKGROUP_ID: usize = 3;

impl<B: DispatchBinding> Call<'_, B> {
    /// The arguments of a workgroup, for one thread: its own local memory, constants and
    /// binding views (no reference count is shared between threads), the workgroup id to be
    /// set by [`Call::run`].
    fn arguments(&self) -> Result<[Value; 12], StatusError> {
        let buffer = |b: VmBuffer| Value::Ref(Some(Ref::Buffer(Arc::new(b))));
        let views = self
            .bindings
            .iter()
            .map(|b| vm_view(b.buffer(), b.offset(), b.length()).map(buffer))
            .collect::<Result<Vec<_>, _>>()?;
        let list = VmList::from_values(ElementType::Ref(RefType::Buffer), views)
            .map_err(|e| invalid(format!("dispatch bindings: {e}")))?;
        let [cx, cy, cz] = self.count.map(|c| c as i32);
        Ok([
            buffer(VmBuffer::from_bytes(&[])),
            buffer(VmBuffer::from_bytes(&self.constant_bytes)),
            Value::Ref(Some(Ref::List(Arc::new(list)))),
            Value::I32(0),
            Value::I32(0),
            Value::I32(0),
            Value::I32(1),
            Value::I32(1),
            Value::I32(1),
            Value::I32(cx),
            Value::I32(cy),
            Value::I32(cz),
        ])
    }

    /// Runs workgroup `index` of the grid (x fastest) with `args` on `stack`.
    fn run(
        &self,
        index: u64,
        args: &mut [Value; 12],
        stack: &mut CallStack,
    ) -> Result<(), StatusError> {
        let [cx, cy, _] = self.count.map(u64::from);
        let id = [index % cx, index / cx % cy, index / cx / cy];
        for (arg, id) in args[WORKGROUP_ID..WORKGROUP_ID + 3].iter_mut().zip(id) {
            *arg = Value::I32(id as i32);
        }
        self.context
            .invoke_on(self.function, args, stack)
            .map(drop)
            .map_err(|e| {
                StatusError::new(e.status(), format!("dispatch `{}` failed: {e}", self.name))
            })
    }
}

/// The failure of the workgroup first in grid order among those that failed.
struct FirstFailure {
    /// Its index, `u64::MAX` while none failed: workgroups past it need not run.
    index: AtomicU64,
    error: Mutex<Option<(u64, StatusError)>>,
}

impl FirstFailure {
    fn new() -> FirstFailure {
        FirstFailure {
            index: AtomicU64::new(u64::MAX),
            error: Mutex::new(None),
        }
    }

    fn index(&self) -> u64 {
        self.index.load(Ordering::Relaxed)
    }

    fn record(&self, index: u64, error: StatusError) {
        let mut first = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if first.as_ref().is_none_or(|(at, _)| index < *at) {
            *first = Some((index, error));
        }
        self.index.fetch_min(index, Ordering::Relaxed);
    }

    fn into_result(self) -> Result<(), StatusError> {
        match self.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }
}
