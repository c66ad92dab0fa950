//! [`Map`] (`ffi.Map`, copy-on-write) and [`Dict`] (`ffi.Dict`, shared and mutable): the hash
//! table of the official headers, reproduced so that header-inlined C++ code reads and mutates
//! the maps we build, and we read and mutate the maps it builds, with identical storage.
//!
//! # Storage (both types share it; only the header's type index differs)
//!
//! The object is a header followed by a [`TVMFFIMapCell`] `{data, size, slots, data_deleter}`.
//! The most significant bit of `slots` selects the form:
//!
//! - **Small** (bit set; capacity `slots & !bit`, at most 4): `data` holds `size` key/value
//!   pairs in insertion order. Lookup is a linear scan.
//! - **Dense** (bit clear; `slots` a power of two, at least 8): three more fields follow the
//!   cell (Fibonacci shift, head and tail of the insertion-order list), and `data` holds
//!   `ceil(slots / 16)` blocks of 16 metadata bytes followed by 16 items `{key, value, prev,
//!   next}`. Collisions form chains inside the table, linked by jump indices into a fixed
//!   table of probe distances stored in the low 7 bits of each metadata byte.
//!
//! Every algorithm (probing, chain repair when a home slot is occupied by a foreign chain,
//! erase by moving the chain tail, rehash by doubling) is the official one, step for step, so
//! iteration order and every stored byte that C++ reads match what C++ would have produced.
//!
//! # Memory ownership
//!
//! Our objects are always `OBJECT_BYTES` (184) long: enough for four inline pairs (the largest
//! small form) and for the dense fields, which C++ `Dict::Set` may write over a small object in
//! place. The storage behind `data` is always released through the `data_deleter` stored next
//! to it, whoever allocated it: C++ may install its own buffers and deleters in our objects,
//! and we install ours (`malloc`/`free`) in objects C++ made.
//!
//! # Concurrency
//!
//! A `Map` is only mutated through `&mut self` when its object is unique (otherwise it is
//! copied first, as C++ `Map` does), so reads need no lock. A `Dict` is shared and mutated in
//! place; Rust code touches its storage only under `object_lock`, and releases displaced
//! values after the lock is dropped. Key hooks (`__any_hash__`/`__any_equal__`) run under the
//! lock, so a hook must not touch a `Dict` itself.

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::fmt;
use core::ptr::{NonNull, addr_of_mut};

use pactum_sys::tvm_ffi::{
    TVMFFI_MAP_SMALL_TAG, TVMFFIAny, TVMFFIMapCell, TVMFFIObject, TVMFFITypeIndex,
};

use super::hash::{any_equal, any_hash};
use super::object_lock;
use crate::any::{Any, AnyView};
use crate::boundary;
use crate::object::{ObjectRef, alloc_raw_object, builtin_object_ref, free_raw_object};

// ---------------------------------------------------------------------------------------------
// Layout constants.

/// Small-form capacity of a fresh map (`kInitSize`).
const SMALL_INIT: u64 = 2;
/// Largest small-form capacity (`kMaxSize`).
const SMALL_MAX: u64 = 4;
/// Bytes of one small-form pair.
const KV_BYTES: usize = 32;
/// Offset of the first inline pair (right after the 56-byte small object).
const INLINE_OFFSET: usize = 56;
/// Size of every Map/Dict object we allocate: 56 bytes plus four inline pairs. It covers the
/// 80 bytes of the dense form, which C++ may write over a small object in place.
const OBJECT_BYTES: usize = INLINE_OFFSET + SMALL_MAX as usize * KV_BYTES;
const OBJECT_LAYOUT: Layout = match Layout::from_size_align(OBJECT_BYTES, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("invalid map layout"),
};

/// Slots per dense block.
const BLOCK_SLOTS: u64 = 16;
/// Bytes of one dense item: key, value, prev, next.
const ITEM_BYTES: usize = 48;
/// Bytes of one dense block: 16 metadata bytes, then 16 items.
const BLOCK_BYTES: usize = BLOCK_SLOTS as usize * (1 + ITEM_BYTES);
/// Smallest dense table C++ makes (4 entries converted from the small form).
const MIN_DENSE_SLOTS: u64 = 8;

/// Metadata of an empty slot.
const EMPTY: u8 = 0xFF;
/// Metadata of a slot emptied in the middle of a chain move (never left behind).
const PROTECTED: u8 = 0xFE;
/// Metadata bit of a chain element that is not the chain's head.
const BODY: u8 = 0x80;
/// Metadata bits holding the jump index to the next chain element (0: end of chain).
const JUMP_MASK: u8 = 0x7F;
/// "No slot" in the insertion-order links.
const NO_SLOT: u64 = u64::MAX;
/// Maximum load factor of a dense table.
const MAX_LOAD: f64 = 0.99;
/// 2^64 divided by the golden ratio: the Fibonacci hashing multiplier.
const FIB_MULTIPLIER: u64 = 11_400_714_819_323_198_485;

/// Probe distances selected by a jump index: 0 (end of chain), 1..=15, the triangular numbers
/// T(6)..=T(72), then 43 much larger triangular numbers.
const JUMP: [u64; 126] = jump_table();

const fn jump_table() -> [u64; 126] {
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

/// Counters of the rare paths, so tests can tell that they exercised them.
#[cfg(test)]
mod path_counters {
    use core::sync::atomic::AtomicUsize;
    pub(super) static SPARE_MOVES: AtomicUsize = AtomicUsize::new(0);
    pub(super) static REHASHES: AtomicUsize = AtomicUsize::new(0);
    pub(super) static CHAIN_ERASES: AtomicUsize = AtomicUsize::new(0);
}

#[cfg(test)]
fn count_path(counter: &core::sync::atomic::AtomicUsize) {
    counter.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
}

/// The probe distance of a jump index (0 for an out-of-range index, ending the chain).
#[inline]
fn jump(index: u8) -> u64 {
    JUMP.get(usize::from(index)).copied().unwrap_or(0)
}

/// Fibonacci hashing: the top bits of `hash * 2^64/phi`.
#[inline]
fn fib_hash(hash: u64, shift: u32) -> u64 {
    hash.wrapping_mul(FIB_MULTIPLIER)
        .checked_shr(shift)
        .unwrap_or(0)
}

/// The dense table size for at least `capacity` entries: `(fib_shift, slots)` with slots a
/// power of two in `[2 * capacity, 4 * capacity)`.
fn calc_table_size(capacity: u64) -> (u32, u64) {
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
fn shift_for(slots: u64) -> u32 {
    64 - slots.trailing_zeros()
}

// ---------------------------------------------------------------------------------------------
// Raw layout.

type DataDeleter = Option<unsafe extern "C" fn(data: *mut c_void)>;

/// A Map/Dict object as C++ lays it out (the last three fields exist in the dense form only).
#[repr(C)]
struct MapObject {
    header: TVMFFIObject,
    cell: TVMFFIMapCell,
    fib_shift: u32,
    padding: u32,
    head: u64,
    tail: u64,
}

const _: () = assert!(core::mem::size_of::<MapObject>() == 80);
const _: () = assert!(core::mem::offset_of!(MapObject, cell) == 24);
const _: () = assert!(core::mem::offset_of!(MapObject, fib_shift) == 56);
const _: () = assert!(core::mem::offset_of!(MapObject, head) == 64);
const _: () = assert!(core::mem::offset_of!(MapObject, tail) == 72);

/// A small-form pair.
#[repr(C)]
struct Kv {
    key: TVMFFIAny,
    value: TVMFFIAny,
}

/// A dense-form item.
#[repr(C)]
struct Item {
    key: TVMFFIAny,
    value: TVMFFIAny,
    prev: u64,
    next: u64,
}

const _: () = assert!(core::mem::size_of::<Kv>() == KV_BYTES);
const _: () = assert!(core::mem::size_of::<Item>() == ITEM_BYTES);

/// The `data_deleter` of every buffer we allocate.
unsafe extern "C" fn free_map_data(data: *mut c_void) {
    // SAFETY: our map buffers come from `malloc_bytes`; free accepts NULL.
    boundary::deleter(|| unsafe { libc::free(data) })
}

/// `malloc(bytes)`, aborting on failure like the global allocator.
fn malloc_bytes(bytes: usize) -> *mut u8 {
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
unsafe fn owned(raw: TVMFFIAny) -> Any {
    // SAFETY: forwarded from the caller.
    unsafe { Any::from_raw(raw) }
}

/// Views a stored cell as an owned value (same layout).
///
/// # Safety
/// `cell` must point to an owned value that stays in place for `'a`.
#[inline]
unsafe fn as_any<'a>(cell: *const TVMFFIAny) -> &'a Any {
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
struct Dense {
    data: *mut u8,
    deleter: DataDeleter,
    size: u64,
    slots: u64,
    shift: u32,
    head: u64,
    tail: u64,
}

impl Dense {
    /// A fresh empty table of `slots` slots (a power of two), every metadata byte EMPTY.
    fn with_slots(slots: u64) -> Dense {
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
    unsafe fn load(obj: *mut MapObject) -> Dense {
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
    unsafe fn store(self, obj: *mut MapObject) {
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
    fn blocks(&self) -> u64 {
        if self.data.is_null() {
            0
        } else {
            self.slots.div_ceil(BLOCK_SLOTS)
        }
    }

    #[inline]
    fn meta_ptr(&self, slot: u64) -> *mut u8 {
        let (block, offset) = ((slot / BLOCK_SLOTS) as usize, (slot % BLOCK_SLOTS) as usize);
        self.data.wrapping_add(block * BLOCK_BYTES + offset)
    }

    #[inline]
    fn item_ptr(&self, slot: u64) -> *mut Item {
        let (block, offset) = ((slot / BLOCK_SLOTS) as usize, (slot % BLOCK_SLOTS) as usize);
        self.data
            .wrapping_add(block * BLOCK_BYTES + BLOCK_SLOTS as usize + offset * ITEM_BYTES)
            .cast()
    }

    #[inline]
    fn meta(&self, slot: u64) -> u8 {
        // SAFETY: the type invariant: `slot` is inside the blocks, whose metadata is initialised.
        unsafe { *self.meta_ptr(slot) }
    }

    #[inline]
    fn set_meta(&mut self, slot: u64, meta: u8) {
        // SAFETY: the type invariant; `&mut self` gives exclusive access.
        unsafe { *self.meta_ptr(slot) = meta }
    }

    /// Replaces the jump index of `slot`, keeping its head/body bit.
    #[inline]
    fn set_jump(&mut self, slot: u64, jump_index: u8) {
        let meta = (self.meta(slot) & BODY) | jump_index;
        self.set_meta(slot, meta);
    }

    /// Whether `slot` holds an entry.
    #[inline]
    fn is_live(meta: u8) -> bool {
        meta != EMPTY && meta != PROTECTED
    }

    /// The key stored in live `slot`.
    #[inline]
    fn key(&self, slot: u64) -> &TVMFFIAny {
        // SAFETY: the type invariant; callers only name live slots.
        unsafe { &(*self.item_ptr(slot)).key }
    }

    /// The value cell of live `slot`.
    #[inline]
    fn value_ptr(&self, slot: u64) -> *mut TVMFFIAny {
        // SAFETY: only computes an address inside the item (type invariant).
        unsafe { addr_of_mut!((*self.item_ptr(slot)).value) }
    }

    #[inline]
    fn prev(&self, slot: u64) -> u64 {
        // SAFETY: the type invariant; links of live slots are initialised.
        unsafe { (*self.item_ptr(slot)).prev }
    }

    #[inline]
    fn next(&self, slot: u64) -> u64 {
        // SAFETY: the type invariant; links of live slots are initialised.
        unsafe { (*self.item_ptr(slot)).next }
    }

    #[inline]
    fn set_prev(&mut self, slot: u64, prev: u64) {
        // SAFETY: the type invariant; `&mut self` gives exclusive access.
        unsafe { (*self.item_ptr(slot)).prev = prev }
    }

    #[inline]
    fn set_next(&mut self, slot: u64, next: u64) {
        // SAFETY: the type invariant; `&mut self` gives exclusive access.
        unsafe { (*self.item_ptr(slot)).next = next }
    }

    /// Moves the key and value out of live `slot`, leaving zeroed (None) cells.
    fn take_kv(&mut self, slot: u64) -> (Any, Any) {
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
    fn put_kv(&mut self, slot: u64, key: Any, value: Any) {
        let item = self.item_ptr(slot);
        // SAFETY: the slot is inside the blocks (type invariant) and its previous content was
        // moved out or never existed.
        unsafe {
            addr_of_mut!((*item).key).write(key.into_raw());
            addr_of_mut!((*item).value).write(value.into_raw());
        }
    }

    /// Replaces the value of live `slot`, handing back the old one.
    fn replace_value(&mut self, slot: u64, value: Any) -> Any {
        // SAFETY: the slot holds an owned value (type invariant), which we hand back.
        unsafe { owned(self.value_ptr(slot).replace(value.into_raw())) }
    }

    /// Starts a one-element chain piece at empty `slot` (`meta` 0 for a head, BODY for a
    /// tail), holding `key` and None, unlinked from the insertion order.
    fn new_node(&mut self, slot: u64, meta: u8, key: Any) {
        self.set_meta(slot, meta);
        self.put_kv(slot, key, Any::none());
        self.set_prev(slot, NO_SLOT);
        self.set_next(slot, NO_SLOT);
    }

    /// The home slot of a key hash.
    #[inline]
    fn home(&self, hash: u64) -> u64 {
        // Identity under the layout invariant (shift = 64 - log2(slots)); the modulo only
        // keeps a foreign, inconsistent table from sending us out of bounds.
        fib_hash(hash, self.shift) % self.slots
    }

    /// The next slot of `slot`'s chain.
    #[inline]
    fn chain_next(&self, slot: u64) -> Option<u64> {
        let distance = jump(self.meta(slot) & JUMP_MASK);
        (distance != 0).then(|| slot.wrapping_add(distance) % self.slots)
    }

    /// Whether one more entry would exceed the load factor.
    #[inline]
    fn is_full(&self) -> bool {
        (self.size + 1) as f64 > self.slots as f64 * MAX_LOAD
    }

    /// The first EMPTY slot reachable from `from` by one jump: `(jump index, slot)`.
    fn next_empty(&self, from: u64) -> Option<(u8, u64)> {
        (1..JUMP.len()).find_map(|index| {
            let candidate = from.wrapping_add(JUMP[index]) % self.slots;
            (self.meta(candidate) == EMPTY).then_some((index as u8, candidate))
        })
    }

    /// The chain predecessor of non-head live `slot` (rehashes its key, like C++).
    fn find_prev(&self, slot: u64) -> u64 {
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
    fn search(&self, key: &TVMFFIAny, hash: u64) -> Option<u64> {
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

    fn unlink(&mut self, slot: u64) {
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

    fn push_back(&mut self, slot: u64) {
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
    fn replace_node(&mut self, src: u64, dst: u64) {
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
    fn try_insert(&mut self, key: Any, hash: u64) -> Result<(u64, Option<Any>), Any> {
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
    fn spare_list_head(&mut self, target: u64, key: Any) -> Result<(u64, Option<Any>), Any> {
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
    fn insert(&mut self, key: Any, value: Any, hash: u64, garbage: &mut Vec<Any>) {
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

    fn rehash_then_insert(&mut self, key: Any, value: Any, hash: u64, garbage: &mut Vec<Any>) {
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
    fn erase(&mut self, slot: u64) -> (Any, Any) {
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
    fn clear(&mut self, garbage: &mut Vec<Any>) {
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
    fn duplicate(&self) -> Dense {
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
    fn drop_entries(&mut self) {
        for slot in 0..self.blocks() * BLOCK_SLOTS {
            let meta = self.meta(slot);
            if Dense::is_live(meta) {
                self.set_meta(slot, EMPTY);
                drop(self.take_kv(slot));
            }
        }
        self.size = 0;
    }

    /// Frees the storage through its own deleter (the entries must be gone).
    fn release_memory(self) {
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
fn map_object(object: &ObjectRef) -> *mut MapObject {
    object.as_raw().cast()
}

/// Whether the object is one of ours (and so has room for four inline pairs).
///
/// # Safety
/// `obj` must be a live object.
unsafe fn is_ours(obj: *mut MapObject) -> bool {
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
unsafe fn is_small(obj: *mut MapObject) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { (*obj).cell.slots & TVMFFI_MAP_SMALL_TAG != 0 }
}

/// The small-form pairs and their count.
///
/// # Safety
/// `obj` must be a live map object in the small form.
#[inline]
unsafe fn small_pairs(obj: *mut MapObject) -> (*mut Kv, usize) {
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
unsafe fn small_find(data: *const Kv, size: usize, key: &TVMFFIAny) -> Option<usize> {
    // SAFETY: forwarded from the caller.
    (0..size).find(|&i| any_equal(unsafe { &(*data.add(i)).key }, key))
}

/// The value cell stored under `key`. `hash` is only called for the dense form: the small
/// form is a linear scan, as in C++, and hashing would cost more than the scan.
///
/// # Safety
/// `obj` must be a live map object whose storage the caller may read (no concurrent writer).
unsafe fn lookup(
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
unsafe fn for_each_entry(obj: *mut MapObject, mut visit: impl FnMut(&Any, &Any)) {
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
unsafe fn small_reserve(obj: *mut MapObject, capacity: u64) {
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
unsafe fn small_to_dense(
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
unsafe fn insert_entry(
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
unsafe fn erase_entry(obj: *mut MapObject, key: &TVMFFIAny, hash: u64) -> Option<(Any, Any)> {
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
unsafe fn clear_entries(obj: *mut MapObject, garbage: &mut Vec<Any>) {
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
                for i in 0..size {
                    let pair = data.add(i).read();
                    drop((owned(pair.key), owned(pair.value)));
                }
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
fn new_map_object(type_index: TVMFFITypeIndex, capacity: u64) -> ObjectRef {
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
unsafe fn copy_map_object(obj: *mut MapObject, type_index: TVMFFITypeIndex) -> ObjectRef {
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

// ---------------------------------------------------------------------------------------------
// Map.

/// An immutable hash map (`ffi.Map`).
///
/// Mutation through `&mut self` is copy-on-write, like C++ `Map`: the object is changed in
/// place only when this handle is its sole reference, otherwise it is copied first.
#[repr(transparent)]
#[derive(Clone, Debug)]
pub struct Map(ObjectRef);
builtin_object_ref!(Map, TVMFFITypeIndex::MAP, "ffi.Map");

/// A mutable, shared hash map (`ffi.Dict`).
///
/// Mutation goes through `&self` and changes the shared object in place, like C++ `Dict`.
#[repr(transparent)]
#[derive(Clone, Debug)]
pub struct Dict(ObjectRef);
builtin_object_ref!(Dict, TVMFFITypeIndex::DICT, "ffi.Dict");

/// Iterator over the entries of a [`Map`], in iteration order (insertion order, where the
/// dense form moves an updated key to the end).
pub struct MapIter<'a> {
    map: &'a Map,
    small: bool,
    position: u64,
    remaining: usize,
}

impl<'a> Iterator for MapIter<'a> {
    type Item = (&'a Any, &'a Any);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let obj = map_object(&self.map.0);
        // SAFETY: `self.map` keeps the object alive and unchanged for 'a (a Map is only
        // mutated through `&mut`); `position` names a live entry while `remaining > 0`.
        let entry = unsafe {
            if self.small {
                let (data, size) = small_pairs(obj);
                if self.position as usize >= size {
                    return None;
                }
                let pair = data.add(self.position as usize);
                self.position += 1;
                (as_any(&(*pair).key), as_any(&(*pair).value))
            } else {
                if self.position == NO_SLOT {
                    return None;
                }
                let table = Dense::load(obj);
                let slot = self.position;
                self.position = table.next(slot);
                (as_any(table.key(slot)), as_any(table.value_ptr(slot)))
            }
        };
        self.remaining -= 1;
        Some(entry)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for MapIter<'_> {}

impl fmt::Debug for MapIter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapIter")
            .field("remaining", &self.remaining)
            .finish()
    }
}

fn cell_len(object: &ObjectRef) -> usize {
    // SAFETY: Map and Dict objects carry the map cell after the header.
    unsafe { (*object.as_raw().add(1).cast::<TVMFFIMapCell>()).size as usize }
}

impl Map {
    /// An empty map (small form, capacity 2, like C++ `Map()`).
    pub fn new() -> Map {
        Map(new_map_object(TVMFFITypeIndex::MAP, SMALL_INIT))
    }

    /// A map built by inserting `pairs` in order (a later duplicate key wins), exactly like
    /// `ffi.Map(k0, v0, k1, v1, ...)`.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Any, Any)>) -> Map {
        let mut map = Map::new();
        for (key, value) in pairs {
            map.insert(key, value);
        }
        map
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        cell_len(&self.0)
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &AnyView<'_>) -> Option<Any> {
        self.get_ref(key).cloned()
    }

    /// A reference to the value stored under `key`.
    pub fn get_ref(&self, key: &AnyView<'_>) -> Option<&Any> {
        let hash = || any_hash(key.as_raw());
        // SAFETY: `self` keeps the object alive and nobody mutates a Map we hold a reference
        // to (C++ mutates only unique maps); the value lives as long as the borrow of `self`.
        unsafe { lookup(map_object(&self.0), key.as_raw(), hash).map(|cell| as_any(cell)) }
    }

    /// [`get_ref`](Self::get_ref) for callers that expect `key` at position `hint` in
    /// iteration order (keys read in the order they were inserted): a small map checks that
    /// entry first and skips the search when the guess is right.
    pub fn get_ref_hinted(&self, key: &AnyView<'_>, hint: usize) -> Option<&Any> {
        let obj = map_object(&self.0);
        // SAFETY: as in `get_ref`; `hint` is checked against the small form's size.
        unsafe {
            if is_small(obj) {
                let (data, size) = small_pairs(obj);
                if hint < size && any_equal(&(*data.add(hint)).key, key.as_raw()) {
                    return Some(as_any(addr_of_mut!((*data.add(hint)).value)));
                }
            }
        }
        self.get_ref(key)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &AnyView<'_>) -> bool {
        self.get_ref(key).is_some()
    }

    /// The entries in iteration order.
    pub fn iter(&self) -> MapIter<'_> {
        let obj = map_object(&self.0);
        // SAFETY: `self` keeps the object alive and unchanged while borrowed.
        let (small, position) = unsafe {
            if is_small(obj) {
                (true, 0)
            } else {
                (false, Dense::load(obj).head)
            }
        };
        MapIter {
            map: self,
            small,
            position,
            remaining: self.len(),
        }
    }

    /// A snapshot of the entries in iteration order.
    pub fn entries(&self) -> Vec<(Any, Any)> {
        self.iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    }

    /// The keys in iteration order.
    pub fn keys(&self) -> impl Iterator<Item = &Any> + '_ {
        self.iter().map(|(key, _)| key)
    }

    /// The values in iteration order.
    pub fn values(&self) -> impl Iterator<Item = &Any> + '_ {
        self.iter().map(|(_, value)| value)
    }

    /// Whether this handle is the only reference to the map object.
    pub fn is_unique(&self) -> bool {
        self.0.is_unique()
    }

    /// C++ `CopyOnWrite`: copies the object unless this handle is its only reference.
    fn make_unique(&mut self) -> *mut MapObject {
        if !self.0.is_unique() {
            // SAFETY: `self` keeps the object alive; a shared Map is never mutated.
            self.0 = unsafe { copy_map_object(map_object(&self.0), TVMFFITypeIndex::MAP) };
        }
        map_object(&self.0)
    }

    /// Inserts or replaces (C++ `Map::Set`, copy-on-write).
    pub fn insert(&mut self, key: Any, value: Any) {
        let hash = any_hash(key.as_raw());
        let obj = self.make_unique();
        let mut garbage = Vec::new();
        // SAFETY: the object is unique, so `&mut self` gives exclusive access; every map
        // object is at least 80 bytes (ours by construction, C++'s by its own layout).
        unsafe { insert_entry(obj, key, value, hash, &mut garbage) };
        drop(garbage);
    }

    /// Removes `key`, returning its value (C++ `Map::erase`, copy-on-write).
    pub fn remove(&mut self, key: &AnyView<'_>) -> Option<Any> {
        let hash = any_hash(key.as_raw());
        let obj = self.make_unique();
        // SAFETY: the object is unique, so `&mut self` gives exclusive access.
        let removed = unsafe { erase_entry(obj, key.as_raw(), hash) };
        removed.map(|(_key, value)| value)
    }

    /// Removes everything (installs a fresh empty map, like C++ `Map::clear`).
    pub fn clear(&mut self) {
        *self = Map::new();
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

impl Default for Map {
    fn default() -> Self {
        Map::new()
    }
}

impl FromIterator<(Any, Any)> for Map {
    fn from_iter<I: IntoIterator<Item = (Any, Any)>>(iter: I) -> Self {
        Map::from_pairs(iter)
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Any, &'a Any);
    type IntoIter = MapIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

// ---------------------------------------------------------------------------------------------
// Dict.

impl Dict {
    /// An empty dict (small form, capacity 2, like C++ `Dict()`).
    pub fn new() -> Dict {
        Dict(new_map_object(TVMFFITypeIndex::DICT, SMALL_INIT))
    }

    /// A dict built by inserting `pairs` in order.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Any, Any)>) -> Dict {
        let dict = Dict::new();
        for (key, value) in pairs {
            dict.insert(key, value);
        }
        dict
    }

    /// Runs `body` on the object under the dict's lock.
    fn locked<R>(&self, body: impl FnOnce(*mut MapObject) -> R) -> R {
        let _guard = object_lock(&self.0);
        body(map_object(&self.0))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.locked(|_| cell_len(&self.0))
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &AnyView<'_>) -> Option<Any> {
        let hash = any_hash(key.as_raw());
        self.locked(|obj| {
            // SAFETY: the lock serialises Rust access; `self` keeps the object alive. The
            // value is copied (a reference count increment) before the lock is released.
            unsafe { lookup(obj, key.as_raw(), || hash).map(|cell| as_any(cell).clone()) }
        })
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &AnyView<'_>) -> bool {
        let hash = any_hash(key.as_raw());
        // SAFETY: the lock serialises Rust access; `self` keeps the object alive.
        self.locked(|obj| unsafe { lookup(obj, key.as_raw(), || hash) }.is_some())
    }

    /// Inserts or replaces, in place (C++ `Dict::Set`).
    pub fn insert(&self, key: Any, value: Any) {
        let hash = any_hash(key.as_raw());
        let garbage = self.locked(|obj| {
            let mut garbage = Vec::new();
            // SAFETY: the lock serialises Rust access; every map object is at least 80 bytes.
            unsafe { insert_entry(obj, key, value, hash, &mut garbage) };
            garbage
        });
        // Displaced values are released outside the lock: their deleters may run anything.
        drop(garbage);
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &AnyView<'_>) -> Option<Any> {
        let hash = any_hash(key.as_raw());
        // SAFETY: the lock serialises Rust access; `self` keeps the object alive.
        let removed = self.locked(|obj| unsafe { erase_entry(obj, key.as_raw(), hash) });
        removed.map(|(_key, value)| value)
    }

    /// Removes everything (the storage keeps its form and size, like C++ `Dict::clear`).
    pub fn clear(&self) {
        let garbage = self.locked(|obj| {
            let mut garbage = Vec::new();
            // SAFETY: the lock serialises Rust access; `self` keeps the object alive.
            unsafe { clear_entries(obj, &mut garbage) };
            garbage
        });
        drop(garbage);
    }

    /// A snapshot of the entries in iteration order.
    pub fn entries(&self) -> Vec<(Any, Any)> {
        let mut entries = Vec::with_capacity(self.len());
        self.locked(|obj| {
            // SAFETY: the lock serialises Rust access; entries are copied (reference count
            // increments only) before it is released.
            unsafe { for_each_entry(obj, |key, value| entries.push((key.clone(), value.clone()))) }
        });
        entries
    }

    /// Iterates over a snapshot of the entries (later changes to the dict are not seen).
    pub fn iter(&self) -> std::vec::IntoIter<(Any, Any)> {
        self.entries().into_iter()
    }

    /// A [`Map`] holding the same entries in the same iteration order (a copy of the storage).
    pub fn to_map(&self) -> Map {
        // SAFETY: the lock serialises Rust access; the copy shares the values by reference.
        Map(self.locked(|obj| unsafe { copy_map_object(obj, TVMFFITypeIndex::MAP) }))
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

impl Default for Dict {
    fn default() -> Self {
        Dict::new()
    }
}

impl FromIterator<(Any, Any)> for Dict {
    fn from_iter<I: IntoIterator<Item = (Any, Any)>>(iter: I) -> Self {
        Dict::from_pairs(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // -----------------------------------------------------------------------------------------
    // Helpers.

    /// A key of one of several kinds: ints, bools, floats, small and heap strings.
    fn key(i: usize) -> Any {
        match i % 6 {
            0 => Any::from(i as i64),
            1 => Any::from(format!("s{i}")),
            2 => Any::from(format!("a rather long key string number {i}")),
            3 => Any::from(i as f64 + 0.25),
            4 if i == 4 => Any::from(true),
            4 if i == 10 => Any::from(false),
            4 => Any::from(-(i as i64)),
            _ => Any::from(format!("k{i:05}")),
        }
    }

    fn same(a: &Any, b: &Any) -> bool {
        any_equal(a.as_raw(), b.as_raw())
    }

    fn int(any: &Any) -> i64 {
        any.get::<i64>().expect("int value")
    }

    /// Iteration order under the official rules, tracking the form like C++ does.
    struct Model {
        entries: Vec<(Any, i64)>,
        /// Small capacity, or None once dense.
        small_capacity: Option<u64>,
    }

    impl Model {
        fn new() -> Model {
            Model {
                entries: Vec::new(),
                small_capacity: Some(SMALL_INIT),
            }
        }

        fn position(&self, key: &Any) -> Option<usize> {
            self.entries.iter().position(|(k, _)| same(k, key))
        }

        fn set(&mut self, key: Any, value: i64) {
            let found = self.position(&key);
            match self.small_capacity {
                Some(capacity)
                    if capacity == SMALL_MAX && self.entries.len() as u64 == SMALL_MAX =>
                {
                    // Conversion to dense without a lookup: an existing key moves to the end.
                    self.small_capacity = None;
                    if let Some(i) = found {
                        self.entries.remove(i);
                    }
                    self.entries.push((key, value));
                }
                Some(capacity) => match found {
                    Some(i) => self.entries[i].1 = value,
                    None => {
                        if self.entries.len() as u64 == capacity {
                            self.small_capacity = Some((capacity * 2).clamp(SMALL_INIT, SMALL_MAX));
                        }
                        self.entries.push((key, value));
                    }
                },
                None => {
                    if let Some(i) = found {
                        self.entries.remove(i);
                    }
                    self.entries.push((key, value));
                }
            }
        }

        fn erase(&mut self, key: &Any) -> Option<i64> {
            self.position(key).map(|i| self.entries.remove(i).1)
        }
    }

    fn raw(object: &ObjectRef) -> *mut MapObject {
        map_object(object)
    }

    fn slots_of(object: &ObjectRef) -> u64 {
        // SAFETY: a live map object.
        unsafe { (*raw(object)).cell.slots }
    }

    /// Checks every structural invariant C++ relies on.
    fn check_invariants(object: &ObjectRef) {
        let obj = raw(object);
        // SAFETY: a live map object that nobody mutates during the check.
        unsafe {
            if is_small(obj) {
                let capacity = (*obj).cell.slots & !TVMFFI_MAP_SMALL_TAG;
                let (data, size) = small_pairs(obj);
                assert!(
                    (SMALL_INIT..=SMALL_MAX).contains(&capacity),
                    "small capacity {capacity}"
                );
                assert!(size as u64 <= capacity);
                for i in 0..size {
                    for j in 0..i {
                        assert!(
                            !any_equal(&(*data.add(i)).key, &(*data.add(j)).key),
                            "duplicate small key"
                        );
                    }
                }
                return;
            }
            let table = Dense::load(obj);
            assert!(
                table.slots >= MIN_DENSE_SLOTS && table.slots.is_power_of_two(),
                "slots {}",
                table.slots
            );
            assert_eq!(table.shift, shift_for(table.slots));
            assert!(table.deleter.is_some());
            let mut live = 0u64;
            for slot in 0..table.blocks() * BLOCK_SLOTS {
                let meta = table.meta(slot);
                assert_ne!(meta, PROTECTED, "protected slot left behind");
                if meta == EMPTY {
                    continue;
                }
                assert!(slot < table.slots, "live slot beyond the table");
                live += 1;
                let home = table.home(any_hash(table.key(slot)));
                assert_eq!(meta & BODY == 0, home == slot, "head bit of slot {slot}");
                assert_eq!(table.meta(home) & BODY, 0, "home slot is not a head");
                let mut cursor = home;
                let mut steps = 0;
                while cursor != slot {
                    cursor = table
                        .chain_next(cursor)
                        .expect("slot unreachable from its home");
                    steps += 1;
                    assert!(steps <= table.slots);
                }
            }
            assert_eq!(live, table.size);
            let mut seen = std::collections::HashSet::new();
            let (mut slot, mut prev) = (table.head, NO_SLOT);
            while slot != NO_SLOT {
                assert!(Dense::is_live(table.meta(slot)));
                assert!(seen.insert(slot), "cycle in the iteration list");
                assert_eq!(table.prev(slot), prev);
                prev = slot;
                slot = table.next(slot);
            }
            assert_eq!(table.tail, prev);
            assert_eq!(seen.len() as u64, table.size);
        }
    }

    fn assert_matches_model(entries: &[(Any, Any)], model: &Model) {
        assert_eq!(entries.len(), model.entries.len());
        for ((key, value), (model_key, model_value)) in entries.iter().zip(&model.entries) {
            assert!(
                same(key, model_key),
                "order differs: {key:?} vs {model_key:?}"
            );
            assert_eq!(int(value), *model_value);
        }
    }

    /// A small deterministic generator.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    // -----------------------------------------------------------------------------------------
    // Tables.

    #[test]
    fn jump_table_and_table_sizes() {
        assert_eq!(
            &JUMP[..17],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 21]
        );
        assert_eq!(JUMP[82], 2628);
        assert_eq!(JUMP[83], 8515);
        assert_eq!(JUMP[125], 5_209_859_154_120_846_435);
        assert!(JUMP.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(calc_table_size(4), (61, 8));
        assert_eq!(calc_table_size(5), (60, 16));
        assert_eq!(calc_table_size(8), (60, 16));
        assert_eq!(
            fib_hash(any_hash(Any::from(0i64).as_raw()), 61),
            fib_hash(2654435832, 61)
        );
        assert_eq!(core::mem::size_of::<MapObject>(), 80);
        const { assert!(OBJECT_BYTES >= 80) };
    }

    // -----------------------------------------------------------------------------------------
    // Forms and transitions.

    #[test]
    fn growth_sequence_matches_cpp() {
        // Map<Any, Any>::Set of 0..20 gives slots 2,2,4,4,8,8,8,16 (8th) ... 32 (16th).
        let mut map = Map::new();
        let dict = Dict::new();
        let dict_ptr = dict.as_object_ref().as_raw();
        assert_eq!(slots_of(map.as_object_ref()), 2 | TVMFFI_MAP_SMALL_TAG);
        for k in 1..=40usize {
            map.insert(Any::from(k as i64 - 1), Any::from(k as i64));
            dict.insert(Any::from(k as i64 - 1), Any::from(k as i64));
            let expected = match k {
                1 | 2 => 2 | TVMFFI_MAP_SMALL_TAG,
                3 | 4 => 4 | TVMFFI_MAP_SMALL_TAG,
                5..=7 => 8,
                8..=15 => 16,
                16..=31 => 32,
                _ => 64,
            };
            assert_eq!(slots_of(map.as_object_ref()), expected, "after {k} keys");
            assert_eq!(slots_of(dict.as_object_ref()), expected, "after {k} keys");
            assert_eq!(
                dict.as_object_ref().as_raw(),
                dict_ptr,
                "a Dict grows in place"
            );
            check_invariants(map.as_object_ref());
            check_invariants(dict.as_object_ref());
            assert_eq!(map.len(), k);
        }
        for k in 0..40i64 {
            assert_eq!(int(&map.get(&Any::from(k).view()).unwrap()), k + 1);
            assert_eq!(int(&dict.get(&Any::from(k).view()).unwrap()), k + 1);
        }
        assert!(map.get(&Any::from(40i64).view()).is_none());
    }

    #[test]
    fn update_order_quirks() {
        // Small: an update keeps the position.
        let small = Map::from_pairs((0..3i64).map(|k| (Any::from(k), Any::from(k))));
        let mut small2 = small.clone();
        small2.insert(Any::from(0i64), Any::from(100i64));
        let keys: Vec<i64> = small2.keys().map(int).collect();
        assert_eq!(keys, [0, 1, 2]);
        assert_eq!(
            int(small.get(&Any::from(0i64).view()).as_ref().unwrap()),
            0,
            "copy-on-write"
        );
        // A full 4-slot small map turns dense on any Set, and the key moves to the end.
        let mut full = Map::from_pairs((0..4i64).map(|k| (Any::from(k), Any::from(k))));
        assert_eq!(slots_of(full.as_object_ref()), 4 | TVMFFI_MAP_SMALL_TAG);
        full.insert(Any::from(0i64), Any::from(7i64));
        assert_eq!(slots_of(full.as_object_ref()), 8);
        assert_eq!(full.keys().map(int).collect::<Vec<_>>(), [1, 2, 3, 0]);
        assert_eq!(full.len(), 4);
        check_invariants(full.as_object_ref());
        // Dense: an update moves the key to the end.
        let mut dense = Map::from_pairs((0..20i64).map(|k| (Any::from(k), Any::from(k))));
        dense.insert(Any::from(3i64), Any::from(33i64));
        let keys: Vec<i64> = dense.keys().map(int).collect();
        assert_eq!(&keys[17..], &[18, 19, 3]);
        assert_eq!(keys.len(), 20);
        check_invariants(dense.as_object_ref());
        // from_pairs: a later duplicate wins.
        let map = Map::from_pairs([
            (Any::from("a"), Any::from(1i64)),
            (Any::from("a"), Any::from(2i64)),
        ]);
        assert_eq!(map.len(), 1);
        assert_eq!(int(&map.get(&Any::from("a").view()).unwrap()), 2);
    }

    #[test]
    fn key_kinds_follow_any_equal() {
        let dict = Dict::new();
        dict.insert(Any::from(0.0f64), Any::from(1i64));
        dict.insert(Any::from(-0.0f64), Any::from(2i64));
        dict.insert(Any::from(f64::NAN), Any::from(3i64));
        dict.insert(Any::from(1i64), Any::from(4i64));
        dict.insert(Any::from(true), Any::from(5i64));
        dict.insert(Any::from(1.0f64), Any::from(6i64));
        assert_eq!(dict.len(), 6);
        assert_eq!(int(&dict.get(&Any::from(f64::NAN).view()).unwrap()), 3);
        assert_eq!(int(&dict.get(&Any::from(-0.0f64).view()).unwrap()), 2);
        // A small string and a heap string with the same text are the same key.
        let heap = crate::string::heap_value(b"abc", TVMFFITypeIndex::STR);
        dict.insert(Any::from("abc"), Any::from(7i64));
        dict.insert(heap.clone(), Any::from(8i64));
        assert_eq!(dict.len(), 7);
        assert_eq!(int(&dict.get(&heap.view()).unwrap()), 8);
        assert_eq!(int(&dict.remove(&Any::from("abc").view()).unwrap()), 8);
        assert!(!dict.contains_key(&heap.view()));
        check_invariants(dict.as_object_ref());
    }

    // -----------------------------------------------------------------------------------------
    // Against the model.

    fn run_model_sequence(n: usize, seed: u64) {
        let mut rng = Rng(seed | 1);
        let mut map = Map::new();
        let dict = Dict::new();
        let mut model = Model::new();
        let universe = n + n / 3 + 1;
        let mut counter = 0i64;
        let operations = n * 3 + 8;
        for step in 0..operations {
            let k = key(rng.below(universe));
            let roll = rng.below(10);
            if roll < 6 || step < n {
                counter += 1;
                map.insert(k.clone(), Any::from(counter));
                dict.insert(k.clone(), Any::from(counter));
                model.set(k, counter);
            } else {
                let expected = model.erase(&k);
                let from_map = map.remove(&k.view()).map(|v| int(&v));
                let from_dict = dict.remove(&k.view()).map(|v| int(&v));
                assert_eq!(from_map, expected);
                assert_eq!(from_dict, expected);
            }
            if step % 97 == 0 || step + 1 == operations {
                check_invariants(map.as_object_ref());
                check_invariants(dict.as_object_ref());
                assert_matches_model(&map.entries(), &model);
                assert_matches_model(&dict.entries(), &model);
            }
        }
        for i in 0..universe {
            let k = key(i);
            let expected = model.position(&k).map(|p| model.entries[p].1);
            assert_eq!(map.get(&k.view()).map(|v| int(&v)), expected, "key {k:?}");
            assert_eq!(dict.get(&k.view()).map(|v| int(&v)), expected, "key {k:?}");
            assert_eq!(map.contains_key(&k.view()), expected.is_some());
        }
        assert_eq!(map.len(), model.entries.len());
        assert_eq!(dict.len(), model.entries.len());
        let iterated: Vec<(Any, Any)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_matches_model(&iterated, &model);
        assert_eq!(map.iter().len(), model.entries.len());
    }

    #[test]
    fn insert_update_erase_against_model() {
        for n in [
            0usize, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 40, 100, 200,
        ] {
            for seed in [0x9e37_79b9u64, 12345, 77] {
                run_model_sequence(n, seed ^ n as u64);
            }
        }
    }

    #[test]
    fn large_sequence_against_model() {
        use core::sync::atomic::Ordering::Relaxed;
        let before = [
            &path_counters::SPARE_MOVES,
            &path_counters::REHASHES,
            &path_counters::CHAIN_ERASES,
        ]
        .map(|counter| counter.load(Relaxed));
        run_model_sequence(1000, 0xdead_beef);
        let after = [
            &path_counters::SPARE_MOVES,
            &path_counters::REHASHES,
            &path_counters::CHAIN_ERASES,
        ]
        .map(|counter| counter.load(Relaxed));
        for (name, (b, a)) in [
            "spare-list-head moves",
            "rehashes",
            "erases with a successor",
        ]
        .iter()
        .zip(before.iter().zip(after))
        {
            assert!(a > *b, "the sequence never exercised {name}");
        }
    }

    #[test]
    fn erase_everything_through_chains() {
        // Many keys in a small table make long chains; erase them all in a shuffled order.
        let n = 600usize;
        let dict = Dict::from_pairs((0..n).map(|i| (key(i), Any::from(i as i64))));
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = Rng(42);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let slots = slots_of(dict.as_object_ref());
        for (done, &i) in order.iter().enumerate() {
            assert_eq!(dict.remove(&key(i).view()).map(|v| int(&v)), Some(i as i64));
            assert!(dict.remove(&key(i).view()).is_none());
            if done % 29 == 0 {
                check_invariants(dict.as_object_ref());
                for &j in &order[done + 1..] {
                    assert!(
                        dict.contains_key(&key(j).view()),
                        "lost key {j} after erasing {i}"
                    );
                }
            }
        }
        assert!(dict.is_empty());
        assert_eq!(
            slots_of(dict.as_object_ref()),
            slots,
            "the dense form never shrinks"
        );
        check_invariants(dict.as_object_ref());
        // The emptied table is reusable.
        for i in 0..50 {
            dict.insert(key(i), Any::from(i as i64));
        }
        check_invariants(dict.as_object_ref());
        assert_eq!(dict.len(), 50);
    }

    // -----------------------------------------------------------------------------------------
    // Dict and Map semantics.

    #[test]
    fn dict_clear_keeps_storage() {
        let value = Any::from("a value that lives on the heap, shared by all entries");
        let baseline = value.as_object_ref().unwrap().strong_count();
        for n in [0usize, 2, 4, 5, 40] {
            let dict = Dict::from_pairs((0..n).map(|i| (key(i), value.clone())));
            let slots = slots_of(dict.as_object_ref());
            dict.clear();
            assert!(dict.is_empty());
            assert!(dict.entries().is_empty());
            assert_eq!(slots_of(dict.as_object_ref()), slots);
            assert_eq!(value.as_object_ref().unwrap().strong_count(), baseline);
            check_invariants(dict.as_object_ref());
            dict.insert(key(1), value.clone());
            assert_eq!(dict.len(), 1);
        }
        assert_eq!(value.as_object_ref().unwrap().strong_count(), baseline);
    }

    #[test]
    fn map_copy_on_write() {
        for n in [0usize, 1, 3, 4, 5, 20, 300] {
            let original = Map::from_pairs((0..n).map(|i| (key(i), Any::from(i as i64))));
            let before = original.entries();
            let mut copy = original.clone();
            assert!(!copy.is_unique());
            copy.insert(key(n + 1), Any::from(-1i64));
            assert!(!copy.as_object_ref().ptr_eq(original.as_object_ref()));
            assert!(copy.is_unique());
            let mut copy2 = original.clone();
            if n > 0 {
                assert!(copy2.remove(&key(0).view()).is_some());
                assert_eq!(copy2.len(), n - 1);
            }
            copy2.clear();
            assert!(copy2.is_empty());
            // The original is untouched.
            assert_eq!(original.len(), n);
            let after = original.entries();
            assert_eq!(before.len(), after.len());
            for ((k1, v1), (k2, v2)) in before.iter().zip(&after) {
                assert!(same(k1, k2) && same(v1, v2));
            }
            assert_eq!(copy.len(), n + 1);
            check_invariants(original.as_object_ref());
            check_invariants(copy.as_object_ref());
            // A unique map is mutated in place while it needs no new storage.
            let ptr = copy.as_object_ref().as_raw();
            copy.insert(key(n + 1), Any::from(-2i64));
            assert_eq!(copy.as_object_ref().as_raw(), ptr);
            // Dict -> Map copy keeps entries and order.
            let dict = Dict::from_pairs(original.entries());
            let as_map = dict.to_map();
            assert_matches_entries(&as_map.entries(), &dict.entries());
        }
    }

    fn assert_matches_entries(a: &[(Any, Any)], b: &[(Any, Any)]) {
        assert_eq!(a.len(), b.len());
        for ((k1, v1), (k2, v2)) in a.iter().zip(b) {
            assert!(same(k1, k2) && same(v1, v2));
        }
    }

    #[test]
    fn refcounts_return_to_baseline() {
        let value = Any::from("shared heap value ................................");
        let heap_key = Any::from("shared heap key ..................................");
        let count = |any: &Any| any.as_object_ref().unwrap().strong_count();
        let (value_base, key_base) = (count(&value), count(&heap_key));
        {
            let mut map = Map::new();
            let dict = Dict::new();
            let mut rng = Rng(7);
            for step in 0..3000usize {
                let k = if step % 11 == 0 {
                    heap_key.clone()
                } else {
                    key(rng.below(400))
                };
                match rng.below(5) {
                    0 => {
                        map.remove(&k.view());
                        dict.remove(&k.view());
                    }
                    _ => {
                        map.insert(k.clone(), value.clone());
                        dict.insert(k, value.clone());
                    }
                }
                if step == 1500 {
                    dict.clear();
                    let snapshot = map.clone();
                    map.insert(heap_key.clone(), heap_key.clone());
                    drop(snapshot);
                }
            }
            let nested = Dict::new();
            nested.insert(Any::from(dict.clone()), Any::from(map.clone()));
            nested.insert(value.clone(), Any::none());
            assert!(count(&value) > value_base);
        }
        assert_eq!(count(&value), value_base);
        assert_eq!(count(&heap_key), key_base);
    }

    #[test]
    fn dict_stress_eight_threads() {
        let dict = Dict::new();
        let value = Any::from("stress value on the heap ...........................");
        let base = value.as_object_ref().unwrap().strong_count();
        std::thread::scope(|scope| {
            for t in 0..8u64 {
                let dict = dict.clone();
                let value = value.clone();
                scope.spawn(move || {
                    let mut rng = Rng(0x1234_5678 + t * 7919);
                    for step in 0..4000usize {
                        let k = key(rng.below(300));
                        match rng.below(10) {
                            0..=4 => dict.insert(k, value.clone()),
                            5 | 6 => {
                                dict.remove(&k.view());
                            }
                            7 => {
                                let _ = dict.get(&k.view());
                            }
                            8 => {
                                let entries = dict.entries();
                                assert!(entries.len() <= 300);
                            }
                            _ => {
                                if step % 500 == 0 {
                                    dict.clear();
                                }
                                let _ = dict.len();
                            }
                        }
                    }
                });
            }
        });
        check_invariants(dict.as_object_ref());
        assert_eq!(dict.entries().len(), dict.len());
        dict.clear();
        assert_eq!(value.as_object_ref().unwrap().strong_count(), base);
    }
}
