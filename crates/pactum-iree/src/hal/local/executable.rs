//! The local device's executables: a vmvx module or an ELF library, behind one type that runs
//! a dispatch on the device's [`Workers`].

use std::any::Any;

use crate::hal::buffer::{Binding, DispatchBinding};
#[cfg(feature = "llvm-cpu")]
use crate::hal::executable::ElfExecutable;
use crate::hal::executable::{
    HalExecutable, VMVX_FORMAT, VmvxExecutable, embedded_elf_format, is_elf_format,
    system_elf_format,
};
use crate::hal::workers::Workers;
use crate::status::{StatusCode, StatusError};
use crate::vm::Limits;

/// The most workgroups one dispatch may run.
pub const MAX_WORKGROUPS: u64 = 1 << 24;

/// Whether the local device runs executables of `format`.
pub fn is_local_format(format: &str) -> bool {
    format == VMVX_FORMAT || is_elf_format(format)
}

/// The error for an executable format the local device does not run.
fn unsupported_format(format: &str) -> StatusError {
    StatusError::new(
        StatusCode::Unimplemented,
        format!(
            "executable format `{format}` is not supported (pactum's local device runs \
             `{VMVX_FORMAT}`{})",
            embedded_elf_format()
                .zip(system_elf_format())
                .map(|(e, s)| format!(", `{e}` and `{s}`"))
                .unwrap_or_default()
        ),
    )
}

/// An ELF executable, when `format` is one the `llvm-cpu` loader takes.
#[cfg(feature = "llvm-cpu")]
fn load_elf(format: &str, data: &[u8], constants: &[u32]) -> Result<Kind, StatusError> {
    if !is_elf_format(format) {
        return Err(unsupported_format(format));
    }
    Ok(Kind::Elf(ElfExecutable::load(data, constants)?))
}

/// Without the `llvm-cpu` loader, vmvx is the only format the local device runs.
#[cfg(not(feature = "llvm-cpu"))]
fn load_elf(format: &str, _data: &[u8], _constants: &[u32]) -> Result<Kind, StatusError> {
    Err(unsupported_format(format))
}

/// An executable of the local CPU device.
#[derive(Debug)]
pub struct LocalExecutable {
    format: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    // Boxed: a vmvx executable carries its whole VM module, several times an ELF's size.
    Vmvx(Box<VmvxExecutable>),
    #[cfg(feature = "llvm-cpu")]
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
            Kind::Vmvx(Box::new(VmvxExecutable::load(data, vmvx_limits)?))
        } else {
            load_elf(format, &data, constants)?
        };
        Ok(LocalExecutable {
            format: format.to_owned(),
            kind,
        })
    }

    /// Runs export `ordinal` for every workgroup of `count` on `workers`.
    pub fn dispatch(
        &self,
        ordinal: i64,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[Binding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        self.dispatch_bindings(ordinal, count, constants, bindings, workers)
    }

    /// [`LocalExecutable::dispatch`] with bindings of any form (borrowed, by a replay).
    pub(crate) fn dispatch_bindings(
        &self,
        ordinal: i64,
        count: [u32; 3],
        constants: &[i32],
        bindings: &[impl DispatchBinding],
        workers: &Workers,
    ) -> Result<(), StatusError> {
        let ordinal = usize::try_from(ordinal).map_err(|_| {
            StatusError::invalid_argument(format!("export ordinal {ordinal} is negative"))
        })?;
        // Three u32 counts can overflow a u64 product (an overflow is past the limit too).
        let total = count
            .iter()
            .try_fold(1u64, |total, &c| total.checked_mul(u64::from(c)));
        let Some(total) = total.filter(|&total| total <= MAX_WORKGROUPS) else {
            return Err(StatusError::new(
                StatusCode::ResourceExhausted,
                format!(
                    "dispatch of {}x{}x{} workgroups exceeds the limit of {MAX_WORKGROUPS}",
                    count[0], count[1], count[2]
                ),
            ));
        };
        if total == 0 {
            return Ok(());
        }
        match &self.kind {
            Kind::Vmvx(e) => e.dispatch_bindings(ordinal, count, constants, bindings, workers),
            #[cfg(feature = "llvm-cpu")]
            Kind::Elf(e) => e.dispatch_bindings(ordinal, count, constants, bindings, workers),
        }
    }
}

impl HalExecutable for LocalExecutable {
    fn format(&self) -> &str {
        &self.format
    }

    fn export_count(&self) -> usize {
        match &self.kind {
            Kind::Vmvx(e) => e.export_names().len(),
            #[cfg(feature = "llvm-cpu")]
            Kind::Elf(e) => e.export_names().len(),
        }
    }

    fn export_name(&self, ordinal: usize) -> Option<&str> {
        match &self.kind {
            Kind::Vmvx(e) => e.export_name(ordinal),
            #[cfg(feature = "llvm-cpu")]
            Kind::Elf(e) => e.export_name(ordinal),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
