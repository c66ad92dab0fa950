//! `!hal.executable` for the `vmvx-bytecode-fb` format: a VM bytecode module (usually
//! ZIP-wrapped, named `linked_module`) whose exports are dispatch functions, run by pactum's
//! VM in a context of its own.
//!
//! A dispatch export has calling convention `0rrriiiiiiiii_v`: the workgroup's local memory
//! (`!vm.buffer`), the push constants (`!vm.buffer` of i32s), the bindings (`!vm.list` of
//! `!vm.buffer`s, each a view of the bound HAL buffer range), then the workgroup id, the
//! workgroup size and the workgroup count, x, y, z each. Every workgroup of the grid runs
//! once, x fastest.

use std::sync::Arc;

use super::objects::{HalBuffer, invalid};
use crate::vm::{
    Context, ElementType, Function, Limits, NativeError, Ref, RefObject, RefType, StatusCode,
    Value, VmBuffer, VmList,
};
use crate::vmfb::VmfbFile;

/// The executable format pactum runs.
pub const VMVX_FORMAT: &str = "vmvx-bytecode-fb";

/// The calling convention of a vmvx dispatch function.
pub const DISPATCH_CCONV: &str = "0rrriiiiiiiii_v";

/// The most workgroups one dispatch may run.
pub const MAX_WORKGROUPS: u64 = 1 << 24;

/// A loaded vmvx executable.
#[derive(Debug)]
pub struct HalExecutable {
    context: Context,
    exports: Vec<(String, Function)>,
}

impl RefObject for HalExecutable {
    fn type_name(&self) -> &str {
        "hal.executable"
    }
}

/// A bound buffer range of a dispatch.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The buffer.
    pub buffer: HalBuffer,
    /// Where the range starts.
    pub offset: i64,
    /// Its length (or [`super::objects::WHOLE_BUFFER`]).
    pub length: i64,
}

impl HalExecutable {
    /// Loads executable `data` of `format` with `limits` for its calls. Its float arithmetic
    /// flushes subnormals to zero whatever `limits` say, as IREE's local devices run
    /// dispatches (`iree_fpu_state_push(IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO)`).
    pub fn create(
        format: &str,
        data: Vec<u8>,
        mut limits: Limits,
    ) -> Result<HalExecutable, NativeError> {
        limits.flush_denormals = true;
        if format != VMVX_FORMAT {
            return Err(NativeError::new(
                StatusCode::Unimplemented,
                format!(
                    "executable format `{format}` is not supported (pactum's local device runs \
                     `{VMVX_FORMAT}` only)"
                ),
            ));
        }
        let file = Arc::new(VmfbFile::from_bytes(data));
        let names = {
            let module = file
                .module()
                .map_err(|e| invalid(format!("vmvx executable is not a VM module: {e}")))?;
            if let Some(import) = module.imports().find(|i| i.full_name.starts_with("vmvx.")) {
                return Err(NativeError::new(
                    StatusCode::Unimplemented,
                    format!(
                        "vmvx executable imports `{}`: microkernels \
                         (--iree-vmvx-enable-microkernels) are not supported",
                        import.full_name
                    ),
                ));
            }
            module
                .exports()
                .map(|e| e.local_name.to_owned())
                .collect::<Vec<_>>()
        };
        let mut context = Context::new(limits);
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
        Ok(HalExecutable { context, exports })
    }

    /// The ordinal of export `name`.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.exports.iter().position(|(n, _)| n == name)
    }

    /// The number of exports.
    pub fn export_count(&self) -> usize {
        self.exports.len()
    }

    /// Runs export `ordinal` for every workgroup of `count`.
    pub fn dispatch(
        &self,
        ordinal: i64,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
    ) -> Result<(), NativeError> {
        let (name, function) = usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.exports.get(i))
            .ok_or_else(|| {
                invalid(format!(
                    "executable has no export {ordinal} ({} exports)",
                    self.exports.len()
                ))
            })?;
        let total = count.iter().map(|&c| u64::from(c)).product::<u64>();
        if total > MAX_WORKGROUPS {
            return Err(NativeError::new(
                StatusCode::ResourceExhausted,
                format!(
                    "dispatch of {}x{}x{} workgroups exceeds the limit of {MAX_WORKGROUPS}",
                    count[0], count[1], count[2]
                ),
            ));
        }
        if total == 0 {
            return Ok(());
        }
        let constant_bytes: Vec<u8> = constants.iter().flat_map(|c| c.to_le_bytes()).collect();
        let constants = Ref::Buffer(Arc::new(VmBuffer::from_bytes(&constant_bytes)));
        let local_memory = Ref::Buffer(Arc::new(VmBuffer::from_bytes(&[])));
        let views = bindings
            .iter()
            .map(|b| {
                b.buffer
                    .vm_view(b.offset, b.length)
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
                        NativeError::new(e.status(), format!("dispatch `{name}` failed: {e}"))
                    })?;
                }
            }
        }
        Ok(())
    }
}
