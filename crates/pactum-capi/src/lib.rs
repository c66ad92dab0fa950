//! `libtvm_ffi.so` from pactum: every function of `tvm/ffi/c_api.h` and
//! `tvm/ffi/extra/c_env_api.h` (apache-tvm-ffi 0.1.15.post2), implemented by pactum's
//! built-in runtime, plus the `ffi.*` global functions a C program needs to load and call
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

use core::ffi::{c_char, c_int, c_void};

use pactum::runtime::provider_c_api as provider;
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
            unsafe { provider::$name($($arg),*) }
        }
    )*};
}

pactum_sys::tvm_ffi_c_api!(export_c_api);
