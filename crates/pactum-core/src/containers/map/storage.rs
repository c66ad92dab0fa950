//! The storage of [`Map`](super::Map) and [`Dict`](super::Dict): the object layout, the
//! small and dense forms and every operation on them, byte for byte the official headers'
//! (see the parent module's docs).

use core::alloc::Layout;
use core::ffi::{c_int, c_void};

use core::ptr::{NonNull, addr_of_mut};

use pactum_sys::tvm_ffi::{
    TVMFFI_MAP_SMALL_TAG, TVMFFIAny, TVMFFIMapCell, TVMFFIObject, TVMFFITypeIndex,
};

use crate::any::Any;
use crate::containers::hash::{any_equal, any_hash};

use crate::boundary;
use crate::object::{ObjectRef, alloc_raw_object, free_raw_object};

// ---------------------------------------------------------------------------------------------
// Layout constants.

/// Small-form capacity of a fresh map (`kInitSize`).
pub(super) const SMALL_INIT: u64 = 2;
/// Largest small-form capacity (`kMaxSize`).
pub(super) const SMALL_MAX: u64 = 4;
/// Bytes of one small-form pair.
pub(super) const KV_BYTES: usize = 32;
/// Offset of the first inline pair (right after the 56-byte small object).
pub(super) const INLINE_OFFSET: usize = 56;
/// Size of every Map/Dict object we allocate: 56 bytes plus four inline pairs. It covers the
/// 80 bytes of the dense form, which C++ may write over a small object in place.
pub(super) const OBJECT_BYTES: usize = INLINE_OFFSET + SMALL_MAX as usize * KV_BYTES;
pub(super) const OBJECT_LAYOUT: Layout = match Layout::from_size_align(OBJECT_BYTES, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("invalid map layout"),
};

/// Slots per dense block.
pub(super) const BLOCK_SLOTS: u64 = 16;
/// Bytes of one dense item: key, value, prev, next.
pub(super) const ITEM_BYTES: usize = 48;
/// Bytes of one dense block: 16 metadata bytes, then 16 items.
pub(super) const BLOCK_BYTES: usize = BLOCK_SLOTS as usize * (1 + ITEM_BYTES);
/// Smallest dense table C++ makes (4 entries converted from the small form).
pub(super) const MIN_DENSE_SLOTS: u64 = 8;

/// Metadata of an empty slot.
pub(super) const EMPTY: u8 = 0xFF;
/// Metadata of a slot emptied in the middle of a chain move (never left behind).
pub(super) const PROTECTED: u8 = 0xFE;
/// Metadata bit of a chain element that is not the chain's head.
pub(super) const BODY: u8 = 0x80;
/// Metadata bits holding the jump index to the next chain element (0: end of chain).
pub(super) const JUMP_MASK: u8 = 0x7F;
/// "No slot" in the insertion-order links.
pub(super) const NO_SLOT: u64 = u64::MAX;
/// Maximum load factor of a dense table.
pub(super) const MAX_LOAD: f64 = 0.99;
/// 2^64 divided by the golden ratio: the Fibonacci hashing multiplier.
pub(super) const FIB_MULTIPLIER: u64 = 11_400_714_819_323_198_485;

/// Probe distances selected by a jump index: 0 (end of chain), 1..=15, the triangular numbers
/// T(6)..=T(72), then 43 much larger triangular numbers.
pub(super) const JUMP: [u64; 126] = jump_table();

pub(super) const fn jump_table() -> [u64; 126] {
    const LARGE: [u64; 43] = [
        8515,
        19110,
        42778,
        96141,
        216153,
        486591,
        1092981,
        2458653,
        5532801,
        12442566,
        27993903,
        62983476,
        141717030,
        318844378,
        717352503,
        1614057336,
        3631522476,
        8170957530,
        18384510628,
        41364789378,
        93070452520,
        209408356380,
        471168559170,
        1060128894105,
        2385289465695,
        5366898840628,
        12075518705635,
        27169915244790,
        61132312065111,
        137547689707000,
        309482283181501,
        696335127828753,
        1566753995631385,
        3525196511162271,
        7931691992677701,
        17846306936293605,
        40154190677507445,
        90346928918121501,
        203280589587557251,
        457381325854679626,
        1029107982097042876,
        2315492959180353330,
        5209859154120846435,
    ];
    let mut table = [0u64; 126];
    let mut i = 0;
    while i < 126 {
        table[i] = if i < 16 {
            i as u64
        } else if i < 83 {
            let n = i as u64 - 10;
            n * (n + 1) / 2
        } else {
            LARGE[i - 83]
        };
        i += 1;
    }
    table
}

/// The probe distance of a jump index (0 for an out-of-range index, ending the chain).
#[inline]
pub(super) fn jump(index: u8) -> u64 {
    JUMP.get(usize::from(index)).copied().unwrap_or(0)
}

/// Fibonacci hashing: the top bits of `hash * 2^64/phi`.
#[inline]
pub(super) fn fib_hash(hash: u64, shift: u32) -> u64 {
    hash.wrapping_mul(FIB_MULTIPLIER)
        .checked_shr(shift)
        .unwrap_or(0)
}

/// The dense table size for at least `capacity` entries: `(fib_shift, slots)` with slots a
/// power of two in `[2 * capacity, 4 * capacity)`.
pub(super) fn calc_table_size(capacity: u64) -> (u32, u64) {
    let mut shift = 64u32;
    let mut slots = 1u64;
    let mut rest = capacity;
    while rest != 0 {
        shift -= 1;
        slots <<= 1;
        rest >>= 1;
    }
    if slots < capacity.saturating_mul(2) {
        (shift - 1, slots << 1)
    } else {
        (shift, slots)
    }
}

/// The Fibonacci shift of a power-of-two table of `slots`.
#[inline]
pub(super) fn shift_for(slots: u64) -> u32 {
    64 - slots.trailing_zeros()
}

// ---------------------------------------------------------------------------------------------
// Raw layout.

pub(super) type DataDeleter = Option<unsafe extern "C" fn(data: *mut c_void)>;

/// A Map/Dict object as C++ lays it out (the last three fields exist in the dense form only).
#[repr(C)]
pub(super) struct MapObject {
    pub(super) header: TVMFFIObject,
    pub(super) cell: TVMFFIMapCell,
    pub(super) fib_shift: u32,
    pub(super) padding: u32,
    pub(super) head: u64,
    pub(super) tail: u64,
}

const _: () = assert!(core::mem::size_of::<MapObject>() == 80);
const _: () = assert!(core::mem::offset_of!(MapObject, cell) == 24);
const _: () = assert!(core::mem::offset_of!(MapObject, fib_shift) == 56);
const _: () = assert!(core::mem::offset_of!(MapObject, head) == 64);
const _: () = assert!(core::mem::offset_of!(MapObject, tail) == 72);

/// A small-form pair.
#[repr(C)]
pub(super) struct Kv {
    pub(super) key: TVMFFIAny,
    pub(super) value: TVMFFIAny,
}

/// A dense-form item.
#[repr(C)]
pub(super) struct Item {
    pub(super) key: TVMFFIAny,
    pub(super) value: TVMFFIAny,
    pub(super) prev: u64,
    pub(super) next: u64,
}

const _: () = assert!(core::mem::size_of::<Kv>() == KV_BYTES);
const _: () = assert!(core::mem::size_of::<Item>() == ITEM_BYTES);

/// The `data_deleter` of every buffer we allocate.
unsafe extern "C" fn free_map_data(data: *mut c_void) {
    // SAFETY: our map buffers come from `malloc_bytes`; free accepts NULL.
    boundary::deleter(|| unsafe { libc::free(data) })
}

/// `malloc(bytes)`, aborting on failure like the global allocator.
pub(super) fn malloc_bytes(bytes: usize) -> *mut u8 {
    let bytes = bytes.max(1);
    // SAFETY: plain allocation of a positive size.
    let data = unsafe { libc::malloc(bytes) }.cast::<u8>();
    if data.is_null() {
        std::alloc::handle_alloc_error(
            Layout::from_size_align(bytes, 16).unwrap_or(Layout::new::<u64>()),
        );
    }
    data
}

/// Takes ownership of a raw owned cell.
///
/// # Safety
/// `raw` must be an owned value that nobody else will release.
#[inline]
pub(super) unsafe fn owned(raw: TVMFFIAny) -> Any {
    // SAFETY: forwarded from the caller.
    unsafe { Any::from_raw(raw) }
}

/// Views a stored cell as an owned value (same layout).
///
/// # Safety
/// `cell` must point to an owned value that stays in place for `'a`.
#[inline]
pub(super) unsafe fn as_any<'a>(cell: *const TVMFFIAny) -> &'a Any {
    // SAFETY: forwarded from the caller; Any is repr(transparent) over TVMFFIAny.
    unsafe { &*cell.cast::<Any>() }
}

// ---------------------------------------------------------------------------------------------
// Dense form.

/// A dense table, detached from its object while an operation runs (the object's fields are
/// loaded into it and stored back afterwards).
///
/// Invariant: when `slots > 0`, `data` points to `ceil(slots / 16)` blocks whose metadata bytes
/// are initialised and whose live items (metadata neither EMPTY nor PROTECTED) hold owned
/// values; the holder of a `Dense` has exclusive access to that storage. All slot indices
/// passed to the accessors are below `blocks * 16`.
pub(super) struct Dense {
    pub(super) data: *mut u8,
    pub(super) deleter: DataDeleter,
    pub(super) size: u64,
    pub(super) slots: u64,
    pub(super) shift: u32,
    pub(super) head: u64,
    pub(super) tail: u64,
}

impl Dense {
    /// A fresh empty table of `slots` slots (a power of two), every metadata byte EMPTY.
    pub(super) fn with_slots(slots: u64) -> Dense {
        let slots = slots.max(1);
        let blocks = slots.div_ceil(BLOCK_SLOTS) as usize;
        let bytes = blocks.saturating_mul(BLOCK_BYTES);
        let data = malloc_bytes(bytes);
        for block in 0..blocks {
            // SAFETY: block `block` lies inside the allocation; its first 16 bytes are the
            // metadata.
            unsafe {
                data.add(block * BLOCK_BYTES)
                    .write_bytes(EMPTY, BLOCK_SLOTS as usize)
            };
        }
        Dense {
            data,
            deleter: Some(free_map_data),
            size: 0,
            slots,
            shift: shift_for(slots),
            head: NO_SLOT,
            tail: NO_SLOT,
        }
    }

    /// Loads the dense fields of `obj`.
    ///
    /// # Safety
    /// `obj` must be a live map object in the dense form whose storage the caller accesses
    /// exclusively until the table is stored back.
    pub(super) unsafe fn load(obj: *mut MapObject) -> Dense {
        // SAFETY: forwarded from the caller; dense objects are at least 80 bytes.
        unsafe {
            Dense {
                data: (*obj).cell.data.cast(),
                deleter: (*obj).cell.data_deleter,
                size: (*obj).cell.size,
                slots: (*obj).cell.slots,
                shift: (*obj).fib_shift,
                head: (*obj).head,
                tail: (*obj).tail,
            }
        }
    }

    /// Writes the table into `obj` (switching it to the dense form).
    ///
    /// # Safety
    /// `obj` must be a live map object of at least 80 bytes whose previous storage has been
    /// released or is this table, and which the caller accesses exclusively.
    pub(super) unsafe fn store(self, obj: *mut MapObject) {
        // SAFETY: forwarded from the caller.
        unsafe {
            (*obj).cell.data = self.data.cast();
            (*obj).cell.data_deleter = self.deleter;
            (*obj).cell.size = self.size;
            (*obj).cell.slots = self.slots;
            (*obj).fib_shift = self.shift;
            (*obj).head = self.head;
            (*obj).tail = self.tail;
        }
    }

    /// Number of blocks.
    #[inline]
    pub(super) fn blocks(&self) -> u64 {
        if self.data.is_null() {
            0
        } else {
            self.slots.div_ceil(BLOCK_SLOTS)
        }
    }

    #[inline]
    pub(super) fn meta_ptr(&self, slot: u64) -> *mut u8 {
        let (block, offset) = ((slot / BLOCK_SLOTS) as usize, (slot % BLOCK_SLOTS) as usize);
        self.data.wrapping_add(block * BLOCK_BYTES + offset)
    }

    #[inline]
    pub(super) fn item_ptr(&self, slot: u64) -> *mut Item {
        let (block, offset) = ((slot / BLOCK_SLOTS) as usize, (slot % BLOCK_SLOTS) as usize);
        self.data
            .wrapping_add(block * BLOCK_BYTES + BLOCK_SLOTS as usize + offset * ITEM_BYTES)
            .cast()
    }

    #[inline]
    pub(super) fn meta(&self, slot: u64) -> u8 {
        // SAFETY: the type invariant: `slot` is inside the blocks, whose metadata is initialised.
        unsafe { *self.meta_ptr(slot) }
    }

    #[inline]
    pub(super) fn set_meta(&mut self, slot: u64, meta: u8) {
        // SAFETY: the type invariant; `&mut self` gives exclusive access.
        unsafe { *self.meta_ptr(slot) = meta }
    }

    /// Replaces the jump index of `slot`, keeping its head/body bit.
    #[inline]
    pub(super) fn set_jump(&mut self, slot: u64, jump_index: u8) {
        let meta = (self.meta(slot) & BODY) | jump_index;
        self.set_meta(slot, meta);
    }

    /// Whether `slot` holds an entry.
    #[inline]
    pub(super) fn is_live(meta: u8) -> bool {
        meta != EMPTY && meta != PROTECTED
    }

    /// The key stored in live `slot`.
    #[inline]
    pub(super) fn key(&self, slot: u64) -> &TVMFFIAny {
        // SAFETY: the type invariant; callers only name live slots.
        unsafe { &(*self.item_ptr(slot)).key }
    }

    /// The value cell of live `slot`.
    #[inline]
    pub(super) fn value_ptr(&self, slot: u64) -> *mut TVMFFIAny {
        // SAFETY: only computes an address inside the item (type invariant).
        unsafe { addr_of_mut!((*self.item_ptr(slot)).value) }
    }

    #[inline]
    pub(super) fn prev(&self, slot: u64) -> u64 {
        // SAFETY: the type invariant; links of live slots are initialised.
        unsafe { (*self.item_ptr(slot)).prev }
    }

    #[inline]
    pub(super) fn next(&self, slot: u64) -> u64 {
        // SAFETY: the type invariant; links of live slots are initialised.
        unsafe { (*self.item_ptr(slot)).next }
    }

    #[inline]
    pub(super) fn set_prev(&mut self, slot: u64, prev: u64) {
        // SAFETY: the type invariant; `&mut self` gives exclusive access.
        unsafe { (*self.item_ptr(slot)).prev = prev }
    }

    #[inline]
    pub(super) fn set_next(&mut self, slot: u64, next: u64) {
        // SAFETY: the type invariant; `&mut self` gives exclusive access.
        unsafe { (*self.item_ptr(slot)).next = next }
    }

    /// Moves the key and value out of live `slot`, leaving zeroed (None) cells.
    pub(super) fn take_kv(&mut self, slot: u64) -> (Any, Any) {
        let item = self.item_ptr(slot);
        // SAFETY: the slot holds owned values (type invariant); they are moved out and the
        // cells reset to None so nothing is released twice.
        unsafe {
            let key = owned(addr_of_mut!((*item).key).replace(TVMFFIAny::NONE));
            let value = owned(addr_of_mut!((*item).value).replace(TVMFFIAny::NONE));
            (key, value)
        }
    }

    /// Moves `key` and `value` into `slot` without releasing what the cells held.
    pub(super) fn put_kv(&mut self, slot: u64, key: Any, value: Any) {
        let item = self.item_ptr(slot);
        // SAFETY: the slot is inside the blocks (type invariant) and its previous content was
        // moved out or never existed.
        unsafe {
            addr_of_mut!((*item).key).write(key.into_raw());
            addr_of_mut!((*item).value).write(value.into_raw());
        }
    }

    /// Replaces the value of live `slot`, handing back the old one.
    pub(super) fn replace_value(&mut self, slot: u64, value: Any) -> Any {
        // SAFETY: the slot holds an owned value (type invariant), which we hand back.
        unsafe { owned(self.value_ptr(slot).replace(value.into_raw())) }
    }

    /// Starts a one-element chain piece at empty `slot` (`meta` 0 for a head, BODY for a
    /// tail), holding `key` and None, unlinked from the insertion order.
    pub(super) fn new_node(&mut self, slot: u64, meta: u8, key: Any) {
        self.set_meta(slot, meta);
        self.put_kv(slot, key, Any::none());
        self.set_prev(slot, NO_SLOT);
        self.set_next(slot, NO_SLOT);
    }

    /// The home slot of a key hash.
    #[inline]
    pub(super) fn home(&self, hash: u64) -> u64 {
        // Identity under the layout invariant (shift = 64 - log2(slots)); the modulo only
        // keeps a foreign, inconsistent table from sending us out of bounds.
        fib_hash(hash, self.shift) % self.slots
    }

    /// The next slot of `slot`'s chain.
    #[inline]
    pub(super) fn chain_next(&self, slot: u64) -> Option<u64> {
        let distance = jump(self.meta(slot) & JUMP_MASK);
        (distance != 0).then(|| slot.wrapping_add(distance) % self.slots)
    }

    /// Whether one more entry would exceed the load factor.
    #[inline]
    pub(super) fn is_full(&self) -> bool {
        (self.size + 1) as f64 > self.slots as f64 * MAX_LOAD
    }

    /// The first EMPTY slot reachable from `from` by one jump: `(jump index, slot)`.
    pub(super) fn next_empty(&self, from: u64) -> Option<(u8, u64)> {
        (1..JUMP.len()).find_map(|index| {
            let candidate = from.wrapping_add(JUMP[index]) % self.slots;
            (self.meta(candidate) == EMPTY).then_some((index as u8, candidate))
        })
    }

    /// The chain predecessor of non-head live `slot` (rehashes its key, like C++).
    pub(super) fn find_prev(&self, slot: u64) -> u64 {
        let mut prev = self.home(any_hash(self.key(slot)));
        let mut next = self.chain_next(prev);
        for _ in 0..self.slots {
            match next {
                Some(candidate) if candidate == slot => break,
                Some(candidate) => {
                    prev = candidate;
                    next = self.chain_next(candidate);
                }
                None => break,
            }
        }
        prev
    }

    /// The slot holding `key`, whose hash is `hash`.
    pub(super) fn search(&self, key: &TVMFFIAny, hash: u64) -> Option<u64> {
        if self.size == 0 || self.slots == 0 || self.data.is_null() {
            return None;
        }
        let mut slot = self.home(hash);
        if self.meta(slot) & BODY != 0 {
            return None;
        }
        for _ in 0..self.slots {
            if any_equal(key, self.key(slot)) {
                return Some(slot);
            }
            slot = self.chain_next(slot)?;
        }
        None
    }

    // Insertion-order list.

    pub(super) fn unlink(&mut self, slot: u64) {
        let (prev, next) = (self.prev(slot), self.next(slot));
        if prev == NO_SLOT {
            self.head = next;
        } else {
            self.set_next(prev, next);
        }
        if next == NO_SLOT {
            self.tail = prev;
        } else {
            self.set_prev(next, prev);
        }
    }

    pub(super) fn push_back(&mut self, slot: u64) {
        let tail = self.tail;
        self.set_prev(slot, tail);
        self.set_next(slot, NO_SLOT);
        if tail != NO_SLOT {
            self.set_next(tail, slot);
        }
        if self.head == NO_SLOT {
            self.head = slot;
        }
        self.tail = slot;
    }

    /// `dst` takes `src`'s place in the insertion order.
    pub(super) fn replace_node(&mut self, src: u64, dst: u64) {
        let (prev, next) = (self.prev(src), self.next(src));
        self.set_prev(dst, prev);
        self.set_next(dst, next);
        if prev == NO_SLOT {
            self.head = dst;
        } else {
            self.set_next(prev, dst);
        }
        if next == NO_SLOT {
            self.tail = dst;
        } else {
            self.set_prev(next, dst);
        }
    }

    // Insertion.

    /// Finds or makes the slot of `key`. `Ok((slot, None))`: a new entry holding `key` and
    /// None; `Ok((slot, Some(key)))`: the key existed (it is handed back) and the entry was
    /// unlinked from the insertion order; `Err(key)`: the table must be rehashed.
    pub(super) fn try_insert(&mut self, key: Any, hash: u64) -> Result<(u64, Option<Any>), Any> {
        if self.slots == 0 || self.data.is_null() {
            return Err(key);
        }
        let home = self.home(hash);
        let meta = self.meta(home);
        if meta == EMPTY {
            self.new_node(home, 0, key);
            self.size += 1;
            return Ok((home, None));
        }
        if meta & BODY != 0 {
            // The home slot belongs to another chain: evict that chain's tail from it.
            if self.is_full() {
                return Err(key);
            }
            return self.spare_list_head(home, key);
        }
        let mut last = home;
        let mut steps = 0;
        loop {
            if any_equal(key.as_raw(), self.key(last)) {
                self.unlink(last);
                return Ok((last, Some(key)));
            }
            match self.chain_next(last) {
                Some(next) if steps < self.slots => {
                    last = next;
                    steps += 1;
                }
                Some(_) => return Err(key),
                None => break,
            }
        }
        if self.is_full() {
            return Err(key);
        }
        let Some((jump_index, empty)) = self.next_empty(last) else {
            return Err(key);
        };
        self.new_node(empty, BODY, key);
        self.set_jump(last, jump_index);
        self.size += 1;
        Ok((empty, None))
    }

    /// Moves the part of a foreign chain that starts at `target` elsewhere, then makes
    /// `target` the head of a new chain holding `key`. May stop half-way (then the caller
    /// rehashes, which only reads the insertion order and the items).
    pub(super) fn spare_list_head(
        &mut self,
        target: u64,
        key: Any,
    ) -> Result<(u64, Option<Any>), Any> {
        let mut write = self.find_prev(target);
        let mut read = target;
        let mut first = true;
        for _ in 0..self.slots {
            let Some((jump_index, empty)) = self.next_empty(write) else {
                return Err(key);
            };
            #[cfg(test)]
            count_path(&path_counters::SPARE_MOVES);
            let (moved_key, moved_value) = self.take_kv(read);
            self.set_meta(empty, BODY);
            self.put_kv(empty, moved_key, moved_value);
            self.replace_node(read, empty);
            let read_meta = self.meta(read);
            self.set_meta(read, if first { PROTECTED } else { EMPTY });
            first = false;
            self.set_jump(write, jump_index);
            write = empty;
            let distance = jump(read_meta & JUMP_MASK);
            if distance == 0 {
                break;
            }
            read = read.wrapping_add(distance) % self.slots;
        }
        self.new_node(target, 0, key);
        self.size += 1;
        Ok((target, None))
    }

    /// Inserts or updates (an updated entry moves to the end of the insertion order),
    /// rehashing into a table twice as large when needed. Displaced values go to `garbage`.
    pub(super) fn insert(&mut self, key: Any, value: Any, hash: u64, garbage: &mut Vec<Any>) {
        match self.try_insert(key, hash) {
            Ok((slot, existing)) => {
                let old = self.replace_value(slot, value);
                if let Some(key) = existing {
                    garbage.push(key);
                    garbage.push(old);
                }
                self.push_back(slot);
            }
            Err(key) => self.rehash_then_insert(key, value, hash, garbage),
        }
    }

    pub(super) fn rehash_then_insert(
        &mut self,
        key: Any,
        value: Any,
        hash: u64,
        garbage: &mut Vec<Any>,
    ) {
        #[cfg(test)]
        count_path(&path_counters::REHASHES);
        let slots = if self.slots == 0 {
            MIN_DENSE_SLOTS
        } else {
            self.slots.saturating_mul(2)
        };
        let mut grown = Dense::with_slots(slots);
        let mut slot = self.head;
        let mut moved = 0;
        while slot != NO_SLOT && moved < self.size {
            let next = self.next(slot);
            let (moved_key, moved_value) = self.take_kv(slot);
            let moved_hash = any_hash(moved_key.as_raw());
            grown.insert(moved_key, moved_value, moved_hash, garbage);
            slot = next;
            moved += 1;
        }
        grown.insert(key, value, hash, garbage);
        core::mem::replace(self, grown).release_memory();
    }

    /// Erases live `slot`, handing back its key and value.
    pub(super) fn erase(&mut self, slot: u64) -> (Any, Any) {
        self.size = self.size.saturating_sub(1);
        let meta = self.meta(slot);
        match self.chain_next(slot) {
            None => {
                if meta & BODY != 0 {
                    let prev = self.find_prev(slot);
                    self.set_jump(prev, 0);
                }
                self.unlink(slot);
                let removed = self.take_kv(slot);
                self.set_meta(slot, EMPTY);
                removed
            }
            Some(first) => {
                // Fill the hole with the chain's last element.
                #[cfg(test)]
                count_path(&path_counters::CHAIN_ERASES);
                let (mut prev, mut last) = (slot, first);
                for _ in 0..self.slots {
                    match self.chain_next(last) {
                        Some(next) => {
                            prev = last;
                            last = next;
                        }
                        None => break,
                    }
                }
                self.unlink(slot);
                let removed = self.take_kv(slot);
                let (moved_key, moved_value) = self.take_kv(last);
                self.put_kv(slot, moved_key, moved_value);
                self.replace_node(last, slot);
                self.set_meta(last, EMPTY);
                self.set_jump(prev, 0);
                removed
            }
        }
    }

    /// Empties every slot (the table keeps its size), moving the entries to `garbage`.
    pub(super) fn clear(&mut self, garbage: &mut Vec<Any>) {
        for slot in 0..self.blocks() * BLOCK_SLOTS {
            if Dense::is_live(self.meta(slot)) {
                self.set_meta(slot, EMPTY);
                let (key, value) = self.take_kv(slot);
                garbage.push(key);
                garbage.push(value);
            }
        }
        self.size = 0;
        self.head = NO_SLOT;
        self.tail = NO_SLOT;
    }

    /// A slot-for-slot copy (`CopyFrom`), sharing the keys and values.
    pub(super) fn duplicate(&self) -> Dense {
        let mut copy = Dense::with_slots(self.slots);
        for slot in 0..self.blocks() * BLOCK_SLOTS {
            let meta = self.meta(slot);
            if Dense::is_live(meta) {
                copy.set_meta(slot, meta);
                // SAFETY: live slot of `self` (type invariant): its values are owned and alive.
                let (key, value) = unsafe {
                    (
                        as_any(self.key(slot)).clone(),
                        as_any(self.value_ptr(slot)).clone(),
                    )
                };
                copy.put_kv(slot, key, value);
                copy.set_prev(slot, self.prev(slot));
                copy.set_next(slot, self.next(slot));
            }
        }
        copy.size = self.size;
        copy.shift = self.shift;
        copy.head = self.head;
        copy.tail = self.tail;
        copy
    }

    /// Releases every live entry (used by the object deleter).
    pub(super) fn drop_entries(&mut self) {
        let mut values = Vec::new();
        for slot in 0..self.blocks() * BLOCK_SLOTS {
            let meta = self.meta(slot);
            if Dense::is_live(meta) {
                self.set_meta(slot, EMPTY);
                let (key, value) = self.take_kv(slot);
                values.extend([key, value]);
            }
        }
        self.size = 0;
        crate::object::release::release_values(values);
    }

    /// Frees the storage through its own deleter (the entries must be gone).
    pub(super) fn release_memory(self) {
        if !self.data.is_null() {
            if let Some(deleter) = self.deleter {
                // SAFETY: `deleter` is the function stored with `data` for freeing it; the
                // table is consumed, so nothing uses `data` afterwards.
                unsafe { deleter(self.data.cast()) }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Object-level operations (both forms).

/// The object pointer of a map reference.
#[inline]
pub(super) fn map_object(object: &ObjectRef) -> *mut MapObject {
    object.as_raw().cast()
}

/// Whether the object is one of ours (and so has room for four inline pairs).
///
/// # Safety
/// `obj` must be a live object.
pub(super) unsafe fn is_ours(obj: *mut MapObject) -> bool {
    let ours: unsafe extern "C" fn(*mut c_void, c_int) = map_deleter;
    // SAFETY: forwarded from the caller.
    let deleter = unsafe { (*obj).header.deleter };
    deleter.is_some_and(|deleter| core::ptr::fn_addr_eq(deleter, ours))
}

/// Whether the object is in the small form.
///
/// # Safety
/// `obj` must be a live map object.
#[inline]
pub(super) unsafe fn is_small(obj: *mut MapObject) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { (*obj).cell.slots & TVMFFI_MAP_SMALL_TAG != 0 }
}

/// The small-form pairs and their count.
///
/// # Safety
/// `obj` must be a live map object in the small form.
#[inline]
pub(super) unsafe fn small_pairs(obj: *mut MapObject) -> (*mut Kv, usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let data = (*obj).cell.data.cast::<Kv>();
        let size = if data.is_null() {
            0
        } else {
            (*obj).cell.size as usize
        };
        (data, size)
    }
}

/// The index of the pair whose key equals `key` (stored key first, like C++).
///
/// # Safety
/// `data` must hold `size` owned pairs.
pub(super) unsafe fn small_find(data: *const Kv, size: usize, key: &TVMFFIAny) -> Option<usize> {
    // SAFETY: forwarded from the caller.
    (0..size).find(|&i| any_equal(unsafe { &(*data.add(i)).key }, key))
}

/// The value cell stored under `key`. `hash` is only called for the dense form: the small
/// form is a linear scan, as in C++, and hashing would cost more than the scan.
///
/// # Safety
/// `obj` must be a live map object whose storage the caller may read (no concurrent writer).
pub(super) unsafe fn lookup(
    obj: *mut MapObject,
    key: &TVMFFIAny,
    hash: impl FnOnce() -> u64,
) -> Option<*mut TVMFFIAny> {
    // SAFETY: forwarded from the caller; each form is read as its layout says.
    unsafe {
        if is_small(obj) {
            let (data, size) = small_pairs(obj);
            small_find(data, size, key).map(|i| addr_of_mut!((*data.add(i)).value))
        } else {
            let table = Dense::load(obj);
            table.search(key, hash()).map(|slot| table.value_ptr(slot))
        }
    }
}

/// Calls `visit` on every entry in iteration order.
///
/// # Safety
/// As for [`lookup`]; `visit` must not mutate the map.
pub(super) unsafe fn for_each_entry(obj: *mut MapObject, mut visit: impl FnMut(&Any, &Any)) {
    // SAFETY: forwarded from the caller; live entries hold owned values.
    unsafe {
        if is_small(obj) {
            let (data, size) = small_pairs(obj);
            for i in 0..size {
                let pair = data.add(i);
                visit(as_any(&(*pair).key), as_any(&(*pair).value));
            }
        } else {
            let table = Dense::load(obj);
            let mut slot = table.head;
            let mut seen = 0;
            while slot != NO_SLOT && seen < table.size {
                visit(as_any(table.key(slot)), as_any(table.value_ptr(slot)));
                slot = table.next(slot);
                seen += 1;
            }
        }
    }
}

/// Gives the small form of `obj` room for `capacity` pairs (like C++, which copies into a new
/// small map and switches to it): inline when the object is ours, otherwise in a new buffer
/// with our deleter, after releasing the old storage through its own deleter.
///
/// # Safety
/// `obj` must be a live small-form map object accessed exclusively; `capacity <= 4` and at
/// least its size.
pub(super) unsafe fn small_reserve(obj: *mut MapObject, capacity: u64) {
    // SAFETY: forwarded from the caller; our objects hold four inline pairs.
    unsafe {
        let (data, size) = small_pairs(obj);
        let inline = obj.cast::<u8>().add(INLINE_OFFSET).cast::<Kv>();
        if data == inline && is_ours(obj) {
            (*obj).cell.slots = capacity | TVMFFI_MAP_SMALL_TAG;
            return;
        }
        let buffer = malloc_bytes(capacity as usize * KV_BYTES).cast::<Kv>();
        if size > 0 {
            core::ptr::copy_nonoverlapping(data, buffer, size);
        }
        let old_deleter = (*obj).cell.data_deleter;
        (*obj).cell.data = buffer.cast();
        (*obj).cell.data_deleter = Some(free_map_data);
        (*obj).cell.slots = capacity | TVMFFI_MAP_SMALL_TAG;
        if let Some(deleter) = old_deleter {
            // The pairs were moved out bitwise: the old storage only needs freeing.
            deleter(data.cast());
        }
    }
}

/// Converts the small form of `obj` to a dense table holding its pairs (in order), then
/// inserts `key`/`value` there (C++ does not look the key up first: an existing key moves to
/// the end).
///
/// # Safety
/// `obj` must be a live small-form map object of at least 80 bytes, accessed exclusively.
pub(super) unsafe fn small_to_dense(
    obj: *mut MapObject,
    key: Any,
    value: Any,
    hash: u64,
    garbage: &mut Vec<Any>,
) {
    // SAFETY: forwarded from the caller. The pairs are moved out before the dense fields
    // overwrite offsets 56..80, where inline pairs may live.
    unsafe {
        let (data, size) = small_pairs(obj);
        let (_, slots) = calc_table_size(size as u64);
        let mut table = Dense::with_slots(slots.max(MIN_DENSE_SLOTS));
        for i in 0..size {
            let pair = data.add(i).read();
            let (moved_key, moved_value) = (owned(pair.key), owned(pair.value));
            let moved_hash = any_hash(moved_key.as_raw());
            table.insert(moved_key, moved_value, moved_hash, garbage);
        }
        table.insert(key, value, hash, garbage);
        (*obj).cell.size = 0;
        if let Some(deleter) = (*obj).cell.data_deleter {
            deleter(data.cast());
        }
        table.store(obj);
    }
}

/// `Set`: inserts or updates `key` with the official semantics of either form.
///
/// # Safety
/// `obj` must be a live map object accessed exclusively, at least 80 bytes long.
pub(super) unsafe fn insert_entry(
    obj: *mut MapObject,
    key: Any,
    value: Any,
    hash: u64,
    garbage: &mut Vec<Any>,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if !is_small(obj) {
            let mut table = Dense::load(obj);
            table.insert(key, value, hash, garbage);
            table.store(obj);
            return;
        }
        let capacity = (*obj).cell.slots & !TVMFFI_MAP_SMALL_TAG;
        let (data, size) = small_pairs(obj);
        if capacity == SMALL_MAX && size as u64 >= SMALL_MAX {
            return small_to_dense(obj, key, value, hash, garbage);
        }
        if let Some(i) = small_find(data, size, key.as_raw()) {
            let cell = addr_of_mut!((*data.add(i)).value);
            garbage.push(owned(cell.replace(value.into_raw())));
            garbage.push(key);
            return;
        }
        if size as u64 >= capacity {
            if capacity >= SMALL_MAX {
                // A full small map larger than C++ ever makes (C++ would drop the entry).
                return small_to_dense(obj, key, value, hash, garbage);
            }
            small_reserve(obj, (capacity * 2).clamp(SMALL_INIT, SMALL_MAX));
        }
        let (data, size) = small_pairs(obj);
        data.add(size).write(Kv {
            key: key.into_raw(),
            value: value.into_raw(),
        });
        (*obj).cell.size = size as u64 + 1;
    }
}

/// `erase`: removes `key`, handing back its key and value.
///
/// # Safety
/// `obj` must be a live map object accessed exclusively.
pub(super) unsafe fn erase_entry(
    obj: *mut MapObject,
    key: &TVMFFIAny,
    hash: u64,
) -> Option<(Any, Any)> {
    // SAFETY: forwarded from the caller.
    unsafe {
        if is_small(obj) {
            let (data, size) = small_pairs(obj);
            let i = small_find(data, size, key)?;
            let pair = data.add(i).read();
            // Later pairs slide down, keeping the insertion order.
            core::ptr::copy(data.add(i + 1), data.add(i), size - i - 1);
            (*obj).cell.size = size as u64 - 1;
            Some((owned(pair.key), owned(pair.value)))
        } else {
            let mut table = Dense::load(obj);
            let slot = table.search(key, hash)?;
            let removed = table.erase(slot);
            table.store(obj);
            Some(removed)
        }
    }
}

/// `clear`: empties the map in place, keeping its form and capacity.
///
/// # Safety
/// `obj` must be a live map object accessed exclusively.
pub(super) unsafe fn clear_entries(obj: *mut MapObject, garbage: &mut Vec<Any>) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if is_small(obj) {
            let (data, size) = small_pairs(obj);
            (*obj).cell.size = 0;
            for i in 0..size {
                let pair = data.add(i).read();
                garbage.push(owned(pair.key));
                garbage.push(owned(pair.value));
            }
        } else {
            let mut table = Dense::load(obj);
            table.clear(garbage);
            table.store(obj);
        }
    }
}

/// The object deleter of our maps: releases the contents in whatever form and storage C++ may
/// have left them (always through the stored `data_deleter`), then frees the object.
unsafe extern "C" fn map_deleter(obj: *mut c_void, flags: c_int) {
    let obj = obj.cast::<MapObject>();
    let release = || {
        // SAFETY: the strong count reached zero, so nobody else reaches the storage; it is
        // released once because the protocol passes the strong flag once.
        unsafe {
            if is_small(obj) {
                let (data, size) = small_pairs(obj);
                (*obj).cell.size = 0;
                crate::object::release::release_values((0..size).flat_map(|i| {
                    // Each live pair is read exactly once, before the storage is freed.
                    let pair = data.add(i).read();
                    [owned(pair.key), owned(pair.value)]
                }));
                if let Some(deleter) = (*obj).cell.data_deleter {
                    deleter((*obj).cell.data);
                }
            } else {
                let mut table = Dense::load(obj);
                table.drop_entries();
                table.release_memory();
            }
            (*obj).cell.data = core::ptr::null_mut();
            (*obj).cell.data_deleter = None;
        }
    };
    // SAFETY: allocated by `new_map_object` with OBJECT_LAYOUT; the weak flag comes once.
    let free = || unsafe { free_raw_object(obj.cast(), OBJECT_LAYOUT) };
    boundary::object_deleter(flags, release, free);
}

/// A new empty small-form map object of `type_index` with room for `capacity` (2..=4) pairs.
pub(super) fn new_map_object(type_index: TVMFFITypeIndex, capacity: u64) -> ObjectRef {
    let obj = alloc_raw_object(OBJECT_LAYOUT, type_index.0, Some(map_deleter)).as_ptr();
    // SAFETY: the allocation is OBJECT_BYTES long: a header, the cell and four inline pairs.
    unsafe {
        let body = obj.cast::<u8>().add(core::mem::size_of::<TVMFFIObject>());
        body.write_bytes(0, OBJECT_BYTES - core::mem::size_of::<TVMFFIObject>());
        obj.add(1).cast::<TVMFFIMapCell>().write(TVMFFIMapCell {
            data: obj.cast::<u8>().add(INLINE_OFFSET).cast(),
            size: 0,
            slots: capacity.clamp(SMALL_INIT, SMALL_MAX) | TVMFFI_MAP_SMALL_TAG,
            data_deleter: None,
        });
    }
    // SAFETY: a fresh object whose single strong reference we take.
    unsafe { ObjectRef::from_raw_owned(NonNull::new_unchecked(obj)) }
}

/// `CopyFrom`: a new object of `type_index` with the same entries. A small map is rebuilt with
/// capacity `max(size, 2)`; a dense map is copied slot for slot.
///
/// # Safety
/// `obj` must be a live map object with no concurrent writer.
pub(super) unsafe fn copy_map_object(
    obj: *mut MapObject,
    type_index: TVMFFITypeIndex,
) -> ObjectRef {
    // SAFETY: forwarded from the caller.
    unsafe {
        if is_small(obj) {
            let (data, size) = small_pairs(obj);
            let copy = new_map_object(type_index, size as u64);
            let target = map_object(&copy);
            if size as u64 <= SMALL_MAX {
                let (inline, _) = small_pairs(target);
                for i in 0..size {
                    let pair = &*data.add(i);
                    let (key, value) = (as_any(&pair.key).clone(), as_any(&pair.value).clone());
                    inline.add(i).write(Kv {
                        key: key.into_raw(),
                        value: value.into_raw(),
                    });
                }
                (*target).cell.size = size as u64;
            } else {
                // Larger than any small map C++ makes: copy into a dense table instead.
                let mut garbage = Vec::new();
                for i in 0..size {
                    let pair = &*data.add(i);
                    let (key, value) = (as_any(&pair.key).clone(), as_any(&pair.value).clone());
                    let hash = any_hash(key.as_raw());
                    insert_entry(target, key, value, hash, &mut garbage);
                }
                drop(garbage);
            }
            copy
        } else {
            let copy = new_map_object(type_index, SMALL_INIT);
            Dense::load(obj).duplicate().store(map_object(&copy));
            copy
        }
    }
}

/// Counts one pass through a rare path.
#[cfg(test)]
pub(super) fn count_path(counter: &core::sync::atomic::AtomicUsize) {
    counter.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
}

/// Counters of the rare paths, so tests can tell that they exercised them.
#[cfg(test)]
pub(super) mod path_counters {
    use core::sync::atomic::AtomicUsize;
    pub(in crate::containers::map) static SPARE_MOVES: AtomicUsize = AtomicUsize::new(0);
    pub(in crate::containers::map) static REHASHES: AtomicUsize = AtomicUsize::new(0);
    pub(in crate::containers::map) static CHAIN_ERASES: AtomicUsize = AtomicUsize::new(0);
}
