//! Faults of instructions, before the loop locates them.

use crate::vm::buffer::BufferError;
use crate::vm::error::TrapKind;
use crate::vm::value::{ListError, Ref, VmType};

/// A fault inside an instruction, before its location is known.
pub(super) enum Fault {
    /// A trap of this kind, with its detail.
    Trap(TrapKind, String),
    /// The memory budget (or the host) refused an allocation; the limit.
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

/// A trap of `kind`.
pub(super) fn trap(kind: TrapKind, detail: impl Into<String>) -> Fault {
    Fault::Trap(kind, detail.into())
}

/// A reference (or null) that is not of type `ty`.
pub(super) fn type_mismatch(r: Option<&Ref>, ty: &VmType) -> Fault {
    trap(
        TrapKind::TypeMismatch,
        format!(
            "a {} where type {ty:?} is required",
            r.map_or("null", |r| r.type_name())
        ),
    )
}
