//! One value each way: a user value to its flat form against a [`Slot`] ([`pack`]), a flat
//! result back to its user-level form ([`unpack`]), and values without a signature
//! ([`pack_dynamic`]).

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use super::path::{Path, error_at};
use super::plan::{Node, Slot};
use super::values::{Mapping, describe, key_mismatch, mismatch, missing_key, sequence, string_of};
use crate::signature::{ScalarType, Signedness};
use crate::tensor_fit::{self, Verdict, describe_tensor};
use pactum::any::{Any, AnyView};
use pactum::containers::{Array, Map, same_key};
use pactum::error::{Error, ErrorKind, Result};
use pactum::tensor_view::TensorView;

/// Up to this many keys, a map argument is matched in one pass over its entries.
const SCAN_LIMIT: usize = 16;

/// The deepest a value is walked where no signature bounds it: values without a signature,
/// reference arrays of unknown rank, and the dims of reference-array results. The walk
/// recurses once per level, and a list may contain itself, so without a bound a hostile value
/// would overflow the stack. The same bound as the signature parsers' nesting limit.
const MAX_VALUE_DEPTH: usize = 256;

#[cold]
fn too_deep(path: &Path<'_>) -> Error {
    error_at(
        ErrorKind::VALUE_ERROR,
        path,
        format_args!(
            "values nested deeper than {MAX_VALUE_DEPTH} levels (a list or dict that contains \
             itself?)"
        ),
    )
}

/// Conversion settings shared by every call.
#[derive(Clone, Copy, Default)]
pub(super) struct Options {
    pub(super) allow_casts: bool,
}

fn int_range(bits: u8, signedness: Signedness) -> (i128, i128) {
    let bits = u32::from(bits.clamp(1, 64));
    match signedness {
        Signedness::Unsigned => (0, (1i128 << bits) - 1),
        // `i1` is a flag: 0 or 1, as `bool` reads it.
        _ if bits == 1 => (0, 1),
        _ => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
    }
}

/// One user value to its flat form.
pub(super) fn pack(
    slot: &Slot,
    value: &AnyView<'_>,
    path: &Path<'_>,
    options: Options,
) -> Result<Any> {
    let index = TVMFFITypeIndex(value.type_index());
    match &slot.node {
        Node::Scalar(scalar) => pack_scalar(*scalar, slot, value, path),
        Node::Tensor {
            element,
            dtype,
            dims,
        } => {
            if !matches!(
                index,
                TVMFFITypeIndex::DL_TENSOR_PTR | TVMFFITypeIndex::TENSOR
            ) {
                return Err(mismatch(path, &slot.expected, value));
            }
            let view: TensorView = value.get()?;
            if tensor_fit::fits_as_is(*dtype, dims.as_deref(), &view) {
                return value.to_any();
            }
            match tensor_fit::assess_parts(*element, dims.as_deref(), &view) {
                Verdict::AsIs => value.to_any(),
                Verdict::Convert(conversion) => {
                    if let (Some((from, to)), false) = (conversion.cast, options.allow_casts) {
                        return Err(error_at(
                            ErrorKind::TYPE_ERROR,
                            path,
                            format_args!(
                                "expected {}, got {} (casting {from} to {to} needs allow_casts)",
                                slot.expected,
                                describe_tensor(&view)
                            ),
                        ));
                    }
                    tensor_fit::convert(&view, &conversion)
                        .map(Any::from)
                        .map_err(|e| error_at(ErrorKind::custom(&e.kind()), path, e.message()))
                }
                Verdict::Incompatible(reason) => Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!(
                        "expected {}, got {}: {reason}",
                        slot.expected,
                        describe_tensor(&view)
                    ),
                )),
            }
        }
        Node::RefArray { element, dims } => {
            let mut shape = Vec::new();
            let mut values = Vec::new();
            flatten_ref_array(
                element,
                dims.as_deref(),
                value,
                path,
                0,
                &mut shape,
                &mut values,
                options,
            )?;
            let dims = Array::new(shape.into_iter().map(|extent| Any::from(extent as i64)));
            Ok(Array::new([Any::from(Array::new(values)), Any::from(dims)]).into())
        }
        Node::String => match string_of(value) {
            Some(text) => Ok(Array::new(
                text.as_bytes()
                    .iter()
                    .map(|&b| Any::from(i64::from(b as i8))),
            )
            .into()),
            None => Err(mismatch(path, &slot.expected, value)),
        },
        Node::Opaque => {
            if index == TVMFFITypeIndex::NONE || index.0 >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
                value.to_any()
            } else {
                Err(mismatch(path, &"a reference (an object or None)", value))
            }
        }
        Node::Sequence(slots) => {
            let Some(items) = sequence(value) else {
                return Err(mismatch(path, &slot.expected, value));
            };
            if items.len() != slots.len() {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!(
                        "expected a list of {} values, got {}",
                        slots.len(),
                        items.len()
                    ),
                ));
            }
            Array::try_from_fn(items.len(), |i| {
                pack(&slots[i], items[i].as_view(), &path.index(i), options)
            })
            .map(Any::from)
        }
        Node::Dict(keys, slots) => {
            let Some(mapping) = Mapping::of(value) else {
                return Err(mismatch(path, &slot.expected, value));
            };
            if mapping.len() != keys.len() {
                return Err(key_mismatch(&mapping, keys, path));
            }
            if let Mapping::Map(map) = &mapping
                && keys.len() <= SCAN_LIMIT
            {
                // One pass over a small map's entries, matching keys by value (a word compare
                // for short strings), finds every slot whatever order the user wrote.
                let mut found: [Option<&Any>; SCAN_LIMIT] = [None; SCAN_LIMIT];
                for (key, value) in map {
                    let index = keys
                        .iter()
                        .position(|(expected, _)| same_key(expected.as_view(), key.as_view()));
                    match index {
                        Some(i) if found[i].is_none() => found[i] = Some(value),
                        _ => return Err(key_mismatch(&mapping, keys, path)),
                    }
                }
                return Array::try_from_fn(keys.len(), |i| match found[i] {
                    Some(value) => pack(&slots[i], value.as_view(), &path.key(&keys[i].1), options),
                    None => Err(missing_key(path, &keys[i].1)),
                })
                .map(Any::from);
            }
            Array::try_from_fn(keys.len(), |i| {
                let (key, name) = &keys[i];
                mapping
                    .with(key, i, |value| {
                        pack(&slots[i], value, &path.key(name), options)
                    })
                    .unwrap_or_else(|| Err(missing_key(path, name)))
            })
            .map(Any::from)
        }
        Node::TypedList(element) => {
            let Some(items) = sequence(value) else {
                return Err(mismatch(path, &slot.expected, value));
            };
            Array::try_from_fn(items.len(), |i| {
                pack(element, items[i].as_view(), &path.index(i), options)
            })
            .map(Any::from)
        }
        Node::Null => {
            if index == TVMFFITypeIndex::NONE {
                Ok(Any::none())
            } else {
                Err(mismatch(path, &"None (an empty slot)", value))
            }
        }
        Node::Unknown => value.to_any(),
    }
}

fn pack_scalar(
    scalar: ScalarType,
    slot: &Slot,
    value: &AnyView<'_>,
    path: &Path<'_>,
) -> Result<Any> {
    match (scalar, TVMFFITypeIndex(value.type_index())) {
        (ScalarType::Int { bits, signedness }, TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL) => {
            let number = value.get::<i64>()?;
            let (low, high) = int_range(bits, signedness);
            if !(low..=high).contains(&i128::from(number)) {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!("{number} does not fit {}", slot.expected),
                ));
            }
            Ok(Any::from(number))
        }
        (ScalarType::Int { .. }, _) => Err(mismatch(path, &slot.expected, value)),
        (_, TVMFFITypeIndex::FLOAT | TVMFFITypeIndex::INT) => Ok(Any::from(value.get::<f64>()?)),
        _ => Err(mismatch(path, &slot.expected, value)),
    }
}

/// Walks a nested list of references down to `dims.len()` levels (or, when the rank is
/// unknown, until the values stop being lists), recording the extents and the values in
/// row-major order.
#[allow(clippy::too_many_arguments)]
fn flatten_ref_array(
    element: &Slot,
    dims: Option<&[Option<u64>]>,
    value: &AnyView<'_>,
    path: &Path<'_>,
    level: usize,
    shape: &mut Vec<usize>,
    values: &mut Vec<Any>,
    options: Options,
) -> Result<()> {
    if level > MAX_VALUE_DEPTH {
        return Err(too_deep(path));
    }
    let items = sequence(value);
    let at_leaf = match dims {
        Some(dims) => level == dims.len(),
        None => items.is_none(),
    };
    if at_leaf {
        values.push(pack(element, value, path, options)?);
        return Ok(());
    }
    let Some(items) = items else {
        return Err(mismatch(
            path,
            &"a nested list (an array of references)",
            value,
        ));
    };
    if let Some(Some(expected)) = dims.and_then(|d| d.get(level))
        && items.len() as u64 != *expected
    {
        return Err(error_at(
            ErrorKind::VALUE_ERROR,
            path,
            format_args!(
                "expected {expected} elements along dimension {level}, got {}",
                items.len()
            ),
        ));
    }
    if shape.len() == level {
        shape.push(items.len());
    } else if shape[level] != items.len() {
        return Err(error_at(
            ErrorKind::VALUE_ERROR,
            path,
            format_args!(
                "ragged array: expected {} elements, got {}",
                shape[level],
                items.len()
            ),
        ));
    }
    for (i, item) in items.iter().enumerate() {
        flatten_ref_array(
            element,
            dims,
            item.as_view(),
            &path.index(i),
            level + 1,
            shape,
            values,
            options,
        )?;
    }
    Ok(())
}

/// One flat result to its user-level form.
pub(super) fn unpack(slot: &Slot, value: Any, path: &Path<'_>) -> Result<Any> {
    let index = TVMFFITypeIndex(value.type_index());
    match &slot.node {
        Node::Scalar(ScalarType::Int { .. }) => match index {
            TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => Ok(value),
            _ => Err(mismatch(path, &slot.expected, value.as_view())),
        },
        Node::Scalar(_) => match index {
            TVMFFITypeIndex::FLOAT => Ok(value),
            _ => Err(mismatch(path, &slot.expected, value.as_view())),
        },
        Node::Tensor {
            element,
            dtype,
            dims,
        } => {
            if !matches!(
                index,
                TVMFFITypeIndex::DL_TENSOR_PTR | TVMFFITypeIndex::TENSOR
            ) {
                return Err(mismatch(path, &slot.expected, value.as_view()));
            }
            let view: TensorView = value.as_view().get()?;
            if tensor_fit::fits_as_is(*dtype, dims.as_deref(), &view) {
                return Ok(value);
            }
            match tensor_fit::assess_parts(*element, dims.as_deref(), &view) {
                Verdict::AsIs => {}
                Verdict::Convert(conversion) if conversion.cast.is_none() => {}
                _ => {
                    return Err(error_at(
                        ErrorKind::TYPE_ERROR,
                        path,
                        format_args!("expected {}, got {}", slot.expected, describe_tensor(&view)),
                    ));
                }
            }
            Ok(value)
        }
        Node::RefArray { element, .. } => {
            let parts = sequence(value.as_view()).filter(|parts| parts.len() == 2);
            let Some(parts) = parts else {
                return Err(mismatch(
                    path,
                    &"[values, dims] (an array of references)",
                    value.as_view(),
                ));
            };
            let (Some(values), Some(dims)) =
                (sequence(parts[0].as_view()), sequence(parts[1].as_view()))
            else {
                return Err(mismatch(
                    path,
                    &"[values, dims] (an array of references)",
                    value.as_view(),
                ));
            };
            let dims: Vec<usize> = dims
                .iter()
                .map(|d| {
                    d.as_view()
                        .get::<i64>()
                        .ok()
                        .and_then(|d| usize::try_from(d).ok())
                })
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    error_at(
                        ErrorKind::TYPE_ERROR,
                        path,
                        "dims must be non-negative ints",
                    )
                })?;
            let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            if count != Some(values.len()) {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!("{} values do not fill dims {dims:?}", values.len()),
                ));
            }
            // With a zero extent the values cannot bound the lists to build (`[10^18, 0]` holds
            // no values but 10^18 empty lists), so bound them by what real shapes need.
            let mut level_lists = 1usize;
            let mut lists = 0usize;
            for &extent in &dims {
                lists = lists.saturating_add(level_lists);
                level_lists = level_lists.saturating_mul(extent);
            }
            if lists > (values.len() + 1).saturating_mul(dims.len() + 1) {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!(
                        "dims {dims:?} describe {lists} nested lists for {} values",
                        values.len()
                    ),
                ));
            }
            // `nest` recurses once per dimension.
            if dims.len() > MAX_VALUE_DEPTH {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!(
                        "dims of rank {} exceed the {MAX_VALUE_DEPTH} levels a nested list may have",
                        dims.len()
                    ),
                ));
            }
            let mut values = values.into_iter().enumerate();
            nest(element, &dims, &mut values, path)
        }
        Node::String => {
            if string_of(value.as_view()).is_some() {
                return Ok(value);
            }
            let Some(items) = sequence(value.as_view()) else {
                return Err(mismatch(path, &slot.expected, value.as_view()));
            };
            let mut bytes = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_view().get::<i64>() {
                    Ok(b @ -128..=255) => bytes.push(b as u8),
                    _ => return Err(mismatch(&path.index(i), &"a byte", item.as_view())),
                }
            }
            Ok(match std::string::String::from_utf8(bytes) {
                Ok(text) => Any::from(text.as_str()),
                Err(e) => Any::from(pactum::Bytes::new(e.as_bytes())),
            })
        }
        Node::Sequence(slots) => {
            let Some(items) = sequence(value.as_view()) else {
                return Err(mismatch(path, &slot.expected, value.as_view()));
            };
            if items.len() != slots.len() {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!(
                        "expected a list of {} values, got {}",
                        slots.len(),
                        items.len()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (slot, item)) in slots.iter().zip(items).enumerate() {
                out.push(unpack(slot, item, &path.index(i))?);
            }
            Ok(Array::new(out).into())
        }
        Node::Dict(keys, slots) => {
            let Some(items) = sequence(value.as_view()) else {
                return Err(mismatch(path, &slot.expected, value.as_view()));
            };
            if items.len() != slots.len() {
                return Err(error_at(
                    ErrorKind::VALUE_ERROR,
                    path,
                    format_args!(
                        "expected the {} slot values of a dict, got {}",
                        slots.len(),
                        items.len()
                    ),
                ));
            }
            let mut pairs = Vec::with_capacity(items.len());
            for ((slot, item), (key, name)) in slots.iter().zip(items).zip(keys) {
                pairs.push((key.clone(), unpack(slot, item, &path.key(name))?));
            }
            Ok(Map::from_pairs(pairs).into())
        }
        Node::TypedList(element) => {
            let Some(items) = sequence(value.as_view()) else {
                return Err(mismatch(path, &slot.expected, value.as_view()));
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                out.push(unpack(element, item, &path.index(i))?);
            }
            Ok(Array::new(out).into())
        }
        Node::Opaque | Node::Null | Node::Unknown => Ok(value),
    }
}

/// Rebuilds a nested list of rank `dims.len()` from row-major values.
fn nest(
    element: &Slot,
    dims: &[usize],
    values: &mut impl Iterator<Item = (usize, Any)>,
    path: &Path<'_>,
) -> Result<Any> {
    match dims.split_first() {
        None => match values.next() {
            Some((i, value)) => unpack(element, value, &path.index(i)),
            None => Err(error_at(ErrorKind::VALUE_ERROR, path, "too few values")),
        },
        Some((&extent, rest)) => {
            let mut level = Vec::with_capacity(extent);
            for _ in 0..extent {
                level.push(nest(element, rest, values, path)?);
            }
            Ok(Array::new(level).into())
        }
    }
}

/// `depth` counts the lists and dicts around `value`.
pub(super) fn pack_dynamic(value: &AnyView<'_>, path: &Path<'_>, depth: usize) -> Result<Any> {
    let nested = matches!(
        TVMFFITypeIndex(value.type_index()),
        TVMFFITypeIndex::ARRAY
            | TVMFFITypeIndex::LIST
            | TVMFFITypeIndex::MAP
            | TVMFFITypeIndex::DICT
    );
    if nested && depth >= MAX_VALUE_DEPTH {
        return Err(too_deep(path));
    }
    if let Some(items) = sequence(value) {
        let mut packed = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            packed.push(pack_dynamic(item.as_view(), &path.index(i), depth + 1)?);
        }
        return Ok(Array::new(packed).into());
    }
    if let Some(mapping) = Mapping::of(value) {
        let mut entries = Vec::with_capacity(mapping.len());
        for (key, item) in mapping.entries() {
            let Some(name) = string_of(key.as_view()) else {
                return Err(error_at(
                    ErrorKind::TYPE_ERROR,
                    path,
                    format_args!(
                        "a dict without a signature needs string keys, got {}",
                        describe(key.as_view())
                    ),
                ));
            };
            entries.push((name, item));
        }
        // No schema gives the order, so the V1 rule applies: keys sorted lexically.
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut packed = Vec::with_capacity(entries.len());
        for (name, item) in &entries {
            packed.push(pack_dynamic(item.as_view(), &path.key(name), depth + 1)?);
        }
        return Ok(Array::new(packed).into());
    }
    value.to_any()
}
