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

mod storage;
#[cfg(test)]
mod tests;

use core::fmt;
use core::ptr::addr_of_mut;

use pactum_sys::tvm_ffi::{TVMFFIMapCell, TVMFFITypeIndex};

use crate::any::{Any, AnyView};
use crate::containers::hash::{any_equal, any_hash};
use crate::object::ObjectRef;
use crate::object::object_lock;
use storage::*;

// ---------------------------------------------------------------------------------------------
// Map.

/// An immutable hash map (`ffi.Map`).
///
/// Mutation through `&mut self` is copy-on-write, like C++ `Map`: the object is changed in
/// place only when this handle is its sole reference, otherwise it is copied first.
#[repr(transparent)]
#[derive(Clone, Debug)]
pub struct Map(ObjectRef);
crate::any::builtin_object_ref!(Map, TVMFFITypeIndex::MAP, "ffi.Map");

/// A mutable, shared hash map (`ffi.Dict`).
///
/// Mutation goes through `&self` and changes the shared object in place, like C++ `Dict`.
#[repr(transparent)]
#[derive(Clone, Debug)]
pub struct Dict(ObjectRef);
crate::any::builtin_object_ref!(Dict, TVMFFITypeIndex::DICT, "ffi.Dict");

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
