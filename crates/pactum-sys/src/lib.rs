//! Raw C ABI of TVM FFI, DLPack, MLIR memref descriptors and IREE's executable library
//! (`iree_hal`: what `llvm-cpu` dispatch code exports), for pactum; and the C library's
//! `erff`/`erf` ([`cmath`]), whose bits IREE's VM gives.
//!
//! This crate mirrors `tvm/ffi/c_api.h`, `tvm/ffi/extra/c_env_api.h` and `dlpack/dlpack.h` as
//! shipped in `apache-tvm-ffi==0.1.15.post2`: `repr(C)` structs, constants, function-pointer
//! types and the list of the 50 exported C functions. It has no logic and links nothing but the
//! C math library the standard library links anyway; the safe API lives in the `pactum` crate.
//!
//! Open C enums (type index, device type, data-type code) are newtypes with associated
//! constants, so every value a foreign producer may write is valid. Every struct's size,
//! alignment and field offsets are checked at compile time (`layout.rs`).
//!
//! ```
//! use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFITypeIndex};
//! let none = TVMFFIAny::NONE;
//! assert_eq!(none.type_index, TVMFFITypeIndex::NONE.0);
//! assert_eq!(core::mem::size_of::<TVMFFIAny>(), 16);
//! ```
#![no_std]

pub mod capi;
pub mod cmath;
pub mod dlpack;
pub mod forwarder;
pub mod iree_hal;
mod layout;
pub mod mlir;
pub mod tvm_ffi;

pub use capi::{TVM_FFI_C_API_LEN, TVM_FFI_C_API_NAMES, TVMFFICApi};
