//! IREE: the function signatures its compiler attaches to exported functions, and calls that
//! follow them.
//!
//! - [`signature`]: one model of a function's user-level signature ([`signature::Signature`])
//!   and exact codecs for each metadata generation IREE has used: the V1 `iree.abi` JSON, the
//!   legacy raw (`I…R…`) and SIP signatures, VM calling-convention strings and
//!   `iree.abi.declaration` text.
//! - [`function_abi`]: a function's ABI attributes (`fv`/`f`/`fbr`, `sipv`/`sip`,
//!   `iree.abi`, ...) read from any attribute map.
//! - [`vmfb`]: VM bytecode modules: a verified zero-copy reader and a writer.
//! - [`vm`]: an interpreter for VM bytecode, with a verifier, native modules and budgets.
//! - [`hal`]: IREE's hardware abstraction layer: a device API (allocation, queues with
//!   semaphores and fences, command buffers, executables) with the local CPU device, usable
//!   from Rust without a VM, and the `hal` VM module binding it for compiled programs.
//! - [`status`], [`memory_budget`]: the status error and the byte budget the VM and the HAL
//!   share.
//! - [`structured`]: wraps a packed function that takes flat arguments into one that takes
//!   and returns nested values, following a signature; [`tensor_fit`], the buffer-description
//!   oracle: whether a tensor fits a signature's buffer type as it is, after a conversion
//!   (which it performs), or not at all.
//! - [`check`]: IREE's `check` VM module (the expectations compiled test programs make) and
//!   the test runner of `pactum test`, as `iree-check-module` runs IREE's e2e tests.
//! - [`module`]: a `.vmfb` file as a module of pactum functions, run by the VM and the HAL.
//! - [`sig`]: what `pactum sig` (and Python's `pactum.sig`) does with signatures.
//!
//! The format layers ([`signature`], [`function_abi`], [`vmfb`], [`sig`]) read and write text
//! and bytes only; their errors are values a caller can match. [`tensor_fit`] and
//! [`structured`] work on pactum's runtime values (tensors, functions, containers) and build on
//! the format layers, never the other way round; so do the VM, the HAL and [`module`].
//!
//! Cargo features, each bringing what it needs and no more (all on by default):
//!
//! | feature | adds | on top of |
//! |---|---|---|
//! | (none) | [`signature`], [`function_abi`], [`vmfb`], [`sig`] | |
//! | `structured` | [`structured`], [`tensor_fit`], errors as `pactum::Error` | pactum |
//! | `vm` | [`vm`], [`status`], [`memory_budget`], [`host_memory`] | |
//! | `hal` | [`hal`] with the local CPU device and vmvx executables | `vm` |
//! | `llvm-cpu` | the `embedded-elf`/`system-elf` executable loader | `hal` |
//! | `check` | [`check`] | `hal` |
//! | `module` | [`module`] | `structured`, `hal`, `check` |

pub mod function_abi;
pub mod sig;
pub mod signature;
pub mod vmfb;

#[cfg(feature = "structured")]
pub mod structured;
#[cfg(feature = "structured")]
pub mod tensor_fit;

#[cfg(feature = "vm")]
pub mod cell_access;
#[cfg(feature = "vm")]
mod fpu;
#[cfg(feature = "vm")]
pub mod host_memory;
#[cfg(feature = "vm")]
pub mod memory_budget;
#[cfg(feature = "vm")]
pub mod status;
#[cfg(feature = "vm")]
pub mod vm;

#[cfg(feature = "hal")]
pub mod hal;

#[cfg(feature = "check")]
pub mod check;

#[cfg(feature = "parameters")]
pub mod parameters;

#[cfg(feature = "module")]
pub mod module;
