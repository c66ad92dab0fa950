//! Calling MLIR-compiled functions through the memref calling convention.
//!
//! MLIR lowers each `func.func` carrying `llvm.emit_c_interface` to a C-callable wrapper
//! `_mlir_ciface_<name>` that takes every memref as a pointer to its descriptor
//! (`{allocated, aligned, offset, sizes[N], strides[N]}`) and returns aggregate results through
//! a first pointer argument. This module reads the function's MLIR signature, checks pactum
//! tensors against it, builds the descriptors and makes the call.

pub mod descriptor;
pub mod parse;
pub mod registers;
pub mod typed;
pub mod types;

pub use types::{Dim, FunctionType, Layout, MemRefType, MlirType, ScalarType, Signedness};
pub mod call;
pub mod function;

pub use call::{CallPath, Entry};
pub use descriptor::{Descriptor, LayoutMismatch, tensor_from_descriptor};
pub use function::{MlirFunction, MlirLibrary};
pub use typed::{MlirArg, MlirArgs, MlirResult, MlirResults, TypedMlirFunction};
