//! Objects whose memory layout is described by reflection records alone: the runtime's own
//! reflected types (`ffi.EnumState`, `ffi.Enum`, the access paths, ...) and the types Python
//! defines with `py_class`. Each field is stored by kind (a POD value, a 16-byte Any, or an
//! 8-byte nullable object pointer, the official runtime's rule), read and written by generic
//! getters and setters, and released by a deleter that walks the type's field records.
//!
//! The globals built on this: `ffi._RegisterFFIInit` (the generated `__ffi_init__`: positional
//! and keyword arguments bound to fields, defaults, the official errors),
//! `ffi._PyClassRegisterTypeAttrColumns`, `ffi.MakeFieldGetter`, `ffi.MakeFieldSetter` and
//! `ffi.MakeObjectFromPackedArgs`.

use core::ffi::{c_int, c_void};
use core::ptr::NonNull;

use pactum_sys::dlpack::{DLDataType, DLDevice};
use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIFieldInfo, TVMFFIObject, TVMFFITypeIndex, field_flags,
};

use super::args::byte_view;
use super::builtin::packed;
use super::reflection::{self, field_name};
use super::registry::BuiltinGlobal;
use super::value_globals;
use pactum_core::any::{Any, AnyView, OpaquePtr};
use pactum_core::dtype::DataType;
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::boundary::{self, EntryKind::Callback};
use pactum_core::internal::fresh_header;
use pactum_core::object::{ObjectRef, TypeInfo, type_key_of};
use pactum_core::string::String;

/// How a field is kept in the object's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    Int64,
    Int32,
    Float64,
    Bool,
    Pointer,
    DataType,
    Device,
    /// A `TVMFFIAny` (16 bytes) owning its value; Strings are kept this way too.
    Any,
    /// A nullable object pointer owning one reference.
    Object,
}

impl Storage {
    /// The storage of a field declared with `static_type_index` and `size` bytes: object
    /// types and 8-byte `Any` fields hold an object pointer, other `Any` fields a full Any.
    pub(crate) fn of(static_type_index: i32, size: i64) -> Result<Storage> {
        Ok(match TVMFFITypeIndex(static_type_index) {
            TVMFFITypeIndex::ANY | TVMFFITypeIndex::NONE if size == 8 => Storage::Object,
            TVMFFITypeIndex::ANY | TVMFFITypeIndex::NONE => Storage::Any,
            TVMFFITypeIndex::INT if size == 4 => Storage::Int32,
            TVMFFITypeIndex::INT => Storage::Int64,
            TVMFFITypeIndex::FLOAT => Storage::Float64,
            TVMFFITypeIndex::BOOL => Storage::Bool,
            TVMFFITypeIndex::OPAQUE_PTR => Storage::Pointer,
            TVMFFITypeIndex::DATA_TYPE => Storage::DataType,
            TVMFFITypeIndex::DEVICE => Storage::Device,
            _ if static_type_index >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 => Storage::Object,
            _ => {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("Unsupported field type index: {static_type_index}"),
                ));
            }
        })
    }

    fn of_field(field: &TVMFFIFieldInfo) -> Result<Storage> {
        Storage::of(field.field_static_type_index, field.size)
    }

    /// Bytes the storage occupies.
    pub(crate) fn size(self) -> usize {
        match self {
            Storage::Int32 | Storage::DataType => 4,
            Storage::Bool => 1,
            Storage::Any => 16,
            _ => 8,
        }
    }

    /// Reads the value at `address`.
    ///
    /// # Safety
    /// `address` must point to a live, initialised field of this storage.
    unsafe fn read(self, address: *const c_void) -> Result<Any> {
        let pod = |type_index: TVMFFITypeIndex, value: TVMFFIAnyValue| {
            // SAFETY: a POD value owns nothing.
            unsafe {
                Any::from_raw(TVMFFIAny {
                    type_index: type_index.0,
                    small_str_len: 0,
                    value,
                })
            }
        };
        // SAFETY: (all arms) the caller guarantees a live field of this storage at `address`.
        Ok(unsafe {
            match self {
                Storage::Int64 => Any::from(address.cast::<i64>().read_unaligned()),
                Storage::Int32 => Any::from(i64::from(address.cast::<i32>().read_unaligned())),
                Storage::Float64 => Any::from(address.cast::<f64>().read_unaligned()),
                Storage::Bool => Any::from(address.cast::<u8>().read() != 0),
                Storage::Pointer => {
                    let pointer = address.cast::<*mut c_void>().read_unaligned();
                    if pointer.is_null() {
                        Any::none()
                    } else {
                        Any::from(OpaquePtr(pointer))
                    }
                }
                Storage::DataType => pod(
                    TVMFFITypeIndex::DATA_TYPE,
                    TVMFFIAnyValue {
                        v_dtype: address.cast::<DLDataType>().read_unaligned(),
                    },
                ),
                Storage::Device => pod(
                    TVMFFITypeIndex::DEVICE,
                    TVMFFIAnyValue {
                        v_device: address.cast::<DLDevice>().read_unaligned(),
                    },
                ),
                Storage::Any => AnyView::from_raw(address.cast::<TVMFFIAny>().read()).to_any()?,
                Storage::Object => match NonNull::new(address.cast::<*mut TVMFFIObject>().read()) {
                    None => Any::none(),
                    Some(object) => Any::from_object_ref(ObjectRef::from_raw_borrowed(object)),
                },
            }
        })
    }

    /// Converts `value` as a field of this storage accepts it and writes it at `address`,
    /// releasing the value it replaces.
    ///
    /// # Safety
    /// `address` must point to a live, initialised field of this storage that nobody else is
    /// reading or writing.
    unsafe fn write(self, address: *mut c_void, value: &AnyView<'_>) -> Result<()> {
        match self {
            Storage::Int64 => {
                let value = value.get::<i64>()?;
                // SAFETY: the caller's field.
                unsafe { address.cast::<i64>().write_unaligned(value) }
            }
            Storage::Int32 => {
                let value = value.get::<i64>()?;
                let value = i32::try_from(value).map_err(|_| {
                    Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!("{value} does not fit a 32-bit integer field"),
                    )
                })?;
                // SAFETY: the caller's field.
                unsafe { address.cast::<i32>().write_unaligned(value) }
            }
            Storage::Float64 => {
                let value = value.get::<f64>()?;
                // SAFETY: the caller's field.
                unsafe { address.cast::<f64>().write_unaligned(value) }
            }
            Storage::Bool => {
                let value = value.get::<bool>()?;
                // SAFETY: the caller's field.
                unsafe { address.cast::<u8>().write(u8::from(value)) }
            }
            Storage::Pointer => {
                let pointer = if value.is_none() {
                    core::ptr::null_mut()
                } else {
                    value.get::<OpaquePtr>()?.0
                };
                // SAFETY: the caller's field.
                unsafe { address.cast::<*mut c_void>().write_unaligned(pointer) }
            }
            Storage::DataType => {
                let converted = Any::from(value.get::<DataType>()?);
                // SAFETY: a DataType value stores v_dtype; the caller's field.
                unsafe {
                    address
                        .cast::<DLDataType>()
                        .write_unaligned(converted.as_raw().value.v_dtype)
                }
            }
            Storage::Device => {
                let converted = Any::from(value.get::<pactum_core::Device>()?);
                // SAFETY: a Device value stores v_device; the caller's field.
                unsafe {
                    address
                        .cast::<DLDevice>()
                        .write_unaligned(converted.as_raw().value.v_device)
                }
            }
            Storage::Any => {
                let owned = value.to_any()?;
                // SAFETY: the caller's field holds an owned Any, released after the swap.
                let old = unsafe { address.cast::<TVMFFIAny>().replace(owned.into_raw()) };
                // SAFETY: the replaced value was owned by the field.
                drop(unsafe { Any::from_raw(old) });
            }
            Storage::Object => {
                let object = if value.is_none() {
                    None
                } else {
                    let owned = value.to_any()?;
                    let Some(object) = owned.as_object_ref() else {
                        return Err(Error::new(
                            ErrorKind::TYPE_ERROR,
                            format!("expected an object or None, got `{}`", value.type_key()),
                        ));
                    };
                    Some(object.clone())
                };
                let new = object.map_or(core::ptr::null_mut(), ObjectRef::into_raw);
                // SAFETY: the caller's field holds an owned (nullable) pointer, released below.
                let old = unsafe { address.cast::<*mut TVMFFIObject>().replace(new) };
                if let Some(old) = NonNull::new(old) {
                    // SAFETY: the field owned this reference.
                    drop(unsafe { ObjectRef::from_raw_owned(old) });
                }
            }
        }
        Ok(())
    }

    /// Releases what the field at `address` owns.
    ///
    /// # Safety
    /// `address` must point to a live, initialised field of this storage, released once.
    unsafe fn release(self, address: *mut c_void) {
        match self {
            // SAFETY: the caller's field owns this Any.
            Storage::Any => drop(unsafe { Any::from_raw(address.cast::<TVMFFIAny>().read()) }),
            Storage::Object => {
                // SAFETY: the caller's field owns this (nullable) reference.
                let pointer = unsafe { address.cast::<*mut TVMFFIObject>().read() };
                if let Some(object) = NonNull::new(pointer) {
                    // SAFETY: as above.
                    drop(unsafe { ObjectRef::from_raw_owned(object) });
                }
            }
            _ => {}
        }
    }
}

const fn storage_code(storage: Storage) -> u8 {
    storage as u8
}

fn storage_from_code(code: u8) -> Storage {
    const ALL: [Storage; 9] = [
        Storage::Int64,
        Storage::Int32,
        Storage::Float64,
        Storage::Bool,
        Storage::Pointer,
        Storage::DataType,
        Storage::Device,
        Storage::Any,
        Storage::Object,
    ];
    ALL[usize::from(code)]
}

/// The generic field getter for one storage (a `TVMFFIFieldGetter`).
unsafe extern "C" fn storage_getter<const CODE: u8>(
    field: *mut c_void,
    result: *mut TVMFFIAny,
) -> c_int {
    boundary::status(Callback, || {
        // SAFETY: registered only for fields of this storage; the caller passes the field's
        // address inside a live object.
        let value = unsafe { storage_from_code(CODE).read(field) }?;
        // SAFETY: the caller passes a writable result slot.
        unsafe { result.write(value.into_raw()) };
        Ok(())
    })
}

/// The generic field setter for one storage (a `TVMFFIFieldSetter`).
unsafe extern "C" fn storage_setter<const CODE: u8>(
    field: *mut c_void,
    value: *const TVMFFIAny,
) -> c_int {
    boundary::status(Callback, || {
        if value.is_null() {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "field setter called with a NULL value",
            ));
        }
        // SAFETY: the caller passes a valid borrowed value.
        let view = unsafe { AnyView::from_raw(*value) };
        // SAFETY: registered only for fields of this storage; the caller passes the field's
        // address inside a live object it may write.
        unsafe { storage_from_code(CODE).write(field, &view) }
    })
}

macro_rules! accessors_by_storage {
    ($($storage:ident),*) => {
        /// The getter and setter for `storage`.
        pub(crate) fn accessors(
            storage: Storage,
        ) -> (
            unsafe extern "C" fn(*mut c_void, *mut TVMFFIAny) -> c_int,
            unsafe extern "C" fn(*mut c_void, *const TVMFFIAny) -> c_int,
        ) {
            match storage {
                $(Storage::$storage => (
                    storage_getter::<{ storage_code(Storage::$storage) }>,
                    storage_setter::<{ storage_code(Storage::$storage) }>,
                ),)*
            }
        }
    };
}
accessors_by_storage!(
    Int64, Int32, Float64, Bool, Pointer, DataType, Device, Any, Object
);

/// Releases each field of `type_index` (and its ancestors) once per offset: a subclass may
/// re-expose a parent's field under another name (`ffi.IntEnum.value`).
///
/// # Safety
/// `object` must be a layout object of `type_index` whose strong count reached zero.
unsafe fn release_fields(object: *mut TVMFFIObject, type_index: i32) {
    let mut released = Vec::new();
    for field in reflection::fields_of(type_index) {
        let Ok(storage) = Storage::of_field(field) else {
            continue;
        };
        if released.contains(&field.offset) {
            continue;
        }
        released.push(field.offset);
        // SAFETY: the field lies inside the object being destroyed; each offset once.
        unsafe { storage.release(object.cast::<u8>().offset(field.offset as isize).cast()) };
    }
}

/// The deleter of layout objects: fields released on the strong flag, memory on the weak.
unsafe extern "C" fn layout_deleter(object: *mut c_void, flags: c_int) {
    let object = object.cast::<TVMFFIObject>();
    boundary::object_deleter(
        flags,
        // SAFETY: the strong count reached zero; the header's type index is the object's own.
        || unsafe { release_fields(object, (*object).type_index) },
        // SAFETY: allocated by `calloc` in `new_layout_object`; the weak flag comes once.
        || unsafe { libc::free(object.cast()) },
    );
}

/// A zero-filled object of `type_index` with `total_size` bytes: every field None, null or
/// zero, as the official runtime's Python-defined types start.
pub(crate) fn new_layout_object(type_index: i32, total_size: usize) -> Result<ObjectRef> {
    let header = core::mem::size_of::<TVMFFIObject>();
    let needed = reflection::fields_of(type_index)
        .iter()
        .map(|field| field.offset.max(0) as usize + field.size.max(0) as usize)
        .max()
        .unwrap_or(header)
        .max(header);
    if total_size < needed {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!(
                "{} needs {needed} bytes for its fields, but its size is {total_size}",
                type_key_of(type_index)
            ),
        ));
    }
    // SAFETY: a plain allocation of at least a header's size; checked for NULL below.
    let memory = unsafe { libc::calloc(1, total_size) }.cast::<TVMFFIObject>();
    let Some(memory) = NonNull::new(memory) else {
        return Err(Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!(
                "Failed to allocate {total_size} bytes for type {}",
                type_key_of(type_index)
            ),
        ));
    };
    // SAFETY: fresh, zeroed memory large enough for the header; zero is None/null/0 for every
    // field storage.
    unsafe {
        memory
            .as_ptr()
            .write(fresh_header(type_index, Some(layout_deleter)))
    };
    // SAFETY: a fresh object with one strong reference that we take.
    Ok(unsafe { ObjectRef::from_raw_owned(memory) })
}

/// A copy of `source` sharing its field values (one more reference each).
pub(crate) fn shallow_copy_layout(source: &ObjectRef, total_size: usize) -> Result<ObjectRef> {
    let copy = new_layout_object(source.type_index(), total_size)?;
    for field in reflection::fields_of(source.type_index()) {
        let storage = Storage::of_field(field)?;
        let offset = field.offset as isize;
        // SAFETY: both objects are layout objects of the same type; the field lies inside
        // each, and `copy` is not shared yet.
        unsafe {
            let value = storage.read(source.as_raw().cast::<u8>().offset(offset).cast())?;
            storage.write(
                copy.as_raw().cast::<u8>().offset(offset).cast(),
                value.as_view(),
            )?;
        }
    }
    Ok(copy)
}

fn type_info(type_index: i32) -> Result<TypeInfo> {
    TypeInfo::of(type_index).ok_or_else(|| {
        Error::new(
            ErrorKind::VALUE_ERROR,
            format!("Cannot find type info for type_index={type_index}"),
        )
    })
}

/// How the generated `__ffi_init__` binds arguments to the fields of one type.
struct InitPlan {
    type_key: std::string::String,
    fields: Vec<&'static TVMFFIFieldInfo>,
    /// Indices into `fields` bound by position: required fields first, then defaulted ones.
    positional: Vec<usize>,
}

impl InitPlan {
    fn new(info: TypeInfo) -> InitPlan {
        let fields = reflection::fields_of(info.type_index());
        let takes = |f: &TVMFFIFieldInfo| f.flags & field_flags::INIT_OFF == 0;
        let has_default = |f: &TVMFFIFieldInfo| f.flags & field_flags::HAS_DEFAULT != 0;
        let positional_field =
            |f: &&TVMFFIFieldInfo| takes(f) && f.flags & field_flags::KW_ONLY == 0;
        let mut positional: Vec<usize> = (0..fields.len())
            .filter(|&i| positional_field(&fields[i]) && !has_default(fields[i]))
            .collect();
        positional.extend(
            (0..fields.len()).filter(|&i| positional_field(&fields[i]) && has_default(fields[i])),
        );
        InitPlan {
            type_key: info.type_key().to_owned(),
            fields,
            positional,
        }
    }

    fn error(&self, message: std::fmt::Arguments<'_>) -> Error {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!("{}.__ffi_init__() {message}", self.type_key),
        )
    }

    /// A setter failure, named after the field and where the value came from.
    fn setter_error(&self, what: &str, field: &TVMFFIFieldInfo, cause: Error) -> Error {
        let mut message = format!(
            "{}.__ffi_init__() {what} '{}':\n  ",
            self.type_key,
            field_name(field)
        );
        message.push_str(&cause.message().replace('\n', "\n  "));
        Error::new(ErrorKind::custom(&cause.kind()), message)
    }

    fn bind(&self, object: &ObjectRef, args: &[AnyView<'_>]) -> Result<()> {
        let mut set = vec![false; self.fields.len()];
        let kwargs = value_globals::kwargs();
        let kwargs_at = args.iter().position(|arg| {
            arg.to_any()
                .ok()
                .and_then(|a| a.as_object_ref().map(|o| o.ptr_eq(&kwargs)))
                .unwrap_or(false)
        });
        let positional_count = kwargs_at.unwrap_or(args.len());
        if positional_count > self.positional.len() {
            return Err(self.error(format_args!(
                "takes at most {} positional argument(s), but {positional_count} were given",
                self.positional.len()
            )));
        }
        let assign = |index: usize, value: &AnyView<'_>, set: &mut Vec<bool>| -> Result<()> {
            let field = self.fields[index];
            reflection::write_field(object, field, value)
                .map_err(|cause| self.setter_error("field", field, cause))?;
            set[index] = true;
            Ok(())
        };
        for (position, value) in args[..positional_count].iter().enumerate() {
            assign(self.positional[position], value, &mut set)?;
        }
        if let Some(at) = kwargs_at {
            let pairs = &args[at + 1..];
            if pairs.len() % 2 != 0 {
                return Err(self.error(format_args!(
                    "KWARGS requires an even number of key-value arguments"
                )));
            }
            for pair in pairs.chunks_exact(2) {
                let key = pair[0].get::<String>()?;
                let key = key.as_str();
                let index = self
                    .fields
                    .iter()
                    .position(|f| f.flags & field_flags::INIT_OFF == 0 && field_name(f) == key)
                    .ok_or_else(|| {
                        self.error(format_args!("got an unexpected keyword argument '{key}'"))
                    })?;
                if set[index] {
                    return Err(
                        self.error(format_args!("got multiple values for argument '{key}'"))
                    );
                }
                assign(index, &pair[1], &mut set)?;
            }
        }
        for (index, field) in self.fields.iter().enumerate() {
            if set[index] {
                continue;
            }
            if field.flags & field_flags::HAS_DEFAULT != 0 {
                reflection::set_field_to_default(object, field)
                    .map_err(|cause| self.setter_error("default for field", field, cause))?;
            } else if field.flags & field_flags::INIT_OFF == 0 {
                let keyword = if field.flags & field_flags::KW_ONLY != 0 {
                    "keyword-only "
                } else {
                    ""
                };
                return Err(self.error(format_args!(
                    "missing required {keyword}argument: '{}'",
                    field_name(field)
                )));
            }
        }
        Ok(())
    }
}

/// The generated `__ffi_init__` of `type_index`.
pub(crate) fn make_init(type_index: i32) -> Result<Function> {
    type_info(type_index)?;
    Ok(Function::from_packed(move |args: &[AnyView<'_>]| {
        // The plan is rebuilt per call: field records may move when a type gains fields.
        let info = self::type_info(type_index)?;
        let object = reflection::create_empty_object(type_index)?;
        InitPlan::new(info).bind(&object, args)?;
        Ok(Any::from_object_ref(object))
    }))
}

fn register_attr(type_index: i32, name: &str, value: Any) -> Result<()> {
    super::types::register_attr(type_index, name.as_bytes(), value)
}

/// `__ffi_shallow_copy__` of a layout type whose objects are `total_size` bytes.
pub(crate) fn shallow_copy_function(total_size: usize) -> Function {
    Function::from_packed(move |args: &[AnyView<'_>]| {
        let source = args
            .first()
            .and_then(|a| a.to_any().ok())
            .and_then(|a| a.as_object_ref().cloned())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::TYPE_ERROR,
                    "__ffi_shallow_copy__ takes the object to copy",
                )
            })?;
        shallow_copy_layout(&source, total_size).map(Any::from_object_ref)
    })
}

/// `ffi.MakeObjectFromPackedArgs(type, name, value, ...)`.
fn make_object_from_packed_args(args: &[AnyView<'_>]) -> Result<Any> {
    let Some(first) = args.first() else {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "MakeObjectFromPackedArgs needs a type index or key",
        ));
    };
    let type_index = match first.get::<i64>() {
        Ok(index) => i32::try_from(index).map_err(|_| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("type index {index} is out of range"),
            )
        })?,
        Err(_) => pactum_core::object::type_index_of_key(first.get::<String>()?.as_str())?,
    };
    if args.len() % 2 != 1 {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "MakeObjectFromPackedArgs takes a type followed by name/value pairs",
        ));
    }
    let info = type_info(type_index)?;
    let object = reflection::create_empty_object(type_index)?;
    let mut names = Vec::new();
    for pair in args[1..].chunks_exact(2) {
        names.push((pair[0].get::<String>()?.as_str().to_owned(), pair[1], false));
    }
    for field in reflection::fields_of(type_index) {
        let name = field_name(field);
        if let Some(entry) = names.iter_mut().find(|(n, _, found)| !found && n == name) {
            reflection::write_field(&object, field, &entry.1)?;
            entry.2 = true;
        } else if field.flags & field_flags::HAS_DEFAULT != 0 {
            reflection::set_field_to_default(&object, field)?;
        } else {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "Required field `{name}` not set in type `{}`",
                    info.type_key()
                ),
            ));
        }
    }
    if let Some((name, _, _)) = names.iter().find(|(_, _, found)| !found) {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!("Type `{}` does not have field `{name}`", info.type_key()),
        ));
    }
    Ok(Any::from_object_ref(object))
}

/// The Cython converter `ffi.MakeFieldSetter` receives: `int (*)(void* converter, const
/// TVMFFIAny* value, TVMFFIAny* out)`, 0 on success.
type PythonConvert = unsafe extern "C" fn(*mut c_void, *const TVMFFIAny, *mut TVMFFIAny) -> c_int;

/// `ffi.MakeFieldSetter(field_type_index, converter, convert)`: a Function setter that runs
/// Python's converter on the value, then stores the result.
fn make_field_setter(args: &[AnyView<'_>]) -> Result<Any> {
    let [type_index, converter, convert] = args else {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!("MakeFieldSetter takes 3 arguments, got {}", args.len()),
        ));
    };
    let type_index = i32::try_from(type_index.get::<i64>()?)
        .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "field type index out of range"))?;
    let storage = Storage::of(
        type_index,
        if type_index == TVMFFITypeIndex::ANY.0 {
            16
        } else {
            8
        },
    )?;
    let converter = converter.get::<i64>()? as usize;
    let convert = convert.get::<i64>()? as usize;
    if convert == 0 {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "MakeFieldSetter: the converter function is NULL",
        ));
    }
    // SAFETY: Python passes the address of its C converter with the signature above.
    let convert: PythonConvert = unsafe { core::mem::transmute::<usize, PythonConvert>(convert) };
    Ok(Any::from(Function::from_packed(
        move |args: &[AnyView<'_>]| {
            let [address, value] = args else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    "a field setter takes (address, value)",
                ));
            };
            let address = address.get::<OpaquePtr>()?.0;
            let mut converted = TVMFFIAny::NONE;
            // SAFETY: Python's converter reads the borrowed value and writes an owned result.
            if unsafe { convert(converter as *mut c_void, value.as_raw(), &mut converted) } != 0 {
                return Err(Error::take_raised_after_failure("a Python field converter"));
            }
            // SAFETY: the converter handed over an owned value.
            let converted = unsafe { Any::from_raw(converted) };
            // SAFETY: the setter protocol passes the address of a field of this storage inside a
            // live object being initialised or assigned by its owner.
            unsafe { storage.write(address, converted.as_view()) }?;
            Ok(Any::none())
        },
    )))
}

/// `ffi.MakeFieldGetter(field_type_index)`: the address of the generic getter, as an int.
fn make_field_getter(args: &[AnyView<'_>]) -> Result<Any> {
    let [type_index] = args else {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!("MakeFieldGetter takes 1 argument, got {}", args.len()),
        ));
    };
    let type_index = i32::try_from(type_index.get::<i64>()?)
        .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "field type index out of range"))?;
    let storage = Storage::of(
        type_index,
        if type_index == TVMFFITypeIndex::ANY.0 || type_index == TVMFFITypeIndex::NONE.0 {
            16
        } else {
            8
        },
    )
    .map_err(|_| {
        Error::new(
            ErrorKind::VALUE_ERROR,
            format!("Unsupported field type index for getter: {type_index}"),
        )
    })?;
    Ok(Any::from(accessors(storage).0 as usize as i64))
}

/// `ffi._PyClassRegisterTypeAttrColumns(type_index, total_size)`: `__ffi_init__`,
/// `__ffi_new__` and `__ffi_shallow_copy__` of a Python-defined type.
fn py_class_register_columns(args: &[AnyView<'_>]) -> Result<Any> {
    let [type_index, total_size] = args else {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "_PyClassRegisterTypeAttrColumns takes 2 arguments, got {}",
                args.len()
            ),
        ));
    };
    let type_index = i32::try_from(type_index.get::<i64>()?)
        .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "type index out of range"))?;
    let total_size = usize::try_from(total_size.get::<i64>()?)
        .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "negative object size"))?;
    type_info(type_index)?;
    register_attr(
        type_index,
        "__ffi_init__",
        Any::from(make_init(type_index)?),
    )?;
    let new = Function::from_packed(move |_: &[AnyView<'_>]| {
        new_layout_object(type_index, total_size).map(Any::from_object_ref)
    });
    register_attr(type_index, "__ffi_new__", Any::from(new))?;
    register_attr(
        type_index,
        "__ffi_shallow_copy__",
        Any::from(shallow_copy_function(total_size)),
    )?;
    Ok(Any::none())
}

/// The dataclass globals.
pub(crate) fn dataclass_globals() -> Vec<BuiltinGlobal> {
    vec![
        packed("ffi._RegisterFFIInit", |args| {
            let [type_index] = args else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    "_RegisterFFIInit takes a type index",
                ));
            };
            let type_index = i32::try_from(type_index.get::<i64>()?)
                .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "type index out of range"))?;
            register_attr(
                type_index,
                "__ffi_init__",
                Any::from(make_init(type_index)?),
            )?;
            Ok(Any::none())
        }),
        packed(
            "ffi._PyClassRegisterTypeAttrColumns",
            py_class_register_columns,
        ),
        packed("ffi.MakeFieldGetter", make_field_getter),
        packed("ffi.MakeFieldSetter", make_field_setter),
        packed("ffi.MakeObjectFromPackedArgs", make_object_from_packed_args),
    ]
}

/// One field of a runtime type defined here.
pub(crate) struct RuntimeField {
    pub(crate) name: &'static str,
    pub(crate) doc: &'static str,
    /// The `type_schema` JSON of the field's declared type.
    pub(crate) schema: &'static str,
    pub(crate) offset: i64,
    pub(crate) storage: Storage,
    /// The declared static type index the official runtime records.
    pub(crate) static_type_index: i32,
    pub(crate) flags: i64,
}

impl RuntimeField {
    /// Calls `register` with the record of this field (its strings borrowed for the call; the
    /// type table copies them).
    pub(crate) fn with_info<R>(&self, register: impl FnOnce(&TVMFFIFieldInfo) -> R) -> R {
        let (getter, setter) = accessors(self.storage);
        let metadata = format!(
            "{{\"type_schema\":{}}}",
            serde_json::Value::String(self.schema.to_owned())
        );
        register(&TVMFFIFieldInfo {
            name: byte_view(self.name.as_bytes()),
            doc: byte_view(self.doc.as_bytes()),
            metadata: byte_view(metadata.as_bytes()),
            flags: self.flags,
            size: self.storage.size() as i64,
            alignment: self.storage.size().min(8) as i64,
            offset: self.offset,
            getter: Some(getter),
            setter: setter as *mut c_void,
            default_value_or_factory: TVMFFIAny::NONE,
            field_static_type_index: self.static_type_index,
        })
    }
}
