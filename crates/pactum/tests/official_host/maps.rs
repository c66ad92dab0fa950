//! Differential test of pactum's `Map`/`Dict` against the official `libtvm_ffi.so`
//! (apache-tvm-ffi 0.1.15.post2).
//!
//! The official library is loaded before any pactum call, so pactum binds its runtime to it;
//! the official globals (`ffi.Map`, `ffi.MapGetItem`, `ffi.DictSetItem`, ...) then run the
//! header-inlined C++ map code on objects pactum built, and pactum reads and mutates objects
//! the C++ code built. Finally the raw storage of maps built both ways from the same sequence
//! is compared byte for byte.
//!
//! Run it with
//!
//! ```text
//! cargo test -p pactum --test official_host maps
//! ```
//!
//! (`scripts/test.sh` runs it with the rest of the workspace.) The library is found through
//! `PACTUM_OFFICIAL_LIBDIR`, or else through `tvm-ffi-config --libdir`, taken from
//! `PACTUM_TVM_FFI_CONFIG` or `.venv/bin/` at the workspace root (the virtual environment
//! `scripts/test.sh` creates with `apache-tvm-ffi==0.1.15.post2`). Without it the test fails,
//! unless `PACTUM_SKIP_PEER=1` is set, in which case it is skipped with a note.
//!
//! This file is its own test binary because the runtime binding is process-wide.

use std::path::PathBuf;
use std::sync::OnceLock;

use pactum::runtime::RuntimeKind;
use pactum::{Any, AnyView, Array, Dict, Function, Map};

// ---------------------------------------------------------------------------------------------
// Loading the official library.

const RUN_HINT: &str = "run `scripts/test.sh` from the workspace root (it creates .venv with \
     the pinned official wheel, scripts/requirements-peer.txt), or after that \
     `cargo test -p pactum --test official_host`; or point PACTUM_OFFICIAL_LIBDIR at the \
     directory holding the official libtvm_ffi.so (PACTUM_SKIP_PEER=1 skips this test)";

fn official_libdir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("PACTUM_OFFICIAL_LIBDIR") {
        return Ok(PathBuf::from(dir));
    }
    let config = match std::env::var_os("PACTUM_TVM_FFI_CONFIG") {
        Some(config) => PathBuf::from(config),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/tvm-ffi-config"),
    };
    let output = std::process::Command::new(&config)
        .arg("--libdir")
        .output()
        .map_err(|error| format!("cannot run {}: {error}", config.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} --libdir failed: {}",
            config.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&output.stdout).trim(),
    ))
}

fn load_official() -> Result<PathBuf, String> {
    let path = official_libdir()?.join("libtvm_ffi.so");
    if !path.exists() {
        return Err(format!("{} does not exist", path.display()));
    }
    let flags = libc::RTLD_NOW | libc::RTLD_GLOBAL;
    // SAFETY: loading the official runtime library runs its static initialisers, which only
    // register its own globals and types; it stays loaded for the life of the process.
    let library = unsafe { libloading::os::unix::Library::open(Some(&path), flags) }
        .map_err(|error| format!("cannot load {}: {error}", path.display()))?;
    std::mem::forget(library);
    Ok(path)
}

/// Loads the official library before anything else touches pactum; false when skipped.
/// Every test calls this first.
pub(crate) fn official() -> bool {
    static LOADED: OnceLock<bool> = OnceLock::new();
    *LOADED.get_or_init(|| match load_official() {
        Ok(path) => {
            let RuntimeKind::Host { path: bound } = pactum::runtime::kind() else {
                panic!("pactum did not bind to the loaded official library");
            };
            let same = std::fs::canonicalize(&bound).ok() == std::fs::canonicalize(&path).ok();
            assert!(
                same,
                "pactum bound to {bound}, not the official {}",
                path.display()
            );
            true
        }
        Err(message) if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") => {
            eprintln!("note: map_vs_official skipped (PACTUM_SKIP_PEER=1): {message}");
            false
        }
        Err(message) => {
            panic!("the official libtvm_ffi.so is required: {message}.\nTo run: {RUN_HINT}")
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Calling the official globals.

fn global(name: &str) -> Function {
    Function::get_global(name).unwrap_or_else(|| panic!("official global {name} is missing"))
}

fn call(name: &str, args: &[AnyView<'_>]) -> Any {
    global(name)
        .call(args)
        .unwrap_or_else(|error| panic!("{name} failed: {error:?}"))
}

fn int(any: &Any) -> i64 {
    any.get::<i64>()
        .unwrap_or_else(|error| panic!("expected an int, got {any:?}: {error:?}"))
}

fn same(a: &Any, b: &Any) -> bool {
    raw_bytes(a) == raw_bytes(b)
}

fn raw_bytes(any: &Any) -> [u8; 16] {
    // SAFETY: TVMFFIAny is 16 bytes of plain data.
    unsafe { std::mem::transmute::<pactum::sys::tvm_ffi::TVMFFIAny, [u8; 16]>(*any.as_raw()) }
}

/// The official `ffi.Map(k0, v0, ...)`.
fn official_map(pairs: &[(Any, Any)]) -> Map {
    let args: Vec<AnyView<'_>> = pairs
        .iter()
        .flat_map(|(k, v)| [k.view(), v.view()])
        .collect();
    call("ffi.Map", &args)
        .cast::<Map>()
        .expect("ffi.Map returns a Map")
}

/// Entries of a map in C++ iteration order, through `ffi.{Map,Dict}ForwardIterFunctor`.
fn cpp_entries(functor: &str, map: AnyView<'_>, size: usize) -> Vec<(Any, Any)> {
    let mut entries = Vec::new();
    if size == 0 {
        return entries;
    }
    let iter = call(functor, &[map])
        .cast::<Function>()
        .expect("an iterator function");
    loop {
        let key = iter.call(&[AnyView::from(0i64)]).expect("key");
        let value = iter.call(&[AnyView::from(1i64)]).expect("value");
        entries.push((key, value));
        let more = iter.call(&[AnyView::from(2i64)]).expect("advance");
        if !more.get::<bool>().expect("a bool") {
            break;
        }
    }
    entries
}

fn assert_same_entries(label: &str, a: &[(Any, Any)], b: &[(Any, Any)]) {
    assert_eq!(a.len(), b.len(), "{label}: sizes differ");
    for (i, ((ka, va), (kb, vb))) in a.iter().zip(b).enumerate() {
        assert!(same(ka, kb), "{label}: key {i} differs: {ka:?} vs {kb:?}");
        assert!(same(va, vb), "{label}: value {i} differs: {va:?} vs {vb:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Keys and sequences.

/// Keys of every kind a map hashes differently: ints, bools, floats (incl. -0.0 and NaN),
/// small strings, heap strings and objects (hashed by address). Built once and shared by both
/// sides, so heap keys are the same objects and the raw cells compare equal.
fn keys(count: usize) -> Vec<Any> {
    let mut keys = Vec::with_capacity(count);
    for i in 0..count {
        keys.push(match i % 8 {
            0 => Any::from(i as i64),
            1 => Any::from(format!("s{i}")),
            2 => Any::from(format!("heap string key number {i}")),
            3 => Any::from(i as f64 * 0.5 + 0.125),
            4 => match i {
                4 => Any::from(true),
                12 => Any::from(false),
                20 => Any::from(-0.0f64),
                28 => Any::from(f64::NAN),
                _ => Any::from(-(i as i64)),
            },
            5 => Any::from(Array::new([Any::from(i as i64)])),
            6 => Any::from(format!("k{i}")),
            _ => Any::from(i64::MIN + i as i64),
        });
    }
    keys
}

const SIZES: [usize; 15] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 40, 200];
const BIG: usize = 1000;

fn sizes() -> impl Iterator<Item = usize> {
    SIZES.into_iter().chain([BIG])
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Set(usize, i64),
    Erase(usize),
}

/// A Set/update/erase sequence over `keys(n + n / 5 + 1)`.
fn sequence(n: usize) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut value = 0;
    let mut next = || {
        value += 1;
        value
    };
    for i in 0..n {
        ops.push(Op::Set(i, next()));
    }
    for i in (0..n).step_by(3) {
        ops.push(Op::Set(i, next()));
    }
    for i in (1..n).step_by(4) {
        ops.push(Op::Erase(i));
    }
    ops.push(Op::Erase(n + 1));
    for i in n..n + n / 5 + 1 {
        ops.push(Op::Set(i, next()));
    }
    for i in (0..n).step_by(7) {
        ops.push(Op::Set(i, next()));
    }
    for i in (2..n).step_by(5) {
        ops.push(Op::Erase(i));
    }
    ops
}

/// The `ffi.Map` argument list of `sequence(n)` (Map has no erase: Sets only).
fn map_pairs(n: usize, keys: &[Any]) -> Vec<(Any, Any)> {
    sequence(n)
        .into_iter()
        .filter_map(|op| match op {
            Op::Set(k, v) => Some((keys[k].clone(), Any::from(v))),
            Op::Erase(_) => None,
        })
        .collect()
}

fn apply_official(dict: &Dict, ops: &[Op], keys: &[Any]) {
    for op in ops {
        match *op {
            Op::Set(k, v) => {
                call(
                    "ffi.DictSetItem",
                    &[dict.into(), keys[k].view(), AnyView::from(v)],
                );
            }
            Op::Erase(k) => {
                call("ffi.DictErase", &[dict.into(), keys[k].view()]);
            }
        }
    }
}

fn apply_pactum(dict: &Dict, ops: &[Op], keys: &[Any]) {
    for op in ops {
        match *op {
            Op::Set(k, v) => dict.insert(keys[k].clone(), Any::from(v)),
            Op::Erase(k) => {
                dict.remove(&keys[k].view());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Raw storage, read independently of pactum's map code.

/// A live dense slot: index, key bytes, value bytes, prev, next.
type DenseItem = (u64, [u8; 16], [u8; 16], u64, u64);

#[derive(Debug, PartialEq)]
enum Storage {
    Small {
        type_index: i32,
        slots: u64,
        pairs: Vec<([u8; 16], [u8; 16])>,
    },
    Dense {
        type_index: i32,
        size: u64,
        slots: u64,
        fib_shift: u32,
        head: u64,
        tail: u64,
        meta: Vec<u8>,
        items: Vec<DenseItem>,
    },
}

/// Reads the storage of a live map object.
///
/// # Safety
/// `obj` must be a live Map or Dict object that nobody mutates meanwhile.
unsafe fn dump(obj: *const u8) -> Storage {
    // SAFETY: the layout of map_base.h: header (type index at 8), then data@24, size@32,
    // slots@40, data_deleter@48; dense: fib_shift@56, head@64, tail@72; blocks of 16 meta bytes
    // and 16 items of 48 bytes.
    unsafe {
        let read_u64 = |offset: usize| obj.add(offset).cast::<u64>().read_unaligned();
        let bytes16 = |p: *const u8| p.cast::<[u8; 16]>().read_unaligned();
        let type_index = obj.add(8).cast::<i32>().read_unaligned();
        let data = read_u64(24) as *const u8;
        let size = read_u64(32);
        let slots = read_u64(40);
        let data_deleter = read_u64(48);
        if slots >> 63 == 1 {
            let pairs = (0..size as usize)
                .map(|i| (bytes16(data.add(32 * i)), bytes16(data.add(32 * i + 16))))
                .collect();
            return Storage::Small {
                type_index,
                slots,
                pairs,
            };
        }
        assert_ne!(data_deleter, 0, "a dense map without a data deleter");
        let fib_shift = obj.add(56).cast::<u32>().read_unaligned();
        let (head, tail) = (read_u64(64), read_u64(72));
        let blocks = slots.div_ceil(16) as usize;
        let mut meta = Vec::new();
        let mut items = Vec::new();
        for b in 0..blocks {
            let block = data.add(b * 784);
            for j in 0..16 {
                let m = *block.add(j);
                meta.push(m);
                if m != 0xFF && m != 0xFE {
                    let item = block.add(16 + 48 * j);
                    let prev = item.add(32).cast::<u64>().read_unaligned();
                    let next = item.add(40).cast::<u64>().read_unaligned();
                    items.push((
                        (b * 16 + j) as u64,
                        bytes16(item),
                        bytes16(item.add(16)),
                        prev,
                        next,
                    ));
                }
            }
        }
        Storage::Dense {
            type_index,
            size,
            slots,
            fib_shift,
            head,
            tail,
            meta,
            items,
        }
    }
}

fn storage_of(object: &pactum::ObjectRef) -> Storage {
    // SAFETY: `object` is a live map that the test does not mutate while reading.
    unsafe { dump(object.as_raw().cast()) }
}

fn assert_same_storage(label: &str, a: &pactum::ObjectRef, b: &pactum::ObjectRef) {
    let (a, b) = (storage_of(a), storage_of(b));
    if a != b {
        panic!("{label}: storage differs\npactum:   {a:?}\nofficial: {b:?}");
    }
}

/// The word at `offset` of a live object (deleters: header +16, `data_deleter` +48).
fn word(object: &pactum::ObjectRef, offset: usize) -> u64 {
    // SAFETY: map objects are at least 56 bytes; plain read of a live object.
    unsafe {
        object
            .as_raw()
            .cast::<u8>()
            .add(offset)
            .cast::<u64>()
            .read_unaligned()
    }
}

fn is_dense(object: &pactum::ObjectRef) -> bool {
    matches!(storage_of(object), Storage::Dense { .. })
}

fn slots(object: &pactum::ObjectRef) -> u64 {
    match storage_of(object) {
        Storage::Small { slots, .. } | Storage::Dense { slots, .. } => slots,
    }
}

// ---------------------------------------------------------------------------------------------
// (iii) Byte-identical storage.

#[test]
fn storage_is_byte_identical() {
    if !official() {
        return;
    }
    for n in sizes() {
        let keys = keys(n + n / 5 + 2);
        // The objects really come from the two implementations.
        assert_ne!(
            word(Map::new().as_object_ref(), 16),
            word(official_map(&[]).as_object_ref(), 16)
        );
        // Map: ffi.Map(k0, v0, ...) against Map::from_pairs with the same pairs (incl. updates).
        let pairs = map_pairs(n, &keys);
        let ours = Map::from_pairs(pairs.clone());
        let theirs = official_map(&pairs);
        assert_same_storage(
            &format!("Map n={n}"),
            ours.as_object_ref(),
            theirs.as_object_ref(),
        );
        assert_same_entries(&format!("Map n={n}"), &ours.entries(), &theirs.entries());

        // Dict: the same Set/erase sequence, each side on a dict it made.
        let ops = sequence(n);
        let ours = Dict::new();
        apply_pactum(&ours, &ops, &keys);
        let theirs = call("ffi.Dict", &[]).cast::<Dict>().unwrap();
        apply_official(&theirs, &ops, &keys);
        assert_same_storage(
            &format!("Dict n={n}"),
            ours.as_object_ref(),
            theirs.as_object_ref(),
        );

        // Cross: C++ mutating a pactum dict, pactum mutating a C++ dict.
        let ours_by_cpp = Dict::new();
        apply_official(&ours_by_cpp, &ops, &keys);
        assert_same_storage(
            &format!("pactum Dict mutated by C++, n={n}"),
            ours_by_cpp.as_object_ref(),
            theirs.as_object_ref(),
        );
        let theirs_by_us = call("ffi.Dict", &[]).cast::<Dict>().unwrap();
        apply_pactum(&theirs_by_us, &ops, &keys);
        assert_same_storage(
            &format!("C++ Dict mutated by pactum, n={n}"),
            theirs_by_us.as_object_ref(),
            theirs.as_object_ref(),
        );
        if n >= 17 {
            // Each side installed its own dense buffer (and buffer deleter) in the other's object.
            let (our_buffers, cpp_buffers) = (
                word(ours.as_object_ref(), 48),
                word(theirs.as_object_ref(), 48),
            );
            assert_ne!(our_buffers, cpp_buffers);
            assert_eq!(word(theirs_by_us.as_object_ref(), 48), our_buffers);
            assert_eq!(word(ours_by_cpp.as_object_ref(), 48), cpp_buffers);
        }

        // Interleaved: both sides take turns on one pactum dict and one C++ dict.
        let mixed_ours = Dict::new();
        let mixed_theirs = call("ffi.Dict", &[]).cast::<Dict>().unwrap();
        for (i, chunk) in ops.chunks(7).enumerate() {
            if i % 2 == 0 {
                apply_pactum(&mixed_ours, chunk, &keys);
                apply_official(&mixed_theirs, chunk, &keys);
            } else {
                apply_official(&mixed_ours, chunk, &keys);
                apply_pactum(&mixed_theirs, chunk, &keys);
            }
        }
        assert_same_storage(
            &format!("interleaved, n={n}"),
            mixed_ours.as_object_ref(),
            theirs.as_object_ref(),
        );
        assert_same_storage(
            &format!("interleaved, n={n}"),
            mixed_theirs.as_object_ref(),
            theirs.as_object_ref(),
        );
    }
}

#[test]
fn update_quirks_match() {
    if !official() {
        return;
    }
    // A Set on a full 4-slot small map converts to dense and moves the key to the end.
    let keys = keys(40);
    for updated in 0..4 {
        let mut pairs: Vec<(Any, Any)> = (0..4)
            .map(|i| (keys[i].clone(), Any::from(i as i64)))
            .collect();
        pairs.push((keys[updated].clone(), Any::from(99i64)));
        let ours = Map::from_pairs(pairs.clone());
        let theirs = official_map(&pairs);
        assert!(is_dense(ours.as_object_ref()));
        assert_same_storage(
            "full small map update",
            ours.as_object_ref(),
            theirs.as_object_ref(),
        );
        assert_same_entries("full small map update", &ours.entries(), &theirs.entries());
        assert!(same(&ours.entries()[3].0, &keys[updated]));
    }
    // Small capacity growth 2 -> 4 and the dense growth sequence.
    for n in 0..40 {
        let pairs: Vec<(Any, Any)> = (0..n)
            .map(|i| (keys[i].clone(), Any::from(i as i64)))
            .collect();
        let ours = Map::from_pairs(pairs.clone());
        let theirs = official_map(&pairs);
        assert_eq!(
            slots(ours.as_object_ref()),
            slots(theirs.as_object_ref()),
            "n={n}"
        );
        assert_same_storage(
            &format!("growth n={n}"),
            ours.as_object_ref(),
            theirs.as_object_ref(),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// (i) C++ reading and mutating maps pactum built.

#[test]
fn cpp_reads_pactum_maps() {
    if !official() {
        return;
    }
    for n in sizes() {
        let keys = keys(n + 3);
        let pairs: Vec<(Any, Any)> = (0..n)
            .map(|i| (keys[i].clone(), Any::from(i as i64 * 10)))
            .collect();
        let map = Map::from_pairs(pairs.clone());
        let dict = Dict::from_pairs(pairs.clone());
        let map_view = AnyView::from(&map);
        let dict_view = AnyView::from(&dict);
        assert_eq!(int(&call("ffi.MapSize", &[map_view])), n as i64);
        assert_eq!(int(&call("ffi.DictSize", &[dict_view])), n as i64);
        for (i, key) in keys.iter().enumerate() {
            let present = i < n;
            assert_eq!(
                int(&call("ffi.MapCount", &[map_view, key.view()])),
                present as i64,
                "MapCount {key:?}"
            );
            assert_eq!(
                int(&call("ffi.DictCount", &[dict_view, key.view()])),
                present as i64
            );
            if present {
                assert_eq!(
                    int(&call("ffi.MapGetItem", &[map_view, key.view()])),
                    i as i64 * 10
                );
                assert_eq!(
                    int(&call("ffi.DictGetItem", &[dict_view, key.view()])),
                    i as i64 * 10
                );
            } else {
                assert!(
                    global("ffi.MapGetItem")
                        .call(&[map_view, key.view()])
                        .is_err()
                );
                assert!(
                    global("ffi.DictGetItem")
                        .call(&[dict_view, key.view()])
                        .is_err()
                );
            }
        }
        assert_same_entries(
            &format!("Map iteration n={n}"),
            &cpp_entries("ffi.MapForwardIterFunctor", map_view, n),
            &map.entries(),
        );
        assert_same_entries(
            &format!("Dict iteration n={n}"),
            &cpp_entries("ffi.DictForwardIterFunctor", dict_view, n),
            &dict.entries(),
        );
    }
}

#[test]
fn cpp_grows_a_pactum_dict_in_place() {
    if !official() {
        return;
    }
    let value = Any::from("a heap value shared by every entry, for refcounts");
    let count = |any: &Any| any.as_object_ref().unwrap().strong_count();
    let baseline = count(&value);
    let keys = keys(300);
    {
        let dict = Dict::new();
        let ptr = dict.as_object_ref().as_raw();
        let mut seen_slots = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            call(
                "ffi.DictSetItem",
                &[(&dict).into(), key.view(), value.view()],
            );
            assert_eq!(
                dict.as_object_ref().as_raw(),
                ptr,
                "C++ grows a Dict in place"
            );
            let s = slots(dict.as_object_ref());
            if seen_slots.last() != Some(&s) {
                seen_slots.push(s);
            }
            assert_eq!(dict.len(), i + 1);
            // pactum reads what C++ wrote, including after each storage switch.
            assert!(dict.contains_key(&key.view()));
            assert!(same(&dict.get(&keys[0].view()).unwrap(), &value));
        }
        const TAG: u64 = 1 << 63;
        assert_eq!(
            &seen_slots[..4],
            &[2 | TAG, 4 | TAG, 8, 16],
            "small(2) -> small(4) -> dense(8) -> rehash"
        );
        assert!(*seen_slots.last().unwrap() >= 512);
        // pactum mutates the C++-switched storage, then C++ reads it back.
        for key in keys.iter().step_by(3) {
            assert!(dict.remove(&key.view()).is_some());
        }
        for key in keys.iter().step_by(6) {
            dict.insert(key.clone(), Any::from(1i64));
        }
        let ours = dict.entries();
        assert_same_entries(
            "C++ view after pactum edits",
            &cpp_entries("ffi.DictForwardIterFunctor", (&dict).into(), ours.len()),
            &ours,
        );
        for (k, v) in &ours {
            assert!(same(
                &call("ffi.DictGetItem", &[(&dict).into(), k.view()]),
                v
            ));
        }
        // C++ clears in place; pactum keeps using it.
        call("ffi.DictClear", &[(&dict).into()]);
        assert!(dict.is_empty());
        dict.insert(keys[0].clone(), value.clone());
        assert_eq!(int(&call("ffi.DictSize", &[(&dict).into()])), 1);
        assert!(count(&value) > baseline);
        // The small form that C++ switched in (data inside a C++ helper object) and pactum's
        // deleter: start again from a fresh dict that C++ grows 2 -> 4 only.
        let small = Dict::new();
        for key in &keys[..3] {
            call(
                "ffi.DictSetItem",
                &[(&small).into(), key.view(), value.view()],
            );
        }
        small.insert(keys[3].clone(), value.clone());
        small.insert(keys[4].clone(), value.clone());
        assert!(is_dense(small.as_object_ref()));
        assert_eq!(int(&call("ffi.DictSize", &[(&small).into()])), 5);
        let small2 = Dict::new();
        for key in &keys[..3] {
            call(
                "ffi.DictSetItem",
                &[(&small2).into(), key.view(), value.view()],
            );
        }
        // Dropped while its data lives inside a C++ helper object.
    }
    assert_eq!(count(&value), baseline, "values released exactly once");
}

// ---------------------------------------------------------------------------------------------
// (ii) pactum reading and mutating maps C++ built.

#[test]
fn pactum_reads_and_mutates_cpp_maps() {
    if !official() {
        return;
    }
    let value = Any::from("another heap value shared by every entry ..........");
    let count = |any: &Any| any.as_object_ref().unwrap().strong_count();
    let baseline = count(&value);
    for n in sizes() {
        let keys = keys(n + 40);
        let pairs: Vec<(Any, Any)> = (0..n).map(|i| (keys[i].clone(), value.clone())).collect();
        // A C++ Map: reads, iteration, then copy-on-write and in-place edits.
        let map = official_map(&pairs);
        assert_eq!(map.len(), n);
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(map.contains_key(&key.view()), i < n);
        }
        let cpp_order = cpp_entries("ffi.MapForwardIterFunctor", (&map).into(), n);
        assert_same_entries("C++ map read by pactum", &map.entries(), &cpp_order);
        let shared = map.clone();
        let mut edited = map.clone();
        edited.insert(keys[n].clone(), Any::from(5i64));
        assert!(
            !edited.as_object_ref().ptr_eq(shared.as_object_ref()),
            "copy on write"
        );
        assert_eq!(shared.len(), n);
        drop((map, shared));
        // `edited` is a pactum copy; now mutate a unique C++ map in place through growth.
        let mut unique = official_map(&pairs);
        assert!(unique.is_unique());
        let mut expected = Map::from_pairs(pairs.clone());
        for key in &keys[n..n + 40] {
            unique.insert(key.clone(), value.clone());
            expected.insert(key.clone(), value.clone());
        }
        for key in keys.iter().step_by(4) {
            assert_eq!(
                unique.remove(&key.view()).is_some(),
                expected.remove(&key.view()).is_some()
            );
        }
        assert_same_storage(
            &format!("unique C++ map edited by pactum n={n}"),
            unique.as_object_ref(),
            expected.as_object_ref(),
        );
        let view: AnyView<'_> = (&unique).into();
        assert_eq!(int(&call("ffi.MapSize", &[view])), unique.len() as i64);
        assert_same_entries(
            "C++ reads the edited map",
            &cpp_entries("ffi.MapForwardIterFunctor", view, unique.len()),
            &unique.entries(),
        );
        for (k, v) in unique.entries() {
            assert!(same(&call("ffi.MapGetItem", &[view, k.view()]), &v));
        }

        // A C++ Dict: pactum grows it through small(2) -> small(4) -> dense -> rehash.
        let dict = call("ffi.Dict", &[]).cast::<Dict>().unwrap();
        let ptr = dict.as_object_ref().as_raw();
        for (i, key) in keys[..n].iter().enumerate() {
            dict.insert(key.clone(), Any::from(i as i64));
        }
        assert_eq!(dict.as_object_ref().as_raw(), ptr);
        assert_eq!(int(&call("ffi.DictSize", &[(&dict).into()])), n as i64);
        for (i, key) in keys[..n].iter().enumerate() {
            assert_eq!(
                int(&call("ffi.DictGetItem", &[(&dict).into(), key.view()])),
                i as i64
            );
        }
        // C++ keeps mutating what pactum switched in.
        for key in &keys[n..n + 20] {
            call(
                "ffi.DictSetItem",
                &[(&dict).into(), key.view(), value.view()],
            );
        }
        for key in keys.iter().step_by(3) {
            call("ffi.DictErase", &[(&dict).into(), key.view()]);
        }
        assert_same_entries(
            "pactum reads C++ edits",
            &dict.entries(),
            &cpp_entries("ffi.DictForwardIterFunctor", (&dict).into(), dict.len()),
        );
    }
    assert_eq!(count(&value), baseline, "values released exactly once");
}
