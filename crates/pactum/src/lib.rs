//! pactum: describe, inspect and call compiled ML code across languages.
//!
//! This crate is a pure-Rust implementation of the TVM FFI ABI (`apache-tvm-ffi` 0.1.15): the
//! 16-byte tagged [`Any`], reference-counted objects, packed [`Function`]s, [`Error`]s, strings,
//! containers and DLPack [`Tensor`]s, byte-compatible with C, C++ and Python code built against
//! the official headers. It needs no C++ library: where no `libtvm_ffi.so` is loaded, pactum's
//! own runtime serves the process (see [`runtime`]).
//!
//! ```
//! use pactum::{Any, Function, Tensor, DataType};
//!
//! // A Rust closure becomes a packed function callable from C, C++ or Python.
//! let scale = Function::from_typed(|x: Tensor, factor: f64| -> pactum::Result<Tensor> {
//!     let values: Vec<f32> = x.to_vec()?;
//!     let scaled: Vec<f32> = values.iter().map(|v| v * factor as f32).collect();
//!     Tensor::from_slice(&scaled, x.shape())
//! });
//!
//! let input = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
//! let output: Tensor = scale.call_typed((&input, 2.0))?;
//! assert_eq!(output.dtype(), DataType::F32);
//! assert_eq!(output.to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
//!
//! // Dynamic calls take borrowed views; results are owned values.
//! let result: Any = scale.call(&[(&input).into(), 0.5.into()])?;
//! assert_eq!(result.cast::<Tensor>()?.to_vec::<f32>()?, vec![0.5, 1.0, 1.5]);
//! # Ok::<(), pactum::Error>(())
//! ```
//!
//! # Crates
//!
//! This crate is a facade over two others, so that a program gets everything from one
//! dependency while a library loaded by a host carries only what it uses:
//! - `pactum-core`: the types and calls above, served by whichever TVM FFI runtime the process
//!   has (re-exported here unchanged);
//! - `pactum-runtime`: pactum's own runtime, the 50 functions of the C API and the official
//!   `ffi.*` globals, which serves a process where no `libtvm_ffi.so` is loaded.
//!
//! Cargo features:
//! - `runtime` (default): links `pactum-runtime`. A module library (a `cdylib` of
//!   [`export`](macro@export)ed functions) is served by its host's runtime, the official one
//!   under Python or pactum's `libtvm_ffi.so` under C, and leaves it out:
//!   `pactum = { version = "0.1", default-features = false }`.
//! - `fault-injection` (off by default, for tests only) adds `pactum::fault_injection`, which
//!   makes the next FFI entry point of a given kind panic inside pactum's FFI boundary, to
//!   check that such panics become errors.

pub use pactum_core::{
    any, containers, dtype, error, export, function, module, object, runtime, shape, strided,
    string, tensor, tensor_view,
};

pub use pactum_core::{
    Any, AnyDType, AnyView, Array, Bytes, DataType, Device, Dict, Element, Error, ErrorKind,
    FromAny, FromAnyView, Function, List, Map, Module, ModuleImpl, Obj, ObjectRef, ObjectRefType,
    ObjectType, OpaquePtr, Result, Shape, String, Tensor, TensorView, TensorViewMut, TypedFunction,
    WeakObjectRef,
};

/// Exports a Rust function as a TVM FFI packed function of the library being built
/// (`__tvm_ffi_<name>`, with `__tvm_ffi__metadata_<name>` and `__tvm_ffi__doc_<name>`).
/// See [`export`](mod@export).
pub use pactum_macros::export;

/// The raw ABI layer this crate is built on.
pub use pactum_core::sys;

#[doc(hidden)]
pub use pactum_core::error_kind;
pub use pactum_core::{bail, object_type};

#[cfg(feature = "fault-injection")]
pub use pactum_core::fault_injection;

// Linking the runtime is all it takes: it registers itself with `pactum-core` when the program
// starts (see `pactum_runtime`), before any pactum call can ask which runtime serves the process.
#[cfg(feature = "runtime")]
extern crate pactum_runtime;
