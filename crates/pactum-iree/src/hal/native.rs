//! [`HalModule`]: the `hal` native module.

use std::any::Any;
use std::sync::Arc;

use super::command::{BufferRef, Command, HalCommandBuffer, TableEntry};
use super::element::HalElementType;
use super::executable::{HalExecutable, is_supported_format};
use super::objects::{
    HalAllocator, HalBuffer, HalBufferView, HalDevice, HalFence, HalFile, invalid, out_of_range,
    shape_text,
};
use super::workers::Workers;
use crate::host_memory::BlockCache;
use crate::vm::{
    Limits, MemoryBudget, NativeError, NativeFunction, NativeModule, Ref, StatusCode, Value,
    VmBuffer,
};

/// The reference types the module registers (without `!`).
pub const REF_TYPES: &[&str] = &[
    "hal.allocator",
    "hal.buffer",
    "hal.buffer_view",
    "hal.channel",
    "hal.command_buffer",
    "hal.device",
    "hal.event",
    "hal.executable",
    "hal.executable_cache",
    "hal.fence",
    "hal.file",
    "hal.semaphore",
];

/// The most bytes of freed blocks a module keeps for reuse.
pub const FREE_BLOCK_CACHE_BYTES: usize = 256 << 20;

/// The functions: name and calling convention, in `call` index order.
const FUNCTIONS: &[(&str, &str)] = &[
    ("ex.file.from_memory", "0rIirIIi_r"),
    ("allocator.allocate", "0rIiiI_r"),
    ("allocator.import", "0riIiirII_r"),
    ("buffer.assert", "0rrrIii_v"),
    ("buffer.load", "0rIi_i"),
    ("buffer_view.create", "0rIIiiCID_r"),
    ("buffer_view.assert", "0rriiCID_v"),
    ("buffer_view.buffer", "0r_r"),
    ("buffer_view.dim", "0ri_I"),
    ("command_buffer.create", "0riiIi_r"),
    ("command_buffer.finalize", "0r_v"),
    ("command_buffer.execution_barrier", "0riiI_v"),
    ("command_buffer.fill_buffer", "0rrIIiIiI_v"),
    ("command_buffer.copy_buffer", "0riirIrIII_v"),
    ("command_buffer.dispatch", "0rrIiiiICiDCiirIID_v"),
    ("device.allocator", "0r_r"),
    ("device.query.i64", "0rrr_iI"),
    ("device.queue.alloca", "0rIrrIiiII_r"),
    ("device.queue.dealloca", "0rIrrrI_v"),
    ("device.queue.fill", "0rIrrrIIIiI_v"),
    ("device.queue.copy", "0rIrrrIrIII_v"),
    ("device.queue.read", "0rIrrrIrIII_v"),
    ("device.queue.execute", "0rIrrrI_v"),
    ("device.queue.execute.indirect", "0rIrrrICrIID_v"),
    ("devices.count", "0v_i"),
    ("devices.get", "0i_r"),
    ("executable.create", "0rIrrr_r"),
    ("executable.lookup.function", "0rr_I"),
    ("fence.create", "0rI_r"),
    ("fence.join", "0ICrD_r"),
    ("fence.await", "0iICrD_i"),
    ("buffer.length", "0r_I"),
    ("buffer.subspan", "0rII_r"),
    ("buffer.store", "0irIi_v"),
    ("buffer_view.rank", "0r_i"),
    ("buffer_view.element_type", "0r_i"),
    ("buffer_view.encoding_type", "0r_i"),
    ("command_buffer.begin_debug_group", "0rr_v"),
    ("command_buffer.end_debug_group", "0r_v"),
    ("device.queue.flush", "0rI_v"),
    ("fence.signal", "0r_v"),
    ("fence.query", "0r_i"),
    ("fence.fail", "0ri_v"),
];

/// The `hal` module: one local CPU device, `local-task` (native dispatches on a worker pool)
/// or `local-sync` (on the calling thread), by its [`Workers`]. Queue operations complete
/// before they return.
pub struct HalModule {
    functions: Vec<NativeFunction>,
    budget: Option<Arc<MemoryBudget>>,
    limits: Limits,
    device: Ref,
    allocator: Ref,
    workers: Workers,
    /// Large blocks this module's buffers freed, reused by its next allocations.
    blocks: Arc<BlockCache>,
}

impl std::fmt::Debug for HalModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HalModule").finish_non_exhaustive()
    }
}

impl HalModule {
    /// A module whose allocations are charged to `budget` and whose executables run with
    /// `limits`.
    /// Native dispatches run on the process-wide worker pool ([`Workers::shared`]).
    pub fn new(budget: Option<Arc<MemoryBudget>>, limits: Limits) -> HalModule {
        HalModule::with_workers(budget, limits, Workers::shared())
    }

    /// A module whose native dispatches run on `workers` ([`Workers::CallerThread`]: on the
    /// calling thread only, IREE's `local-sync`).
    pub fn with_workers(
        budget: Option<Arc<MemoryBudget>>,
        limits: Limits,
        workers: Workers,
    ) -> HalModule {
        HalModule {
            workers,
            blocks: BlockCache::new(FREE_BLOCK_CACHE_BYTES),
            functions: FUNCTIONS
                .iter()
                .map(|(name, cconv)| NativeFunction::new(*name, *cconv))
                .collect(),
            budget,
            limits,
            device: Ref::Object(Arc::new(HalDevice)),
            allocator: Ref::Object(Arc::new(HalAllocator)),
        }
    }

    /// The device `hal.devices.get(0)` returns.
    pub fn device(&self) -> &Ref {
        &self.device
    }

    /// The memory budget allocations are charged to.
    pub fn budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.budget.as_ref()
    }
}

/// Typed access to a native call's arguments.
struct Args<'a>(&'a [Value]);

impl<'a> Args<'a> {
    fn value(&self, i: usize) -> Result<&'a Value, NativeError> {
        self.0
            .get(i)
            .ok_or_else(|| invalid(format!("missing argument {i}")))
    }

    fn i32(&self, i: usize) -> Result<i32, NativeError> {
        self.value(i)?
            .as_i32()
            .ok_or_else(|| invalid(format!("argument {i} is not an i32")))
    }

    fn i64(&self, i: usize) -> Result<i64, NativeError> {
        self.value(i)?
            .as_i64()
            .ok_or_else(|| invalid(format!("argument {i} is not an i64")))
    }

    fn opt_ref(&self, i: usize) -> Result<Option<&'a Ref>, NativeError> {
        match self.value(i)? {
            Value::Ref(r) => Ok(r.as_ref()),
            _ => Err(invalid(format!("argument {i} is not a reference"))),
        }
    }

    fn get_ref(&self, i: usize, what: &str) -> Result<&'a Ref, NativeError> {
        self.opt_ref(i)?
            .ok_or_else(|| invalid(format!("argument {i}: expected a {what}, got null")))
    }

    fn obj<T: Any>(&self, i: usize, what: &str) -> Result<&'a T, NativeError> {
        let r = self.get_ref(i, what)?;
        r.downcast_ref::<T>().ok_or_else(|| {
            invalid(format!(
                "argument {i}: expected a {what}, got {}",
                r.type_name()
            ))
        })
    }

    fn opt_obj<T: Any>(&self, i: usize, what: &str) -> Result<Option<&'a T>, NativeError> {
        match self.opt_ref(i)? {
            None => Ok(None),
            Some(_) => self.obj(i, what).map(Some),
        }
    }

    fn buffer(&self, i: usize) -> Result<&'a HalBuffer, NativeError> {
        self.obj::<HalBuffer>(i, "hal.buffer")
    }

    fn view(&self, i: usize) -> Result<&'a HalBufferView, NativeError> {
        self.obj::<HalBufferView>(i, "hal.buffer_view")
    }

    fn vm_buffer(&self, i: usize) -> Result<&'a Arc<VmBuffer>, NativeError> {
        let r = self.get_ref(i, "vm.buffer")?;
        r.as_buffer().ok_or_else(|| {
            invalid(format!(
                "argument {i}: expected a vm.buffer, got {}",
                r.type_name()
            ))
        })
    }

    fn opt_vm_buffer(&self, i: usize) -> Result<Option<&'a Arc<VmBuffer>>, NativeError> {
        match self.opt_ref(i)? {
            None => Ok(None),
            Some(_) => self.vm_buffer(i).map(Some),
        }
    }

    /// The text of a `!vm.buffer` argument (empty for null).
    fn string(&self, i: usize) -> Result<String, NativeError> {
        Ok(match self.opt_ref(i)? {
            None => String::new(),
            Some(_) => String::from_utf8_lossy(&self.vm_buffer(i)?.to_vec()).into_owned(),
        })
    }

    /// A variadic span at `i` of `width` values per tuple: the tuples and the index after.
    fn span(&self, i: usize, width: usize) -> Result<(usize, usize), NativeError> {
        let count = usize::try_from(self.i32(i)?)
            .map_err(|_| invalid(format!("argument {i}: negative variadic count")))?;
        let end = count
            .checked_mul(width)
            .and_then(|n| n.checked_add(i + 1))
            .filter(|&end| end <= self.0.len())
            .ok_or_else(|| invalid(format!("argument {i}: variadic count {count} too large")))?;
        Ok((count, end))
    }
}

fn obj(value: impl super::super::vm::RefObject + 'static) -> Value {
    Value::Ref(Some(Ref::Object(Arc::new(value))))
}

fn dims(args: &Args<'_>, at: usize) -> Result<Vec<u64>, NativeError> {
    let (count, _) = args.span(at, 1)?;
    (0..count)
        .map(|k| {
            let d = args.i64(at + 1 + k)?;
            u64::try_from(d).map_err(|_| invalid(format!("shape dimension {k} is negative ({d})")))
        })
        .collect()
}

/// `*` and `?` glob match, as the device id query uses; linear backtracking (one retry
/// point), so hostile patterns cannot take exponential time.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut retry: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                retry = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match retry {
                Some((rp, rt)) => {
                    p = rp + 1;
                    t = rt + 1;
                    retry = Some((rp, rt + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

fn buffer_operand(args: &Args<'_>, buffer_at: usize, slot: i32) -> Result<BufferRef, NativeError> {
    match args.opt_obj::<HalBuffer>(buffer_at, "hal.buffer")? {
        Some(buffer) => Ok(BufferRef::Direct(buffer.clone())),
        None => u32::try_from(slot)
            .map(BufferRef::Slot)
            .map_err(|_| invalid(format!("binding slot {slot} is negative"))),
    }
}

impl HalModule {
    fn alloc(&self, size: i64) -> Result<Value, NativeError> {
        Ok(obj(HalBuffer::allocate_in(
            size,
            self.budget.as_ref(),
            Some(&self.blocks),
        )?))
    }

    fn dispatch(&self, a: &Args<'_>) -> Result<Vec<Value>, NativeError> {
        let cb = a.obj::<HalCommandBuffer>(0, "hal.command_buffer")?;
        let executable = a.get_ref(1, "hal.executable")?;
        if executable.downcast_ref::<HalExecutable>().is_none() {
            return Err(invalid(format!(
                "argument 1: expected a hal.executable, got {}",
                executable.type_name()
            )));
        }
        let ordinal = a.i64(2)?;
        let count = [a.i32(3)? as u32, a.i32(4)? as u32, a.i32(5)? as u32];
        let (n_constants, after) = a.span(7, 1)?;
        let constants = (0..n_constants)
            .map(|k| a.i32(8 + k))
            .collect::<Result<Vec<_>, _>>()?;
        let (n_bindings, _) = a.span(after, 5)?;
        let mut bindings = Vec::with_capacity(n_bindings);
        for k in 0..n_bindings {
            let at = after + 1 + 5 * k;
            let slot = a.i32(at + 1)?;
            bindings.push((
                buffer_operand(a, at + 2, slot)?,
                a.i64(at + 3)?,
                a.i64(at + 4)?,
            ));
        }
        cb.record(Command::Dispatch {
            executable: executable.clone(),
            ordinal,
            count,
            constants,
            bindings,
        })?;
        Ok(vec![])
    }

    fn buffer_view_assert(&self, a: &Args<'_>) -> Result<Vec<Value>, NativeError> {
        let view = a.opt_obj::<HalBufferView>(0, "hal.buffer_view")?;
        // The message and the shapes are only read and formatted for an error: the check
        // runs on every tensor argument of every call.
        let message = || a.string(1);
        let Some(view) = view else {
            return Err(invalid(format!(
                "{} is not a buffer view (null)",
                message()?
            )));
        };
        let element_type = HalElementType(a.i32(2)? as u32);
        let encoding = a.i32(3)? as u32;
        let expected = dims(a, 4)?;
        if view.element_type != element_type {
            return Err(invalid(format!(
                "{} element type mismatch; expected {} but have {}",
                message()?,
                element_type.describe(),
                view.element_type.describe()
            )));
        }
        if view.encoding_type != encoding {
            return Err(invalid(format!(
                "{} encoding mismatch; expected {encoding:#010x} but have {:#010x}",
                message()?,
                view.encoding_type
            )));
        }
        let shapes = || {
            format!(
                "expected shape `{}`, actual shape `{}`",
                shape_text(&expected),
                shape_text(&view.shape)
            )
        };
        if view.shape.len() != expected.len() {
            return Err(invalid(format!(
                "{} shape rank mismatch; expected {} but have {}; {}",
                message()?,
                expected.len(),
                view.shape.len(),
                shapes()
            )));
        }
        if let Some(k) = (0..expected.len()).find(|&k| expected[k] != view.shape[k]) {
            return Err(invalid(format!(
                "{} shape dimension {k} mismatch; expected {} but have {}; {}",
                message()?,
                expected[k],
                view.shape[k],
                shapes()
            )));
        }
        Ok(vec![])
    }

    fn execute_queue(&self, a: &Args<'_>, table: &[TableEntry]) -> Result<Vec<Value>, NativeError> {
        let cb = a.obj::<HalCommandBuffer>(4, "hal.command_buffer")?;
        cb.execute(table, &self.workers)?;
        Ok(vec![])
    }

    fn call_at(&self, index: usize, a: &Args<'_>) -> Result<Vec<Value>, NativeError> {
        let name = FUNCTIONS.get(index).map_or("", |f| f.0);
        Ok(match name {
            "ex.file.from_memory" => {
                let buffer = a.vm_buffer(3)?.clone();
                let (offset, length) = (a.i64(4)?, a.i64(5)?);
                let range = u64::try_from(offset)
                    .ok()
                    .zip(u64::try_from(length).ok())
                    .and_then(|(o, l)| buffer.range(o, l).ok())
                    .ok_or_else(|| {
                        out_of_range(format!(
                            "file range {offset}+{length} is outside the buffer of {} bytes",
                            buffer.len()
                        ))
                    })?;
                vec![obj(HalFile {
                    buffer,
                    offset: range.start as u64,
                    length: range.len() as u64,
                })]
            }
            "allocator.allocate" => {
                a.obj::<HalAllocator>(0, "hal.allocator")?;
                vec![self.alloc(a.i64(4)?)?]
            }
            "allocator.import" => {
                a.obj::<HalAllocator>(0, "hal.allocator")?;
                let is_try = a.i32(1)? != 0;
                let source = a.vm_buffer(5)?;
                let (offset, length) = (a.i64(6)?, a.i64(7)?);
                let available = source.len() as i64;
                let length = if length == -1 { available } else { length };
                if length < 0
                    || offset < 0
                    || offset > available
                    || offset.checked_add(length).is_none_or(|end| end > available)
                {
                    return Err(invalid(format!(
                        "byte range out of bounds (requested {offset}-{} of available \
                         {available})",
                        offset.saturating_add(length) - 1
                    )));
                }
                if source.is_mutable() {
                    // IREE aliases a mutable source; pactum's buffers own their bytes, so it
                    // cannot. A `try` import returns null and the module allocates and copies.
                    if is_try {
                        return Ok(vec![Value::Ref(None)]);
                    }
                    return Err(NativeError::new(
                        StatusCode::Unimplemented,
                        "importing a mutable !vm.buffer without copying is not supported",
                    ));
                }
                // A read-only source (rodata) is imported for constant use: a copy behaves the same.
                let mut bytes = vec![0; length as usize];
                source
                    .read(offset as u64, &mut bytes)
                    .map_err(|e| invalid(format!("argument 5: {e}")))?;
                vec![obj(HalBuffer::from_bytes(&bytes, self.budget.as_ref())?)]
            }
            "buffer.assert" => {
                let message = a.string(1)?;
                let Some(buffer) = a.opt_obj::<HalBuffer>(0, "hal.buffer")? else {
                    return Err(invalid(format!("{message} buffer is null")));
                };
                let minimum = a.i64(3)?;
                if (buffer.len() as i128) < i128::from(minimum) {
                    return Err(out_of_range(format!(
                        "{message} buffer byte length {} less than expected minimum {minimum}",
                        buffer.len()
                    )));
                }
                vec![]
            }
            "buffer.load" => {
                let buffer = a.buffer(0)?;
                let length = a.i32(2)?;
                if !matches!(length, 1 | 2 | 4) {
                    return Err(invalid(format!(
                        "buffer.load of {length} bytes (1, 2 or 4)"
                    )));
                }
                let mut bytes = [0u8; 4];
                buffer.read(a.i64(1)?, &mut bytes[..length as usize])?;
                vec![Value::I32(i32::from_le_bytes(bytes))]
            }
            "buffer.store" => {
                let value = a.i32(0)?;
                let buffer = a.buffer(1)?;
                let length = a.i32(3)?;
                if !matches!(length, 1 | 2 | 4) {
                    return Err(invalid(format!(
                        "buffer.store of {length} bytes (1, 2 or 4)"
                    )));
                }
                buffer.write(a.i64(2)?, &value.to_le_bytes()[..length as usize])?;
                vec![]
            }
            "buffer.length" => vec![Value::I64(a.buffer(0)?.len() as i64)],
            "buffer.subspan" => vec![obj(a.buffer(0)?.subspan(a.i64(1)?, a.i64(2)?)?)],
            "buffer_view.create" => {
                let buffer = a.buffer(0)?.subspan(a.i64(1)?, a.i64(2)?)?;
                let element_type = HalElementType(a.i32(3)? as u32);
                let view = HalBufferView::new(buffer, dims(a, 5)?, element_type, a.i32(4)? as u32)?;
                vec![obj(view)]
            }
            "buffer_view.assert" => self.buffer_view_assert(a)?,
            "buffer_view.buffer" => vec![obj(a.view(0)?.buffer.clone())],
            "buffer_view.dim" => {
                let view = a.view(0)?;
                let k = a.i32(1)?;
                let dim = usize::try_from(k)
                    .ok()
                    .and_then(|k| view.shape.get(k))
                    .ok_or_else(|| {
                        out_of_range(format!(
                            "dimension {k} of a buffer view of rank {}",
                            view.shape.len()
                        ))
                    })?;
                vec![Value::I64(*dim as i64)]
            }
            "buffer_view.rank" => vec![Value::I32(a.view(0)?.shape.len() as i32)],
            "buffer_view.element_type" => vec![Value::I32(a.view(0)?.element_type.0 as i32)],
            "buffer_view.encoding_type" => vec![Value::I32(a.view(0)?.encoding_type as i32)],
            "command_buffer.create" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                let capacity =
                    u32::try_from(a.i32(4)?).map_err(|_| invalid("negative binding capacity"))?;
                vec![obj(HalCommandBuffer::new(capacity))]
            }
            "command_buffer.finalize" => {
                a.obj::<HalCommandBuffer>(0, "hal.command_buffer")?
                    .finalize()?;
                vec![]
            }
            "command_buffer.execution_barrier"
            | "command_buffer.begin_debug_group"
            | "command_buffer.end_debug_group" => {
                a.obj::<HalCommandBuffer>(0, "hal.command_buffer")?;
                vec![]
            }
            "command_buffer.fill_buffer" => {
                let cb = a.obj::<HalCommandBuffer>(0, "hal.command_buffer")?;
                cb.record(Command::Fill {
                    target: buffer_operand(a, 1, a.i32(4)?)?,
                    offset: a.i64(2)?,
                    length: a.i64(3)?,
                    pattern: a.i64(5)? as u64,
                    pattern_length: i64::from(a.i32(6)?),
                })?;
                vec![]
            }
            "command_buffer.copy_buffer" => {
                let cb = a.obj::<HalCommandBuffer>(0, "hal.command_buffer")?;
                cb.record(Command::Copy {
                    source: buffer_operand(a, 3, a.i32(1)?)?,
                    source_offset: a.i64(4)?,
                    target: buffer_operand(a, 5, a.i32(2)?)?,
                    target_offset: a.i64(6)?,
                    length: a.i64(7)?,
                })?;
                vec![]
            }
            "command_buffer.dispatch" => self.dispatch(a)?,
            "device.allocator" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                vec![Value::Ref(Some(self.allocator.clone()))]
            }
            "device.query.i64" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                let category = a.string(1)?;
                let key = a.string(2)?;
                let (ok, value) = match category.as_str() {
                    "hal.device.id" => (
                        1,
                        i64::from(glob(key.as_bytes(), self.workers.device_name().as_bytes())),
                    ),
                    "hal.executable.format" => (1, i64::from(is_supported_format(&key))),
                    "hal.device" | "hal.dispatch" if key == "concurrency" => {
                        (1, self.workers.concurrency() as i64)
                    }
                    _ => (0, 0),
                };
                vec![Value::I32(ok), Value::I64(value)]
            }
            "device.queue.alloca" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                vec![self.alloc(a.i64(7)?)?]
            }
            "device.queue.dealloca" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                a.buffer(4)?;
                vec![]
            }
            "device.queue.fill" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                a.buffer(4)?
                    .fill(a.i64(5)?, a.i64(6)?, a.i64(7)? as u64, i64::from(a.i32(8)?))?;
                vec![]
            }
            "device.queue.copy" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                HalBuffer::copy(a.buffer(4)?, a.i64(5)?, a.buffer(6)?, a.i64(7)?, a.i64(8)?)?;
                vec![]
            }
            "device.queue.read" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                let file = a.obj::<HalFile>(4, "hal.file")?;
                let (source_offset, target, target_offset, length) =
                    (a.i64(5)?, a.buffer(6)?, a.i64(7)?, a.i64(8)?);
                let range = u64::try_from(source_offset)
                    .ok()
                    .zip(u64::try_from(length).ok())
                    .filter(|(o, l)| o.checked_add(*l).is_some_and(|e| e <= file.length))
                    .ok_or_else(|| {
                        out_of_range(format!(
                            "file range {source_offset}+{length} is outside the file of {} bytes",
                            file.length
                        ))
                    })?;
                let mut bytes = vec![0u8; 0];
                bytes.try_reserve_exact(range.1 as usize).map_err(|_| {
                    NativeError::new(StatusCode::ResourceExhausted, "file read too large")
                })?;
                bytes.resize(range.1 as usize, 0);
                file.buffer
                    .read(file.offset + range.0, &mut bytes)
                    .map_err(|e| out_of_range(e.to_string()))?;
                target.write(target_offset, &bytes)?;
                vec![]
            }
            "device.queue.execute" => self.execute_queue(a, &[])?,
            "device.queue.execute.indirect" => {
                let (count, _) = a.span(6, 3)?;
                let table = (0..count)
                    .map(|k| {
                        let at = 7 + 3 * k;
                        Ok((a.buffer(at)?.clone(), a.i64(at + 1)?, a.i64(at + 2)?))
                    })
                    .collect::<Result<Vec<_>, NativeError>>()?;
                self.execute_queue(a, &table)?
            }
            "device.queue.flush" => vec![],
            "devices.count" => vec![Value::I32(1)],
            "devices.get" => {
                let index = a.i32(0)?;
                if index != 0 {
                    return Err(out_of_range(format!("device {index} of 1")));
                }
                vec![Value::Ref(Some(self.device.clone()))]
            }
            "executable.create" => {
                a.obj::<HalDevice>(0, "hal.device")?;
                let format = a.string(2)?;
                let data = a.vm_buffer(3)?.to_vec();
                let constants = match a.opt_vm_buffer(4)? {
                    Some(buffer) => buffer
                        .to_vec()
                        .chunks(4)
                        .map(|c| {
                            c.try_into().map(u32::from_le_bytes).map_err(|_| {
                                invalid("argument 4: executable constants are not 4-byte values")
                            })
                        })
                        .collect::<Result<Vec<u32>, NativeError>>()?,
                    None => Vec::new(),
                };
                vec![obj(HalExecutable::create(
                    &format,
                    data,
                    &constants,
                    self.limits.clone(),
                )?)]
            }
            "executable.lookup.function" => {
                let executable = a.obj::<HalExecutable>(0, "hal.executable")?;
                let name = a.string(1)?;
                let ordinal = executable.lookup(&name).ok_or_else(|| {
                    NativeError::new(
                        StatusCode::NotFound,
                        format!("executable has no function `{name}`"),
                    )
                })?;
                vec![Value::I64(ordinal as i64)]
            }
            "fence.create" => vec![obj(HalFence)],
            "fence.join" => {
                let (count, _) = a.span(1, 1)?;
                for k in 0..count {
                    a.opt_obj::<HalFence>(2 + k, "hal.fence")?;
                }
                vec![obj(HalFence)]
            }
            "fence.await" => {
                let (count, _) = a.span(2, 1)?;
                for k in 0..count {
                    a.opt_obj::<HalFence>(3 + k, "hal.fence")?;
                }
                vec![Value::I32(0)]
            }
            "fence.signal" => {
                a.obj::<HalFence>(0, "hal.fence")?;
                vec![]
            }
            "fence.query" => {
                a.obj::<HalFence>(0, "hal.fence")?;
                vec![Value::I32(0)]
            }
            "fence.fail" => {
                a.obj::<HalFence>(0, "hal.fence")?;
                vec![]
            }
            _ => {
                return Err(NativeError::new(
                    StatusCode::Unimplemented,
                    format!("hal function {index} is not implemented"),
                ));
            }
        })
    }
}

impl NativeModule for HalModule {
    fn name(&self) -> &str {
        "hal"
    }

    fn version(&self) -> u32 {
        7
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn ref_types(&self) -> Vec<String> {
        REF_TYPES.iter().map(|t| (*t).to_owned()).collect()
    }

    fn call(&self, index: usize, args: &[Value]) -> Result<Vec<Value>, NativeError> {
        self.call_at(index, &Args(args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_device_ids() {
        assert!(glob(b"local*", b"local-sync"));
        assert!(glob(b"*", b""));
        assert!(!glob(b"cuda*", b"local-sync"));
        assert!(glob(b"local-?ync", b"local-sync"));
        assert!(glob(b"*sync", b"local-sync"));
        assert!(!glob(b"local", b"local-sync"));
        assert!(!glob(b"local-sync-x", b"local-sync"));
        let hostile = b"*a".repeat(10_000);
        assert!(!glob(&hostile, b"local-sync"));
    }
}
