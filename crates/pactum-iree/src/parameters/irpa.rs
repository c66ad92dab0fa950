//! IREE's parameter archive (`.irpa`): reading and writing.
//!
//! Layout (IREE's `iree/schemas/parameter_archive.h`, all little-endian, packed): a file holds
//! one or more archives linked by `next_header_offset`; every offset in an archive is relative
//! to its header. The v0 header (88 bytes) is
//! `magic "IRPA" | version_major u16 | version_minor u16 | header_size u64 |
//! next_header_offset u64 | flags u64 | entry_count u64 | entry_segment {offset, length} |
//! metadata_segment {offset, length} | storage_segment {offset, length}`.
//! The entry table holds entries aligned to 16 bytes, each starting with a 60-byte header
//! `entry_size u64 | type u32 | flags u64 | name {offset, length} | metadata {offset, length} |
//! minimum_alignment u64` (names and metadata in the metadata segment), followed for a splat
//! (type 1) by `length u64 | pattern [16] | pattern_length u8` and for data (type 2) by
//! `storage {offset, length}` in the storage segment. Type 0 entries are skipped; type 3
//! (external files) is refused, as IREE's own reader refuses it.

use std::io::{self, Write};
use std::sync::Arc;

use super::index::{
    ParameterEntry, ParameterError, ParameterIndex, ParameterStorage, SharedBytes, check_splat,
    read_range, read_u16, read_u32, read_u64,
};

const MAGIC: &[u8; 4] = b"IRPA";
/// The fields every header version starts with.
const PREFIX_SIZE: u64 = 32;
/// The whole version-0 header.
const HEADER_V0_SIZE: u64 = 88;
/// The header every entry type starts with.
const ENTRY_HEADER_SIZE: u64 = 60;
const SPLAT_ENTRY_SIZE: u64 = ENTRY_HEADER_SIZE + 8 + 16 + 1;
const DATA_ENTRY_SIZE: u64 = ENTRY_HEADER_SIZE + 16;
const ENTRY_ALIGNMENT: u64 = 16;
/// The alignment IREE's archive builder gives every data entry, and pactum's too.
const DATA_ALIGNMENT: u64 = 64;
/// The file size IREE's builder pads archives to (a page, for fast memory mapping).
const FILE_ALIGNMENT: u64 = 4096;

const ENTRY_SKIP: u32 = 0;
const ENTRY_SPLAT: u32 = 1;
const ENTRY_DATA: u32 = 2;
const ENTRY_EXTERNAL: u32 = 3;

/// A `{offset, length}` pair of the format.
#[derive(Clone, Copy, Debug)]
struct Range {
    offset: u64,
    length: u64,
}

impl Range {
    /// The range at byte `at` (known to be inside the file).
    fn read(bytes: &[u8], at: u64) -> Option<Range> {
        Some(Range {
            offset: read_u64(bytes, at)?,
            length: read_u64(bytes, at + 8)?,
        })
    }

    fn end(self) -> Option<u64> {
        self.offset.checked_add(self.length)
    }
}

/// Reads every archive of the file in `source` into an index.
pub(super) fn read(source: &SharedBytes) -> Result<ParameterIndex, ParameterError> {
    let bytes: &[u8] = (**source).as_ref();
    let file_len = bytes.len() as u64;
    let mut index = ParameterIndex::new();
    let mut base = 0u64;
    loop {
        let truncated = || {
            ParameterError::at(
                base,
                format!(
                    "IRPA header truncated: the file has {} bytes from here, a header needs {PREFIX_SIZE}",
                    file_len.saturating_sub(base)
                ),
            )
        };
        let prefix = read_range(bytes, base, PREFIX_SIZE).ok_or_else(truncated)?;
        if &prefix[..4] != MAGIC {
            return Err(ParameterError::at(
                base,
                format!(
                    "IRPA header magic is {:02x?}, expected \"IRPA\"",
                    &prefix[..4]
                ),
            ));
        }
        let major = read_u16(bytes, base + 4).ok_or_else(truncated)?;
        let minor = read_u16(bytes, base + 6).ok_or_else(truncated)?;
        let header_size = read_u64(bytes, base + 8).ok_or_else(truncated)?;
        let next = read_u64(bytes, base + 16).ok_or_else(truncated)?;
        if major != 0 || minor != 0 {
            return Err(ParameterError::at(
                base + 4,
                format!("IRPA version {major}.{minor} is not supported (only 0.0)"),
            ));
        }
        if header_size != HEADER_V0_SIZE {
            return Err(ParameterError::at(
                base + 8,
                format!("IRPA v0 header size is {header_size}, expected {HEADER_V0_SIZE}"),
            ));
        }
        if read_range(bytes, base, HEADER_V0_SIZE).is_none() {
            return Err(ParameterError::at(
                base,
                format!(
                    "IRPA header truncated: the file has {} bytes from here, the header has {HEADER_V0_SIZE}",
                    file_len - base
                ),
            ));
        }
        read_archive(source, bytes, base, &mut index)?;
        if next == 0 {
            return Ok(index);
        }
        // Offsets only grow (`next` is unsigned and non-zero), so the chain ends.
        base = match base.checked_add(next) {
            Some(b) if b < file_len => b,
            _ => {
                return Err(ParameterError::at(
                    base + 16,
                    format!(
                        "next archive header at byte {} is outside the {file_len}-byte file",
                        base as u128 + next as u128
                    ),
                ));
            }
        };
    }
}

/// Reads the version-0 archive whose header is at `base` (its 88 bytes are in the file).
fn read_archive(
    source: &SharedBytes,
    bytes: &[u8],
    base: u64,
    index: &mut ParameterIndex,
) -> Result<(), ParameterError> {
    let file_len = bytes.len() as u64;
    let field = |at: u64| read_u64(bytes, base + at).unwrap_or(0);
    let range = |at: u64| {
        Range::read(bytes, base + at).unwrap_or(Range {
            offset: 0,
            length: 0,
        })
    };
    let entry_count = field(32);
    let entry_segment = range(40);
    let metadata_segment = range(56);
    let storage_segment = range(72);
    // Each segment must lie inside the file; afterwards references are checked against the
    // segments alone.
    for (name, at, segment) in [
        ("entry table", 40, entry_segment),
        ("metadata segment", 56, metadata_segment),
        ("storage segment", 72, storage_segment),
    ] {
        let inside = segment.length == 0
            || base
                .checked_add(segment.offset)
                .and_then(|start| start.checked_add(segment.length))
                .is_some_and(|end| end <= file_len);
        if !inside {
            return Err(ParameterError::at(
                base + at,
                format!(
                    "{name} ({} bytes at header-relative byte {}) is outside the {file_len}-byte file",
                    segment.length, segment.offset
                ),
            ));
        }
    }
    let segment_start = |segment: Range| base + segment.offset;
    let mut entry_at = segment_start(entry_segment);
    let mut remaining = entry_segment.length;
    // The loop is bounded by the table's bytes: every entry takes at least 64 of them.
    for i in 0..entry_count {
        if remaining < ENTRY_HEADER_SIZE {
            return Err(ParameterError::at(
                entry_at,
                format!(
                    "entry table truncated: entry {i} of {entry_count} needs a {ENTRY_HEADER_SIZE}-byte header, {remaining} bytes of the table are left"
                ),
            ));
        }
        let this_entry = entry_at;
        let header = |at: u64| read_u64(bytes, this_entry + at).unwrap_or(0);
        let entry_size = header(0);
        let kind = read_u32(bytes, entry_at + 8).unwrap_or(0);
        let name_ref = Range::read(bytes, entry_at + 20).unwrap_or(Range {
            offset: 0,
            length: 0,
        });
        let metadata_ref = Range::read(bytes, entry_at + 36).unwrap_or(Range {
            offset: 0,
            length: 0,
        });
        if entry_size < ENTRY_HEADER_SIZE || entry_size > remaining {
            return Err(ParameterError::at(
                entry_at,
                format!(
                    "entry {i}: size {entry_size} is not between {ENTRY_HEADER_SIZE} and the {remaining} bytes left in the entry table"
                ),
            ));
        }
        let aligned = entry_size.next_multiple_of(ENTRY_ALIGNMENT);
        entry_at += aligned.min(remaining);
        remaining = remaining.saturating_sub(aligned);

        let metadata_bytes = |what: &str, at: u64, r: Range| -> Result<&[u8], ParameterError> {
            if r.length == 0 {
                return Ok(&[]);
            }
            match r.end() {
                Some(end) if end <= metadata_segment.length => {
                    Ok(
                        read_range(bytes, segment_start(metadata_segment) + r.offset, r.length)
                            .unwrap_or(&[]),
                    )
                }
                _ => Err(ParameterError::at(
                    this_entry + at,
                    format!(
                        "entry {i}: {what} ({} bytes at byte {} of the metadata segment) is outside the {}-byte segment",
                        r.length, r.offset, metadata_segment.length
                    ),
                )),
            }
        };
        let name = metadata_bytes("name", 20, name_ref)?;
        let metadata = metadata_bytes("metadata", 36, metadata_ref)?;
        let key = match std::str::from_utf8(name) {
            Ok(key) => key.to_owned(),
            Err(_) => {
                return Err(ParameterError::at(
                    this_entry + 20,
                    format!("entry {i}: name {name:02x?} is not UTF-8"),
                ));
            }
        };
        let storage = match kind {
            ENTRY_SKIP => continue,
            ENTRY_SPLAT => {
                if entry_size < SPLAT_ENTRY_SIZE {
                    return Err(ParameterError::at(
                        this_entry,
                        format!(
                            "entry {i} (`{key}`): a splat entry has {SPLAT_ENTRY_SIZE} bytes, its size says {entry_size}"
                        ),
                    ));
                }
                let length = header(ENTRY_HEADER_SIZE);
                let pattern_at = this_entry + ENTRY_HEADER_SIZE + 8;
                let pattern_len =
                    read_range(bytes, pattern_at + 16, 1).map_or(0, |b| b[0] as usize);
                check_splat(pattern_len).map_err(|why| {
                    ParameterError::at(pattern_at + 16, format!("entry {i} (`{key}`): {why}"))
                })?;
                let pattern = read_range(bytes, pattern_at, pattern_len as u64)
                    .unwrap_or(&[])
                    .to_vec();
                ParameterStorage::Splat { pattern, length }
            }
            ENTRY_DATA => {
                if entry_size < DATA_ENTRY_SIZE {
                    return Err(ParameterError::at(
                        this_entry,
                        format!(
                            "entry {i} (`{key}`): a data entry has {DATA_ENTRY_SIZE} bytes, its size says {entry_size}"
                        ),
                    ));
                }
                let r = Range::read(bytes, this_entry + ENTRY_HEADER_SIZE).unwrap_or(Range {
                    offset: 0,
                    length: 0,
                });
                let inside =
                    r.length == 0 || r.end().is_some_and(|end| end <= storage_segment.length);
                if !inside {
                    return Err(ParameterError::at(
                        this_entry + ENTRY_HEADER_SIZE,
                        format!(
                            "entry {i} (`{key}`): data ({} bytes at byte {} of the storage segment) is outside the {}-byte segment",
                            r.length, r.offset, storage_segment.length
                        ),
                    ));
                }
                let offset = if r.length == 0 {
                    0
                } else {
                    segment_start(storage_segment) + r.offset
                };
                // Inside the file, so inside `usize`.
                ParameterStorage::Data {
                    source: Arc::clone(source),
                    offset: offset as usize,
                    length: r.length as usize,
                }
            }
            ENTRY_EXTERNAL => {
                return Err(ParameterError::at(
                    this_entry + 8,
                    format!(
                        "entry {i} (`{key}`) refers to an external file, which IREE's archive reader does not support either"
                    ),
                ));
            }
            other => {
                return Err(ParameterError::at(
                    this_entry + 8,
                    format!("entry {i} (`{key}`): unknown entry type {other}"),
                ));
            }
        };
        index.insert_first(ParameterEntry {
            key,
            metadata: metadata.to_vec(),
            storage,
        });
    }
    Ok(())
}

/// What one entry takes in the archive being written.
struct Planned<'a> {
    entry: &'a ParameterEntry,
    /// The entry's bytes for a data entry.
    data: Option<&'a [u8]>,
    /// Offset in the storage segment (data entries).
    storage_offset: u64,
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Writes `index` as one version-0 archive, laid out as IREE's archive builder lays it out:
/// header, entry table (entries aligned to 16), metadata (each name followed by its
/// metadata), storage (each data entry aligned to 64), zeros up to a multiple of 4096.
pub(super) fn write(index: &ParameterIndex, out: &mut impl Write) -> io::Result<()> {
    let mut planned = Vec::with_capacity(index.len());
    let mut entry_table = 0u64;
    let mut metadata_size = 0u64;
    let mut storage_size = 0u64;
    let mut first_data = true;
    let mut storage_alignment = 1;
    for entry in index.entries() {
        let (size, data, storage_offset) = match &entry.storage {
            ParameterStorage::Splat { pattern, .. } => {
                check_splat(pattern.len())
                    .map_err(|why| invalid(format!("entry `{}`: {why}", entry.key)))?;
                (SPLAT_ENTRY_SIZE, None, 0)
            }
            storage @ ParameterStorage::Data { .. } => {
                let data = storage.data().ok_or_else(|| {
                    invalid(format!(
                        "entry `{}`: its range is outside its source bytes",
                        entry.key
                    ))
                })?;
                let offset = storage_size.next_multiple_of(DATA_ALIGNMENT);
                storage_size = offset + data.len() as u64;
                if first_data {
                    storage_alignment = DATA_ALIGNMENT;
                    first_data = false;
                }
                (DATA_ENTRY_SIZE, Some(data), offset)
            }
        };
        entry_table = entry_table.next_multiple_of(ENTRY_ALIGNMENT) + size;
        metadata_size += entry.key.len() as u64 + entry.metadata.len() as u64;
        planned.push(Planned {
            entry,
            data,
            storage_offset,
        });
    }
    let entry_segment = Range {
        offset: HEADER_V0_SIZE.next_multiple_of(ENTRY_ALIGNMENT),
        length: entry_table,
    };
    let metadata_segment = Range {
        offset: entry_segment.offset + entry_segment.length,
        length: metadata_size,
    };
    let storage_segment = Range {
        offset: (metadata_segment.offset + metadata_segment.length)
            .next_multiple_of(storage_alignment),
        length: storage_size,
    };
    let total = (storage_segment.offset + storage_segment.length).next_multiple_of(FILE_ALIGNMENT);

    let mut w = Counting { out, written: 0 };
    w.put(MAGIC)?;
    w.put(&0u16.to_le_bytes())?; // version_major
    w.put(&0u16.to_le_bytes())?; // version_minor
    w.u64(HEADER_V0_SIZE)?;
    w.u64(0)?; // next_header_offset
    w.u64(0)?; // flags
    w.u64(planned.len() as u64)?;
    for segment in [entry_segment, metadata_segment, storage_segment] {
        w.range(segment)?;
    }
    let mut metadata_offset = 0u64;
    for plan in &planned {
        w.pad_to(w.written.next_multiple_of(ENTRY_ALIGNMENT))?;
        let entry = plan.entry;
        let name = Range {
            offset: metadata_offset,
            length: entry.key.len() as u64,
        };
        metadata_offset += name.length;
        let metadata = Range {
            offset: if entry.metadata.is_empty() {
                0
            } else {
                metadata_offset
            },
            length: entry.metadata.len() as u64,
        };
        metadata_offset += metadata.length;
        let (size, kind, alignment) = match plan.data {
            None => (SPLAT_ENTRY_SIZE, ENTRY_SPLAT, 0),
            Some(_) => (DATA_ENTRY_SIZE, ENTRY_DATA, DATA_ALIGNMENT),
        };
        w.u64(size)?;
        w.put(&kind.to_le_bytes())?;
        w.u64(0)?; // flags
        w.range(name)?;
        w.range(metadata)?;
        w.u64(alignment)?;
        match (&entry.storage, plan.data) {
            (ParameterStorage::Splat { pattern, length }, _) => {
                w.u64(*length)?;
                let mut field = [0u8; 16];
                field[..pattern.len()].copy_from_slice(pattern);
                w.put(&field)?;
                w.put(&[pattern.len() as u8])?;
            }
            (_, data) => w.range(Range {
                offset: plan.storage_offset,
                length: data.map_or(0, |d| d.len() as u64),
            })?,
        }
    }
    for plan in &planned {
        w.put(plan.entry.key.as_bytes())?;
        w.put(&plan.entry.metadata)?;
    }
    for plan in &planned {
        if let Some(data) = plan.data {
            w.pad_to(storage_segment.offset + plan.storage_offset)?;
            w.put(data)?;
        }
    }
    w.pad_to(total)
}

/// A writer that counts what it wrote, for padding.
struct Counting<'a, W: Write> {
    out: &'a mut W,
    written: u64,
}

impl<W: Write> Counting<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn u64(&mut self, value: u64) -> io::Result<()> {
        self.put(&value.to_le_bytes())
    }

    fn range(&mut self, range: Range) -> io::Result<()> {
        self.u64(range.offset)?;
        self.u64(range.length)
    }

    /// Writes zeros up to byte `offset`.
    fn pad_to(&mut self, offset: u64) -> io::Result<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        while self.written < offset {
            let n = (offset - self.written).min(ZEROS.len() as u64) as usize;
            self.put(&ZEROS[..n])?;
        }
        Ok(())
    }
}
