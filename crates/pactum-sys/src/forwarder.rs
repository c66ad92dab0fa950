//! The forwarding stand-in for `libtvm_ffi.so`, as bytes of a Linux shared object.
//!
//! Its SONAME is `libtvm_ffi.so`; it exports every C API function as a jump through a table
//! filled by `pactum_forwarder_install(names, functions, count)`. Empty on non-Linux hosts.

/// The shared object image (empty where unsupported).
pub const FORWARDER_LIBRARY: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/libtvm_ffi_forwarder.so"));

/// Name of the installer symbol in [`FORWARDER_LIBRARY`].
pub const FORWARDER_INSTALL_SYMBOL: &str = "pactum_forwarder_install";

/// Signature of `pactum_forwarder_install`.
pub type ForwarderInstallFn = unsafe extern "C" fn(
    names: *const *const core::ffi::c_char,
    functions: *const *const core::ffi::c_void,
    count: usize,
) -> core::ffi::c_int;
