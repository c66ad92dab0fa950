//! `libtvm_ffi.so` from pactum: every function of `tvm/ffi/c_api.h` and
//! `tvm/ffi/extra/c_env_api.h` (apache-tvm-ffi 0.1.15.post2), implemented by pactum's
//! own runtime (crate `pactum-runtime`), plus the `ffi.*` global functions a C program needs to load and call
//! modules (`ffi.Module.load_from_file.so`, `ffi.ModuleGetFunction`, containers, ...).
//!
//! Build it with `cargo build -p pactum-capi` and link C code against
//! `target/<profile>/libtvm_ffi.so` exactly as against the official library:
//!
//! ```sh
//! gcc prog.c -I"$(tvm-ffi-config --includedir)" -Ltarget/release -ltvm_ffi -Wl,-rpath,target/release
//! ```
//!
//! Every entry point catches panics and reports them as errors; none unwinds into C.
//!
//! The library also exports the official library's C++ symbols (`ModuleObj`'s vtable,
//! typeinfo and member functions, `Module::LoadFromFile`, JSON, structural equality and
//! hashing, ...), compiled from `cxx/` against the official headers (build.rs), so C++
//! libraries built on apache-tvm-ffi load and run on it. See `cxx_abi`.
//!
//! Loading the library also registers `ffi.Module.load_from_file.vmfb` (from `pactum-iree`; the
//! default `vmfb` feature), so `ffi.ModuleLoadFromFile` loads a `.vmfb` as it loads a `.so`: the
//! module's exports are IREE functions run by pactum's VM. See `vmfb_loader` for how and why.

use core::ffi::{c_char, c_int, c_void};

use pactum_runtime::c_api as runtime;
use pactum_sys::dlpack::{
    DLDataType, DLManagedTensor, DLManagedTensorVersioned, DLPackManagedTensorAllocator, DLTensor,
};
use pactum_sys::tvm_ffi::*;

macro_rules! export_c_api {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (see `tvm/ffi/c_api.h`).")]
        ///
        /// # Safety
        /// The C contract of the function of the same name in the official headers.
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, clippy::unused_unit)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: forwarded from the C caller, with the same contract.
            unsafe { runtime::$name($($arg),*) }
        }
    )*};
}

pactum_sys::tvm_ffi_c_api!(export_c_api);

#[cfg(target_os = "linux")]
mod cxx_abi;

#[cfg(feature = "vmfb")]
mod vmfb_loader {
    //! The `.vmfb` loader, registered when the library is loaded.

    use core::ffi::c_void;

    /// Registers `ffi.Module.load_from_file.vmfb` when the dynamic loader loads this library,
    /// through an `.init_array` entry (a load-time constructor).
    ///
    /// Why at load time rather than lazily at the first C API call: every C entry point would then
    /// pay a check, the registration itself calls back into the C API (re-entering that check),
    /// and a C program could list or look up globals (`TVMFFIFunctionGetGlobal`,
    /// `ffi.FunctionListGlobalNamesFunctor`) through paths a lazy hook might miss. A constructor
    /// runs once, before any caller can see the registry, on the loading thread.
    ///
    /// It registers only when this object is the process's `libtvm_ffi.so` (the library that
    /// `dlopen("libtvm_ffi.so", RTLD_NOLOAD)` finds), so linking the crate as an rlib into a Rust
    /// test binary changes nothing, and pactum's runtime is never bound to another library from
    /// here. A failure is reported on stderr and leaves the rest of the library working; a panic
    /// cannot unwind into the loader.
    pub extern "C" fn register_vmfb_loader_at_load() {
        let what = "libtvm_ffi.so registering the .vmfb loader";
        pactum_core::internal::boundary::initializer(what, || {
            // The loader's order of this constructor and the runtime's own registration is the
            // linker's: register first (a no-op when already done).
            pactum_runtime::register();
            if !this_object_is_the_loaded_runtime() {
                return;
            }
            if let Err(error) = pactum_iree::module::register_vmfb_loader() {
                eprintln!("libtvm_ffi.so (pactum): cannot register the .vmfb loader: {error}");
            }
        });
    }

    #[used]
    // SAFETY: `.init_array` holds pointers to `extern "C" fn()` constructors the dynamic loader
    // calls once at load time; the entry is exactly such a function, which catches every panic.
    #[unsafe(link_section = ".init_array")]
    static REGISTER_VMFB_LOADER_AT_LOAD: extern "C" fn() = register_vmfb_loader_at_load;

    /// Whether the `libtvm_ffi.so` the dynamic loader has loaded is this object (not the official
    /// library, and not a test binary that links this crate as an rlib).
    fn this_object_is_the_loaded_runtime() -> bool {
        fn object_base(address: *const c_void) -> Option<usize> {
            // SAFETY: an all-zero Dl_info (null pointers) is a valid value.
            let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
            // SAFETY: dladdr only reads the loader's tables; `info` is a valid out pointer.
            let found = unsafe { libc::dladdr(address, &mut info) } != 0;
            (found && !info.dli_fbase.is_null()).then_some(info.dli_fbase as usize)
        }
        let ours = object_base(register_vmfb_loader_at_load as *const c_void);
        // SAFETY: RTLD_NOLOAD never loads anything (no initialisers run); it returns a handle to
        // an already-loaded library, or NULL.
        let handle = unsafe {
            libc::dlopen(
                c"libtvm_ffi.so".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_NOLOAD,
            )
        };
        if handle.is_null() {
            return false;
        }
        // SAFETY: a valid handle and a NUL-terminated name; we only read the symbol's address.
        let symbol = unsafe { libc::dlsym(handle, c"TVMFFIFunctionGetGlobal".as_ptr()) };
        let theirs = (!symbol.is_null()).then(|| object_base(symbol)).flatten();
        // SAFETY: the handle came from dlopen above; closing it drops only the reference that
        // RTLD_NOLOAD added, never unloading the library, which is still in use.
        unsafe { libc::dlclose(handle) };
        ours.is_some() && ours == theirs
    }
}
