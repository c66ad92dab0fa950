//! The recursive value operations of the official runtime's dataclass support, which the
//! official Python package's containers use for `hash()`, `==`, `!=` and `copy.deepcopy`:
//! `ffi.RecursiveHash`, `ffi.RecursiveEq`/`Lt`/`Le`/`Gt`/`Ge` and `ffi.DeepCopy`.
//!
//! Each walks the value graph with an explicit stack (a deeply nested List cannot overflow the
//! native stack), looking into Arrays and Lists (elements), Maps and Dicts (entries) and any
//! other object through its reflected fields, with the official rules (apache-tvm-ffi 0.1.15):
//!
//! - **Hash**: 64-bit, from `StableHashCombine`; strings and bytes hash by content (small or
//!   not alike), floats with `-0.0` as `0.0` and every NaN as one, containers mix their type
//!   key hash, size and children (sequence children with their position, map entries sorted so
//!   the order does not matter), objects mix their type key hash with their fields (those marked
//!   hash-off or compare-off left out). A container reached again inside itself hashes as its
//!   type key hash; an object hashed once is not walked again. A type's `__ffi_hash__` hook
//!   replaces the walk.
//! - **Compare**: three-way; None before anything, strings and bytes by content, values of
//!   different kinds are unequal (ordering them is a `TypeError`), sequences lexicographically
//!   then by length, maps only equal or not (ordering them is a `TypeError`), NaN equal to NaN
//!   but unordered, a pair met again inside itself equal (ordering it is a `ValueError`).
//!   `__ffi_eq__` / `__ffi_compare__` hooks replace the walk.
//! - **Deep copy**: Lists, Dicts, Arrays and Maps are rebuilt and reflected objects copied
//!   through their `__ffi_shallow_copy__` hook with their fields rewritten; strings, bytes,
//!   shapes, big integers and enum singletons are shared; a value reached twice is copied
//!   once, so sharing and cycles survive.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use pactum_sys::tvm_ffi::{TVMFFIFieldInfo, TVMFFITypeIndex, field_flags};

use super::builtin::{ANY, BOOL, INT, typed};
use super::reflection::{self, address, lock, same_as, type_key_hash};
use super::registry::BuiltinGlobal;
use super::values;
use pactum_core::any::{Any, AnyView, Payload, view_of_object};
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::{hash_combine, raw_words, stable_hash_bytes};
use pactum_core::object::ObjectRef;
use pactum_core::shape::Shape;

/// The deepest a walk goes, as the official runtime allows.
const MAX_DEPTH: usize = 1 << 20;

/// `ffi.RecursiveHash`, `ffi.RecursiveEq`, `ffi.RecursiveLt`, `ffi.RecursiveLe`,
/// `ffi.RecursiveGt`, `ffi.RecursiveGe` and `ffi.DeepCopy`.
pub(crate) fn recursive_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.DeepCopy", &[ANY], ANY, |a| {
            Copier::default().copy(&a.owned(0)?)
        }),
        typed("ffi.RecursiveHash", &[ANY], INT, |a| {
            let hash = Hasher::default().hash(&a.owned(0)?)?;
            Ok(Any::from(hash as i64))
        }),
        typed("ffi.RecursiveEq", &[ANY, ANY], BOOL, |a| {
            let order = Comparer::new(true).compare(&a.owned(0)?, &a.owned(1)?)?;
            Ok(Any::from(order == 0))
        }),
        ordering("ffi.RecursiveLt", |order| order < 0),
        ordering("ffi.RecursiveLe", |order| order <= 0),
        ordering("ffi.RecursiveGt", |order| order > 0),
        ordering("ffi.RecursiveGe", |order| order >= 0),
    ]
}

/// An ordering global: the three-way comparison of its two arguments, tested by `holds`.
fn ordering(name: &'static str, holds: fn(i32) -> bool) -> BuiltinGlobal {
    typed(name, &[ANY, ANY], BOOL, move |a| {
        let order = Comparer::new(false).compare(&a.owned(0)?, &a.owned(1)?)?;
        Ok(Any::from(holds(order)))
    })
}

// ---------------------------------------------------------------------------------------------
// What the walks share.

/// How a walk looks into an object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Array or List: the elements.
    Sequence,
    /// Map or Dict: key, value, key, value, ...
    Mapping,
    /// Any other object: its reflected fields.
    Fields,
}

/// The children of an object, in the order the official walks visit them.
struct Children {
    kind: Kind,
    values: Vec<Any>,
    /// For [`Kind::Fields`]: the field each value was read from.
    fields: Vec<&'static TVMFFIFieldInfo>,
}

impl Children {
    /// The children of `value` (an object); reflected fields flagged with a bit of `skip` are
    /// left out.
    fn of(value: &Any, object: &ObjectRef, skip: i64) -> Result<Children> {
        let flatten = |entries: Vec<(Any, Any)>| entries.into_iter().flat_map(|(k, v)| [k, v]);
        let (kind, values) = match TVMFFITypeIndex(object.type_index()) {
            TVMFFITypeIndex::ARRAY => (
                Kind::Sequence,
                value.get::<Array>()?.iter().cloned().collect(),
            ),
            TVMFFITypeIndex::LIST => (Kind::Sequence, value.get::<List>()?.to_vec()),
            TVMFFITypeIndex::MAP => (
                Kind::Mapping,
                flatten(value.get::<Map>()?.entries()).collect(),
            ),
            TVMFFITypeIndex::DICT => (
                Kind::Mapping,
                flatten(value.get::<Dict>()?.entries()).collect(),
            ),
            _ => {
                let fields: Vec<_> = reflection::fields_of(object.type_index())
                    .into_iter()
                    .filter(|field| field.flags & skip == 0)
                    .collect();
                let values = fields
                    .iter()
                    .map(|field| reflection::read_field(object, field))
                    .collect::<Result<_>>()?;
                return Ok(Children {
                    kind: Kind::Fields,
                    values,
                    fields,
                });
            }
        };
        Ok(Children {
            kind,
            values,
            fields: Vec::new(),
        })
    }
}

fn is_str(type_index: i32) -> bool {
    matches!(
        TVMFFITypeIndex(type_index),
        TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR
    )
}

fn is_bytes(type_index: i32) -> bool {
    matches!(
        TVMFFITypeIndex(type_index),
        TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES
    )
}

/// The content of a string or bytes value.
fn content(value: &Any) -> &[u8] {
    pactum_core::internal::view_bytes(value.as_view()).unwrap_or(&[])
}

/// A walk's stack grew past [`MAX_DEPTH`].
fn too_deep(walker: &str) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("{walker}: maximum stack depth ({MAX_DEPTH}) exceeded"),
    )
}

/// Calls a type's hook with `args`, then a callback into the running walk.
fn call_hook(hook: &Any, args: &[AnyView<'_>], callback: &Function) -> Result<Any> {
    let hook = hook.get::<Function>()?;
    let mut all = args.to_vec();
    all.push(view_of_object(callback));
    hook.call(&all)
}

/// The arguments of a hook's callback as owned values, if there are `count` of them.
fn callback_args(args: &[AnyView<'_>], count: usize, name: &str) -> Result<Vec<Any>> {
    if args.len() != count {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!("{name} expects {count} arguments, got {}", args.len()),
        ));
    }
    args.iter().map(AnyView::to_any).collect()
}

// ---------------------------------------------------------------------------------------------
// Hash.

/// What a hash walk remembers, shared with the callbacks it hands to `__ffi_hash__` hooks.
#[derive(Default)]
struct HashMemo {
    /// Objects fully hashed (kept alive so their addresses stay theirs) and their hashes.
    done: HashMap<usize, (Any, u64)>,
    /// Objects being hashed.
    active: HashSet<usize>,
}

/// A hash walk; its clones (the callbacks handed to hooks) share what it remembers.
#[derive(Clone, Default)]
struct Hasher(Arc<Mutex<HashMemo>>);

struct HashFrame {
    object: Any,
    kind: Kind,
    children: Vec<Any>,
    next: usize,
    hash: u64,
    /// For mappings: the hash of each entry, and the key hash of the entry being read.
    entries: Vec<u64>,
    key: Option<u64>,
}

impl HashFrame {
    fn feed(&mut self, hash: u64) {
        match self.kind {
            Kind::Sequence => {
                let position = (self.next - 1) as u64;
                self.hash = hash_combine(self.hash, hash_combine(hash, position));
            }
            Kind::Mapping => match self.key.take() {
                Some(key) => self.entries.push(hash_combine(key, hash)),
                None => self.key = Some(hash),
            },
            Kind::Fields => self.hash = hash_combine(self.hash, hash),
        }
    }

    fn finish(mut self) -> (Any, u64) {
        self.entries.sort_unstable();
        let hash = self
            .entries
            .iter()
            .fold(self.hash, |h, &e| hash_combine(h, e));
        (self.object, hash)
    }
}

impl Hasher {
    fn hash(&self, value: &Any) -> Result<u64> {
        if let Some(hash) = self.immediate(value)? {
            return Ok(hash);
        }
        let mut stack = vec![self.frame(value)?];
        let mut last = 0;
        while let Some(top) = stack.last_mut() {
            if let Some(child) = top.children.get_mut(top.next).map(std::mem::take) {
                top.next += 1;
                match self.immediate(&child)? {
                    Some(hash) => top.feed(hash),
                    None if stack.len() >= MAX_DEPTH => return Err(too_deep("ObjectGraphDFS")),
                    None => stack.push(self.frame(&child)?),
                }
                continue;
            }
            let Some(frame) = stack.pop() else { break };
            let (object, hash) = frame.finish();
            self.remember(object, hash);
            match stack.last_mut() {
                Some(parent) => parent.feed(hash),
                None => last = hash,
            }
        }
        Ok(last)
    }

    fn remember(&self, object: Any, hash: u64) {
        if let Some(key) = object.as_object_ref().map(address) {
            let mut memo = lock(&self.0);
            memo.active.remove(&key);
            memo.done.insert(key, (object, hash));
        }
    }

    fn frame(&self, value: &Any) -> Result<HashFrame> {
        let object = value
            .as_object_ref()
            .ok_or_else(|| Error::new(ErrorKind::INTERNAL_ERROR, "hashing a non-object"))?;
        lock(&self.0).active.insert(address(object));
        let children = Children::of(
            value,
            object,
            field_flags::HASH_OFF | field_flags::COMPARE_OFF,
        )?;
        let type_hash = type_key_hash(object.type_index());
        let hash = match children.kind {
            Kind::Fields => type_hash,
            _ => {
                let size = match children.kind {
                    Kind::Mapping => children.values.len() / 2,
                    _ => children.values.len(),
                };
                hash_combine(type_hash, size as u64)
            }
        };
        Ok(HashFrame {
            object: value.clone(),
            kind: children.kind,
            children: children.values,
            next: 0,
            hash,
            entries: Vec::new(),
            key: None,
        })
    }

    /// The hash of a value that needs no frame: a POD value, a string, bytes, a shape, a big
    /// integer, an object already hashed or being hashed, or one with an `__ffi_hash__` hook.
    fn immediate(&self, value: &Any) -> Result<Option<u64>> {
        let type_index = value.type_index();
        if let Some(hash) = pod_hash(value) {
            return Ok(Some(hash));
        }
        let Some(object) = value.as_object_ref() else {
            return Ok(Some(hash_combine(0, 0)));
        };
        let key = address(object);
        {
            let memo = lock(&self.0);
            if let Some((_, hash)) = memo.done.get(&key) {
                return Ok(Some(*hash));
            }
            if memo.active.contains(&key) {
                return Ok(Some(type_key_hash(type_index)));
            }
        }
        let hash = match TVMFFITypeIndex(type_index) {
            TVMFFITypeIndex::SHAPE => {
                let shape = value.get::<Shape>()?;
                let dims = shape.as_slice();
                dims.iter().fold(
                    hash_combine(type_key_hash(type_index), dims.len() as u64),
                    |h, &dim| hash_combine(h, dim as u64),
                )
            }
            // The official runtime registers this as ffi.BigInt's `__ffi_hash__` hook.
            TVMFFITypeIndex::BIG_INT => {
                // SAFETY: a live BigInt value.
                let words = unsafe { values::big_int_words(value.as_raw()) };
                values::big_int_hash(&words)
            }
            _ => match reflection::type_attr(type_index, "__ffi_hash__") {
                Some(hook) => {
                    lock(&self.0).active.insert(key);
                    let result = call_hook(&hook, &[value.view()], &self.callback())?;
                    result.get::<i64>()? as u64
                }
                None => {
                    if type_index >= TVMFFITypeIndex::STATIC_OBJECT_END.0
                        && (reflection::type_attr(type_index, "__ffi_eq__").is_some()
                            || reflection::type_attr(type_index, "__ffi_compare__").is_some())
                    {
                        return Err(Error::new(
                            ErrorKind::VALUE_ERROR,
                            format!(
                                "RecursiveHash: type '{}' defines __ffi_eq__ or __ffi_compare__ but not __ffi_hash__. Add a __ffi_hash__ hook to maintain the invariant RecursiveEq(a,b) => RecursiveHash(a)==RecursiveHash(b).",
                                object.type_key()
                            ),
                        ));
                    }
                    return Ok(None);
                }
            },
        };
        self.remember(value.clone(), hash);
        Ok(Some(hash))
    }

    /// The `fn_hash` callback a hook receives: hashes within this walk.
    fn callback(&self) -> Function {
        let hasher = self.clone();
        Function::from_packed(move |args| {
            let values = callback_args(args, 1, "fn_hash")?;
            Ok(Any::from(hasher.hash(&values[0])? as i64))
        })
    }
}

/// The hash of a value that is not an object, or of a string or bytes object.
fn pod_hash(value: &Any) -> Option<u64> {
    let type_index = value.type_index();
    let raw = value.as_raw();
    let tagged = |payload: u64| hash_combine(type_index as u64, payload);
    Some(match TVMFFITypeIndex(type_index) {
        TVMFFITypeIndex::NONE => hash_combine(0, 0),
        _ if is_str(type_index) => hash_combine(
            TVMFFITypeIndex::STR.0 as u64,
            stable_hash_bytes(content(value)),
        ),
        _ if is_bytes(type_index) => hash_combine(
            TVMFFITypeIndex::BYTES.0 as u64,
            stable_hash_bytes(content(value)),
        ),
        TVMFFITypeIndex::BOOL => tagged(u64::from(raw.int64() != 0)),
        TVMFFITypeIndex::FLOAT => {
            let float = raw.float64();
            tagged(if float.is_nan() {
                f64::NAN.to_bits()
            } else if float == 0.0 {
                0
            } else {
                float.to_bits()
            })
        }
        TVMFFITypeIndex::DATA_TYPE => {
            let dtype = raw.dtype();
            [dtype.bits as u64, dtype.lanes as u64]
                .into_iter()
                .fold(tagged(dtype.code as u64), hash_combine)
        }
        TVMFFITypeIndex::DEVICE => {
            let device = raw.device();
            hash_combine(tagged(device.device_type.0 as u64), device.device_id as u64)
        }
        _ if type_index < TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 => tagged(raw.uint64()),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Compare.

/// A three-way comparison walk: `eq_only` answers only equal (0) or not (1), and never fails
/// on values that cannot be ordered.
#[derive(Clone)]
struct Comparer {
    eq_only: bool,
    /// The pairs of objects being compared, shared with the callbacks handed to hooks.
    active: Arc<Mutex<HashSet<(usize, usize)>>>,
}

struct CompareFrame {
    pair: (usize, usize),
    kind: Kind,
    /// For sequences: the two lengths, compared once the common elements are equal.
    sizes: (usize, usize),
    children: Vec<(Any, Any)>,
    next: usize,
}

fn unordered_maps() -> Error {
    Error::new(ErrorKind::TYPE_ERROR, "Cannot order Map/Dict values")
}

fn sign(order: std::cmp::Ordering) -> i32 {
    order as i32
}

impl Comparer {
    fn new(eq_only: bool) -> Comparer {
        Comparer {
            eq_only,
            active: Arc::default(),
        }
    }

    fn compare(&self, lhs: &Any, rhs: &Any) -> Result<i32> {
        if let Some(order) = self.immediate(lhs, rhs)? {
            return Ok(order);
        }
        let mut stack = Vec::new();
        if let Some(order) = self.push(&mut stack, lhs, rhs)? {
            return Ok(order);
        }
        let mut last = 0;
        while let Some(top) = stack.last_mut() {
            if let Some((l, r)) = top.children.get_mut(top.next).map(std::mem::take) {
                top.next += 1;
                let order = match self.immediate(&l, &r)? {
                    Some(order) => order,
                    None => match self.push(&mut stack, &l, &r)? {
                        Some(order) => order,
                        None => continue,
                    },
                };
                if order != 0 {
                    return self.stop(&mut stack, order);
                }
                continue;
            }
            let Some(frame) = stack.pop() else { break };
            lock(&self.active).remove(&frame.pair);
            last = match frame.kind {
                Kind::Sequence => sign(frame.sizes.0.cmp(&frame.sizes.1)),
                _ => 0,
            };
            if last != 0 && !stack.is_empty() {
                return self.stop(&mut stack, last);
            }
        }
        Ok(last)
    }

    /// The first difference decides the whole comparison; inside a map, an ordering has none.
    fn stop(&self, stack: &mut Vec<CompareFrame>, order: i32) -> Result<i32> {
        let inside_map = stack.iter().any(|frame| frame.kind == Kind::Mapping);
        let mut active = lock(&self.active);
        for frame in stack.drain(..) {
            active.remove(&frame.pair);
        }
        if inside_map && !self.eq_only {
            return Err(unordered_maps());
        }
        Ok(order)
    }

    /// Pushes the frame comparing two objects of one type, or answers at once (maps with
    /// different keys).
    fn push(&self, stack: &mut Vec<CompareFrame>, lhs: &Any, rhs: &Any) -> Result<Option<i32>> {
        if stack.len() >= MAX_DEPTH {
            return Err(too_deep("RecursiveCompare"));
        }
        let (Some(l), Some(r)) = (lhs.as_object_ref(), rhs.as_object_ref()) else {
            return Err(Error::new(
                ErrorKind::INTERNAL_ERROR,
                "comparing the children of a non-object",
            ));
        };
        let pair = (address(l), address(r));
        lock(&self.active).insert(pair);
        let sequence = |l: Vec<Any>, r: Vec<Any>| {
            let sizes = (l.len(), r.len());
            (Kind::Sequence, sizes, l.into_iter().zip(r).collect())
        };
        let (kind, sizes, children) = match TVMFFITypeIndex(l.type_index()) {
            TVMFFITypeIndex::ARRAY => sequence(
                lhs.get::<Array>()?.as_slice().to_vec(),
                rhs.get::<Array>()?.as_slice().to_vec(),
            ),
            TVMFFITypeIndex::LIST => {
                sequence(lhs.get::<List>()?.to_vec(), rhs.get::<List>()?.to_vec())
            }
            TVMFFITypeIndex::MAP => {
                let other = rhs.get::<Map>()?;
                let pairs = self.entries(pair, lhs.get::<Map>()?.entries(), other.len(), |k| {
                    other.get(k)
                })?;
                match pairs {
                    Some(pairs) => (Kind::Mapping, (0, 0), pairs),
                    None => return Ok(Some(1)),
                }
            }
            TVMFFITypeIndex::DICT => {
                let other = rhs.get::<Dict>()?;
                let pairs = self.entries(pair, lhs.get::<Dict>()?.entries(), other.len(), |k| {
                    other.get(k)
                })?;
                match pairs {
                    Some(pairs) => (Kind::Mapping, (0, 0), pairs),
                    None => return Ok(Some(1)),
                }
            }
            _ => {
                let l = Children::of(lhs, l, field_flags::COMPARE_OFF)?;
                let r = Children::of(rhs, r, field_flags::COMPARE_OFF)?;
                (
                    Kind::Fields,
                    (0, 0),
                    l.values.into_iter().zip(r.values).collect(),
                )
            }
        };
        stack.push(CompareFrame {
            pair,
            kind,
            sizes,
            children,
            next: 0,
        });
        Ok(None)
    }

    /// The value pairs of two maps with the same keys, in `lhs`'s order; `None` (or, for an
    /// ordering, the official `TypeError`) when their keys differ.
    fn entries(
        &self,
        pair: (usize, usize),
        lhs: Vec<(Any, Any)>,
        rhs_len: usize,
        lookup: impl Fn(&AnyView<'_>) -> Option<Any>,
    ) -> Result<Option<Vec<(Any, Any)>>> {
        let pairs: Option<Vec<_>> = if lhs.len() == rhs_len {
            lhs.into_iter()
                .map(|(key, value)| lookup(key.as_view()).map(|other| (value, other)))
                .collect()
        } else {
            None
        };
        if pairs.is_none() {
            lock(&self.active).remove(&pair);
            if !self.eq_only {
                return Err(unordered_maps());
            }
        }
        Ok(pairs)
    }

    /// The comparison of two values that needs no frame (all but two distinct containers or
    /// reflected objects of one type without hooks).
    fn immediate(&self, lhs: &Any, rhs: &Any) -> Result<Option<i32>> {
        let (lt, rt) = (lhs.type_index(), rhs.type_index());
        let none = TVMFFITypeIndex::NONE.0;
        if lt == none || rt == none {
            return Ok(Some(sign((lt != none).cmp(&(rt != none)))));
        }
        if (is_str(lt) && is_str(rt)) || (is_bytes(lt) && is_bytes(rt)) {
            return Ok(Some(sign(content(lhs).cmp(content(rhs)))));
        }
        let big = TVMFFITypeIndex::BIG_INT.0;
        let int = TVMFFITypeIndex::INT.0;
        if lt != rt {
            if self.eq_only {
                return Ok(Some(1));
            }
            if (lt == int && rt == big) || (lt == big && rt == int) {
                return Ok(Some(compare_ints(lhs, rhs)));
            }
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "Cannot compare values of different types: {} vs {}",
                    lhs.type_key(),
                    rhs.type_key()
                ),
            ));
        }
        if lt < TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
            return self.compare_pod(lhs, rhs).map(Some);
        }
        if lt == big {
            let order = compare_ints(lhs, rhs);
            return Ok(Some(if self.eq_only {
                (order != 0).into()
            } else {
                order
            }));
        }
        let (Some(l), Some(r)) = (lhs.as_object_ref(), rhs.as_object_ref()) else {
            return Ok(Some(0));
        };
        if l.ptr_eq(r) {
            return Ok(Some(0));
        }
        if lt == TVMFFITypeIndex::SHAPE.0 {
            let (l, r) = (lhs.get::<Shape>()?, rhs.get::<Shape>()?);
            return Ok(Some(sign(l.as_slice().cmp(r.as_slice()))));
        }
        let pair = (address(l), address(r));
        if lock(&self.active).contains(&pair) {
            if self.eq_only {
                return Ok(Some(0));
            }
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "RecursiveCompare: cyclic reference detected in ordering",
            ));
        }
        if lt >= TVMFFITypeIndex::STATIC_OBJECT_END.0 {
            return self.hooked(lhs, rhs, pair);
        }
        Ok(None)
    }

    /// The answer of the type's `__ffi_eq__` (equality only) or `__ffi_compare__` hook, if any.
    fn hooked(&self, lhs: &Any, rhs: &Any, pair: (usize, usize)) -> Result<Option<i32>> {
        let type_index = lhs.type_index();
        let eq_hook = self
            .eq_only
            .then(|| reflection::type_attr(type_index, "__ffi_eq__"))
            .flatten();
        let (hook, is_eq) = match eq_hook {
            Some(hook) => (hook, true),
            None => match reflection::type_attr(type_index, "__ffi_compare__") {
                Some(hook) => (hook, false),
                None => return Ok(None),
            },
        };
        lock(&self.active).insert(pair);
        let result = call_hook(&hook, &[lhs.view(), rhs.view()], &self.callback(is_eq));
        lock(&self.active).remove(&pair);
        let result = result?;
        Ok(Some(if is_eq {
            (!result.get::<bool>()?).into()
        } else {
            result.get::<i64>()? as i32
        }))
    }

    /// The `fn_eq` (answering a bool) or `fn_cmp` (answering an int) callback a hook receives:
    /// compares within this walk.
    fn callback(&self, is_eq: bool) -> Function {
        let comparer = self.clone();
        Function::from_packed(move |args| {
            let name = if is_eq { "fn_eq" } else { "fn_cmp" };
            let values = callback_args(args, 2, name)?;
            let order = comparer.compare(&values[0], &values[1])?;
            Ok(if is_eq {
                Any::from(order == 0)
            } else {
                Any::from(i64::from(order))
            })
        })
    }

    /// Two POD values of one type.
    fn compare_pod(&self, lhs: &Any, rhs: &Any) -> Result<i32> {
        let (l, r) = (lhs.as_raw(), rhs.as_raw());
        Ok(match TVMFFITypeIndex(lhs.type_index()) {
            TVMFFITypeIndex::BOOL => sign((l.int64() != 0).cmp(&(r.int64() != 0))),
            TVMFFITypeIndex::INT => sign(l.int64().cmp(&r.int64())),
            TVMFFITypeIndex::FLOAT => {
                let (a, b) = (l.float64(), r.float64());
                match a.partial_cmp(&b) {
                    Some(order) => sign(order),
                    None if self.eq_only => i32::from(!(a.is_nan() && b.is_nan())),
                    None => {
                        return Err(Error::new(ErrorKind::TYPE_ERROR, "Cannot order NaN values"));
                    }
                }
            }
            TVMFFITypeIndex::DATA_TYPE => {
                let (a, b) = (l.dtype(), r.dtype());
                sign((a.code, a.bits, a.lanes).cmp(&(b.code, b.bits, b.lanes)))
            }
            TVMFFITypeIndex::DEVICE => {
                let (a, b) = (l.device(), r.device());
                sign((a.device_type.0, a.device_id).cmp(&(b.device_type.0, b.device_id)))
            }
            _ if raw_words(l) == raw_words(r) => 0,
            _ if self.eq_only => 1,
            _ => {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("Cannot order values of type {}", lhs.type_key()),
                ));
            }
        })
    }
}

/// Two integers, each an Int or a BigInt.
fn compare_ints(lhs: &Any, rhs: &Any) -> i32 {
    // SAFETY: callers pass live Int or BigInt values.
    let (l, r) = unsafe {
        (
            values::big_int_words(lhs.as_raw()),
            values::big_int_words(rhs.as_raw()),
        )
    };
    sign(values::compare_int_words(&l, &r))
}

// ---------------------------------------------------------------------------------------------
// Deep copy.

/// A deep copy walk.
#[derive(Default)]
struct Copier {
    /// Each object copied so far (kept alive so its address stays its own) and its copy.
    copies: HashMap<usize, (Any, Any)>,
    /// The Arrays and Maps being rebuilt: a child reaching one gets the original for now.
    building: HashSet<usize>,
    /// Whether some copy holds such an original, to be replaced once all copies exist.
    deferred: bool,
}

/// What a copy frame builds.
enum Target {
    /// The new List, filled as its elements are copied.
    List(List),
    /// The new Dict and the copied key waiting for its value.
    Dict(Dict, Option<Any>),
    /// The copied elements of an Array, or the copied keys and values of a Map.
    Immutable(Vec<Any>),
    /// The shallow copy of a reflected object, whose fields are rewritten as copied.
    Object(Any, Vec<&'static TVMFFIFieldInfo>),
}

struct CopyFrame {
    original: Any,
    children: Vec<Any>,
    next: usize,
    target: Target,
}

impl Copier {
    fn copy(&mut self, value: &Any) -> Result<Any> {
        let result = match self.immediate(value) {
            Some(result) => result,
            None => self.walk(value)?,
        };
        if self.deferred {
            self.fix_up()?;
        }
        Ok(result)
    }

    fn walk(&mut self, value: &Any) -> Result<Any> {
        let mut stack = vec![self.frame(value)?];
        let mut last = Any::none();
        while let Some(top) = stack.last_mut() {
            if let Some(child) = top.children.get(top.next).cloned() {
                top.next += 1;
                match self.immediate(&child) {
                    Some(copy) => feed(top, copy)?,
                    None if stack.len() >= MAX_DEPTH => return Err(too_deep("ObjectGraphDFS")),
                    None => stack.push(self.frame(&child)?),
                }
                continue;
            }
            let Some(frame) = stack.pop() else { break };
            let copy = self.finish(frame)?;
            match stack.last_mut() {
                Some(parent) => feed(parent, copy)?,
                None => last = copy,
            }
        }
        Ok(last)
    }

    /// The copy of a value that needs no frame: itself for immutable values and for an Array
    /// or Map being rebuilt, or the copy already made.
    fn immediate(&mut self, value: &Any) -> Option<Any> {
        let Some(object) = value.as_object_ref() else {
            return Some(value.clone());
        };
        let key = address(object);
        if let Some((_, copy)) = self.copies.get(&key) {
            return Some(copy.clone());
        }
        if self.building.contains(&key) {
            self.deferred = true;
            return Some(value.clone());
        }
        let shared = matches!(
            TVMFFITypeIndex(object.type_index()),
            TVMFFITypeIndex::STR
                | TVMFFITypeIndex::BYTES
                | TVMFFITypeIndex::SHAPE
                | TVMFFITypeIndex::BIG_INT
        ) || is_enum(object);
        shared.then(|| value.clone())
    }

    fn frame(&mut self, value: &Any) -> Result<CopyFrame> {
        let object = value
            .as_object_ref()
            .ok_or_else(|| Error::new(ErrorKind::INTERNAL_ERROR, "copying a non-object"))?;
        let key = address(object);
        let children = Children::of(value, object, 0)?;
        let target = match TVMFFITypeIndex(object.type_index()) {
            TVMFFITypeIndex::ARRAY | TVMFFITypeIndex::MAP => {
                self.building.insert(key);
                Target::Immutable(Vec::with_capacity(children.values.len()))
            }
            TVMFFITypeIndex::LIST => {
                let list = List::with_capacity(children.values.len());
                self.copies
                    .insert(key, (value.clone(), Any::from(list.clone())));
                Target::List(list)
            }
            TVMFFITypeIndex::DICT => {
                let dict = Dict::new();
                self.copies
                    .insert(key, (value.clone(), Any::from(dict.clone())));
                Target::Dict(dict, None)
            }
            _ => {
                let Some(hook) = reflection::type_attr(object.type_index(), "__ffi_shallow_copy__")
                else {
                    return Err(Error::new(
                        ErrorKind::INTERNAL_ERROR,
                        format!(
                            "Check failed: (copy_fn.has_value()) is false: Cannot deep copy object of type \"{}\" because it is not copy-constructible",
                            object.type_key()
                        ),
                    ));
                };
                let copy = hook.get::<Function>()?.call(&[value.view()])?;
                self.copies.insert(key, (value.clone(), copy.clone()));
                Target::Object(copy, children.fields)
            }
        };
        Ok(CopyFrame {
            original: value.clone(),
            children: children.values,
            next: 0,
            target,
        })
    }

    /// The copy a finished frame built; a rebuilt Array or Map is recorded now.
    fn finish(&mut self, frame: CopyFrame) -> Result<Any> {
        let copy = match frame.target {
            Target::List(list) => Any::from(list),
            Target::Dict(dict, _) => Any::from(dict),
            Target::Object(copy, _) => copy,
            Target::Immutable(values) => {
                let copy = if frame.original.type_index() == TVMFFITypeIndex::ARRAY.0 {
                    Any::from(Array::new(values))
                } else {
                    let mut values = values.into_iter();
                    let pairs = std::iter::from_fn(|| Some((values.next()?, values.next()?)));
                    Any::from(Map::from_pairs(pairs.collect::<Vec<_>>()))
                };
                if let Some(key) = frame.original.as_object_ref().map(address) {
                    self.building.remove(&key);
                    self.copies.insert(key, (frame.original, copy.clone()));
                }
                copy
            }
        };
        Ok(copy)
    }

    /// The copy made of `value`, if it is an object copied in this walk.
    fn copy_of(&self, value: &Any) -> Option<Any> {
        let key = value.as_object_ref().map(address)?;
        self.copies.get(&key).map(|(_, copy)| copy.clone())
    }

    /// Replaces, inside the mutable copies, the originals of Arrays and Maps that were still
    /// being rebuilt when reached, by their copies.
    fn fix_up(&self) -> Result<()> {
        let copies: Vec<Any> = self.copies.values().map(|(_, copy)| copy.clone()).collect();
        for copy in copies {
            let type_index = copy.type_index();
            match TVMFFITypeIndex(type_index) {
                TVMFFITypeIndex::LIST => {
                    let list = copy.get::<List>()?;
                    for (index, item) in list.to_vec().iter().enumerate() {
                        if let Some(new) = self.copy_of(item) {
                            list.set(index, new)?;
                        }
                    }
                }
                TVMFFITypeIndex::DICT => {
                    let dict = copy.get::<Dict>()?;
                    let mut changed = Vec::new();
                    for (key, value) in dict.entries() {
                        let (new_key, new_value) = (self.copy_of(&key), self.copy_of(&value));
                        if new_key.is_some() || new_value.is_some() {
                            let new_key = new_key.unwrap_or_else(|| key.clone());
                            changed.push((key, new_key, new_value.unwrap_or(value)));
                        }
                    }
                    for (key, new_key, new_value) in changed {
                        dict.remove(key.as_view());
                        dict.insert(new_key, new_value);
                    }
                }
                _ if type_index >= TVMFFITypeIndex::STATIC_OBJECT_END.0 => {
                    let Some(object) = copy.as_object_ref() else {
                        continue;
                    };
                    for field in reflection::fields_of(type_index) {
                        let value = reflection::read_field(object, field)?;
                        if let Some(new) = self
                            .copy_of(&value)
                            .filter(|new| !same_as(new.as_raw(), value.as_raw()))
                        {
                            reflection::write_field(object, field, new.as_view())?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Adds a copied child to what `frame` builds.
fn feed(frame: &mut CopyFrame, copy: Any) -> Result<()> {
    match &mut frame.target {
        Target::List(list) => list.push(copy),
        Target::Dict(dict, pending) => match pending.take() {
            Some(key) => dict.insert(key, copy),
            None => *pending = Some(copy),
        },
        Target::Immutable(values) => values.push(copy),
        Target::Object(object, fields) => {
            let index = frame.next - 1;
            if !same_as(frame.children[index].as_raw(), copy.as_raw()) {
                if let (Some(object), Some(field)) = (object.as_object_ref(), fields.get(index)) {
                    reflection::write_field(object, field, copy.as_view())?;
                }
            }
        }
    }
    Ok(())
}

/// Whether `object` is one of the runtime's enum singletons (an `ffi.Enum`), which copies
/// share.
fn is_enum(object: &ObjectRef) -> bool {
    reflection::enum_type_index().is_some_and(|index| object.is_instance_of(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(values: impl IntoIterator<Item = Any>) -> Any {
        Any::from(Array::new(values))
    }

    #[test]
    fn hashes_match_the_official_runtime() {
        // Values measured with apache-tvm-ffi 0.1.15.post2's ffi.RecursiveHash.
        let hash = |value: Any| Hasher::default().hash(&value).map(|h| h as i64);
        assert_eq!(hash(Any::none()).ok(), Some(2654435769));
        assert_eq!(hash(Any::from(true)).ok(), Some(2654435896));
        assert_eq!(hash(Any::from(-5i64)).ok(), Some(2654435829));
        assert_eq!(hash(Any::from(1.5f64)).ok(), Some(4609434221268138618));
        assert_eq!(hash(Any::from(-0.0f64)).ok(), Some(2654435962));
        assert_eq!(hash(Any::from(f64::NAN)).ok(), Some(9221120239695526522));
        assert_eq!(hash(Any::from("abc")).ok(), Some(2660953131));
        let long = "hello world, longer than small";
        assert_eq!(
            hash(pactum_core::internal::heap_byte_string(
                long.as_bytes(),
                pactum_core::internal::ByteString::Str
            ))
            .ok(),
            Some(4741198001)
        );
        assert_eq!(
            hash(Any::from(pactum_core::Device::cuda(1))).ok(),
            Some(175247678514)
        );
        assert_eq!(
            hash(Any::from(Shape::new(&[2, 3]))).ok(),
            Some(284796581919864661)
        );
        let pair = array([Any::from(1i64), Any::from(2i64)]);
        assert_eq!(hash(pair).ok(), Some(2823377144815479104));
        assert_eq!(hash(array([])).ok(), Some(-2010874065908478216));
    }

    #[test]
    fn a_list_inside_itself_hashes_and_compares_equal() {
        let list = List::from_values([Any::from(1i64)]);
        list.push(Any::from(list.clone()));
        let value = Any::from(list);
        assert_eq!(
            Hasher::default().hash(&value).ok(),
            Some(5960482439972758480)
        );
        let twin = List::from_values([Any::from(1i64)]);
        twin.push(Any::from(twin.clone()));
        let twin = Any::from(twin);
        assert_eq!(Comparer::new(true).compare(&value, &twin).ok(), Some(0));
        let error = Comparer::new(false).compare(&value, &twin).err();
        assert_eq!(
            error.map(|e| e.message().into_owned()).as_deref(),
            Some("RecursiveCompare: cyclic reference detected in ordering")
        );
        // Break the cycles so the lists are freed.
        for list in [&value, &twin] {
            list.get::<List>().map(|l| l.clear()).ok();
        }
    }

    #[test]
    fn sequences_order_lexicographically_then_by_length() {
        let ints = |values: &[i64]| array(values.iter().map(|&v| Any::from(v)));
        let order = |l: &Any, r: &Any| Comparer::new(false).compare(l, r).ok();
        assert_eq!(order(&ints(&[1, 2]), &ints(&[1, 2, 3])), Some(-1));
        assert_eq!(order(&ints(&[1, 3]), &ints(&[1, 2, 3])), Some(1));
        assert_eq!(order(&ints(&[1, 2]), &ints(&[1, 2])), Some(0));
        let floats = array([Any::from(1.0f64)]);
        let error = Comparer::new(false).compare(&ints(&[1]), &floats).err();
        assert_eq!(
            error.map(|e| e.message().into_owned()).as_deref(),
            Some("Cannot compare values of different types: int vs float")
        );
        assert_eq!(
            Comparer::new(true).compare(&ints(&[1]), &floats).ok(),
            Some(1)
        );
    }

    #[test]
    fn deep_copy_rebuilds_containers_and_shares_immutable_values() {
        let text = pactum_core::internal::heap_byte_string(
            b"a string stored as an object",
            pactum_core::internal::ByteString::Str,
        );
        let inner = List::from_values([Any::from(1i64)]);
        let original = array([text.clone(), Any::from(inner.clone()), Any::from(inner)]);
        let copy = Copier::default().copy(&original).ok();
        let copy = copy.as_ref().and_then(|c| c.get::<Array>().ok());
        let Some(copy) = copy else {
            panic!("the copy is an Array");
        };
        let original = original.get::<Array>().ok();
        let Some(original) = original else {
            panic!("the original is an Array");
        };
        assert!(!copy.as_object_ref().ptr_eq(original.as_object_ref()));
        assert!(same_as(copy.as_slice()[0].as_raw(), text.as_raw()));
        assert!(!same_as(
            copy.as_slice()[1].as_raw(),
            original.as_slice()[1].as_raw()
        ));
        assert!(same_as(
            copy.as_slice()[1].as_raw(),
            copy.as_slice()[2].as_raw()
        ));
    }
}
