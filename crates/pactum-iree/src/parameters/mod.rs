//! Parameter archives (IREE's `.irpa`, `.safetensors`, `.gguf`) and the indexes and scopes
//! through which IREE's `io_parameters` module finds a program's named parameters.
//!
//! A [`ParameterIndex`] maps keys to entries: bytes in a file (memory-mapped) or in memory,
//! or a splat (a repeated pattern). A [`ParameterProvider`] holds indexes by scope, as
//! `iree-run-module --parameters=SCOPE=FILE` does: a program's `#flow.parameter.named<"model"::"w">`
//! is key `w` in scope `model`; the empty scope is the one a bare `--parameters=FILE` names.
//!
//! [`ParameterIndex::open`] reads an archive file, memory-mapped, telling the three formats
//! apart by their contents; the entries are those IREE's own readers find, in the same order:
//! - `.irpa`: data, splat and metadata of every entry (skipped entries left out; entries in
//!   external files are refused, as IREE 3.13 refuses them); linked archives in one file are
//!   read one after the other.
//! - `.safetensors`: one data entry per tensor, keyed by its name (`__metadata__` is not one).
//! - `.gguf` (versions 2 and 3): one data entry per tensor, keyed by its name, its length
//!   computed from its shape and ggml type, its bytes aligned by `general.alignment`.
//!
//! Every offset and length an archive declares is checked against the file before it is used;
//! a bad archive is a [`ParameterError`] naming the file, the byte and what was wrong.
//!
//! An index can also be built in memory ([`ParameterIndex::add_data`],
//! [`ParameterIndex::add_splat`]) and written as an `.irpa` that IREE's tools and runtime read
//! ([`ParameterIndex::write_irpa`]); the layout is the one IREE's archive builder writes.
//!
//! ```
//! use std::sync::Arc;
//! use pactum_iree::parameters::{ParameterIndex, ParameterStorage};
//!
//! let mut index = ParameterIndex::new();
//! let weights: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! index.add_data("layer0.weight", weights.clone());
//! index.add_splat("layer0.bias", &0.5f32.to_le_bytes(), 3 * 4)?;
//! index.set_metadata("layer0.weight", "f32[3]");
//!
//! // Written as an .irpa (a file with `write_irpa_file`), read back without a copy.
//! let mut archive = Vec::new();
//! index.write_irpa(&mut archive)?;
//! let read = ParameterIndex::from_bytes(Arc::new(archive))?;
//!
//! let weight = read.get("layer0.weight").unwrap();
//! assert_eq!(weight.storage.data(), Some(&weights[..]));
//! assert_eq!(weight.metadata, b"f32[3]");
//! match &read.get("layer0.bias").unwrap().storage {
//!     ParameterStorage::Splat { pattern, length } => {
//!         assert_eq!((pattern.as_slice(), *length), (&0.5f32.to_le_bytes()[..], 12));
//!     }
//!     ParameterStorage::Data { .. } => unreachable!("a splat stays a splat"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod gguf;
mod index;
mod io_module;
mod irpa;
mod safetensors;

pub use io_module::{IO_PARAMETERS_MODULE_NAME, IO_PARAMETERS_MODULE_VERSION, IoParametersModule};

use std::path::Path;
use std::sync::Arc;

pub use index::{ParameterEntry, ParameterError, ParameterIndex, ParameterStorage, SharedBytes};

use index::ArchiveFile;

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
        // safetensors: a little-endian u64 header length, then that many bytes of a JSON
        // object, which starts right away (as IREE requires). The length is checked by the
        // reader, which names it when it is wrong.
        if contents.get(8) == Some(&b'{') {
            return Ok(ArchiveFormat::Safetensors);
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

impl ParameterIndex {
    /// Reads the archive at `path` (`.irpa`, `.safetensors` or `.gguf`, told apart by their
    /// contents, not by the file name), memory-mapped: data entries point into the mapping,
    /// which lives as long as any of them. The index keeps the file open: `io_parameters.load`
    /// hands the device a buffer over an entry's own pages of the file (mapped copy-on-write)
    /// instead of a copy where the entry's alignment allows.
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
        let archive = Arc::new(ArchiveFile::new(file, map));
        let source: SharedBytes = archive.clone();
        let mut index = ParameterIndex::from_bytes(source).map_err(|mut e| {
            e.path = Some(path.to_owned());
            e
        })?;
        index.set_archive(archive);
        Ok(index)
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

    /// Writes the index as an IREE parameter archive (`.irpa`) that IREE's tools and
    /// runtime read: data entries copied into the archive (each aligned to 64 bytes), splats
    /// and metadata kept. The archive is padded to a multiple of 4096 bytes, as IREE's.
    pub fn write_irpa(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        irpa::write(self, out)
    }

    /// Writes the index as an IREE parameter archive at `path` (see
    /// [`write_irpa`](ParameterIndex::write_irpa)), replacing the file.
    ///
    /// The archive is written to a new file next to `path` and renamed over it when complete:
    /// an index read from `path` itself (whose data entries point into the old file's mapping)
    /// can be written back to it, and a failed write leaves the old file as it was.
    pub fn write_irpa_file(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        let mut partial = path.as_os_str().to_owned();
        partial.push(format!(".partial-{}", std::process::id()));
        let partial = std::path::PathBuf::from(partial);
        let written = std::fs::File::create(&partial).and_then(|file| {
            let mut out = std::io::BufWriter::new(file);
            self.write_irpa(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&partial, path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(std::io::Error::new(
                    e.kind(),
                    format!("{}: {e}", path.display()),
                ))
            }
        }
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

    /// The archive file whose mapping `source` (a data entry's) is, when one of the indexes
    /// was opened from it.
    pub(crate) fn archive_of(&self, source: &SharedBytes) -> Option<&ArchiveFile> {
        self.scopes
            .iter()
            .find_map(|(_, index)| index.archive_of(source))
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
