//! The `__ffi_convert__` type attributes of the built-in object types and the enum bases: a
//! Function converting a value to the type as the official runtime's casts do (an Array from
//! a List, a Map from a Dict, a Shape from a sequence of ints, ...), failing with its
//! `Cannot cast from` message. The Python package converts values for typed fields with them.

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use pactum_core::any::{Any, AnyView};
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::is_instance;
use pactum_core::shape::Shape;

fn cannot_cast(value: &AnyView<'_>, target: &str) -> Error {
    Error::new(
        ErrorKind::TYPE_ERROR,
        format!("Cannot cast from `{}` to `{target}`", value.type_key()),
    )
}

/// Which conversion a type gets.
#[derive(Clone, Copy)]
enum Target {
    Object,
    Str,
    Bytes,
    Error,
    Function,
    Shape,
    Tensor,
    Array,
    Map,
    List,
    Dict,
    /// An instance of this runtime type (the enum bases).
    InstanceOf(i32, &'static str),
}

fn convert(target: Target, value: &AnyView<'_>) -> Result<Any> {
    let index = value.type_index();
    let is = |t: TVMFFITypeIndex| index == t.0;
    let keep = || value.to_any();
    match target {
        Target::Object if value.is_none() || value.object_ptr().is_some() => keep(),
        Target::Str if is(TVMFFITypeIndex::SMALL_STR) || is(TVMFFITypeIndex::STR) => keep(),
        Target::Bytes if is(TVMFFITypeIndex::SMALL_BYTES) || is(TVMFFITypeIndex::BYTES) => keep(),
        Target::Error if is(TVMFFITypeIndex::ERROR) => keep(),
        Target::Function if value.is_none() || is(TVMFFITypeIndex::FUNCTION) => keep(),
        Target::Tensor if value.is_none() || is(TVMFFITypeIndex::TENSOR) => keep(),
        Target::Shape if is(TVMFFITypeIndex::SHAPE) => keep(),
        Target::Shape if is(TVMFFITypeIndex::ARRAY) || is(TVMFFITypeIndex::LIST) => {
            let items = sequence_items(value)?;
            let dims = items
                .iter()
                .map(|item| {
                    item.get::<i64>()
                        .map_err(|_| cannot_cast(value, "ffi.Shape"))
                })
                .collect::<Result<Vec<i64>>>()?;
            Ok(Any::from(Shape::new(&dims)))
        }
        Target::Array if is(TVMFFITypeIndex::ARRAY) => keep(),
        Target::Array if is(TVMFFITypeIndex::LIST) => {
            Ok(Any::from(Array::new(sequence_items(value)?)))
        }
        Target::List if is(TVMFFITypeIndex::LIST) => keep(),
        Target::List if is(TVMFFITypeIndex::ARRAY) => {
            Ok(Any::from(List::from_values(sequence_items(value)?)))
        }
        Target::Map if is(TVMFFITypeIndex::MAP) => keep(),
        Target::Map if is(TVMFFITypeIndex::DICT) => Ok(Any::from(value.get::<Dict>()?.to_map())),
        Target::Dict if is(TVMFFITypeIndex::DICT) => keep(),
        Target::Dict if is(TVMFFITypeIndex::MAP) => {
            Ok(Any::from(Dict::from_pairs(value.get::<Map>()?.entries())))
        }
        Target::InstanceOf(type_index, _)
            if value.object_ptr().is_some() && is_instance(index, type_index) =>
        {
            keep()
        }
        _ => Err(cannot_cast(value, target_name(target))),
    }
}

fn target_name(target: Target) -> &'static str {
    match target {
        Target::Object => "ffi.Object",
        Target::Str => "str",
        Target::Bytes => "bytes",
        Target::Error => "ffi.Error",
        Target::Function => "ffi.Function",
        Target::Shape => "ffi.Shape",
        Target::Tensor => "ffi.Tensor",
        Target::Array => "Array<Any>",
        Target::Map => "Map<Any, Any>",
        Target::List => "List<Any>",
        Target::Dict => "Dict<Any, Any>",
        Target::InstanceOf(_, key) => key,
    }
}

fn sequence_items(value: &AnyView<'_>) -> Result<Vec<Any>> {
    if value.type_index() == TVMFFITypeIndex::ARRAY.0 {
        Ok(value.get::<Array>()?.as_slice().to_vec())
    } else {
        Ok(value.get::<List>()?.to_vec())
    }
}

fn converter(target: Target) -> Any {
    Any::from(Function::from_packed(move |args: &[AnyView<'_>]| {
        let [value] = args else {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!("__ffi_convert__ takes 1 argument, got {}", args.len()),
            ));
        };
        convert(target, value)
    }))
}

/// `(type index, __ffi_convert__)` for the built-in types, in the official order.
pub(crate) fn builtin_converters() -> Vec<(i32, Any)> {
    [
        (TVMFFITypeIndex::OBJECT, Target::Object),
        (TVMFFITypeIndex::STR, Target::Str),
        (TVMFFITypeIndex::BYTES, Target::Bytes),
        (TVMFFITypeIndex::ERROR, Target::Error),
        (TVMFFITypeIndex::FUNCTION, Target::Function),
        (TVMFFITypeIndex::SHAPE, Target::Shape),
        (TVMFFITypeIndex::TENSOR, Target::Tensor),
        (TVMFFITypeIndex::ARRAY, Target::Array),
        (TVMFFITypeIndex::MAP, Target::Map),
        (TVMFFITypeIndex::LIST, Target::List),
        (TVMFFITypeIndex::DICT, Target::Dict),
    ]
    .into_iter()
    .map(|(index, target)| (index.0, converter(target)))
    .collect()
}

/// `__ffi_convert__` of a runtime type accepting its own instances (`ffi.IntEnum`, ...).
pub(crate) fn instance_converter(type_index: i32, type_key: &'static str) -> Any {
    converter(Target::InstanceOf(type_index, type_key))
}
