//! IREE: the function signatures its compiler attaches to exported functions, and calls that
//! follow them.
//!
//! - [`signature`]: one model of a function's user-level signature ([`signature::Signature`])
//!   and exact codecs for each metadata generation IREE has used: the V1 `iree.abi` JSON, the
//!   legacy raw (`I…R…`) and SIP signatures, VM calling-convention strings and
//!   `iree.abi.declaration` text.
//! - [`function_abi`]: a function's ABI attributes (`fv`/`f`/`fbr`, `sipv`/`sip`,
//!   `iree.abi`, ...) read from any attribute map.
//! - [`buffer`]: the buffer-description oracle: whether a tensor fits a signature's buffer
//!   type as it is, after a conversion (which it performs), or not at all.
//! - [`vmfb`]: VM bytecode modules: a verified zero-copy reader and a writer.
//! - [`vm`]: an interpreter for VM bytecode, with a verifier, native modules and budgets.
//! - [`hal`]: IREE's hardware abstraction layer: a device API (allocation, queues with
//!   semaphores and fences, command buffers, executables) with the local CPU device, usable
//!   from Rust without a VM, and the `hal` VM module binding it for compiled programs.
//! - [`status`], [`memory_budget`]: the status error and the byte budget the VM and the HAL
//!   share.
//! - [`structured`]: wraps a packed function that takes flat arguments into one that takes
//!   and returns nested values, following a signature.
//!
//! The format layers ([`signature`], [`function_abi`], [`vmfb`]) read and write text and bytes
//! only; their errors are values a caller can match. [`buffer`] and [`structured`] work on
//! pactum's runtime values (tensors, functions, containers) and build on the format layers,
//! never the other way round.

pub mod buffer;
pub mod function_abi;
pub mod hal;
pub mod host_memory;
pub mod memory_budget;
pub mod module;
pub mod signature;
pub mod status;
pub mod structured;
pub mod vm;
pub mod vmfb;
