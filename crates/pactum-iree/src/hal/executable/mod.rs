//! `!hal.executable`: the dispatch functions of one compiled executable, in one of the
//! formats the local CPU device runs.
//!
//! - `vmvx-bytecode-fb` ([`VmvxExecutable`]): a VM bytecode module run by pactum's own
//!   interpreter, verified and budgeted like any module: safe for untrusted input.
//! - `embedded-elf-x86_64` (`embedded-elf-arm_64` on aarch64) and `system-elf-x86_64`
//!   ([`NativeExecutable`]): native code compiled by IREE's `llvm-cpu` backend, in an ELF
//!   pactum loads itself (`elf` checks the file, `mapping` maps it W^X, `library` speaks
//!   IREE's executable library ABI). Native code is trusted: it runs with the process's
//!   rights and pactum cannot sandbox it.
//!
//! Layers: `elf` ← `mapping` ← `library`; `vmvx` beside them; this module on top.

mod elf;
mod library;
mod mapping;
mod vmvx;

use crate::vm::{Limits, NativeError, RefObject, StatusCode};

pub use elf::ElfError;
pub use library::NativeExecutable;
pub use vmvx::{DISPATCH_CCONV, VmvxExecutable};

use super::objects::{HalBuffer, invalid};
use super::workers::Workers;

/// The format of vmvx executables.
pub const VMVX_FORMAT: &str = "vmvx-bytecode-fb";

/// The format of `llvm-cpu` executables for this host (`embedded-elf-<arch>`).
pub fn embedded_elf_format() -> Option<String> {
    elf::HOST_ARCH.map(|arch| format!("embedded-elf-{}", arch.name))
}

/// The format of `llvm-cpu` executables built with `--iree-llvmcpu-link-embedded=false`
/// (`system-elf-<arch>`): a platform shared library. pactum loads it with the same loader
/// when it is self-contained as IREE emits it (no needed libraries, relative relocations
/// only) rather than through the system's dynamic loader.
pub fn system_elf_format() -> Option<String> {
    elf::HOST_ARCH.map(|arch| format!("system-elf-{}", arch.name))
}

fn is_native_format(format: &str) -> bool {
    embedded_elf_format().is_some_and(|f| f == format)
        || system_elf_format().is_some_and(|f| f == format)
}

/// Whether the local device runs executables of `format`.
pub fn is_supported_format(format: &str) -> bool {
    format == VMVX_FORMAT || is_native_format(format)
}

/// What the loader's checks found in a native executable's ELF
/// ([`check_native_executable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeSummary {
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
/// [`HalExecutable::create`] would map the file and call its query function; `Err` says why it
/// refuses it, with the byte offset in the ELF of what was wrong. Safe on any bytes (for tests
/// and fuzzing).
pub fn check_native_executable(data: &[u8]) -> Result<NativeSummary, ElfError> {
    let arch = elf::HOST_ARCH.ok_or_else(|| ElfError {
        offset: None,
        message: "embedded ELF executables are not supported on this architecture".into(),
        unsupported: true,
    })?;
    let image = elf::ElfImage::parse(data, arch)?;
    Ok(NativeSummary {
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

/// The most workgroups one dispatch may run.
pub const MAX_WORKGROUPS: u64 = 1 << 24;

/// A bound buffer range of a dispatch.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The buffer.
    pub buffer: HalBuffer,
    /// Where the range starts.
    pub offset: i64,
    /// Its length (or [`super::objects::WHOLE_BUFFER`]).
    pub length: i64,
}

/// A loaded executable.
#[derive(Debug)]
pub struct HalExecutable {
    format: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Vmvx(VmvxExecutable),
    Native(NativeExecutable),
}

impl RefObject for HalExecutable {
    fn type_name(&self) -> &str {
        "hal.executable"
    }
}

impl HalExecutable {
    /// Loads executable `data` of `format`, with executable-level `constants` (native
    /// libraries) and `limits` for the VM running vmvx dispatches.
    pub fn create(
        format: &str,
        data: Vec<u8>,
        constants: &[u32],
        limits: Limits,
    ) -> Result<HalExecutable, NativeError> {
        let kind = if format == VMVX_FORMAT {
            Kind::Vmvx(VmvxExecutable::load(data, limits)?)
        } else if is_native_format(format) {
            Kind::Native(NativeExecutable::load(&data, constants)?)
        } else {
            return Err(NativeError::new(
                StatusCode::Unimplemented,
                format!(
                    "executable format `{format}` is not supported (pactum's local device runs \
                     `{VMVX_FORMAT}`{})",
                    embedded_elf_format()
                        .zip(system_elf_format())
                        .map(|(e, s)| format!(", `{e}` and `{s}`"))
                        .unwrap_or_default()
                ),
            ));
        };
        Ok(HalExecutable {
            format: format.to_owned(),
            kind,
        })
    }

    /// The executable's format.
    pub fn format(&self) -> &str {
        &self.format
    }

    /// The ordinal of export `name`.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        match &self.kind {
            Kind::Vmvx(e) => e.export_names().position(|n| n == name),
            Kind::Native(e) => e.export_names().position(|n| n == name),
        }
    }

    /// The number of exports.
    pub fn export_count(&self) -> usize {
        match &self.kind {
            Kind::Vmvx(e) => e.export_names().count(),
            Kind::Native(e) => e.export_names().count(),
        }
    }

    /// Runs export `ordinal` for every workgroup of `count`: vmvx dispatches on the caller's
    /// thread, native ones on `workers`.
    pub fn dispatch(
        &self,
        ordinal: i64,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
        workers: &Workers,
    ) -> Result<(), NativeError> {
        let ordinal = usize::try_from(ordinal)
            .map_err(|_| invalid(format!("export ordinal {ordinal} is negative")))?;
        let total = count.iter().map(|&c| u64::from(c)).product::<u64>();
        if total > MAX_WORKGROUPS {
            return Err(NativeError::new(
                StatusCode::ResourceExhausted,
                format!(
                    "dispatch of {}x{}x{} workgroups exceeds the limit of {MAX_WORKGROUPS}",
                    count[0], count[1], count[2]
                ),
            ));
        }
        if total == 0 {
            return Ok(());
        }
        match &self.kind {
            Kind::Vmvx(e) => e.dispatch(ordinal, count, constants, bindings),
            Kind::Native(e) => e.dispatch(ordinal, count, constants, bindings, workers),
        }
    }
}
