//! Reading and writing reflected objects through the type table: the field records a type and
//! its ancestors registered, their getters and setters, and the type-attribute columns. The
//! recursive operations (repr, equality, hashing, copy, serialization) walk objects with these.

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIFieldInfo, TVMFFIObjectCreator, TVMFFIObjectHandle,
    TVMFFITypeIndex, field_flags,
};

use std::sync::{Mutex, MutexGuard};

use super::types;
use pactum_core::any::{Any, AnyView};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::raw_words;
use pactum_core::object::{ObjectRef, TypeInfo, type_key_of};

/// The field records of `type_index` and its ancestors, ancestors' first (the order the
/// official runtime's `ForEachFieldInfo` visits them).
pub(crate) fn fields_of(type_index: i32) -> Vec<&'static TVMFFIFieldInfo> {
    let Some(info) = TypeInfo::of(type_index) else {
        return Vec::new();
    };
    let mut chain: Vec<TypeInfo> = (0..info.type_depth())
        .filter_map(|depth| info.ancestor(depth))
        .collect();
    chain.push(info);
    let mut fields = Vec::new();
    for ty in chain {
        let raw = ty.as_raw();
        if raw.fields.is_null() || raw.num_fields <= 0 {
            continue;
        }
        // SAFETY: the type table keeps `num_fields` permanent field records at `fields`.
        fields.extend(unsafe { std::slice::from_raw_parts(raw.fields, raw.num_fields as usize) });
    }
    fields
}

/// The field record named `name` of `type_index` or one of its ancestors.
pub(crate) fn field_named(type_index: i32, name: &str) -> Result<&'static TVMFFIFieldInfo> {
    fields_of(type_index)
        .into_iter()
        .find(|field| field_name(field) == name)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::ATTRIBUTE_ERROR,
                format!(
                    "type {} has no field `{name}`",
                    pactum_core::object::type_key_of(type_index)
                ),
            )
        })
}

/// Reads field `name` of `object`.
pub(crate) fn read_named(object: &ObjectRef, name: &str) -> Result<Any> {
    read_field(object, field_named(object.type_index(), name)?)
}

/// Writes `value` into field `name` of `object`.
pub(crate) fn write_named(object: &ObjectRef, name: &str, value: &AnyView<'_>) -> Result<()> {
    write_field(object, field_named(object.type_index(), name)?, value)
}

/// A field's name.
pub(crate) fn field_name(field: &TVMFFIFieldInfo) -> &str {
    if field.name.data.is_null() {
        return "";
    }
    // SAFETY: field names are permanent strings owned by the type table.
    let bytes =
        unsafe { std::slice::from_raw_parts(field.name.data.cast::<u8>(), field.name.size) };
    core::str::from_utf8(bytes).unwrap_or("<non-UTF-8 field name>")
}

fn field_address(object: &ObjectRef, field: &TVMFFIFieldInfo) -> Result<*mut core::ffi::c_void> {
    if field.offset < 24 {
        return Err(Error::new(
            ErrorKind::INTERNAL_ERROR,
            format!(
                "field `{}` of {} has offset {} inside the object header",
                field_name(field),
                object.type_key(),
                field.offset
            ),
        ));
    }
    // SAFETY: the offset comes from the type's own registration; the field lies inside the live
    // object `object` keeps alive.
    Ok(unsafe {
        object
            .as_raw()
            .cast::<u8>()
            .offset(field.offset as isize)
            .cast()
    })
}

/// Reads the field named `name` of `object` (its own or an ancestor's), or an
/// `AttributeError` when its type registers no such field.
pub(crate) fn read_field_by_name(object: &ObjectRef, name: &str) -> Result<Any> {
    let field = fields_of(object.type_index())
        .into_iter()
        .find(|field| field_name(field) == name)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::ATTRIBUTE_ERROR,
                format!("{} registers no field `{name}`", object.type_key()),
            )
        })?;
    read_field(object, field)
}

/// Reads `field` of `object` (whose type registered it) through its getter.
pub(crate) fn read_field(object: &ObjectRef, field: &TVMFFIFieldInfo) -> Result<Any> {
    let Some(getter) = field.getter else {
        return Err(Error::new(
            ErrorKind::ATTRIBUTE_ERROR,
            format!(
                "field `{}` of {} has no getter",
                field_name(field),
                object.type_key()
            ),
        ));
    };
    let address = field_address(object, field)?;
    let mut result = TVMFFIAny::NONE;
    // SAFETY: the getter registered for this field reads it at its address inside the live
    // object and writes an owned value into `result`.
    let rc = unsafe { getter(address, &mut result) };
    if rc != 0 {
        return Err(Error::take_raised_after_failure("a reflected field getter"));
    }
    // SAFETY: the getter handed over an owned value.
    Ok(unsafe { Any::from_raw(result) })
}

/// Writes `value` into `field` of `object` through its setter (a C function or, with
/// `SETTER_IS_FUNCTION_OBJ`, a Function called with the field address and the value).
pub(crate) fn write_field(
    object: &ObjectRef,
    field: &TVMFFIFieldInfo,
    value: &AnyView<'_>,
) -> Result<()> {
    if field.setter.is_null() {
        return Err(Error::new(
            ErrorKind::ATTRIBUTE_ERROR,
            format!(
                "field `{}` of {} is read-only",
                field_name(field),
                object.type_key()
            ),
        ));
    }
    let address = field_address(object, field)?;
    if field.flags & field_flags::SETTER_IS_FUNCTION_OBJ != 0 {
        // SAFETY: with this flag the setter is a live Function object the type table keeps a
        // reference to; borrowing it does not change its count.
        let function = unsafe {
            ObjectRef::from_raw_borrowed(core::ptr::NonNull::new_unchecked(field.setter.cast()))
        };
        let function = function.downcast::<Function>().map_err(|other| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "the setter of field `{}` is a {}, not a Function",
                    field_name(field),
                    other.type_key()
                ),
            )
        })?;
        // SAFETY: an OpaquePtr view owns nothing.
        let address = unsafe {
            AnyView::from_raw(TVMFFIAny {
                type_index: TVMFFITypeIndex::OPAQUE_PTR.0,
                small_str_len: 0,
                value: TVMFFIAnyValue { v_ptr: address },
            })
        };
        function.call(&[address, *value])?;
        return Ok(());
    }
    // SAFETY: without the flag the (non-null) setter is the `TVMFFIFieldSetter` registered for
    // this field.
    let setter: unsafe extern "C" fn(*mut core::ffi::c_void, *const TVMFFIAny) -> core::ffi::c_int =
        unsafe { core::mem::transmute(field.setter) };
    // SAFETY: the setter writes the field at its address inside the live object from a valid
    // borrowed view.
    let rc = unsafe { setter(address, value.as_raw()) };
    if rc != 0 {
        return Err(Error::take_raised_after_failure("a reflected field setter"));
    }
    Ok(())
}

/// The address of an object, its identity in a walk.
pub(crate) fn address(object: &ObjectRef) -> usize {
    object.as_raw() as usize
}

/// The type key hash the runtime recorded for `type_index` (0 for an unknown index).
pub(crate) fn type_key_hash(type_index: i32) -> u64 {
    TypeInfo::of(type_index).map_or(0, |info| info.as_raw().type_key_hash)
}

/// Whether two values are the same value (same kind and payload: the same object, or equal
/// plain values), as the official `same_as`.
pub(crate) fn same_as(lhs: &TVMFFIAny, rhs: &TVMFFIAny) -> bool {
    raw_words(lhs) == raw_words(rhs)
}

/// A walk's lock, taken whether or not a panic poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The value of type attribute `name` for `type_index`, if one is registered (not None).
pub(crate) fn type_attr(type_index: i32, name: &str) -> Option<Any> {
    types::attr_value(type_index, name.as_bytes())
}

/// The type index of `ffi.Enum`, the base type of the runtime's enum singletons.
pub(crate) fn enum_type_index() -> Option<i32> {
    static ENUM: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();
    *ENUM.get_or_init(|| pactum_core::object::type_index_of_key("ffi.Enum").ok())
}

/// The `__ffi_new__` type attribute of `type_index` (how Python-defined types make empty
/// instances), if it is a Function.
fn ffi_new(type_index: i32) -> Option<Function> {
    type_attr(type_index, "__ffi_new__")?
        .cast::<Function>()
        .ok()
}

/// The native creator of `type_index`, if its metadata registers one.
fn native_creator(type_index: i32) -> TVMFFIObjectCreator {
    let info = TypeInfo::of(type_index)?;
    let metadata = info.as_raw().metadata;
    if metadata.is_null() {
        return None;
    }
    // SAFETY: type metadata is permanent once registered.
    unsafe { (*metadata).creator }
}

/// Whether instances of `type_index` can be created empty: a native creator or an
/// `__ffi_new__` Function.
pub(crate) fn has_creator(type_index: i32) -> bool {
    native_creator(type_index).is_some() || ffi_new(type_index).is_some()
}

/// A new, zero-initialized instance of `type_index`, made by its native creator or its
/// `__ffi_new__` Function; the official `RuntimeError` when it has neither.
pub(crate) fn create_empty_object(type_index: i32) -> Result<ObjectRef> {
    if let Some(creator) = native_creator(type_index) {
        let mut handle: TVMFFIObjectHandle = core::ptr::null_mut();
        // SAFETY: a registered creator writes an owned object handle into `handle`.
        let rc = unsafe { creator(&mut handle) };
        if rc != 0 {
            return Err(Error::take_raised_after_failure("a type's object creator"));
        }
        let handle = core::ptr::NonNull::new(handle.cast()).ok_or_else(|| {
            Error::new(
                ErrorKind::INTERNAL_ERROR,
                format!(
                    "the creator of {} returned no object",
                    type_key_of(type_index)
                ),
            )
        })?;
        // SAFETY: the creator handed over one strong reference.
        return Ok(unsafe { ObjectRef::from_raw_owned(handle) });
    }
    if let Some(new) = ffi_new(type_index) {
        let made = new.call(&[])?;
        return made.as_object_ref().cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "`__ffi_new__` of {} returned {}, not an object",
                    type_key_of(type_index),
                    made.type_key()
                ),
            )
        });
    }
    Err(Error::new(
        ErrorKind::RUNTIME_ERROR,
        format!(
            "Type `{}` does not support reflection creation (no native creator or __ffi_new__ type attr)",
            type_key_of(type_index)
        ),
    ))
}

/// Sets `field` of `object` to its registered default: the value itself, or (with
/// `DEFAULT_FROM_FACTORY`) what the factory Function returns.
pub(crate) fn set_field_to_default(object: &ObjectRef, field: &TVMFFIFieldInfo) -> Result<()> {
    // SAFETY: the default is a value the type table keeps alive for good.
    let default = unsafe { AnyView::from_raw(field.default_value_or_factory) };
    if field.flags & field_flags::DEFAULT_FROM_FACTORY != 0 {
        let factory = default.get::<Function>()?;
        let value = factory.call(&[])?;
        return write_field(object, field, value.as_view());
    }
    write_field(object, field, &default)
}
