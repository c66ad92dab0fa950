//! IREE's `hal` module with a local CPU device, so that modules compiled for the `vmvx`
//! backend run in pactum's VM.
//!
//! [`HalModule`] is a [`NativeModule`](crate::vm::NativeModule) named `hal` providing the
//! functions `iree-compile` 3.13 modules import (buffers, buffer views, command buffers,
//! queue operations, fences, executables, files), with their exact calling conventions, and
//! the `hal.*` reference types. The device is synchronous: queue operations run when they are
//! called, on the caller's thread; fences are signalled at once. Executables must be in the
//! `vmvx-bytecode-fb` format (a VM bytecode module, run by pactum's VM in a context of its
//! own); microkernel imports are refused when an executable is created.
//!
//! HAL buffers are byte storage shared with the VM: dispatch bindings are `!vm.buffer` views
//! of the bound ranges, without copies. Allocations are charged to the context's memory
//! budget.
//!
//! Layers: `element` (element types, printing) ← `objects` (buffers, views, fences...) ←
//! `executable` ← `command` ← `native` (the module). The VM does not depend on this module.

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
