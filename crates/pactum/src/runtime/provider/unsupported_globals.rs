//! The official `ffi.*` globals pactum's runtime does not implement yet: structural equality
//! and hashing, JSON graph serialization, deep copy and the Python dataclass hooks. Each is registered, so hosts that bind every global by name at start-up (the
//! official Python package binds all of them when `tvm_ffi` is imported) load, and calling one
//! raises `NotImplementedError` naming it: never a wrong answer.
//!
//! `ffi._RegisterFFIInit` is left out on purpose: C++ reflection (`ObjectDef`) looks it up
//! while a library registers its types and calls it when present, outside any error handler,
//! so a raising stub would abort the process (the wheel's `libtvm_ffi_testing.so` does this
//! when `tvm_ffi` is imported). Absent, those types simply get no generated `__ffi_init__`.

use super::builtin::packed;
use super::registry::BuiltinGlobal;
use crate::error::{Error, ErrorKind};

/// The names, as the official runtime (apache-tvm-ffi 0.1.15.post2) registers them.
pub(crate) const UNSUPPORTED: &[&str] = &[
    "ffi.DeepCopy",
    "ffi.FromJSONGraph",
    "ffi.FromJSONGraphString",
    "ffi.GetFirstStructuralMismatch",
    "ffi.RecursiveEq",
    "ffi.RecursiveGe",
    "ffi.RecursiveGt",
    "ffi.RecursiveHash",
    "ffi.RecursiveLe",
    "ffi.RecursiveLt",
    "ffi.StructuralEqual",
    "ffi.StructuralHash",
    "ffi.StructuralKey",
    "ffi.StructuralKeyEqual",
    "ffi.ToJSONGraph",
    "ffi.ToJSONGraphString",
    "ffi.json.Parse",
    "ffi.json.Stringify",
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
