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
//! Cargo features: `fault-injection` (off by default, for tests only) adds
//! `pactum::fault_injection`, which makes the next FFI entry point of a given kind panic inside
//! pactum's FFI boundary, to check that such panics become errors.

pub mod any;
mod boundary;
pub mod containers;
pub mod dtype;
pub mod error;
pub mod export;
pub mod function;
pub mod module;
pub mod object;
mod raw;
pub mod runtime;
pub mod shape;
pub mod strided;
pub mod string;
pub mod tensor;
pub mod tensor_view;

pub use any::{Any, AnyView, FromAny, FromAnyView, OpaquePtr};
pub use containers::{Array, Dict, List, Map};
pub use dtype::{DataType, Device};
pub use error::{Error, ErrorKind, Result};
pub use function::{Function, TypedFunction};
pub use module::{Module, ModuleImpl};
pub use object::{Obj, ObjectRef, ObjectRefType, ObjectType, WeakObjectRef};
pub use shape::Shape;
pub use string::{Bytes, String};
pub use tensor::{Element, Tensor};
pub use tensor_view::{AnyDType, TensorView, TensorViewMut};

/// Exports a Rust function as a TVM FFI packed function of the library being built
/// (`__tvm_ffi_<name>`, with `__tvm_ffi__metadata_<name>` and `__tvm_ffi__doc_<name>`).
/// See [`export`](mod@export).
pub use pactum_macros::export;

/// The raw ABI layer this crate is built on.
pub use pactum_sys as sys;

#[cfg(feature = "fault-injection")]
pub use boundary::fault_injection;
