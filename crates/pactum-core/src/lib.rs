//! pactum's TVM FFI types and calls (`apache-tvm-ffi` 0.1.15): the 16-byte tagged [`Any`],
//! reference-counted objects, packed [`Function`]s, [`Error`]s, strings, containers, DLPack
//! [`Tensor`]s and modules, byte-compatible with C, C++ and Python code built against the
//! official headers.
//!
//! Use it through the `pactum` crate, which re-exports all of it. This crate holds no runtime:
//! every service only a runtime gives (raising errors, global functions, the type table) goes
//! through the C API of the one runtime that serves the process ([`runtime`]): the official
//! `libtvm_ffi.so`, pactum's `libtvm_ffi.so`, or pactum's own runtime linked into the program
//! (crate `pactum-runtime`, which the `pactum` crate brings by default).
//!
//! ```
//! use pactum::{Function, Tensor};
//!
//! let double = Function::from_typed(|x: Tensor| -> pactum::Result<Tensor> {
//!     let values: Vec<f32> = x.to_vec()?;
//!     Tensor::from_slice(&values.iter().map(|v| v * 2.0).collect::<Vec<_>>(), x.shape())
//! });
//! let output: Tensor = double.call_typed((&Tensor::from_slice(&[1.0f32, 2.0], &[2])?,))?;
//! assert_eq!(output.to_vec::<f32>()?, vec![2.0, 4.0]);
//! # Ok::<(), pactum::Error>(())
//! ```
//!
//! Cargo features: `fault-injection` (off by default, for tests only) adds `fault_injection`,
//! which makes the next FFI entry point of a given kind panic inside the FFI boundary, to check
//! that such panics become errors.

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

/// What pactum's own runtime (crate `pactum-runtime`) is written with besides the public API;
/// not a stable API.
#[doc(hidden)]
pub mod internal;

/// The raw ABI layer this crate is built on.
pub use pactum_sys as sys;

#[cfg(feature = "fault-injection")]
pub use boundary::fault_injection;
