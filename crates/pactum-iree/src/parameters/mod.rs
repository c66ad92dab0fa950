//! Parameter archives (IREE's `.irpa`, `.safetensors`, `.gguf`) and the indexes and scopes
//! through which IREE's `io_parameters` module finds a program's named parameters.
//!
//! A [`ParameterIndex`] maps keys to entries: bytes in a file (memory-mapped) or in memory,
//! or a splat (a repeated pattern). A [`ParameterProvider`] holds indexes by scope, as
//! `iree-run-module --parameters=SCOPE=FILE` does: a program's `#flow.parameter.named<"model"::"w">`
//! is key `w` in scope `model`; the empty scope is the one a bare `--parameters=FILE` names.

mod io_module;

pub use io_module::{IO_PARAMETERS_MODULE_NAME, IO_PARAMETERS_MODULE_VERSION, IoParametersModule};

use std::collections::HashMap;
use std::fmt;
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
    /// contents), memory-mapped: data entries point into the mapping.
    pub fn open(path: impl AsRef<Path>) -> Result<ParameterIndex, ParameterError> {
        // The format readers come in the next increment.
        Err(ParameterError {
            path: Some(path.as_ref().to_owned()),
            offset: None,
            message: "parameter archives cannot be read yet".into(),
        })
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
