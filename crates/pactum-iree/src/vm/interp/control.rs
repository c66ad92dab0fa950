//! Control flow within a frame: edges (remaps, targets), `br_table`, and calls of native
//! functions (which need no frame). Calls and returns between bytecode frames switch frames:
//! the interpreter's loop (`interp.rs`) makes them, and so does the fast loop's frame loop
//! (`hot.rs`, `run_in`) for calls whose arguments and results are values.

use super::fault::{Fault, trap};
use super::registers::{Registers, read_ref};
use crate::vm::code::{
    ArgOp, BrTable, ByteMove, CallSite, Edge, FunctionCode, Kind, RefReg, Reg, Span,
};
use crate::vm::error::{TrapKind, VmError};
use crate::vm::native::NativeModule;
use crate::vm::value::{Ref, Value};

/// Applies an edge's remap in order and returns the instruction to continue at.
///
/// The i32-bank copies run first, then the reference copies: the banks are disjoint, so this
/// is the remap list's order (see [`Edge`]).
#[inline(always)]
pub(super) fn take_edge(code: &FunctionCode, r: &mut Registers, edge: Edge) -> usize {
    if edge.moves.len != 0 {
        copy(code, r, edge.moves);
    }
    if edge.ref_moves.len != 0 {
        move_refs(r.refs, &code.ref_moves[edge.ref_moves.range()]);
    }
    edge.target as usize
}

/// The i32-bank copies `moves` of a remap, in order.
#[inline(always)]
pub(super) fn copy(code: &FunctionCode, r: &mut Registers, moves: Span) {
    let mut rest = &code.moves[moves.range()];
    while let [(src, dst), tail @ ..] = rest {
        r.set_i32(*dst, r.i32(*src));
        rest = tail;
    }
}

/// The copies of a short remap held in its instruction ([`ByteMove`]s), in order.
#[inline(always)]
pub(super) fn copy_bytes(r: &mut Registers, moves: [ByteMove; 4]) {
    for m in moves {
        r.set_i32(m.dst(), r.i32(m.src()));
    }
}

/// The reference copies of a remap, in order (out of line: the tight loops move no refs).
#[inline(always)]
fn move_refs(refs: &mut [Option<Ref>], moves: &[(RefReg, RefReg)]) {
    for &(src, dst) in moves {
        move_ref(refs, src, dst);
    }
}

#[inline(always)]
fn move_ref(refs: &mut [Option<Ref>], src: RefReg, dst: RefReg) {
    if src.index() != dst.index() {
        let v = read_ref(refs, src);
        refs[dst.index()] = v;
    }
}

/// The edge `br_table` takes for the value of `index`: a case, or the default when out of
/// range.
#[inline(always)]
pub(super) fn table_edge(r: &Registers, table: &BrTable, index: Reg) -> u32 {
    usize::try_from(r.i32(index) as i32)
        .ok()
        .and_then(|i| table.cases.get(i))
        .copied()
        .unwrap_or(table.default)
}

/// Why a native call did not complete.
pub(super) enum NativeFailure {
    /// The function returned an error.
    Error(VmError),
    /// The results do not match the call site.
    Fault(Fault),
}

/// Calls native function `index` of `module` (`name` for errors) with the call site's
/// arguments and stores its results in the caller's registers.
///
/// Not inlined; the registers are passed by value, so that the loop's own view of them stays
/// in machine registers.
pub(super) fn call_native(
    mut r: Registers<'_>,
    lists: &mut NativeLists,
    call: &CallSite,
    module: &dyn NativeModule,
    index: usize,
    name: &str,
) -> Result<(), NativeFailure> {
    let NativeLists { args, results } = lists;
    // A native function that panicked (caught by a worker, which then reuses this stack)
    // left its values here: start from empty lists.
    args.clear();
    results.clear();
    native_args(call, &mut r, args);
    let called = module.call_into(index, args, results);
    // The arguments are released before the results are stored (a moved-out reference's
    // object is freed here, as the call returns).
    args.clear();
    let stored = match called {
        Ok(()) => store_results(r, call, name, results.drain(..)),
        Err(e) => Err(NativeFailure::Error(VmError::Native {
            function: name.to_owned(),
            status: e.status,
            message: e.message,
        })),
    };
    results.clear();
    stored
}

/// The argument and result lists of native calls, reused from call to call: one pair per
/// interpreter stack (see `Stack`), reached without a thread-local lookup.
#[derive(Default)]
pub(super) struct NativeLists {
    args: Vec<Value>,
    results: Vec<Value>,
}

impl NativeLists {
    /// Drops whatever a call that did not return (a panic) left in the lists.
    pub(super) fn clear(&mut self) {
        self.args.clear();
        self.results.clear();
    }
}

/// Stores a native call's results in the caller's registers.
fn store_results(
    mut r: Registers<'_>,
    call: &CallSite,
    name: &str,
    results: std::vec::Drain<'_, Value>,
) -> Result<(), NativeFailure> {
    if results.len() != call.results.len() {
        return Err(NativeFailure::Fault(trap(
            TrapKind::BadNativeResults,
            format!(
                "{name} returned {} values, expected {}",
                results.len(),
                call.results.len()
            ),
        )));
    }
    for (value, &(kind, slot)) in results.zip(call.results.iter()) {
        match (kind, value) {
            (Kind::I32, Value::I32(v)) => r.set_slot(slot, v as u32),
            (Kind::F32, Value::F32(v)) => r.set_slot(slot, v.to_bits()),
            (Kind::I64, Value::I64(v)) => r.set_slot64(slot, v as u64),
            (Kind::F64, Value::F64(v)) => r.set_slot64(slot, v.to_bits()),
            (Kind::Ref, Value::Ref(v)) => r.put(RefReg(slot), v),
            (kind, value) => {
                return Err(NativeFailure::Fault(trap(
                    TrapKind::BadNativeResults,
                    format!(
                        "{name} returned a {} where a {} is expected",
                        value.kind_name(),
                        kind.name()
                    ),
                )));
            }
        }
    }
    Ok(())
}

/// Appends the arguments of a native call, from the caller's registers, to `args`.
fn native_args(call: &CallSite, r: &mut Registers, args: &mut Vec<Value>) {
    args.extend(call.args.iter().map(|arg| match *arg {
        ArgOp::Count(n) => Value::I32(n as i32),
        ArgOp::Value { kind, src, .. } => match kind {
            Kind::I32 => Value::I32(r.slot(src) as i32),
            Kind::F32 => Value::F32(f32::from_bits(r.slot(src))),
            Kind::I64 => Value::I64(r.slot64(src) as i64),
            Kind::F64 => Value::F64(f64::from_bits(r.slot64(src))),
            Kind::Ref => Value::Ref(r.read_ref(RefReg(src))),
        },
    }));
}
