//! Which implementation of the C API this process uses, and access to it.
//!
//! A process has exactly one TVM FFI runtime: one error slot per thread, one global registry,
//! one type table. pactum finds it on first use:
//!
//! 1. If a library whose SONAME is `libtvm_ffi.so` is already loaded (the official one under
//!    Python, pactum's own `pactum-capi` under a C program, or the forwarder below), pactum
//!    binds to its 50 C functions ([`RuntimeKind::Host`]).
//! 2. Otherwise pactum's built-in provider serves ([`RuntimeKind::Builtin`]). Before such a
//!    process loads a C-built module (which records `NEEDED libtvm_ffi.so`), pactum loads an
//!    embedded forwarding `libtvm_ffi.so` from memory and points it at the provider, so the
//!    module's C API calls reach the same runtime with no file on disk and no
//!    `LD_LIBRARY_PATH`.
//!
//! See `docs/ARCHITECTURE.md`.

mod provider;

/// The built-in provider's 50 C functions, for `pactum-capi` to export as `libtvm_ffi.so`; not
/// a stable API (use [`api`]).
#[doc(hidden)]
pub use provider::c_api as provider_c_api;

use std::sync::OnceLock;

use pactum_sys::{TVM_FFI_C_API_NAMES, TVMFFICApi};

/// Where this process's C API comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuntimeKind {
    /// pactum's own provider, compiled into this binary.
    Builtin,
    /// A loaded `libtvm_ffi.so` (official, `pactum-capi`, or pactum's forwarder), at `path`.
    Host {
        /// The library's path as the dynamic loader reports it.
        path: std::string::String,
    },
}

struct Runtime {
    api: &'static TVMFFICApi,
    kind: RuntimeKind,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The symbol under which the built-in provider publishes its C API table. Versioned, so two
/// copies of pactum in one binary cannot be linked against each other's provider.
macro_rules! builtin_c_api_symbol {
    () => {
        concat!(
            "pactum_builtin_c_api_",
            env!("CARGO_PKG_VERSION_MAJOR"),
            "_",
            env!("CARGO_PKG_VERSION_MINOR")
        )
    };
}
pub(crate) use builtin_c_api_symbol;

// The provider implements the C API with the safe types (objects, errors, containers) that
// reach the runtime through `api()`. Importing it here would tie those layers into one ring,
// so this layer declares the table's accessor and the provider defines it (dependency
// inversion at link time, `runtime/provider/mod.rs`).
unsafe extern "Rust" {
    /// pactum's built-in C API table.
    #[link_name = builtin_c_api_symbol!()]
    safe fn builtin_c_api() -> &'static TVMFFICApi;
}

fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| match find_loaded_runtime() {
        Some((api, path)) => Runtime {
            api: Box::leak(Box::new(api)),
            kind: RuntimeKind::Host { path },
        },
        None => Runtime {
            api: builtin_c_api(),
            kind: RuntimeKind::Builtin,
        },
    })
}

/// The C API of this process's runtime.
#[inline]
pub fn api() -> &'static TVMFFICApi {
    runtime().api
}

/// Which runtime serves this process.
pub fn kind() -> RuntimeKind {
    runtime().kind.clone()
}

/// Binds to an already-loaded `libtvm_ffi.so`, if there is one exporting the whole C API.
fn find_loaded_runtime() -> Option<(TVMFFICApi, std::string::String)> {
    let flags = libc::RTLD_NOW | libc::RTLD_NOLOAD;
    // SAFETY: RTLD_NOLOAD never loads anything; it only returns a handle to a library that is
    // already loaded, so no initialisers run.
    let library =
        unsafe { libloading::os::unix::Library::open(Some("libtvm_ffi.so"), flags) }.ok()?;
    let mut functions = [core::ptr::null::<core::ffi::c_void>(); pactum_sys::TVM_FFI_C_API_LEN];
    for (slot, name) in functions.iter_mut().zip(TVM_FFI_C_API_NAMES) {
        // SAFETY: we only read the symbol's address.
        let symbol = unsafe { library.get::<*const core::ffi::c_void>(name.as_bytes()) }.ok()?;
        *slot = symbol.into_raw().cast_const();
        if slot.is_null() {
            return None;
        }
    }
    let path = library_path(functions[0]).unwrap_or_else(|| "libtvm_ffi.so".to_owned());
    // The handle is never closed: the runtime lives as long as the process.
    core::mem::forget(library);
    // SAFETY: TVMFFICApi is a repr(C) array of function pointers in TVM_FFI_C_API_NAMES order
    // with the header's signatures, and every entry was resolved to a non-null address.
    let api = unsafe {
        core::mem::transmute::<[*const core::ffi::c_void; pactum_sys::TVM_FFI_C_API_LEN], TVMFFICApi>(
            functions,
        )
    };
    Some((api, path))
}

/// The file a code address belongs to.
fn library_path(address: *const core::ffi::c_void) -> Option<std::string::String> {
    // SAFETY: an all-zero Dl_info (null pointers) is a valid value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads loader tables; `info` is a valid out pointer.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
    Some(
        unsafe { core::ffi::CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}
