//! The official `ffi.*` globals pactum's runtime does not implement yet: structural visiting
//! and mutation. Each is registered, so hosts that bind every global by name at start-up (the
//! official Python package binds all of them when `tvm_ffi` is imported) load, and calling one
//! raises `NotImplementedError` naming it: never a wrong answer.

use super::builtin::packed;
use super::registry::BuiltinGlobal;
use crate::error::{Error, ErrorKind};

/// The names, as the official runtime (apache-tvm-ffi 0.1.15.post2) registers them.
pub(crate) const UNSUPPORTED: &[&str] = &[
    "ffi.StructuralMap",
    "ffi.StructuralMutate",
    "ffi.StructuralMutatorDefRegionKind",
    "ffi.StructuralMutatorDefaultMutate",
    "ffi.StructuralMutatorMutate",
    "ffi.StructuralMutatorVarRemapGet",
    "ffi.StructuralMutatorVarRemapSet",
    "ffi.StructuralMutatorWithDefRegionKind",
    "ffi.StructuralVisit",
    "ffi.StructuralVisitorDefRegionKind",
    "ffi.StructuralVisitorDefaultVisit",
    "ffi.StructuralVisitorVisit",
    "ffi.StructuralVisitorWithDefRegionKind",
    "ffi.StructuralWalk",
    "ffi.VisitErrorContext.FindAccessPaths",
    "ffi.VisitInterrupt",
];

/// Each name in [`UNSUPPORTED`] as a global raising `NotImplementedError`.
pub(crate) fn unsupported_globals() -> Vec<BuiltinGlobal> {
    UNSUPPORTED
        .iter()
        .map(|&name| {
            packed(name, move |_| {
                Err(Error::new(
                    ErrorKind::custom("NotImplementedError"),
                    format!("{name} is not implemented by pactum's runtime"),
                ))
            })
        })
        .collect()
}
