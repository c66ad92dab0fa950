//! Control flow within a frame: edges (remaps, targets), `br_table`, and calls of native
//! functions (which need no frame). Calls and returns between bytecode frames are the
//! interpreter's loop (`interp.rs`), as they switch frames.

use super::fault::{Fault, trap};
use super::registers::{Registers, read_ref};
use crate::vm::code::{ArgOp, BrTable, CallSite, Edge, FunctionCode, Kind, RefReg, Reg};
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
        for &(src, dst) in &code.moves[edge.moves.range()] {
            r.set_i32(dst, r.i32(src));
        }
    }
    if edge.ref_moves.len != 0 {
        move_refs(r.refs, &code.ref_moves[edge.ref_moves.range()]);
    }
    edge.target as usize
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
    call: &CallSite,
    module: &dyn NativeModule,
    index: usize,
    name: &str,
) -> Result<(), NativeFailure> {
    let args = native_args(call, &mut r);
    let results = match module.call(index, &args) {
        Ok(results) => results,
        Err(e) => {
            return Err(NativeFailure::Error(VmError::Native {
                function: name.to_owned(),
                status: e.status,
                message: e.message,
            }));
        }
    };
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
    for (value, &(kind, slot)) in results.into_iter().zip(call.results.iter()) {
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

/// The arguments of a native call, from the caller's registers.
fn native_args(call: &CallSite, r: &mut Registers) -> Vec<Value> {
    call.args
        .iter()
        .map(|arg| match *arg {
            ArgOp::Count(n) => Value::I32(n as i32),
            ArgOp::Value { kind, src, .. } => match kind {
                Kind::I32 => Value::I32(r.slot(src) as i32),
                Kind::F32 => Value::F32(f32::from_bits(r.slot(src))),
                Kind::I64 => Value::I64(r.slot64(src) as i64),
                Kind::F64 => Value::F64(f64::from_bits(r.slot64(src))),
                Kind::Ref => Value::Ref(r.read_ref(RefReg(src))),
            },
        })
        .collect()
}
