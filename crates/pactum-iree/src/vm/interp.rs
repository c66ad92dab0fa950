//! The interpreter: runs pre-decoded functions of linked module instances.
//!
//! The loop keeps no byte parsing and re-checks nothing the verifier proved: register fields
//! index the frame's slots directly (safe indexing, in bounds by construction), branch
//! targets are instruction indices. What only run time can know is checked here with
//! checked arithmetic: buffer and list ranges, indirect globals, null and mistyped
//! references, integer division, and the budgets.
//!
//! This file holds the loop (the frames and their push and pop are `interp/frames.rs`): one
//! `match` over [`Inst`] with an arm per variant
//! (so a variant without a handler does not compile). The handlers live in one file per
//! family of instructions (`interp/*.rs`), as `#[inline(always)]` functions over the frame's
//! [`Registers`]; calls and returns, which switch frames, are the loop's own arms, and the fast
//! loop (`hot.rs`) makes those between functions of one instance that pass no reference,
//! with the same frame push and pop (`push_frame`, `pop_frame`).

mod buffers;
mod compare;
mod constants;
mod control;
mod convert;
mod fault;
mod float;
mod frames;
mod globals;
mod hot;
mod instance;
mod integer;
mod lists;
mod refs;
mod register_ops;
mod registers;
mod select;
// The one module allowed `unsafe`: the fast loop's instruction fetch, its index masked into
// range.
#[allow(unsafe_code)]
pub(super) mod unchecked;

use std::sync::Arc;

use super::code::*;
use super::error::{BudgetKind, FunctionName, Location, TrapKind, VmError};
use super::limits::Limits;
use super::value::Value;
use crate::memory_budget::MemoryBudget;

use control::NativeFailure;
use fault::{Fault, trap};
use frames::FrameBudget;
pub use frames::Stack;
use frames::{ENTRY, NewFrame, pop_frame, push_frame};
pub use instance::{Globals, ImportTarget, Instance};
use register_ops::match_register_ops;
use registers::{Registers, WINDOW, read_ref, write64};

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

impl<'a> Machine<'a> {
    /// Pushes a zeroed frame for `function` of `instance` (whose code is `code`); the caller
    /// fills the arguments, and locates the error when a budget would be exceeded.
    #[inline(always)]
    fn push(
        &mut self,
        stack: &mut Stack,
        code: &FunctionCode,
        instance: u32,
        function: u32,
        site: u32,
    ) -> Result<(usize, usize), FrameBudget> {
        let frame = NewFrame {
            code,
            instance,
            function,
            site,
        };
        push_frame(stack, &mut self.stack_bytes, self.limits, frame)
    }

    #[inline(always)]
    fn pop(&mut self, stack: &mut Stack) {
        pop_frame(stack, &mut self.stack_bytes);
    }

    fn run(mut self, entry: Entry<'_>, stack: &mut Stack) -> Result<Vec<Value>, VmError> {
        let instances = self.instances;
        let code = &instances[entry.instance as usize].functions[entry.function as usize];
        let (bi, br) = self
            .push(stack, code, entry.instance, entry.function, ENTRY)
            .map_err(|exceeded| exceeded.at(None))?;
        let entry_cost = u64::from(code.entry_cost);
        if self.fuel < entry_cost {
            let instance = &instances[entry.instance as usize];
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
        let memory = self.memory;
        // The fast path runs with the FPU's flush when the limits ask for one (see `hot.rs`);
        // this loop flushes in software.
        let ftz = float::Flush::software_if(self.limits.flush_denormals);
        'frames: loop {
            let Some(frame) = stack.frames.last() else {
                return Ok(Vec::new());
            };
            let instance_index = frame.instance;
            let instance = &instances[instance_index as usize];
            let code: &FunctionCode = &instance.functions[frame.function as usize];
            let (frame_bi, frame_br) = (frame.base_i, frame.base_r);
            let mut ip = frame.ip as usize;
            let mut fuel = self.fuel;
            // The frame's registers (operands are frame-relative), taken again after each run
            // of the fast path, which may push and pop frames on the stack.
            let mut r: Registers<'_>;

            // A handler's fault, located at the instruction that raised it.
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
                ($fault:expr) => {
                    return Err(locate($fault, instance, code, ip - 1))
                };
            }
            // Charges `cost`; out of fuel, the error is located at instruction `at` (the
            // running one unless given).
            macro_rules! charge {
                ($cost:expr) => {
                    charge!($cost, ip - 1)
                };
                ($cost:expr, $at:expr) => {{
                    let cost = u64::from($cost);
                    if fuel < cost {
                        return Err(out_of_fuel(self.limits, instance, code, $at));
                    }
                    fuel -= cost;
                }};
            }
            macro_rules! branch {
                ($edge:expr) => {{
                    let edge = code.edges[$edge as usize];
                    charge!(edge.cost);
                    ip = control::take_edge(code, &mut r, edge);
                }};
            }
            // A fused compare-and-branch: the compare ran at `ip - 1`, the `cond_br` it
            // absorbed is at `ip`, where the branch's fuel error is located as before fusion.
            macro_rules! fused_branch {
                ($taken:expr, $t:expr, $f:expr) => {{
                    let to = if $taken { $t } else { $f };
                    charge!(to.cost, ip);
                    ip = usize::from(to.target);
                }};
            }

            let insts: &[Inst] = &code.insts;
            loop {
                // The fast path runs what it can, calls and returns included; it stops before
                // an instruction it leaves to this loop, in this frame or in another one.
                let calls = hot::Calls {
                    instance: instance_index,
                    functions: &instance.functions,
                    stack: &mut *stack,
                    stack_bytes: &mut self.stack_bytes,
                    limits: self.limits,
                };
                let stop = hot::run(calls, code, (frame_bi, frame_br), &mut fuel, ftz, ip);
                if stop.switched {
                    if let Some(frame) = stack.frames.last_mut() {
                        frame.ip = stop.ip as u32;
                    }
                    self.fuel = fuel;
                    continue 'frames;
                }
                ip = stop.ip;
                let Ok(i32s) =
                    <&mut [u32; WINDOW]>::try_from(&mut stack.i32s[frame_bi..frame_bi + WINDOW])
                else {
                    return Err(locate(
                        trap(TrapKind::Unsupported, "register window out of range"),
                        instance,
                        code,
                        ip,
                    ));
                };
                r = Registers {
                    i32s,
                    refs: &mut stack.refs[frame_br..],
                };
                let Some(inst) = insts.get(ip) else {
                    // The verifier ends every block with a terminator; this cannot happen.
                    return Err(locate(
                        trap(TrapKind::Unsupported, "ran past the end of the function"),
                        instance,
                        code,
                        ip.saturating_sub(1),
                    ));
                };
                ip += 1;
                let r = &mut r;
                // Matched in place, so that each arm loads only the fields it uses (copying the
                // whole instruction first made the dispatch load all 16 bytes every time). The
                // register-only instructions are `register_ops.rs`'s rows, shared with the fast
                // path; the arms below are the rest.
                match_register_ops!(match *inst, registers r, ftz ftz {
                    // Globals.
                    Inst::GlobalLoad32 { offset, d } => globals::load32(r, instance, offset, d),
                    Inst::GlobalStore32 { offset, s } => globals::store32(r, instance, offset, s),
                    Inst::GlobalLoad64 { offset, d } => globals::load64(r, instance, offset, d),
                    Inst::GlobalStore64 { offset, s } => globals::store64(r, instance, offset, s),
                    Inst::GlobalLoadInd32 { o, d } => {
                        tri!(globals::load_indirect32(r, instance, o, d))
                    }
                    Inst::GlobalStoreInd32 { o, s } => {
                        tri!(globals::store_indirect32(r, instance, o, s))
                    }
                    Inst::GlobalLoadInd64 { o, d } => {
                        tri!(globals::load_indirect64(r, instance, o, d))
                    }
                    Inst::GlobalStoreInd64 { o, s } => {
                        tri!(globals::store_indirect64(r, instance, o, s))
                    }
                    Inst::GlobalLoadRef { global, ty, d } => {
                        tri!(globals::load_ref(r, instance, global, ty, d))
                    }
                    Inst::GlobalStoreRef { global, ty, s } => {
                        tri!(globals::store_ref(r, instance, global, ty, s))
                    }
                    Inst::GlobalLoadIndRef { o, ty, d } => {
                        tri!(globals::load_indirect_ref(r, instance, o, ty, d))
                    }
                    Inst::GlobalStoreIndRef { o, ty, s } => {
                        tri!(globals::store_indirect_ref(r, instance, o, ty, s))
                    }

                    // Reference constants.
                    Inst::ConstRefZero { d } => constants::const_ref_zero(r, d),
                    Inst::ConstRefRodata { segment, d } => {
                        constants::const_ref_rodata(r, instance, segment, d)
                    }

                    // Lists.
                    Inst::ListAlloc { ty, capacity, d } => {
                        tri!(lists::alloc(r, instance, memory, ty, capacity, d))
                    }
                    Inst::ListReserve { list, n } => tri!(lists::reserve(r, list, n)),
                    Inst::ListSize { list, d } => tri!(lists::size(r, list, d)),
                    Inst::ListResize { list, n } => tri!(lists::resize(r, list, n)),
                    Inst::ListGetI32 { list, i, d } => tri!(lists::get_i32(r, list, i, d)),
                    Inst::ListSetI32 { list, i, v } => tri!(lists::set_i32(r, list, i, v)),
                    Inst::ListGetI64 { list, i, d } => tri!(lists::get_i64(r, list, i, d)),
                    Inst::ListSetI64 { list, i, v } => tri!(lists::set_i64(r, list, i, v)),
                    Inst::ListGetF32 { list, i, d } => tri!(lists::get_f32(r, list, i, d)),
                    Inst::ListSetF32 { list, i, v } => tri!(lists::set_f32(r, list, i, v)),
                    Inst::ListGetF64 { list, i, d } => tri!(lists::get_f64(r, list, i, d)),
                    Inst::ListSetF64 { list, i, v } => tri!(lists::set_f64(r, list, i, v)),
                    Inst::ListGetRef { list, i, ty, d } => {
                        tri!(lists::get_ref(r, instance, list, i, ty, d))
                    }
                    Inst::ListSetRef { list, i, v } => tri!(lists::set_ref(r, list, i, v)),

                    // Selects and switches.
                    Inst::SelectRef { c, ty, t, f, d } => {
                        tri!(select::select_ref(r, instance, c, ty, t, f, d))
                    }
                    Inst::Switch32 {
                        index,
                        default,
                        values,
                        d,
                    } => select::switch32(r, code, index, default, values, d),
                    Inst::SwitchI64 {
                        index,
                        default,
                        values,
                        d,
                    } => select::switch_i64(r, code, index, default, values, d),
                    Inst::Switch64 {
                        index,
                        default,
                        values,
                        d,
                    } => select::switch64(r, code, index, default, values, d),
                    Inst::SwitchRef { table } => {
                        tri!(select::switch_ref(r, instance, code, table))
                    }

                    // Integer division, which traps.
                    Inst::Div32 { op, a, b, d } => tri!(integer::div32(r, op, a, b, d)),
                    Inst::Div64 { op, a, b, d } => tri!(integer::div64(r, op, a, b, d)),

                    // Float functions.
                    Inst::UnF32 { op, a, d } => float::un_f32(r, ftz, op, a, d),
                    Inst::UnF64 { op, a, d } => float::un_f64(r, ftz, op, a, d),
                    Inst::PowiF32 { a, n, d } => float::powi_f32(r, ftz, a, n, d),
                    Inst::PowiF64 { a, n, d } => float::powi_f64(r, ftz, a, n, d),

                    // Control flow.
                    Inst::Br { edge } => branch!(edge),
                    Inst::CondBr { c, t, f } => {
                        let edge = if r.i32(c) != 0 { t } else { f };
                        branch!(edge);
                    }
                    Inst::BrLtI32S { a, b, d, t, f } => {
                        let taken = compare::lt_i32_s(r, a, b, d);
                        fused_branch!(taken, t, f);
                    }
                    Inst::BrLtI64S { a, b, d, t, f } => {
                        let taken = compare::lt_i64_s(r, a, b, d);
                        fused_branch!(taken, t, f);
                    }
                    Inst::BrCmp32 { op, a, b, d, t, f } => {
                        let taken = compare::cmp32(r, op, a, b, d);
                        fused_branch!(taken, t, f);
                    }
                    Inst::BrCmp64 { op, a, b, d, t, f } => {
                        let taken = compare::cmp64(r, op, a, b, d);
                        fused_branch!(taken, t, f);
                    }
                    Inst::BrShort { to } => {
                        charge!(to.cost);
                        ip = usize::from(to.target);
                    }
                    Inst::BrMove1 { to, src, dst } => {
                        charge!(to.cost);
                        r.set_i32(dst, r.i32(src));
                        ip = usize::from(to.target);
                    }
                    Inst::BrMove2 { to, s0, d0, s1, d1 } => {
                        charge!(to.cost);
                        // In the remap's order: the second copy may read the first's result.
                        r.set_i32(d0, r.i32(s0));
                        r.set_i32(d1, r.i32(s1));
                        ip = usize::from(to.target);
                    }
                    Inst::BrMove64 { to, s, d } => {
                        charge!(to.cost);
                        r.set_i64(d, r.i64(s));
                        ip = usize::from(to.target);
                    }
                    Inst::BrMoves { to, moves } => {
                        charge!(to.cost);
                        control::copy(code, r, moves);
                        ip = usize::from(to.target);
                    }
                    Inst::BrMove4 { to, moves } => {
                        charge!(to.cost);
                        control::copy_bytes(r, moves);
                        ip = usize::from(to.target);
                    }
                    // A straight-line superinstruction runs here as its first instruction
                    // alone, and the loop goes on at the next index, where the rest of its
                    // sequence is (see the superinstructions in `code.rs`): the fast path
                    // stopped at it, and each part then raises its own trap at its own index.
                    Inst::AddLoad32 { x, y, o, .. } => {
                        integer::add_i64(r, x, y, o);
                    }
                    Inst::AddAddLoad32 { x, y, t, .. } => {
                        integer::add_i64(r, x, y, t);
                    }
                    Inst::AddAddI64 { a0, b0, d0, .. } => {
                        integer::add_i64(r, a0, b0, d0);
                    }
                    Inst::AddBr { x, y, d, .. } => {
                        integer::add_i64(r, x, y, d);
                    }
                    Inst::AddBrMove64 { x, y, d, .. } => {
                        integer::add_i64(r, x, y, d);
                    }
                    Inst::AddBrMove1 { x, y, d, .. } => {
                        integer::add_i64(r, x, y, d);
                    }
                    Inst::AddI32BrMove4 { a, b, d, .. } => {
                        integer::add_i32(r, a.reg(), b.reg(), d.reg())
                    }
                    Inst::ShlXorI32 { a, s, t, .. } => integer::shift32(r, Shift::Shl, a, s, t),
                    Inst::ShrUXorI32 { a, s, t, .. } => integer::shift32(r, Shift::ShrU, a, s, t),
                    Inst::ExtUAddI64 { a, e, .. } => convert::ext_i32_i64_u(r, a, e),
                    Inst::AndCastF32 { a, b, t, .. } => integer::bin32(r, IBin::And, a, b, t),
                    Inst::MulXorI64 { a, b, t, .. } => integer::bin64(r, IBin::Mul, a, b, t),
                    Inst::FmaAddBrMove1 { a, b, c, d, .. } => {
                        float::fma_f32(r, ftz, a.reg(), b.reg(), c.reg(), d.reg());
                    }
                    Inst::LoadFmaStore32 { b, o, v, .. } => {
                        tri!(buffers::load(r, Width::B32, b, o, v))
                    }
                    Inst::BrTable { index, table } => {
                        let edge = control::table_edge(r, &code.tables[table as usize], index);
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
                                    match control::call_native(
                                        r.reborrow(),
                                        &mut stack.native,
                                        call,
                                        &**module,
                                        *index,
                                        name,
                                    ) {
                                        Ok(()) => {}
                                        Err(NativeFailure::Error(e)) => return Err(e),
                                        Err(NativeFailure::Fault(e)) => fault!(e),
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
                        let (nbi, nbr) =
                            match self.push(stack, callee_code, callee_instance, callee, site) {
                                Ok(bases) => bases,
                                Err(exceeded) => {
                                    return Err(exceeded.at(Some(location(instance, code, ip - 1))));
                                }
                            };
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
                                        let v = read_ref(&mut refs[frame_br..], RefReg(src));
                                        refs[nbr + usize::from(dst)] = v;
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
                                .map(|&(kind, slot)| match kind {
                                    Kind::I32 => Value::I32(r.slot(slot) as i32),
                                    Kind::F32 => Value::F32(f32::from_bits(r.slot(slot))),
                                    Kind::I64 => Value::I64(r.slot64(slot) as i64),
                                    Kind::F64 => Value::F64(f64::from_bits(r.slot64(slot))),
                                    Kind::Ref => Value::Ref(r.read_ref(RefReg(slot))),
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
                                    let v = read_ref(callee_refs, RefReg(src));
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
                        let status = r.i32(status);
                        let message = code
                            .strings
                            .get(message as usize)
                            .cloned()
                            .unwrap_or_default();
                        if status == 0 {
                            fault!(trap(TrapKind::FailWithOk, message));
                        }
                        return Err(VmError::Fail {
                            code: status,
                            message,
                            location: location(instance, code, ip - 1),
                        });
                    }
                    Inst::ImportResolved { import, d } => {
                        let resolved = !matches!(
                            instance.imports.get(import as usize),
                            None | Some(ImportTarget::Unresolved)
                        );
                        r.set_i32(d, u32::from(resolved));
                    }
                    // A yield suspends the invocation until the host resumes it. pactum's hosts
                    // are synchronous (the local device finishes work before returning), so
                    // the invocation resumes at once: the yield's remap, then its target.
                    Inst::Yield { edge } => branch!(edge),

                    // References.
                    Inst::CmpEqRef { a, b, d } => refs::cmp_eq(r, a, b, d),
                    Inst::CmpNeRef { a, b, d } => refs::cmp_ne(r, a, b, d),
                    Inst::CmpNzRef { a, d } => refs::cmp_nz(r, a, d),
                    Inst::ReleaseMoved { regs } => refs::release_moved(r, code, regs),
                    Inst::DiscardRefs { regs } => refs::discard(r, code, regs),
                    Inst::AssignRef { s, d } => refs::assign(r, s, d),
                    Inst::CastAnyRef { s, ty, d } => tri!(refs::cast_any(r, instance, s, ty, d)),

                    // Buffers.
                    Inst::BufferLoad32 { b, o, d } => {
                        tri!(buffers::load(r, Width::B32, b, o, d))
                    }
                    Inst::BufferStore32 { b, o, v } => {
                        tri!(buffers::store(r, Width::B32, b, o, v))
                    }
                    Inst::BufferLoad { width, b, o, d } => tri!(buffers::load(r, width, b, o, d)),
                    Inst::BufferLoad64 { b, o, d } => tri!(buffers::load64(r, b, o, d)),
                    Inst::BufferStore { width, b, o, v } => {
                        tri!(buffers::store(r, width, b, o, v))
                    }
                    Inst::BufferStore64 { b, o, v } => tri!(buffers::store64(r, b, o, v)),
                    Inst::BufferFill { width, b, o, n, v } => {
                        tri!(buffers::fill(r, width, b, o, n, v))
                    }
                    Inst::BufferFill64 { b, o, n, v } => tri!(buffers::fill64(r, b, o, n, v)),
                    Inst::BufferAlloc { len, align, d } => {
                        tri!(buffers::alloc(r, memory, len, align, d))
                    }
                    Inst::BufferClone {
                        src,
                        o,
                        len,
                        align,
                        d,
                    } => tri!(buffers::clone(r, memory, src, o, len, align, d)),
                    Inst::BufferLength { b, d } => tri!(buffers::length(r, b, d)),
                    Inst::BufferCopy {
                        src,
                        so,
                        dst,
                        o,
                        len,
                    } => tri!(buffers::copy(r, src, so, dst, o, len)),
                    Inst::BufferCompare {
                        a,
                        ao,
                        b,
                        bo,
                        len,
                        d,
                    } => tri!(buffers::compare(r, a, ao, b, bo, len, d)),
                    Inst::BufferHash { b, o, len, d } => tri!(buffers::hash(r, b, o, len, d)),
                    // Not among the instructions this loop fetches (the `End` after them is
                    // the fast loop's stop); reported as the fetch past the end above is.
                    Inst::End => {
                        return Err(locate(
                            trap(TrapKind::Unsupported, "ran past the end of the function"),
                            instance,
                            code,
                            ip - 1,
                        ));
                    }
                })
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
