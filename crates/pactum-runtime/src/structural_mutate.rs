//! Structural mutation, as the official runtime does it: `ffi.StructuralMap` (typed replacement
//! callbacks before or after the default descent), `ffi.StructuralMutate` (a matched callback
//! owns the mutation of its value), and the `ffi.StructuralMutator` methods callbacks and hooks
//! use.
//!
//! The default descent mutates a value's children and rebuilds the value when one changed:
//! containers through their `__s_mutate__` hooks (in place, through
//! `__s_maybe_inplace_mutate__`, when the whole path from the root is uniquely owned), other
//! objects through a `__ffi_shallow_copy__` whose fields are written back. Free variables and
//! DAG nodes are rewritten once: the result is recorded in the mutator's variable remap and
//! reused for every later occurrence.

use core::sync::atomic::AtomicU32;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIObject, TVMFFISEqHashKind, TVMFFITypeIndex, def_region_kind, field_flags,
};

use super::builtin::{
    ANY, ANY_VIEW, Args, CALLBACKS, CALLBACKS_WITH_MODE, FUNCTION, INT, Ty, VOID, typed,
};
use super::reflection::{self, field_name, fields_of, read_field, write_field};
use super::registry::BuiltinGlobal;
use super::structural_hooks::{
    Depth, Inplace, Mutation, MutatorVTable, Traversal, TraversalHead, VisitFn, changed_or,
    decode_mutation, encode_mutation, field_region, is_same, raw_entry,
};
use super::structural_visit::{
    Callback, callbacks, first_match, structural_kind, traversal_arg, with_field_region,
    with_region_global,
};
use super::visit_error_context::annotate;
use pactum_core::any::{Any, AnyView, OpaquePtr};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::{ObjectBox, new_object_box};
use pactum_core::object::{ObjectRef, type_index_of_key};

/// The engine of a mutator pactum makes.
enum Engine {
    Map {
        callbacks: Vec<Callback>,
        with_region: Vec<Callback>,
        pre_order: bool,
    },
    Mutate {
        callbacks: Vec<Callback>,
    },
}

/// The body of a mutator object pactum makes: the official head, then the engine and the
/// variable remap (keyed by object address; the key object is kept alive with its value, which
/// is None for "unchanged").
#[repr(C)]
struct MutatorBody {
    head: TraversalHead<MutatorVTable>,
    depth: AtomicU32,
    remap: Mutex<HashMap<usize, (ObjectRef, Option<Any>)>>,
    engine: Engine,
}

static ENGINE_VTABLE: MutatorVTable = MutatorVTable {
    mutate: engine_mutate::<false>,
    maybe_inplace_mutate: engine_mutate::<true>,
    var_remap_get: engine_remap_get,
    var_remap_set: engine_remap_set,
};

impl MutatorBody {
    fn remap(&self) -> MutexGuard<'_, HashMap<usize, (ObjectRef, Option<Any>)>> {
        self.remap.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// # Safety
/// `mutator` must be a live object made by [`new_mutator`].
unsafe fn body<'a>(mutator: *mut TVMFFIObject) -> &'a MutatorBody {
    // SAFETY: forwarded from the caller.
    unsafe { ObjectBox::<MutatorBody>::cell(mutator.cast()) }
}

unsafe extern "C" fn engine_mutate<const INPLACE: bool>(
    mutator: *mut TVMFFIObject,
    value: TVMFFIAny,
) -> TVMFFIAny {
    raw_entry(encode_mutation, || {
        // SAFETY: this vtable is only installed in MutatorBody objects, which the caller keeps
        // alive, and `value` is a borrowed value valid for the call.
        let (body, mutator, value) = unsafe {
            (
                body(mutator),
                Traversal::new(mutator),
                AnyView::from_raw(value),
            )
        };
        let _depth = Depth::enter(&body.depth, "structural mutation")?;
        body.mutate(mutator, &value, INPLACE)
    })
}

fn remap_key(var: &AnyView<'_>) -> Result<ObjectRef> {
    var.get::<ObjectRef>().map_err(|_| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            "Variable-remap key must be an object-backed value",
        )
    })
}

unsafe extern "C" fn engine_remap_get(mutator: *mut TVMFFIObject, var: TVMFFIAny) -> TVMFFIAny {
    raw_entry(encode_mutation, || {
        // SAFETY: as in `engine_mutate`.
        let (body, var) = unsafe { (body(mutator), AnyView::from_raw(var)) };
        let key = remap_key(&var)?;
        // A miss is None; a hit recorded as unchanged is the unchanged marker.
        Ok(match body.remap().get(&(key.as_raw() as usize)) {
            None => Some(Any::none()),
            Some((_, value)) => value.clone(),
        })
    })
}

unsafe extern "C" fn engine_remap_set(
    mutator: *mut TVMFFIObject,
    var: TVMFFIAny,
    mapped: TVMFFIAny,
) -> TVMFFIAny {
    raw_entry(encode_mutation, || {
        // SAFETY: as in `engine_mutate`.
        let (body, var, mapped) = unsafe {
            (
                body(mutator),
                AnyView::from_raw(var),
                AnyView::from_raw(mapped),
            )
        };
        let key = remap_key(&var)?;
        let value = decode_mutation(mapped.to_any()?.into_raw())?;
        let replaced = body.remap().insert(key.as_raw() as usize, (key, value));
        // Released outside the lock: a deleter may run anything.
        drop(replaced);
        // None, not the unchanged marker, is the success result of a set.
        Ok(Some(Any::none()))
    })
}

/// A new mutator object running `engine`.
fn new_mutator(engine: Engine) -> Result<ObjectRef> {
    let body = MutatorBody {
        head: TraversalHead {
            vtable: &ENGINE_VTABLE,
            region: core::cell::UnsafeCell::new(def_region_kind::NONE),
        },
        depth: AtomicU32::new(0),
        remap: Mutex::new(HashMap::new()),
        engine,
    };
    let object = new_object_box(type_index_of_key("ffi.StructuralMutator")?, body);
    // SAFETY: a fresh object whose single strong reference we take.
    Ok(unsafe { ObjectRef::from_raw_owned(object.cast()) })
}

/// The `InplaceMode` integer a callback receives.
fn mode_value(inplace: bool) -> Any {
    Any::from(i64::from(inplace))
}

impl MutatorBody {
    fn mutate(
        &self,
        mutator: Traversal<MutatorVTable>,
        value: &AnyView<'_>,
        inplace: bool,
    ) -> Mutation {
        match &self.engine {
            Engine::Mutate { callbacks } => match first_match(&[callbacks], value.type_index()) {
                Some((_, c)) => {
                    let this = mutator.to_any();
                    let mode = mode_value(inplace);
                    let result = if c.takes_mode {
                        c.function.call(&[*value, *this.as_view(), *mode.as_view()])
                    } else {
                        c.function.call(&[*value, *this.as_view()])
                    };
                    result.map(Some).map_err(|error| annotate(error, value))
                }
                None => default_mutate(mutator, value, inplace),
            },
            Engine::Map {
                callbacks,
                with_region,
                pre_order,
            } => {
                let link = |target: &AnyView<'_>| -> Option<Result<Any>> {
                    let (list, c) = first_match(&[callbacks, with_region], target.type_index())?;
                    let result = if list == 0 {
                        c.function.call(&[*target])
                    } else {
                        let kind = Any::from(i64::from(mutator.region()));
                        c.function.call(&[*target, *kind.as_view()])
                    };
                    Some(result.map_err(|error| annotate(error, target)))
                };
                if *pre_order {
                    let Some(mapped) = link(value) else {
                        return default_mutate(mutator, value, inplace);
                    };
                    let mapped = mapped?;
                    let descended = if is_same(&Some(mapped.clone()), value) {
                        default_mutate(mutator, value, inplace)?
                    } else {
                        let unique = inplace
                            && mapped
                                .as_object_ref()
                                .is_some_and(|object| object.strong_count() == 1);
                        default_mutate(mutator, mapped.as_view(), unique)?
                    };
                    Ok(Some(descended.unwrap_or(mapped)))
                } else {
                    let descended = default_mutate(mutator, value, inplace)?;
                    let result = {
                        let target = match &descended {
                            Some(changed) => *changed.as_view(),
                            None => *value,
                        };
                        link(&target)
                    };
                    match result {
                        None => Ok(descended),
                        Some(mapped) => mapped.map(Some),
                    }
                }
            }
        }
    }
}

/// The type attribute `name` of `type_index` as a hook: a native function or a Function.
enum Hook {
    Native(VisitFn),
    Function(Function),
    Other,
}

fn hook(type_index: i32, name: &str) -> Result<Option<Hook>> {
    let Some(attr) = reflection::type_attr(type_index, name) else {
        return Ok(None);
    };
    Ok(Some(match TVMFFITypeIndex(attr.type_index()) {
        TVMFFITypeIndex::OPAQUE_PTR => {
            let pointer = attr.get::<OpaquePtr>()?.0;
            // SAFETY: an opaque mutation hook is a native function with the official ABI.
            Hook::Native(unsafe {
                core::mem::transmute::<*mut core::ffi::c_void, VisitFn>(pointer)
            })
        }
        TVMFFITypeIndex::FUNCTION => Hook::Function(attr.get::<Function>()?),
        _ => Hook::Other,
    }))
}

fn call_hook(hook: &Hook, mutator: Traversal<MutatorVTable>, value: &AnyView<'_>) -> Mutation {
    match hook {
        // SAFETY: the hook takes a live mutator and a borrowed value and returns an owned raw
        // mutation result.
        Hook::Native(f) => decode_mutation(unsafe { f(mutator.raw(), *value.as_raw()) }),
        Hook::Function(f) => {
            let this = mutator.to_any();
            f.call(&[*this.as_view(), *value]).map(Some)
        }
        Hook::Other => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "__s_mutate__ must be a direct hook pointer or ffi.Function",
        )),
    }
}

/// The default mutation of `value` (in place when `inplace` is allowed for it and its type has
/// an in-place hook); an error leaving it names `value`.
fn default_mutate(
    mutator: Traversal<MutatorVTable>,
    value: &AnyView<'_>,
    inplace: bool,
) -> Mutation {
    let result = match inplace
        .then(|| hook(value.type_index(), "__s_maybe_inplace_mutate__"))
        .transpose()?
        .flatten()
    {
        Some(hook @ (Hook::Native(_) | Hook::Function(_))) => call_hook(&hook, mutator, value),
        _ => default_copy_mutate(mutator, value),
    };
    result.map_err(|error| annotate(error, value))
}

fn default_copy_mutate(mutator: Traversal<MutatorVTable>, value: &AnyView<'_>) -> Mutation {
    if let Some(hook) = hook(value.type_index(), "__s_mutate__")? {
        return call_hook(&hook, mutator, value);
    }
    let owned = value.to_any()?;
    let Some(object) = owned.as_object_ref() else {
        return Ok(Some(owned));
    };
    let kind = structural_kind(object.type_index());
    let free_var = kind == TVMFFISEqHashKind::FREE_VAR;
    let identity = free_var || kind == TVMFFISEqHashKind::DAG_NODE;
    if identity {
        // SAFETY: the vtable function takes this mutator and a borrowed key.
        let recorded = unsafe { (mutator.vtable().var_remap_get)(mutator.raw(), *value.as_raw()) };
        if recorded.type_index != TVMFFITypeIndex::NONE.0 {
            return decode_mutation(recorded);
        }
    }
    if free_var && mutator.region() == def_region_kind::NONE {
        return Ok(None);
    }
    let result = mutate_fields(mutator, object)?;
    if identity && (!free_var || mutator.region() == def_region_kind::PATTERN || result.is_some()) {
        let recorded = encode_mutation(Ok(result.clone()));
        // SAFETY: `recorded` is an owned value we release after the call, which borrows it.
        let recorded = unsafe { Any::from_raw(recorded) };
        // SAFETY: the vtable function takes this mutator and two borrowed values.
        let status = unsafe {
            (mutator.vtable().var_remap_set)(mutator.raw(), *value.as_raw(), *recorded.as_raw())
        };
        decode_mutation(status)?;
    }
    Ok(result)
}

/// Mutates the reflected fields of a shallow copy of `object`: the copy when a field changed.
fn mutate_fields(mutator: Traversal<MutatorVTable>, object: &ObjectRef) -> Mutation {
    let type_index = object.type_index();
    let Some(Hook::Function(copy)) = hook(type_index, "__ffi_shallow_copy__")? else {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "__ffi_shallow_copy__ must be an ffi.Function",
        ));
    };
    let source = Any::from_object_ref(object.clone());
    let copied = copy.call(&[*source.as_view()])?;
    let copy = copied
        .as_object_ref()
        .filter(|c| c.type_index() == type_index && !c.ptr_eq(object))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                "Shallow copy callback must return a distinct object with the same type as its input",
            )
        })?;
    let changed = with_field_region(mutator, type_index, || -> Result<bool> {
        let mut changed = false;
        for field in fields_of(type_index) {
            if field.flags & field_flags::SEQ_HASH_IGNORE != 0 {
                continue;
            }
            let value = read_field(copy, field)?;
            let mutation = match field_region(field.flags) {
                Some(kind) => {
                    mutator.with_region(kind, || mutator.mutate(value.as_view(), Inplace::Disallow))
                }
                None => mutator.mutate(value.as_view(), Inplace::Disallow),
            }?;
            if is_same(&mutation, value.as_view()) {
                continue;
            }
            if field.setter.is_null() {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "Cannot structurally mutate field `{}` of type `{}` because it does not define a setter",
                        field_name(field),
                        copy.type_key()
                    ),
                ));
            }
            let new_value = changed_or(mutation, value.as_view())?;
            write_field(copy, field, new_value.as_view())?;
            changed = true;
        }
        Ok(changed)
    })?;
    Ok(changed.then_some(copied))
}

fn mutator_arg(a: &Args<'_>) -> Result<(ObjectRef, Traversal<MutatorVTable>)> {
    let object = traversal_arg(a, "ffi.StructuralMutator")?;
    // SAFETY: an `ffi.StructuralMutator`, kept alive by `object`, which the caller holds.
    let traversal = unsafe { Traversal::new(object.as_raw()) };
    Ok((object, traversal))
}

/// Runs `engine` over the owned `root`, in place along uniquely owned paths.
fn run(engine: Engine, root: Any) -> Result<Any> {
    let object = new_mutator(engine)?;
    // SAFETY: a mutator object `object` keeps alive.
    let mutator = unsafe { Traversal::<MutatorVTable>::new(object.as_raw()) };
    let mutation = mutator.mutate(root.as_view(), Inplace::Allow { own_references: 0 })?;
    Ok(mutation.unwrap_or(root))
}

const MUTATOR: Ty = Ty::new(
    "ffi.StructuralMutator",
    r#"{"type":"ffi.StructuralMutator"}"#,
);

/// The mutation globals.
pub(crate) fn mutate_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed(
            "ffi.StructuralMutatorMutate",
            &[MUTATOR, ANY_VIEW],
            ANY,
            |a| {
                let (_object, mutator) = mutator_arg(a)?;
                changed_or(mutator.mutate(a.view(1), Inplace::Disallow)?, a.view(1))
            },
        ),
        typed(
            "ffi.StructuralMutatorDefaultMutate",
            &[MUTATOR, ANY_VIEW],
            ANY,
            |a| {
                let (_object, mutator) = mutator_arg(a)?;
                changed_or(default_mutate(mutator, a.view(1), false)?, a.view(1))
            },
        ),
        typed(
            "ffi.StructuralMutatorVarRemapGet",
            &[MUTATOR, ANY_VIEW],
            ANY,
            |a| {
                let (_object, mutator) = mutator_arg(a)?;
                // SAFETY: the vtable function takes this mutator and a borrowed key.
                let raw =
                    unsafe { (mutator.vtable().var_remap_get)(mutator.raw(), *a.view(1).as_raw()) };
                if raw.type_index == TVMFFITypeIndex::UNCHANGED.0 {
                    // SAFETY: the unchanged marker (recorded for an unchanged definition) owns
                    // nothing; it is returned as it is recorded.
                    return Ok(unsafe { Any::from_raw(raw) });
                }
                Ok(decode_mutation(raw)?.unwrap_or_default())
            },
        ),
        typed(
            "ffi.StructuralMutatorVarRemapSet",
            &[MUTATOR, ANY_VIEW, ANY_VIEW],
            VOID,
            |a| {
                let (_object, mutator) = mutator_arg(a)?;
                // SAFETY: the vtable function takes this mutator and two borrowed values.
                let status = unsafe {
                    (mutator.vtable().var_remap_set)(
                        mutator.raw(),
                        *a.view(1).as_raw(),
                        *a.view(2).as_raw(),
                    )
                };
                decode_mutation(status)?;
                Ok(Any::none())
            },
        ),
        typed("ffi.StructuralMutatorDefRegionKind", &[MUTATOR], INT, |a| {
            let (_object, mutator) = mutator_arg(a)?;
            Ok(Any::from(i64::from(mutator.region())))
        }),
        typed(
            "ffi.StructuralMutatorWithDefRegionKind",
            &[MUTATOR, INT, FUNCTION],
            ANY,
            |a| {
                let (_object, mutator) = mutator_arg(a)?;
                with_region_global(a, mutator)
            },
        ),
        typed(
            "ffi.StructuralMap",
            &[ANY, CALLBACKS, CALLBACKS, INT],
            ANY,
            |a| {
                let engine = Engine::Map {
                    callbacks: callbacks(a, 1, false)?,
                    with_region: callbacks(a, 2, false)?,
                    pre_order: a.get::<i64>(3)? == 0,
                };
                run(engine, a.owned(0)?)
            },
        ),
        typed(
            "ffi.StructuralMutate",
            &[ANY, CALLBACKS_WITH_MODE],
            ANY,
            |a| {
                let engine = Engine::Mutate {
                    callbacks: callbacks(a, 1, true)?,
                };
                run(engine, a.owned(0)?)
            },
        ),
    ]
}
