//! IREE's hardware abstraction layer: a device API usable from Rust without a VM, the local
//! CPU device that implements it, and the `hal` VM module that binds it for compiled
//! programs. The split follows IREE's runtime (HAL devices / drivers / executable loaders /
//! module bindings):
//!
//! - **The device layer.** [`HalDevice`] (identity and queries, a [`HalAllocator`], executables,
//!   semaphores, command buffers, queue operations ordered by fences), with the objects it
//!   works on: [`HalBuffer`] and [`HalBufferView`] (64-byte aligned host memory, shared
//!   without copies with compiled code and the VM), [`HalSemaphore`] (a timeline semaphore:
//!   value, wait with a timeout, signal, fail with a status) and [`HalFence`] (a set of
//!   semaphore points), [`HalCommandBuffer`] (recorded fills, copies and dispatches, replayed
//!   by a queue, with an optional binding table), [`HalFile`] and [`HalExecutable`]. Errors are
//!   [`StatusError`]s: an IREE status and a message.
//! - **The local CPU device** ([`LocalDevice`], `local/`): IREE's `local-task` (workgroups of
//!   ELF dispatches on a shared worker pool, [`Workers::shared`]) or `local-sync` (everything
//!   on the calling thread, [`Workers::CallerThread`]). Queue operations complete before they
//!   return.
//! - **The Vulkan device** (`VulkanDevice`, `vulkan/`, feature `vulkan`): IREE's `vulkan`
//!   driver on any Vulkan 1.1+ driver the loader finds, running `vulkan-spirv-fb`
//!   executables; libvulkan is loaded at run time.
//! - **Executable loaders** (`executable/`): `vmvx-bytecode-fb` ([`VmvxExecutable`], a VM
//!   bytecode module run by pactum's interpreter in a context of its own, with the `vmvx`
//!   module of microkernels, [`vmvx_module`], registered) and
//!   `embedded-elf-<arch>` / `system-elf-<arch>` ([`ElfExecutable`], machine code from the
//!   `llvm-cpu` backend, loaded by pactum's own ELF loader). [`executables_in_vmfb`] finds
//!   the executables a `.vmfb` carries.
//! - **The VM binding** ([`HalModule`], `vm_module.rs`): the `hal` native module, whose 43
//!   functions have exactly the calling conventions `iree-compile` 3.13 modules import, as
//!   typed closures over any `Arc<dyn HalDevice>`. A second device kind (a GPU driver)
//!   implements [`HalDevice`] and runs compiled programs without changes to the VM or to this
//!   binding.
//!
//! **Trust.** ELF executables are machine code that runs with the process's rights: pactum
//! checks their container, maps them W^X and passes them only checked buffer ranges, but
//! cannot sandbox them. Load `llvm-cpu` modules only from trusted sources; `vm` and `vmvx`
//! modules stay safe for untrusted input.
//!
//! A dispatch without any VM context: the `add_vec` executable of a vmvx module, on the
//! calling thread.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use pactum_iree::hal::{
//!     Binding, BufferParams, HalDevice, HalFence, LocalDevice, Submission, Timeout,
//!     executables_in_vmfb,
//! };
//! use pactum_iree::vmfb::VmfbFile;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vmfb/multi_export_vmvx.vmfb");
//! let found = executables_in_vmfb(&VmfbFile::open(path)?)?;
//! assert_eq!(found.len(), 1);
//! assert_eq!(found[0].format, "vmvx-bytecode-fb");
//!
//! let device: Arc<dyn HalDevice> = Arc::new(LocalDevice::sync());
//! let executable = device.create_executable(&found[0].format, found[0].data.clone(), &[])?;
//! let add = executable.lookup("add_vec_dispatch_0_elementwise_4_f32").unwrap();
//!
//! // Two inputs and an output of four f32s each.
//! let f32s = |values: [f32; 4]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
//! let allocator = device.allocator();
//! let a = allocator.import_copy(BufferParams::default(), &f32s([1.0, 2.0, 3.0, 4.0]))?;
//! let b = allocator.import_copy(BufferParams::default(), &f32s([10.0, 20.0, 30.0, 40.0]))?;
//! let sum = allocator.allocate(BufferParams::default(), 16)?;
//!
//! // One workgroup, no push constants, the bindings in the export's order.
//! let commands = device.create_command_buffer(0)?;
//! let bindings = [a, b, sum.clone()].map(Binding::whole);
//! commands.dispatch(&executable, add, [1, 1, 1], &[], &bindings)?;
//! commands.finalize()?;
//!
//! // Submit it, waiting for nothing and signalling `done`; then wait for `done`.
//! let done = HalFence::pending();
//! device.queue_execute(Submission::new(&HalFence::empty(), &done), Some(&commands), &[])?;
//! done.wait(Timeout::After(Duration::from_secs(10)))?;
//! assert_eq!(sum.to_vec(), f32s([11.0, 22.0, 33.0, 44.0]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Layers (no file imports a later one): `element` ← `buffer` ← `allocator`, `semaphore`,
//! `file`, `workers` ← `executable/` ← `command` ← `device` ← `local/`, `vulkan/` ← `vm_module`.
//! The VM does not depend on this module; the vmvx loader and the binding depend on the VM.
//!
//! [`StatusError`]: crate::status::StatusError

mod allocator;
mod buffer;
mod command;
mod device;
mod element;
mod executable;
mod file;
mod local;
mod semaphore;
mod vm_module;
#[cfg(feature = "vulkan")]
pub mod vulkan;
mod workers;

pub use allocator::{
    BufferParams, FREE_BLOCK_CACHE_BYTES, HalAllocator, HostAllocator, MIN_FILE_MAPPING_BYTES,
};
pub use buffer::{
    Binding, DENSE_ROW_MAJOR, HalBuffer, HalBufferView, MAX_PARSED_BYTES, MAX_RANK,
    OPAQUE_ENCODING, WHOLE_BUFFER, shape_text,
};
pub use command::{BufferRef, Command, HalCommandBuffer, MAX_COMMANDS};
pub use device::{ANY_QUEUE, HalDevice, Submission, id_matches};
pub use element::{HalElementType, c_format_g, format_tensor};
pub use executable::{
    DISPATCH_CCONV, EmbeddedExecutable, HalExecutable, VMVX_FORMAT, VMVX_MODULE_NAME,
    VMVX_MODULE_VERSION, VmvxExecutable, embedded_elf_format, executables_in_vmfb, is_elf_format,
    system_elf_format, vm_view, vmvx_module,
};
#[cfg(feature = "llvm-cpu")]
pub use executable::{ElfError, ElfExecutable, ElfSummary, check_elf_executable};
pub use file::{FileContents, HalFile, READ_CHUNK};
pub use local::{LocalDevice, LocalExecutable, MAX_WORKGROUPS, is_local_format};
pub use semaphore::{DeviceTimeline, HalFence, HalSemaphore, Timeout, wait_limit_exceeded};
pub use vm_module::{
    HAL_MODULE_VERSION, HalModule, MAX_TRACED_VIEWS, REF_TYPES, TraceSink, hal_ref,
};
#[cfg(feature = "vulkan")]
pub use vulkan::VulkanDevice;
pub use workers::Workers;
