//! `ffi.VisitErrorContext`: the objects an error passed through on its way out of a structural
//! traversal, innermost first, and `ffi.VisitErrorContext.FindAccessPaths`, which finds where
//! that chain of objects sits inside a root value, as `ffi.reflection.AccessPath`s.

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use super::builtin::{ACCESS_PATHS, BOOL, OBJECT, Ty, typed};
use super::reflection::{field_name, fields_of, read_field, write_field};
use super::registry::BuiltinGlobal;
use super::runtime_types::new_runtime_object_of;
use super::structural_hooks::check_depth;
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, Result};
use pactum_core::object::{ObjectRef, TypeInfo};

const CONTEXT_KEY: &str = "ffi.VisitErrorContext";

/// `error` with `node` (when it is an object) appended to its visit error context: the
/// context's list grows in place, or a new context (keeping any other payload as
/// `prev_error_context`) is attached to a copy of the error.
pub(crate) fn annotate(error: Error, node: &AnyView<'_>) -> Error {
    let Some(Ok(node)) = node.object_ptr().map(|_| node.to_any()) else {
        return error;
    };
    match try_annotate(&error, node) {
        Ok(Some(annotated)) => annotated,
        // A context that cannot be extended leaves the error as it was.
        Ok(None) | Err(_) => error,
    }
}

fn try_annotate(error: &Error, node: Any) -> Result<Option<Error>> {
    let previous = error.extra_context();
    if let Some(context) = &previous
        && context.type_key() == CONTEXT_KEY
    {
        let fields = fields_of(context.type_index());
        if let Some(field) = fields.first() {
            read_field(context, field)?.get::<List>()?.push(node);
        }
        return Ok(None);
    }
    let context = new_runtime_object_of(CONTEXT_KEY)?;
    let fields = fields_of(context.type_index());
    let values = [
        Any::from(List::from_values([node])),
        previous.map(Any::from_object_ref).unwrap_or_default(),
    ];
    for (field, value) in fields.iter().zip(values) {
        write_field(&context, field, value.as_view())?;
    }
    Ok(Some(Error::with_parts(
        error.kind().as_bytes(),
        error.message().as_bytes(),
        error.backtrace().as_bytes(),
        error.cause(),
        Some(context),
    )))
}

/// One step of a path being searched (the official `AccessStep` kinds).
#[derive(Clone)]
enum Step {
    Attr(&'static str),
    Item(i64),
    Key(Any),
}

struct Finder {
    /// The context's objects, outermost first, without repeats in a row.
    records: Vec<ObjectRef>,
    prefix: bool,
    matched: usize,
    steps: Vec<Step>,
    results: Vec<Any>,
    depth: u32,
}

impl Finder {
    fn any(&mut self, value: Any) -> Result<()> {
        check_depth(self.depth, "FindAccessPaths")?;
        self.depth += 1;
        let result = self.any_at_depth(value);
        self.depth -= 1;
        result
    }

    fn any_at_depth(&mut self, value: Any) -> Result<()> {
        match TVMFFITypeIndex(value.type_index()) {
            TVMFFITypeIndex::ARRAY => {
                let items: Vec<Any> = value.get::<Array>()?.iter().cloned().collect();
                self.sequence(items)
            }
            TVMFFITypeIndex::LIST => self.sequence(value.get::<List>()?.to_vec()),
            TVMFFITypeIndex::MAP => self.mapping(value.get::<Map>()?.entries()),
            TVMFFITypeIndex::DICT => self.mapping(value.get::<Dict>()?.entries()),
            _ => match value.as_object_ref() {
                Some(object) => self.object(object),
                None => Ok(()),
            },
        }
    }

    fn sequence(&mut self, items: Vec<Any>) -> Result<()> {
        for (i, item) in items.into_iter().enumerate() {
            if !item.is_none() {
                self.descend(Step::Item(i as i64), item)?;
            }
        }
        Ok(())
    }

    fn mapping(&mut self, entries: Vec<(Any, Any)>) -> Result<()> {
        for (key, item) in entries {
            if !key.is_none() && !item.is_none() {
                self.descend(Step::Key(key), item)?;
            }
        }
        Ok(())
    }

    fn descend(&mut self, step: Step, value: Any) -> Result<()> {
        self.steps.push(step);
        let result = self.any(value);
        self.steps.pop();
        result
    }

    fn object(&mut self, node: &ObjectRef) -> Result<()> {
        let has_metadata =
            TypeInfo::of(node.type_index()).is_some_and(|info| !info.as_raw().metadata.is_null());
        if !has_metadata {
            return Ok(());
        }
        let matched_step = self.matched < self.records.len()
            && node.ptr_eq(&self.records[self.records.len() - 1 - self.matched]);
        if matched_step {
            self.matched += 1;
            if self.matched == self.records.len() {
                let path = self.path()?;
                self.results.push(path);
                self.matched -= 1;
                return Ok(());
            }
        }
        let before = self.results.len();
        for field in fields_of(node.type_index()) {
            let value = read_field(node, field)?;
            self.descend(Step::Attr(field_name(field)), value)?;
        }
        if self.prefix
            && self.matched > 0
            && self.matched < self.records.len()
            && !self.steps.is_empty()
            && self.results.len() == before
        {
            let path = self.path()?;
            self.results.push(path);
        }
        if matched_step {
            self.matched -= 1;
        }
        Ok(())
    }

    /// The current path as an `ffi.reflection.AccessPath`.
    fn path(&self) -> Result<Any> {
        let mut path = access_path(Any::none(), Any::none(), 0)?;
        for (depth, step) in self.steps.iter().enumerate() {
            let (kind, key) = match step {
                Step::Attr(name) => (0, Any::from(pactum_core::String::from(*name))),
                Step::Item(index) => (1, Any::from(*index)),
                Step::Key(key) => (2, key.clone()),
            };
            let step = new_runtime_object_of("ffi.reflection.AccessStep")?;
            let fields = fields_of(step.type_index());
            for (field, value) in fields.iter().zip([Any::from(kind), key]) {
                write_field(&step, field, value.as_view())?;
            }
            path = access_path(path, Any::from_object_ref(step), depth as i64 + 1)?;
        }
        Ok(path)
    }
}

fn access_path(parent: Any, step: Any, depth: i64) -> Result<Any> {
    let path = new_runtime_object_of("ffi.reflection.AccessPath")?;
    let fields = fields_of(path.type_index());
    for (field, value) in fields.iter().zip([parent, step, Any::from(depth)]) {
        write_field(&path, field, value.as_view())?;
    }
    Ok(Any::from_object_ref(path))
}

const CONTEXT: Ty = Ty::new(CONTEXT_KEY, r#"{"type":"ffi.VisitErrorContext"}"#);

/// `ffi.VisitErrorContext.FindAccessPaths`.
pub(crate) fn visit_error_context_globals() -> Vec<BuiltinGlobal> {
    vec![typed(
        "ffi.VisitErrorContext.FindAccessPaths",
        &[OBJECT, CONTEXT, BOOL],
        ACCESS_PATHS,
        |a| {
            let root = a.get::<ObjectRef>(0)?;
            let context = a.get::<ObjectRef>(1)?;
            if context.type_key() != CONTEXT_KEY {
                return Err(a.mismatch(1));
            }
            let prefix = a.get::<bool>(2)?;
            let fields = fields_of(context.type_index());
            let pattern = match fields.first() {
                Some(field) => read_field(&context, field)?.get::<List>()?.to_vec(),
                None => Vec::new(),
            };
            let mut records: Vec<ObjectRef> = Vec::new();
            for entry in pattern.iter().filter_map(Any::as_object_ref) {
                if records.last().is_some_and(|last| last.ptr_eq(entry)) {
                    continue;
                }
                records.push(entry.clone());
            }
            let mut finder = Finder {
                records,
                prefix,
                matched: 0,
                steps: Vec::new(),
                results: Vec::new(),
                depth: 0,
            };
            finder.object(&root)?;
            Ok(Any::from(Array::new(finder.results)))
        },
    )]
}
