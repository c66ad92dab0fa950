//! pactum's own TVM FFI runtime: the 50 functions of the C API and the official `ffi.*` global
//! functions, with the contracts of `apache-tvm-ffi` 0.1.15 (see `docs/ARCHITECTURE.md` for the
//! few deliberate differences: where the official runtime crashes or exits on bad input, these
//! report an error).
//!
//! It serves two kinds of process:
//! - a Rust program where no `libtvm_ffi.so` is loaded: linking this crate (the `pactum` crate's
//!   default `runtime` feature does) is enough, because it [`register`]s itself with
//!   `pactum-core` when the program starts, so pactum's types and calls reach it;
//! - a C, C++ or Python program, through `pactum-capi`, which exports [`c_api`] under the C names
//!   as `libtvm_ffi.so`.
//!
//! ```
//! use pactum_core::runtime::{self, RuntimeKind};
//! use pactum_core::Function;
//!
//! // A plain Rust program: nothing loaded a libtvm_ffi.so, and linking this crate registered it
//! // when the program started, so this runtime serves it.
//! # extern crate pactum_runtime;
//! assert_eq!(runtime::kind(), RuntimeKind::Builtin);
//! Function::from_typed(|a: i64, b: i64| a + b).register_global("example.sum", false)?;
//! let sum = Function::get_global("example.sum").expect("registered");
//! assert_eq!(sum.call_typed::<_, i64>((2, 3))?, 5);
//! # Ok::<(), pactum_core::Error>(())
//! ```
//!
//! The functions are `extern "C"` with the exact C signatures; [`C_API`] lists them as the
//! function table. Nothing else here is public: the runtime's internals are not pactum's API.

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
mod custom_dtypes;
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

/// The 50 C functions under their C names, for `pactum-capi` to export.
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

/// What `pactum-capi`'s C++ part (the official library's C++ ABI) asks of the runtime: facts
/// only the runtime knows, which the C API does not tell.
pub mod cxx_support {
    use core::ffi::c_void;

    use pactum_sys::tvm_ffi::TVMFFIObject;

    /// Whether `module` is the handle of a live module object this runtime made (its imports
    /// are the runtime's to read and change, under its lock).
    pub fn is_runtime_module(module: *const TVMFFIObject) -> bool {
        super::modules::is_live_module(module)
    }

    /// Gives the runtime the function that runs `ModuleObj`'s member functions on modules made
    /// by C++ code: called as `(operation, module, arguments...)` with the operations
    /// `GetFunction`, `ImplementsFunction`, `GetFunctionDoc`, `GetFunctionMetadata` (name,
    /// query_imports), `GetKind`, `GetPropertyMask`, `InspectSource` (format),
    /// `GetWriteFormats`, `WriteToFile` (file, format), `ImportModule` (other),
    /// `ClearImports`, `GetImports`. The `ffi.Module*` globals then accept such modules, as
    /// the official runtime does; without it they accept only this runtime's modules. The
    /// first call wins.
    pub fn set_cxx_module_operations(operations: pactum_core::function::Function) {
        super::modules::set_cxx_module_operations(operations)
    }

    pub use super::modules::CxxModuleQueries;

    /// Gives `ffi.ModuleGetKind` and `ffi.ModuleGetPropertyMask` the C++ part's direct
    /// queries for modules made by C++ code (see [`CxxModuleQueries`]); without them, those
    /// globals go through the packed operations of [`set_cxx_module_operations`]. Used only
    /// once the module allocator is installed ([`set_cxx_module_allocator`]). The first call
    /// wins.
    ///
    /// # Safety
    /// Each query must accept the handle of any live module object that has a C++ vtable
    /// (every module once the allocator is installed), answer 1 for the ones the allocator
    /// made, and otherwise write an owned value of the named kind into `out` and return 0, or
    /// raise an error and return -1.
    pub unsafe fn set_cxx_module_queries(queries: CxxModuleQueries) {
        super::modules::set_cxx_module_queries(queries)
    }

    pub use super::modules::CxxLookupFromImports;

    /// Gives `TVMFFIEnvModLookupFromImports` the lookup for contexts that are not this
    /// runtime's modules: the `ModuleObj*` that modules made by C++ code write into their
    /// libraries (TVM's JIT modules do). Without it such contexts are refused. The first call
    /// wins.
    ///
    /// # Safety
    /// `lookup` must implement the official lookup for a live C++ module's `ModuleObj*`
    /// (its imports' functions, then the global registry, cached by the module), returning a
    /// function the module keeps alive.
    pub unsafe fn set_cxx_lookup_from_imports(lookup: CxxLookupFromImports) {
        super::modules::set_cxx_lookup_from_imports(lookup)
    }

    pub use super::modules::CxxModuleAllocator;

    /// Gives the runtime the allocator of its module objects: C++ `ModuleObj`s with the
    /// official layout (a vtable in front of the header, the imports at handle+24), so that C++
    /// clients can call their virtual functions. Each keeps the state the runtime gives it at
    /// handle+40 and hands it to [`release_module_state`] when it dies. Modules the runtime
    /// makes before (there are none when it is installed as the library loads) have no vtable.
    /// The first call wins.
    ///
    /// # Safety
    /// `allocator` must make such objects, of type index `ffi.Module`, as its contract says.
    pub unsafe fn set_cxx_module_allocator(allocator: CxxModuleAllocator) {
        super::modules::set_cxx_module_allocator(allocator)
    }

    /// Forgets a dying module object made through the [`CxxModuleAllocator`] and drops the
    /// runtime's state for it.
    ///
    /// # Safety
    /// `module` is the handle of such an object whose last reference went, and `state` the
    /// state it was made with; called once per object.
    pub unsafe fn release_module_state(module: *const TVMFFIObject, state: *mut c_void) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { super::modules::release_module_state(module as usize, state) }
    }

    /// The symbols registered with `TVMFFIEnvModRegisterContextSymbol`, in registration order:
    /// (name, address).
    pub fn context_symbols() -> Vec<(Box<[u8]>, *mut c_void)> {
        super::modules::context_symbols_snapshot()
    }
}

macro_rules! c_api_table {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        /// The runtime as a C API function table (built from [`c_api`], so the two list the
        /// same functions in the order of `pactum_sys::tvm_ffi_c_api!`).
        pub static C_API: TVMFFICApi = TVMFFICApi { $($name: c_api::$name),* };
    };
}
pactum_sys::tvm_ffi_c_api!(c_api_table);

/// Makes this runtime the one that serves the process when no `libtvm_ffi.so` is loaded (see
/// `pactum::runtime`), and gives its type table the runtime's own reflected types. It runs by
/// itself when the program starts (an `.init_array` entry below); calling it again does nothing.
/// A load-time constructor that calls into the runtime before that entry may have run (their
/// order is the linker's) calls it first, as `pactum-capi`'s does.
pub fn register() {
    types::set_runtime_types_installer(runtime_type_install::install_runtime_types);
    // SAFETY: every function of `C_API` implements the C contract of its name (this crate's
    // purpose, tested against the official library by `pactum-capi`'s suites), for the life of
    // the process (a static).
    unsafe { pactum_core::runtime::register_builtin(&C_API) };
}

// The registration entry is an ELF `.init_array` constructor, as pactum's forwarding
// `libtvm_ffi.so` (memfd_create, dlopen by SONAME) is Linux's.
#[cfg(not(target_os = "linux"))]
compile_error!("pactum-runtime registers itself through .init_array: Linux only");

extern "C" fn register_at_start() {
    pactum_core::internal::boundary::initializer("registering pactum's runtime", register);
}

#[used]
// SAFETY: `.init_array` holds pointers to `extern "C" fn()` constructors that the C runtime
// calls once when the program (or the shared library holding this crate) is loaded; the entry
// is exactly such a function, and no panic leaves it (`initializer`).
#[unsafe(link_section = ".init_array")]
static REGISTER_AT_START: extern "C" fn() = register_at_start;
