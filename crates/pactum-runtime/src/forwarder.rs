//! Loads the embedded forwarding `libtvm_ffi.so` (from `pactum-sys`) from memory and points
//! it at this runtime.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Mutex;

use pactum_sys::forwarder::{FORWARDER_INSTALL_SYMBOL, FORWARDER_LIBRARY, ForwarderInstallFn};
use pactum_sys::{TVM_FFI_C_API_LEN, TVM_FFI_C_API_NAMES};

use pactum_core::error::{Error, ErrorKind, Result};

static INSTALLED: Mutex<bool> = Mutex::new(false);

pub(super) fn install() -> Result<()> {
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if *installed {
        return Ok(());
    }
    // Another component may have loaded a libtvm_ffi.so after our runtime was chosen; two
    // runtimes in one process would split the error slots and registries.
    // SAFETY: RTLD_NOLOAD only looks up an already loaded library.
    if unsafe {
        libloading::os::unix::Library::open(
            Some("libtvm_ffi.so"),
            libc::RTLD_NOW | libc::RTLD_NOLOAD,
        )
    }
    .is_ok()
    {
        return Err(Error::new(
            ErrorKind::RUNTIME_ERROR,
            "another libtvm_ffi.so was loaded after pactum chose its built-in runtime; load it before first using pactum",
        ));
    }
    if FORWARDER_LIBRARY.is_empty() {
        return Err(Error::new(
            ErrorKind::RUNTIME_ERROR,
            "loading C-built modules into a pactum process needs Linux",
        ));
    }
    let name = c"libtvm_ffi.so";
    // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new descriptor.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!("memfd_create failed: {}", std::io::Error::last_os_error()),
        ));
    }
    // SAFETY: we own the fresh descriptor; File closes it when dropped.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(FORWARDER_LIBRARY)?;
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    // SAFETY: the forwarder has no initialisers; RTLD_GLOBAL makes its SONAME match the
    // NEEDED entries of modules loaded later.
    let library = unsafe {
        libloading::os::unix::Library::open(Some(&path), libc::RTLD_NOW | libc::RTLD_GLOBAL)
    }
    .map_err(|e| {
        Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!("cannot load the libtvm_ffi forwarder: {e}"),
        )
    })?;
    drop(file);
    // SAFETY: the forwarder exports this symbol with this signature.
    let install = unsafe { library.get::<ForwarderInstallFn>(FORWARDER_INSTALL_SYMBOL.as_bytes()) }
        .map_err(|e| {
            Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!("libtvm_ffi forwarder is incomplete: {e}"),
            )
        })?;
    let names: Vec<CString> = TVM_FFI_C_API_NAMES
        .iter()
        .map(|n| CString::new(*n).expect("C API names have no NUL"))
        .collect();
    let name_ptrs: Vec<*const core::ffi::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    // The forwarder is installed only while the runtime linked into the program serves the
    // process (`modules::prepare_module_loading`), so this is that runtime's table: this crate's
    // own, registered when the program started.
    let api = *pactum_core::runtime::api();
    // SAFETY: TVMFFICApi is a repr(C) array of TVM_FFI_C_API_LEN function pointers.
    let functions = unsafe {
        core::mem::transmute::<pactum_sys::TVMFFICApi, [*const core::ffi::c_void; TVM_FFI_C_API_LEN]>(
            api,
        )
    };
    // SAFETY: both arrays hold TVM_FFI_C_API_LEN valid entries for the duration of the call.
    let rc = unsafe { install(name_ptrs.as_ptr(), functions.as_ptr(), TVM_FFI_C_API_LEN) };
    if rc != 0 {
        return Err(Error::new(
            ErrorKind::INTERNAL_ERROR,
            format!("libtvm_ffi forwarder rejected the function table (code {rc})"),
        ));
    }
    // The forwarder stays loaded for the life of the process.
    core::mem::forget(library);
    *installed = true;
    Ok(())
}
