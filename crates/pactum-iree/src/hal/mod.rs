//! IREE's `hal` module with a local CPU device, so that modules compiled for the `vmvx` and
//! `llvm-cpu` backends run in pactum's VM.
//!
//! [`HalModule`] is a [`NativeModule`](crate::vm::NativeModule) named `hal` providing the
//! functions `iree-compile` 3.13 modules import (buffers, buffer views, command buffers,
//! queue operations, fences, executables, files), with their exact calling conventions, and
//! the `hal.*` reference types. Queue operations run when they are called; fences are
//! signalled at once.
//!
//! Executables ([`HalExecutable`]) are `vmvx-bytecode-fb` (a VM bytecode module, run by
//! pactum's VM in a context of its own) or `embedded-elf-x86_64` / `system-elf-x86_64`
//! (native code from the `llvm-cpu` backend, loaded by pactum's own ELF loader and run on
//! [`Workers`]: a shared thread pool, like IREE's `local-task`, or the calling thread, like
//! `local-sync`).
//!
//! **Trust.** Native executables are machine code that runs with the process's rights:
//! pactum checks their container, maps them W^X and passes them only checked buffer ranges,
//! but cannot sandbox them. Load `llvm-cpu` modules only from trusted sources; `vm` and
//! `vmvx` modules stay safe for untrusted input.
//!
//! HAL buffers are 64-byte aligned byte storage ([`HostMemory`](crate::host_memory::HostMemory))
//! shared with the VM and native code: dispatch bindings are views of the bound ranges,
//! without copies. Allocations are charged to the context's memory budget.
//!
//! Layers: `element` (element types, printing) ← `objects` (buffers, views, fences...) ←
//! `workers` ← `executable` ← `command` ← `native` (the module). The VM does not depend on
//! this module.

mod command;
mod element;
mod executable;
mod native;
mod objects;
mod workers;

pub use command::{BufferRef, Command, HalCommandBuffer};
pub use element::{HalElementType, c_format_g, format_tensor};
pub use executable::{
    Binding, DISPATCH_CCONV, ElfError, HalExecutable, MAX_WORKGROUPS, NativeExecutable,
    NativeSummary, VMVX_FORMAT, VmvxExecutable, check_native_executable, embedded_elf_format,
    is_supported_format, system_elf_format,
};
pub use native::{HalModule, REF_TYPES};
pub use objects::{
    DENSE_ROW_MAJOR, HalAllocator, HalBuffer, HalBufferView, HalDevice, HalFence, HalFile,
    MAX_RANK, WHOLE_BUFFER, shape_text,
};
pub use workers::Workers;
