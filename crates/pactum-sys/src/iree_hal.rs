//! IREE's executable library ABI (`runtime/src/iree/hal/local/executable_library.h`, version
//! 6 as used by IREE 3.13): what the native code inside an `llvm-cpu` executable exports and
//! what a host passes to its dispatch functions.
//!
//! An executable (an embedded ELF or a system shared library) exports one symbol,
//! [`IREE_HAL_EXECUTABLE_LIBRARY_EXPORT_NAME`], a [`IreeHalExecutableLibraryQueryFn`]. Called
//! with the version the host speaks and the host's environment, it returns a pointer to a
//! pointer to the library's header, which starts an [`IreeHalExecutableLibraryV0`]. Each
//! export is an [`IreeHalExecutableDispatchFn`] called once per workgroup.
//!
//! ```
//! use pactum_sys::iree_hal::*;
//! assert_eq!(core::mem::size_of::<IreeHalExecutableDispatchAttrsV0>(), 64);
//! assert_eq!(IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST, 6);
//! ```

use core::ffi::{c_char, c_int, c_void};

/// The library version IREE 3.13's runtime asks for (`IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6`).
pub const IREE_HAL_EXECUTABLE_LIBRARY_VERSION_LATEST: u32 = 6;

/// The one symbol an executable library exports.
pub const IREE_HAL_EXECUTABLE_LIBRARY_EXPORT_NAME: &str = "iree_hal_executable_library_query";

/// Bytes per page of workgroup local memory.
pub const IREE_HAL_WORKGROUP_LOCAL_MEMORY_PAGE_SIZE: usize = 4096;

/// The most bindings one dispatch may have.
pub const IREE_HAL_EXECUTABLE_MAX_BINDING_COUNT: usize = 64;

/// Words of processor data in [`IreeHalProcessorV0`].
pub const IREE_HAL_PROCESSOR_DATA_CAPACITY_V0: usize = 8;

/// `IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_NONE`: the only sanitizer kind a host without
/// sanitizer support may load.
pub const IREE_HAL_EXECUTABLE_LIBRARY_SANITIZER_NONE: i32 = 0;

/// `IREE_HAL_EXECUTABLE_DISPATCH_FLAG_V0_WORKGROUP_SIZE_DYNAMIC`.
pub const IREE_HAL_EXECUTABLE_DISPATCH_FLAG_V0_WORKGROUP_SIZE_DYNAMIC: u64 = 1 << 1;

/// The header every library version starts with.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableLibraryHeader {
    /// The library API version it was built for.
    pub version: u32,
    /// A NUL-terminated name for diagnostics.
    pub name: *const c_char,
    /// Feature bits (none are defined).
    pub features: u32,
    /// The sanitizer the library was compiled with (`0`: none).
    pub sanitizer: i32,
}

/// An imported function: `int fn(void* params, void* context, void* reserved)`.
pub type IreeHalExecutableImportFn =
    unsafe extern "C" fn(params: *mut c_void, context: *mut c_void, reserved: *mut c_void) -> c_int;

/// The thunk every import call goes through: the import, then its arguments.
pub type IreeHalExecutableImportThunkFn = unsafe extern "C" fn(
    function: Option<IreeHalExecutableImportFn>,
    params: *mut c_void,
    context: *mut c_void,
    reserved: *mut c_void,
) -> c_int;

/// The imports a library asks the host for (names sorted; a trailing `?` marks a weak one).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableImportTableV0 {
    /// Number of imports.
    pub count: u32,
    /// `count` NUL-terminated names.
    pub symbols: *const *const c_char,
}

/// Architecture-specific processor data (on x86_64, word 0 holds IREE's CPU feature bits).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct IreeHalProcessorV0 {
    /// Opaque words; all zero when unknown.
    pub data: [u64; IREE_HAL_PROCESSOR_DATA_CAPACITY_V0],
}

/// The environment passed to `query` and to every dispatch.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableEnvironmentV0 {
    /// The executable-level constants, as many as the library declares.
    pub constants: *const u32,
    /// The thunk imports are called through.
    pub import_thunk: Option<IreeHalExecutableImportThunkFn>,
    /// One entry per import (NULL for a weak import the host lacks).
    pub import_funcs: *const Option<IreeHalExecutableImportFn>,
    /// One context per import.
    pub import_contexts: *const *const c_void,
    /// The processor the call runs on.
    pub processor: IreeHalProcessorV0,
}

/// Per-dispatch state, the same for every workgroup of a dispatch.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableDispatchStateV0 {
    /// Workgroup size, x.
    pub workgroup_size_x: u32,
    /// Workgroup size, y.
    pub workgroup_size_y: u32,
    /// Workgroup size, z.
    pub workgroup_size_z: u16,
    /// Number of 32-bit values at `constants`.
    pub constant_count: u16,
    /// Workgroup count, x.
    pub workgroup_count_x: u32,
    /// Workgroup count, y.
    pub workgroup_count_y: u32,
    /// Workgroup count, z.
    pub workgroup_count_z: u16,
    /// How many workgroups may run at once.
    pub max_concurrency: u8,
    /// Number of entries at `binding_ptrs` and `binding_lengths`.
    pub binding_count: u8,
    /// The dispatch's constants.
    pub constants: *const u32,
    /// Base pointer of each binding.
    pub binding_ptrs: *const *mut c_void,
    /// Length in bytes of each binding.
    pub binding_lengths: *const usize,
}

/// Per-workgroup state.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableWorkgroupStateV0 {
    /// Workgroup id, x.
    pub workgroup_id_x: u32,
    /// Workgroup id, y.
    pub workgroup_id_y: u32,
    /// Workgroup id, z.
    pub workgroup_id_z: u16,
    /// Reserved, zero.
    pub reserved: u16,
    /// The logical processor running the workgroup.
    pub processor_id: u32,
    /// Scratch memory of at least the export's local memory pages (NULL when none).
    pub local_memory: *mut c_void,
    /// Bytes at `local_memory`.
    pub local_memory_size: u32,
}

/// A dispatch function: `int fn(environment, dispatch_state, workgroup_state)`, 0 on success.
pub type IreeHalExecutableDispatchFn = unsafe extern "C" fn(
    environment: *const IreeHalExecutableEnvironmentV0,
    dispatch_state: *const IreeHalExecutableDispatchStateV0,
    workgroup_state: *const IreeHalExecutableWorkgroupStateV0,
) -> c_int;

/// `iree_hal_executable_library_query`: the library for `max_version`, or NULL.
pub type IreeHalExecutableLibraryQueryFn =
    unsafe extern "C" fn(
        max_version: u32,
        environment: *const IreeHalExecutableEnvironmentV0,
    ) -> *const *const IreeHalExecutableLibraryHeader;

/// How an export is to be dispatched.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IreeHalExecutableDispatchAttrsV0 {
    /// Dispatch flags (`IREE_HAL_EXECUTABLE_DISPATCH_FLAG_V0_*`).
    pub flags: u64,
    /// Pages of workgroup local memory the export needs.
    pub local_memory_pages: u16,
    /// Number of 32-bit constants the export takes.
    pub constant_count: u8,
    /// Number of bindings the export takes.
    pub binding_count: u8,
    /// Workgroup size, x (0: unspecified).
    pub workgroup_size_x: u32,
    /// Workgroup size, y.
    pub workgroup_size_y: u32,
    /// Workgroup size, z.
    pub workgroup_size_z: u16,
    /// Number of reflected parameters.
    pub parameter_count: u16,
    /// Reserved, zero.
    pub reserved_1: [u64; 5],
}

/// The exported dispatch functions, as parallel arrays of `count` entries (any array but
/// `ptrs` may be NULL).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableExportTableV0 {
    /// Number of exports.
    pub count: u32,
    /// The dispatch functions.
    pub ptrs: *const Option<IreeHalExecutableDispatchFn>,
    /// Their attributes.
    pub attrs: *const IreeHalExecutableDispatchAttrsV0,
    /// Reflected parameters per export.
    pub params: *const *const c_void,
    /// Occupancy information (unused).
    pub occupancy: *const c_void,
    /// NUL-terminated export names.
    pub names: *const *const c_char,
    /// NUL-terminated tags.
    pub tags: *const *const c_char,
    /// Parameter names.
    pub parameter_names: *const *const c_char,
    /// Source locations.
    pub source_locations: *const c_void,
    /// Per-stage source locations.
    pub stage_locations: *const c_void,
}

/// The executable-level constants a library takes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableConstantTableV0 {
    /// Number of 32-bit constants.
    pub count: u32,
}

/// Embedded source files (for debugging).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableSourceFileTableV0 {
    /// Number of files.
    pub count: u32,
    /// The files.
    pub files: *const c_void,
}

/// A library of version 6 (its header pointer first).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IreeHalExecutableLibraryV0 {
    /// The header.
    pub header: *const IreeHalExecutableLibraryHeader,
    /// Imports.
    pub imports: IreeHalExecutableImportTableV0,
    /// Exports.
    pub exports: IreeHalExecutableExportTableV0,
    /// Executable-level constants.
    pub constants: IreeHalExecutableConstantTableV0,
    /// Source files.
    pub sources: IreeHalExecutableSourceFileTableV0,
}
