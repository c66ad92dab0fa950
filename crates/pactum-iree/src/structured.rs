//! Structured calls: a packed function that takes and returns nested values (maps, lists,
//! named arguments), built over one that takes the flat arguments a signature describes.
//!
//! IREE-compiled functions take flat argument lists; their metadata says how nested user
//! values map onto them. [`StructuredFunction`] applies that mapping to any [`Function`], in
//! one of four modes:
//!
//! - **`iree.abi`** ([`StructuredFunction::from_iree_abi`]): each top-level argument record is
//!   one flat argument. A structure (`slist`, `stuple`, `sdict`, `py_homogeneous_list`)
//!   travels as one [`Array`] of its slot values in record order, nested structures as nested
//!   arrays; `sdict` keys are not passed, and a map must have exactly the record's keys.
//!   `["named", k, T]` arguments are passed by keyword. A single structured result arrives as
//!   its slots, one flat result each, and is rebuilt.
//! - **SIP** ([`StructuredFunction::from_sip`]): the leaves of the input structure are the flat
//!   arguments, by raw index; a root sequence binds the positional arguments and a root dict the
//!   keyword arguments. The results are rebuilt into the result structure.
//! - **raw** ([`StructuredFunction::from_raw`]): positional arguments, each checked against its
//!   raw signature item. A result allocator (`fbr`) can pre-allocate the results.
//! - **dynamic** ([`StructuredFunction::dynamic`]): no metadata. Lists become arrays and maps
//!   become arrays of their values ordered by key; keyword arguments are refused.
//!
//! The extended V1 conventions hold in every mode: strings travel as lists of `i8` values,
//! arrays of references as `[values, dims]` (values in row-major order), typed lists as
//! arrays. Tensors are checked against their `ndarray` records by the
//! [buffer oracle](crate::buffer): a strided tensor is copied to a contiguous one, a
//! different element type is cast only with [`StructuredFunction::allow_casts`].
//!
//! Flat functions return their results packed the usual way: none as `None`, one as itself,
//! several as an [`Array`]. The structured function does the same with its user-level results.
//!
//! Every mismatch is an error that names the place in the value:
//! `args[1]["w"][2]: expected ndarray<f32, 2>, got int`.
//!
//! Over the C ABI ([`StructuredFunction::into_function`]), keyword arguments use TVM FFI's
//! KWARGS protocol: the positional arguments, then the `ffi.GetKwargsObject()` sentinel, then
//! `name, value` pairs.
//!
//! ```
//! use pactum_iree::signature::abi_json::IreeAbi;
//! use pactum_iree::structured::StructuredFunction;
//! use pactum::{Any, AnyView, Array, Function, Map};
//!
//! // The flat function receives the dict's slot values as one list, in record order.
//! let flat = Function::from_typed(|slots: Array| -> pactum::Result<i64> {
//!     Ok(slots.get_as::<i64>(0)? * 10 + slots.get_as::<i64>(1)?)
//! });
//! let abi = IreeAbi::parse(r#"{"a":[["sdict",["hi","i32"],["lo","i32"]]],"r":["i32"],"v":1}"#)?;
//! let structured = StructuredFunction::from_iree_abi(flat, abi.signature())?;
//! let value = Map::from_pairs([(Any::from("lo"), Any::from(2i64)), (Any::from("hi"), Any::from(4i64))]);
//! let result = structured.call(&[AnyView::from(&value)], &[])?;
//! assert_eq!(result.cast::<i64>()?, 42);
//!
//! let wrong = Map::from_pairs([(Any::from("hi"), Any::from(4i64))]);
//! let error = structured.call(&[AnyView::from(&wrong)], &[]).unwrap_err();
//! assert_eq!(error.message(), r#"args[0]: missing key "lo""#);
//! # Ok::<(), pactum::Error>(())
//! ```

use std::fmt;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::buffer::{self, BufferType, Verdict, describe_tensor, scalar_dtype};
use crate::signature::raw::RawSignature;
use crate::signature::sip::{SipNode, SipSignature, SipStructure};
use crate::signature::{ScalarType, Signedness, Type};
use pactum::any::{Any, AnyView};
use pactum::containers::{Array, Dict, List, Map, same_key};
use pactum::error::{Error, ErrorKind, Result};
use pactum::function::Function;
use pactum::function::kwargs::split_kwargs;
use pactum::tensor::Tensor;
use pactum::tensor_view::TensorView;

// ---------------------------------------------------------------------------------------
// Paths into values, for error messages. Built on the stack as the conversion descends, and
// rendered only when an error is reported.

#[derive(Clone, Copy)]
enum Segment<'a> {
    Arg(usize),
    Keyword(&'a str),
    Result(usize),
    Index(usize),
    Key(&'a str),
}

#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
}

impl<'a> Path<'a> {
    fn root(segment: Segment<'a>) -> Path<'a> {
        Path {
            parent: None,
            segment,
        }
    }

    fn index(&'a self, index: usize) -> Path<'a> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    fn key(&'a self, key: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }
}

/// `args[1]["w"][2]`, `kwargs["scale"]`, `results[0]`.
impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            write!(f, "{parent}")?;
        }
        match self.segment {
            Segment::Arg(i) => write!(f, "args[{i}]"),
            Segment::Keyword(name) => write!(f, "kwargs[{name:?}]"),
            Segment::Result(i) => write!(f, "results[{i}]"),
            Segment::Index(i) => write!(f, "[{i}]"),
            Segment::Key(key) => write!(f, "[{key:?}]"),
        }
    }
}

fn error_at(kind: ErrorKind<'_>, path: &Path<'_>, message: impl fmt::Display) -> Error {
    Error::new(kind, format!("{path}: {message}"))
}

fn mismatch(path: &Path<'_>, expected: &impl fmt::Display, value: &AnyView<'_>) -> Error {
    error_at(
        ErrorKind::TYPE_ERROR,
        path,
        format_args!("expected {expected}, got {}", describe(value)),
    )
}

/// How a value reads in messages: `int`, `str`, `list of 3`, `dict`, `ndarray<f64, [2, 3]>`.
fn describe(value: &AnyView<'_>) -> String {
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

// ---------------------------------------------------------------------------------------
// Reading containers.

/// The elements of an `Array` (borrowed from it) or a `List` (copied, since a list can
/// change under us).
enum Items {
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
    fn into_vec(self) -> Vec<Any> {
        match self {
            Items::Array(array) => array.as_slice().to_vec(),
            Items::List(items) => items,
        }
    }
}

/// The elements of an `Array` or `List`; `None` for anything else.
fn sequence(value: &AnyView<'_>) -> Option<Items> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::ARRAY => value.get::<Array>().ok().map(Items::Array),
        TVMFFITypeIndex::LIST => value.get::<List>().ok().map(|l| Items::List(l.to_vec())),
        _ => None,
    }
}

/// A `Map` or `Dict` argument, read by key.
enum Mapping {
    Map(Map),
    Dict(Dict),
}

impl Mapping {
    fn of(value: &AnyView<'_>) -> Option<Mapping> {
        match TVMFFITypeIndex(value.type_index()) {
            TVMFFITypeIndex::MAP => value.get::<Map>().ok().map(Mapping::Map),
            TVMFFITypeIndex::DICT => value.get::<Dict>().ok().map(Mapping::Dict),
            _ => None,
        }
    }

    fn len(&self) -> usize {
        match self {
            Mapping::Map(map) => map.len(),
            Mapping::Dict(dict) => dict.len(),
        }
    }

    /// Calls `visit` with the value under `key`, which the caller expects at position `hint`
    /// (the record's order, often the user's too); `None` when there is none.
    fn with<R>(&self, key: &Any, hint: usize, visit: impl FnOnce(&AnyView<'_>) -> R) -> Option<R> {
        match self {
            Mapping::Map(map) => map
                .get_ref_hinted(key.as_view(), hint)
                .map(|value| visit(value.as_view())),
            Mapping::Dict(dict) => dict.get(key.as_view()).map(|value| visit(value.as_view())),
        }
    }

    fn entries(&self) -> Vec<(Any, Any)> {
        match self {
            Mapping::Map(map) => map.entries(),
            Mapping::Dict(dict) => dict.entries(),
        }
    }
}

fn string_of(value: &AnyView<'_>) -> Option<String> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
            value.get::<String>().ok()
        }
        _ => None,
    }
}

/// Visits the values of `mapping` under `keys`, in order, checking that it has exactly those
/// keys; the error names the first missing or unexpected key.
fn for_each_value(
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
fn missing_key(path: &Path<'_>, name: &str) -> Error {
    error_at(
        ErrorKind::KEY_ERROR,
        path,
        format_args!("missing key {name:?}"),
    )
}

/// The error for a mapping whose key count differs from the signature's.
#[cold]
fn key_mismatch(mapping: &Mapping, keys: &[(Any, String)], path: &Path<'_>) -> Error {
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

// ---------------------------------------------------------------------------------------
// The compiled form of a type: what the conversion needs, prepared once per signature (map
// keys as ready-made values, the expected type's text for messages).

enum Node {
    Scalar(ScalarType),
    Tensor {
        element: ScalarType,
        /// `element` as a DLPack type, worked out once.
        dtype: pactum::dtype::DataType,
        dims: Option<Vec<Option<u64>>>,
    },
    RefArray {
        element: Box<Slot>,
        dims: Option<Vec<Option<u64>>>,
    },
    String,
    Opaque,
    Sequence(Vec<Slot>),
    Dict(Vec<(Any, String)>, Vec<Slot>),
    TypedList(Box<Slot>),
    Null,
    Unknown,
}

struct Slot {
    node: Node,
    /// The type as written in messages (`ndarray<f32, 2>`).
    expected: String,
}

impl Slot {
    fn compile(ty: &Type) -> Slot {
        let node = match ty {
            Type::Scalar(scalar) => Node::Scalar(*scalar),
            Type::NdArray(array) => match array.scalar_element() {
                Some(element) => Node::Tensor {
                    element,
                    dtype: scalar_dtype(element),
                    dims: array.dims.clone(),
                },
                None => Node::RefArray {
                    element: Box::new(Slot::compile(&array.element)),
                    dims: array.dims.clone(),
                },
            },
            Type::String => Node::String,
            Type::Opaque => Node::Opaque,
            Type::List(slots) | Type::Tuple(slots) => {
                Node::Sequence(slots.iter().map(Slot::compile).collect())
            }
            Type::Dict(entries) => Node::Dict(
                entries
                    .iter()
                    .map(|(key, _)| (Any::from(key.as_str()), key.clone()))
                    .collect(),
                entries.iter().map(|(_, ty)| Slot::compile(ty)).collect(),
            ),
            Type::TypedList(element) => Node::TypedList(Box::new(Slot::compile(element))),
            Type::Named(_, inner) => return Slot::compile(inner),
            Type::Null => Node::Null,
            Type::Unknown => Node::Unknown,
        };
        Slot {
            node,
            expected: ty.unnamed().to_string(),
        }
    }
}

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
struct Options {
    allow_casts: bool,
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
fn pack(slot: &Slot, value: &AnyView<'_>, path: &Path<'_>, options: Options) -> Result<Any> {
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
            if buffer::fits_as_is(*dtype, dims.as_deref(), &view) {
                return value.to_any();
            }
            match buffer::assess_parts(*element, dims.as_deref(), &view) {
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
                    buffer::convert(&view, &conversion)
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
fn unpack(slot: &Slot, value: Any, path: &Path<'_>) -> Result<Any> {
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
            if buffer::fits_as_is(*dtype, dims.as_deref(), &view) {
                return Ok(value);
            }
            match buffer::assess_parts(*element, dims.as_deref(), &view) {
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

// ---------------------------------------------------------------------------------------
// Plans: how the arguments of a call map to flat arguments, and flat results back.

/// `iree.abi`: one flat argument per top-level record.
struct AbiPlan {
    args: Vec<Slot>,
    /// The argument names (`Some` for named records), for messages.
    names: Vec<Option<String>>,
    /// The records filled by position, in order (the un-named ones).
    positional: Vec<usize>,
    results: Vec<Slot>,
    /// A single structured result, returned flat as its slots.
    inlined: Option<Slot>,
}

/// Where a SIP structure's leaves go.
enum Pattern {
    /// The flat argument (or result) with this index.
    Leaf(usize),
    /// A sequence by integer key; `None` for keys the structure skips.
    Sequence(Vec<Option<Pattern>>),
    /// A dict by name, in encoded order.
    Dict(Vec<(Any, String)>, Vec<Pattern>),
}

/// SIP and raw signatures: the leaves of the arguments are the flat arguments.
struct LeafPlan {
    positional: Vec<Option<Pattern>>,
    keywords: Vec<(Any, String)>,
    keyword_patterns: Vec<Pattern>,
    inputs: Vec<Slot>,
    results: Option<Pattern>,
    result_slots: Vec<Slot>,
    /// The raw signature's types, when known: needed to pre-allocate results.
    raw: Option<(Vec<Type>, Vec<Type>)>,
}

enum Plan {
    Abi(AbiPlan),
    Leaves(LeafPlan),
    Dynamic,
}

/// A packed function taking and returning nested values, over one taking flat arguments.
/// See the [module documentation](self).
pub struct StructuredFunction {
    flat: Function,
    plan: Plan,
    options: Options,
    allocator: Option<Function>,
}

impl fmt::Debug for StructuredFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.plan {
            Plan::Abi(_) => "iree.abi",
            Plan::Leaves(_) => "sip/raw",
            Plan::Dynamic => "dynamic",
        };
        f.debug_struct("StructuredFunction")
            .field("mode", &mode)
            .finish_non_exhaustive()
    }
}

fn bind_error(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, message)
}

impl StructuredFunction {
    /// Follows an `iree.abi` signature (see the [module documentation](self)).
    pub fn from_iree_abi(
        flat: Function,
        signature: &crate::signature::Signature,
    ) -> Result<StructuredFunction> {
        let mut names = Vec::new();
        let mut positional = Vec::new();
        for (i, arg) in signature.args.iter().enumerate() {
            match arg {
                Type::Named(name, _) => {
                    if names.iter().flatten().any(|n: &String| n == name) {
                        return Err(bind_error(format!(
                            "iree.abi names argument `{name}` twice"
                        )));
                    }
                    names.push(Some(name.clone()));
                }
                _ => {
                    names.push(None);
                    positional.push(i);
                }
            }
        }
        let inlined = match signature.results.as_slice() {
            [single]
                if matches!(
                    single.unnamed(),
                    Type::List(_) | Type::Tuple(_) | Type::Dict(_)
                ) =>
            {
                Some(Slot::compile(single))
            }
            _ => None,
        };
        let plan = AbiPlan {
            args: signature.args.iter().map(Slot::compile).collect(),
            names,
            positional,
            results: signature.results.iter().map(Slot::compile).collect(),
            inlined,
        };
        Ok(StructuredFunction::new(flat, Plan::Abi(plan)))
    }

    /// Follows a SIP signature, with leaf types from the raw signature when one is given
    /// (without it, leaves are passed as they are).
    pub fn from_sip(
        flat: Function,
        sip: &SipSignature,
        raw: Option<&RawSignature>,
    ) -> Result<StructuredFunction> {
        let (input_types, result_types) = match raw {
            Some(raw) => {
                let signature = raw.to_signature();
                (Some(signature.args), Some(signature.results))
            }
            None => (None, None),
        };
        let input_count = leaf_count(&sip.inputs, "inputs", input_types.as_ref().map(Vec::len))?;
        let result_count =
            leaf_count(&sip.results, "results", result_types.as_ref().map(Vec::len))?;
        let (positional, keywords, keyword_patterns) = match sip.inputs.roots() {
            [] => (Vec::new(), Vec::new(), Vec::new()),
            [SipNode::Sequence(children)] => (sequence_patterns(children)?, Vec::new(), Vec::new()),
            [SipNode::Dict(children)] => {
                let (keys, patterns) = dict_patterns(children)?;
                (Vec::new(), keys, patterns)
            }
            [leaf @ SipNode::Leaf(_)] => (vec![Some(pattern(leaf)?)], Vec::new(), Vec::new()),
            _ => {
                return Err(bind_error(
                    "the SIP inputs have several roots; a call has one argument list",
                ));
            }
        };
        let results = match sip.results.roots() {
            [] => None,
            [root] => Some(pattern(root)?),
            _ => return Err(bind_error("the SIP results have several roots")),
        };
        let unknown = |count| (0..count).map(|_| Slot::compile(&Type::Unknown)).collect();
        let plan = LeafPlan {
            positional,
            keywords,
            keyword_patterns,
            inputs: match &input_types {
                Some(types) => types.iter().map(Slot::compile).collect(),
                None => unknown(input_count),
            },
            result_slots: match &result_types {
                Some(types) => types.iter().map(Slot::compile).collect(),
                None => unknown(result_count),
            },
            results,
            raw: input_types.zip(result_types),
        };
        Ok(StructuredFunction::new(flat, Plan::Leaves(plan)))
    }

    /// Follows a raw signature: positional arguments checked against its items; one result
    /// returned as itself, several as an array.
    pub fn from_raw(flat: Function, raw: &RawSignature) -> Result<StructuredFunction> {
        let signature = raw.to_signature();
        let results = match signature.results.len() {
            0 => None,
            1 => Some(Pattern::Leaf(0)),
            n => Some(Pattern::Sequence(
                (0..n).map(|i| Some(Pattern::Leaf(i))).collect(),
            )),
        };
        let plan = LeafPlan {
            positional: (0..signature.args.len())
                .map(|i| Some(Pattern::Leaf(i)))
                .collect(),
            keywords: Vec::new(),
            keyword_patterns: Vec::new(),
            inputs: signature.args.iter().map(Slot::compile).collect(),
            result_slots: signature.results.iter().map(Slot::compile).collect(),
            results,
            raw: Some((signature.args, signature.results)),
        };
        Ok(StructuredFunction::new(flat, Plan::Leaves(plan)))
    }

    /// No signature: lists become arrays, maps become arrays of their values ordered by key
    /// (keys must be strings), everything else passes as it is; keyword arguments are refused
    /// and results are returned as they come.
    pub fn dynamic(flat: Function) -> StructuredFunction {
        StructuredFunction::new(flat, Plan::Dynamic)
    }

    fn new(flat: Function, plan: Plan) -> StructuredFunction {
        StructuredFunction {
            flat,
            plan,
            options: Options::default(),
            allocator: None,
        }
    }

    /// Whether tensors of another numeric element type are cast to the one the signature
    /// asks for (default: refused with an error, since a cast changes values).
    pub fn allow_casts(mut self, allow: bool) -> StructuredFunction {
        self.options.allow_casts = allow;
        self
    }

    /// Pre-allocates results with a result allocator (the function an `fbr` attribute
    /// names), for signatures built from a raw signature.
    ///
    /// Each call then gathers the extents of the inputs' dynamic dimensions (in input and
    /// axis order) into an array of ints and calls `allocator(dims)`, which returns an array
    /// with one entry per result that has a dynamic dimension: a tensor, or `None` when it
    /// cannot be allocated ahead. Results with a static shape are allocated here. The flat
    /// function receives the inputs followed by one argument per result (the pre-allocated
    /// tensor, or `None`), writes into them, and returns `None`; or it returns results, which
    /// take the place of the pre-allocated ones (needed for a `None` slot).
    pub fn with_result_allocator(mut self, allocator: Function) -> Result<StructuredFunction> {
        match &self.plan {
            Plan::Leaves(LeafPlan { raw: Some(_), .. }) => {
                self.allocator = Some(allocator);
                Ok(self)
            }
            _ => Err(bind_error(
                "a result allocator needs the raw signature's buffer types (from_raw, or from_sip with a raw signature)",
            )),
        }
    }

    /// Calls with positional and keyword arguments; returns the user-level results (none as
    /// `None`, one as itself, several as an array).
    pub fn call(
        &self,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        match &self.plan {
            Plan::Abi(plan) => self.call_abi(plan, positional, keywords),
            Plan::Leaves(plan) => self.call_leaves(plan, positional, keywords),
            Plan::Dynamic => self.call_dynamic(positional, keywords),
        }
    }

    /// The structured function as a packed [`Function`]; keyword arguments follow TVM FFI's
    /// KWARGS protocol.
    pub fn into_function(self) -> Function {
        Function::from_packed(move |args: &[AnyView<'_>]| {
            let (positional, keywords) = split_kwargs(args)?;
            self.call(positional, &keywords)
        })
    }

    fn call_abi(
        &self,
        plan: &AbiPlan,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        if positional.len() > plan.positional.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "takes {} positional arguments but {} were given{}",
                    plan.positional.len(),
                    positional.len(),
                    named_hint(&plan.names)
                ),
            ));
        }
        let mut filled: Vec<Option<(AnyView<'_>, Path<'_>)>> = vec![None; plan.args.len()];
        for (i, value) in positional.iter().enumerate() {
            filled[plan.positional[i]] = Some((*value, Path::root(Segment::Arg(i))));
        }
        for (name, value) in keywords {
            let Some(slot) = plan.names.iter().position(|n| n.as_deref() == Some(*name)) else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "unexpected keyword argument `{name}`{}",
                        named_hint(&plan.names)
                    ),
                ));
            };
            if filled[slot].is_some() {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("got multiple values for argument `{name}`"),
                ));
            }
            filled[slot] = Some((*value, Path::root(Segment::Keyword(name))));
        }
        let mut flat_args = Vec::with_capacity(plan.args.len());
        for (i, (slot, entry)) in plan.args.iter().zip(&filled).enumerate() {
            let Some((value, path)) = entry else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    match &plan.names[i] {
                        Some(name) => format!("missing keyword argument `{name}`"),
                        None => format!(
                            "missing positional argument {} (of {})",
                            plan.positional.iter().position(|&p| p == i).unwrap_or(i),
                            plan.positional.len()
                        ),
                    },
                ));
            };
            flat_args.push(pack(slot, value, path, self.options)?);
        }
        let views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
        let out = self.flat.call(&views)?;
        match &plan.inlined {
            Some(structure) => {
                let count = match &structure.node {
                    Node::Sequence(slots) => slots.len(),
                    Node::Dict(_, slots) => slots.len(),
                    _ => 1,
                };
                let slots = split_results(out, count)?;
                unpack(
                    structure,
                    Array::new(slots).into(),
                    &Path::root(Segment::Result(0)),
                )
            }
            None => {
                let values = split_results(out, plan.results.len())?;
                let mut results = Vec::with_capacity(values.len());
                for (i, (slot, value)) in plan.results.iter().zip(values).enumerate() {
                    results.push(unpack(slot, value, &Path::root(Segment::Result(i)))?);
                }
                Ok(join_results(results))
            }
        }
    }

    fn call_leaves(
        &self,
        plan: &LeafPlan,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        if positional.len() != plan.positional.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "takes {} positional arguments but {} were given",
                    plan.positional.len(),
                    positional.len()
                ),
            ));
        }
        let mut flat: Vec<Option<Any>> = vec![None; plan.inputs.len()];
        for (i, (pattern, value)) in plan.positional.iter().zip(positional).enumerate() {
            let path = Path::root(Segment::Arg(i));
            match pattern {
                Some(pattern) => self.scatter(plan, pattern, value, &path, &mut flat)?,
                None if value.is_none() => {}
                None => {
                    return Err(mismatch(
                        &path,
                        &"None (a position the signature skips)",
                        value,
                    ));
                }
            }
        }
        for (name, _) in keywords {
            if !plan.keywords.iter().any(|(_, n)| n == name) {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("unexpected keyword argument `{name}`"),
                ));
            }
        }
        for ((_, name), pattern) in plan.keywords.iter().zip(&plan.keyword_patterns) {
            let mut matches = keywords.iter().filter(|(n, _)| n == name);
            let Some((_, value)) = matches.next() else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("missing keyword argument `{name}`"),
                ));
            };
            if matches.next().is_some() {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("got multiple values for argument `{name}`"),
                ));
            }
            self.scatter(
                plan,
                pattern,
                value,
                &Path::root(Segment::Keyword(name)),
                &mut flat,
            )?;
        }
        let flat_args: Vec<Any> = flat
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                value.ok_or_else(|| {
                    Error::new(
                        ErrorKind::INTERNAL_ERROR,
                        format!("flat argument {i} was not bound"),
                    )
                })
            })
            .collect::<Result<_>>()?;
        let result_count = plan.result_slots.len();
        let mut results = match (&self.allocator, &plan.raw) {
            (Some(allocator), Some((input_types, result_types))) => {
                let preallocated = preallocate(allocator, input_types, result_types, &flat_args)?;
                let mut views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
                views.extend(preallocated.iter().map(Any::view));
                let out = self.flat.call(&views)?;
                let returned = if out.is_none() && result_count != 1 {
                    vec![Any::none(); result_count]
                } else {
                    split_results(out, result_count)?
                };
                let mut merged = Vec::with_capacity(result_count);
                for (j, (returned, preallocated)) in
                    returned.into_iter().zip(preallocated).enumerate()
                {
                    let value = if returned.is_none() {
                        preallocated
                    } else {
                        returned
                    };
                    if value.is_none()
                        && !matches!(
                            plan.result_slots[j].node,
                            Node::Null | Node::Unknown | Node::Opaque
                        )
                    {
                        return Err(Error::new(
                            ErrorKind::VALUE_ERROR,
                            format!(
                                "result {j} was neither pre-allocated nor returned by the function"
                            ),
                        ));
                    }
                    merged.push(Some(value));
                }
                merged
            }
            _ => {
                let views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
                let out = self.flat.call(&views)?;
                split_results(out, result_count)?
                    .into_iter()
                    .map(Some)
                    .collect()
            }
        };
        match &plan.results {
            None => Ok(Any::none()),
            Some(pattern) => gather(
                plan,
                pattern,
                &mut results,
                &Path::root(Segment::Result(0)),
                true,
            ),
        }
    }

    fn scatter(
        &self,
        plan: &LeafPlan,
        pattern: &Pattern,
        value: &AnyView<'_>,
        path: &Path<'_>,
        flat: &mut [Option<Any>],
    ) -> Result<()> {
        match pattern {
            Pattern::Leaf(index) => {
                flat[*index] = Some(pack(&plan.inputs[*index], value, path, self.options)?);
                Ok(())
            }
            Pattern::Sequence(children) => {
                let Some(items) = sequence(value) else {
                    return Err(mismatch(
                        path,
                        &format_args!("a list of {}", children.len()),
                        value,
                    ));
                };
                if items.len() != children.len() {
                    return Err(error_at(
                        ErrorKind::VALUE_ERROR,
                        path,
                        format_args!(
                            "expected a list of {} values, got {}",
                            children.len(),
                            items.len()
                        ),
                    ));
                }
                for (i, (child, item)) in children.iter().zip(&items).enumerate() {
                    let path = path.index(i);
                    match child {
                        Some(child) => self.scatter(plan, child, item.as_view(), &path, flat)?,
                        None if item.is_none() => {}
                        None => {
                            return Err(mismatch(
                                &path,
                                &"None (a position the signature skips)",
                                item.as_view(),
                            ));
                        }
                    }
                }
                Ok(())
            }
            Pattern::Dict(keys, children) => {
                let Some(mapping) = Mapping::of(value) else {
                    return Err(mismatch(path, &"a dict", value));
                };
                for_each_value(&mapping, keys, path, |i, item| {
                    self.scatter(plan, &children[i], item, &path.key(&keys[i].1), flat)
                })
            }
        }
    }

    fn call_dynamic(
        &self,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        if let Some((name, _)) = keywords.first() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "unexpected keyword argument `{name}`: keyword arguments need a signature (iree.abi or SIP)"
                ),
            ));
        }
        let mut flat_args = Vec::with_capacity(positional.len());
        for (i, value) in positional.iter().enumerate() {
            flat_args.push(pack_dynamic(value, &Path::root(Segment::Arg(i)), 0)?);
        }
        let views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
        self.flat.call(&views)
    }
}

fn named_hint(names: &[Option<String>]) -> String {
    let named: Vec<String> = names.iter().flatten().map(|n| format!("`{n}`")).collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" (keyword arguments: {})", named.join(", "))
    }
}

/// `depth` counts the lists and dicts around `value`.
fn pack_dynamic(value: &AnyView<'_>, path: &Path<'_>, depth: usize) -> Result<Any> {
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

/// Splits what a flat function returned into `count` results: none is `None`, one is itself,
/// several come as an array.
fn split_results(out: Any, count: usize) -> Result<Vec<Any>> {
    match count {
        0 if out.is_none() => Ok(Vec::new()),
        0 => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "the flat function returned {}, but the signature has no results",
                describe(out.as_view())
            ),
        )),
        1 => Ok(vec![out]),
        _ => match sequence(out.as_view()) {
            Some(items) if items.len() == count => Ok(items.into_vec()),
            _ => Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "the flat function returned {}, expected {count} results as a list",
                    describe(out.as_view())
                ),
            )),
        },
    }
}

fn join_results(mut results: Vec<Any>) -> Any {
    match results.len() {
        0 => Any::none(),
        1 => results.pop().unwrap_or_else(Any::none),
        _ => Array::new(results).into(),
    }
}

fn gather(
    plan: &LeafPlan,
    pattern: &Pattern,
    results: &mut [Option<Any>],
    path: &Path<'_>,
    root: bool,
) -> Result<Any> {
    match pattern {
        Pattern::Leaf(index) => {
            let value = results[*index].take().ok_or_else(|| {
                Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!("result {index} used twice"),
                )
            })?;
            let path = if root {
                Path::root(Segment::Result(*index))
            } else {
                *path
            };
            unpack(&plan.result_slots[*index], value, &path)
        }
        Pattern::Sequence(children) => {
            let mut out = Vec::with_capacity(children.len());
            for (i, child) in children.iter().enumerate() {
                out.push(match child {
                    Some(child) => gather(plan, child, results, &path.index(i), false)?,
                    None => Any::none(),
                });
            }
            Ok(Array::new(out).into())
        }
        Pattern::Dict(keys, children) => {
            let mut pairs = Vec::with_capacity(children.len());
            for (child, (key, name)) in children.iter().zip(keys) {
                pairs.push((
                    key.clone(),
                    gather(plan, child, results, &path.key(name), false)?,
                ));
            }
            Ok(Map::from_pairs(pairs).into())
        }
    }
}

/// Gathers the dynamic extents of the inputs, asks the allocator for the dynamic results and
/// allocates the static ones.
fn preallocate(
    allocator: &Function,
    input_types: &[Type],
    result_types: &[Type],
    inputs: &[Any],
) -> Result<Vec<Any>> {
    let mut dynamic_dims = Vec::new();
    for (i, (ty, value)) in input_types.iter().zip(inputs).enumerate() {
        let Type::NdArray(array) = ty.unnamed() else {
            continue;
        };
        let Some(dims) = &array.dims else { continue };
        if dims.iter().all(Option::is_some) {
            continue;
        }
        let view: TensorView = value.as_view().get().map_err(|e| {
            error_at(
                ErrorKind::custom(&e.kind()),
                &Path::root(Segment::Arg(i)),
                e.message(),
            )
        })?;
        for (axis, dim) in dims.iter().enumerate() {
            if dim.is_none() {
                dynamic_dims.push(Any::from(view.shape()[axis]));
            }
        }
    }
    let dynamic_results: Vec<usize> = result_types
        .iter()
        .enumerate()
        .filter(|(_, ty)| BufferType::from_type(ty).is_some_and(|b| b.static_shape().is_none()))
        .map(|(j, _)| j)
        .collect();
    let allocated = if dynamic_results.is_empty() {
        Vec::new()
    } else {
        let dims = Array::new(dynamic_dims);
        let out = allocator.call(&[AnyView::from(&dims)])?;
        match sequence(out.as_view()) {
            Some(items) if items.len() == dynamic_results.len() => items.into_vec(),
            _ => {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "the result allocator returned {}, expected a list of {} buffers (one per dynamic result)",
                        describe(out.as_view()),
                        dynamic_results.len()
                    ),
                ));
            }
        }
    };
    let mut allocated = allocated.into_iter();
    let mut preallocated = Vec::with_capacity(result_types.len());
    for (j, ty) in result_types.iter().enumerate() {
        let buffer = BufferType::from_type(ty);
        let value = match buffer {
            Some(buffer) => match buffer.static_shape() {
                Some(shape) => Any::from(Tensor::empty(&shape, scalar_dtype(buffer.element))?),
                None if dynamic_results.contains(&j) => allocated.next().unwrap_or_else(Any::none),
                None => Any::none(),
            },
            None => Any::none(),
        };
        preallocated.push(value);
    }
    Ok(preallocated)
}

// ---------------------------------------------------------------------------------------
// Turning SIP trees into patterns.

fn leaf_count(structure: &SipStructure, side: &str, expected: Option<usize>) -> Result<usize> {
    let mut seen = Vec::new();
    for (_, index) in structure.leaves() {
        let index = usize::try_from(index)
            .map_err(|_| bind_error(format!("SIP {side}: negative raw index {index}")))?;
        if index >= seen.len() {
            if index > 1 << 16 {
                return Err(bind_error(format!(
                    "SIP {side}: raw index {index} is out of range"
                )));
            }
            seen.resize(index + 1, false);
        }
        if std::mem::replace(&mut seen[index], true) {
            return Err(bind_error(format!(
                "SIP {side}: raw index {index} appears twice"
            )));
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(bind_error(format!(
            "SIP {side}: no leaf has raw index {missing}"
        )));
    }
    if let Some(expected) = expected
        && expected != seen.len()
    {
        return Err(bind_error(format!(
            "SIP {side} have {} leaves, the raw signature has {expected}",
            seen.len()
        )));
    }
    Ok(seen.len())
}

fn pattern(node: &SipNode) -> Result<Pattern> {
    Ok(match node {
        SipNode::Leaf(index) => Pattern::Leaf(
            usize::try_from(*index)
                .map_err(|_| bind_error(format!("negative raw index {index}")))?,
        ),
        SipNode::Sequence(children) => Pattern::Sequence(sequence_patterns(children)?),
        SipNode::Dict(children) => {
            let (keys, patterns) = dict_patterns(children)?;
            Pattern::Dict(keys, patterns)
        }
    })
}

fn sequence_patterns(children: &[(i32, SipNode)]) -> Result<Vec<Option<Pattern>>> {
    let mut out: Vec<Option<Pattern>> = Vec::new();
    for (key, child) in children {
        let key = usize::try_from(*key)
            .ok()
            .filter(|&k| k <= 1 << 16)
            .ok_or_else(|| bind_error(format!("SIP sequence key {key} is out of range")))?;
        if key >= out.len() {
            out.resize_with(key + 1, || None);
        }
        if out[key].is_some() {
            return Err(bind_error(format!("SIP sequence key {key} appears twice")));
        }
        out[key] = Some(pattern(child)?);
    }
    Ok(out)
}

/// A dict's keys (as values and as text) and its children's patterns, in encoded order.
type DictPatterns = (Vec<(Any, String)>, Vec<Pattern>);

fn dict_patterns(children: &[(String, SipNode)]) -> Result<DictPatterns> {
    let mut keys = Vec::with_capacity(children.len());
    let mut patterns = Vec::with_capacity(children.len());
    for (name, child) in children {
        if keys.iter().any(|(_, n)| n == name) {
            return Err(bind_error(format!("SIP dict key {name:?} appears twice")));
        }
        keys.push((Any::from(name.as_str()), name.clone()));
        patterns.push(pattern(child)?);
    }
    Ok((keys, patterns))
}
