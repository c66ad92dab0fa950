//! Executables: the dispatch functions of one compiled program, and the loaders that make
//! them from the formats the local CPU device runs.
//!
//! [`HalExecutable`] is what every device's executables offer (format, exports); a device
//! reaches its own type behind it through [`HalExecutable::as_any`]. The loaders:
//!
//! - `vmvx-bytecode-fb` ([`VmvxExecutable`]): a VM bytecode module run by pactum's own
//!   interpreter, verified and budgeted like any module: safe for untrusted input.
//! - `embedded-elf-x86_64` (`embedded-elf-arm_64` on aarch64) and `system-elf-x86_64`
//!   ([`ElfExecutable`]): machine code compiled by IREE's `llvm-cpu` backend, in an ELF
//!   pactum loads itself (`elf` checks the file, `mapping` maps it W^X, `library` speaks
//!   IREE's executable library ABI). Machine code is trusted: it runs with the process's
//!   rights and pactum cannot sandbox it.
//!
//! [`executables_in_vmfb`] finds the executables a `.vmfb` carries in its read-only data.
//!
//! - The `vmvx` VM module ([`vmvx_module`]): the microkernels vmvx executables import when
//!   compiled with `--iree-vmvx-enable-microkernels`, registered in each one's context.
//!
//! Layers: `elf` ← `mapping` ← `library` (with the crate's `fpu`); `vmvx_module` ← `vmvx`, and `in_vmfb`,
//! beside them; this module on top.

#[cfg(feature = "llvm-cpu")]
mod elf;
mod in_vmfb;
#[cfg(feature = "llvm-cpu")]
mod library;
#[cfg(feature = "llvm-cpu")]
mod mapping;
mod vmvx;
mod vmvx_module;

use std::any::Any;
use std::fmt;

#[cfg(feature = "llvm-cpu")]
pub use elf::ElfError;
pub use in_vmfb::{EmbeddedExecutable, executables_in_vmfb};
#[cfg(feature = "llvm-cpu")]
pub use library::ElfExecutable;
pub use vmvx::{DISPATCH_CCONV, VmvxExecutable, vm_view};
pub use vmvx_module::{VMVX_MODULE_NAME, VMVX_MODULE_VERSION, vmvx_module};

/// A loaded executable: named dispatch functions (exports), by ordinal.
pub trait HalExecutable: Send + Sync + fmt::Debug + Any {
    /// The format it was loaded from (`vmvx-bytecode-fb`, `embedded-elf-x86_64`, ...).
    fn format(&self) -> &str;

    /// The number of exports.
    fn export_count(&self) -> usize;

    /// The name of export `ordinal`.
    fn export_name(&self, ordinal: usize) -> Option<&str>;

    /// The ordinal of export `name`.
    fn lookup(&self, name: &str) -> Option<usize> {
        (0..self.export_count()).position(|k| self.export_name(k) == Some(name))
    }

    /// Itself, so that the device that made it can reach its own type when it runs it.
    fn as_any(&self) -> &dyn Any;
}

/// The format of vmvx executables.
pub const VMVX_FORMAT: &str = "vmvx-bytecode-fb";

/// The format of `llvm-cpu` executables for this host (`embedded-elf-<arch>`); `None` where
/// they are not loaded (another architecture, or a build without the `llvm-cpu` feature).
pub fn embedded_elf_format() -> Option<String> {
    #[cfg(feature = "llvm-cpu")]
    return elf::HOST_ARCH.map(|arch| format!("embedded-elf-{}", arch.name));
    #[cfg(not(feature = "llvm-cpu"))]
    None
}

/// The format of `llvm-cpu` executables built with `--iree-llvmcpu-link-embedded=false`
/// (`system-elf-<arch>`): a platform shared library. pactum loads it with the same loader
/// when it is self-contained as IREE emits it (no needed libraries, relative relocations
/// only) rather than through the system's dynamic loader.
pub fn system_elf_format() -> Option<String> {
    #[cfg(feature = "llvm-cpu")]
    return elf::HOST_ARCH.map(|arch| format!("system-elf-{}", arch.name));
    #[cfg(not(feature = "llvm-cpu"))]
    None
}

/// Whether `format` names an ELF executable for this host (embedded or system).
pub fn is_elf_format(format: &str) -> bool {
    embedded_elf_format().is_some_and(|f| f == format)
        || system_elf_format().is_some_and(|f| f == format)
}

/// What the loader's checks found in an executable's ELF ([`check_elf_executable`]).
#[cfg(feature = "llvm-cpu")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfSummary {
    /// The loadable segments: their addresses (relative to the image base) and protections
    /// (`r-x`, `rw-`, ...).
    pub segments: Vec<(std::ops::Range<u64>, String)>,
    /// The image's size in bytes (the end of the highest segment).
    pub image_bytes: u64,
    /// The number of relative relocations applied at load.
    pub relocations: usize,
    /// The address of `iree_hal_executable_library_query`, relative to the image base.
    pub query: u64,
}

/// Runs the checks the `llvm-cpu` loader makes on an executable's ELF (`embedded-elf-*` or
/// `system-elf-*` data), and nothing else: nothing is mapped, no code runs. `Ok` means
/// [`ElfExecutable::load`] would map the file and call its query function; `Err` says why it
/// refuses it, with the byte offset in the ELF of what was wrong. Safe on any bytes (for tests
/// and fuzzing).
#[cfg(feature = "llvm-cpu")]
pub fn check_elf_executable(data: &[u8]) -> Result<ElfSummary, ElfError> {
    let arch = elf::HOST_ARCH.ok_or_else(|| ElfError {
        offset: None,
        message: "embedded ELF executables are not supported on this architecture".into(),
        unsupported: true,
    })?;
    let image = elf::ElfImage::parse(data, arch)?;
    Ok(ElfSummary {
        segments: image
            .segments
            .iter()
            .map(|s| (s.memory.clone(), s.protection.to_string()))
            .collect(),
        image_bytes: image.span,
        relocations: image.relocations.len(),
        query: image.query,
    })
}
