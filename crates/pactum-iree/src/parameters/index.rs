//! The index types: entries (data in shared bytes, or splats), the index of them by key, and
//! the error every reader returns; below the format readers, which build these.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

/// Why an archive could not be read: what was wrong, in which file, at which byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterError {
    /// The file, when the archive came from one.
    pub path: Option<PathBuf>,
    /// The byte offset the problem was found at, when it is about one.
    pub offset: Option<u64>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for ParameterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        if let Some(offset) = self.offset {
            write!(f, "at byte {offset}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParameterError {}

impl ParameterError {
    /// An error at byte `offset` of the archive (the file is named by
    /// [`ParameterIndex::open`]).
    pub(crate) fn at(offset: u64, message: impl Into<String>) -> ParameterError {
        ParameterError {
            path: None,
            offset: Some(offset),
            message: message.into(),
        }
    }
}

/// Bytes shared by the entries that live in them: a memory-mapped archive, or a buffer.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where an entry's bytes are.
#[derive(Clone)]
pub enum ParameterStorage {
    /// `length` bytes at `offset` of `source` (a mapped file or an in-memory buffer).
    Data {
        /// The whole archive or buffer.
        source: SharedBytes,
        /// Byte offset of the entry in `source`.
        offset: usize,
        /// Byte length of the entry.
        length: usize,
    },
    /// `length` bytes made of `pattern` repeated (1, 2, 4, 8 or 16 bytes, as IREE allows); the
    /// last repetition is cut short when `length` is not a multiple of the pattern's size.
    Splat {
        /// The repeated bytes.
        pattern: Vec<u8>,
        /// Byte length of the entry.
        length: u64,
    },
}

impl fmt::Debug for ParameterStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParameterStorage::Data { offset, length, .. } => f
                .debug_struct("Data")
                .field("offset", offset)
                .field("length", length)
                .finish_non_exhaustive(),
            ParameterStorage::Splat { pattern, length } => f
                .debug_struct("Splat")
                .field("pattern", pattern)
                .field("length", length)
                .finish(),
        }
    }
}

impl ParameterStorage {
    /// The entry's length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            ParameterStorage::Data { length, .. } => *length as u64,
            ParameterStorage::Splat { length, .. } => *length,
        }
    }

    /// Whether the entry has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of a data entry (`None` for a splat).
    pub fn data(&self) -> Option<&[u8]> {
        match self {
            ParameterStorage::Data {
                source,
                offset,
                length,
            } => (**source)
                .as_ref()
                .get(*offset..offset.checked_add(*length)?),
            ParameterStorage::Splat { .. } => None,
        }
    }
}

/// One named parameter.
#[derive(Clone, Debug)]
pub struct ParameterEntry {
    /// The key programs name it by.
    pub key: String,
    /// Opaque metadata the archive stores with it (empty when none).
    pub metadata: Vec<u8>,
    /// Its bytes.
    pub storage: ParameterStorage,
}

/// Named parameters, in the order added; a key added again replaces the earlier entry (when
/// an archive holds a key twice, its readers keep the first, the one IREE's lookup finds).
#[derive(Clone, Debug, Default)]
pub struct ParameterIndex {
    entries: Vec<ParameterEntry>,
    by_key: HashMap<String, usize>,
    /// The file the index was opened from ([`ParameterIndex::open`]), which its data entries'
    /// `source` is: what lets `io_parameters.load` map an entry's pages for a buffer.
    archive: Option<Arc<ArchiveFile>>,
}

/// An archive file and its read-only mapping: the bytes the data entries of an index opened
/// from a file point into. The file stays open so that a buffer can map an entry's pages of
/// its own (copy-on-write) rather than copy them.
pub(crate) struct ArchiveFile {
    file: File,
    map: memmap2::Mmap,
}

impl fmt::Debug for ArchiveFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArchiveFile")
            .field("len", &self.map.len())
            .finish_non_exhaustive()
    }
}

impl AsRef<[u8]> for ArchiveFile {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl ArchiveFile {
    /// `file` and its read-only `map`.
    pub(super) fn new(file: File, map: memmap2::Mmap) -> ArchiveFile {
        ArchiveFile { file, map }
    }

    /// The file.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }
}

impl ParameterIndex {
    /// An empty index.
    pub fn new() -> ParameterIndex {
        ParameterIndex::default()
    }

    /// Adds (or replaces) a data entry `key` holding `bytes` (kept, not copied).
    pub fn add_data(
        &mut self,
        key: impl Into<String>,
        bytes: impl AsRef<[u8]> + Send + Sync + 'static,
    ) {
        let length = bytes.as_ref().len();
        self.insert(ParameterEntry {
            key: key.into(),
            metadata: Vec::new(),
            storage: ParameterStorage::Data {
                source: Arc::new(bytes),
                offset: 0,
                length,
            },
        });
    }

    /// Adds (or replaces) a data entry `key` holding `length` bytes at `offset` of `source`
    /// (shared, not copied); an error when the range is not inside `source`.
    pub fn add_shared(
        &mut self,
        key: impl Into<String>,
        source: SharedBytes,
        offset: usize,
        length: usize,
    ) -> Result<(), ParameterError> {
        let available = (*source).as_ref().len();
        if offset.checked_add(length).is_none_or(|end| end > available) {
            return Err(ParameterError {
                path: None,
                offset: Some(offset as u64),
                message: format!(
                    "{length} bytes at byte {offset} are outside the {available}-byte source"
                ),
            });
        }
        self.insert(ParameterEntry {
            key: key.into(),
            metadata: Vec::new(),
            storage: ParameterStorage::Data {
                source,
                offset,
                length,
            },
        });
        Ok(())
    }

    /// Adds (or replaces) a splat entry `key`: `length` bytes of `pattern` repeated (the last
    /// repetition cut short when `length` is not a multiple of its size). The pattern has 1,
    /// 2, 4, 8 or 16 bytes, as IREE's archives require.
    pub fn add_splat(
        &mut self,
        key: impl Into<String>,
        pattern: &[u8],
        length: u64,
    ) -> Result<(), ParameterError> {
        check_splat(pattern.len()).map_err(|message| ParameterError {
            path: None,
            offset: None,
            message,
        })?;
        self.insert(ParameterEntry {
            key: key.into(),
            metadata: Vec::new(),
            storage: ParameterStorage::Splat {
                pattern: pattern.to_vec(),
                length,
            },
        });
        Ok(())
    }

    /// Sets the metadata of entry `key` (opaque bytes stored with it in an `.irpa`); `false`
    /// when there is no such entry.
    pub fn set_metadata(&mut self, key: &str, metadata: impl Into<Vec<u8>>) -> bool {
        match self.by_key.get(key) {
            Some(&k) => {
                self.entries[k].metadata = metadata.into();
                true
            }
            None => false,
        }
    }

    /// Adds (or replaces) an entry.
    pub fn insert(&mut self, entry: ParameterEntry) {
        match self.by_key.get(&entry.key) {
            Some(&k) => self.entries[k] = entry,
            None => {
                self.by_key.insert(entry.key.clone(), self.entries.len());
                self.entries.push(entry);
            }
        }
    }

    /// Adds an entry unless one named `key` is already there: an archive's readers keep the
    /// first of entries with the same key, the one IREE's lookup finds.
    pub(super) fn insert_first(&mut self, entry: ParameterEntry) {
        if !self.by_key.contains_key(&entry.key) {
            self.insert(entry);
        }
    }

    /// Records that the index was read from `archive` (its data entries point into it).
    pub(super) fn set_archive(&mut self, archive: Arc<ArchiveFile>) {
        self.archive = Some(archive);
    }

    /// The archive file the index was opened from, when `source` (a data entry's) is its
    /// mapping: the file whose pages a buffer of the entry may map.
    pub(crate) fn archive_of(&self, source: &SharedBytes) -> Option<&ArchiveFile> {
        self.archive.as_deref().filter(|archive| {
            std::ptr::addr_eq(Arc::as_ptr(source), *archive as *const ArchiveFile)
        })
    }

    /// The entry named `key`.
    pub fn get(&self, key: &str) -> Option<&ParameterEntry> {
        self.by_key.get(key).map(|&k| &self.entries[k])
    }

    /// The entries, in the order added.
    pub fn entries(&self) -> &[ParameterEntry] {
        &self.entries
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why a splat with a `pattern_len`-byte pattern is refused, if it is. Its length need not be
/// a multiple of the pattern's: IREE's tools write such splats
/// (`iree-convert-parameters --splat=w=x32=..` over a 5-byte entry), the last repetition cut
/// short.
pub(super) fn check_splat(pattern_len: usize) -> Result<(), String> {
    if !matches!(pattern_len, 1 | 2 | 4 | 8 | 16) {
        return Err(format!(
            "splat pattern of {pattern_len} bytes: must be 1, 2, 4, 8 or 16 bytes"
        ));
    }
    Ok(())
}

/// The little-endian `u16` at byte `offset`, if the bytes are there.
pub(super) fn read_u16(bytes: &[u8], offset: u64) -> Option<u16> {
    read_array(bytes, offset).map(u16::from_le_bytes)
}

/// The little-endian `u32` at byte `offset`, if the bytes are there.
pub(super) fn read_u32(bytes: &[u8], offset: u64) -> Option<u32> {
    read_array(bytes, offset).map(u32::from_le_bytes)
}

/// The little-endian `u64` at byte `offset`, if the bytes are there.
pub(super) fn read_u64(bytes: &[u8], offset: u64) -> Option<u64> {
    read_array(bytes, offset).map(u64::from_le_bytes)
}

fn read_array<const N: usize>(bytes: &[u8], offset: u64) -> Option<[u8; N]> {
    let start = usize::try_from(offset).ok()?;
    bytes.get(start..start.checked_add(N)?)?.try_into().ok()
}

/// The `length` bytes at `offset`, if they are all inside `bytes`.
pub(super) fn read_range(bytes: &[u8], offset: u64, length: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(length).ok()?)?;
    bytes.get(start..end)
}
