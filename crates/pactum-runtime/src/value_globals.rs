//! The built-in `ffi.*` globals over values: strings, bytes, shapes, the containers (Array,
//! List, Map, Dict), type keys and the runtime's singleton objects.

use std::sync::OnceLock;

use core::ffi::c_int;

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIObject, TVMFFISeqCell, TVMFFITypeIndex};

use super::builtin::{
    ANY, ARRAY, ARRAY_OF_STR, BOOL, BYTES, DEVICE, DICT, DICT_OF_ANY, FALL_THROUGH, FUNCTION, INT,
    LIST, LIST_OF_ANY, MAP, NONE, OBJECT, STR, checked_index, index_error, packed, typed,
    with_fast_entry,
};
use super::registry::BuiltinGlobal;
use super::types;
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::{Array, Dict, List, Map};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::header;
use pactum_core::object::ObjectRef;
use pactum_core::shape::Shape;

/// A process-wide singleton `ffi.Object` (a plain object with no payload).
fn singleton(cell: &'static OnceLock<ObjectRef>) -> ObjectRef {
    cell.get_or_init(|| {
        let ptr = pactum_core::internal::new_object_box(TVMFFITypeIndex::OBJECT.0, ());
        // SAFETY: a fresh object whose reference the singleton keeps forever.
        unsafe { ObjectRef::from_raw_owned(ptr.cast()) }
    })
    .clone()
}

static INVALID_OBJECT: OnceLock<ObjectRef> = OnceLock::new();
static KWARGS_OBJECT: OnceLock<ObjectRef> = OnceLock::new();

/// The kwargs marker `ffi.GetKwargsObject` returns.
pub(crate) fn kwargs() -> ObjectRef {
    singleton(&KWARGS_OBJECT)
}

/// The "missing" marker `ffi.MapGetItemOrMissing` returns.
pub(crate) fn missing() -> ObjectRef {
    singleton(&INVALID_OBJECT)
}

/// The key-value arguments of `ffi.Map(k0, v0, k1, v1, ...)`, handed to `insert` in order;
/// an odd count is the official check failure.
fn for_each_pair(args: &[AnyView<'_>], mut insert: impl FnMut(Any, Any)) -> Result<()> {
    if args.len() % 2 != 0 {
        return Err(Error::new(
            ErrorKind::INTERNAL_ERROR,
            format!(
                "Check failed: args.size() % 2 == 0 ({} vs. 0) : ",
                args.len() % 2
            ),
        ));
    }
    // Straight into the container: no vector of owned pairs in between.
    for kv in args.chunks_exact(2) {
        insert(kv[0].to_any()?, kv[1].to_any()?);
    }
    Ok(())
}

/// A forward iterator over a snapshot of entries: command 0 = key, 1 = value, else advance
/// and report whether an entry remains.
fn forward_iter(entries: Vec<(Any, Any)>) -> Function {
    let position = std::sync::atomic::AtomicUsize::new(0);
    Function::from_packed(move |args: &[AnyView<'_>]| {
        let command = args
            .first()
            .map(|a| a.get::<i64>())
            .transpose()?
            .unwrap_or(2);
        let at = position.load(std::sync::atomic::Ordering::Relaxed);
        let entry = entries.get(at);
        match command {
            0 => Ok(entry.map(|(k, _)| k.clone()).unwrap_or_default()),
            1 => Ok(entry.map(|(_, v)| v.clone()).unwrap_or_default()),
            _ => {
                let next = (at + 1).min(entries.len());
                position.store(next, std::sync::atomic::Ordering::Relaxed);
                Ok(Any::from(next < entries.len()))
            }
        }
    })
}

/// Strings, bytes, shapes and the containers: construction, access and mutation.
pub(crate) fn container_globals() -> Vec<BuiltinGlobal> {
    vec![
        with_fast_entry(
            typed("ffi.String", &[STR], STR, |a| {
                // Any string, UTF-8 or not. A string value is returned as itself (the same
                // object, as the official runtime does); a C string is copied.
                let bytes = a.string_bytes(0)?;
                match TVMFFITypeIndex(a.view(0).type_index()) {
                    TVMFFITypeIndex::RAW_STR => Ok(pactum_core::String::value_from_bytes(bytes)),
                    _ => a.view(0).to_any(),
                }
            }),
            string_fast,
        ),
        typed("ffi.Bytes", &[BYTES], BYTES, |a| {
            Ok(a.get::<pactum_core::Bytes>(0)?.into())
        }),
        packed("ffi.Shape", |args| {
            let dims = args
                .iter()
                .map(|a| {
                    a.get::<i64>().map_err(|_| {
                        Error::new(
                            ErrorKind::VALUE_ERROR,
                            "Expect shape to take list of int arguments",
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Shape::new(&dims).into())
        }),
        packed("ffi.Array", |args| Ok(Array::from_views(args)?.into())),
        typed("ffi.ArrayGetItem", &[ARRAY, INT], ANY, |a| {
            let array = a.get::<Array>(0)?;
            let index = checked_index(a.get::<i64>(1)?, array.len())?;
            Ok(array.as_slice()[index].clone())
        }),
        with_fast_entry(
            typed("ffi.ArraySize", &[ARRAY], INT, |a| {
                Ok(Any::from(a.get::<Array>(0)?.len() as i64))
            }),
            array_size_fast,
        ),
        typed("ffi.ArrayContains", &[ARRAY, ANY], BOOL, |a| {
            let array = a.get::<Array>(0)?;
            let needle = a.owned(1)?;
            Ok(Any::from(array.iter().any(|v| {
                pactum_core::internal::any_equal(v.as_view(), needle.as_view())
            })))
        }),
        packed("ffi.List", |args| {
            let values = args
                .iter()
                .map(AnyView::to_any)
                .collect::<Result<Vec<_>>>()?;
            Ok(List::from_values(values).into())
        }),
        typed("ffi.ListGetItem", &[LIST, INT], ANY, |a| {
            let list = a.get::<List>(0)?;
            let index = a.get::<i64>(1)?;
            let size = list.len();
            list.get(checked_index(index, size)?)
                .ok_or_else(|| index_error(index, size))
        }),
        typed("ffi.ListSetItem", &[LIST_OF_ANY, INT, ANY], NONE, |a| {
            let list = a.get::<List>(0)?;
            let index = a.get::<i64>(1)?;
            let size = list.len();
            list.set(checked_index(index, size)?, a.owned(2)?)?;
            Ok(Any::none())
        }),
        typed("ffi.ListSize", &[LIST], INT, |a| {
            Ok(Any::from(a.get::<List>(0)?.len() as i64))
        }),
        typed("ffi.ListContains", &[LIST, ANY], BOOL, |a| {
            let list = a.get::<List>(0)?;
            let needle = a.owned(1)?;
            Ok(Any::from(list.to_vec().iter().any(|v| {
                pactum_core::internal::any_equal(v.as_view(), needle.as_view())
            })))
        }),
        typed("ffi.ListAppend", &[LIST_OF_ANY, ANY], NONE, |a| {
            a.get::<List>(0)?.push(a.owned(1)?);
            Ok(Any::none())
        }),
        typed("ffi.ListInsert", &[LIST_OF_ANY, INT, ANY], NONE, |a| {
            let list = a.get::<List>(0)?;
            let index = a.get::<i64>(1)?;
            let size = list.len();
            let index = usize::try_from(index)
                .ok()
                .filter(|&i| i <= size)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::INDEX_ERROR,
                        format!("Index {index} out of bounds [0, {size}]"),
                    )
                })?;
            list.insert(index, a.owned(2)?)?;
            Ok(Any::none())
        }),
        typed("ffi.ListPop", &[LIST_OF_ANY, INT], ANY, |a| {
            let list = a.get::<List>(0)?;
            let index = a.get::<i64>(1)?;
            list.remove(checked_index(index, list.len())?)
        }),
        typed("ffi.ListErase", &[LIST_OF_ANY, INT], NONE, |a| {
            let list = a.get::<List>(0)?;
            let index = a.get::<i64>(1)?;
            list.remove(checked_index(index, list.len())?)?;
            Ok(Any::none())
        }),
        typed("ffi.ListEraseRange", &[LIST_OF_ANY, INT, INT], NONE, |a| {
            let list = a.get::<List>(0)?;
            let (start, end) = (a.get::<i64>(1)?, a.get::<i64>(2)?);
            if start == end {
                return Ok(Any::none());
            }
            let size = list.len() as i64;
            if !(0 <= start && start < end && end <= size) {
                return Err(Error::new(
                    ErrorKind::INDEX_ERROR,
                    format!("Erase range [{start}, {end}) out of bounds {size}"),
                ));
            }
            for _ in start..end {
                list.remove(start as usize)?;
            }
            Ok(Any::none())
        }),
        typed(
            "ffi.ListReplaceSlice",
            &[LIST_OF_ANY, INT, INT, LIST_OF_ANY],
            NONE,
            |a| {
                let list = a.get::<List>(0)?;
                let (start, end) = (a.get::<i64>(1)?, a.get::<i64>(2)?);
                let replacement = a.get::<List>(3)?.to_vec();
                let mut values = list.to_vec();
                let size = values.len() as i64;
                if !(0 <= start && start <= end && end <= size) {
                    return Err(Error::new(
                        ErrorKind::INDEX_ERROR,
                        format!("Replace range [{start}, {end}) out of bounds {size}"),
                    ));
                }
                values.splice(start as usize..end as usize, replacement);
                list.clear();
                for value in values {
                    list.push(value);
                }
                Ok(Any::none())
            },
        ),
        typed("ffi.ListReverse", &[LIST_OF_ANY], NONE, |a| {
            let list = a.get::<List>(0)?;
            let mut values = list.to_vec();
            values.reverse();
            list.clear();
            for value in values {
                list.push(value);
            }
            Ok(Any::none())
        }),
        typed("ffi.ListClear", &[LIST_OF_ANY], NONE, |a| {
            a.get::<List>(0)?.clear();
            Ok(Any::none())
        }),
        typed("ffi.ListReserve", &[LIST_OF_ANY, INT], NONE, |a| {
            let capacity = a.get::<i64>(1)?;
            a.get::<List>(0)?
                .reserve(usize::try_from(capacity).unwrap_or(0));
            Ok(Any::none())
        }),
        packed("ffi.Map", |args| {
            let mut map = Map::new();
            for_each_pair(args, |key, value| map.insert(key, value))?;
            Ok(map.into())
        }),
        typed("ffi.MapSize", &[MAP], INT, |a| {
            Ok(Any::from(a.get::<Map>(0)?.len() as i64))
        }),
        typed("ffi.MapGetItem", &[MAP, ANY], ANY, |a| {
            a.get::<Map>(0)?
                .get(a.owned(1)?.as_view())
                .ok_or_else(|| Error::new(ErrorKind::KEY_ERROR, "key is not in Map"))
        }),
        typed("ffi.MapCount", &[MAP, ANY], INT, |a| {
            Ok(Any::from(
                a.get::<Map>(0)?.contains_key(a.owned(1)?.as_view()) as i64,
            ))
        }),
        typed("ffi.MapForwardIterFunctor", &[MAP], FUNCTION, |a| {
            Ok(forward_iter(a.get::<Map>(0)?.entries()).into())
        }),
        typed("ffi.MapGetItemOrMissing", &[MAP, ANY], ANY, |a| {
            Ok(a.get::<Map>(0)?
                .get(a.owned(1)?.as_view())
                .unwrap_or_else(|| Any::from(missing())))
        }),
        packed("ffi.Dict", |args| {
            let dict = Dict::new();
            for_each_pair(args, |key, value| dict.insert(key, value))?;
            Ok(dict.into())
        }),
        typed("ffi.DictSize", &[DICT], INT, |a| {
            Ok(Any::from(a.get::<Dict>(0)?.len() as i64))
        }),
        typed("ffi.DictGetItem", &[DICT, ANY], ANY, |a| {
            a.get::<Dict>(0)?
                .get(a.owned(1)?.as_view())
                .ok_or_else(|| Error::new(ErrorKind::KEY_ERROR, "key is not in Map"))
        }),
        typed("ffi.DictSetItem", &[DICT_OF_ANY, ANY, ANY], NONE, |a| {
            a.get::<Dict>(0)?.insert(a.owned(1)?, a.owned(2)?);
            Ok(Any::none())
        }),
        typed("ffi.DictCount", &[DICT, ANY], INT, |a| {
            Ok(Any::from(
                a.get::<Dict>(0)?.contains_key(a.owned(1)?.as_view()) as i64,
            ))
        }),
        typed("ffi.DictErase", &[DICT_OF_ANY, ANY], NONE, |a| {
            a.get::<Dict>(0)?.remove(a.owned(1)?.as_view());
            Ok(Any::none())
        }),
        typed("ffi.DictClear", &[DICT_OF_ANY], NONE, |a| {
            a.get::<Dict>(0)?.clear();
            Ok(Any::none())
        }),
        typed("ffi.DictForwardIterFunctor", &[DICT], FUNCTION, |a| {
            Ok(forward_iter(a.get::<Dict>(0)?.entries()).into())
        }),
        typed("ffi.DictGetItemOrMissing", &[DICT, ANY], ANY, |a| {
            Ok(a.get::<Dict>(0)?
                .get(a.owned(1)?.as_view())
                .unwrap_or_else(|| Any::from(missing())))
        }),
        typed("ffi.ContainerFindFirstNonCPUDevice", &[ANY], DEVICE, |a| {
            Ok(Any::from(
                first_non_cpu_device(a.view(0)).unwrap_or(pactum_core::Device::CPU),
            ))
        }),
    ]
}

/// The first tensor device that is not the CPU, searching containers recursively.
fn first_non_cpu_device(value: &AnyView<'_>) -> Option<pactum_core::Device> {
    fn search(values: impl IntoIterator<Item = Any>) -> Option<pactum_core::Device> {
        values
            .into_iter()
            .find_map(|v| first_non_cpu_device(v.as_view()))
    }
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::TENSOR => {
            let device = value.get::<pactum_core::Tensor>().ok()?.device();
            (device.device_type != pactum_sys::dlpack::DLDeviceType::CPU).then_some(device)
        }
        TVMFFITypeIndex::ARRAY => search(
            value
                .get::<Array>()
                .ok()?
                .iter()
                .cloned()
                .collect::<Vec<_>>(),
        ),
        TVMFFITypeIndex::LIST => search(value.get::<List>().ok()?.to_vec()),
        TVMFFITypeIndex::MAP => search(
            value
                .get::<Map>()
                .ok()?
                .entries()
                .into_iter()
                .flat_map(|(k, v)| [k, v]),
        ),
        TVMFFITypeIndex::DICT => search(
            value
                .get::<Dict>()
                .ok()?
                .entries()
                .into_iter()
                .flat_map(|(k, v)| [k, v]),
        ),
        _ => None,
    }
}

/// Type keys and the runtime's singleton objects.
pub(crate) fn object_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.GetRegisteredTypeKeys", &[], ARRAY_OF_STR, |_| {
            Ok(Array::new(
                types::registered_keys()
                    .iter()
                    .map(|k| Any::from(k.as_str())),
            )
            .into())
        }),
        typed(
            "ffi.GetInvalidObject",
            &[],
            OBJECT,
            |_| Ok(missing().into()),
        ),
        typed("ffi.GetKwargsObject", &[], OBJECT, |_| Ok(kwargs().into())),
    ]
}

/// `ffi.String` of a string value (a small string or a String object): the value itself, as
/// the typed global returns it, without its closure, argument conversion and byte checks.
/// Python's `tvm_ffi.String(...)` makes this call, and tvm_ffi converts a `str` argument to one
/// of these two before the call. C strings, bytes and everything else go on to the typed
/// global (which copies a C string and words the errors).
unsafe extern "C" fn string_fast(
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    if num_args != 1 {
        return FALL_THROUGH;
    }
    // SAFETY: the safe-call convention passes `num_args` (here 1) valid values.
    let arg = unsafe { *args };
    match TVMFFITypeIndex(arg.type_index) {
        // A small string holds its bytes in the value and owns nothing: copied as it is.
        TVMFFITypeIndex::SMALL_STR => {}
        TVMFFITypeIndex::STR => {
            // SAFETY: an argument of type index ffi.String (a final type) is a live object for
            // the call; the result takes a reference of its own.
            unsafe { header::inc_ref(arg.value.v_obj) };
        }
        _ => return FALL_THROUGH,
    }
    // SAFETY: the caller's result slot, which holds None (owns nothing) on entry.
    unsafe { result.write(arg) };
    0
}

/// `ffi.ArraySize` of an array, read from its sequence cell without the typed global's
/// closure and reference counting: Python asks it at every `len()` and iteration of an Array
/// (`tvm.runtime.Executable` iterates a module's imports on every call).
unsafe extern "C" fn array_size_fast(
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    if num_args != 1 {
        return FALL_THROUGH;
    }
    // SAFETY: the safe-call convention passes `num_args` (here 1) valid values.
    let arg = unsafe { &*args };
    if arg.type_index != TVMFFITypeIndex::ARRAY.0 {
        return FALL_THROUGH;
    }
    // SAFETY: an object of type index ffi.Array (a final type) is an array, whose sequence cell
    // follows the header, alive for the call; the result slot holds None (an integer owns
    // nothing).
    unsafe {
        let cell = &*arg
            .value
            .v_obj
            .cast::<TVMFFIObject>()
            .add(1)
            .cast::<TVMFFISeqCell>();
        result.write(Any::from(cell.size).into_raw());
    }
    0
}
