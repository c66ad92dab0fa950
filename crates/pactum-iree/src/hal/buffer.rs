//! Buffers and buffer views: byte ranges of 64-byte aligned host memory, shared without copies
//! by the HAL, compiled dispatch code and (through views the vmvx loader makes) the VM.
//!
//! Every buffer's bytes are a [`HostMemory`] block the host addresses: the local CPU device's
//! memory, or a device's memory mapped for the buffer's life ([`HostMemory::device_mapped`], the
//! Vulkan device's: the buffer's own memory, or, where the host cannot map that, a staging
//! buffer the device keeps in step with it around each submission).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering, Ordering::Relaxed};

use super::element::HalElementType;
use crate::host_memory::{BlockCache, HostMemory};
use crate::memory_budget::{Charge, MemoryBudget};
use crate::status::{StatusCode, StatusError};

/// IREE's "whole buffer" length (`-1`): everything from the offset on.
pub const WHOLE_BUFFER: i64 = -1;

fn invalid(message: impl Into<String>) -> StatusError {
    StatusError::invalid_argument(message)
}

fn out_of_range(message: impl Into<String>) -> StatusError {
    StatusError::out_of_range(message)
}

/// The bytes of one allocation, shared by every buffer that views it, and the memory budget
/// charge they hold until the last view is dropped.
struct Allocation {
    cells: Arc<HostMemory>,
    _charge: Charge,
    /// How many owners the program has declared (`hal.buffer.allocation.*`): 1 when made.
    /// It only answers the program's questions; the memory lives as long as any view does.
    preserve_count: AtomicU32,
}

/// A `!hal.buffer`: a byte range of an allocation (subspans share the allocation).
#[derive(Clone)]
pub struct HalBuffer {
    allocation: Arc<Allocation>,
    offset: usize,
    length: usize,
}

impl fmt::Debug for HalBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HalBuffer")
            .field("offset", &self.offset)
            .field("length", &self.length)
            .finish()
    }
}

/// The budget's charge for a new allocation of `length` bytes, or the `RESOURCE_EXHAUSTED`
/// error saying what (`allocating`, `mapping`) would exceed it.
fn charge(
    budget: Option<&Arc<MemoryBudget>>,
    length: usize,
    what: &str,
) -> Result<Charge, StatusError> {
    Charge::new(budget, length).map_err(|o| {
        StatusError::new(
            StatusCode::ResourceExhausted,
            format!(
                "{what} {length} bytes exceeds the memory budget of {} bytes",
                o.limit
            ),
        )
    })
}

impl HalBuffer {
    /// A buffer viewing all of `cells`, a new allocation holding `charge`.
    fn whole(cells: HostMemory, charge: Charge) -> HalBuffer {
        let length = cells.len();
        HalBuffer {
            allocation: Arc::new(Allocation {
                cells: Arc::new(cells),
                _charge: charge,
                preserve_count: AtomicU32::new(1),
            }),
            offset: 0,
            length,
        }
    }

    /// A zero-filled buffer of `length` bytes, charged to `budget`.
    pub fn allocate(
        length: i64,
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<HalBuffer, StatusError> {
        HalBuffer::allocate_in(length, budget, None)
    }

    /// A buffer of `length` bytes, charged to `budget`, taken from `cache` when it holds a
    /// freed block of that size (its bytes are then what the block's last user left, as
    /// IREE's allocations are uninitialised), otherwise zero-filled; it returns to `cache`
    /// when the last view of it is dropped.
    pub(crate) fn allocate_in(
        length: i64,
        budget: Option<&Arc<MemoryBudget>>,
        cache: Option<&Arc<BlockCache>>,
    ) -> Result<HalBuffer, StatusError> {
        let length = usize::try_from(length)
            .map_err(|_| invalid(format!("allocation size {length} is negative")))?;
        let charge = charge(budget, length, "allocating")?;
        let cells = match cache {
            Some(cache) => HostMemory::reused_or_zeroed(length, cache),
            None => HostMemory::zeroed(length),
        }
        .ok_or_else(|| {
            StatusError::new(
                StatusCode::ResourceExhausted,
                format!("could not allocate {length} bytes"),
            )
        })?;
        Ok(HalBuffer::whole(cells, charge))
    }

    /// A buffer over the `length` bytes at `offset` of `file`, mapped copy-on-write
    /// ([`HostMemory::file_pages`]): it reads as the file, and what is written to it stays in
    /// it (the file and other buffers over it never change). `offset` must be a multiple of
    /// 64 and `length` non-zero.
    ///
    /// The budget is charged the whole `length`, as for a copy: the program may write every
    /// page of the buffer, each then a private copy, so this is the most memory the buffer can
    /// come to hold; and whether an entry is mapped or copied does not change what a budget
    /// admits.
    pub(crate) fn map_file(
        file: &std::fs::File,
        offset: u64,
        length: u64,
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<HalBuffer, StatusError> {
        let length = usize::try_from(length)
            .map_err(|_| invalid(format!("mapping size {length} is too large")))?;
        let charge = charge(budget, length, "mapping")?;
        let cells = HostMemory::file_pages(file, offset, length).map_err(|e| {
            StatusError::new(
                StatusCode::Unavailable,
                format!("could not map {length} bytes at byte {offset} of the file: {e}"),
            )
        })?;
        Ok(HalBuffer::whole(cells, charge))
    }

    /// A buffer over host memory someone else owns, without a copy (IREE's heap allocator
    /// importing a host allocation), charged to no budget: the memory is its owner's,
    /// allocated before the call and whatever the budget says. `memory` is usually a
    /// [`HostMemory::borrowed`] block (a caller's tensor); any other block works too and is
    /// then simply the buffer's own.
    pub fn borrowed(memory: HostMemory) -> HalBuffer {
        HalBuffer::whole(memory, Charge::default())
    }

    /// A buffer over all of a device's mapped memory ([`HostMemory::device_mapped`]),
    /// charged to `budget` while it lives.
    #[cfg(feature = "vulkan")]
    pub(crate) fn device_memory(
        memory: HostMemory,
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<HalBuffer, StatusError> {
        let charge = charge(budget, memory.len(), "allocating")?;
        Ok(HalBuffer::whole(memory, charge))
    }

    /// Whether the buffer's bytes are memory someone else owns, imported without a copy
    /// ([`HostMemory::borrowed`]: a caller's tensor passed to a module).
    pub fn is_borrowed(&self) -> bool {
        self.allocation.cells.is_borrowed()
    }

    /// Whether the buffer's bytes are a file's pages mapped copy-on-write (an allocator's
    /// `map_file`) rather than memory of its own.
    pub fn is_file_mapping(&self) -> bool {
        self.allocation.cells.is_file_pages()
    }

    /// A new buffer holding a copy of `bytes`, charged to `budget`. The bytes are copied in
    /// one `memcpy` while the new block is not yet shared (a module's rodata, megabytes of
    /// baked weights, is imported through here at `__init`; the cell-wise write a shared
    /// buffer needs took three host instructions a byte).
    pub fn from_bytes(
        bytes: &[u8],
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<HalBuffer, StatusError> {
        let length = bytes.len();
        let charge = charge(budget, length, "allocating")?;
        let cells = HostMemory::from_bytes(bytes).ok_or_else(|| {
            StatusError::new(
                StatusCode::ResourceExhausted,
                format!("could not allocate {length} bytes"),
            )
        })?;
        Ok(HalBuffer::whole(cells, charge))
    }

    /// The length in bytes.
    pub fn len(&self) -> u64 {
        self.length as u64
    }

    /// Declares one more owner of the buffer's allocation (`hal.buffer.allocation.preserve`;
    /// subspans share their allocation's count).
    pub fn allocation_preserve(&self) {
        self.allocation
            .preserve_count
            .fetch_add(1, Ordering::AcqRel);
    }

    /// Declares that one owner is done with the allocation
    /// (`hal.buffer.allocation.discard`): whether it was the last. As in IREE the count
    /// wraps below zero, so a discard more than the owners declared answers `false`.
    pub fn allocation_discard(&self) -> bool {
        self.allocation
            .preserve_count
            .fetch_sub(1, Ordering::AcqRel)
            == 1
    }

    /// Whether the allocation has exactly one owner (`hal.buffer.allocation.is_terminal`).
    pub fn allocation_is_terminal(&self) -> bool {
        self.allocation.preserve_count.load(Ordering::Acquire) == 1
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The range `offset..offset+length` of this buffer, checked (`length` may be
    /// [`WHOLE_BUFFER`]), relative to this buffer.
    pub fn range(&self, offset: i64, length: i64) -> Result<Range<usize>, StatusError> {
        let len = self.length as u64;
        let bad = || {
            out_of_range(format!(
                "byte range {offset}..{offset}+{length} is outside the buffer of {len} bytes"
            ))
        };
        let start = u64::try_from(offset).map_err(|_| bad())?;
        if start > len {
            return Err(bad());
        }
        let count = if length == WHOLE_BUFFER {
            len - start
        } else {
            u64::try_from(length).map_err(|_| bad())?
        };
        let end = start
            .checked_add(count)
            .filter(|&e| e <= len)
            .ok_or_else(bad)?;
        Ok(start as usize..end as usize)
    }

    /// The buffer viewing `offset..offset+length` of this one (no copy).
    pub fn subspan(&self, offset: i64, length: i64) -> Result<HalBuffer, StatusError> {
        let range = self.range(offset, length)?;
        Ok(HalBuffer {
            allocation: self.allocation.clone(),
            offset: self.offset + range.start,
            length: range.len(),
        })
    }

    fn cells(&self, range: Range<usize>) -> &[AtomicU8] {
        self.allocation
            .cells
            .cells()
            .get(self.offset + range.start..self.offset + range.end)
            .unwrap_or(&[])
    }

    /// The host memory holding this buffer and where `offset..offset+length` of it lies in
    /// that memory, for views that share the bytes (the vmvx loader's `!vm.buffer`s).
    pub(crate) fn memory_range(
        &self,
        offset: i64,
        length: i64,
    ) -> Result<(&Arc<HostMemory>, Range<usize>), StatusError> {
        let range = self.range(offset, length)?;
        Ok((
            &self.allocation.cells,
            self.offset + range.start..self.offset + range.end,
        ))
    }

    /// The address and length of `offset..offset+length`, for compiled (ELF) dispatch code and
    /// bulk copies between tensors and buffers.
    #[cfg(any(feature = "llvm-cpu", feature = "module"))]
    pub(crate) fn raw_range(
        &self,
        offset: i64,
        length: i64,
    ) -> Result<(*mut u8, usize), StatusError> {
        let range = self.range(offset, length)?;
        let start = self.offset + range.start;
        Ok((
            self.allocation.cells.as_mut_ptr().wrapping_add(start),
            range.len(),
        ))
    }

    /// The address of this buffer's first byte when nothing else holds its allocation (no
    /// other buffer, subspan or `!vm.buffer` view): its bytes can then be handed over for as
    /// long as this buffer is kept, without anyone else reading or writing them. Never for
    /// borrowed memory ([`HalBuffer::borrowed`]): its owner (the caller's input tensor) still
    /// reads and writes it, so a result over it is copied, as IREE's Python runtime copies
    /// every argument.
    #[cfg(feature = "module")]
    pub(crate) fn exclusive_ptr(&self) -> Option<*mut u8> {
        (!self.allocation.cells.is_borrowed()
            && Arc::strong_count(&self.allocation) == 1
            && Arc::weak_count(&self.allocation) == 0
            && Arc::strong_count(&self.allocation.cells) == 1
            && Arc::weak_count(&self.allocation.cells) == 0)
            .then(|| self.allocation.cells.as_mut_ptr().wrapping_add(self.offset))
    }

    /// Copies `out.len()` bytes at `offset` into `out`.
    pub fn read(&self, offset: i64, out: &mut [u8]) -> Result<(), StatusError> {
        let range = self.range(offset, out.len() as i64)?;
        for (o, c) in out.iter_mut().zip(self.cells(range)) {
            *o = c.load(Relaxed);
        }
        Ok(())
    }

    /// All bytes, copied.
    pub fn to_vec(&self) -> Vec<u8> {
        self.cells(0..self.length)
            .iter()
            .map(|c| c.load(Relaxed))
            .collect()
    }

    /// Writes `bytes` at `offset`.
    pub fn write(&self, offset: i64, bytes: &[u8]) -> Result<(), StatusError> {
        let range = self.range(offset, bytes.len() as i64)?;
        for (c, &b) in self.cells(range).iter().zip(bytes) {
            c.store(b, Relaxed);
        }
        Ok(())
    }

    /// Fills `offset..offset+length` with a 1, 2 or 4 (or 8) byte little-endian `pattern`.
    pub fn fill(
        &self,
        offset: i64,
        length: i64,
        pattern: u64,
        pattern_length: i64,
    ) -> Result<(), StatusError> {
        if !matches!(pattern_length, 1 | 2 | 4 | 8) {
            return Err(invalid(format!(
                "fill pattern length {pattern_length} is not 1, 2, 4 or 8"
            )));
        }
        let range = self.range(offset, length)?;
        let n = pattern_length as usize;
        if range.start % n != 0 || range.len() % n != 0 {
            return Err(invalid(format!(
                "fill range {offset}+{} is not aligned to the pattern length {n}",
                range.len()
            )));
        }
        let bytes = pattern.to_le_bytes();
        for (c, &b) in self.cells(range).iter().zip(bytes[..n].iter().cycle()) {
            c.store(b, Relaxed);
        }
        Ok(())
    }

    /// Copies `length` bytes from `source[source_offset..]` to `target[target_offset..]`
    /// (as `memmove` when they overlap).
    pub fn copy(
        source: &HalBuffer,
        source_offset: i64,
        target: &HalBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), StatusError> {
        let src = source.range(source_offset, length)?;
        let dst = target.range(target_offset, length)?;
        let bytes: Vec<u8> = source.cells(src).iter().map(|c| c.load(Relaxed)).collect();
        for (c, b) in target.cells(dst).iter().zip(bytes) {
            c.store(b, Relaxed);
        }
        Ok(())
    }
}

/// A `!hal.buffer_view`: a buffer with a shape, an element type and an encoding.
#[derive(Debug, Clone)]
pub struct HalBufferView {
    /// The buffer (exactly the bytes the view covers, or more).
    pub buffer: HalBuffer,
    /// The dimensions.
    pub shape: Vec<u64>,
    /// The element type.
    pub element_type: HalElementType,
    /// The encoding type (`1` = dense row-major).
    pub encoding_type: u32,
}

/// The highest rank a buffer view may have.
pub const MAX_RANK: usize = 128;

/// The dense row-major encoding.
pub const DENSE_ROW_MAJOR: u32 = 1;

/// The most bytes [`HalBufferView::parse`] makes from text (1 GiB), so that a typo in a shape
/// is an error, not an allocation the machine cannot make.
pub const MAX_PARSED_BYTES: u64 = 1 << 30;

/// The opaque encoding: the bytes are not interpreted (IREE lets it pass any encoding check).
pub const OPAQUE_ENCODING: u32 = 0;

impl HalBufferView {
    /// The bytes the shape and element type need (`None` on overflow): sub-byte elements
    /// packed, as IREE packs them (a `4xi4` view needs 2 bytes).
    pub fn byte_length(shape: &[u64], element_type: HalElementType) -> Option<u64> {
        let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
        element_type.dense_byte_length(count)
    }

    /// A buffer view from `iree-run-module`'s `--input` text, as IREE parses it
    /// (`iree_hal_buffer_view_parse`): `SHAPExTYPE=ELEMENTS` (`2x3xf32=1 2 3 4 5 6`,
    /// `f32=2`, `0x4xf32=`), the elements separated by spaces, commas or brackets; one
    /// element fills the whole view. Each element is what
    /// [`HalElementType::parse_element`] reads; sub-byte types are given as their packed
    /// bytes in hex (`4xi4=21 C3` is the elements 1, 2, 3, -4). Views past
    /// [`MAX_PARSED_BYTES`] are refused.
    pub fn parse(text: &str) -> Result<HalBufferView, StatusError> {
        let (head, body) = text.split_once('=').unwrap_or((text, ""));
        let (dims, type_name) = match head.rfind('x') {
            Some(at) => (&head[..at], &head[at + 1..]),
            None => ("", head),
        };
        let element_type = HalElementType::parse(type_name)
            .ok_or_else(|| invalid(format!("unknown element type `{type_name}` in `{text}`")))?;
        let shape = if dims.is_empty() {
            Vec::new()
        } else {
            dims.split('x')
                .map(|d| {
                    d.parse::<u64>()
                        .map_err(|_| invalid(format!("bad dimension `{d}` in `{text}`")))
                })
                .collect::<Result<Vec<u64>, _>>()?
        };
        if shape.len() > MAX_RANK {
            return Err(invalid(format!("`{text}` has a rank past {MAX_RANK}")));
        }
        let length = HalBufferView::byte_length(&shape, element_type)
            .ok_or_else(|| invalid(format!("shape of `{text}` overflows")))?;
        if length > MAX_PARSED_BYTES {
            return Err(invalid(format!(
                "`{}` needs {length} bytes; text inputs hold at most {MAX_PARSED_BYTES} (larger \
                 tensors belong in files)",
                head
            )));
        }
        // One slot a byte for packed sub-byte types, one an element otherwise.
        let slot = element_type.byte_size();
        let slots = length / slot;
        let tokens: Vec<&str> = body
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']'))
            .filter(|t| !t.is_empty())
            .collect();
        let mut bytes = Vec::new();
        match tokens.as_slice() {
            [] if slots == 0 => {}
            [one] if slots > 1 => {
                let element = element_type.parse_element(one).map_err(invalid)?;
                for _ in 0..slots {
                    bytes.extend_from_slice(&element);
                }
            }
            _ if tokens.len() as u64 == slots => {
                for token in &tokens {
                    bytes.extend(element_type.parse_element(token).map_err(invalid)?);
                }
            }
            _ => {
                return Err(invalid(format!(
                    "`{text}` gives {} element(s) for {slots}",
                    tokens.len()
                )));
            }
        }
        let buffer = HalBuffer::from_bytes(&bytes, None)?;
        HalBufferView::new(buffer, shape, element_type, DENSE_ROW_MAJOR)
    }

    /// A view of `buffer` with `shape`; the buffer must hold the elements.
    pub fn new(
        buffer: HalBuffer,
        shape: Vec<u64>,
        element_type: HalElementType,
        encoding_type: u32,
    ) -> Result<HalBufferView, StatusError> {
        if shape.len() > MAX_RANK {
            return Err(invalid(format!(
                "buffer view rank {} exceeds the limit of {MAX_RANK}",
                shape.len()
            )));
        }
        let needed = HalBufferView::byte_length(&shape, element_type)
            .ok_or_else(|| invalid(format!("shape `{}` overflows", shape_text(&shape))))?;
        if needed > buffer.len() {
            return Err(out_of_range(format!(
                "shape `{}` of {} needs {needed} bytes; the buffer holds {}",
                shape_text(&shape),
                element_type.describe(),
                buffer.len()
            )));
        }
        Ok(HalBufferView {
            buffer,
            shape,
            element_type,
            encoding_type,
        })
    }

    /// The element count.
    pub fn element_count(&self) -> u64 {
        self.shape.iter().product()
    }

    /// The bytes of the elements, copied.
    pub fn to_bytes(&self) -> Vec<u8> {
        let len = HalBufferView::byte_length(&self.shape, self.element_type).unwrap_or(0);
        let mut bytes = self.buffer.to_vec();
        bytes.truncate(len as usize);
        bytes
    }

    /// The view printed as `iree-run-module` prints it (`2x3xf32=[1 2 3][4 5 6]`), with at
    /// most `max_elements` elements.
    pub fn format(&self, max_elements: u64) -> String {
        super::element::format_tensor(
            &self.shape,
            self.element_type,
            &self.to_bytes(),
            max_elements,
        )
    }
}

/// A shape as `2x3` (empty for a scalar).
pub fn shape_text(shape: &[u64]) -> String {
    shape
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// A buffer range bound to a dispatch or to a slot of a binding table: `length` bytes (or
/// [`WHOLE_BUFFER`]) of `buffer` from `offset`.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The buffer.
    pub buffer: HalBuffer,
    /// Where the range starts.
    pub offset: i64,
    /// Its length (or [`WHOLE_BUFFER`]).
    pub length: i64,
}

/// A buffer range bound to a dispatch, as executables take it: a [`Binding`], or a
/// [`BindingRef`] borrowing its buffer (a replay binds buffers its command buffer and binding
/// table hold, without a reference count per dispatch).
pub(crate) trait DispatchBinding: Sync {
    /// The buffer.
    fn buffer(&self) -> &HalBuffer;
    /// Where the range starts.
    fn offset(&self) -> i64;
    /// Its length (or [`WHOLE_BUFFER`]).
    fn length(&self) -> i64;
}

impl DispatchBinding for Binding {
    fn buffer(&self) -> &HalBuffer {
        &self.buffer
    }
    fn offset(&self) -> i64 {
        self.offset
    }
    fn length(&self) -> i64 {
        self.length
    }
}

/// A [`Binding`] borrowing its buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BindingRef<'a> {
    /// The buffer.
    pub buffer: &'a HalBuffer,
    /// Where the range starts.
    pub offset: i64,
    /// Its length (or [`WHOLE_BUFFER`]).
    pub length: i64,
}

impl DispatchBinding for BindingRef<'_> {
    fn buffer(&self) -> &HalBuffer {
        self.buffer
    }
    fn offset(&self) -> i64 {
        self.offset
    }
    fn length(&self) -> i64 {
        self.length
    }
}

impl Binding {
    /// All of `buffer`.
    pub fn whole(buffer: HalBuffer) -> Binding {
        Binding {
            buffer,
            offset: 0,
            length: WHOLE_BUFFER,
        }
    }
}
