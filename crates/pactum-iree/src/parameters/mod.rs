//! Parameter archives (IREE's `.irpa`, `.safetensors`, `.gguf`) and the indexes and scopes
//! through which IREE's `io_parameters` module finds a program's named parameters.
//!
//! A [`ParameterIndex`] maps keys to entries: bytes in a file (memory-mapped) or in memory,
//! or a splat (a repeated pattern). A [`ParameterProvider`] holds indexes by scope, as
//! `iree-run-module --parameters=SCOPE=FILE` does: a program's `#flow.parameter.named<"model"::"w">`
//! is key `w` in scope `model`; the empty scope is the one a bare `--parameters=FILE` names.

mod gguf;
mod io_module;
mod irpa;
mod safetensors;

pub use io_module::{IO_PARAMETERS_MODULE_NAME, IO_PARAMETERS_MODULE_VERSION, IoParametersModule};

use std::collections::HashMap;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
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

/// The archive formats, told apart by their first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArchiveFormat {
    Irpa,
    Safetensors,
    Gguf,
}

impl ArchiveFormat {
    fn detect(contents: &[u8]) -> Result<ArchiveFormat, ParameterError> {
        if contents.starts_with(b"IRPA") {
            return Ok(ArchiveFormat::Irpa);
        }
        if contents.starts_with(b"GGUF") {
            return Ok(ArchiveFormat::Gguf);
        }
        // safetensors: a little-endian u64 header length, then that many bytes of JSON object.
        if let Some(length) = read_u64(contents, 0) {
            let fits = (contents.len() as u64 - 8) >= length;
            let json = contents.get(8..).map(|rest| rest.trim_ascii_start());
            if fits && json.is_some_and(|j| j.starts_with(b"{")) {
                return Ok(ArchiveFormat::Safetensors);
            }
        }
        Err(ParameterError::at(
            0,
            format!(
                "not a parameter archive ({} bytes): expected an IREE archive (.irpa, starting \
                 with `IRPA`), a GGUF file (starting with `GGUF`) or a safetensors file (an \
                 8-byte little-endian header length, then a JSON object)",
                contents.len()
            ),
        ))
    }
}

/// Why a splat of a `pattern_len`-byte pattern over `length` bytes is refused, if it is.
fn check_splat(pattern_len: usize, length: u64) -> Result<(), String> {
    if !matches!(pattern_len, 1 | 2 | 4 | 8 | 16) {
        return Err(format!(
            "splat pattern of {pattern_len} bytes: must be 1, 2, 4, 8 or 16 bytes"
        ));
    }
    if length % pattern_len as u64 != 0 {
        return Err(format!(
            "splat of {length} bytes is not a whole number of its {pattern_len}-byte pattern"
        ));
    }
    Ok(())
}

/// The little-endian `u16` at byte `offset`, if the bytes are there.
fn read_u16(bytes: &[u8], offset: u64) -> Option<u16> {
    read_array(bytes, offset).map(u16::from_le_bytes)
}

/// The little-endian `u32` at byte `offset`, if the bytes are there.
fn read_u32(bytes: &[u8], offset: u64) -> Option<u32> {
    read_array(bytes, offset).map(u32::from_le_bytes)
}

/// The little-endian `u64` at byte `offset`, if the bytes are there.
fn read_u64(bytes: &[u8], offset: u64) -> Option<u64> {
    read_array(bytes, offset).map(u64::from_le_bytes)
}

fn read_array<const N: usize>(bytes: &[u8], offset: u64) -> Option<[u8; N]> {
    let start = usize::try_from(offset).ok()?;
    bytes.get(start..start.checked_add(N)?)?.try_into().ok()
}

/// The `length` bytes at `offset`, if they are all inside `bytes`.
fn read_range(bytes: &[u8], offset: u64, length: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(length).ok()?)?;
    bytes.get(start..end)
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
    /// `length` bytes made of `pattern` repeated (1, 2, 4, 8 or 16 bytes, as IREE allows).
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

/// Named parameters, in the order added; a key added again replaces the earlier entry.
#[derive(Clone, Debug, Default)]
pub struct ParameterIndex {
    entries: Vec<ParameterEntry>,
    by_key: HashMap<String, usize>,
}

impl ParameterIndex {
    /// An empty index.
    pub fn new() -> ParameterIndex {
        ParameterIndex::default()
    }

    /// Reads the archive at `path` (`.irpa`, `.safetensors` or `.gguf`, told apart by their
    /// contents, not by the file name), memory-mapped: data entries point into the mapping,
    /// which lives as long as any of them.
    ///
    /// Errors name the file, the byte offset of what was wrong and what it was; every
    /// offset and length the archive declares is checked against the file before use.
    pub fn open(path: impl AsRef<Path>) -> Result<ParameterIndex, ParameterError> {
        let path = path.as_ref();
        let fail = |message: String| ParameterError {
            path: Some(path.to_owned()),
            offset: None,
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        // SAFETY: the mapping is read-only and private; pactum only reads it. As with every
        // memory-mapped file, another process truncating or rewriting the file while it is
        // mapped is outside what Rust can guard against; IREE maps its archives the same way.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| fail(format!("cannot memory-map: {e}")))?;
        let source: SharedBytes = Arc::new(map);
        ParameterIndex::from_bytes(source).map_err(|mut e| {
            e.path = Some(path.to_owned());
            e
        })
    }

    /// Reads an archive held in memory (`.irpa`, `.safetensors` or `.gguf`, told apart by
    /// their contents): data entries point into `bytes` without a copy.
    pub fn from_bytes(bytes: SharedBytes) -> Result<ParameterIndex, ParameterError> {
        let contents = (*bytes).as_ref();
        match ArchiveFormat::detect(contents)? {
            ArchiveFormat::Irpa => irpa::read(&bytes),
            ArchiveFormat::Safetensors => safetensors::read(&bytes),
            ArchiveFormat::Gguf => gguf::read(&bytes),
        }
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

    /// Adds (or replaces) a splat entry `key`: `length` bytes of `pattern` repeated. The
    /// pattern has 1, 2, 4, 8 or 16 bytes and `length` is a multiple of its size, as IREE's
    /// archives require.
    pub fn add_splat(
        &mut self,
        key: impl Into<String>,
        pattern: &[u8],
        length: u64,
    ) -> Result<(), ParameterError> {
        check_splat(pattern.len(), length).map_err(|message| ParameterError {
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

    /// Writes the index as an IREE parameter archive (`.irpa`) that IREE's tools and
    /// runtime read: data entries copied into the archive (each aligned to 64 bytes), splats
    /// and metadata kept. The archive is padded to a multiple of 4096 bytes, as IREE's.
    pub fn write_irpa(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        irpa::write(self, out)
    }

    /// Writes the index as an IREE parameter archive at `path` (see
    /// [`write_irpa`](ParameterIndex::write_irpa)); the file is replaced.
    pub fn write_irpa_file(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        let file = std::fs::File::create(path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("{}: cannot create: {e}", path.display()))
        })?;
        let mut out = std::io::BufWriter::new(file);
        self.write_irpa(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
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

/// Parameter indexes by scope: what the `io_parameters` module reads from.
#[derive(Clone, Debug, Default)]
pub struct ParameterProvider {
    scopes: Vec<(String, ParameterIndex)>,
}

impl ParameterProvider {
    /// No scopes.
    pub fn new() -> ParameterProvider {
        ParameterProvider::default()
    }

    /// Adds `index` under `scope` (`""` for the unnamed scope); several indexes in one scope
    /// are searched in the order added, as IREE merges them.
    pub fn add(&mut self, scope: impl Into<String>, index: ParameterIndex) {
        self.scopes.push((scope.into(), index));
    }

    /// The entry `key` of `scope`.
    pub fn find(&self, scope: &str, key: &str) -> Option<&ParameterEntry> {
        self.scopes
            .iter()
            .filter(|(s, _)| s == scope)
            .find_map(|(_, index)| index.get(key))
    }

    /// The scopes, in the order added (a scope given twice appears twice).
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(|(s, _)| s.as_str())
    }

    /// Whether no index was added.
    pub fn is_empty(&self) -> bool {
        self.scopes.is_empty()
    }
}
