//! The interpreter's fast path: a small loop over the instructions that cannot fail and need
//! nothing but the frame's registers and its function's tables (arithmetic, compares,
//! conversions, selects, constants, copies and branches), and, on their success path, the
//! buffer loads and stores (a vmvx workgroup's inner loops are made of them), integer
//! divisions, and `list.get`/`list.set` of values (so that a loop over a list, or one that
//! divides, does not leave this loop and enter it again at every trip: each entry costs
//! about 70 host instructions), and the superinstructions `fuse.rs` makes of workgroup loops'
//! sequences and of scalar loops' pairs and back edges, run whole here (see their arms).
//!
//! Calls and returns between functions of the running instance whose arguments and results are
//! values (no reference) are made here too ([`run_in`]'s frame loop): a frame's run stops at
//! the call, the callee's frame is pushed exactly as the main loop pushes it (`push_frame`:
//! the same budgets, checked in the same order; the argument copies decided at verification,
//! `CallSite::slot_moves`), and the loop goes on in the callee; a return copies the results,
//! pops the frame (`pop_frame`) and goes on in the caller. A call or return it cannot make
//! (an import, a reference passed, a budget or fuel that would be exceeded, a return from the
//! entry frame or into another instance) stops it with nothing done, and the main loop makes
//! it and reports its errors as before.
//!
//! The main loop (`interp.rs`) matches every instruction, which makes it one large function
//! where the compiler keeps the loop's state (instruction pointer, register window, fuel) in
//! stack slots. This loop is a function of its own, not inlined, small enough that its state
//! stays in machine registers. It runs from `ip` until it reaches an instruction it does not
//! handle, or a branch whose fuel it cannot pay, and returns that instruction's index with
//! nothing of it done: the main loop then runs it (and reports the fault, with its location)
//! exactly as it would have without this loop. So the fast path changes no result, trap,
//! fuel count or location; it only runs the same handlers with fewer stack accesses.
//!
//! The dispatch (fetch, then the `match`'s jump table) is a small block that LLVM copies into
//! the end of every arm, so that each handler jumps to the next from a jump of its own, which
//! the CPU predicts from the handler it ends. LLVM copies this block only because the
//! workspace's `.cargo/config.toml` raises `-tail-dup-succ-size` (see there); keep the block
//! small (no work common to all arms before the `match`), or the copies stop.
//!
//! The loop writes no reference register (the instructions that do, and the edges that move
//! references, are left to the main loop), so a buffer in a reference register stays the same
//! for a whole run of it: each buffer's bytes are resolved once per run ([`BufferViews`]), and
//! a load or store is then one range check and one access.

use super::float::Flush;
use super::frames::{ENTRY, NewFrame, Stack, pop_frame, push_frame};
use super::register_ops::match_register_ops;
use super::registers::{Registers, WINDOW};
use super::{compare, constants, control, convert, float, integer, lists, select};
use crate::fpu::FlushDenormals;
use crate::vm::buffer::BufferView;
use crate::vm::code::{Callee, FunctionCode, IBin, Inst, Kind, RefReg, Shift, Span, Width};
use crate::vm::limits::Limits;
use crate::vm::value::Ref;

/// Slots of [`BufferViews`]: a vmvx workgroup's inner loop reads two or three buffers and
/// writes one.
const VIEW_SLOTS: usize = 4;

/// The views of the buffers in a frame's reference registers, resolved on first use during
/// one run of the loop (which writes no reference register, so they cannot go stale): a
/// direct-mapped cache keyed by the register operand as encoded (its MOVE bit included, which
/// a buffer access never sets: masking it off would cost every access an instruction).
struct BufferViews<'a> {
    refs: &'a [Option<Ref>],
    /// The register operand each slot holds the view of (`u32::MAX`: none).
    regs: [u32; VIEW_SLOTS],
    views: [BufferView<'a>; VIEW_SLOTS],
}

impl<'a> BufferViews<'a> {
    #[inline(always)]
    fn new(refs: &'a [Option<Ref>]) -> Self {
        BufferViews {
            refs,
            regs: [u32::MAX; VIEW_SLOTS],
            views: [BufferView::default(); VIEW_SLOTS],
        }
    }

    /// The view of the buffer in `b`; an empty one when `b` holds no buffer (every access
    /// then stops, and the main loop reports the fault).
    #[inline(always)]
    fn get(&mut self, b: RefReg) -> &BufferView<'a> {
        let slot = usize::from(b.0) % VIEW_SLOTS;
        if self.regs[slot] != u32::from(b.0) {
            self.resolve(b);
        }
        &self.views[slot]
    }

    /// Resolves the view of the buffer in `b` into its slot (out of line: once per buffer and
    /// run, while the loop itself stays small).
    #[cold]
    #[inline(never)]
    fn resolve(&mut self, b: RefReg) {
        let view = match self.refs.get(b.index()) {
            Some(Some(Ref::Buffer(buffer))) => buffer.view(),
            _ => BufferView::default(),
        };
        let slot = usize::from(b.0) % VIEW_SLOTS;
        self.regs[slot] = u32::from(b.0);
        self.views[slot] = view;
    }
}

/// What the fast loop needs to make calls and returns between bytecode functions of the
/// running instance itself: the instance's functions and the invocation's frames and budgets.
pub(super) struct Calls<'a, 's> {
    /// The index of the running instance (the frames the loop pushes are of this instance).
    pub(super) instance: u32,
    /// Its functions, which an internal call site names by ordinal.
    pub(super) functions: &'a [FunctionCode],
    /// The invocation's registers and frames.
    pub(super) stack: &'s mut Stack,
    /// The register bytes the frames hold, against `limits.max_stack_bytes`.
    pub(super) stack_bytes: &'s mut usize,
    /// The frame and register-byte budgets.
    pub(super) limits: &'a Limits,
}

/// Where the fast loop stopped: the index of the instruction it left to the main loop (not
/// yet run), in the top frame, and whether that is another frame than the one it started in
/// (the main loop then reloads its frame).
pub(super) struct Stop {
    pub(super) ip: usize,
    pub(super) switched: bool,
}

/// Runs the instructions of `code` (the top frame's function, its registers at the bases
/// `(i32 slot, ref slot)`) from `ip` while they are on the fast path, following calls to and
/// returns from functions of the same instance that pass no reference; returns where it
/// stopped, with `fuel` charged for the edges and calls taken. `flush`: how the caller
/// flushes subnormal floats to zero (this loop flushes with the FPU, where it can, whenever
/// the caller flushes at all).
#[inline(always)]
pub(super) fn run<'a>(
    calls: Calls<'a, '_>,
    code: &'a FunctionCode,
    bases: (usize, usize),
    fuel: &mut u64,
    flush: Flush,
    ip: usize,
) -> Stop {
    // A loop per mode: the mode is a constant of each, not a value tested at every float
    // instruction.
    if flush != Flush::Off {
        run_in::<true>(calls, code, bases, fuel, ip)
    } else {
        run_in::<false>(calls, code, bases, fuel, ip)
    }
}

/// [`run`], flushing subnormal floats to zero when `FTZ`: with the FPU where this build can
/// set its flush (set here for the run, and restored on every way out: the guard's drop), in
/// software elsewhere.
///
/// A call or a return is a way out of a frame's loop ([`run_frame`]): the loop stops at it,
/// and when the call is to a function of this instance whose arguments and results are values,
/// and its fuel and the frame budgets allow it, it is made here (the same frame push and
/// pop as the main loop's, `push_frame`/`pop_frame`) and the loop goes on in the other frame,
/// without returning to the main loop and entering this one again. Anything else (an import,
/// a reference argument or result, a budget that would be exceeded, a return from the entry
/// frame or to another instance) stops here with nothing done, and the main loop makes it and
/// reports its errors as it always has.
#[inline(never)]
fn run_in<'a, const FTZ: bool>(
    mut calls: Calls<'a, '_>,
    code: &'a FunctionCode,
    bases: (usize, usize),
    fuel: &mut u64,
    start: usize,
) -> Stop {
    let (ftz, _fpu) = if FTZ && FlushDenormals::AVAILABLE {
        (Flush::Hardware, Some(FlushDenormals::on()))
    } else if FTZ {
        (Flush::Software, None)
    } else {
        (Flush::Off, None)
    };
    let (mut code, mut bases, mut ip, mut switched) = (code, bases, start, false);
    loop {
        let stack = &mut *calls.stack;
        let (Some(Ok(i32s)), Some(refs)) = (
            stack
                .i32s
                .get_mut(bases.0..bases.0 + WINDOW)
                .map(<&mut [u32; WINDOW]>::try_from),
            stack.refs.get_mut(bases.1..),
        ) else {
            // Not reached (a frame's window is kept whole); the main loop reports it.
            return Stop { ip, switched };
        };
        ip = run_frame(code, Registers { i32s, refs }, fuel, ftz, ip);
        let next = match code.insts.get(ip) {
            Some(&Inst::Call { site }) => enter_call(&mut calls, code, site, bases.0, ip, fuel),
            Some(&Inst::Return { results }) => return_to_caller(&mut calls, code, results, bases.0),
            _ => None,
        };
        let Some((to, to_bases, to_ip)) = next else {
            return Stop { ip, switched };
        };
        (code, bases, ip, switched) = (to, to_bases, to_ip, true);
    }
}

/// Makes the call at `ip` of `code` (the top frame, its i32 registers at `base`) when the fast
/// loop can: pays for it, pushes the callee's frame and copies the arguments; returns the
/// callee's code, its bases and where it starts. `None`, with nothing done, leaves the call to
/// the main loop.
#[inline(always)]
fn enter_call<'a>(
    calls: &mut Calls<'a, '_>,
    code: &FunctionCode,
    site: u32,
    base: usize,
    ip: usize,
    fuel: &mut u64,
) -> Option<(&'a FunctionCode, (usize, usize), usize)> {
    let call = code.calls.get(site as usize)?;
    let Callee::Internal(function) = call.callee else {
        return None;
    };
    let callee = calls.functions.get(function as usize)?;
    if callee.refs_in_signature {
        return None;
    }
    let cost = u64::from(call.cost) + u64::from(callee.entry_cost);
    if *fuel < cost {
        return None;
    }
    let stack = &mut *calls.stack;
    let frame = NewFrame {
        code: callee,
        instance: calls.instance,
        function,
        site,
    };
    // The caller continues after the call when the callee returns.
    let caller_ip = stack.frames.last().map(|caller| caller.ip);
    if let Some(caller) = stack.frames.last_mut() {
        caller.ip = (ip + 1) as u32;
    }
    let Ok(callee_bases) = push_frame(stack, calls.stack_bytes, calls.limits, frame) else {
        // Left as it was: the main loop makes the call and reports the budget.
        if let (Some(caller), Some(ip)) = (stack.frames.last_mut(), caller_ip) {
            caller.ip = ip;
        }
        return None;
    };
    *fuel -= cost;
    // A function without references in its signature takes none: the slot copies are all of
    // the arguments.
    let regs = &mut stack.i32s;
    for &(src, dst) in call.slot_moves.iter() {
        regs[callee_bases.0 + usize::from(dst)] = regs[base + usize::from(src)];
    }
    Some((callee, callee_bases, 0))
}

/// Makes the return `results` of `code` (the top frame, its i32 registers at `base`) when the
/// fast loop can: copies the results into the caller's registers and pops the frame; returns
/// the caller's code, its bases and where it continues. `None`, with nothing done, leaves the
/// return to the main loop.
#[inline(always)]
fn return_to_caller<'a>(
    calls: &mut Calls<'a, '_>,
    code: &FunctionCode,
    results: Span,
    base: usize,
) -> Option<(&'a FunctionCode, (usize, usize), usize)> {
    if code.refs_in_signature {
        return None;
    }
    let stack = &mut *calls.stack;
    let [.., caller, top] = stack.frames.as_slice() else {
        return None;
    };
    if top.site == ENTRY || caller.instance != calls.instance {
        return None;
    }
    let caller_code = calls.functions.get(caller.function as usize)?;
    let call = caller_code.calls.get(top.site as usize)?;
    let returns = code.returns.get(results.range())?;
    let caller_bases = (caller.base_i, caller.base_r);
    let ip = call.then.unwrap_or(caller.ip) as usize;
    let regs = &mut stack.i32s;
    for (&(kind, src), &(_, dst)) in returns.iter().zip(call.results.iter()) {
        let (s, t) = (base + usize::from(src), caller_bases.0 + usize::from(dst));
        match kind {
            Kind::I32 | Kind::F32 => regs[t] = regs[s],
            Kind::I64 | Kind::F64 => {
                regs[t] = regs[s];
                regs[t + 1] = regs[s + 1];
            }
            // Not a result of a function without references in its signature.
            Kind::Ref => {}
        }
    }
    pop_frame(stack, calls.stack_bytes);
    Some((caller_code, caller_bases, ip))
}

/// Runs the instructions of one frame from `start` while they are on the fast path; returns
/// the index of the first one that is not (not yet run), with `fuel` charged for the edges
/// taken.
#[inline(always)]
fn run_frame(
    code: &FunctionCode,
    r: Registers<'_>,
    fuel: &mut u64,
    ftz: Flush,
    start: usize,
) -> usize {
    // The instruction fetch needs no bounds check: the cursor holds the byte offset of its
    // slot, masked on every move (see `unchecked.rs`), so a fetch is one load and a step an
    // `add` and an `and`. The `End` after the last instruction stops the loop. The index of
    // an instruction (`at.ip()`) is computed only where the loop stops.
    let mut at = code.insts.cursor(start);
    let mut left = *fuel;
    // The reference registers are only read here (by the buffer accesses, through `views`);
    // the handlers get the i32 bank and no reference register.
    let Registers { i32s, refs } = r;
    let refs: &[Option<Ref>] = refs;
    let mut views = BufferViews::new(refs);
    let mut registers = Registers {
        i32s,
        refs: &mut [],
    };
    let r = &mut registers;
    // Charges an edge's `$cost` when it can be paid; otherwise leaves the branch at `$at`
    // (nothing of it done) to the main loop, which reports the exhaustion.
    macro_rules! pay {
        ($cost:expr, $at:expr) => {{
            let cost = u64::from($cost);
            if left < cost {
                break $at;
            }
            left -= cost;
        }};
    }
    // The rest of a fused compare-and-branch, once `$taken` is known: pays for the edge,
    // writes the compare's result to `$d`, and gives the target. The two ways are written
    // out (not one edge chosen, then paid): choosing made the compiler repeat the compare
    // for each field it read.
    macro_rules! fused {
        ($taken:expr, $t:expr, $f:expr, $d:expr) => {{
            if $taken {
                pay!($t.cost, at.ip());
                r.set_i32($d, 1);
                usize::from($t.target)
            } else {
                pay!($f.cost, at.ip());
                r.set_i32($d, 0);
                usize::from($f.target)
            }
        }};
    }
    // Moves to `$target`, the end of a branch that carries its edge (a loop's back edge, most
    // often), and when the instruction there is the loop head's fused compare-and-branch,
    // runs it at once: the trip then dispatches once less, and the head's branch is decided
    // here, where it is predicted on its own. Running it here is what the next dispatch
    // would have done (it pays for its edge or stops at the head with nothing done).
    macro_rules! enter {
        ($target:expr) => {{
            at.jump($target);
            match *at.inst() {
                Inst::BrLtI32S { a, b, d, t, f } => {
                    let taken = (r.i32(a) as i32) < (r.i32(b) as i32);
                    at.jump(fused!(taken, t, f, d));
                }
                Inst::BrLtI64S { a, b, d, t, f } => {
                    let taken = (r.i64(a) as i64) < (r.i64(b) as i64);
                    at.jump(fused!(taken, t, f, d));
                }
                _ => {}
            }
            continue;
        }};
    }
    let stop = loop {
        let inst = at.inst();
        // The register-only instructions are `register_ops.rs`'s rows (shared with the main
        // loop); the arms below are this loop's own.
        match_register_ops!(match *inst, registers r, ftz ftz {
            // An edge that moves references is left to the main loop (see `BufferViews`).
            Inst::Br { edge } => {
                let edge = code.edges[edge as usize];
                if edge.ref_moves.len != 0 {
                    break at.ip();
                }
                pay!(edge.cost, at.ip());
                at.jump(control::take_edge(code, r, edge));
                continue;
            }
            Inst::CondBr { c, t, f } => {
                let edge = code.edges[if r.i32(c) != 0 { t } else { f } as usize];
                if edge.ref_moves.len != 0 {
                    break at.ip();
                }
                pay!(edge.cost, at.ip());
                at.jump(control::take_edge(code, r, edge));
                continue;
            }
            Inst::BrShort { to } => {
                pay!(to.cost, at.ip());
                enter!(usize::from(to.target))
            }
            Inst::BrMove1 { to, src, dst } => {
                pay!(to.cost, at.ip());
                r.set_i32(dst, r.i32(src));
                enter!(usize::from(to.target))
            }
            Inst::BrMove2 { to, s0, d0, s1, d1 } => {
                pay!(to.cost, at.ip());
                r.set_i32(d0, r.i32(s0));
                r.set_i32(d1, r.i32(s1));
                enter!(usize::from(to.target))
            }
            Inst::BrMove64 { to, s, d } => {
                pay!(to.cost, at.ip());
                r.set_i64(d, r.i64(s));
                enter!(usize::from(to.target))
            }
            Inst::BrMoves { to, moves } => {
                pay!(to.cost, at.ip());
                control::copy(code, r, moves);
                enter!(usize::from(to.target))
            }
            Inst::BrMove4 { to, moves } => {
                pay!(to.cost, at.ip());
                control::copy_bytes(r, moves);
                enter!(usize::from(to.target))
            }
            // A fused compare-and-branch tests first and writes the compare's register only
            // once the branch is paid for, so that a branch left to the main loop is left
            // whole (its compare may overwrite one of its own operands).
            Inst::BrLtI32S { a, b, d, t, f } => {
                let taken = (r.i32(a) as i32) < (r.i32(b) as i32);
                at.jump(fused!(taken, t, f, d));
                continue;
            }
            Inst::BrLtI64S { a, b, d, t, f } => {
                let taken = (r.i64(a) as i64) < (r.i64(b) as i64);
                at.jump(fused!(taken, t, f, d));
                continue;
            }
            Inst::BrCmp32 { op, a, b, d, t, f } => {
                let taken = compare::test32(r, op, a, b);
                at.jump(fused!(taken, t, f, d));
                continue;
            }
            Inst::BrCmp64 { op, a, b, d, t, f } => {
                let taken = compare::test64(r, op, a, b);
                at.jump(fused!(taken, t, f, d));
                continue;
            }
            // `list.get`/`list.set` of values and `list.size` on their success path (see
            // `lists::peek_list`): no reference register is written, and an access that
            // fails stops here with nothing done.
            Inst::ListSize { list, d } => {
                let Some(l) = lists::peek_list(refs, list) else {
                    break at.ip();
                };
                r.set_i32(d, l.len() as u32);
            }
            Inst::ListGetI32 { list, i, d } => {
                let Some(Ok(v)) = lists::peek_list(refs, list).map(|l| l.get_i32(r.i32(i))) else {
                    break at.ip();
                };
                r.set_i32(d, v as u32);
            }
            Inst::ListGetI64 { list, i, d } => {
                let Some(Ok(v)) = lists::peek_list(refs, list).map(|l| l.get_i64(r.i32(i))) else {
                    break at.ip();
                };
                r.set_i64(d, v as u64);
            }
            Inst::ListGetF32 { list, i, d } => {
                let Some(Ok(v)) = lists::peek_list(refs, list).map(|l| l.get_f32(r.i32(i))) else {
                    break at.ip();
                };
                r.set_i32(d, v.to_bits());
            }
            Inst::ListGetF64 { list, i, d } => {
                let Some(Ok(v)) = lists::peek_list(refs, list).map(|l| l.get_f64(r.i32(i))) else {
                    break at.ip();
                };
                r.set_i64(d, v.to_bits());
            }
            Inst::ListSetI32 { list, i, v } => {
                let set = lists::peek_list(refs, list).map(|l| l.set_i32(r.i32(i), r.i32(v) as i32));
                if !matches!(set, Some(Ok(()))) {
                    break at.ip();
                }
            }
            Inst::ListSetI64 { list, i, v } => {
                let set = lists::peek_list(refs, list).map(|l| l.set_i64(r.i32(i), r.i64(v) as i64));
                if !matches!(set, Some(Ok(()))) {
                    break at.ip();
                }
            }
            Inst::ListSetF32 { list, i, v } => {
                let set = lists::peek_list(refs, list).map(|l| l.set_f32(r.i32(i), r.f32(v)));
                if !matches!(set, Some(Ok(()))) {
                    break at.ip();
                }
            }
            Inst::ListSetF64 { list, i, v } => {
                let set = lists::peek_list(refs, list).map(|l| l.set_f64(r.i32(i), r.f64(v)));
                if !matches!(set, Some(Ok(()))) {
                    break at.ip();
                }
            }
            // Divisions on their success path: one that traps (a zero divisor, `MIN / -1`)
            // stops here with nothing done, and the main loop runs it and reports the trap.
            Inst::Div32 { op, a, b, d } => {
                if integer::try_div32(r, op, a, b, d).is_none() {
                    break at.ip();
                }
            }
            Inst::Div64 { op, a, b, d } => {
                if integer::try_div64(r, op, a, b, d).is_none() {
                    break at.ip();
                }
            }
            // Buffer accesses on their success path; any failure (no buffer, an offset out of
            // range, a read-only buffer) stops here with nothing done, and the main loop runs
            // the instruction again and reports the fault as it always has.
            Inst::BufferLoad32 { b, o, d } => {
                let Some(bytes) = views.get(b).load::<4>(r.i64(o)) else {
                    break at.ip();
                };
                r.set_i32(d, u32::from_le_bytes(bytes));
            }
            Inst::BufferStore32 { b, o, v } => {
                if views.get(b).store(r.i64(o), r.i32(v).to_le_bytes()).is_none() {
                    break at.ip();
                }
            }
            Inst::BufferLoad { width, b, o, d } => {
                let view = views.get(b);
                let index = r.i64(o);
                let loaded = match width {
                    Width::U8 => view.load::<1>(index).map(|[v]| u32::from(v)),
                    Width::S8 => view.load::<1>(index).map(|[v]| v as i8 as i32 as u32),
                    Width::U16 => view.load(index).map(|v| u32::from(u16::from_le_bytes(v))),
                    Width::S16 => view.load(index).map(|v| i16::from_le_bytes(v) as i32 as u32),
                    Width::B32 => view.load(index).map(u32::from_le_bytes),
                };
                let Some(v) = loaded else {
                    break at.ip();
                };
                r.set_i32(d, v);
            }
            Inst::BufferLoad64 { b, o, d } => {
                let Some(bytes) = views.get(b).load::<8>(r.i64(o)) else {
                    break at.ip();
                };
                r.set_i64(d, u64::from_le_bytes(bytes));
            }
            Inst::BufferStore { width, b, o, v } => {
                let view = views.get(b);
                let index = r.i64(o);
                let bytes = r.i32(v).to_le_bytes();
                let stored = match width {
                    Width::U8 | Width::S8 => view.store(index, [bytes[0]]),
                    Width::U16 | Width::S16 => view.store(index, [bytes[0], bytes[1]]),
                    Width::B32 => view.store(index, bytes),
                };
                if stored.is_none() {
                    break at.ip();
                }
            }
            Inst::BufferStore64 { b, o, v } => {
                if views.get(b).store(r.i64(o), r.i64(v).to_le_bytes()).is_none() {
                    break at.ip();
                }
            }
            // Straight-line superinstructions (`fuse.rs`): their parts in order, then on past
            // the sequence. A buffer access that fails stops at its own instruction (in place
            // after the superinstruction) with the parts before it done, and the main loop
            // runs that instruction as it always has.
            Inst::AddLoad32 { x, y, o, b, d } => {
                let at_element = integer::add_i64(r, x, y, o);
                let Some(bytes) = views.get(b).load::<4>(at_element) else {
                    at.skip(1);
                    break at.ip();
                };
                r.set_i32(d, u32::from_le_bytes(bytes));
                at.skip(2);
                continue;
            }
            Inst::AddAddLoad32 { x, y, t, z, o, b, d } => {
                integer::add_i64(r, x, y, t);
                let at_element = integer::add_i64(r, t, z, o);
                let Some(bytes) = views.get(b).load::<4>(at_element) else {
                    at.skip(2);
                    break at.ip();
                };
                r.set_i32(d, u32::from_le_bytes(bytes));
                at.skip(3);
                continue;
            }
            Inst::AddAddI64 {
                a0,
                b0,
                d0,
                a1,
                b1,
                d1,
            } => {
                integer::add_i64(r, a0, b0, d0);
                integer::add_i64(r, a1, b1, d1);
                at.skip(2);
                continue;
            }
            Inst::LoadFmaStore32 { b, o, v, x, y, d } => {
                let view = views.get(b);
                let Some(bytes) = view.load::<4>(r.i64(o)) else {
                    break at.ip();
                };
                r.set_i32(v, u32::from_le_bytes(bytes));
                float::fma_f32(r, ftz, x, y, v, d);
                if view.store(r.i64(o), r.i32(d).to_le_bytes()).is_none() {
                    at.skip(2);
                    break at.ip();
                }
                at.skip(3);
                continue;
            }
            // The increment runs once the back edge is paid for, so that a branch left to the
            // main loop is left whole, with its increment.
            Inst::AddBr { x, y, d, to } => {
                pay!(to.cost, at.ip());
                integer::add_i64(r, x, y, d);
                enter!(usize::from(to.target))
            }
            Inst::AddBrMove64 { x, y, d, to, dst } => {
                pay!(to.cost, at.ip());
                let next = integer::add_i64(r, x, y, d);
                r.set_i64(dst, next);
                enter!(usize::from(to.target))
            }
            Inst::AddBrMove1 {
                x,
                y,
                d,
                to,
                src,
                dst,
            } => {
                pay!(to.cost, at.ip());
                integer::add_i64(r, x, y, d);
                r.set_i32(dst, r.i32(src));
                enter!(usize::from(to.target))
            }
            Inst::AddI32BrMove4 { a, b, d, to, moves } => {
                pay!(to.cost, at.ip());
                integer::add_i32(r, a.reg(), b.reg(), d.reg());
                control::copy_bytes(r, moves);
                enter!(usize::from(to.target))
            }
            // Pairs of register operations: the first, then the second (reading after the
            // first's write), then on past the pair.
            Inst::ShlXorI32 { a, s, t, x, y, d } => {
                integer::shift32(r, Shift::Shl, a, s, t);
                integer::bin32(r, IBin::Xor, x, y, d);
                at.skip(2);
                continue;
            }
            Inst::ShrUXorI32 { a, s, t, x, y, d } => {
                integer::shift32(r, Shift::ShrU, a, s, t);
                integer::bin32(r, IBin::Xor, x, y, d);
                at.skip(2);
                continue;
            }
            Inst::ExtUAddI64 { a, e, x, y, d } => {
                convert::ext_i32_i64_u(r, a, e);
                integer::add_i64(r, x, y, d);
                at.skip(2);
                continue;
            }
            Inst::AndCastF32 { a, b, t, c, d } => {
                integer::bin32(r, IBin::And, a, b, t);
                convert::cast_si32_f32(r, c, d);
                at.skip(2);
                continue;
            }
            Inst::MulXorI64 { a, b, t, x, y, d } => {
                integer::bin64(r, IBin::Mul, a, b, t);
                integer::bin64(r, IBin::Xor, x, y, d);
                at.skip(2);
                continue;
            }
            // The body, then the increment and back edge as `AddBrMove1` (left whole to the
            // main loop, at the add, when the edge cannot be paid).
            Inst::FmaAddBrMove1 {
                a,
                b,
                c,
                d,
                x,
                y,
                to,
                dst,
            } => {
                let v = float::fma_f32(r, ftz, a.reg(), b.reg(), c.reg(), d.reg());
                pay!(to.cost, at.ip() + 1);
                integer::add_i64(r, x, y, x);
                r.set_i32(dst.reg(), v);
                enter!(usize::from(to.target))
            }
            // Left to the main loop: instructions that can fault, read the module instance,
            // touch references, or switch frames (`Call` and `Return` go first to `run_in`'s
            // frame loop, which makes the value-only ones itself). Listed, not matched by a
            // wildcard, so that a new instruction needs a decision here (and the dispatch
            // table covers every tag).
            Inst::GlobalLoad32 { .. }
            | Inst::GlobalStore32 { .. }
            | Inst::GlobalLoad64 { .. }
            | Inst::GlobalStore64 { .. }
            | Inst::GlobalLoadInd32 { .. }
            | Inst::GlobalStoreInd32 { .. }
            | Inst::GlobalLoadInd64 { .. }
            | Inst::GlobalStoreInd64 { .. }
            | Inst::GlobalLoadRef { .. }
            | Inst::GlobalStoreRef { .. }
            | Inst::GlobalLoadIndRef { .. }
            | Inst::GlobalStoreIndRef { .. }
            | Inst::ConstRefZero { .. }
            | Inst::ConstRefRodata { .. }
            | Inst::ListAlloc { .. }
            | Inst::ListReserve { .. }
            | Inst::ListResize { .. }
            | Inst::ListGetRef { .. }
            | Inst::ListSetRef { .. }
            | Inst::SelectRef { .. }
            | Inst::Switch32 { .. }
            | Inst::SwitchI64 { .. }
            | Inst::Switch64 { .. }
            | Inst::SwitchRef { .. }
            | Inst::UnF32 { .. }
            | Inst::UnF64 { .. }
            | Inst::PowiF32 { .. }
            | Inst::PowiF64 { .. }
            | Inst::BrTable { .. }
            | Inst::Call { .. }
            | Inst::Return { .. }
            | Inst::Fail { .. }
            | Inst::ImportResolved { .. }
            | Inst::Yield { .. }
            | Inst::CmpEqRef { .. }
            | Inst::CmpNeRef { .. }
            | Inst::CmpNzRef { .. }
            | Inst::ReleaseMoved { .. }
            | Inst::DiscardRefs { .. }
            | Inst::AssignRef { .. }
            | Inst::CastAnyRef { .. }
            | Inst::BufferFill { .. }
            | Inst::BufferFill64 { .. }
            | Inst::BufferAlloc { .. }
            | Inst::BufferClone { .. }
            | Inst::BufferLength { .. }
            | Inst::BufferCopy { .. }
            | Inst::BufferCompare { .. }
            | Inst::BufferHash { .. }
            | Inst::End => break at.ip(),
        });
        at.step();
    };
    *fuel = left;
    stop
}
