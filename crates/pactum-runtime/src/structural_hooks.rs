//! The ABI shared by structural visitors and mutators, whoever made them (pactum's engines or
//! C++ code built from the official headers): the object layout (a vtable pointer right after
//! the header, then the active definition-region kind), the raw results their functions return,
//! and the native hooks the official runtime registers for the built-in types
//! (`__s_visit__` on the containers, `__s_mutate__` and `__s_maybe_inplace_mutate__` on the
//! containers and the immutable leaves).
//!
//! A visit result is None (go on), a `ffi.VisitInterrupt` (stop) or an `ffi.Error`. A mutation
//! result is the replacement, the `ffi.Unchanged` marker, or an `ffi.Error`.

use core::cell::Cell;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, Ordering};

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIObject, TVMFFITypeIndex, def_region_kind, field_flags};

use pactum_core::any::{Any, AnyView, OpaquePtr};
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::internal::boundary::{self, EntryKind::Callback};
use pactum_core::object::ObjectRef;

/// The definition region a field's flags open for its value, if any (a simple region when
/// both flags are set).
pub(crate) fn field_region(flags: i64) -> Option<i32> {
    if flags & field_flags::SEQ_HASH_DEF_SIMPLE != 0 {
        Some(def_region_kind::SIMPLE)
    } else if flags & field_flags::SEQ_HASH_DEF_PATTERN != 0 {
        Some(def_region_kind::PATTERN)
    } else {
        None
    }
}

/// How deep one traversal may nest: it stops with a `RecursionError` beyond this depth, or
/// earlier when less than [`STACK_RESERVE`] of the thread's stack is left (a cyclic graph,
/// reachable through mutable containers, would otherwise recurse until the stack overflows).
const MAX_DEPTH: u32 = 100_000;

/// The depth limit where the thread's stack bounds are unknown.
const MAX_DEPTH_UNKNOWN_STACK: u32 = 256;

/// The stack a traversal leaves for the callbacks and hooks it runs.
const STACK_RESERVE: usize = 256 * 1024;

/// The lowest address of the calling thread's stack, where the platform reports it.
fn stack_floor() -> Option<usize> {
    thread_local! {
        static FLOOR: Cell<Option<Option<usize>>> = const { Cell::new(None) };
    }
    FLOOR.with(|floor| {
        let known = floor.get().unwrap_or_else(query_stack_floor);
        floor.set(Some(known));
        known
    })
}

#[cfg(target_os = "linux")]
fn query_stack_floor() -> Option<usize> {
    let mut attr = core::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: on success pthread_getattr_np initialises `attr` for the calling thread.
    if unsafe { libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) } != 0 {
        return None;
    }
    let mut address = core::ptr::null_mut();
    let mut size = 0;
    // SAFETY: `attr` was initialised above; the out pointers are valid locals.
    let rc = unsafe { libc::pthread_attr_getstack(attr.as_ptr(), &mut address, &mut size) };
    // SAFETY: `attr` was initialised above and is not used again.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    (rc == 0 && !address.is_null()).then_some(address as usize)
}

#[cfg(not(target_os = "linux"))]
fn query_stack_floor() -> Option<usize> {
    None
}

/// Whether a traversal at `depth` may go one level deeper: within [`MAX_DEPTH`] and with
/// [`STACK_RESERVE`] of stack left; else the `RecursionError` naming `what`.
pub(crate) fn check_depth(depth: u32, what: &str) -> Result<()> {
    let marker = 0u8;
    let here = core::hint::black_box(&marker) as *const u8 as usize;
    let fits = match stack_floor() {
        Some(floor) => depth < MAX_DEPTH && here.saturating_sub(floor) > STACK_RESERVE,
        None => depth < MAX_DEPTH_UNKNOWN_STACK,
    };
    if fits {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::custom("RecursionError"),
        format!(
            "{what} nested too deeply ({depth} levels, near the end of the thread's stack): is the graph cyclic?"
        ),
    ))
}

/// Counts the nesting of one traversal (atomically: a traversal object may be reached from
/// several threads, though sharing one between overlapping traversals is meaningless).
pub(crate) struct Depth<'a>(&'a AtomicU32);

impl<'a> Depth<'a> {
    pub(crate) fn enter(counter: &'a AtomicU32, what: &str) -> Result<Depth<'a>> {
        check_depth(counter.load(Ordering::Relaxed), what)?;
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(Depth(counter))
    }
}

impl Drop for Depth<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The outcome of visiting a value: `Some(interrupt)` stops the traversal.
pub(crate) type Flow = Result<Option<Any>>;

/// A mutation outcome: `None` when the value is unchanged.
pub(crate) type Mutation = Result<Option<Any>>;

/// `(visitor, value) -> raw visit result`, the official `FStructuralVisitABI`.
pub(crate) type VisitFn = unsafe extern "C" fn(*mut TVMFFIObject, TVMFFIAny) -> TVMFFIAny;

/// `(mutator, var, mapped) -> None or Error`, the official `FStructuralVarRemapSet`.
pub(crate) type RemapSetFn =
    unsafe extern "C" fn(*mut TVMFFIObject, TVMFFIAny, TVMFFIAny) -> TVMFFIAny;

/// The official `StructuralVisitorVTable`.
#[repr(C)]
pub(crate) struct VisitorVTable {
    pub(crate) visit: VisitFn,
}

/// The official `StructuralMutatorVTable`.
#[repr(C)]
pub(crate) struct MutatorVTable {
    pub(crate) mutate: VisitFn,
    pub(crate) maybe_inplace_mutate: VisitFn,
    pub(crate) var_remap_get: VisitFn,
    pub(crate) var_remap_set: RemapSetFn,
}

/// The start of every visitor and mutator object after its header: the vtable, then the
/// active `TVMFFIDefRegionKind` (C++ hooks read and write it in place).
#[repr(C)]
pub(crate) struct TraversalHead<V: 'static> {
    pub(crate) vtable: &'static V,
    pub(crate) region: core::cell::UnsafeCell<i32>,
}

/// A live visitor or mutator object, borrowed for the duration of a traversal step.
pub(crate) struct Traversal<V: 'static> {
    object: *mut TVMFFIObject,
    _vtable: core::marker::PhantomData<&'static V>,
}

impl<V: 'static> Clone for Traversal<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V: 'static> Copy for Traversal<V> {}

impl<V: 'static> Traversal<V> {
    /// The traversal object `object` (a live `ffi.StructuralVisitor` when `V` is
    /// [`VisitorVTable`], a live `ffi.StructuralMutator` when it is [`MutatorVTable`]).
    ///
    /// # Safety
    /// `object` must be such an object, alive for as long as the result is used.
    pub(crate) unsafe fn new(object: *mut TVMFFIObject) -> Self {
        Traversal {
            object,
            _vtable: core::marker::PhantomData,
        }
    }

    fn head(self) -> *mut TraversalHead<V> {
        self.object.wrapping_add(1).cast()
    }

    /// The raw object pointer.
    pub(crate) fn raw(self) -> *mut TVMFFIObject {
        self.object
    }

    /// The vtable.
    pub(crate) fn vtable(self) -> &'static V {
        // SAFETY: the type guarantees the layout; the vtable is never changed.
        unsafe { (*self.head()).vtable }
    }

    /// The active definition-region kind.
    pub(crate) fn region(self) -> i32 {
        // SAFETY: the type guarantees the layout; only the traversal's own thread writes it.
        unsafe { *(*self.head()).region.get() }
    }

    fn set_region(self, kind: i32) {
        // SAFETY: as in `region`.
        unsafe { *(*self.head()).region.get() = kind }
    }

    /// Runs `body` with `kind` active, restoring the previous kind afterwards. Inside a pattern
    /// region this changes nothing: the pattern propagates.
    pub(crate) fn with_region<R>(self, kind: i32, body: impl FnOnce() -> R) -> R {
        let old = self.region();
        if old == def_region_kind::PATTERN {
            return body();
        }
        struct Restore<V: 'static>(Traversal<V>, i32);
        impl<V: 'static> Drop for Restore<V> {
            fn drop(&mut self) {
                self.0.set_region(self.1);
            }
        }
        self.set_region(kind);
        let _restore = Restore(self, old);
        body()
    }

    /// The object as an owned value (to pass to callbacks).
    pub(crate) fn to_any(self) -> Any {
        // SAFETY: the object is alive (the constructor's contract); we take a new reference.
        let object =
            unsafe { ObjectRef::from_raw_borrowed(core::ptr::NonNull::new_unchecked(self.object)) };
        Any::from_object_ref(object)
    }
}

impl Traversal<VisitorVTable> {
    /// Visits `value` through the visitor's own dispatch.
    pub(crate) fn visit(self, value: &AnyView<'_>) -> Flow {
        // SAFETY: the vtable function takes this visitor and a borrowed value and returns an
        // owned raw visit result.
        decode_flow(unsafe { (self.vtable().visit)(self.object, *value.as_raw()) })
    }
}

impl Traversal<MutatorVTable> {
    /// Mutates `value` through the mutator's own dispatch. `inplace` permits in-place
    /// mutation, counting the references the caller itself holds besides the owner's: the value
    /// is mutated in place only when no one else holds it.
    pub(crate) fn mutate(self, value: &AnyView<'_>, inplace: Inplace) -> Mutation {
        let unique = match inplace {
            Inplace::Disallow => false,
            Inplace::Allow { own_references } => value.object_ptr().is_some_and(|object| {
                // SAFETY: a live object borrowed by `value`.
                unsafe { pactum_core::internal::header::strong_count(object) == 1 + own_references }
            }),
        };
        let function = if unique {
            self.vtable().maybe_inplace_mutate
        } else {
            self.vtable().mutate
        };
        // SAFETY: the vtable function takes this mutator and a borrowed value and returns an
        // owned raw mutation result.
        decode_mutation(unsafe { function(self.object, *value.as_raw()) })
    }
}

/// Whether a mutation may happen in place (the official `InplaceMode`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inplace {
    Disallow,
    /// Allowed along the path; the caller holds `own_references` extra references to the value.
    Allow {
        own_references: u32,
    },
}

/// A visit result as the raw value the ABI returns.
pub(crate) fn encode_flow(flow: Flow) -> TVMFFIAny {
    match flow {
        Ok(None) => TVMFFIAny::NONE,
        Ok(Some(interrupt)) => interrupt.into_raw(),
        Err(error) => Any::from_object_ref(error.as_object_ref().clone()).into_raw(),
    }
}

/// A raw visit result (owned) back as a [`Flow`].
pub(crate) fn decode_flow(raw: TVMFFIAny) -> Flow {
    // SAFETY: visit functions return an owned value.
    let value = unsafe { Any::from_raw(raw) };
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::NONE => Ok(None),
        TVMFFITypeIndex::ERROR => Err(value.cast::<Error>()?),
        TVMFFITypeIndex::VISIT_INTERRUPT => Ok(Some(value)),
        _ => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "a structural visit returned a `{}`, not None, an ffi.VisitInterrupt or an ffi.Error",
                value.type_key()
            ),
        )),
    }
}

/// A mutation result as the raw value the ABI returns.
pub(crate) fn encode_mutation(mutation: Mutation) -> TVMFFIAny {
    match mutation {
        Ok(None) => TVMFFIAny {
            type_index: TVMFFITypeIndex::UNCHANGED.0,
            ..TVMFFIAny::NONE
        },
        Ok(Some(value)) => value.into_raw(),
        Err(error) => Any::from_object_ref(error.as_object_ref().clone()).into_raw(),
    }
}

/// A raw mutation result (owned) back as a [`Mutation`].
pub(crate) fn decode_mutation(raw: TVMFFIAny) -> Mutation {
    match TVMFFITypeIndex(raw.type_index) {
        TVMFFITypeIndex::UNCHANGED => Ok(None),
        // SAFETY: mutate functions return an owned value.
        TVMFFITypeIndex::ERROR => Err(unsafe { Any::from_raw(raw) }.cast::<Error>()?),
        // SAFETY: as above.
        _ => Ok(Some(unsafe { Any::from_raw(raw) })),
    }
}

/// Runs the body of an ABI function returning a raw result: errors and panics become an
/// `ffi.Error` result.
pub(crate) fn raw_entry(
    encode: fn(Result<Option<Any>>) -> TVMFFIAny,
    body: impl FnOnce() -> Result<Option<Any>>,
) -> TVMFFIAny {
    match boundary::enter(Callback, body) {
        Ok(result) => encode(result),
        Err(payload) => encode(Err(Error::from_panic(payload))),
    }
}

/// The replacement `mutation` describes for `original`, or `original` itself.
pub(crate) fn changed_or(mutation: Option<Any>, original: &AnyView<'_>) -> Result<Any> {
    match mutation {
        Some(value) => Ok(value),
        None => original.to_any(),
    }
}

/// Whether `mutation` leaves `original` as it is (unchanged, or the very same value).
pub(crate) fn is_same(mutation: &Option<Any>, original: &AnyView<'_>) -> bool {
    match mutation {
        None => true,
        Some(value) => {
            let (a, b) = (value.as_raw(), original.as_raw());
            // SAFETY: comparing the raw 8-byte payload of two values of the same type index.
            a.type_index == b.type_index && unsafe { a.value.v_int64 == b.value.v_int64 }
        }
    }
}

/// `__s_visit__` of Array and List: each element, in order.
unsafe extern "C" fn visit_sequence(visitor: *mut TVMFFIObject, value: TVMFFIAny) -> TVMFFIAny {
    raw_entry(encode_flow, || {
        // SAFETY: the runtime calls this hook with a live visitor and a borrowed sequence.
        let (visitor, value) = unsafe { (Traversal::new(visitor), AnyView::from_raw(value)) };
        for item in sequence_items(&value)? {
            if let Some(interrupt) = visitor.visit(item.as_view())? {
                return Ok(Some(interrupt));
            }
        }
        Ok(None)
    })
}

/// `__s_visit__` of Map and Dict: each value, in iteration order (keys are anchors).
unsafe extern "C" fn visit_mapping(visitor: *mut TVMFFIObject, value: TVMFFIAny) -> TVMFFIAny {
    raw_entry(encode_flow, || {
        // SAFETY: the runtime calls this hook with a live visitor and a borrowed mapping.
        let (visitor, value) = unsafe { (Traversal::new(visitor), AnyView::from_raw(value)) };
        for (_, item) in mapping_entries(&value)? {
            if let Some(interrupt) = visitor.visit(item.as_view())? {
                return Ok(Some(interrupt));
            }
        }
        Ok(None)
    })
}

/// The elements of an Array or List (a snapshot).
fn sequence_items(value: &AnyView<'_>) -> Result<Vec<Any>> {
    if value.type_index() == TVMFFITypeIndex::LIST.0 {
        return Ok(value.get::<List>()?.to_vec());
    }
    Ok(value.get::<Array>()?.iter().cloned().collect())
}

/// The entries of a Map or Dict in iteration order (a snapshot).
fn mapping_entries(value: &AnyView<'_>) -> Result<Vec<(Any, Any)>> {
    if value.type_index() == TVMFFITypeIndex::DICT.0 {
        return Ok(value.get::<Dict>()?.entries());
    }
    Ok(value.get::<Map>()?.entries())
}

/// `__s_mutate__` / `__s_maybe_inplace_mutate__` of String, Bytes and BigInt: unchanged.
unsafe extern "C" fn mutate_leaf(_: *mut TVMFFIObject, _: TVMFFIAny) -> TVMFFIAny {
    encode_mutation(Ok(None))
}

/// `__s_mutate__` (`INPLACE` false) and `__s_maybe_inplace_mutate__` (true) of the containers:
/// each element (of a mapping, each value) mutated; a sequence or mapping with a changed
/// element is rebuilt, unless it is mutated in place (Lists and Dicts, uniquely owned, may be).
unsafe extern "C" fn mutate_container<const INPLACE: bool>(
    mutator: *mut TVMFFIObject,
    value: TVMFFIAny,
) -> TVMFFIAny {
    raw_entry(encode_mutation, || {
        // SAFETY: the runtime calls this hook with a live mutator and a borrowed container.
        let (mutator, value) = unsafe { (Traversal::new(mutator), AnyView::from_raw(value)) };
        let type_index = TVMFFITypeIndex(value.type_index());
        if matches!(type_index, TVMFFITypeIndex::MAP | TVMFFITypeIndex::DICT) {
            mutate_mapping::<INPLACE>(mutator, &value, type_index)
        } else {
            mutate_sequence::<INPLACE>(mutator, &value, type_index)
        }
    })
}

/// The mode for elements read from a snapshot of a container (which holds one reference each).
fn snapshot_mode(inplace: bool) -> Inplace {
    if inplace {
        Inplace::Allow { own_references: 1 }
    } else {
        Inplace::Disallow
    }
}

fn mutate_sequence<const INPLACE: bool>(
    mutator: Traversal<MutatorVTable>,
    value: &AnyView<'_>,
    type_index: TVMFFITypeIndex,
) -> Mutation {
    let items = sequence_items(value)?;
    let mut out: Option<Vec<Any>> = None;
    for (i, item) in items.iter().enumerate() {
        let mapped = mutator.mutate(item.as_view(), snapshot_mode(INPLACE))?;
        if let Some(out) = out.as_mut() {
            out.push(changed_or(mapped, item.as_view())?);
        } else if !is_same(&mapped, item.as_view()) {
            let mut fresh = items[..i].to_vec();
            fresh.push(changed_or(mapped, item.as_view())?);
            out = Some(fresh);
        }
    }
    let Some(out) = out else {
        return Ok(None);
    };
    if type_index == TVMFFITypeIndex::LIST {
        if INPLACE {
            let list = value.get::<List>()?;
            for (i, item) in out.into_iter().enumerate() {
                list.set(i, item)?;
            }
            return Ok(None);
        }
        return Ok(Some(Any::from(List::from_values(out))));
    }
    let out = if INPLACE {
        let array = value.get::<Array>()?;
        // SAFETY: this is the in-place hook: the mutator calls it only on a path from the root
        // that it owns uniquely, so nothing else reaches this array.
        match unsafe { array.overwrite_unshared(out) } {
            Ok(()) => return Ok(None),
            Err(out) => out,
        }
    } else {
        out
    };
    Ok(Some(Any::from(Array::new(out))))
}

fn mutate_mapping<const INPLACE: bool>(
    mutator: Traversal<MutatorVTable>,
    value: &AnyView<'_>,
    type_index: TVMFFITypeIndex,
) -> Mutation {
    let entries = mapping_entries(value)?;
    let mut changed = Vec::new();
    for (key, item) in &entries {
        let mapped = mutator.mutate(item.as_view(), snapshot_mode(INPLACE))?;
        if !is_same(&mapped, item.as_view()) {
            changed.push((key.clone(), changed_or(mapped, item.as_view())?));
        }
    }
    if changed.is_empty() {
        return Ok(None);
    }
    if type_index == TVMFFITypeIndex::DICT {
        let dict = value.get::<Dict>()?;
        let target = if INPLACE {
            dict
        } else {
            Dict::from_pairs(entries)
        };
        for (key, item) in changed {
            target.insert(key, item);
        }
        return Ok(if INPLACE {
            None
        } else {
            Some(Any::from(target))
        });
    }
    let mut map = value.get::<Map>()?;
    for (key, item) in changed {
        map.insert(key, item);
    }
    Ok(Some(Any::from(map)))
}

/// The native hooks the official runtime registers at start-up: `(type index, attribute,
/// OpaquePtr to the hook)`.
pub(crate) fn builtin_hooks() -> Vec<(i32, &'static [u8], Any)> {
    let pointer = |f: *const ()| Any::from(OpaquePtr(f as *mut c_void));
    let visit_sequence = pointer(visit_sequence as *const ());
    let visit_mapping = pointer(visit_mapping as *const ());
    let leaf = pointer(mutate_leaf as *const ());
    let copy = pointer(mutate_container::<false> as *const ());
    let inplace = pointer(mutate_container::<true> as *const ());
    let mut hooks = Vec::new();
    for index in [TVMFFITypeIndex::ARRAY, TVMFFITypeIndex::LIST] {
        hooks.push((index.0, &b"__s_visit__"[..], visit_sequence.clone()));
    }
    for index in [TVMFFITypeIndex::MAP, TVMFFITypeIndex::DICT] {
        hooks.push((index.0, &b"__s_visit__"[..], visit_mapping.clone()));
    }
    for index in [
        TVMFFITypeIndex::BIG_INT,
        TVMFFITypeIndex::STR,
        TVMFFITypeIndex::BYTES,
    ] {
        hooks.push((index.0, &b"__s_mutate__"[..], leaf.clone()));
        hooks.push((index.0, &b"__s_maybe_inplace_mutate__"[..], leaf.clone()));
    }
    for index in [
        TVMFFITypeIndex::ARRAY,
        TVMFFITypeIndex::LIST,
        TVMFFITypeIndex::MAP,
        TVMFFITypeIndex::DICT,
    ] {
        hooks.push((index.0, &b"__s_mutate__"[..], copy.clone()));
        hooks.push((index.0, &b"__s_maybe_inplace_mutate__"[..], inplace.clone()));
    }
    hooks
}
