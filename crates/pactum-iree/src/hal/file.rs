//! Files: byte sources that queue operations read into buffers (`device.queue.read`). A
//! [`HalFile`] is a range of some [`FileContents`]: bytes in memory today (IREE's
//! `hal.ex.file.from_memory`), anything that can be read at an offset tomorrow.

use std::fmt;
use std::sync::Arc;

use crate::status::StatusError;

/// Bytes a file can be read from.
pub trait FileContents: Send + Sync + fmt::Debug {
    /// The number of bytes.
    fn len(&self) -> u64;

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `out.len()` bytes at `offset` into `out`; a range past the end is an error.
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), StatusError>;
}

impl FileContents for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), StatusError> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| self.get(start..start.checked_add(out.len())?))
            .ok_or_else(|| {
                StatusError::out_of_range(format!(
                    "read of {} bytes at {offset} is outside the {} bytes of the file",
                    out.len(),
                    self.as_slice().len()
                ))
            })?;
        out.copy_from_slice(bytes);
        Ok(())
    }
}

/// A `!hal.file`: `length` bytes of some contents from `offset`.
#[derive(Clone, Debug)]
pub struct HalFile {
    contents: Arc<dyn FileContents>,
    offset: u64,
    length: u64,
}

impl HalFile {
    /// The file of `length` bytes of `contents` from `offset` (`hal.ex.file.from_memory`); a
    /// range outside the contents is an `OUT_OF_RANGE` error.
    pub fn from_memory(
        contents: Arc<dyn FileContents>,
        offset: i64,
        length: i64,
    ) -> Result<HalFile, StatusError> {
        let available = contents.len();
        let range = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(length).ok())
            .filter(|(o, l)| o.checked_add(*l).is_some_and(|end| end <= available))
            .ok_or_else(|| {
                StatusError::out_of_range(format!(
                    "file range {offset}+{length} is outside the buffer of {available} bytes"
                ))
            })?;
        Ok(HalFile {
            contents,
            offset: range.0,
            length: range.1,
        })
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.length
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The `length` bytes at `offset` in the file, copied; a range outside it is an
    /// `OUT_OF_RANGE` error, one too large to hold a `RESOURCE_EXHAUSTED` one.
    pub fn read(&self, offset: i64, length: i64) -> Result<Vec<u8>, StatusError> {
        let (start, count) = self.checked_range(offset, length)?;
        let count = usize::try_from(count).map_err(|_| too_large())?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(count).map_err(|_| too_large())?;
        bytes.resize(count, 0);
        self.contents.read(self.offset + start, &mut bytes)?;
        Ok(bytes)
    }

    /// Reads the `length` bytes at `offset` in pieces of at most [`READ_CHUNK`] bytes,
    /// handing each to `sink` with its position from `offset`: a large read (a model's
    /// weights) then never holds more than one piece besides its destination. The whole
    /// range is checked before anything is read, as [`read`](Self::read) checks it.
    pub fn read_chunks(
        &self,
        offset: i64,
        length: i64,
        mut sink: impl FnMut(u64, &[u8]) -> Result<(), StatusError>,
    ) -> Result<(), StatusError> {
        let (start, count) = self.checked_range(offset, length)?;
        let mut piece = Vec::new();
        let mut done = 0u64;
        while done < count {
            let n = (count - done).min(READ_CHUNK as u64) as usize;
            if piece.len() != n {
                piece.clear();
                piece.try_reserve_exact(n).map_err(|_| too_large())?;
                piece.resize(n, 0);
            }
            self.contents.read(self.offset + start + done, &mut piece)?;
            sink(done, &piece)?;
            done += n as u64;
        }
        Ok(())
    }

    /// `offset..offset+length` of the file as (start, count), or the `OUT_OF_RANGE` error.
    pub(crate) fn checked_range(
        &self,
        offset: i64,
        length: i64,
    ) -> Result<(u64, u64), StatusError> {
        u64::try_from(offset)
            .ok()
            .zip(u64::try_from(length).ok())
            .filter(|(o, l)| o.checked_add(*l).is_some_and(|end| end <= self.length))
            .ok_or_else(|| {
                StatusError::out_of_range(format!(
                    "file range {offset}+{length} is outside the file of {} bytes",
                    self.length
                ))
            })
    }
}

/// The most bytes [`HalFile::read_chunks`] reads at once.
pub const READ_CHUNK: usize = 4 << 20;

fn too_large() -> StatusError {
    StatusError::new(
        crate::status::StatusCode::ResourceExhausted,
        "file read too large",
    )
}
