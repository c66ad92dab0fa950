//! Where the FlatBuffer and the read-only data sit in a `.vmfb` file.
//!
//! IREE's runtime reads the container this way (facts sheet §2): if the file starts with a ZIP
//! local-file signature, skip that header (30 bytes, the name and the extra field) to reach the
//! first entry; there, a little-endian `u32` size prefix precedes the FlatBuffer. External
//! read-only data lives at `align64(end of the FlatBuffer) + external_data_offset`, measured
//! from the start of the file, whichever the container.

use std::ops::Range;

use super::{VmfbError, VmfbErrorKind};

/// The two containers IREE writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Container {
    /// The FlatBuffer as the first (stored) entry of a ZIP archive; IREE's default.
    Zip,
    /// The bare size-prefixed FlatBuffer (`--iree-vm-emit-polyglot-zip=false`).
    FlatBuffer,
}

impl Container {
    /// `zip` or `flatbuffer`, as `pactum inspect --json` writes it.
    pub fn name(self) -> &'static str {
        match self {
            Container::Zip => "zip",
            Container::FlatBuffer => "flatbuffer",
        }
    }
}

/// The layout of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerLayout {
    /// Which container.
    pub container: Container,
    /// The size-prefixed FlatBuffer: the 4-byte prefix and the buffer it sizes.
    pub flatbuffer: Range<usize>,
    /// Where external read-only data offsets count from.
    pub rodata_base: u64,
}

pub(crate) const ZIP_LOCAL_SIGNATURE: [u8; 4] = *b"PK\x03\x04";
const ZIP_LOCAL_HEADER_SIZE: usize = 30;
pub(crate) const RODATA_ALIGNMENT: u64 = 64;

fn u16_at(bytes: &[u8], pos: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        bytes.get(pos..pos.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(bytes: &[u8], pos: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        bytes.get(pos..pos.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Finds the FlatBuffer in `file` and checks its identifier.
pub(crate) fn locate(file: &[u8]) -> Result<ContainerLayout, VmfbError> {
    let (container, start) = if file.starts_with(&ZIP_LOCAL_SIGNATURE) {
        if file.len() < ZIP_LOCAL_HEADER_SIZE {
            return Err(VmfbError::at(
                file.len(),
                VmfbErrorKind::ZipHeaderTruncated {
                    file_len: file.len(),
                },
            ));
        }
        let method = u16_at(file, 8).unwrap_or(0);
        if method != 0 {
            return Err(VmfbError::at(8, VmfbErrorKind::CompressedEntry { method }));
        }
        let name_len = usize::from(u16_at(file, 26).unwrap_or(0));
        let extra_len = usize::from(u16_at(file, 28).unwrap_or(0));
        (Container::Zip, ZIP_LOCAL_HEADER_SIZE + name_len + extra_len)
    } else {
        (Container::FlatBuffer, 0)
    };
    // The runtime needs the prefix, the root offset, a file identifier and a vtable offset.
    if file.len() < start.saturating_add(16) {
        return Err(VmfbError::at(
            start.min(file.len()),
            VmfbErrorKind::TooShort {
                file_len: file.len(),
            },
        ));
    }
    let size = u32_at(file, start).unwrap_or(0);
    let end = start
        .checked_add(4)
        .and_then(|s| s.checked_add(size as usize))
        .filter(|&end| end <= file.len())
        .ok_or_else(|| {
            VmfbError::at(
                start,
                VmfbErrorKind::SizePrefixPastEnd {
                    size,
                    file_len: file.len(),
                },
            )
        })?;
    let identifier: [u8; 4] = file[start + 8..start + 12].try_into().unwrap_or([0; 4]);
    if &identifier != b"IREE" {
        return Err(VmfbError::at(
            start + 8,
            VmfbErrorKind::NotAVmfb { identifier },
        ));
    }
    Ok(ContainerLayout {
        container,
        flatbuffer: start..end,
        rodata_base: (end as u64).div_ceil(RODATA_ALIGNMENT) * RODATA_ALIGNMENT,
    })
}
