//! `!vm.buffer`: a byte span, read-only over a module's rodata or mutable and owned.
//!
//! Mutable storage is a slice of relaxed byte atomics, so a buffer shared between threads (a
//! `Ref` is `Send + Sync`) is sound to read and write from safe code without a lock: racing
//! accesses see some interleaving of bytes, never undefined behaviour. Read-only buffers borrow
//! their bytes from an owner kept alive by an `Arc` (the module's file for rodata), so
//! external read-only data is never copied.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::cell_access;
use crate::host_memory::HostMemory;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use crate::memory_budget::{Charge, MemoryBudget, OverBudget};
use crate::vmfb::VmfbFile;

/// Something that owns bytes a read-only buffer can view.
pub trait ByteSource: Send + Sync {
    /// The bytes.
    fn bytes(&self) -> &[u8];
}

impl ByteSource for VmfbFile {
    fn bytes(&self) -> &[u8] {
        VmfbFile::bytes(self)
    }
}

impl ByteSource for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl ByteSource for Box<[u8]> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl ByteSource for &'static [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Why a buffer access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferError {
    /// The byte range `offset..offset+length` is not inside the buffer.
    OutOfRange {
        /// Start of the range (bytes).
        offset: u64,
        /// Its length (bytes).
        length: u64,
        /// The buffer's length.
        buffer_len: u64,
    },
    /// A write into a read-only buffer.
    ReadOnly,
    /// The memory budget does not allow the allocation.
    OverBudget(OverBudget),
    /// The host could not allocate the memory.
    AllocationFailed(u64),
}

impl fmt::Display for BufferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BufferError::OutOfRange {
                offset,
                length,
                buffer_len,
            } => write!(
                f,
                "byte range {offset}..{offset}+{length} is outside the buffer of {buffer_len} bytes"
            ),
            BufferError::ReadOnly => f.write_str("the buffer is read-only"),
            BufferError::OverBudget(o) => write!(f, "memory budget of {} bytes exceeded", o.limit),
            BufferError::AllocationFailed(n) => write!(f, "could not allocate {n} bytes"),
        }
    }
}

enum Storage {
    ReadOnly {
        owner: Arc<dyn ByteSource>,
        start: usize,
        len: usize,
    },
    Mutable(Box<[AtomicU8]>),
    /// A mutable window onto cells shared with other owners (a HAL buffer's bytes).
    Shared {
        cells: Arc<HostMemory>,
        start: usize,
        len: usize,
    },
}

/// A buffer's bytes as [`VmBuffer::view`] resolves them: its mutable cells or its read-only
/// bytes (the other one empty), or neither (a window outside its memory: every access fails).
///
/// Two slices rather than an enum, so that a load needs no dispatch on the kind: it tries the
/// cells, then the bytes, and an empty slice holds no element.
#[derive(Clone, Copy, Debug, Default)]
pub struct BufferView<'a> {
    /// Mutable (owned or shared) cells; empty when read-only.
    cells: &'a [AtomicU8],
    /// Read-only bytes; empty when mutable.
    bytes: &'a [u8],
}

impl BufferView<'_> {
    /// Element `index` of `N` bytes (bytes `index * N .. index * N + N`), or `None` when it is
    /// not inside the buffer.
    #[inline(always)]
    pub fn load<const N: usize>(&self, index: u64) -> Option<[u8; N]> {
        let index = usize::try_from(index).ok()?;
        match cell_access::cell_element::<N>(self.cells, index) {
            Some(cells) => Some(cell_access::load(cells)),
            None => cell_access::byte_element::<N>(self.bytes, index).copied(),
        }
    }

    /// Writes `bytes` as element `index` of `N` bytes and returns `Some(())`, or returns `None`
    /// with nothing written when the element is not inside the buffer or the buffer is
    /// read-only.
    #[inline(always)]
    pub fn store<const N: usize>(&self, index: u64, bytes: [u8; N]) -> Option<()> {
        let index = usize::try_from(index).ok()?;
        cell_access::store(cell_access::cell_element::<N>(self.cells, index)?, bytes);
        Some(())
    }
}

/// A VM byte buffer.
pub struct VmBuffer {
    storage: Storage,
    _charge: Charge,
}

impl fmt::Debug for VmBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VmBuffer")
            .field("len", &self.len())
            .field("mutable", &self.is_mutable())
            .finish()
    }
}

fn zeroed(len: usize) -> Result<Box<[AtomicU8]>, BufferError> {
    let mut cells = Vec::new();
    cells
        .try_reserve_exact(len)
        .map_err(|_| BufferError::AllocationFailed(len as u64))?;
    cells.resize_with(len, || AtomicU8::new(0));
    Ok(cells.into_boxed_slice())
}

impl VmBuffer {
    /// A zero-filled mutable buffer of `len` bytes, charged to `budget`.
    pub fn zeroed(len: usize, budget: Option<&Arc<MemoryBudget>>) -> Result<VmBuffer, BufferError> {
        let charge = Charge::new(budget, len).map_err(BufferError::OverBudget)?;
        Ok(VmBuffer {
            storage: Storage::Mutable(zeroed(len)?),
            _charge: charge,
        })
    }

    /// A mutable buffer holding a copy of `bytes` (not charged to any budget).
    pub fn from_bytes(bytes: &[u8]) -> VmBuffer {
        VmBuffer {
            storage: Storage::Mutable(bytes.iter().map(|&b| AtomicU8::new(b)).collect()),
            _charge: Charge::default(),
        }
    }

    /// A read-only view of `owner.bytes()[range]`; `None` when the range is not inside.
    pub fn read_only(owner: Arc<dyn ByteSource>, range: Range<usize>) -> Option<VmBuffer> {
        owner.bytes().get(range.clone())?;
        Some(VmBuffer {
            storage: Storage::ReadOnly {
                owner,
                start: range.start,
                len: range.len(),
            },
            _charge: Charge::default(),
        })
    }

    /// A mutable view of `cells[range]`, sharing the cells (no copy): writes through the view
    /// are seen by every other holder of `cells`. `None` when the range is not inside.
    pub fn shared(cells: Arc<HostMemory>, range: Range<usize>) -> Option<VmBuffer> {
        cells.cells().get(range.clone())?;
        Some(VmBuffer {
            storage: Storage::Shared {
                cells,
                start: range.start,
                len: range.len(),
            },
            _charge: Charge::default(),
        })
    }

    /// The length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::ReadOnly { len, .. } | Storage::Shared { len, .. } => *len,
            Storage::Mutable(cells) => cells.len(),
        }
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer can be written.
    pub fn is_mutable(&self) -> bool {
        !matches!(self.storage, Storage::ReadOnly { .. })
    }

    /// The byte range `offset..offset+length`, checked.
    #[inline]
    pub fn range(&self, offset: u64, length: u64) -> Result<Range<usize>, BufferError> {
        let len = self.len();
        offset
            .checked_add(length)
            .filter(|&end| end <= len as u64)
            .map(|end| offset as usize..end as usize)
            .ok_or(BufferError::OutOfRange {
                offset,
                length,
                buffer_len: len as u64,
            })
    }

    #[inline]
    fn read_only_slice(&self) -> Option<&[u8]> {
        match &self.storage {
            Storage::ReadOnly { owner, start, len } => owner.bytes().get(*start..start + len),
            Storage::Mutable(_) | Storage::Shared { .. } => None,
        }
    }

    #[inline]
    fn mutable_cells(&self) -> Option<&[AtomicU8]> {
        match &self.storage {
            Storage::Mutable(cells) => Some(cells),
            Storage::Shared { cells, start, len } => cells.cells().get(*start..start + len),
            Storage::ReadOnly { .. } => None,
        }
    }

    #[inline]
    fn cells(&self) -> Result<&[AtomicU8], BufferError> {
        self.mutable_cells().ok_or(BufferError::ReadOnly)
    }

    /// Copies bytes starting at byte `offset` into `out`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), BufferError> {
        let range = self.range(offset, out.len() as u64)?;
        match self.mutable_cells() {
            Some(cells) => {
                for (o, c) in out.iter_mut().zip(cells.get(range).unwrap_or(&[])) {
                    *o = c.load(Relaxed);
                }
            }
            None => {
                let bytes = self.read_only_slice().unwrap_or(&[]);
                if let Some(src) = bytes.get(range) {
                    out.copy_from_slice(src);
                }
            }
        }
        Ok(())
    }

    /// `N` bytes at byte `offset`: [`VmBuffer::read`] of a few bytes, whole in the caller (the
    /// VM's `buffer.load` instructions and vmvx dispatches make one for each element).
    #[inline]
    pub fn load<const N: usize>(&self, offset: u64) -> Result<[u8; N], BufferError> {
        let range = self.range(offset, N as u64)?;
        let mut out = [0u8; N];
        match self.mutable_cells() {
            Some(cells) => {
                if let Some(cells) = cells
                    .get(range)
                    .and_then(|c| <&[AtomicU8; N]>::try_from(c).ok())
                {
                    out = cell_access::load(cells);
                }
            }
            None => {
                if let Some(bytes) = self.read_only_slice().and_then(|b| b.get(range)) {
                    out.copy_from_slice(bytes);
                }
            }
        }
        Ok(out)
    }

    /// Writes the `N` bytes of `bytes` at byte `offset`: [`VmBuffer::write`] of a few bytes,
    /// whole in the caller.
    #[inline]
    pub fn store<const N: usize>(&self, offset: u64, bytes: [u8; N]) -> Result<(), BufferError> {
        let cells = self.cells()?;
        let range = self.range(offset, N as u64)?;
        if let Some(cells) = cells
            .get(range)
            .and_then(|c| <&[AtomicU8; N]>::try_from(c).ok())
        {
            cell_access::store(cells, bytes);
        }
        Ok(())
    }

    /// The buffer's bytes, resolved once (the storage matched, a shared window sliced, a
    /// read-only owner asked for its bytes), for the interpreter's fast path, which reads and
    /// writes elements through it. Loads and stores through a view succeed exactly where
    /// [`VmBuffer::load`] and [`VmBuffer::store`] would (the fast path leaves every failure
    /// to them, which report it).
    #[inline]
    pub fn view(&self) -> BufferView<'_> {
        match &self.storage {
            Storage::Mutable(cells) => BufferView { cells, bytes: &[] },
            Storage::Shared { cells, start, len } => BufferView {
                cells: start
                    .checked_add(*len)
                    .and_then(|end| cells.cells().get(*start..end))
                    .unwrap_or_default(),
                bytes: &[],
            },
            Storage::ReadOnly { owner, start, len } => BufferView {
                cells: &[],
                bytes: start
                    .checked_add(*len)
                    .and_then(|end| owner.bytes().get(*start..end))
                    .unwrap_or_default(),
            },
        }
    }

    /// Writes `bytes` at byte `offset`.
    pub fn write(&self, offset: u64, bytes: &[u8]) -> Result<(), BufferError> {
        let cells = self.cells()?;
        let range = self.range(offset, bytes.len() as u64)?;
        for (c, &b) in cells[range].iter().zip(bytes) {
            c.store(b, Relaxed);
        }
        Ok(())
    }

    /// Writes `pattern` `count` times starting at byte `offset`.
    pub fn fill(&self, offset: u64, count: u64, pattern: &[u8]) -> Result<(), BufferError> {
        let cells = self.cells()?;
        let length = count
            .checked_mul(pattern.len() as u64)
            .ok_or(BufferError::OutOfRange {
                offset,
                length: u64::MAX,
                buffer_len: self.len() as u64,
            })?;
        let range = self.range(offset, length)?;
        for (c, &b) in cells[range].iter().zip(pattern.iter().cycle()) {
            c.store(b, Relaxed);
        }
        Ok(())
    }

    /// Copies `length` bytes from `source[source_offset..]` to `target[target_offset..]`
    /// (overlapping ranges of one buffer are copied as by `memmove`).
    pub fn copy(
        source: &VmBuffer,
        source_offset: u64,
        target: &VmBuffer,
        target_offset: u64,
        length: u64,
    ) -> Result<(), BufferError> {
        let src = source.range(source_offset, length)?;
        let cells = target.cells()?;
        let dst = target.range(target_offset, length)?;
        let dst_cells = &cells[dst.clone()];
        match (source.mutable_cells(), source.read_only_slice()) {
            (_, Some(bytes)) => {
                for (c, &b) in dst_cells.iter().zip(bytes.get(src).unwrap_or(&[])) {
                    c.store(b, Relaxed);
                }
            }
            (Some(src_cells), None) => {
                let src_cells = src_cells.get(src.clone()).unwrap_or(&[]);
                // Overlap is possible only when both views share cells: copy backwards when
                // the target starts after the source in memory.
                let overlapping_forward = std::ptr::eq(src_cells.as_ptr(), dst_cells.as_ptr())
                    || (dst_cells.as_ptr() > src_cells.as_ptr()
                        && dst_cells.as_ptr() < src_cells.as_ptr().wrapping_add(src_cells.len()));
                if overlapping_forward {
                    for (c, s) in dst_cells.iter().zip(src_cells).rev() {
                        c.store(s.load(Relaxed), Relaxed);
                    }
                } else {
                    for (c, s) in dst_cells.iter().zip(src_cells) {
                        c.store(s.load(Relaxed), Relaxed);
                    }
                }
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// Calls `f` with consecutive chunks of the bytes in `offset..offset+length`.
    pub fn chunks(
        &self,
        offset: u64,
        length: u64,
        mut f: impl FnMut(&[u8]),
    ) -> Result<(), BufferError> {
        let range = self.range(offset, length)?;
        match self.mutable_cells() {
            None => f(self
                .read_only_slice()
                .and_then(|b| b.get(range))
                .unwrap_or(&[])),
            Some(cells) => {
                let mut chunk = [0u8; 256];
                for part in cells.get(range).unwrap_or(&[]).chunks(chunk.len()) {
                    for (o, c) in chunk.iter_mut().zip(part) {
                        *o = c.load(Relaxed);
                    }
                    f(&chunk[..part.len()]);
                }
            }
        }
        Ok(())
    }

    /// Whether two byte ranges are equal.
    pub fn compare(
        lhs: &VmBuffer,
        lhs_offset: u64,
        rhs: &VmBuffer,
        rhs_offset: u64,
        length: u64,
    ) -> Result<bool, BufferError> {
        lhs.range(lhs_offset, length)?;
        let rhs_range = rhs.range(rhs_offset, length)?;
        let mut equal = true;
        let mut at = rhs_range.start as u64;
        lhs.chunks(lhs_offset, length, |chunk| {
            if !equal {
                return;
            }
            let mut other = [0u8; 256];
            let other = &mut other[..chunk.len()];
            if rhs.read(at, other).is_err() || other != chunk {
                equal = false;
            }
            at += chunk.len() as u64;
        })?;
        Ok(equal)
    }

    /// A mutable copy of `offset..offset+length`, charged to `budget`.
    pub fn clone_range(
        &self,
        offset: u64,
        length: u64,
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<VmBuffer, BufferError> {
        let range = self.range(offset, length)?;
        let copy = VmBuffer::zeroed(range.len(), budget)?;
        VmBuffer::copy(self, offset, &copy, 0, length)?;
        Ok(copy)
    }

    /// All bytes, copied.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len()];
        let _ = self.read(0, &mut out);
        out
    }

    /// SipHash-2-4 with key bytes `00..0F` of `offset..offset+length`, as `buffer.hash`.
    pub fn hash(&self, offset: u64, length: u64) -> Result<u64, BufferError> {
        let mut hasher = SipHash24::new();
        self.chunks(offset, length, |chunk| hasher.write(chunk))?;
        Ok(hasher.finish())
    }
}

/// SipHash-2-4 with the fixed key `00 01 .. 0F`, written from the algorithm's description.
struct SipHash24 {
    v: [u64; 4],
    tail: u64,
    ntail: usize,
    length: u64,
}

impl SipHash24 {
    fn new() -> SipHash24 {
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        SipHash24 {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            length: 0,
        }
    }

    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }

    fn compress(&mut self, m: u64) {
        self.v[3] ^= m;
        Self::round(&mut self.v);
        Self::round(&mut self.v);
        self.v[0] ^= m;
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.tail |= u64::from(b) << (8 * self.ntail);
            self.ntail += 1;
            if self.ntail == 8 {
                let m = self.tail;
                self.compress(m);
                self.tail = 0;
                self.ntail = 0;
            }
        }
        self.length = self.length.wrapping_add(bytes.len() as u64);
    }

    fn finish(mut self) -> u64 {
        let m = self.tail | ((self.length & 0xFF) << 56);
        self.compress(m);
        self.v[2] ^= 0xFF;
        for _ in 0..4 {
            Self::round(&mut self.v);
        }
        self.v[0] ^ self.v[1] ^ self.v[2] ^ self.v[3]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_matches_the_reference_value_of_the_facts_sheet() {
        let bytes: Vec<u8> = (1..=16).collect();
        let buffer = VmBuffer::from_bytes(&bytes);
        assert_eq!(buffer.hash(0, 16).unwrap() as i64, 228283538390650373);
        // The SipHash paper's test vector: 15 bytes 00..0E with key 00..0F.
        let bytes: Vec<u8> = (0..15).collect();
        let buffer = VmBuffer::from_bytes(&bytes);
        assert_eq!(buffer.hash(0, 15).unwrap(), 0xa129ca6149be45e5);
    }

    #[test]
    fn ranges_are_checked_without_overflow() {
        let buffer = VmBuffer::zeroed(8, None).unwrap();
        assert!(buffer.load::<4>(u64::MAX - 1).is_err());
        assert!(buffer.load::<4>(5).is_err());
        assert!(buffer.load::<4>(4).is_ok());
        assert!(buffer.fill(0, u64::MAX, &[1, 2]).is_err());
    }

    #[test]
    fn overlapping_copies_behave_like_memmove() {
        let buffer = VmBuffer::from_bytes(&[1, 2, 3, 4, 5, 6]);
        VmBuffer::copy(&buffer, 0, &buffer, 2, 4).unwrap();
        assert_eq!(buffer.to_vec(), [1, 2, 1, 2, 3, 4]);
        VmBuffer::copy(&buffer, 2, &buffer, 0, 4).unwrap();
        assert_eq!(buffer.to_vec(), [1, 2, 3, 4, 3, 4]);
    }

    #[test]
    fn read_only_buffers_refuse_writes() {
        let owner: Arc<dyn ByteSource> = Arc::new(vec![1u8, 2, 3]);
        let buffer = VmBuffer::read_only(owner, 1..3).unwrap();
        assert_eq!(buffer.to_vec(), [2, 3]);
        assert_eq!(buffer.write(0, &[9]), Err(BufferError::ReadOnly));
    }

    #[test]
    fn the_budget_refuses_large_buffers() {
        let budget = MemoryBudget::new(100);
        let a = VmBuffer::zeroed(60, Some(&budget)).unwrap();
        assert!(VmBuffer::zeroed(60, Some(&budget)).is_err());
        drop(a);
        assert!(VmBuffer::zeroed(60, Some(&budget)).is_ok());
    }
}
