//! The executables a `.vmfb` carries. `iree-compile` stores each executable's bytes as a
//! read-only data segment of the module and passes it to `hal.executable.create` with a format
//! string (another segment). Without reading the bytecode, the format is recognised from the
//! bytes: an ELF is an `llvm-cpu` library for the architecture its header names
//! (`embedded-elf-<arch>`, or `system-elf-<arch>` when the module's strings name only that
//! format: both are the same kind of file); a VM bytecode module is `vmvx-bytecode-fb`; IREE's
//! executable header with the magic `VKE1` is `vulkan-spirv-fb`.

use crate::vmfb::{BytecodeModule, VmfbError, VmfbFile};

use super::VMVX_FORMAT;

/// An executable found in a module's read-only data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddedExecutable {
    /// The read-only data segment holding it.
    pub segment: usize,
    /// Its format (`embedded-elf-x86_64`, `vmvx-bytecode-fb`, ...).
    pub format: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// IREE's name for the architecture of an ELF header (`x86_64`, `arm_64`, ...).
fn elf_arch(data: &[u8]) -> Option<&'static str> {
    if data.len() < 20 || data[..4] != *b"\x7fELF" {
        return None;
    }
    let wide = data[4] == 2;
    let machine = match data[5] {
        1 => u16::from_le_bytes([data[18], data[19]]),
        2 => u16::from_be_bytes([data[18], data[19]]),
        _ => return None,
    };
    Some(match (machine, wide) {
        (62, true) => "x86_64",
        (3, false) => "x86_32",
        (183, true) => "arm_64",
        (40, false) => "arm_32",
        (243, true) => "riscv_64",
        (243, false) => "riscv_32",
        _ => return None,
    })
}

/// Every executable in `file`'s read-only data, in segment order. The format is recognised
/// from the bytes: an ELF is `embedded-elf-<arch>` for the architecture its header names (or
/// `system-elf-<arch>` when the module's strings name only that one), a VM bytecode module is
/// `vmvx-bytecode-fb`, a `VKE1` header in a module that names `vulkan-spirv-fb` is that. A module that does not verify is a [`VmfbError`]; segments that are
/// not executables are skipped.
pub fn executables_in_vmfb(file: &VmfbFile) -> Result<Vec<EmbeddedExecutable>, VmfbError> {
    let module = file.module()?;
    let count = module.rodata_segments().len();
    let segments: Vec<&[u8]> = (0..count)
        .map(|k| module.rodata(k).unwrap_or(&[]))
        .collect();
    let names_format = |format: &str| segments.contains(&format.as_bytes());
    let mut found = Vec::new();
    for (segment, data) in segments.iter().enumerate() {
        let format = if let Some(arch) = elf_arch(data) {
            let system = format!("system-elf-{arch}");
            let embedded = format!("embedded-elf-{arch}");
            if names_format(&system) && !names_format(&embedded) {
                system
            } else {
                embedded
            }
        } else if data.len() >= 64 && data[..4] == *b"VKE1" && names_format("vulkan-spirv-fb") {
            "vulkan-spirv-fb".to_owned()
        } else if BytecodeModule::parse(data).is_ok() {
            VMVX_FORMAT.to_owned()
        } else {
            continue;
        };
        found.push(EmbeddedExecutable {
            segment,
            format,
            data: data.to_vec(),
        });
    }
    Ok(found)
}
