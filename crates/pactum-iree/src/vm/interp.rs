//! The interpreter: runs pre-decoded functions of linked module instances.
//!
//! The loop keeps no byte parsing and re-checks nothing the verifier proved: register fields
//! index the frame's slots directly (safe indexing, in bounds by construction), branch
//! targets are instruction indices. What only run time can know is checked here with
//! checked arithmetic: buffer and list ranges, indirect globals, null and mistyped
//! references, integer division, and the budgets.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use super::budget::{Charge, Limits, MemoryBudget};
use super::buffer::{BufferError, VmBuffer};
use super::code::*;
use super::error::{BudgetKind, FunctionName, Location, TrapKind, VmError};

use super::native::NativeModule;
use super::ops;
use super::value::{ElementType, ListError, Ref, Value, VmList, VmType, type_check};

/// A module's mutable state in one context: value globals (bytes) and ref globals.
pub struct Globals {
    bytes: Box<[AtomicU8]>,
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
    fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let cells = self.bytes.get(offset..offset.checked_add(N)?)?;
        let mut out = [0u8; N];
        for (o, c) in out.iter_mut().zip(cells) {
            *o = c.load(Relaxed);
        }
        Some(out)
    }

    #[inline]
    fn store<const N: usize>(&self, offset: usize, value: [u8; N]) -> Option<()> {
        let cells = self.bytes.get(offset..offset.checked_add(N)?)?;
        for (c, b) in cells.iter().zip(value) {
            c.store(b, Relaxed);
        }
        Some(())
    }

    fn refs(&self) -> std::sync::MutexGuard<'_, Vec<Option<Ref>>> {
        self.refs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

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

const ENTRY: u32 = u32::MAX;

struct Frame {
    instance: u32,
    function: u32,
    ip: u32,
    base_i: usize,
    base_r: usize,
    /// The caller's call site receiving the results, or `ENTRY`.
    site: u32,
}

/// Slots of the i32 bank a frame's register window spans: every `u16` register index and
/// the high half of a 64-bit pair at the last one. The interpreter indexes a fixed-size array
/// of this length, so register accesses need no bounds checks (a `u16` is always in range).
const WINDOW: usize = (1 << 16) + 1;

/// Register storage and frames of one invocation (reused between invocations).
///
/// The i32 bank is kept at least `WINDOW` slots longer than the top frame's base, so every
/// frame's window is a whole array; slots past `i32_top` belong to no frame.
#[derive(Default)]
pub struct Stack {
    i32s: Vec<u32>,
    i32_top: usize,
    refs: Vec<Option<Ref>>,
    frames: Vec<Frame>,
}

impl Stack {
    fn clear(&mut self) {
        self.frames.clear();
        // The slots are kept (a frame zeroes its own on entry).
        self.i32_top = 0;
        // Released here, not when the stack is reused.
        self.refs.clear();
    }
}

#[cold]
fn location(instance: &Instance, code: &FunctionCode, ip: usize) -> Location {
    Location {
        module: instance.name.clone(),
        function: match &code.name {
            Some(name) => FunctionName::Named(name.clone()),
            None => FunctionName::Ordinal(code.ordinal),
        },
        pc: code.pcs.get(ip).copied().unwrap_or(0),
    }
}

/// A fault inside an instruction, before its location is known.
enum Fault {
    Trap(TrapKind, String),
    Memory(u64),
}

impl From<BufferError> for Fault {
    fn from(e: BufferError) -> Fault {
        match e {
            BufferError::OutOfRange { .. } => Fault::Trap(TrapKind::OutOfRange, e.to_string()),
            BufferError::ReadOnly => Fault::Trap(TrapKind::ReadOnly, e.to_string()),
            BufferError::OverBudget(o) => Fault::Memory(o.limit as u64),
            BufferError::AllocationFailed(n) => Fault::Memory(n),
        }
    }
}

impl From<ListError> for Fault {
    fn from(e: ListError) -> Fault {
        match e {
            ListError::OutOfRange { .. } => Fault::Trap(TrapKind::OutOfRange, e.to_string()),
            ListError::WrongKind => Fault::Trap(TrapKind::WrongElementKind, e.to_string()),
            ListError::TypeMismatch => Fault::Trap(TrapKind::TypeMismatch, e.to_string()),
            ListError::OverBudget(o) => Fault::Memory(o.limit as u64),
            ListError::AllocationFailed => Fault::Memory(u64::MAX),
        }
    }
}

fn trap(kind: TrapKind, detail: impl Into<String>) -> Fault {
    Fault::Trap(kind, detail.into())
}

#[cold]
fn locate(fault: Fault, instance: &Instance, code: &FunctionCode, ip: usize) -> VmError {
    match fault {
        Fault::Trap(kind, detail) => VmError::Trap {
            kind,
            detail,
            location: location(instance, code, ip),
        },
        Fault::Memory(limit) => VmError::BudgetExhausted {
            kind: BudgetKind::Memory,
            limit,
            location: Some(location(instance, code, ip)),
        },
    }
}

#[inline]
fn read_ref(refs: &mut [Option<Ref>], base: usize, r: RefReg) -> Option<Ref> {
    let slot = &mut refs[base + r.index()];
    if r.is_move() {
        slot.take()
    } else {
        slot.clone()
    }
}

fn buffer_of(refs: &[Option<Ref>], base: usize, r: RefReg) -> Result<Arc<VmBuffer>, Fault> {
    match &refs[base + r.index()] {
        Some(Ref::Buffer(b)) => Ok(b.clone()),
        Some(other) => Err(trap(
            TrapKind::TypeMismatch,
            format!("expected a vm.buffer, got a {}", other.type_name()),
        )),
        None => Err(trap(TrapKind::NullReference, "null buffer")),
    }
}

fn list_of(refs: &[Option<Ref>], base: usize, r: RefReg) -> Result<Arc<VmList>, Fault> {
    match &refs[base + r.index()] {
        Some(Ref::List(l)) => Ok(l.clone()),
        Some(other) => Err(trap(
            TrapKind::TypeMismatch,
            format!("expected a vm.list, got a {}", other.type_name()),
        )),
        None => Err(trap(TrapKind::NullReference, "null list")),
    }
}

fn element_offset(index: u64, size: u64) -> Result<u64, Fault> {
    index.checked_mul(size).ok_or_else(|| {
        trap(
            TrapKind::OutOfRange,
            format!("element {} of {size} bytes is out of range", index as i64),
        )
    })
}

fn check_alignment(alignment: u32) -> Result<(), Fault> {
    if alignment != 0 && !alignment.is_power_of_two() {
        return Err(trap(
            TrapKind::InvalidArgument,
            format!("alignment {alignment} is not a power of two"),
        ));
    }
    Ok(())
}

fn host_size(length: u64) -> Result<usize, Fault> {
    usize::try_from(length).map_err(|_| Fault::Memory(length))
}

fn type_mismatch(r: Option<&Ref>, ty: &VmType) -> Fault {
    trap(
        TrapKind::TypeMismatch,
        format!(
            "a {} where type {ty:?} is required",
            r.map_or("null", |r| r.type_name())
        ),
    )
}

/// What an invocation calls.
pub struct Entry<'a> {
    /// Index of the instance.
    pub instance: u32,
    /// Internal ordinal.
    pub function: u32,
    /// The arguments, already checked against the function's calling convention.
    pub args: &'a [Value],
}

/// Runs one invocation to completion.
pub fn invoke(
    instances: &[Instance],
    entry: Entry<'_>,
    limits: &Limits,
    memory: Option<&Arc<MemoryBudget>>,
    stack: &mut Stack,
) -> Result<Vec<Value>, VmError> {
    stack.clear();
    let result = Machine {
        instances,
        limits,
        memory,
        fuel: limits.fuel.unwrap_or(u64::MAX),
        stack_bytes: 0,
    }
    .run(entry, stack);
    stack.clear();
    result
}

struct Machine<'a> {
    instances: &'a [Instance],
    limits: &'a Limits,
    memory: Option<&'a Arc<MemoryBudget>>,
    fuel: u64,
    stack_bytes: usize,
}

const REF_SLOT: usize = std::mem::size_of::<Option<Ref>>();

impl<'a> Machine<'a> {
    /// Pushes a zeroed frame for `function` of `instance`; the caller fills the arguments.
    fn push(
        &mut self,
        stack: &mut Stack,
        instance: u32,
        function: u32,
        site: u32,
        at: Option<Location>,
    ) -> Result<(usize, usize), VmError> {
        let code = &self.instances[instance as usize].functions[function as usize];
        if stack.frames.len() >= self.limits.max_frames {
            return Err(VmError::BudgetExhausted {
                kind: BudgetKind::Frames,
                limit: self.limits.max_frames as u64,
                location: at,
            });
        }
        let bytes = code.i32_count as usize * 4 + code.ref_count as usize * REF_SLOT;
        let total = self.stack_bytes + bytes;
        if total > self.limits.max_stack_bytes {
            return Err(VmError::BudgetExhausted {
                kind: BudgetKind::StackBytes,
                limit: self.limits.max_stack_bytes as u64,
                location: at,
            });
        }
        self.stack_bytes = total;
        let base_i = stack.i32_top;
        let base_r = stack.refs.len();
        let count = code.i32_count as usize;
        let need = base_i + count.max(WINDOW);
        if stack.i32s.len() < need {
            if stack.i32s.is_empty() {
                // Zeroed allocation: pages the frames never touch cost nothing.
                stack.i32s = vec![0; need];
            } else {
                stack.i32s.resize(need, 0);
            }
        }
        stack.i32s[base_i..base_i + count].fill(0);
        stack.i32_top = base_i + count;
        stack.refs.resize(base_r + code.ref_count as usize, None);
        stack.frames.push(Frame {
            instance,
            function,
            ip: 0,
            base_i,
            base_r,
            site,
        });
        Ok((base_i, base_r))
    }

    fn pop(&mut self, stack: &mut Stack) {
        if let Some(frame) = stack.frames.pop() {
            stack.i32_top = frame.base_i;
            stack.refs.truncate(frame.base_r);
            let code = &self.instances[frame.instance as usize].functions[frame.function as usize];
            self.stack_bytes = self
                .stack_bytes
                .saturating_sub(code.i32_count as usize * 4 + code.ref_count as usize * REF_SLOT);
        }
    }

    fn run(mut self, entry: Entry<'_>, stack: &mut Stack) -> Result<Vec<Value>, VmError> {
        let (bi, br) = self.push(stack, entry.instance, entry.function, ENTRY, None)?;
        let code = &self.instances[entry.instance as usize].functions[entry.function as usize];
        let entry_cost = u64::from(code.entry_cost);
        if self.fuel < entry_cost {
            let instance = &self.instances[entry.instance as usize];
            return Err(out_of_fuel(self.limits, instance, code, 0));
        }
        self.fuel -= entry_cost;
        for (value, &(kind, slot)) in entry.args.iter().zip(&code.params) {
            let slot = usize::from(slot);
            match (value, kind) {
                (Value::I32(v), _) => stack.i32s[bi + slot] = *v as u32,
                (Value::F32(v), _) => stack.i32s[bi + slot] = v.to_bits(),
                (Value::I64(v), _) => write64(&mut stack.i32s, bi + slot, *v as u64),
                (Value::F64(v), _) => write64(&mut stack.i32s, bi + slot, v.to_bits()),
                (Value::Ref(r), _) => stack.refs[br + slot] = r.clone(),
            }
        }
        self.execute(stack)
    }

    #[allow(clippy::too_many_lines)]
    fn execute(&mut self, stack: &mut Stack) -> Result<Vec<Value>, VmError> {
        let instances = self.instances;
        'frames: loop {
            let Some(frame) = stack.frames.last() else {
                return Ok(Vec::new());
            };
            let instance_index = frame.instance;
            let instance = &instances[instance_index as usize];
            let code: &FunctionCode = &instance.functions[frame.function as usize];
            let bi = frame.base_i;
            let br = frame.base_r;
            let mut ip = frame.ip as usize;
            let mut fuel = self.fuel;
            // The frame's registers as slices: indices are frame-relative from here on.
            let (frame_bi, frame_br) = (bi, br);
            let Ok(regs) =
                <&mut [u32; WINDOW]>::try_from(&mut stack.i32s[frame_bi..frame_bi + WINDOW])
            else {
                return Err(locate(
                    trap(TrapKind::Unsupported, "register window out of range"),
                    instance,
                    code,
                    ip,
                ));
            };
            let refs = &mut stack.refs[frame_br..];
            let (bi, br) = (0usize, 0usize);
            let ftz = self.limits.flush_denormals;

            macro_rules! g32 {
                ($r:expr) => {
                    regs[bi + usize::from($r)]
                };
            }
            macro_rules! g64 {
                ($r:expr) => {
                    read64(regs, bi + usize::from($r))
                };
            }
            macro_rules! s64 {
                ($r:expr, $v:expr) => {{
                    let v: u64 = $v;
                    write64(regs, bi + usize::from($r), v)
                }};
            }
            macro_rules! f32r {
                ($r:expr) => {
                    f32::from_bits(g32!($r))
                };
            }
            macro_rules! f64r {
                ($r:expr) => {
                    f64::from_bits(g64!($r))
                };
            }
            // Float arithmetic operands and results, flushed when the limits say so.
            macro_rules! fz32 {
                ($v:expr) => {{
                    let v: f32 = $v;
                    if ftz { ops::flush_f32(v) } else { v }
                }};
            }
            macro_rules! fz64 {
                ($v:expr) => {{
                    let v: f64 = $v;
                    if ftz { ops::flush_f64(v) } else { v }
                }};
            }
            macro_rules! tri {
                ($e:expr) => {
                    match $e {
                        Ok(v) => v,
                        Err(fault) => {
                            return Err(locate(Fault::from(fault), instance, code, ip - 1))
                        }
                    }
                };
            }
            macro_rules! fault {
                ($e:expr) => {
                    return Err(locate($e, instance, code, ip - 1))
                };
            }

            let insts: &[Inst] = &code.insts;
            macro_rules! charge {
                ($cost:expr) => {{
                    let cost = u64::from($cost);
                    if fuel < cost {
                        return Err(out_of_fuel(self.limits, instance, code, ip - 1));
                    }
                    fuel -= cost;
                }};
            }
            macro_rules! branch {
                ($edge:expr) => {{
                    let edge = code.edges[$edge as usize];
                    charge!(edge.cost);
                    ip = take_edge(code, regs, refs, bi, br, edge);
                }};
            }

            loop {
                let Some(&inst) = insts.get(ip) else {
                    // The verifier ends every block with a terminator; this cannot happen.
                    return Err(locate(
                        trap(TrapKind::Unsupported, "ran past the end of the function"),
                        instance,
                        code,
                        ip.saturating_sub(1),
                    ));
                };
                ip += 1;
                match inst {
                    Inst::GlobalLoad32 { offset, d } => {
                        let v = instance
                            .globals
                            .load::<4>(offset as usize)
                            .unwrap_or_default();
                        g32!(d) = u32::from_le_bytes(v);
                    }
                    Inst::GlobalStore32 { offset, s } => {
                        instance
                            .globals
                            .store(offset as usize, g32!(s).to_le_bytes());
                    }
                    Inst::GlobalLoad64 { offset, d } => {
                        let v = instance
                            .globals
                            .load::<8>(offset as usize)
                            .unwrap_or_default();
                        s64!(d, u64::from_le_bytes(v));
                    }
                    Inst::GlobalStore64 { offset, s } => {
                        instance
                            .globals
                            .store(offset as usize, g64!(s).to_le_bytes());
                    }
                    Inst::GlobalLoadInd32 { o, d } => {
                        let offset = g32!(o);
                        let Some(v) = instance.globals.load::<4>(offset as usize) else {
                            fault!(global_range(offset, 4, instance));
                        };
                        g32!(d) = u32::from_le_bytes(v);
                    }
                    Inst::GlobalStoreInd32 { o, s } => {
                        let offset = g32!(o);
                        if instance
                            .globals
                            .store(offset as usize, g32!(s).to_le_bytes())
                            .is_none()
                        {
                            fault!(global_range(offset, 4, instance));
                        }
                    }
                    Inst::GlobalLoadInd64 { o, d } => {
                        let offset = g32!(o);
                        let Some(v) = instance.globals.load::<8>(offset as usize) else {
                            fault!(global_range(offset, 8, instance));
                        };
                        s64!(d, u64::from_le_bytes(v));
                    }
                    Inst::GlobalStoreInd64 { o, s } => {
                        let offset = g32!(o);
                        if instance
                            .globals
                            .store(offset as usize, g64!(s).to_le_bytes())
                            .is_none()
                        {
                            fault!(global_range(offset, 8, instance));
                        }
                    }
                    Inst::GlobalLoadRef { global, ty, d } => {
                        let v = tri!(load_global_ref(instance, global, ty, d.is_move()));
                        refs[br + d.index()] = v;
                    }
                    Inst::GlobalLoadIndRef { o, ty, d } => {
                        let v = tri!(load_global_ref(instance, g32!(o), ty, d.is_move()));
                        refs[br + d.index()] = v;
                    }
                    Inst::GlobalStoreRef { global, ty, s } => {
                        tri!(store_global_ref(instance, refs, br, global, ty, s));
                    }
                    Inst::GlobalStoreIndRef { o, ty, s } => {
                        let global = g32!(o);
                        tri!(store_global_ref(instance, refs, br, global, ty, s));
                    }
                    Inst::Const32 { value, d } => g32!(d) = value,
                    Inst::Const64 { lo, hi, d } => s64!(d, u64::from(lo) | (u64::from(hi) << 32)),
                    Inst::ConstRefZero { d } => refs[br + d.index()] = None,
                    Inst::ConstRefRodata { segment, d } => {
                        let buffer = instance.rodata.get(segment as usize).cloned();
                        refs[br + d.index()] = buffer.map(Ref::Buffer);
                    }
                    Inst::Copy32 { s, d } => g32!(d) = g32!(s),
                    Inst::Copy64 { s, d } => s64!(d, g64!(s)),

                    Inst::ListAlloc { ty, capacity, d } => {
                        let element = match instance.types.get(ty as usize) {
                            Some(VmType::Value(v)) => ElementType::Value(*v),
                            Some(VmType::Ref(r)) => ElementType::Ref(r.clone()),
                            _ => ElementType::Variant,
                        };
                        let list = tri!(VmList::new(element, g32!(capacity) as usize, self.memory));
                        refs[br + d.index()] = Some(Ref::List(Arc::new(list)));
                    }
                    Inst::ListReserve { list, n } => {
                        let l = tri!(list_of(refs, br, list));
                        tri!(l.reserve(g32!(n) as usize));
                    }
                    Inst::ListSize { list, d } => {
                        let l = tri!(list_of(refs, br, list));
                        g32!(d) = l.len() as u32;
                    }
                    Inst::ListResize { list, n } => {
                        let l = tri!(list_of(refs, br, list));
                        tri!(l.resize(g32!(n) as usize));
                    }
                    Inst::ListGetI32 { list, i, d } => {
                        let l = tri!(list_of(refs, br, list));
                        g32!(d) = tri!(l.get_i32(g32!(i))) as u32;
                    }
                    Inst::ListSetI32 { list, i, v } => {
                        let l = tri!(list_of(refs, br, list));
                        tri!(l.set_i32(g32!(i), g32!(v) as i32));
                    }
                    Inst::ListGetI64 { list, i, d } => {
                        let l = tri!(list_of(refs, br, list));
                        s64!(d, tri!(l.get_i64(g32!(i))) as u64);
                    }
                    Inst::ListSetI64 { list, i, v } => {
                        let l = tri!(list_of(refs, br, list));
                        tri!(l.set_i64(g32!(i), g64!(v) as i64));
                    }
                    Inst::ListGetF32 { list, i, d } => {
                        let l = tri!(list_of(refs, br, list));
                        g32!(d) = tri!(l.get_f32(g32!(i))).to_bits();
                    }
                    Inst::ListSetF32 { list, i, v } => {
                        let l = tri!(list_of(refs, br, list));
                        tri!(l.set_f32(g32!(i), f32r!(v)));
                    }
                    Inst::ListGetF64 { list, i, d } => {
                        let l = tri!(list_of(refs, br, list));
                        s64!(d, tri!(l.get_f64(g32!(i))).to_bits());
                    }
                    Inst::ListSetF64 { list, i, v } => {
                        let l = tri!(list_of(refs, br, list));
                        tri!(l.set_f64(g32!(i), f64r!(v)));
                    }
                    Inst::ListGetRef { list, i, ty, d } => {
                        let l = tri!(list_of(refs, br, list));
                        let v = tri!(l.get_ref(g32!(i), d.is_move()));
                        let ok = instance
                            .types
                            .get(ty as usize)
                            .is_some_and(|t| type_check(v.as_ref(), t));
                        refs[br + d.index()] = if ok { v } else { None };
                    }
                    Inst::ListSetRef { list, i, v } => {
                        let l = tri!(list_of(refs, br, list));
                        let value = read_ref(refs, br, v);
                        let index = g32!(i);
                        if let Err(e) = l.set_ref(index, value.clone()) {
                            // Nothing changes on failure: put a moved value back.
                            if v.is_move() {
                                refs[br + v.index()] = value;
                            }
                            fault!(Fault::from(e));
                        }
                    }

                    Inst::Select32 { c, t, f, d } => {
                        g32!(d) = if g32!(c) != 0 { g32!(t) } else { g32!(f) };
                    }
                    Inst::Select64 { c, t, f, d } => {
                        let v = if g32!(c) != 0 { g64!(t) } else { g64!(f) };
                        s64!(d, v);
                    }
                    Inst::SelectRef { c, ty, t, f, d } => {
                        let (pick, other) = if g32!(c) != 0 { (t, f) } else { (f, t) };
                        let ty = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
                        if !type_check(refs[br + pick.index()].as_ref(), ty) {
                            fault!(type_mismatch(refs[br + pick.index()].as_ref(), ty));
                        }
                        let v = read_ref(refs, br, pick);
                        if other.is_move() && other.index() != d.index() {
                            refs[br + other.index()] = None;
                        }
                        refs[br + d.index()] = v;
                    }
                    Inst::Switch32 {
                        index,
                        default,
                        values,
                        d,
                    } => {
                        let i = g32!(index) as i32;
                        let list = &code.regs[values.range()];
                        let v = match usize::try_from(i).ok().and_then(|i| list.get(i)) {
                            Some(&r) => g32!(r),
                            None => g32!(default),
                        };
                        g32!(d) = v;
                    }
                    Inst::SwitchI64 {
                        index,
                        default,
                        values,
                        d,
                    } => {
                        let i = g32!(index) as i32;
                        let list = &code.regs[values.range()];
                        let v = match usize::try_from(i).ok().and_then(|i| list.get(i)) {
                            Some(&r) => g32!(r) as i32 as i64 as u64,
                            None => g64!(default),
                        };
                        s64!(d, v);
                    }
                    Inst::Switch64 {
                        index,
                        default,
                        values,
                        d,
                    } => {
                        let i = g32!(index) as i32;
                        let list = &code.regs[values.range()];
                        let v = match usize::try_from(i).ok().and_then(|i| list.get(i)) {
                            Some(&r) => g64!(r),
                            None => g64!(default),
                        };
                        s64!(d, v);
                    }
                    Inst::SwitchRef { table } => {
                        let s = &code.switch_refs[table as usize];
                        let i = g32!(s.index) as i32;
                        let pick = usize::try_from(i)
                            .ok()
                            .and_then(|i| s.values.get(i))
                            .copied()
                            .unwrap_or(s.default);
                        let ty = instance.types.get(s.ty as usize).unwrap_or(&VmType::Opaque);
                        if !type_check(refs[br + pick.index()].as_ref(), ty) {
                            fault!(type_mismatch(refs[br + pick.index()].as_ref(), ty));
                        }
                        let v = read_ref(refs, br, pick);
                        refs[br + s.result.index()] = v;
                    }

                    Inst::AddI32 { a, b, d } => g32!(d) = g32!(a).wrapping_add(g32!(b)),
                    Inst::SubI32 { a, b, d } => g32!(d) = g32!(a).wrapping_sub(g32!(b)),
                    Inst::AddI64 { a, b, d } => s64!(d, g64!(a).wrapping_add(g64!(b))),
                    Inst::CmpEqI32 { a, b, d } => g32!(d) = u32::from(g32!(a) == g32!(b)),
                    Inst::CmpLtI32S { a, b, d } => {
                        g32!(d) = u32::from((g32!(a) as i32) < (g32!(b) as i32));
                    }
                    Inst::NzI32 { a, d } => g32!(d) = u32::from(g32!(a) != 0),
                    Inst::Bin32 { op, a, b, d } => {
                        g32!(d) = ops::bin_i32(op, g32!(a) as i32, g32!(b) as i32) as u32;
                    }
                    Inst::Bin64 { op, a, b, d } => {
                        s64!(d, ops::bin_i64(op, g64!(a) as i64, g64!(b) as i64) as u64);
                    }
                    Inst::Div32 { op, a, b, d } => {
                        let v = tri!(div_i32(op, g32!(a) as i32, g32!(b) as i32));
                        g32!(d) = v as u32;
                    }
                    Inst::Div64 { op, a, b, d } => {
                        let v = tri!(div_i64(op, g64!(a) as i64, g64!(b) as i64));
                        s64!(d, v as u64);
                    }
                    Inst::Fma32 { a, b, c, d } => {
                        g32!(d) = g32!(a).wrapping_mul(g32!(b)).wrapping_add(g32!(c));
                    }
                    Inst::Fma64 { a, b, c, d } => {
                        s64!(d, g64!(a).wrapping_mul(g64!(b)).wrapping_add(g64!(c)));
                    }
                    Inst::Un32 { op, a, d } => {
                        let x = g32!(a);
                        g32!(d) = match op {
                            IUn::Not => !x,
                            IUn::Ctlz => x.leading_zeros(),
                            IUn::Abs => (x as i32).wrapping_abs() as u32,
                            IUn::TruncI8 | IUn::ExtI8U => x & 0xFF,
                            IUn::TruncI16 | IUn::ExtI16U => x & 0xFFFF,
                            IUn::ExtI8S => x as u8 as i8 as i32 as u32,
                            IUn::ExtI16S => x as u16 as i16 as i32 as u32,
                        };
                    }
                    Inst::Un64 { op, a, d } => {
                        let x = g64!(a);
                        let v = match op {
                            IUn::Not => !x,
                            IUn::Ctlz => u64::from(x.leading_zeros()),
                            IUn::Abs => (x as i64).wrapping_abs() as u64,
                            _ => x,
                        };
                        s64!(d, v);
                    }
                    Inst::Shift32 { op, a, b, d } => {
                        g32!(d) = ops::shift_i32(op, g32!(a) as i32, g32!(b) as i32) as u32;
                    }
                    Inst::Shift64 { op, a, b, d } => {
                        s64!(d, ops::shift_i64(op, g64!(a) as i64, g32!(b) as i32) as u64);
                    }
                    Inst::Cmp32 { op, a, b, d } => {
                        g32!(d) = u32::from(ops::cmp_i32(op, g32!(a) as i32, g32!(b) as i32));
                    }
                    Inst::Cmp64 { op, a, b, d } => {
                        g32!(d) = u32::from(ops::cmp_i64(op, g64!(a) as i64, g64!(b) as i64));
                    }
                    Inst::Conv { op, a, d } => match op {
                        Conv::TruncI64I32 => g32!(d) = g64!(a) as u32,
                        Conv::ExtI32I64S => s64!(d, g32!(a) as i32 as i64 as u64),
                        Conv::ExtI32I64U => s64!(d, u64::from(g32!(a))),
                        Conv::NzI64 => g32!(d) = u32::from(g64!(a) != 0),
                        Conv::Si32F32 => g32!(d) = (g32!(a) as i32 as f32).to_bits(),
                        Conv::Ui32F32 => g32!(d) = (g32!(a) as f32).to_bits(),
                        Conv::F32I32 => g32!(d) = ops::cast_f32_i32(f32r!(a)) as u32,
                        Conv::F32Si64 => s64!(d, ops::llround_f32(f32r!(a)) as u64),
                        Conv::F32Ui64 => s64!(d, ops::cast_f32_ui64(f32r!(a))),
                        Conv::Si64F32 => g32!(d) = (g64!(a) as i64 as f32).to_bits(),
                        Conv::Ui64F32 => g32!(d) = (g64!(a) as f32).to_bits(),
                        Conv::F64F32 => g32!(d) = fz32!(fz64!(f64r!(a)) as f32).to_bits(),
                        Conv::F32F64 => s64!(d, f64::from(fz32!(f32r!(a))).to_bits()),
                        Conv::Si32F64 => s64!(d, f64::from(g32!(a) as i32).to_bits()),
                        Conv::Ui32F64 => s64!(d, f64::from(g32!(a)).to_bits()),
                        Conv::F64I32 => g32!(d) = ops::cast_f64_i32(f64r!(a)) as u32,
                        Conv::Si64F64 => s64!(d, (g64!(a) as i64 as f64).to_bits()),
                        Conv::Ui64F64 => s64!(d, (g64!(a) as f64).to_bits()),
                        Conv::F64I64 => s64!(d, ops::llround_f64(f64r!(a)) as u64),
                        Conv::NanF32 => g32!(d) = u32::from(f32r!(a).is_nan()),
                        Conv::NanF64 => g32!(d) = u32::from(f64r!(a).is_nan()),
                    },
                    Inst::CmpEqRef { a, b, d } => {
                        g32!(d) = u32::from(refs[br + a.index()] == refs[br + b.index()]);
                    }
                    Inst::CmpNeRef { a, b, d } => {
                        g32!(d) = u32::from(refs[br + a.index()] != refs[br + b.index()]);
                    }
                    Inst::CmpNzRef { a, d } => {
                        g32!(d) = u32::from(refs[br + a.index()].is_some());
                    }

                    Inst::BinF32 { op, a, b, d } => {
                        let r = ops::bin_f32(op, fz32!(f32r!(a)), fz32!(f32r!(b)));
                        g32!(d) = fz32!(r).to_bits();
                    }
                    Inst::BinF64 { op, a, b, d } => {
                        let r = ops::bin_f64(op, fz64!(f64r!(a)), fz64!(f64r!(b)));
                        s64!(d, fz64!(r).to_bits());
                    }
                    // abs and neg are sign-bit operations, which flushing leaves alone.
                    Inst::UnF32 { op, a, d } => {
                        g32!(d) = match op {
                            FUn::Abs | FUn::Neg => ops::un_f32(op, f32r!(a)),
                            _ => fz32!(ops::un_f32(op, fz32!(f32r!(a)))),
                        }
                        .to_bits();
                    }
                    Inst::UnF64 { op, a, d } => {
                        let r = match op {
                            FUn::Abs | FUn::Neg => ops::un_f64(op, f64r!(a)),
                            _ => fz64!(ops::un_f64(op, fz64!(f64r!(a)))),
                        };
                        s64!(d, r.to_bits());
                    }
                    Inst::FmaF32 { a, b, c, d } => {
                        // Unfused, as the reference's x86-64 build.
                        let product = fz32!(fz32!(f32r!(a)) * fz32!(f32r!(b)));
                        g32!(d) = fz32!(product + fz32!(f32r!(c))).to_bits();
                    }
                    Inst::FmaF64 { a, b, c, d } => {
                        let product = fz64!(fz64!(f64r!(a)) * fz64!(f64r!(b)));
                        s64!(d, fz64!(product + fz64!(f64r!(c))).to_bits());
                    }
                    Inst::CmpF32 { op, a, b, d } => {
                        g32!(d) = u32::from(ops::cmp_f32(op, fz32!(f32r!(a)), fz32!(f32r!(b))));
                    }
                    Inst::CmpF64 { op, a, b, d } => {
                        g32!(d) = u32::from(ops::cmp_f64(op, fz64!(f64r!(a)), fz64!(f64r!(b))));
                    }

                    Inst::Br { edge } => branch!(edge),
                    Inst::CondBr { c, t, f } => {
                        let edge = if g32!(c) != 0 { t } else { f };
                        branch!(edge);
                    }
                    Inst::BrTable { index, table } => {
                        let table = &code.tables[table as usize];
                        let i = g32!(index) as i32;
                        let edge = usize::try_from(i)
                            .ok()
                            .and_then(|i| table.cases.get(i))
                            .copied()
                            .unwrap_or(table.default);
                        branch!(edge);
                    }
                    Inst::Call { site } => {
                        let call = &code.calls[site as usize];
                        let (callee_instance, callee) = match call.callee {
                            Callee::Internal(f) => (instance_index, f),
                            Callee::Import(i) => match instance.imports.get(i as usize) {
                                Some(ImportTarget::Bytecode { instance, function }) => {
                                    (*instance, *function)
                                }
                                Some(ImportTarget::Native {
                                    module,
                                    index,
                                    name,
                                }) => {
                                    charge!(call.cost);
                                    let args = native_args(call, regs, refs, bi, br);
                                    let results = match module.call(*index, &args) {
                                        Ok(results) => results,
                                        Err(e) => {
                                            return Err(VmError::Native {
                                                function: name.clone(),
                                                status: e.status,
                                                message: e.message,
                                            });
                                        }
                                    };
                                    if results.len() != call.results.len() {
                                        fault!(trap(
                                            TrapKind::BadNativeResults,
                                            format!(
                                                "{name} returned {} values, expected {}",
                                                results.len(),
                                                call.results.len()
                                            )
                                        ));
                                    }
                                    for (value, &(kind, r)) in
                                        results.into_iter().zip(call.results.iter())
                                    {
                                        let slot = bi + usize::from(r);
                                        match (kind, value) {
                                            (Kind::I32, Value::I32(v)) => regs[slot] = v as u32,
                                            (Kind::F32, Value::F32(v)) => regs[slot] = v.to_bits(),
                                            (Kind::I64, Value::I64(v)) => {
                                                write64(regs, slot, v as u64)
                                            }
                                            (Kind::F64, Value::F64(v)) => {
                                                write64(regs, slot, v.to_bits())
                                            }
                                            (Kind::Ref, Value::Ref(v)) => {
                                                refs[br + RefReg(r).index()] = v
                                            }
                                            (kind, value) => fault!(trap(
                                                TrapKind::BadNativeResults,
                                                format!(
                                                    "{name} returned a {} where a {} is expected",
                                                    value.kind_name(),
                                                    kind.name()
                                                )
                                            )),
                                        }
                                    }
                                    if let Some(then) = call.then {
                                        ip = then as usize;
                                    }
                                    continue;
                                }
                                _ => fault!(trap(
                                    TrapKind::UnresolvedImport,
                                    format!("import #{i} is not resolved")
                                )),
                            },
                        };
                        let callee_code =
                            &instances[callee_instance as usize].functions[callee as usize];
                        charge!(u64::from(call.cost) + u64::from(callee_code.entry_cost));
                        // Save the caller's place and enter the callee.
                        if let Some(frame) = stack.frames.last_mut() {
                            frame.ip = ip as u32;
                        }
                        self.fuel = fuel;
                        let at = Some(location(instance, code, ip - 1));
                        let (nbi, nbr) = self.push(stack, callee_instance, callee, site, at)?;
                        let regs = &mut stack.i32s;
                        let refs = &mut stack.refs;
                        for arg in call.args.iter() {
                            if let ArgOp::Value { kind, src, dst } = *arg {
                                let (s, t) = (frame_bi + usize::from(src), nbi + usize::from(dst));
                                match kind {
                                    Kind::I32 | Kind::F32 => regs[t] = regs[s],
                                    Kind::I64 | Kind::F64 => {
                                        regs[t] = regs[s];
                                        regs[t + 1] = regs[s + 1];
                                    }
                                    Kind::Ref => {
                                        let v = read_ref(refs, frame_br, RefReg(src));
                                        refs[t - nbi + nbr] = v;
                                    }
                                }
                            }
                        }
                        continue 'frames;
                    }
                    Inst::Return { results } => {
                        let returns = &code.returns[results.range()];
                        let depth = stack.frames.len();
                        let site = stack.frames.last().map_or(ENTRY, |f| f.site);
                        if site == ENTRY || depth < 2 {
                            let values = returns
                                .iter()
                                .map(|&(kind, r)| match kind {
                                    Kind::I32 => Value::I32(g32!(r) as i32),
                                    Kind::F32 => Value::F32(f32r!(r)),
                                    Kind::I64 => Value::I64(g64!(r) as i64),
                                    Kind::F64 => Value::F64(f64r!(r)),
                                    Kind::Ref => Value::Ref(read_ref(refs, br, RefReg(r))),
                                })
                                .collect();
                            self.pop(stack);
                            return Ok(values);
                        }
                        let caller = &stack.frames[depth - 2];
                        let (cbi, cbr) = (caller.base_i, caller.base_r);
                        let caller_code = &instances[caller.instance as usize].functions
                            [caller.function as usize];
                        let call = &caller_code.calls[site as usize];
                        let (caller_regs, callee_regs) = stack.i32s.split_at_mut(frame_bi);
                        let (caller_refs, callee_refs) = stack.refs.split_at_mut(frame_br);
                        for (&(kind, src), &(_, dst)) in returns.iter().zip(call.results.iter()) {
                            let (s, t) = (usize::from(src), cbi + usize::from(dst));
                            match kind {
                                Kind::I32 | Kind::F32 => caller_regs[t] = callee_regs[s],
                                Kind::I64 | Kind::F64 => {
                                    caller_regs[t] = callee_regs[s];
                                    caller_regs[t + 1] = callee_regs[s + 1];
                                }
                                Kind::Ref => {
                                    let v = read_ref(callee_refs, 0, RefReg(src));
                                    caller_refs[cbr + RefReg(dst).index()] = v;
                                }
                            }
                        }
                        self.fuel = fuel;
                        if let Some(then) = call.then {
                            stack.frames[depth - 2].ip = then;
                        }
                        self.pop(stack);
                        continue 'frames;
                    }
                    Inst::Fail { status, message } => {
                        let code_value = g32!(status);
                        let message = code
                            .strings
                            .get(message as usize)
                            .cloned()
                            .unwrap_or_default();
                        if code_value == 0 {
                            fault!(trap(TrapKind::FailWithOk, message));
                        }
                        return Err(VmError::Fail {
                            code: code_value,
                            message,
                            location: location(instance, code, ip - 1),
                        });
                    }
                    Inst::ImportResolved { import, d } => {
                        let resolved = !matches!(
                            instance.imports.get(import as usize),
                            None | Some(ImportTarget::Unresolved)
                        );
                        g32!(d) = u32::from(resolved);
                    }
                    // A yield suspends the invocation until the host resumes it. pactum's hosts
                    // are synchronous (the local device finishes work before returning), so
                    // the invocation resumes at once: the yield's remap, then its target.
                    Inst::Yield { edge } => branch!(edge),
                    Inst::ReleaseMoved { regs: list } => {
                        for &r in &code.regs[list.range()] {
                            if r & 0xC000 == 0xC000 {
                                refs[br + RefReg(r).index()] = None;
                            }
                        }
                    }
                    Inst::DiscardRefs { regs: list } => {
                        for &r in &code.regs[list.range()] {
                            refs[br + RefReg(r).index()] = None;
                        }
                    }
                    Inst::AssignRef { s, d } => {
                        if s.index() != d.index() {
                            let v = read_ref(refs, br, s);
                            refs[br + d.index()] = v;
                        }
                    }
                    Inst::CastAnyRef { s, ty, d } => {
                        let t = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
                        if !type_check(refs[br + s.index()].as_ref(), t) {
                            fault!(type_mismatch(refs[br + s.index()].as_ref(), t));
                        }
                        if s.index() != d.index() {
                            let v = read_ref(refs, br, s);
                            refs[br + d.index()] = v;
                        }
                    }

                    Inst::BufferLoad { width, b, o, d } => {
                        let buffer = tri!(buffer_of(refs, br, b));
                        let at = tri!(element_offset(g64!(o), width.size()));
                        match width {
                            Width::U8 => g32!(d) = u32::from(tri!(buffer.load::<1>(at))[0]),
                            Width::S8 => {
                                g32!(d) = tri!(buffer.load::<1>(at))[0] as i8 as i32 as u32
                            }
                            Width::U16 => {
                                g32!(d) = u32::from(u16::from_le_bytes(tri!(buffer.load::<2>(at))))
                            }
                            Width::S16 => {
                                g32!(d) =
                                    i16::from_le_bytes(tri!(buffer.load::<2>(at))) as i32 as u32
                            }
                            Width::B32 => g32!(d) = u32::from_le_bytes(tri!(buffer.load::<4>(at))),
                            Width::B64 => s64!(d, u64::from_le_bytes(tri!(buffer.load::<8>(at)))),
                        }
                    }
                    Inst::BufferStore { width, b, o, v } => {
                        let buffer = tri!(buffer_of(refs, br, b));
                        let at = tri!(element_offset(g64!(o), width.size()));
                        let bytes = g64!(v).to_le_bytes();
                        let value = if width == Width::B64 {
                            bytes
                        } else {
                            (g32!(v) as u64).to_le_bytes()
                        };
                        tri!(buffer.write(at, &value[..width.size() as usize]));
                    }
                    Inst::BufferFill { width, b, o, n, v } => {
                        let buffer = tri!(buffer_of(refs, br, b));
                        let size = width.size();
                        let at = tri!(element_offset(g64!(o), size));
                        let value = if width == Width::B64 {
                            g64!(v)
                        } else {
                            u64::from(g32!(v))
                        };
                        let pattern = value.to_le_bytes();
                        tri!(buffer.fill(at, g64!(n), &pattern[..size as usize]));
                    }
                    Inst::BufferAlloc { len, align, d } => {
                        tri!(check_alignment(g32!(align)));
                        let size = tri!(host_size(g64!(len)));
                        let buffer = tri!(VmBuffer::zeroed(size, self.memory));
                        refs[br + d.index()] = Some(Ref::Buffer(Arc::new(buffer)));
                    }
                    Inst::BufferClone {
                        src,
                        o,
                        len,
                        align,
                        d,
                    } => {
                        let source = tri!(buffer_of(refs, br, src));
                        tri!(check_alignment(g32!(align)));
                        let copy = tri!(source.clone_range(g64!(o), g64!(len), self.memory));
                        refs[br + d.index()] = Some(Ref::Buffer(Arc::new(copy)));
                    }
                    Inst::BufferLength { b, d } => {
                        let buffer = tri!(buffer_of(refs, br, b));
                        s64!(d, buffer.len() as u64);
                    }
                    Inst::BufferCopy {
                        src,
                        so,
                        dst,
                        o,
                        len,
                    } => {
                        let source = tri!(buffer_of(refs, br, src));
                        let target = tri!(buffer_of(refs, br, dst));
                        tri!(VmBuffer::copy(
                            &source,
                            g64!(so),
                            &target,
                            g64!(o),
                            g64!(len)
                        ));
                    }
                    Inst::BufferCompare {
                        a,
                        ao,
                        b,
                        bo,
                        len,
                        d,
                    } => {
                        let lhs = tri!(buffer_of(refs, br, a));
                        let rhs = tri!(buffer_of(refs, br, b));
                        let equal =
                            tri!(VmBuffer::compare(&lhs, g64!(ao), &rhs, g64!(bo), g64!(len)));
                        g32!(d) = u32::from(equal);
                    }
                    Inst::BufferHash { b, o, len, d } => {
                        let buffer = tri!(buffer_of(refs, br, b));
                        s64!(d, tri!(buffer.hash(g64!(o), g64!(len))));
                    }
                }
            }
        }
    }
}

#[cold]
#[inline(never)]
fn out_of_fuel(limits: &Limits, instance: &Instance, code: &FunctionCode, ip: usize) -> VmError {
    VmError::BudgetExhausted {
        kind: BudgetKind::Fuel,
        limit: limits.fuel.unwrap_or(u64::MAX),
        location: Some(location(instance, code, ip)),
    }
}

#[inline]
fn read64(regs: &[u32], at: usize) -> u64 {
    u64::from(regs[at]) | (u64::from(regs[at + 1]) << 32)
}

#[inline]
fn write64(regs: &mut [u32], at: usize, v: u64) {
    regs[at] = v as u32;
    regs[at + 1] = (v >> 32) as u32;
}

/// Applies an edge's remap in order and returns the instruction to continue at.
#[inline(always)]
fn take_edge(
    code: &FunctionCode,
    regs: &mut [u32; WINDOW],
    refs: &mut [Option<Ref>],
    bi: usize,
    br: usize,
    edge: Edge,
) -> usize {
    if edge.moves.len != 0 {
        for &m in &code.moves[edge.moves.range()] {
            match m {
                Move::I32 { src, dst } => regs[bi + usize::from(dst)] = regs[bi + usize::from(src)],
                Move::Ref { src, dst } => move_ref(refs, br, src, dst),
            }
        }
    }
    edge.target as usize
}

#[inline(never)]
fn move_ref(refs: &mut [Option<Ref>], br: usize, src: RefReg, dst: RefReg) {
    if src.index() != dst.index() {
        let v = read_ref(refs, br, src);
        refs[br + dst.index()] = v;
    }
}

fn native_args(
    call: &CallSite,
    regs: &[u32],
    refs: &mut [Option<Ref>],
    bi: usize,
    br: usize,
) -> Vec<Value> {
    call.args
        .iter()
        .map(|arg| match *arg {
            ArgOp::Count(n) => Value::I32(n as i32),
            ArgOp::Value { kind, src, .. } => {
                let s = bi + usize::from(src);
                match kind {
                    Kind::I32 => Value::I32(regs[s] as i32),
                    Kind::F32 => Value::F32(f32::from_bits(regs[s])),
                    Kind::I64 => Value::I64(read64(regs, s) as i64),
                    Kind::F64 => Value::F64(f64::from_bits(read64(regs, s))),
                    Kind::Ref => Value::Ref(read_ref(refs, br, RefReg(src))),
                }
            }
        })
        .collect()
}

fn global_range(offset: u32, size: u32, instance: &Instance) -> Fault {
    trap(
        TrapKind::OutOfRange,
        format!(
            "global bytes {offset}..{offset}+{size} are outside the module's {} bytes",
            instance.globals.bytes.len()
        ),
    )
}

fn load_global_ref(
    instance: &Instance,
    global: u32,
    ty: u32,
    take: bool,
) -> Result<Option<Ref>, Fault> {
    let mut slots = instance.globals.refs();
    let count = slots.len();
    let Some(slot) = slots.get_mut(global as usize) else {
        return Err(trap(
            TrapKind::OutOfRange,
            format!("ref global {global} is outside the module's {count}"),
        ));
    };
    let ty = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(slot.as_ref(), ty) {
        return Err(type_mismatch(slot.as_ref(), ty));
    }
    Ok(if take { slot.take() } else { slot.clone() })
}

fn store_global_ref(
    instance: &Instance,
    refs: &mut [Option<Ref>],
    br: usize,
    global: u32,
    ty: u32,
    s: RefReg,
) -> Result<(), Fault> {
    let ty = instance.types.get(ty as usize).unwrap_or(&VmType::Opaque);
    if !type_check(refs[br + s.index()].as_ref(), ty) {
        return Err(type_mismatch(refs[br + s.index()].as_ref(), ty));
    }
    let old;
    {
        let mut slots = instance.globals.refs();
        let count = slots.len();
        let Some(slot) = slots.get_mut(global as usize) else {
            return Err(trap(
                TrapKind::OutOfRange,
                format!("ref global {global} is outside the module's {count}"),
            ));
        };
        let value = read_ref(refs, br, s);
        old = std::mem::replace(slot, value);
    }
    drop(old);
    Ok(())
}

fn div_i32(op: IDiv, a: i32, b: i32) -> Result<i32, Fault> {
    if b == 0 {
        return Err(trap(TrapKind::DivisionByZero, format!("{a} / 0")));
    }
    Ok(match op {
        IDiv::DivS => a
            .checked_div(b)
            .ok_or_else(|| trap(TrapKind::DivisionOverflow, format!("{a} / {b}")))?,
        IDiv::RemS => a
            .checked_rem(b)
            .ok_or_else(|| trap(TrapKind::DivisionOverflow, format!("{a} % {b}")))?,
        IDiv::DivU => ((a as u32) / (b as u32)) as i32,
        IDiv::RemU => ((a as u32) % (b as u32)) as i32,
    })
}

fn div_i64(op: IDiv, a: i64, b: i64) -> Result<i64, Fault> {
    if b == 0 {
        return Err(trap(TrapKind::DivisionByZero, format!("{a} / 0")));
    }
    Ok(match op {
        IDiv::DivS => a
            .checked_div(b)
            .ok_or_else(|| trap(TrapKind::DivisionOverflow, format!("{a} / {b}")))?,
        IDiv::RemS => a
            .checked_rem(b)
            .ok_or_else(|| trap(TrapKind::DivisionOverflow, format!("{a} % {b}")))?,
        IDiv::DivU => ((a as u64) / (b as u64)) as i64,
        IDiv::RemU => ((a as u64) % (b as u64)) as i64,
    })
}
