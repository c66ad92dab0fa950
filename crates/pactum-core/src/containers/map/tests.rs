//! The map storage against a model of the official rules, and the public types on top.

use pactum_sys::tvm_ffi::{TVMFFI_MAP_SMALL_TAG, TVMFFITypeIndex};

use super::storage::*;
use super::*;
use crate::any::Any;

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
            Some(capacity) if capacity == SMALL_MAX && self.entries.len() as u64 == SMALL_MAX => {
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
