//! pactum-iree's integration tests but the hostile-input ones, in one binary (a test binary costs
//! a link of the crate and all its dependencies): one module per area. The hostile-input tests
//! assert wall-clock limits and are the `hostile` binary (`tests/README.md` says why).

#[path = "../vm/asm.rs"]
mod asm;
mod buffer;
mod function_abi;
mod hal;
mod hal_manifest;
mod iree_abi_vectors;
mod iree_legacy_vectors;
mod iree_runs;
mod llvm_cpu;
mod module;
mod structured;
mod structured_vs_iree;
mod vm;
mod vm_manifest;
mod vm_reference;
mod vmfb;
mod vmfb_loader;
