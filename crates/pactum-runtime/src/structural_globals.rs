//! `ffi.StructuralHash`, `ffi.StructuralEqual`, `ffi.GetFirstStructuralMismatch` and the
//! structural keys (`ffi.StructuralKey`, `ffi.StructuralKeyEqual`): the official runtime's
//! structural hashing and comparison (apache-tvm-ffi 0.1.15.post2), hash values bit for bit, and
//! the access paths (`access_path.rs`) of the first difference, as the official walk finds it.
//!
//! The rules, as the official runtime applies them:
//! - plain values hash as `combine(type index, payload word)`: NaNs share one hash, inline
//!   strings hash as heap strings do (inline bytes keep their own type index), strings, bytes
//!   and BigInts by content; plain values compare by their 16 bytes (any NaN equals any NaN,
//!   `0.0` and `-0.0` differ, `1` and `True` differ);
//! - Arrays and Lists hash as `combine(type key hash, length)` then each element; Maps and Dicts
//!   as `combine(type key hash, size)`, then their entries sorted by a key hash that does not
//!   depend on the order of the walk (entries whose key has none are left out, and entries
//!   whose key hashes tie contribute their key hash only); Shapes by their extents; tensors by
//!   extents, data type and (unless skipped) the bytes of a contiguous CPU tensor;
//! - any other object by its type's `structural_eq_hash_kind`: tree nodes by their reflected
//!   fields (ancestors' first, except those flagged `SEQ_HASH_IGNORE`), or through the type's
//!   `__s_hash__`/`__s_equal__` hook; DAG nodes also by the order they are first met; free
//!   variables by the order they are met inside a definition region (a field flagged
//!   `SEQ_HASH_DEF_PATTERN`/`SEQ_HASH_DEF_SIMPLE`, or everywhere with `map_free_vars`) and by
//!   address outside one, where they compare equal only to themselves or to the variable they
//!   were bound to; unique instances compare by identity.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use pactum_sys::dlpack::DLDeviceType;
use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFISEqHashKind, TVMFFITypeIndex, TVMFFITypeInfo, def_region_kind, field_flags,
};

use super::access_path::{self, AccessKind};
use super::builtin::{ANY, BOOL, INT, OPTIONAL_ACCESS_PATH_PAIR, STRUCTURAL_KEY, typed};
use super::reflection::{self, address, lock, same_as, type_key_hash};
use super::registry::BuiltinGlobal;
use super::runtime_types::{RuntimeMethod, STRUCTURAL_KEY_TYPE, TypeExtras, new_runtime_object};
use super::structural_hooks::field_region;
use super::types;
use pactum_core::any::{Any, AnyView, Payload};
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::boundary::{self, EntryKind::Callback};
use pactum_core::internal::{any_hash, hash_combine, stable_hash_bytes};
use pactum_core::object::{ObjectRef, TypeInfo};
use pactum_core::shape::Shape;
use pactum_core::tensor::Tensor;

/// `ffi.StructuralHash`, `ffi.StructuralEqual`, `ffi.GetFirstStructuralMismatch`,
/// `ffi.StructuralKey` and `ffi.StructuralKeyEqual`.
pub(crate) fn structural_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.StructuralHash", &[ANY, BOOL, BOOL], INT, |a| {
            let hash = structural_hash(&a.owned(0)?, a.get::<bool>(1)?, a.get::<bool>(2)?)?;
            // The official global hands the unsigned hash back bit-cast to a signed integer.
            Ok(Any::from(hash as i64))
        }),
        typed("ffi.StructuralEqual", &[ANY, ANY, BOOL, BOOL], BOOL, |a| {
            let (lhs, rhs) = (a.owned(0)?, a.owned(1)?);
            let comparer = Comparer::new(a.get::<bool>(2)?, a.get::<bool>(3)?, false);
            Ok(Any::from(comparer.compare_any(&lhs, &rhs)?))
        }),
        typed(
            "ffi.GetFirstStructuralMismatch",
            &[ANY, ANY, BOOL, BOOL],
            OPTIONAL_ACCESS_PATH_PAIR,
            |a| {
                let (lhs, rhs) = (a.owned(0)?, a.owned(1)?);
                let comparer = Comparer::new(a.get::<bool>(2)?, a.get::<bool>(3)?, true);
                if comparer.compare_any(&lhs, &rhs)? {
                    return Ok(Any::none());
                }
                let trace = comparer.take_trace();
                Ok(access_path::path_pair(
                    path_of(trace.lhs)?,
                    path_of(trace.rhs)?,
                ))
            },
        ),
        structural_key_global("ffi.StructuralKey"),
        typed("ffi.StructuralKeyEqual", &[ANY, ANY], BOOL, |a| {
            let (lhs, rhs) = (a.owned(0)?, a.owned(1)?);
            Ok(Any::from(structural_key_equal(
                lhs.as_view(),
                rhs.as_view(),
            )?))
        }),
    ]
}

/// The structural hash of `value`.
fn structural_hash(value: &Any, map_free_vars: bool, skip_tensor_content: bool) -> Result<u64> {
    Hasher::new(map_free_vars, skip_tensor_content).hash_any(value)
}

/// The path of traced steps (innermost first).
fn path_of(steps: Vec<Step>) -> Result<ObjectRef> {
    let steps = steps
        .iter()
        .rev()
        .map(|step| access_path::new_step(step.kind, &step.key))
        .collect::<Result<Vec<_>>>()?;
    access_path::from_steps(steps)
}

/// `ffi.StructuralKey(key)` (also the type's `__ffi_init__`): `key` with its structural hash.
fn structural_key_global(name: &'static str) -> BuiltinGlobal {
    typed(name, &[ANY], STRUCTURAL_KEY, |a| {
        let key = a.owned(0)?;
        let hash = structural_hash(&key, false, false)?;
        let object = new_runtime_object(STRUCTURAL_KEY_TYPE)?;
        reflection::write_named(&object, "key", key.as_view())?;
        reflection::write_named(&object, "hash_i64", &AnyView::from(hash as i64))?;
        Ok(Any::from_object_ref(object))
    })
}

/// A `StructuralKey` argument, or the official failed check.
fn structural_key(view: &AnyView<'_>, name: &str) -> Result<ObjectRef> {
    view.get::<ObjectRef>()
        .ok()
        .filter(|object| {
            Some(object.type_index())
                == pactum_core::object::type_index_of_key("ffi.StructuralKey").ok()
        })
        .ok_or_else(|| {
            Error::new(
                ErrorKind::INTERNAL_ERROR,
                format!("Check not null: {name} "),
            )
        })
}

fn key_hash(key: &ObjectRef) -> Result<i64> {
    reflection::read_named(key, "hash_i64")?.get::<i64>()
}

/// Two structural keys are equal when they are one object, or their hashes and keys agree.
fn structural_key_equal(lhs: &AnyView<'_>, rhs: &AnyView<'_>) -> Result<bool> {
    if same_as(lhs.as_raw(), rhs.as_raw()) {
        return Ok(true);
    }
    let lhs = structural_key(lhs, "lhs_obj")?;
    let rhs = structural_key(rhs, "rhs_obj")?;
    if key_hash(&lhs)? != key_hash(&rhs)? {
        return Ok(false);
    }
    let (l, r) = (
        reflection::read_named(&lhs, "key")?,
        reflection::read_named(&rhs, "key")?,
    );
    Comparer::new(false, false, false).compare_any(&l, &r)
}

/// The `__ffi_init__` method and the native `__any_hash__`/`__any_equal__` hooks of
/// `ffi.StructuralKey` (Map and Dict keys hash and compare structurally).
pub(crate) fn structural_key_extras() -> TypeExtras {
    TypeExtras {
        methods: vec![RuntimeMethod {
            name: "__ffi_init__",
            is_static: true,
            global: structural_key_global("ffi.StructuralKey.__ffi_init__"),
        }],
        attrs: vec![
            (
                "__any_hash__",
                types::native_hook(structural_key_any_hash as *mut core::ffi::c_void),
            ),
            (
                "__any_equal__",
                types::native_hook(structural_key_any_equal as *mut core::ffi::c_void),
            ),
        ],
    }
}

/// A native hook's result: the value, or the error object (the official convention).
fn native_result(result: Result<Any>) -> TVMFFIAny {
    result
        .unwrap_or_else(|error| Any::from_object_ref(error.as_object_ref().clone()))
        .into_raw()
}

/// `__any_hash__` of `ffi.StructuralKey`: the key's cached structural hash.
unsafe extern "C" fn structural_key_any_hash(value: *const TVMFFIAny) -> TVMFFIAny {
    boundary::value(Callback, TVMFFIAny::NONE, || {
        // SAFETY: the runtime calls the hook with a live StructuralKey value.
        let view = unsafe { AnyView::from_raw(*value) };
        let hash = structural_key(&view, "key_obj").and_then(|key| key_hash(&key));
        Ok(native_result(hash.map(Any::from)))
    })
}

/// `__any_equal__` of `ffi.StructuralKey`.
unsafe extern "C" fn structural_key_any_equal(
    lhs: *const TVMFFIAny,
    rhs: *const TVMFFIAny,
) -> TVMFFIAny {
    boundary::value(Callback, TVMFFIAny::NONE, || {
        // SAFETY: the runtime calls the hook with two live values of the key's type.
        let (lhs, rhs) = unsafe { (AnyView::from_raw(*lhs), AnyView::from_raw(*rhs)) };
        Ok(native_result(
            structural_key_equal(&lhs, &rhs).map(Any::from),
        ))
    })
}

/// The definition-region state of a walk: where free variables bind (compare) or hash by the
/// order they are met.
struct DefRegion(AtomicI32);

impl DefRegion {
    fn new(map_free_vars: bool) -> DefRegion {
        DefRegion(AtomicI32::new(if map_free_vars {
            def_region_kind::PATTERN
        } else {
            def_region_kind::NONE
        }))
    }

    fn get(&self) -> i32 {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, kind: i32) {
        self.0.store(kind, Ordering::Relaxed);
    }

    /// Runs `body` inside a region of `kind`; a pattern region, once entered, persists.
    fn within<T>(&self, kind: i32, body: impl FnOnce() -> T) -> T {
        let saved = self.get();
        self.set(if saved == def_region_kind::PATTERN {
            saved
        } else {
            kind
        });
        let result = body();
        self.set(saved);
        result
    }

    /// Runs `body` (the walk of a free variable's own fields) outside a simple region.
    fn outside_simple<T>(&self, body: impl FnOnce() -> T) -> T {
        let kind = match self.get() {
            def_region_kind::SIMPLE => def_region_kind::NONE,
            other => other,
        };
        let saved = self.get();
        self.set(kind);
        let result = body();
        self.set(saved);
        result
    }

    /// The region a hook asks for: `NONE` keeps the current one.
    fn requested(&self, kind: i32) -> i32 {
        if kind == def_region_kind::NONE {
            self.get()
        } else {
            kind
        }
    }
}

fn type_info(type_index: i32) -> Result<&'static TVMFFITypeInfo> {
    TypeInfo::of(type_index)
        .map(|info| info.as_raw())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::INTERNAL_ERROR,
                format!("Cannot find type info for type_index={type_index}"),
            )
        })
}

/// The structural kind of an object's type, or the official `TypeError` when its type has no
/// metadata or declares none (the official text names StructuralHash for both walks).
fn seq_hash_kind(object: &ObjectRef) -> Result<(&'static TVMFFITypeInfo, TVMFFISEqHashKind)> {
    let info = type_info(object.type_index())?;
    let unsupported = |reason: &str| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "{reason} for type `{}`, so StructuralHash is not supported for this type",
                object.type_key()
            ),
        )
    };
    // SAFETY: type metadata, when registered, is permanent.
    let Some(metadata) = (unsafe { info.metadata.as_ref() }) else {
        return Err(unsupported("Type metadata is not set"));
    };
    if metadata.structural_eq_hash_kind == TVMFFISEqHashKind::UNSUPPORTED {
        return Err(unsupported("_type_s_eq_hash_kind is not set"));
    }
    Ok((info, metadata.structural_eq_hash_kind))
}

/// The hook registered as type attribute `name` for `type_index`, as a Function.
fn hook(type_index: i32, name: &str) -> Result<Option<Function>> {
    reflection::type_attr(type_index, name)
        .map(|value| {
            value.cast::<Function>().map_err(|_| {
                Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "type attribute `{name}` of {} is not a Function",
                        pactum_core::object::type_key_of(type_index)
                    ),
                )
            })
        })
        .transpose()
}

/// An object as a value (one more reference), to pass to a hook.
fn object_value(object: &ObjectRef) -> Any {
    Any::from_object_ref(object.clone())
}

/// The hash of a value whose hash needs no walk: plain values, strings, bytes and BigInts
/// (NaNs not yet merged); `None` for any other object.
fn leaf_hash(value: &AnyView<'_>) -> Option<u64> {
    let raw = value.as_raw();
    let index = raw.type_index;
    match TVMFFITypeIndex(index) {
        // Strings hash as Map keys do: inline ones as the heap string with the same bytes.
        TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR | TVMFFITypeIndex::BYTES => {
            Some(any_hash(value))
        }
        TVMFFITypeIndex::BIG_INT => {
            // SAFETY: a live BigInt value.
            let words = unsafe { super::values::big_int_words(raw) };
            Some(hash_combine(
                index as u64,
                super::values::big_int_hash(&words),
            ))
        }
        // Inline bytes too are a plain value here, unlike in Map keys.
        _ if index < TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 => {
            Some(hash_combine(index as u64, raw.uint64()))
        }
        _ => None,
    }
}

/// The official check that a tensor whose content is read is on the CPU (`name` as the
/// official check names it; `what`: "hash" or "compare").
fn check_cpu(tensor: &Tensor, name: &str, what: &str) -> Result<()> {
    let device_type = tensor.device().device_type;
    if device_type == DLDeviceType::CPU {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::INTERNAL_ERROR,
        format!(
            "Check failed: {name}.device().device_type == kDLCPU ({} vs. 1) : can only {what} CPU tensor",
            device_type.0
        ),
    ))
}

/// A CPU tensor's bytes, after the official check that it is contiguous.
fn contiguous_bytes<'a>(tensor: &'a Tensor, name: &str, what: &str) -> Result<&'a [u8]> {
    if !tensor.is_contiguous() {
        return Err(Error::new(
            ErrorKind::INTERNAL_ERROR,
            format!(
                "Check failed: ({name}.IsContiguous()) is false: Can only {what} contiguous tensor"
            ),
        ));
    }
    let dtype = tensor.dl_tensor().dtype;
    let bits = tensor.numel() as u64 * u64::from(dtype.bits) * u64::from(dtype.lanes);
    let size = bits.div_ceil(8) as usize;
    // The official runtime reads from the data pointer, not counting `byte_offset`.
    let data = tensor.dl_tensor().data;
    if size == 0 || data.is_null() {
        return Ok(&[]);
    }
    // SAFETY: a contiguous CPU tensor holds `size` bytes at its data pointer while it lives.
    Ok(unsafe { core::slice::from_raw_parts(data.cast::<u8>(), size) })
}

/// The data type word of a tensor, as a zero-filled Any payload.
fn dtype_word(tensor: &Tensor) -> u64 {
    let dtype = tensor.dl_tensor().dtype;
    u64::from(dtype.code) | u64::from(dtype.bits) << 8 | u64::from(dtype.lanes) << 16
}

/// One structural hash computation.
struct Hasher {
    me: Weak<Hasher>,
    region: DefRegion,
    skip_tensor_content: bool,
    free_var_counter: AtomicU32,
    graph_node_counter: AtomicU32,
    /// Objects already hashed (kept alive, so addresses stay theirs), with their hash.
    memo: Mutex<HashMap<usize, (ObjectRef, u64)>>,
    /// The callback handed to `__s_hash__` hooks, made on first use.
    callback: OnceLock<Function>,
}

impl Hasher {
    fn new(map_free_vars: bool, skip_tensor_content: bool) -> Arc<Hasher> {
        Arc::new_cyclic(|me| Hasher {
            me: me.clone(),
            region: DefRegion::new(map_free_vars),
            skip_tensor_content,
            free_var_counter: AtomicU32::new(0),
            graph_node_counter: AtomicU32::new(0),
            memo: Mutex::new(HashMap::new()),
            callback: OnceLock::new(),
        })
    }

    fn hash_any(&self, value: &Any) -> Result<u64> {
        let raw = value.as_raw();
        if raw.type_index == TVMFFITypeIndex::FLOAT.0 && raw.float64().is_nan() {
            return Ok(hash_combine(raw.type_index as u64, f64::NAN.to_bits()));
        }
        if let Some(hash) = leaf_hash(value.as_view()) {
            return Ok(hash);
        }
        let index = raw.type_index;
        match TVMFFITypeIndex(index) {
            TVMFFITypeIndex::ARRAY => self.hash_sequence(index, value.get::<Array>()?.as_slice()),
            TVMFFITypeIndex::LIST => self.hash_sequence(index, &value.get::<List>()?.to_vec()),
            TVMFFITypeIndex::MAP => self.hash_map(index, &value.get::<Map>()?.entries()),
            TVMFFITypeIndex::DICT => self.hash_map(index, &value.get::<Dict>()?.entries()),
            TVMFFITypeIndex::SHAPE => {
                let shape = value.get::<Shape>()?;
                let extents = shape.as_slice();
                let start = hash_combine(type_key_hash(index), extents.len() as u64);
                Ok(extents
                    .iter()
                    .fold(start, |hash, &extent| hash_combine(hash, extent as u64)))
            }
            TVMFFITypeIndex::TENSOR => self.hash_tensor(&value.get::<Tensor>()?),
            _ => match value.as_object_ref() {
                Some(object) => self.hash_object(object),
                None => Ok(hash_combine(index as u64, raw.uint64())),
            },
        }
    }

    fn hash_sequence(&self, type_index: i32, items: &[Any]) -> Result<u64> {
        let mut hash = hash_combine(type_key_hash(type_index), items.len() as u64);
        for item in items {
            hash = hash_combine(hash, self.hash_any(item)?);
        }
        Ok(hash)
    }

    /// A key's hash that does not depend on where the walk is: a leaf's, or that of an object
    /// already hashed; `None` otherwise.
    fn order_independent_hash(&self, key: &Any) -> Option<u64> {
        leaf_hash(key.as_view()).or_else(|| {
            let object = key.as_object_ref()?;
            lock(&self.memo)
                .get(&address(object))
                .map(|&(_, hash)| hash)
        })
    }

    fn hash_map(&self, type_index: i32, entries: &[(Any, Any)]) -> Result<u64> {
        let mut hash = hash_combine(type_key_hash(type_index), entries.len() as u64);
        let mut keyed: Vec<(u64, &Any)> = entries
            .iter()
            .filter_map(|(key, value)| Some((self.order_independent_hash(key)?, value)))
            .collect();
        keyed.sort_by_key(|&(key_hash, _)| key_hash);
        for group in keyed.chunk_by(|a, b| a.0 == b.0) {
            hash = hash_combine(hash, group[0].0);
            // Tied keys leave their values out, so the hash does not depend on their order.
            if let [(_, value)] = group {
                hash = hash_combine(hash, self.hash_any(value)?);
            }
        }
        Ok(hash)
    }

    fn hash_tensor(&self, tensor: &Tensor) -> Result<u64> {
        let extents = tensor.shape();
        let start = hash_combine(
            type_key_hash(TVMFFITypeIndex::TENSOR.0),
            extents.len() as u64,
        );
        let mut hash = extents
            .iter()
            .fold(start, |hash, &extent| hash_combine(hash, extent as u64));
        hash = hash_combine(hash, dtype_word(tensor));
        if !self.skip_tensor_content {
            check_cpu(tensor, "tensor", "hash")?;
            let bytes = contiguous_bytes(tensor, "tensor", "hash")?;
            hash = hash_combine(hash, stable_hash_bytes(bytes));
        }
        Ok(hash)
    }

    fn hash_object(&self, object: &ObjectRef) -> Result<u64> {
        let (info, kind) = seq_hash_kind(object)?;
        if let Some(&(_, hash)) = lock(&self.memo).get(&address(object)) {
            return Ok(hash);
        }
        let mut hash = if kind == TVMFFISEqHashKind::FREE_VAR {
            // The variable's own fields are walked even where its hash is its address: the
            // walk advances the counter of free variables met inside them.
            let fields = self
                .region
                .outside_simple(|| self.hash_fields(object, info))?;
            if self.region.get() != def_region_kind::NONE {
                let order = self.free_var_counter.fetch_add(1, Ordering::Relaxed);
                hash_combine(fields, u64::from(order))
            } else {
                address(object) as u64
            }
        } else {
            self.hash_fields(object, info)?
        };
        if kind == TVMFFISEqHashKind::DAG_NODE {
            let order = self.graph_node_counter.fetch_add(1, Ordering::Relaxed);
            hash = hash_combine(hash, u64::from(order));
        }
        lock(&self.memo).insert(address(object), (object.clone(), hash));
        Ok(hash)
    }

    /// The hash of an object's fields (or of its `__s_hash__` hook), from its type key hash.
    fn hash_fields(&self, object: &ObjectRef, info: &TVMFFITypeInfo) -> Result<u64> {
        let mut hash = info.type_key_hash;
        if let Some(hook) = hook(info.type_index, "__s_hash__")? {
            let result = hook.call(&[
                *object_value(object).as_view(),
                AnyView::from(hash as i64),
                *Any::from(self.callback()?).as_view(),
            ])?;
            return Ok(result.get::<i64>()? as u64);
        }
        for field in reflection::fields_of(info.type_index) {
            if field.flags & field_flags::SEQ_HASH_IGNORE != 0 {
                continue;
            }
            let value = reflection::read_field(object, field)?;
            let field_hash = match field_region(field.flags) {
                Some(kind) => self.region.within(kind, || self.hash_any(&value))?,
                None => self.hash_any(&value)?,
            };
            hash = hash_combine(hash, field_hash);
        }
        Ok(hash)
    }

    /// `(value, init, def_region_kind) -> combine(init, hash(value))`, for `__s_hash__` hooks.
    fn callback(&self) -> Result<Function> {
        if let Some(callback) = self.callback.get() {
            return Ok(callback.clone());
        }
        let me = self.me.clone();
        let callback = Function::from_typed(move |value: Any, init: i64, kind: i64| {
            let hasher = me.upgrade().ok_or_else(finished_walk)?;
            let kind = hasher.region.requested(kind as i32);
            let hash = hasher.region.within(kind, || hasher.hash_any(&value))?;
            Ok::<i64, Error>(hash_combine(init as u64, hash) as i64)
        });
        Ok(self.callback.get_or_init(|| callback).clone())
    }
}

fn finished_walk() -> Error {
    Error::new(
        ErrorKind::RUNTIME_ERROR,
        "a structural hook callback was called after its walk finished",
    )
}

/// One step of a path to a mismatch.
struct Step {
    kind: AccessKind,
    key: Any,
}

impl Step {
    fn new(kind: AccessKind, key: impl Into<Any>) -> Step {
        Step {
            kind,
            key: key.into(),
        }
    }
}

/// The paths to the first mismatch, innermost step first.
#[derive(Default)]
struct Trace {
    lhs: Vec<Step>,
    rhs: Vec<Step>,
}

/// A Map or a Dict.
enum Mapping {
    Map(Map),
    Dict(Dict),
}

impl Mapping {
    fn len(&self) -> usize {
        match self {
            Mapping::Map(map) => map.len(),
            Mapping::Dict(dict) => dict.len(),
        }
    }

    fn entries(&self) -> Vec<(Any, Any)> {
        match self {
            Mapping::Map(map) => map.entries(),
            Mapping::Dict(dict) => dict.entries(),
        }
    }

    fn get(&self, key: &Any) -> Option<Any> {
        match self {
            Mapping::Map(map) => map.get(key.as_view()),
            Mapping::Dict(dict) => dict.get(key.as_view()),
        }
    }
}

/// One structural comparison.
struct Comparer {
    me: Weak<Comparer>,
    region: DefRegion,
    skip_tensor_content: bool,
    /// Where the first mismatch lies, when asked for.
    trace: Option<Mutex<Trace>>,
    /// Bound pairs: lhs address to (lhs, rhs), and rhs address to (rhs, lhs).
    lhs_to_rhs: Mutex<HashMap<usize, (ObjectRef, ObjectRef)>>,
    rhs_to_lhs: Mutex<HashMap<usize, (ObjectRef, ObjectRef)>>,
    /// The callback handed to `__s_equal__` hooks, made on first use.
    callback: OnceLock<Function>,
}

impl Comparer {
    fn new(map_free_vars: bool, skip_tensor_content: bool, trace: bool) -> Arc<Comparer> {
        Arc::new_cyclic(|me| Comparer {
            me: me.clone(),
            region: DefRegion::new(map_free_vars),
            skip_tensor_content,
            trace: trace.then(|| Mutex::new(Trace::default())),
            lhs_to_rhs: Mutex::new(HashMap::new()),
            rhs_to_lhs: Mutex::new(HashMap::new()),
            callback: OnceLock::new(),
        })
    }

    fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    fn record(&self, lhs: Step, rhs: Step) {
        if let Some(trace) = &self.trace {
            let mut trace = lock(trace);
            trace.lhs.push(lhs);
            trace.rhs.push(rhs);
        }
    }

    /// The steps traced so far (none when not tracing).
    fn take_trace(&self) -> Trace {
        self.trace
            .as_ref()
            .map(|trace| core::mem::take(&mut *lock(trace)))
            .unwrap_or_default()
    }

    fn compare_any(&self, lhs: &Any, rhs: &Any) -> Result<bool> {
        let (l, r) = (lhs.as_raw(), rhs.as_raw());
        let index = l.type_index;
        if index != r.type_index {
            let strings = [TVMFFITypeIndex::STR.0, TVMFFITypeIndex::SMALL_STR.0];
            let bytes = [TVMFFITypeIndex::BYTES.0, TVMFFITypeIndex::SMALL_BYTES.0];
            let same_family =
                |family: [i32; 2]| family.contains(&index) && family.contains(&r.type_index);
            if same_family(strings) || same_family(bytes) {
                return Ok(pactum_core::internal::view_bytes(lhs.as_view())
                    == pactum_core::internal::view_bytes(rhs.as_view()));
            }
            return Ok(false);
        }
        if index < TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
            if index == TVMFFITypeIndex::FLOAT.0 && l.float64().is_nan() {
                return Ok(r.float64().is_nan());
            }
            return Ok(same_as(l, r));
        }
        match TVMFFITypeIndex(index) {
            TVMFFITypeIndex::BIG_INT => {
                // SAFETY: two live BigInt values.
                Ok(unsafe { super::values::big_int_words(l) == super::values::big_int_words(r) })
            }
            TVMFFITypeIndex::STR | TVMFFITypeIndex::BYTES => {
                Ok(pactum_core::internal::view_bytes(lhs.as_view())
                    == pactum_core::internal::view_bytes(rhs.as_view()))
            }
            TVMFFITypeIndex::ARRAY => self.compare_sequence(
                lhs.get::<Array>()?.as_slice(),
                rhs.get::<Array>()?.as_slice(),
            ),
            TVMFFITypeIndex::LIST => {
                self.compare_sequence(&lhs.get::<List>()?.to_vec(), &rhs.get::<List>()?.to_vec())
            }
            TVMFFITypeIndex::MAP => self.compare_map(
                &Mapping::Map(lhs.get::<Map>()?),
                &Mapping::Map(rhs.get::<Map>()?),
            ),
            TVMFFITypeIndex::DICT => self.compare_map(
                &Mapping::Dict(lhs.get::<Dict>()?),
                &Mapping::Dict(rhs.get::<Dict>()?),
            ),
            TVMFFITypeIndex::SHAPE => {
                Ok(lhs.get::<Shape>()?.as_slice() == rhs.get::<Shape>()?.as_slice())
            }
            TVMFFITypeIndex::TENSOR => {
                self.compare_tensor(&lhs.get::<Tensor>()?, &rhs.get::<Tensor>()?)
            }
            _ => match (lhs.as_object_ref(), rhs.as_object_ref()) {
                (Some(l), Some(r)) => self.compare_object(l, r),
                _ => Ok(false),
            },
        }
    }

    fn compare_sequence(&self, lhs: &[Any], rhs: &[Any]) -> Result<bool> {
        if lhs.len() != rhs.len() && !self.tracing() {
            return Ok(false);
        }
        for (i, (l, r)) in lhs.iter().zip(rhs).enumerate() {
            if !self.compare_any(l, r)? {
                let i = i as i64;
                self.record(
                    Step::new(AccessKind::ArrayItem, i),
                    Step::new(AccessKind::ArrayItem, i),
                );
                return Ok(false);
            }
        }
        match lhs.len().cmp(&rhs.len()) {
            core::cmp::Ordering::Equal => return Ok(true),
            core::cmp::Ordering::Greater => {
                let i = rhs.len() as i64;
                self.record(
                    Step::new(AccessKind::ArrayItem, i),
                    Step::new(AccessKind::ArrayItemMissing, i),
                );
            }
            core::cmp::Ordering::Less => {
                let i = lhs.len() as i64;
                self.record(
                    Step::new(AccessKind::ArrayItemMissing, i),
                    Step::new(AccessKind::ArrayItem, i),
                );
            }
        }
        Ok(false)
    }

    /// `key` as the other side's key: a bound object as the object it is bound to.
    fn mapped_key(key: &Any, bound: &Mutex<HashMap<usize, (ObjectRef, ObjectRef)>>) -> Any {
        key.as_object_ref()
            .and_then(|object| lock(bound).get(&address(object)).map(|(_, o)| o.clone()))
            .map_or_else(|| key.clone(), Any::from_object_ref)
    }

    fn compare_map(&self, lhs: &Mapping, rhs: &Mapping) -> Result<bool> {
        if lhs.len() != rhs.len() && !self.tracing() {
            return Ok(false);
        }
        for (key, value) in lhs.entries() {
            let rhs_key = Self::mapped_key(&key, &self.lhs_to_rhs);
            let Some(rhs_value) = rhs.get(&rhs_key) else {
                self.record(
                    Step::new(AccessKind::MapItem, key),
                    Step::new(AccessKind::MapItemMissing, rhs_key),
                );
                return Ok(false);
            };
            if !self.compare_any(&value, &rhs_value)? {
                self.record(
                    Step::new(AccessKind::MapItem, key),
                    Step::new(AccessKind::MapItem, rhs_key),
                );
                return Ok(false);
            }
        }
        if lhs.len() == rhs.len() {
            return Ok(true);
        }
        for (key, _) in rhs.entries() {
            let lhs_key = Self::mapped_key(&key, &self.rhs_to_lhs);
            if lhs.get(&lhs_key).is_none() {
                self.record(
                    Step::new(AccessKind::MapItemMissing, lhs_key),
                    Step::new(AccessKind::MapItem, key),
                );
                return Ok(false);
            }
        }
        Ok(false)
    }

    fn compare_tensor(&self, lhs: &Tensor, rhs: &Tensor) -> Result<bool> {
        if lhs.as_object_ref().ptr_eq(rhs.as_object_ref()) {
            return Ok(true);
        }
        if lhs.shape() != rhs.shape() || lhs.dtype() != rhs.dtype() {
            return Ok(false);
        }
        if self.skip_tensor_content {
            return Ok(true);
        }
        check_cpu(lhs, "lhs", "compare")?;
        check_cpu(rhs, "rhs", "compare")?;
        let lhs_bytes = contiguous_bytes(lhs, "lhs", "compare")?;
        let rhs_bytes = contiguous_bytes(rhs, "rhs", "compare")?;
        Ok(lhs_bytes == rhs_bytes)
    }

    fn bind(&self, lhs: &ObjectRef, rhs: &ObjectRef) {
        lock(&self.lhs_to_rhs).insert(address(lhs), (lhs.clone(), rhs.clone()));
        lock(&self.rhs_to_lhs).insert(address(rhs), (rhs.clone(), lhs.clone()));
    }

    fn compare_object(&self, lhs: &ObjectRef, rhs: &ObjectRef) -> Result<bool> {
        let (info, kind) = seq_hash_kind(lhs)?;
        if kind == TVMFFISEqHashKind::UNIQUE_INSTANCE {
            return Ok(lhs.ptr_eq(rhs));
        }
        if kind == TVMFFISEqHashKind::CONST_TREE_NODE && lhs.ptr_eq(rhs) {
            return Ok(true);
        }
        let free_var = kind == TVMFFISEqHashKind::FREE_VAR;
        if free_var || kind == TVMFFISEqHashKind::DAG_NODE {
            if let Some((_, bound)) = lock(&self.lhs_to_rhs).get(&address(lhs)) {
                return Ok(bound.ptr_eq(rhs));
            }
            if lock(&self.rhs_to_lhs).contains_key(&address(rhs)) {
                return Ok(false);
            }
        }
        if !free_var {
            let equal = self.compare_fields(lhs, rhs, info)?;
            if equal && kind == TVMFFISEqHashKind::DAG_NODE {
                self.bind(lhs, rhs);
            }
            return Ok(equal);
        }
        if !self
            .region
            .outside_simple(|| self.compare_fields(lhs, rhs, info))?
        {
            return Ok(false);
        }
        // An unbound free variable binds if it is the same object or inside a def region.
        if lhs.ptr_eq(rhs) || self.region.get() != def_region_kind::NONE {
            self.bind(lhs, rhs);
            return Ok(true);
        }
        Ok(false)
    }

    /// Compares two objects of one type field by field (or through its `__s_equal__` hook).
    fn compare_fields(
        &self,
        lhs: &ObjectRef,
        rhs: &ObjectRef,
        info: &TVMFFITypeInfo,
    ) -> Result<bool> {
        if let Some(hook) = hook(info.type_index, "__s_equal__")? {
            let result = hook.call(&[
                *object_value(lhs).as_view(),
                *object_value(rhs).as_view(),
                *Any::from(self.callback()?).as_view(),
            ])?;
            return result.get::<bool>();
        }
        for field in reflection::fields_of(info.type_index) {
            if field.flags & field_flags::SEQ_HASH_IGNORE != 0 {
                continue;
            }
            let l = reflection::read_field(lhs, field)?;
            let r = reflection::read_field(rhs, field)?;
            let equal = match field_region(field.flags) {
                Some(kind) => self.region.within(kind, || self.compare_any(&l, &r))?,
                None => self.compare_any(&l, &r)?,
            };
            if !equal {
                if self.tracing() {
                    let name = pactum_core::String::from(reflection::field_name(field));
                    self.record(
                        Step::new(AccessKind::Attr, name.clone()),
                        Step::new(AccessKind::Attr, name),
                    );
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `(lhs, rhs, def_region_kind, field_name) -> bool`, for `__s_equal__` hooks.
    fn callback(&self) -> Result<Function> {
        if let Some(callback) = self.callback.get() {
            return Ok(callback.clone());
        }
        let me = self.me.clone();
        let callback = Function::from_packed(move |args: &[AnyView<'_>]| {
            let comparer = me.upgrade().ok_or_else(finished_walk)?;
            let [lhs, rhs, kind, field_name] = args else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "the structural equality callback takes 4 arguments (lhs, rhs, def_region_kind, field_name), got {}",
                        args.len()
                    ),
                ));
            };
            let (lhs, rhs) = (lhs.to_any()?, rhs.to_any()?);
            let kind = comparer.region.requested(kind.get::<i64>()? as i32);
            let equal = comparer
                .region
                .within(kind, || comparer.compare_any(&lhs, &rhs))?;
            if !equal && comparer.tracing() {
                let name = field_name.get::<pactum_core::String>()?;
                comparer.record(
                    Step::new(AccessKind::Attr, name.clone()),
                    Step::new(AccessKind::Attr, name),
                );
            }
            Ok(Any::from(equal))
        });
        Ok(self.callback.get_or_init(|| callback).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::{AccessKind, Comparer, DefRegion, field_region, structural_hash};
    use pactum_core::any::Any;
    use pactum_core::containers::{Array, Map};
    use pactum_core::shape::Shape;
    use pactum_sys::tvm_ffi::{def_region_kind, field_flags};

    fn array(items: impl IntoIterator<Item = Any>) -> Any {
        Any::from(items.into_iter().collect::<Array>())
    }

    fn map(entries: &[(&str, i64)]) -> Any {
        Any::from(
            entries
                .iter()
                .map(|&(k, v)| (Any::from(k), Any::from(v)))
                .collect::<Map>(),
        )
    }

    #[test]
    fn hashes_are_the_official_values() {
        // Measured on apache-tvm-ffi 0.1.15.post2 (tvm_ffi.structural_hash).
        let hash = |value: Any| structural_hash(&value, false, false).unwrap();
        assert_eq!(hash(Any::none()), 2654435769);
        assert_eq!(hash(Any::from(1i64)), 2654435835);
        assert_eq!(hash(Any::from(1.5f64)), 4609434221268138618);
        assert_eq!(hash(Any::from(f64::NAN)), 9221120239695526522);
        assert_eq!(hash(Any::from(-f64::NAN)), 9221120239695526522);
        assert_eq!(hash(Any::from(-0.0f64)), 9223372039509211770);
        assert_eq!(hash(Any::from("abc")), 2660953131);
        assert_eq!(hash(Any::from("hello world!!")), 4293989463);
        assert_eq!(hash(array([1i64, 2].map(Any::from))), 2823322240268045181);
        assert_eq!(hash(map(&[("a", 1), ("b", 2)])), 8387368743028195433);
        assert_eq!(hash(map(&[("b", 2), ("a", 1)])), 8387368743028195433);
        assert_eq!(hash(Any::from(Shape::new(&[2, 3]))), 284796581919864661);
    }

    #[test]
    fn the_first_mismatch_is_traced_innermost_step_first() {
        let lhs = array([Any::from(1i64), array([2i64, 3].map(Any::from))]);
        let rhs = array([Any::from(1i64), array([2i64, 4].map(Any::from))]);
        let comparer = Comparer::new(false, false, true);
        assert!(!comparer.compare_any(&lhs, &rhs).unwrap());
        let trace = comparer.take_trace();
        let steps: Vec<(AccessKind, i64)> = trace
            .lhs
            .iter()
            .map(|step| (step.kind, step.key.get::<i64>().unwrap()))
            .collect();
        assert_eq!(
            steps,
            [(AccessKind::ArrayItem, 1), (AccessKind::ArrayItem, 1)]
        );
        let shorter = array([Any::from(1i64)]);
        let comparer = Comparer::new(false, false, true);
        assert!(!comparer.compare_any(&lhs, &shorter).unwrap());
        let trace = comparer.take_trace();
        assert_eq!(trace.lhs[0].kind, AccessKind::ArrayItem);
        assert_eq!(trace.rhs[0].kind, AccessKind::ArrayItemMissing);
        assert!(
            Comparer::new(false, false, false)
                .compare_any(&lhs, &lhs.clone())
                .unwrap()
        );
    }

    #[test]
    fn a_pattern_region_persists_inside_any_other() {
        let region = DefRegion::new(false);
        assert_eq!(region.get(), def_region_kind::NONE);
        let inner = region.within(def_region_kind::SIMPLE, || {
            (
                region.get(),
                region.within(def_region_kind::PATTERN, || region.get()),
            )
        });
        assert_eq!(inner, (def_region_kind::SIMPLE, def_region_kind::PATTERN));
        assert_eq!(region.get(), def_region_kind::NONE);
        let mapped = DefRegion::new(true);
        assert_eq!(
            mapped.within(def_region_kind::SIMPLE, || mapped.get()),
            def_region_kind::PATTERN
        );
    }

    #[test]
    fn a_free_variable_s_fields_leave_a_simple_region_only() {
        let region = DefRegion::new(false);
        let seen = region.within(def_region_kind::SIMPLE, || {
            region.outside_simple(|| region.get())
        });
        assert_eq!(seen, def_region_kind::NONE);
        let mapped = DefRegion::new(true);
        assert_eq!(
            mapped.outside_simple(|| mapped.get()),
            def_region_kind::PATTERN
        );
        assert_eq!(
            region.requested(def_region_kind::NONE),
            def_region_kind::NONE
        );
        assert_eq!(
            mapped.requested(def_region_kind::NONE),
            def_region_kind::PATTERN
        );
        assert_eq!(
            mapped.requested(def_region_kind::SIMPLE),
            def_region_kind::SIMPLE
        );
    }

    #[test]
    fn field_flags_open_regions() {
        assert_eq!(field_region(0), None);
        assert_eq!(field_region(field_flags::SEQ_HASH_IGNORE), None);
        assert_eq!(
            field_region(field_flags::SEQ_HASH_DEF_PATTERN),
            Some(def_region_kind::PATTERN)
        );
        assert_eq!(
            field_region(field_flags::SEQ_HASH_DEF_SIMPLE | field_flags::SEQ_HASH_DEF_PATTERN),
            Some(def_region_kind::SIMPLE)
        );
    }
}
