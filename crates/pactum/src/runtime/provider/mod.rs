//! pactum's own implementation of the 50 C API functions, with the contracts of
//! `apache-tvm-ffi` 0.1.15 (see `docs/ARCHITECTURE.md` for the few deliberate differences:
//! where the official runtime crashes or exits on bad input, these report an error).
//!
//! The functions are `extern "C"` with the exact C signatures; [`PROVIDER_API`] lists them and
//! the `pactum-capi` crate exports them under their C names as `libtvm_ffi.so`, through
//! [`c_api`]. Nothing else here is public: the provider's internals are not pactum's API.

// Layers, each using only those above it (`scripts/import_rings.py` finds no ring here):
// - arguments: `args`;
// - storage and values, with their C functions: `errors`, `objects`, `values`, `types`,
//   `tensors`, and the function registry's storage, `registry`; the traversal ABI and the
//   built-in types' structural hooks `types` registers, `structural_hooks`;
// - declaring built-in globals: `builtin`; library modules: `modules`;
// - the built-in `ffi.*` globals: `value_globals`, `module_globals`, `repr_globals`,
//   `dataclass`, `recursive_globals`, `json_globals`, `serialization_globals`,
//   `structural_globals`, `visit_error_context`, `structural_visit`, `structural_mutate`;
// - the C functions that reach the layers below: `functions` (which fills the registry with
//   every built-in global) and `env`.
mod access_path;
mod args;
mod builtin;
mod conversions;
mod dataclass;
mod env;
mod errors;
mod forwarder;
mod functions;
mod json_globals;
mod module_globals;
mod modules;
mod objects;
mod recursive_globals;
mod reflection;
mod registry;
mod repr_globals;
mod runtime_type_install;
mod runtime_types;
mod serialization_globals;
mod structural_globals;
mod structural_hooks;
mod structural_mutate;
mod structural_visit;
mod tensors;
mod types;
mod value_globals;
mod values;
mod visit_error_context;

use pactum_sys::TVMFFICApi;

/// The 50 C functions under their C names, for `pactum-capi` to export (re-exported, hidden,
/// as `pactum::runtime::provider_c_api`); not a stable API.
pub mod c_api {
    pub use super::env::{
        TVMFFIEnvCheckSignals, TVMFFIEnvGetDLPackManagedTensorAllocator, TVMFFIEnvGetStream,
        TVMFFIEnvModLookupFromImports, TVMFFIEnvModRegisterContextSymbol,
        TVMFFIEnvModRegisterSystemLibSymbol, TVMFFIEnvRegisterCAPI,
        TVMFFIEnvSetDLPackManagedTensorAllocator, TVMFFIEnvSetStream, TVMFFIEnvTensorAlloc,
        TVMFFIHandleDeinitOnce, TVMFFIHandleInitOnce,
    };
    pub use super::errors::{
        TVMFFIBacktrace, TVMFFIErrorCreate, TVMFFIErrorCreateWithCauseAndExtraContext,
        TVMFFIErrorMoveFromRaised, TVMFFIErrorSetRaised, TVMFFIErrorSetRaisedFromCStr,
        TVMFFIErrorSetRaisedFromCStrParts,
    };
    pub use super::functions::{
        TVMFFIAnyViewToOwnedAny, TVMFFIFunctionCall, TVMFFIFunctionCreate, TVMFFIFunctionGetGlobal,
        TVMFFIFunctionSetGlobal, TVMFFIFunctionSetGlobalFromMethodInfo,
    };
    pub use super::objects::{
        TVMFFIGetCustomAllocator, TVMFFIGetVersion, TVMFFIObjectCreateOpaque, TVMFFIObjectDecRef,
        TVMFFIObjectIncRef, TVMFFISetCustomAllocator,
    };
    pub use super::tensors::{
        TVMFFITensorCreateUnsafeView, TVMFFITensorFromDLPack, TVMFFITensorFromDLPackVersioned,
        TVMFFITensorToDLPack, TVMFFITensorToDLPackVersioned,
    };
    pub use super::types::{
        TVMFFIGetTypeAttrColumn, TVMFFIGetTypeInfo, TVMFFITypeGetOrAllocIndex,
        TVMFFITypeKeyToIndex, TVMFFITypeRegisterAttr, TVMFFITypeRegisterField,
        TVMFFITypeRegisterMetadata, TVMFFITypeRegisterMethod,
    };
    pub use super::values::{
        TVMFFIBigIntFromByteArray, TVMFFIBigIntGetContentByteArray, TVMFFIBytesFromByteArray,
        TVMFFIDataTypeFromString, TVMFFIDataTypeToString, TVMFFIStringFromByteArray,
    };
}

macro_rules! provider_table {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        /// The built-in provider as a function table (built from [`c_api`], so the two list
        /// the same functions).
        pub(crate) static PROVIDER_API: TVMFFICApi = TVMFFICApi { $($name: c_api::$name),* };
    };
}
pactum_sys::tvm_ffi_c_api!(provider_table);

/// Publishes [`PROVIDER_API`] to the runtime layer, which declares this accessor instead of
/// importing the provider (see `runtime/mod.rs`).
#[unsafe(export_name = crate::runtime::builtin_c_api_symbol!())]
fn builtin_c_api() -> &'static TVMFFICApi {
    &PROVIDER_API
}
