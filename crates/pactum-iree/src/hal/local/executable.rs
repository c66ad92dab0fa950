//! The local device's executables: a vmvx module or an ELF library, behind one type that runs
//! a dispatch on the device's [`Workers`].

use std::any::Any;

use super::workers::Workers;
use crate::hal::buffer::Binding;
use crate::hal::executable::{
    ElfExecutable, Executable, VMVX_FORMAT, VmvxExecutable, embedded_elf_format, is_elf_format,
    system_elf_format,
};
use crate::status::{StatusCode, StatusError};
use crate::vm::Limits;

/// The most workgroups one dispatch may run.
pub const MAX_WORKGROUPS: u64 = 1 << 24;

/// Whether the local device runs executables of `format`.
pub fn is_local_format(format: &str) -> bool {
    format == VMVX_FORMAT || is_elf_format(format)
}

/// An executable of the local CPU device.
#[derive(Debug)]
pub struct LocalExecutable {
    format: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Vmvx(VmvxExecutable),
    Elf(ElfExecutable),
}

impl LocalExecutable {
    /// Loads executable `data` of `format`, with executable-level `constants` (ELF libraries)
    /// and `vmvx_limits` for the VM running vmvx dispatches. A format the local device does
    /// not run is `UNIMPLEMENTED`.
    pub fn load(
        format: &str,
        data: Vec<u8>,
        constants: &[u32],
        vmvx_limits: Limits,
    ) -> Result<LocalExecutable, StatusError> {
        let kind = if format == VMVX_FORMAT {
            Kind::Vmvx(VmvxExecutable::load(data, vmvx_limits)?)
        } else if is_elf_format(format) {
            Kind::Elf(ElfExecutable::load(&data, constants)?)
        } else {
            return Err(StatusError::new(
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
        Ok(LocalExecutable {
            format: format.to_owned(),
            kind,
        })
    }

    /// Runs export `ordinal` for every workgroup of `count`: vmvx dispatches on the caller's
    /// thread, ELF ones on `workers`.
    pub fn dispatch(
        &self,
        ordinal: i64,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        let ordinal = usize::try_from(ordinal).map_err(|_| {
            StatusError::invalid_argument(format!("export ordinal {ordinal} is negative"))
        })?;
        let total = count.iter().map(|&c| u64::from(c)).product::<u64>();
        if total > MAX_WORKGROUPS {
            return Err(StatusError::new(
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
            Kind::Elf(e) => e.dispatch(ordinal, count, constants, bindings, workers),
        }
    }
}

impl Executable for LocalExecutable {
    fn format(&self) -> &str {
        &self.format
    }

    fn export_count(&self) -> usize {
        match &self.kind {
            Kind::Vmvx(e) => e.export_names().len(),
            Kind::Elf(e) => e.export_names().len(),
        }
    }

    fn export_name(&self, ordinal: usize) -> Option<&str> {
        match &self.kind {
            Kind::Vmvx(e) => e.export_name(ordinal),
            Kind::Elf(e) => e.export_name(ordinal),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
