//! pactum-iree's integration tests, in one binary (a test binary costs a link of the crate and
//! all its dependencies): one module per area.

#[path = "../vm/asm.rs"]
mod asm;
mod check_vs_iree;
mod elf_hostile;
mod ffi_native_module;
mod function_abi;
mod hal;
mod hal_manifest;
mod hostile;
mod io_parameters;
mod iree_abi_vectors;
mod iree_legacy_vectors;
mod iree_runs;
mod llvm_cpu;
mod manifest_harness;
mod module;
mod parameters;
mod parameters_mapped;
mod structured;
mod structured_vs_iree;
mod tensor_fit;
mod vm;
mod vm_hostile;
mod vm_manifest;
mod vm_reference;
mod vmfb;
mod vmfb_loader;
mod vmvx_module;
#[cfg(feature = "vulkan")]
mod vulkan;
mod zero_copy;
