//! Structural visiting, as the official runtime does it: `ffi.StructuralWalk` (typed callbacks
//! before or after the children, which may skip a subtree or interrupt the walk),
//! `ffi.StructuralVisit` (a matched callback owns the descent into its value), the
//! `ffi.StructuralVisitor` methods callbacks and hooks use, and `ffi.VisitInterrupt`.
//!
//! A value's children: an Array's or List's elements, a Map's or Dict's values, or else the
//! reflected fields of an object (except those marked `SEQ_HASH_IGNORE`, under the definition
//! region their flags name), unless its type registers an `__s_visit__` hook. None is never
//! visited. An error leaving a visited object names it in the error's `ffi.VisitErrorContext`.

use core::sync::atomic::AtomicU32;

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIObject, TVMFFISEqHashKind, TVMFFITypeIndex, def_region_kind, field_flags,
};

use super::builtin::{
    ANY, ANY_VIEW, Args, CALLBACKS, FUNCTION, INT, OPTIONAL_INTERRUPT, Ty, typed,
};
use super::reflection::{self, fields_of, read_field};
use super::registry::BuiltinGlobal;
use super::structural_hooks::{
    Depth, Flow, Traversal, TraversalHead, VisitorVTable, decode_flow, encode_flow, field_region,
    raw_entry,
};
use super::visit_error_context::annotate;
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::Array;
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::is_instance;
use pactum_core::internal::{ObjectBox, new_object_box};
use pactum_core::object::{ObjectRef, TypeInfo, type_index_of_key};

/// One callback entry: the type index it matches, the function, and (for
/// `ffi.StructuralMutate`) whether it takes the in-place mode.
pub(crate) struct Callback {
    pub(crate) type_index: i32,
    pub(crate) function: Function,
    pub(crate) takes_mode: bool,
}

/// The callback entries of argument `index`: an Array of `(type index, Function)` tuples, with
/// a trailing bool when `with_mode`. A malformed entry is reported as the official conversion
/// does (`Array[index 0: Array[size=3]]`, `Array[index 0: Array[index 1: int]]`).
pub(crate) fn callbacks(a: &Args<'_>, index: usize, with_mode: bool) -> Result<Vec<Callback>> {
    let entries = a.get::<Array>(index)?;
    let width = if with_mode { 3 } else { 2 };
    let mut parsed = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let bad = |detail: std::string::String| {
            a.mismatch_detail(index, &format!("Array[index {i}: {detail}]"))
        };
        let Ok(entry) = entry.get::<Array>() else {
            return Err(bad(entry.type_key()));
        };
        if entry.len() != width {
            return Err(bad(format!("Array[size={}]", entry.len())));
        }
        let items = entry.as_slice();
        let slot_error = |j: usize| bad(format!("Array[index {j}: {}]", items[j].type_key()));
        let type_index = items[0].get::<i64>().map_err(|_| slot_error(0))?;
        let function = items[1].get::<Function>().map_err(|_| slot_error(1))?;
        let takes_mode = with_mode && items[2].get::<bool>().map_err(|_| slot_error(2))?;
        parsed.push(Callback {
            // The official conversion to int32 keeps the low bits.
            type_index: type_index as i32,
            function,
            takes_mode,
        });
    }
    Ok(parsed)
}

/// Whether a callback registered for `target` applies to a value of `actual` (the official
/// `RuntimeTypeIndexMatch`): Any matches everything, `str`/`bytes` their small forms, an object
/// type its subtypes.
fn callback_matches(actual: i32, target: i32) -> bool {
    match TVMFFITypeIndex(target) {
        TVMFFITypeIndex::ANY => true,
        TVMFFITypeIndex::STR if actual == TVMFFITypeIndex::SMALL_STR.0 => true,
        TVMFFITypeIndex::BYTES if actual == TVMFFITypeIndex::SMALL_BYTES.0 => true,
        _ => is_instance(actual, target),
    }
}

/// The first callback (of `lists`, in order) that applies to `type_index`, with the position of
/// its list.
pub(crate) fn first_match<'c>(
    lists: &[&'c [Callback]],
    type_index: i32,
) -> Option<(usize, &'c Callback)> {
    lists.iter().enumerate().find_map(|(n, list)| {
        list.iter()
            .find(|c| callback_matches(type_index, c.type_index))
            .map(|c| (n, c))
    })
}

/// The official `CallExpected` message for a callback result of the wrong type.
fn result_mismatch(expected: &str, got: &Any) -> Error {
    Error::new(
        ErrorKind::TYPE_ERROR,
        format!(
            "CallExpected: result type mismatch, expected {expected}, but got {}",
            got.type_key()
        ),
    )
}

/// A callback's result as `Optional<ffi.VisitInterrupt>`.
fn optional_interrupt(result: Any) -> Flow {
    match TVMFFITypeIndex(result.type_index()) {
        TVMFFITypeIndex::NONE => Ok(None),
        TVMFFITypeIndex::VISIT_INTERRUPT => Ok(Some(result)),
        _ => Err(result_mismatch("Optional<ffi.VisitInterrupt>", &result)),
    }
}

/// What a walk callback asks for.
enum Step {
    Advance,
    Skip,
    Stop(Any),
}

/// A walk callback's result as the official `WalkResult` (None advances; an integer advances
/// unless it is the skip tag 1; an `ffi.VisitInterrupt` stops).
fn walk_step(result: Any) -> Result<Step> {
    match TVMFFITypeIndex(result.type_index()) {
        TVMFFITypeIndex::NONE => Ok(Step::Advance),
        TVMFFITypeIndex::VISIT_INTERRUPT => Ok(Step::Stop(result)),
        TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => {
            let tag = result.get::<i64>()?;
            Ok(if tag as i32 == 1 {
                Step::Skip
            } else {
                Step::Advance
            })
        }
        _ => Err(result_mismatch("WalkResult", &result)),
    }
}

/// The engine of a visitor pactum makes.
enum Engine {
    Walk {
        callbacks: Vec<Callback>,
        with_region: Vec<Callback>,
        pre_order: bool,
    },
    Visit {
        callbacks: Vec<Callback>,
    },
}

/// The body of a visitor object pactum makes: the official head, then the engine.
#[repr(C)]
struct VisitorBody {
    head: TraversalHead<VisitorVTable>,
    depth: AtomicU32,
    engine: Engine,
}

static ENGINE_VTABLE: VisitorVTable = VisitorVTable {
    visit: engine_visit,
};

/// A new visitor object running `engine`.
fn new_visitor(engine: Engine) -> Result<ObjectRef> {
    let body = VisitorBody {
        head: TraversalHead {
            vtable: &ENGINE_VTABLE,
            region: core::cell::UnsafeCell::new(def_region_kind::NONE),
        },
        depth: AtomicU32::new(0),
        engine,
    };
    let object = new_object_box(type_index_of_key("ffi.StructuralVisitor")?, body);
    // SAFETY: a fresh object whose single strong reference we take.
    Ok(unsafe { ObjectRef::from_raw_owned(object.cast()) })
}

/// The visit function of pactum's visitors.
unsafe extern "C" fn engine_visit(visitor: *mut TVMFFIObject, value: TVMFFIAny) -> TVMFFIAny {
    raw_entry(encode_flow, || {
        // SAFETY: this vtable is only installed in VisitorBody objects, which the caller keeps
        // alive, and `value` is a borrowed value valid for the call.
        let (body, traversal, value) = unsafe {
            (
                ObjectBox::<VisitorBody>::cell(visitor.cast()),
                Traversal::new(visitor),
                AnyView::from_raw(value),
            )
        };
        body.visit(traversal, &value)
    })
}

impl VisitorBody {
    fn visit(&self, visitor: Traversal<VisitorVTable>, value: &AnyView<'_>) -> Flow {
        if value.is_none() {
            return Ok(None);
        }
        let _depth = Depth::enter(&self.depth, "structural visit")?;
        let flow = match &self.engine {
            Engine::Walk {
                callbacks,
                with_region,
                pre_order,
            } => {
                let call = || -> Result<Step> {
                    match first_match(&[callbacks, with_region], value.type_index()) {
                        None => Ok(Step::Advance),
                        Some((0, c)) => walk_step(c.function.call(&[*value])?),
                        Some((_, c)) => {
                            let kind = Any::from(i64::from(visitor.region()));
                            walk_step(c.function.call(&[*value, *kind.as_view()])?)
                        }
                    }
                };
                walk(visitor, value, *pre_order, call)
            }
            Engine::Visit { callbacks } => match first_match(&[callbacks], value.type_index()) {
                Some((_, c)) => {
                    let this = visitor.to_any();
                    c.function
                        .call(&[*value, *this.as_view()])
                        .and_then(optional_interrupt)
                }
                None => default_visit(visitor, value),
            },
        };
        flow.map_err(|error| annotate(error, value))
    }
}

fn walk(
    visitor: Traversal<VisitorVTable>,
    value: &AnyView<'_>,
    pre_order: bool,
    call: impl Fn() -> Result<Step>,
) -> Flow {
    if pre_order {
        match call()? {
            Step::Stop(interrupt) => return Ok(Some(interrupt)),
            Step::Skip => return Ok(None),
            Step::Advance => {}
        }
    }
    if let Some(interrupt) = default_visit(visitor, value)? {
        return Ok(Some(interrupt));
    }
    if !pre_order && let Step::Stop(interrupt) = call()? {
        return Ok(Some(interrupt));
    }
    Ok(None)
}

/// The default descent into `value`: its type's `__s_visit__` hook, or else (for an object)
/// its reflected fields.
fn default_visit(visitor: Traversal<VisitorVTable>, value: &AnyView<'_>) -> Flow {
    match reflection::type_attr(value.type_index(), "__s_visit__") {
        Some(hook) if hook.type_index() == TVMFFITypeIndex::OPAQUE_PTR.0 => {
            let pointer = hook.get::<pactum_core::any::OpaquePtr>()?.0;
            // SAFETY: an opaque `__s_visit__` is a native hook with the official ABI.
            let hook: super::structural_hooks::VisitFn = unsafe { core::mem::transmute(pointer) };
            // SAFETY: the hook takes a live visitor and a borrowed value and returns an owned
            // raw visit result.
            decode_flow(unsafe { hook(visitor.raw(), *value.as_raw()) })
        }
        Some(hook) if hook.type_index() == TVMFFITypeIndex::FUNCTION.0 => {
            let this = visitor.to_any();
            hook.get::<Function>()?
                .call(&[*this.as_view(), *value])
                .and_then(optional_interrupt)
        }
        Some(_) => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "__s_visit__ must be an opaque function pointer or ffi.Function",
        )),
        None => match value.object_ptr() {
            None => Ok(None),
            Some(_) => {
                let owned = value.to_any()?;
                match owned.as_object_ref() {
                    Some(object) => visit_fields(visitor, object),
                    None => Ok(None),
                }
            }
        },
    }
}

/// Whether objects of `type_index` are free variables (`kTVMFFISEqHashKindFreeVar`).
fn is_free_var(type_index: i32) -> bool {
    structural_kind(type_index) == TVMFFISEqHashKind::FREE_VAR
}

/// The `TVMFFISEqHashKind` of `type_index` (Unsupported without metadata).
pub(crate) fn structural_kind(type_index: i32) -> TVMFFISEqHashKind {
    TypeInfo::of(type_index)
        .map(|info| info.as_raw().metadata)
        .filter(|metadata| !metadata.is_null())
        // SAFETY: a non-null metadata record of a permanent type info.
        .map_or(TVMFFISEqHashKind(0), |metadata| unsafe {
            (*metadata).structural_eq_hash_kind
        })
}

/// Runs `body` over an object's fields: a free variable defined in a simple region has its
/// fields visited as uses (the region is cleared for them).
pub(crate) fn with_field_region<V, R>(
    traversal: Traversal<V>,
    type_index: i32,
    body: impl FnOnce() -> R,
) -> R {
    if traversal.region() == def_region_kind::SIMPLE && is_free_var(type_index) {
        traversal.with_region(def_region_kind::NONE, body)
    } else {
        body()
    }
}

/// Visits the reflected fields of `object`.
fn visit_fields(visitor: Traversal<VisitorVTable>, object: &ObjectRef) -> Flow {
    with_field_region(visitor, object.type_index(), || {
        for field in fields_of(object.type_index()) {
            if field.flags & field_flags::SEQ_HASH_IGNORE != 0 {
                continue;
            }
            let value = read_field(object, field)?;
            let flow = match field_region(field.flags) {
                Some(kind) => visitor.with_region(kind, || visitor.visit(value.as_view())),
                None => visitor.visit(value.as_view()),
            };
            if let Some(interrupt) = flow? {
                return Ok(Some(interrupt));
            }
        }
        Ok(None)
    })
}

/// Argument 0 as a live object of `type_key` (or a subtype), or the official mismatch error.
pub(crate) fn traversal_arg(a: &Args<'_>, type_key: &str) -> Result<ObjectRef> {
    let object = a.get::<ObjectRef>(0).map_err(|_| a.mismatch(0))?;
    if !is_instance(object.type_index(), type_index_of_key(type_key)?) {
        return Err(a.mismatch(0));
    }
    Ok(object)
}

fn visitor_arg(a: &Args<'_>) -> Result<(ObjectRef, Traversal<VisitorVTable>)> {
    let object = traversal_arg(a, "ffi.StructuralVisitor")?;
    // SAFETY: an `ffi.StructuralVisitor`, kept alive by `object`, which the caller holds.
    let traversal = unsafe { Traversal::new(object.as_raw()) };
    Ok((object, traversal))
}

/// The definition-region kind argument `index` (an integer of `TVMFFIDefRegionKind`).
fn region_arg(a: &Args<'_>, index: usize) -> Result<i32> {
    let kind = a.get::<i64>(index)?;
    i32::try_from(kind).map_err(|_| a.mismatch(index))
}

/// Runs callback argument 2 of a `With*DefRegionKind` method on `traversal`.
pub(crate) fn with_region_global<V>(a: &Args<'_>, traversal: Traversal<V>) -> Result<Any> {
    let kind = region_arg(a, 1)?;
    let callback = a.get::<Function>(2)?;
    traversal.with_region(kind, || callback.call(&[]))
}

fn interrupt_or_none(flow: Flow) -> Result<Any> {
    Ok(flow?.unwrap_or_default())
}

/// A new `ffi.VisitInterrupt` carrying `value`.
fn new_interrupt(value: &AnyView<'_>) -> Result<Any> {
    let object = super::runtime_types::new_runtime_object_of("ffi.VisitInterrupt")?;
    let fields = fields_of(object.type_index());
    if let Some(field) = fields.first() {
        reflection::write_field(&object, field, value)?;
    }
    Ok(Any::from_object_ref(object))
}

const VISITOR: Ty = Ty::new(
    "ffi.StructuralVisitor",
    r#"{"type":"ffi.StructuralVisitor"}"#,
);
const INTERRUPT: Ty = Ty::new("ffi.VisitInterrupt", r#"{"type":"ffi.VisitInterrupt"}"#);

/// The visit globals.
pub(crate) fn visit_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.VisitInterrupt", &[ANY], INTERRUPT, |a| {
            new_interrupt(a.view(0))
        }),
        typed(
            "ffi.StructuralVisitorVisit",
            &[VISITOR, ANY_VIEW],
            OPTIONAL_INTERRUPT,
            |a| {
                let (_object, visitor) = visitor_arg(a)?;
                interrupt_or_none(visitor.visit(a.view(1)))
            },
        ),
        typed(
            "ffi.StructuralVisitorDefaultVisit",
            &[VISITOR, ANY_VIEW],
            OPTIONAL_INTERRUPT,
            |a| {
                let (_object, visitor) = visitor_arg(a)?;
                interrupt_or_none(default_visit(visitor, a.view(1)))
            },
        ),
        typed("ffi.StructuralVisitorDefRegionKind", &[VISITOR], INT, |a| {
            let (_object, visitor) = visitor_arg(a)?;
            Ok(Any::from(i64::from(visitor.region())))
        }),
        typed(
            "ffi.StructuralVisitorWithDefRegionKind",
            &[VISITOR, INT, FUNCTION],
            ANY,
            |a| {
                let (_object, visitor) = visitor_arg(a)?;
                with_region_global(a, visitor)
            },
        ),
        typed(
            "ffi.StructuralWalk",
            &[ANY_VIEW, CALLBACKS, CALLBACKS, INT],
            OPTIONAL_INTERRUPT,
            |a| {
                let engine = Engine::Walk {
                    callbacks: callbacks(a, 1, false)?,
                    with_region: callbacks(a, 2, false)?,
                    pre_order: a.get::<i64>(3)? == 0,
                };
                run(engine, a.view(0))
            },
        ),
        typed(
            "ffi.StructuralVisit",
            &[ANY_VIEW, CALLBACKS],
            OPTIONAL_INTERRUPT,
            |a| {
                let engine = Engine::Visit {
                    callbacks: callbacks(a, 1, false)?,
                };
                run(engine, a.view(0))
            },
        ),
    ]
}

fn run(engine: Engine, root: &AnyView<'_>) -> Result<Any> {
    let object = new_visitor(engine)?;
    // SAFETY: a visitor object `object` keeps alive.
    let visitor = unsafe { Traversal::<VisitorVTable>::new(object.as_raw()) };
    interrupt_or_none(visitor.visit(root))
}

#[cfg(test)]
mod tests {
    use pactum_core::any::{Any, AnyView};
    use pactum_core::containers::{Array, List};
    use pactum_core::function::Function;

    fn global(name: &str) -> Function {
        Function::get_global(name).unwrap_or_else(|| panic!("{name} is registered"))
    }

    /// A List holding itself: every traversal stops at the depth limit with a RecursionError
    /// instead of overflowing the stack.
    #[test]
    fn cyclic_graphs_stop_at_the_depth_limit() {
        let list = List::new();
        list.push(Any::from(list.clone()));
        list.push(Any::from(1i64));
        let root = Any::from(list.clone());
        let none = Any::from(Array::new([]));
        let int_callback = Any::from(Array::new([
            Any::from(1i64),
            Any::from(Function::from_packed(|args: &[AnyView<'_>]| {
                args[0].to_any()
            })),
        ]));
        let callbacks = Any::from(Array::new([int_callback]));
        let order = Any::from(1i64);
        let calls = [
            global("ffi.StructuralWalk").call(&[
                *root.as_view(),
                *none.as_view(),
                *none.as_view(),
                *order.as_view(),
            ]),
            global("ffi.StructuralMap").call(&[
                *root.as_view(),
                *callbacks.as_view(),
                *none.as_view(),
                *order.as_view(),
            ]),
        ];
        list.clear();
        for result in calls {
            let error = result.expect_err("a cyclic graph cannot be traversed");
            assert_eq!(error.kind(), "RecursionError");
            assert!(
                error.message().contains("nested too deeply"),
                "{}",
                error.message()
            );
        }
    }
}
