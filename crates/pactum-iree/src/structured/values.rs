//! Reading user values: the elements of arrays and lists, maps and dicts by key, strings; and
//! how a value reads in messages.

use std::fmt;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use super::path::{Path, error_at};
use crate::tensor_fit::describe_tensor;
use pactum::any::{Any, AnyView};
use pactum::containers::{Array, Dict, List, Map};
use pactum::error::{Error, ErrorKind, Result};
use pactum::tensor_view::TensorView;

pub(super) fn mismatch(
    path: &Path<'_>,
    expected: &impl fmt::Display,
    value: &AnyView<'_>,
) -> Error {
    error_at(
        ErrorKind::TYPE_ERROR,
        path,
        format_args!("expected {expected}, got {}", describe(value)),
    )
}

/// How a value reads in messages: `int`, `str`, `list of 3`, `dict`, `ndarray<f64, [2, 3]>`.
pub(super) fn describe(value: &AnyView<'_>) -> String {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::NONE => "None".into(),
        TVMFFITypeIndex::INT => "int".into(),
        TVMFFITypeIndex::BOOL => "bool".into(),
        TVMFFITypeIndex::FLOAT => "float".into(),
        TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
            "str".into()
        }
        TVMFFITypeIndex::BYTE_ARRAY_PTR | TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES => {
            "bytes".into()
        }
        TVMFFITypeIndex::DL_TENSOR_PTR | TVMFFITypeIndex::TENSOR => match value.get::<TensorView>()
        {
            Ok(view) => describe_tensor(&view),
            Err(_) => "tensor".into(),
        },
        TVMFFITypeIndex::ARRAY | TVMFFITypeIndex::LIST => match sequence(value) {
            Some(items) => format!("list of {}", items.len()),
            None => "list".into(),
        },
        TVMFFITypeIndex::MAP | TVMFFITypeIndex::DICT => "dict".into(),
        TVMFFITypeIndex::FUNCTION => "function".into(),
        _ => value.type_key(),
    }
}

/// The elements of an `Array` (borrowed from it) or a `List` (copied, since a list can
/// change under us).
pub(super) enum Items {
    Array(Array),
    List(Vec<Any>),
}

impl core::ops::Deref for Items {
    type Target = [Any];

    fn deref(&self) -> &[Any] {
        match self {
            Items::Array(array) => array.as_slice(),
            Items::List(items) => items,
        }
    }
}

impl IntoIterator for Items {
    type Item = Any;
    type IntoIter = std::vec::IntoIter<Any>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Items {
    type Item = &'a Any;
    type IntoIter = core::slice::Iter<'a, Any>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl Items {
    pub(super) fn into_vec(self) -> Vec<Any> {
        match self {
            Items::Array(array) => array.as_slice().to_vec(),
            Items::List(items) => items,
        }
    }
}

/// The elements of an `Array` or `List`; `None` for anything else.
pub(super) fn sequence(value: &AnyView<'_>) -> Option<Items> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::ARRAY => value.get::<Array>().ok().map(Items::Array),
        TVMFFITypeIndex::LIST => value.get::<List>().ok().map(|l| Items::List(l.to_vec())),
        _ => None,
    }
}

/// A `Map` or `Dict` argument, read by key.
pub(super) enum Mapping {
    Map(Map),
    Dict(Dict),
}

impl Mapping {
    pub(super) fn of(value: &AnyView<'_>) -> Option<Mapping> {
        match TVMFFITypeIndex(value.type_index()) {
            TVMFFITypeIndex::MAP => value.get::<Map>().ok().map(Mapping::Map),
            TVMFFITypeIndex::DICT => value.get::<Dict>().ok().map(Mapping::Dict),
            _ => None,
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Mapping::Map(map) => map.len(),
            Mapping::Dict(dict) => dict.len(),
        }
    }

    /// Calls `visit` with the value under `key`, which the caller expects at position `hint`
    /// (the record's order, often the user's too); `None` when there is none.
    pub(super) fn with<R>(
        &self,
        key: &Any,
        hint: usize,
        visit: impl FnOnce(&AnyView<'_>) -> R,
    ) -> Option<R> {
        match self {
            Mapping::Map(map) => map
                .get_ref_hinted(key.as_view(), hint)
                .map(|value| visit(value.as_view())),
            Mapping::Dict(dict) => dict.get(key.as_view()).map(|value| visit(value.as_view())),
        }
    }

    pub(super) fn entries(&self) -> Vec<(Any, Any)> {
        match self {
            Mapping::Map(map) => map.entries(),
            Mapping::Dict(dict) => dict.entries(),
        }
    }
}

pub(super) fn string_of(value: &AnyView<'_>) -> Option<String> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
            value.get::<String>().ok()
        }
        _ => None,
    }
}

/// Visits the values of `mapping` under `keys`, in order, checking that it has exactly those
/// keys; the error names the first missing or unexpected key.
pub(super) fn for_each_value(
    mapping: &Mapping,
    keys: &[(Any, String)],
    path: &Path<'_>,
    mut visit: impl FnMut(usize, &AnyView<'_>) -> Result<()>,
) -> Result<()> {
    if mapping.len() != keys.len() {
        return Err(key_mismatch(mapping, keys, path));
    }
    for (i, (key, name)) in keys.iter().enumerate() {
        mapping
            .with(key, i, |value| visit(i, value))
            .unwrap_or_else(|| Err(missing_key(path, name)))?;
    }
    Ok(())
}

#[cold]
pub(super) fn missing_key(path: &Path<'_>, name: &str) -> Error {
    error_at(
        ErrorKind::KEY_ERROR,
        path,
        format_args!("missing key {name:?}"),
    )
}

/// The error for a mapping whose key count differs from the signature's.
#[cold]
pub(super) fn key_mismatch(mapping: &Mapping, keys: &[(Any, String)], path: &Path<'_>) -> Error {
    for (key, name) in keys {
        if mapping.with(key, 0, |_| ()).is_none() {
            return missing_key(path, name);
        }
    }
    for (key, _) in mapping.entries() {
        let known =
            string_of(key.as_view()).is_some_and(|text| keys.iter().any(|(_, name)| *name == text));
        if !known {
            let expected: Vec<String> = keys.iter().map(|(_, n)| format!("{n:?}")).collect();
            return error_at(
                ErrorKind::KEY_ERROR,
                path,
                format_args!(
                    "unexpected key {} (expected {})",
                    format_key(key.as_view()),
                    expected.join(", ")
                ),
            );
        }
    }
    error_at(ErrorKind::KEY_ERROR, path, "duplicate keys")
}

fn format_key(key: &AnyView<'_>) -> String {
    match string_of(key) {
        Some(text) => format!("{text:?}"),
        None => format!("{key:?}"),
    }
}
