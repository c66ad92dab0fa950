//! Reading a verified FlatBuffer in place, with safe code only.
//!
//! The verifier has already checked every offset and length, so these reads succeed; they still
//! go through bounds-checked slices and fall back to defaults, so a wrong assumption can give a
//! wrong value but never undefined behaviour.

/// A verified, size-prefixed FlatBuffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buffer<'a>(pub(crate) &'a [u8]);

impl<'a> Buffer<'a> {
    fn bytes<const N: usize>(self, pos: usize) -> [u8; N] {
        pos.checked_add(N)
            .and_then(|end| self.0.get(pos..end))
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0; N])
    }

    pub(crate) fn u8(self, pos: usize) -> u8 {
        self.0.get(pos).copied().unwrap_or(0)
    }

    pub(crate) fn u16(self, pos: usize) -> u16 {
        u16::from_le_bytes(self.bytes(pos))
    }

    pub(crate) fn i16(self, pos: usize) -> i16 {
        i16::from_le_bytes(self.bytes(pos))
    }

    pub(crate) fn u32(self, pos: usize) -> u32 {
        u32::from_le_bytes(self.bytes(pos))
    }

    pub(crate) fn i32(self, pos: usize) -> i32 {
        i32::from_le_bytes(self.bytes(pos))
    }

    pub(crate) fn u64(self, pos: usize) -> u64 {
        u64::from_le_bytes(self.bytes(pos))
    }

    /// The position an unsigned offset stored at `pos` points to.
    fn follow(self, pos: usize) -> usize {
        pos.saturating_add(self.u32(pos) as usize)
    }

    /// The root table of the size-prefixed buffer.
    pub(crate) fn root(self) -> Table<'a> {
        Table {
            buffer: self,
            pos: self.follow(4),
        }
    }
}

/// A table at a verified position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table<'a> {
    buffer: Buffer<'a>,
    pos: usize,
}

/// A vector at a verified position: its elements start at `start`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VectorAt<'a> {
    buffer: Buffer<'a>,
    start: usize,
    len: usize,
}

impl<'a> Table<'a> {
    /// The position of the field in vtable slot `slot`, when present.
    fn field(self, slot: u16) -> Option<usize> {
        let vtable = (self.pos as i64 - i64::from(self.buffer.i32(self.pos))) as usize;
        if slot >= self.buffer.u16(vtable) {
            return None;
        }
        match self.buffer.u16(vtable + usize::from(slot)) {
            0 => None,
            offset => Some(self.pos + usize::from(offset)),
        }
    }

    pub(crate) fn u8(self, slot: u16, default: u8) -> u8 {
        self.field(slot).map_or(default, |p| self.buffer.u8(p))
    }

    pub(crate) fn u32(self, slot: u16, default: u32) -> u32 {
        self.field(slot).map_or(default, |p| self.buffer.u32(p))
    }

    pub(crate) fn i32(self, slot: u16, default: i32) -> i32 {
        self.field(slot).map_or(default, |p| self.buffer.i32(p))
    }

    pub(crate) fn u64(self, slot: u16, default: u64) -> u64 {
        self.field(slot).map_or(default, |p| self.buffer.u64(p))
    }

    pub(crate) fn str(self, slot: u16) -> Option<&'a str> {
        let vector = self.vector(slot)?;
        std::str::from_utf8(vector.bytes(1)).ok()
    }

    pub(crate) fn table(self, slot: u16) -> Option<Table<'a>> {
        let pos = self.field(slot)?;
        Some(Table {
            buffer: self.buffer,
            pos: self.buffer.follow(pos),
        })
    }

    pub(crate) fn vector(self, slot: u16) -> Option<VectorAt<'a>> {
        let pos = self.buffer.follow(self.field(slot)?);
        Some(VectorAt {
            buffer: self.buffer,
            start: pos + 4,
            len: self.buffer.u32(pos) as usize,
        })
    }
}

impl<'a> VectorAt<'a> {
    pub(crate) fn len(self) -> usize {
        self.len
    }

    /// The elements as bytes, each `element_size` long.
    pub(crate) fn bytes(self, element_size: usize) -> &'a [u8] {
        let end = self
            .start
            .saturating_add(self.len.saturating_mul(element_size));
        self.buffer.0.get(self.start..end).unwrap_or(&[])
    }

    /// The table element `index` (a vector of offsets to tables).
    pub(crate) fn table(self, index: usize) -> Table<'a> {
        Table {
            buffer: self.buffer,
            pos: self.buffer.follow(self.start + 4 * index),
        }
    }

    /// The raw offset stored for element `index` (0 for a NONE union entry).
    pub(crate) fn offset(self, index: usize) -> u32 {
        self.buffer.u32(self.start + 4 * index)
    }

    pub(crate) fn u8(self, index: usize) -> u8 {
        self.buffer.u8(self.start + index)
    }

    pub(crate) fn i32(self, index: usize) -> i32 {
        self.buffer.i32(self.start + 4 * index)
    }

    /// The struct element `index` of `size` bytes, as a reader positioned on it.
    pub(crate) fn record(self, index: usize, size: usize) -> Record<'a> {
        Record {
            buffer: self.buffer,
            pos: self.start + size * index,
        }
    }
}

/// A struct stored inline in a vector.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record<'a> {
    buffer: Buffer<'a>,
    pos: usize,
}

impl Record<'_> {
    pub(crate) fn i32(self, at: usize) -> i32 {
        self.buffer.i32(self.pos + at)
    }

    pub(crate) fn u32(self, at: usize) -> u32 {
        self.buffer.u32(self.pos + at)
    }

    pub(crate) fn i16(self, at: usize) -> i16 {
        self.buffer.i16(self.pos + at)
    }
}
