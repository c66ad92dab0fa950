//! `ffi.reflection.AccessStep` and `ffi.reflection.AccessPath`, the paths structural
//! comparison reports mismatches with: a step is a kind and a key (a field name, an index or a
//! map key), a path a linked list from the innermost step to the root (`parent`, `step`,
//! `depth`). Their objects are the runtime types of `runtime_types.rs`; this module builds and
//! walks them and gives `AccessPath` the official methods (`_root`, `_extend`, `_attr`, ...,
//! `_to_steps`, `_path_equal`, `_is_prefix_of`) and both types their `__ffi_repr__` hooks:
//! `<root>` followed by `.name`, `[index]`, `[key]`, `[<missing:"name">]`, `[<missing:index>]`
//! or `[<missing:key>]` per step, keys as `ffi.ReprPrint` shows them.

use super::builtin::{
    ACCESS_PATH, ACCESS_STEP, ANY, ARRAY_OF_ACCESS_STEP, Args, BOOL, INT, OBJECT, STR, Ty, typed,
};
use super::reflection::{read_named, write_named};
use super::runtime_types::{
    ACCESS_PATH_TYPE, ACCESS_STEP_TYPE, RuntimeMethod, TypeExtras, new_runtime_object,
};
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::Array;
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::any_equal;
use pactum_core::object::{ObjectRef, type_index_of_key};

/// The kind of an access step, numbered as the official `AccessKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessKind {
    Attr = 0,
    ArrayItem = 1,
    MapItem = 2,
    AttrMissing = 3,
    ArrayItemMissing = 4,
    MapItemMissing = 5,
}

/// A new `AccessStep`.
pub(crate) fn new_step(kind: AccessKind, key: &Any) -> Result<ObjectRef> {
    let step = new_runtime_object(ACCESS_STEP_TYPE)?;
    write_named(&step, "kind", &AnyView::from(kind as i64))?;
    write_named(&step, "key", key.as_view())?;
    Ok(step)
}

/// The root path (no parent, no step, depth 0).
pub(crate) fn root() -> Result<ObjectRef> {
    new_runtime_object(ACCESS_PATH_TYPE)
}

/// `path` followed by `step`.
pub(crate) fn extend(path: &ObjectRef, step: &ObjectRef) -> Result<ObjectRef> {
    let depth = node(path)?.depth;
    let extended = new_runtime_object(ACCESS_PATH_TYPE)?;
    write_named(&extended, "parent", &AnyView::from(path))?;
    write_named(&extended, "step", &AnyView::from(step))?;
    write_named(&extended, "depth", &AnyView::from(depth + 1))?;
    Ok(extended)
}

/// The path from the root through `steps` (outermost first).
pub(crate) fn from_steps(steps: impl IntoIterator<Item = ObjectRef>) -> Result<ObjectRef> {
    steps
        .into_iter()
        .try_fold(root()?, |path, step| extend(&path, &step))
}

/// One link of a path.
struct Node {
    parent: Option<ObjectRef>,
    step: Option<ObjectRef>,
    depth: i64,
}

fn node(path: &ObjectRef) -> Result<Node> {
    let parent = read_named(path, "parent")?;
    let step = read_named(path, "step")?;
    Ok(Node {
        parent: parent.as_object_ref().cloned(),
        step: step.as_object_ref().cloned(),
        depth: read_named(path, "depth")?.get::<i64>()?,
    })
}

/// The official failed-check error of a malformed path.
fn broken(check: &str) -> Error {
    Error::new(
        ErrorKind::INTERNAL_ERROR,
        format!("Check failed: ({check}) is false: "),
    )
}

/// The link above `node`, which must be a path.
fn parent_of(node: &Node, path_type: i32) -> Result<Option<ObjectRef>> {
    match &node.parent {
        None => Ok(None),
        Some(parent) if parent.type_index() == path_type => Ok(Some(parent.clone())),
        Some(_) => Err(broken("current != nullptr")),
    }
}

fn path_type() -> Result<i32> {
    type_index_of_key("ffi.reflection.AccessPath")
}

/// The steps of `path`, outermost first.
pub(crate) fn to_steps(path: &ObjectRef) -> Result<Vec<ObjectRef>> {
    let path_type = path_type()?;
    let mut steps = Vec::new();
    let mut current = node(path)?;
    while let Some(parent) = parent_of(&current, path_type)? {
        steps.push(
            current
                .step
                .clone()
                .ok_or_else(|| broken("current->step.has_value()"))?,
        );
        current = node(&parent)?;
    }
    steps.reverse();
    Ok(steps)
}

fn step_equal(lhs: &ObjectRef, rhs: &ObjectRef) -> Result<bool> {
    Ok(
        read_named(lhs, "kind")?.get::<i64>()? == read_named(rhs, "kind")?.get::<i64>()?
            && any_equal(
                read_named(lhs, "key")?.as_view(),
                read_named(rhs, "key")?.as_view(),
            ),
    )
}

/// Whether two paths have the same steps.
fn path_equal(lhs: &ObjectRef, rhs: &ObjectRef) -> Result<bool> {
    if lhs.ptr_eq(rhs) {
        return Ok(true);
    }
    let path_type = path_type()?;
    let (mut l, mut r) = (node(lhs)?, node(rhs)?);
    if l.depth != r.depth {
        return Ok(false);
    }
    while let Some(l_parent) = parent_of(&l, path_type)? {
        let r_parent =
            parent_of(&r, path_type)?.ok_or_else(|| broken("rhs->parent.has_value()"))?;
        let (Some(l_step), Some(r_step)) = (&l.step, &r.step) else {
            return Err(broken("lhs->step.has_value()"));
        };
        if !step_equal(l_step, r_step)? {
            return Ok(false);
        }
        if l_parent.ptr_eq(&r_parent) {
            return Ok(true);
        }
        (l, r) = (node(&l_parent)?, node(&r_parent)?);
    }
    Ok(true)
}

/// Whether `prefix` is `path` or one of its ancestors (by steps).
fn is_prefix_of(prefix: &ObjectRef, path: &ObjectRef) -> Result<bool> {
    let depth = node(prefix)?.depth;
    let path_type = path_type()?;
    let mut current = path.clone();
    let mut link = node(&current)?;
    if depth > link.depth {
        return Ok(false);
    }
    while link.depth > depth {
        current =
            parent_of(&link, path_type)?.ok_or_else(|| broken("rhs_path->parent.has_value()"))?;
        link = node(&current)?;
    }
    path_equal(prefix, &current)
}

/// An `AccessPath` method: its first argument, checked to be a path, then the others.
fn path_method(
    name: &'static str,
    global: &'static str,
    params: &'static [Ty],
    ret: Ty,
    body: impl for<'a> Fn(&ObjectRef, &Args<'a>) -> Result<Any> + Send + Sync + 'static,
) -> RuntimeMethod {
    RuntimeMethod {
        name,
        is_static: false,
        global: typed(global, params, ret, move |a| {
            let path = a.object_of_type(0, path_type()?)?;
            body(&path, a)
        }),
    }
}

/// An `AccessPath` method extending the path by a step of `kind` keyed by its argument.
fn extend_method(
    name: &'static str,
    global: &'static str,
    params: &'static [Ty],
    kind: AccessKind,
) -> RuntimeMethod {
    path_method(name, global, params, ACCESS_PATH, move |path, a| {
        let key = match kind {
            AccessKind::ArrayItem | AccessKind::ArrayItemMissing => Any::from(a.get::<i64>(1)?),
            AccessKind::Attr | AccessKind::AttrMissing => {
                Any::from(a.get::<pactum_core::String>(1)?)
            }
            AccessKind::MapItem | AccessKind::MapItemMissing => a.owned(1)?,
        };
        Ok(Any::from_object_ref(extend(path, &new_step(kind, &key)?)?))
    })
}

/// The methods and repr hook of `ffi.reflection.AccessPath`.
pub(crate) fn access_path_extras() -> TypeExtras {
    const PATH_AND_STR: &[Ty] = &[ACCESS_PATH, STR];
    const PATH_AND_INT: &[Ty] = &[ACCESS_PATH, INT];
    const PATH_AND_ANY: &[Ty] = &[ACCESS_PATH, ANY];
    const TWO_PATHS: &[Ty] = &[ACCESS_PATH, ACCESS_PATH];
    let methods = vec![
        RuntimeMethod {
            name: "_root",
            is_static: true,
            global: typed("ffi.reflection.AccessPath._root", &[], ACCESS_PATH, |_| {
                root().map(Any::from_object_ref)
            }),
        },
        path_method(
            "_extend",
            "ffi.reflection.AccessPath._extend",
            &[ACCESS_PATH, ACCESS_STEP],
            ACCESS_PATH,
            |path, a| {
                let step = a.object_of_type(1, type_index_of_key("ffi.reflection.AccessStep")?)?;
                extend(path, &step).map(Any::from_object_ref)
            },
        ),
        extend_method(
            "_attr",
            "ffi.reflection.AccessPath._attr",
            PATH_AND_STR,
            AccessKind::Attr,
        ),
        extend_method(
            "_array_item",
            "ffi.reflection.AccessPath._array_item",
            PATH_AND_INT,
            AccessKind::ArrayItem,
        ),
        extend_method(
            "_map_item",
            "ffi.reflection.AccessPath._map_item",
            PATH_AND_ANY,
            AccessKind::MapItem,
        ),
        extend_method(
            "_attr_missing",
            "ffi.reflection.AccessPath._attr_missing",
            PATH_AND_STR,
            AccessKind::AttrMissing,
        ),
        extend_method(
            "_array_item_missing",
            "ffi.reflection.AccessPath._array_item_missing",
            PATH_AND_INT,
            AccessKind::ArrayItemMissing,
        ),
        extend_method(
            "_map_item_missing",
            "ffi.reflection.AccessPath._map_item_missing",
            PATH_AND_ANY,
            AccessKind::MapItemMissing,
        ),
        path_method(
            "_is_prefix_of",
            "ffi.reflection.AccessPath._is_prefix_of",
            TWO_PATHS,
            BOOL,
            |path, a| {
                Ok(Any::from(is_prefix_of(
                    path,
                    &a.object_of_type(1, path_type()?)?,
                )?))
            },
        ),
        path_method(
            "_to_steps",
            "ffi.reflection.AccessPath._to_steps",
            &[ACCESS_PATH],
            ARRAY_OF_ACCESS_STEP,
            |path, _| {
                let steps = to_steps(path)?.into_iter().map(Any::from_object_ref);
                Ok(Any::from(steps.collect::<Array>()))
            },
        ),
        path_method(
            "_path_equal",
            "ffi.reflection.AccessPath._path_equal",
            TWO_PATHS,
            BOOL,
            |path, a| {
                Ok(Any::from(path_equal(
                    path,
                    &a.object_of_type(1, path_type()?)?,
                )?))
            },
        ),
    ];
    TypeExtras {
        methods,
        attrs: vec![("__ffi_repr__", Any::from(repr_hook(path_repr)))],
    }
}

/// The repr hook of `ffi.reflection.AccessStep`.
pub(crate) fn access_step_extras() -> TypeExtras {
    TypeExtras {
        methods: Vec::new(),
        attrs: vec![("__ffi_repr__", Any::from(repr_hook(step_repr)))],
    }
}

/// An `__ffi_repr__` hook: `(object, fn_repr) -> str`.
fn repr_hook(print: fn(&ObjectRef, &Function) -> Result<std::string::String>) -> Function {
    typed("__ffi_repr__", &[OBJECT, ANY], STR, move |a| {
        let object = a.get::<ObjectRef>(0)?;
        let fn_repr = a.get::<Function>(1)?;
        Ok(Any::from(print(&object, &fn_repr)?))
    })
    .function
}

fn repr_of(fn_repr: &Function, value: &Any) -> Result<std::string::String> {
    fn_repr
        .call(&[*value.as_view()])?
        .get::<std::string::String>()
}

fn step_repr(step: &ObjectRef, fn_repr: &Function) -> Result<std::string::String> {
    let kind = read_named(step, "kind")?.get::<i64>()?;
    let key = read_named(step, "key")?;
    let text = match kind {
        0 => format!(".{}", key.get::<std::string::String>()?),
        1 => format!("[{}]", key.get::<i64>()?),
        2 => format!("[{}]", repr_of(fn_repr, &key)?),
        4 => format!("[<missing:{}>]", key.get::<i64>()?),
        3 | 5 => format!("[<missing:{}>]", repr_of(fn_repr, &key)?),
        _ => {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("access step of unknown kind {kind}"),
            ));
        }
    };
    Ok(text)
}

fn path_repr(path: &ObjectRef, fn_repr: &Function) -> Result<std::string::String> {
    let mut text = std::string::String::from("<root>");
    for step in to_steps(path)? {
        text.push_str(&repr_of(fn_repr, &Any::from_object_ref(step))?);
    }
    Ok(text)
}

/// The pair of paths `ffi.GetFirstStructuralMismatch` returns: a two-element Array (the
/// official `Tuple`).
pub(crate) fn path_pair(lhs: ObjectRef, rhs: ObjectRef) -> Any {
    Any::from(
        [lhs, rhs]
            .into_iter()
            .map(Any::from_object_ref)
            .collect::<Array>(),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn access_kinds_are_the_official_numbers() {
        use super::AccessKind::*;
        let kinds = [
            Attr,
            ArrayItem,
            MapItem,
            AttrMissing,
            ArrayItemMissing,
            MapItemMissing,
        ];
        for (number, kind) in kinds.into_iter().enumerate() {
            assert_eq!(kind as usize, number);
        }
    }
}
