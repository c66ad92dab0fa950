//! `ffi.ToJSONGraph`, `ffi.FromJSONGraph` and their `...String` forms: any value as a JSON
//! graph of nodes that keeps shared references, in the official runtime's format
//! (apache-tvm-ffi 0.1.15), so each library loads the other's graphs.
//!
//! The graph is `{"root_index": N, "nodes": [...], "metadata": ...}` (metadata only when
//! given). Each node is `{"type": TYPE_KEY, "data": ...}`, written after the nodes it refers
//! to, and equal values (by map-key equality: same number, same string, same object) share
//! one node. The data: none for None; the value for bool, int and float; the string for
//! `ffi.String`, base64 for `ffi.Bytes`, the name for `DataType`, `[device_type, device_id]`
//! for `Device`, the dims for `ffi.Shape`; node indices for `ffi.Array` and `ffi.List`, and
//! alternating key and value indices for `ffi.Map` and `ffi.Dict`. A reflected object's data
//! is its index for an enum (`_int_index` of an `ffi.IntEnum`, else `_str_index`), what its
//! `__data_to_json__` type attribute returns, or else an object of its fields
//! (ancestors' first): None/bool/int/float/DataType fields inline, any other a node index.
//! Only types that can be created empty (a native creator or `__ffi_new__`) serialize that way.
//!
//! Loading reverses it: the enum instance registered under the index (the type's
//! `__ffi_enum__` state), `__data_from_json__` when registered, else an empty instance whose
//! fields are set through their setters, missing ones from their defaults.
//!
//! Where the official runtime recurses without bound (a graph whose nodes refer to
//! themselves, a List holding itself through an object), this reports an error instead:
//! a node that refers back to itself is refused, and so is nesting deeper than
//! [`MAX_DEPTH`](super::json_globals::MAX_DEPTH).

use pactum_sys::tvm_ffi::{TVMFFIFieldInfo, TVMFFITypeIndex, field_flags};

use super::builtin::{ANY, STR, typed};
use super::custom_dtypes::RegisteredCustomTypes;
use super::json_globals::{self, MAX_DEPTH};
use super::reflection;
use super::registry::BuiltinGlobal;
use pactum_core::any::Any;
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::is_instance;
use pactum_core::object::{ObjectRef, type_index_of_key, type_key_of};
use pactum_core::shape::Shape;
use pactum_core::{DataType, Device};

/// The four JSON graph globals.
pub(crate) fn serialization_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.ToJSONGraph", &[ANY, ANY], ANY, |a| {
            to_json_graph(&a.owned(0)?, a.owned(1)?)
        }),
        typed("ffi.ToJSONGraphString", &[ANY, ANY], STR, |a| {
            let graph = to_json_graph(&a.owned(0)?, a.owned(1)?)?;
            json_globals::stringify(graph.as_view(), 0)
        }),
        typed("ffi.FromJSONGraph", &[ANY], ANY, |a| {
            from_json_graph(&a.owned(0)?)
        }),
        typed("ffi.FromJSONGraphString", &[STR], ANY, |a| {
            from_json_graph(&json_globals::parse(a.string_bytes(0)?)?)
        }),
    ]
}

fn text(value: &str) -> Any {
    pactum_core::String::value_from_bytes(value.as_bytes())
}

/// The JSON graph of `value`, with `metadata` unless it is None.
fn to_json_graph(value: &Any, metadata: Any) -> Result<Any> {
    let mut writer = GraphWriter {
        index: Dict::new(),
        nodes: Vec::new(),
        active: Vec::new(),
    };
    let root = writer.node(value)?;
    let mut pairs = vec![
        (text("root_index"), Any::from(root)),
        (text("nodes"), Any::from(Array::new(writer.nodes))),
    ];
    if !metadata.is_none() {
        pairs.push((text("metadata"), metadata));
    }
    Ok(Any::from(Map::from_pairs(pairs)))
}

struct GraphWriter {
    /// Each value written so far, by map-key equality, to its node index.
    index: Dict,
    nodes: Vec<Any>,
    /// The Lists and Dicts being written, innermost last (also the nesting depth).
    active: Vec<usize>,
}

impl GraphWriter {
    fn node(&mut self, value: &Any) -> Result<i64> {
        if let Some(index) = self.index.get(value.as_view()) {
            return index.get::<i64>();
        }
        let view = value.as_view();
        let type_index = value.type_index();
        let (type_key, data) = match TVMFFITypeIndex(type_index) {
            TVMFFITypeIndex::NONE => ("None".to_owned(), None),
            TVMFFITypeIndex::BOOL => ("bool".to_owned(), Some(Any::from(view.get::<bool>()?))),
            TVMFFITypeIndex::INT => ("int".to_owned(), Some(Any::from(view.get::<i64>()?))),
            TVMFFITypeIndex::FLOAT => ("float".to_owned(), Some(Any::from(view.get::<f64>()?))),
            TVMFFITypeIndex::DATA_TYPE => (
                "DataType".to_owned(),
                Some(dtype_text(view.get::<DataType>()?)?),
            ),
            TVMFFITypeIndex::DEVICE => {
                let device = view.get::<Device>()?;
                let data = Array::new([
                    Any::from(i64::from(device.device_type.0)),
                    Any::from(i64::from(device.device_id)),
                ]);
                ("Device".to_owned(), Some(Any::from(data)))
            }
            TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                ("ffi.String".to_owned(), Some(value.clone()))
            }
            TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES => {
                let bytes = pactum_core::internal::view_bytes(view).unwrap_or(&[]);
                ("ffi.Bytes".to_owned(), Some(text(&base64_encode(bytes))))
            }
            TVMFFITypeIndex::ARRAY => {
                let items = view.get::<Array>()?.as_slice().to_vec();
                (
                    "ffi.Array".to_owned(),
                    Some(self.nested(value, None, |w| w.sequence(&items))?),
                )
            }
            TVMFFITypeIndex::LIST => {
                let items = view.get::<List>()?.to_vec();
                let cycle = "Cycle detected during serialization: a List contains itself";
                (
                    "ffi.List".to_owned(),
                    Some(self.nested(value, Some(cycle), |w| w.sequence(&items))?),
                )
            }
            TVMFFITypeIndex::MAP => {
                let entries = view.get::<Map>()?.entries();
                (
                    "ffi.Map".to_owned(),
                    Some(self.nested(value, None, |w| w.pairs(&entries))?),
                )
            }
            TVMFFITypeIndex::DICT => {
                let entries = view.get::<Dict>()?.entries();
                let cycle = "Cycle detected during serialization: a Dict contains itself";
                (
                    "ffi.Dict".to_owned(),
                    Some(self.nested(value, Some(cycle), |w| w.pairs(&entries))?),
                )
            }
            TVMFFITypeIndex::SHAPE => {
                let dims: Vec<Any> = view
                    .get::<Shape>()?
                    .as_slice()
                    .iter()
                    .map(|&d| Any::from(d))
                    .collect();
                ("ffi.Shape".to_owned(), Some(Any::from(Array::new(dims))))
            }
            _ => match value.as_object_ref() {
                Some(object) => {
                    let data = self.nested(value, None, |w| w.object_data(value, object))?;
                    (object.type_key(), Some(data))
                }
                None => {
                    return Err(Error::new(
                        ErrorKind::RUNTIME_ERROR,
                        format!("Cannot serialize type `{}`", value.type_key()),
                    ));
                }
            },
        };
        let mut node = vec![(text("type"), text(&type_key))];
        node.extend(data.map(|data| (text("data"), data)));
        let index = self.nodes.len() as i64;
        self.nodes.push(Any::from(Map::from_pairs(node)));
        self.index.insert(value.clone(), Any::from(index));
        Ok(index)
    }

    /// Runs `body` one level deeper, refusing cycles of mutable containers (those that name
    /// their `cycle` error) and nesting beyond [`MAX_DEPTH`].
    fn nested(
        &mut self,
        value: &Any,
        cycle: Option<&'static str>,
        body: impl FnOnce(&mut Self) -> Result<Any>,
    ) -> Result<Any> {
        let address = value.as_object_ref().map_or(0, |o| o.as_raw() as usize);
        if let Some(cycle) = cycle {
            if self.active.contains(&address) {
                return Err(Error::new(ErrorKind::VALUE_ERROR, cycle));
            }
        }
        if self.active.len() >= MAX_DEPTH {
            return Err(too_deep());
        }
        self.active.push(address);
        let data = body(self);
        self.active.pop();
        data
    }

    fn sequence(&mut self, items: &[Any]) -> Result<Any> {
        let indices = items
            .iter()
            .map(|item| self.node(item).map(Any::from))
            .collect::<Result<Vec<_>>>()?;
        Ok(Any::from(Array::new(indices)))
    }

    fn pairs(&mut self, entries: &[(Any, Any)]) -> Result<Any> {
        let mut indices = Vec::with_capacity(entries.len() * 2);
        for (key, value) in entries {
            indices.push(Any::from(self.node(key)?));
            indices.push(Any::from(self.node(value)?));
        }
        Ok(Any::from(Array::new(indices)))
    }

    /// A reflected object's data: an enum's index, its `__data_to_json__` hook's answer, or
    /// its fields.
    fn object_data(&mut self, value: &Any, object: &ObjectRef) -> Result<Any> {
        let type_index = object.type_index();
        if let Some(index_field) = enum_index_field(type_index) {
            return reflection::read_field_by_name(object, index_field);
        }
        if let Some(hook) = data_hook(type_index, "__data_to_json__")? {
            return hook.call(&[*value.as_view()]);
        }
        if !reflection::has_creator(type_index) {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "Type `{}` does not support ToJSONGraph (no native creator or __ffi_new__ type attr)",
                    object.type_key()
                ),
            ));
        }
        let mut fields = Vec::new();
        for field in reflection::fields_of(type_index) {
            let field_value = reflection::read_field(object, field)?;
            let view = field_value.as_view();
            let data = match TVMFFITypeIndex(field.field_static_type_index) {
                TVMFFITypeIndex::NONE => Any::default(),
                TVMFFITypeIndex::BOOL => Any::from(view.get::<bool>()?),
                TVMFFITypeIndex::INT => Any::from(view.get::<i64>()?),
                TVMFFITypeIndex::FLOAT => Any::from(view.get::<f64>()?),
                TVMFFITypeIndex::DATA_TYPE => dtype_text(view.get::<DataType>()?)?,
                _ => Any::from(self.node(&field_value)?),
            };
            fields.push((text(reflection::field_name(field)), data));
        }
        Ok(Any::from(Map::from_pairs(fields)))
    }
}

const INT_INDEX: &str = "_int_index";

/// The field an enum instance is saved by: `_int_index` for `ffi.IntEnum` types, `_str_index`
/// for other `ffi.Enum` types; None for any other type.
fn enum_index_field(type_index: i32) -> Option<&'static str> {
    let derives_from = |key| type_index_of_key(key).is_ok_and(|base| is_instance(type_index, base));
    if derives_from("ffi.IntEnum") {
        Some(INT_INDEX)
    } else if derives_from("ffi.Enum") {
        Some("_str_index")
    } else {
        None
    }
}

/// The instance of enum type `type_index` registered under `index` in its `__ffi_enum__`
/// state (the `indexes` Dict), or the official `ValueError`.
fn enum_instance(type_index: i32, index: Any) -> Result<Any> {
    let state = reflection::type_attr(type_index, "__ffi_enum__");
    if let Some(state) = state.as_ref().and_then(Any::as_object_ref) {
        let indexes = reflection::read_field_by_name(state, "indexes")?.cast::<Dict>()?;
        if let Some(instance) = indexes.get(index.as_view()) {
            return Ok(instance);
        }
    }
    let shown = match TVMFFITypeIndex(index.type_index()) {
        TVMFFITypeIndex::INT => index.get::<i64>()?.to_string(),
        _ => std::string::String::from_utf8_lossy(&cast_str(&index)?).into_owned(),
    };
    Err(Error::new(
        ErrorKind::VALUE_ERROR,
        format!(
            "Enum `{}` has no instance with index {shown}",
            type_key_of(type_index)
        ),
    ))
}

/// A data type's name, as the official runtime stores it (a heap String).
fn dtype_text(dtype: DataType) -> Result<Any> {
    Ok(pactum_core::internal::heap_byte_string(
        dtype
            .to_runtime_string_with(&RegisteredCustomTypes)?
            .as_bytes(),
        pactum_core::internal::ByteString::Str,
    ))
}

/// The `name` type attribute of `type_index` as a Function, if registered.
fn data_hook(type_index: i32, name: &str) -> Result<Option<Function>> {
    reflection::type_attr(type_index, name)
        .map(|hook| hook.cast::<Function>())
        .transpose()
}

fn too_deep() -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("Invalid JSON Object Graph: nesting deeper than {MAX_DEPTH} levels"),
    )
}

fn invalid(what: &str) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("Invalid JSON Object Graph, expected {what}"),
    )
}

/// The value a JSON graph describes.
fn from_json_graph(graph: &Any) -> Result<Any> {
    let graph = match TVMFFITypeIndex(graph.type_index()) {
        TVMFFITypeIndex::MAP => graph.get::<Map>()?,
        _ => return Err(invalid("an object")),
    };
    let root = graph
        .get(text("root_index").as_view())
        .filter(|root| root.type_index() == TVMFFITypeIndex::INT.0)
        .ok_or_else(|| invalid("`root_index` integer field"))?
        .get::<i64>()?;
    let nodes = graph
        .get(text("nodes").as_view())
        .filter(|nodes| nodes.type_index() == TVMFFITypeIndex::ARRAY.0)
        .ok_or_else(|| invalid("`nodes` array field"))?
        .get::<Array>()?;
    let mut reader = GraphReader {
        decoded: vec![None; nodes.len()],
        nodes,
        active: Vec::new(),
    };
    reader.node(root)
}

struct GraphReader {
    nodes: Array,
    /// Each node decoded so far.
    decoded: Vec<Option<Any>>,
    /// The nodes being decoded, innermost last.
    active: Vec<usize>,
}

impl GraphReader {
    fn node(&mut self, index: i64) -> Result<Any> {
        let position = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.decoded.len())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("Invalid JSON Object Graph: invalid node index {index}"),
                )
            })?;
        if let Some(value) = &self.decoded[position] {
            return Ok(value.clone());
        }
        if self.active.contains(&position) {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("Invalid JSON Object Graph: node {index} refers to itself"),
            ));
        }
        if self.active.len() >= MAX_DEPTH {
            return Err(too_deep());
        }
        self.active.push(position);
        let value = self.decode(position);
        self.active.pop();
        let value = value?;
        self.decoded[position] = Some(value.clone());
        Ok(value)
    }

    fn decode(&mut self, position: usize) -> Result<Any> {
        let node = cast_map(&self.nodes.as_slice()[position])?;
        let type_key = cast_str(&lookup(&node, "type")?)?;
        let type_index = type_index_of_key(&std::string::String::from_utf8_lossy(&type_key))?;
        if type_index == TVMFFITypeIndex::NONE.0 {
            return Ok(Any::default());
        }
        let data = lookup(&node, "data")?;
        Ok(match TVMFFITypeIndex(type_index) {
            TVMFFITypeIndex::BOOL => Any::from(cast_bool(&data)?),
            TVMFFITypeIndex::INT => Any::from(cast_int(&data)?),
            TVMFFITypeIndex::FLOAT => Any::from(cast_float(&data)?),
            TVMFFITypeIndex::DATA_TYPE => Any::from(parse_dtype(&data)?),
            TVMFFITypeIndex::DEVICE => {
                let dims = cast_int_array(&data)?;
                let [device_type, device_id] = dims[..] else {
                    return Err(Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!(
                            "Invalid JSON Object Graph: Device data must be an array of [device_type, device_id], got {} element(s)",
                            dims.len()
                        ),
                    ));
                };
                // The official runtime reads both as C `int`s: wider values wrap.
                Any::from(Device {
                    device_type: pactum_sys::dlpack::DLDeviceType(device_type as i32),
                    device_id: device_id as i32,
                })
            }
            TVMFFITypeIndex::STR => {
                cast_str(&data)?;
                data
            }
            TVMFFITypeIndex::BYTES => {
                Any::from(pactum_core::Bytes::new(&base64_decode(&cast_str(&data)?)?))
            }
            TVMFFITypeIndex::MAP => Any::from(Map::from_pairs(self.pairs(&data)?)),
            TVMFFITypeIndex::DICT => Any::from(Dict::from_pairs(self.pairs(&data)?)),
            TVMFFITypeIndex::ARRAY => Any::from(Array::new(self.sequence(&data)?)),
            TVMFFITypeIndex::LIST => Any::from(List::from_values(self.sequence(&data)?)),
            TVMFFITypeIndex::SHAPE => Any::from(Shape::new(&cast_int_array(&data)?)),
            _ => self.object(type_index, &data)?,
        })
    }

    fn sequence(&mut self, data: &Any) -> Result<Vec<Any>> {
        cast_array(data)?
            .iter()
            .map(|item| self.node(cast_int(item)?))
            .collect()
    }

    fn pairs(&mut self, data: &Any) -> Result<Vec<(Any, Any)>> {
        let items = cast_array(data)?;
        if items.len() % 2 != 0 {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!(
                    "Invalid JSON Object Graph: Map/Dict data must contain an even number of [key, value] entries, got {}",
                    items.len()
                ),
            ));
        }
        items
            .chunks_exact(2)
            .map(|pair| {
                let (key, value) = (cast_int(&pair[0])?, cast_int(&pair[1])?);
                // The official runtime decodes the value's node before the key's.
                let value = self.node(value)?;
                Ok((self.node(key)?, value))
            })
            .collect()
    }

    /// A reflected object: the enum instance `data` indexes, the `__data_from_json__` hook's
    /// answer, or an empty instance with its fields set from `data`.
    fn object(&mut self, type_index: i32, data: &Any) -> Result<Any> {
        match enum_index_field(type_index) {
            Some(INT_INDEX) => return enum_instance(type_index, Any::from(cast_int(data)?)),
            Some(_) => {
                cast_str(data)?;
                return enum_instance(type_index, data.clone());
            }
            None => {}
        }
        if let Some(hook) = data_hook(type_index, "__data_from_json__")? {
            return hook.call(&[*data.as_view()]);
        }
        let object = reflection::create_empty_object(type_index)?;
        let fields = cast_map(data)?;
        for field in reflection::fields_of(type_index) {
            let name = reflection::field_name(field);
            match fields.get(text(name).as_view()) {
                Some(field_data) => {
                    let value = self.field(field, &field_data)?;
                    reflection::write_field(&object, field, value.as_view())?;
                }
                None if field.flags & field_flags::HAS_DEFAULT != 0 => {
                    reflection::set_field_to_default(&object, field)?;
                }
                None => {
                    return Err(Error::new(
                        ErrorKind::TYPE_ERROR,
                        format!(
                            "Required field `{name}` not set in type `{}`",
                            type_key_of(type_index)
                        ),
                    ));
                }
            }
        }
        Ok(Any::from(object))
    }

    fn field(&mut self, field: &TVMFFIFieldInfo, data: &Any) -> Result<Any> {
        Ok(match TVMFFITypeIndex(field.field_static_type_index) {
            TVMFFITypeIndex::NONE => Any::default(),
            TVMFFITypeIndex::BOOL => Any::from(cast_bool(data)?),
            TVMFFITypeIndex::INT => Any::from(cast_int(data)?),
            TVMFFITypeIndex::FLOAT => Any::from(cast_float(data)?),
            TVMFFITypeIndex::DATA_TYPE => Any::from(parse_dtype(data)?),
            _ => self.node(cast_int(data)?)?,
        })
    }
}

/// The official `TypeError` of a failed conversion.
fn cast_error(from: &str, to: &str) -> Error {
    Error::new(
        ErrorKind::TYPE_ERROR,
        format!("Cannot convert from type `{from}` to `{to}`"),
    )
}

/// `map[key]`, or the official `KeyError`.
fn lookup(map: &Map, key: &str) -> Result<Any> {
    map.get(text(key).as_view())
        .ok_or_else(|| Error::new(ErrorKind::KEY_ERROR, "key is not in Map"))
}

fn cast_int(value: &Any) -> Result<i64> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => value.get::<i64>(),
        _ => Err(cast_error(&value.type_key(), "int")),
    }
}

fn cast_bool(value: &Any) -> Result<bool> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => value.get::<bool>(),
        _ => Err(cast_error(&value.type_key(), "bool")),
    }
}

fn cast_float(value: &Any) -> Result<f64> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::FLOAT | TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => value.get::<f64>(),
        _ => Err(cast_error(&value.type_key(), "float")),
    }
}

fn cast_str(value: &Any) -> Result<Vec<u8>> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
            Ok(pactum_core::internal::view_bytes(value.as_view())
                .unwrap_or(&[])
                .to_vec())
        }
        _ => Err(cast_error(&value.type_key(), "str")),
    }
}

/// A Map, or a Dict's entries as a Map (the official `Map<Any, Any>` conversion).
fn cast_map(value: &Any) -> Result<Map> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::MAP => value.get::<Map>(),
        TVMFFITypeIndex::DICT => Ok(Map::from_pairs(value.get::<Dict>()?.entries())),
        _ => Err(cast_error(&value.type_key(), "Map<Any, Any>")),
    }
}

/// The items of an Array or a List (the official `Array<Any>` conversion).
fn cast_array(value: &Any) -> Result<Vec<Any>> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::ARRAY => Ok(value.get::<Array>()?.as_slice().to_vec()),
        TVMFFITypeIndex::LIST => Ok(value.get::<List>()?.to_vec()),
        _ => Err(cast_error(&value.type_key(), "Array<Any>")),
    }
}

/// An Array or List of ints (the official `Array<int>` conversion, whose error names the
/// first item that is not one).
fn cast_int_array(value: &Any) -> Result<Vec<i64>> {
    let items = cast_array(value).map_err(|_| cast_error(&value.type_key(), "Array<int>"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            cast_int(item).map_err(|_| {
                cast_error(
                    &format!("Array[index {i}: {}]", type_key_of(item.type_index())),
                    "Array<int>",
                )
            })
        })
        .collect()
}

fn parse_dtype(data: &Any) -> Result<DataType> {
    let name = cast_str(data)?;
    DataType::parse_with(
        &std::string::String::from_utf8_lossy(&name),
        &RegisteredCustomTypes,
    )
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding.
fn base64_encode(bytes: &[u8]) -> std::string::String {
    let mut out = std::string::String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = chunk
            .iter()
            .enumerate()
            .fold(0u32, |w, (i, &b)| w | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(
                    BASE64_ALPHABET[(word >> (18 - 6 * i)) as usize & 63],
                ));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Base64 as the official runtime decodes it: the length must be a multiple of 4; a byte
/// outside the alphabet counts as zero, and a `=` in the third or fourth place of a group
/// drops that group's second or third byte.
fn base64_decode(text: &[u8]) -> Result<Vec<u8>> {
    if text.len() % 4 != 0 {
        return Err(Error::new(
            ErrorKind::INTERNAL_ERROR,
            "Check failed: (bytes.size % 4 == 0) is false: invalid base64 encoding",
        ));
    }
    let sextet = |byte: u8| BASE64_ALPHABET.iter().position(|&c| c == byte).unwrap_or(0) as u32;
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for group in text.chunks_exact(4) {
        let word = group.iter().fold(0u32, |w, &b| w << 6 | sextet(b));
        out.push((word >> 16) as u8);
        if group[2] != b'=' {
            out.push((word >> 8) as u8);
        }
        if group[3] != b'=' {
            out.push(word as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{base64_decode, base64_encode, from_json_graph, to_json_graph};
    use crate::json_globals::{parse, stringify};
    use pactum_core::any::Any;
    use pactum_core::containers::{Array, List, Map};

    fn save(value: Any) -> std::string::String {
        let graph = to_json_graph(&value, Any::default()).unwrap();
        let text = stringify(graph.as_view(), 0).unwrap();
        text.get::<std::string::String>().unwrap()
    }

    fn load(text: &str) -> pactum_core::Result<Any> {
        from_json_graph(&parse(text.as_bytes()).unwrap())
    }

    #[test]
    fn containers_round_trip_with_shared_nodes() {
        // The text apache-tvm-ffi 0.1.15.post2 writes for the same value.
        let shared = Any::from(Array::new([Any::from(1i64), Any::from("x")]));
        let list = List::from_values([shared.clone(), shared, Any::from(2.5f64)]);
        let map = Map::from_pairs([(Any::from("k"), Any::from(list))]);
        let text = save(Any::from(map));
        assert_eq!(
            text,
            concat!(
                r#"{"root_index":6,"nodes":[{"type":"ffi.String","data":"k"},"#,
                r#"{"type":"int","data":1},{"type":"ffi.String","data":"x"},"#,
                r#"{"type":"ffi.Array","data":[1,2]},{"type":"float","data":2.5},"#,
                r#"{"type":"ffi.List","data":[3,3,4]},{"type":"ffi.Map","data":[0,5]}]}"#
            )
        );
        let loaded = load(&text).unwrap().get::<Map>().unwrap();
        let list = loaded
            .get(Any::from("k").as_view())
            .unwrap()
            .get::<List>()
            .unwrap();
        let items = list.to_vec();
        assert!(
            items[0]
                .as_object_ref()
                .unwrap()
                .ptr_eq(items[1].as_object_ref().unwrap())
        );
        assert_eq!(save(Any::from(loaded)), text);
    }

    #[test]
    fn malformed_graphs_are_value_errors() {
        for (text, message) in [
            (
                r#"{"root_index":0,"nodes":[]}"#,
                "Invalid JSON Object Graph: invalid node index 0",
            ),
            (
                r#"{"root_index":0,"nodes":[{"type":"ffi.Array","data":[0]}]}"#,
                "Invalid JSON Object Graph: node 0 refers to itself",
            ),
            (
                r#"{"root_index":0,"nodes":[{"type":"ffi.Dict","data":[0,0,0]}]}"#,
                "Invalid JSON Object Graph: Map/Dict data must contain an even number of [key, value] entries, got 3",
            ),
            (
                r#"{"root_index":0,"nodes":[{"type":"Device","data":[1,2,3]}]}"#,
                "Invalid JSON Object Graph: Device data must be an array of [device_type, device_id], got 3 element(s)",
            ),
            (
                r#"{"nodes":[]}"#,
                "Invalid JSON Object Graph, expected `root_index` integer field",
            ),
        ] {
            assert_eq!(load(text).unwrap_err().message(), message, "{text}");
        }
    }

    #[test]
    fn base64_matches_the_official_codec() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"a", "YQ=="),
            (b"ab", "YWI="),
            (b"abc", "YWJj"),
            (b"hello", "aGVsbG8="),
            (b"\x00\xff\x01", "AP8B"),
        ] {
            assert_eq!(base64_encode(bytes), text);
            assert_eq!(base64_decode(text.as_bytes()).unwrap(), bytes);
        }
        // Leniencies of the official decoder, measured on apache-tvm-ffi 0.1.15.post2.
        assert_eq!(base64_decode(b"a=bc").unwrap(), b"h\x06\xdc");
        assert_eq!(base64_decode(b"!!!!").unwrap(), b"\x00\x00\x00");
        assert_eq!(base64_decode(b"YQ=A").unwrap(), b"a\x00");
        let error = base64_decode(b"abc").unwrap_err();
        assert!(
            error.message().contains("invalid base64 encoding"),
            "{error}"
        );
    }
}
