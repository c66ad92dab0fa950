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

use std::sync::Arc;

use super::vmvx_module::vmvx_module;
use crate::hal::buffer::{Binding, HalBuffer};
use crate::status::StatusError;
use crate::vm::{Context, ElementType, Function, Limits, Ref, RefType, Value, VmBuffer, VmList};
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
        Ok(VmvxExecutable { context, exports })
    }

    /// The name of every export, by ordinal.
    pub fn export_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.exports.iter().map(|(n, _)| n.as_str())
    }

    /// The name of export `ordinal`.
    pub fn export_name(&self, ordinal: usize) -> Option<&str> {
        self.exports.get(ordinal).map(|(n, _)| n.as_str())
    }

    /// Runs export `ordinal` for every workgroup of `count` (at least one), on the caller's
    /// thread.
    pub fn dispatch(
        &self,
        ordinal: usize,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
    ) -> Result<(), StatusError> {
        let (name, function) = self.exports.get(ordinal).ok_or_else(|| {
            invalid(format!(
                "executable has no export {ordinal} ({} exports)",
                self.exports.len()
            ))
        })?;
        let constant_bytes: Vec<u8> = constants.iter().flat_map(|c| c.to_le_bytes()).collect();
        let constants = Ref::Buffer(Arc::new(VmBuffer::from_bytes(&constant_bytes)));
        let local_memory = Ref::Buffer(Arc::new(VmBuffer::from_bytes(&[])));
        let views = bindings
            .iter()
            .map(|b| {
                vm_view(&b.buffer, b.offset, b.length)
                    .map(|v| Value::Ref(Some(Ref::Buffer(Arc::new(v)))))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let list = VmList::from_values(ElementType::Ref(RefType::Buffer), views)
            .map_err(|e| invalid(format!("dispatch bindings: {e}")))?;
        let list = Ref::List(Arc::new(list));
        let [cx, cy, cz] = count.map(|c| c as i32);
        for z in 0..count[2] {
            for y in 0..count[1] {
                for x in 0..count[0] {
                    let args = [
                        Value::Ref(Some(local_memory.clone())),
                        Value::Ref(Some(constants.clone())),
                        Value::Ref(Some(list.clone())),
                        Value::I32(x as i32),
                        Value::I32(y as i32),
                        Value::I32(z as i32),
                        Value::I32(1),
                        Value::I32(1),
                        Value::I32(1),
                        Value::I32(cx),
                        Value::I32(cy),
                        Value::I32(cz),
                    ];
                    self.context.invoke(function, &args).map_err(|e| {
                        StatusError::new(e.status(), format!("dispatch `{name}` failed: {e}"))
                    })?;
                }
            }
        }
        Ok(())
    }
}
