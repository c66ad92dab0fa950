//! Function creation and calls, `AnyViewToOwnedAny`, and the global function registry's C
//! functions and own `ffi.*` globals. The top of the runtime: the registry is filled here
//! with every built-in global (`builtin_globals`), so this file names the files that make
//! them, and none of them names it.

use core::ffi::{c_int, c_void};
use std::sync::RwLock;

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIByteArray, TVMFFIFunctionCell, TVMFFIMethodInfo, TVMFFIObject,
    TVMFFIObjectHandle, TVMFFITypeIndex, field_flags,
};

use super::args::{SafeCallFn, arg_bytes, arg_ref, byte_array_bytes, out_ptr};
use super::builtin::{BOOL, FUNCTION, STR, VOID_PTR, index_error, typed};
use super::registry::{self, BuiltinGlobal, Registry};
use super::{
    dataclass, json_globals, module_globals, recursive_globals, repr_globals,
    serialization_globals, structural_globals, structural_mutate, structural_visit, value_globals,
    visit_error_context,
};
use pactum_core::any::{Any, AnyView};
use pactum_core::error::{Error, ErrorKind};
use pactum_core::function::Function;
use pactum_core::internal::boundary::{self, EntryKind::CApi};
use pactum_core::internal::header;
use pactum_core::object::{ObjectRef, ObjectRefType};

#[allow(non_snake_case)]
/// `TVMFFIFunctionCreate`: with `self_` and `deleter` both NULL, `safe_call` is stored directly
/// and receives the function object; otherwise calls receive `self_` and `deleter(self_)` runs
/// once when the function dies (even for a NULL `self_`).
///
/// # Safety
/// The C contract of `TVMFFIFunctionCreate` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIFunctionCreate(
    self_: *mut c_void,
    safe_call: pactum_sys::tvm_ffi::TVMFFISafeCallType,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let out = out_ptr(out, "out")?;
        let safe_call: SafeCallFn = safe_call
            .ok_or_else(|| Error::new(ErrorKind::VALUE_ERROR, "argument `safe_call` is NULL"))?;
        let function = if self_.is_null() && deleter.is_none() {
            // SAFETY: the C caller vouches for the callback's convention and thread safety.
            unsafe { Function::from_safe_call_direct(safe_call) }
        } else {
            // SAFETY: as above, for the callback, `self_` and its deleter.
            unsafe { Function::from_safe_call(self_, safe_call, deleter) }
        };
        // SAFETY: checked out pointer; the caller receives the new reference.
        unsafe { *out = function.into_object_ref().into_raw().cast() };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIFunctionCall`: a tail call to the function's `safe_call`.
///
/// # Safety
/// The C contract of `TVMFFIFunctionCall` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
#[inline]
pub unsafe extern "C" fn TVMFFIFunctionCall(
    func: TVMFFIObjectHandle,
    args: *mut TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // Nothing in the body can unwind (both calls are to C functions), so the boundary compiles
    // away and the call stays a tail call.
    boundary::value(CApi, -1, || {
        if func.is_null() {
            return Ok(null_function());
        }
        // SAFETY: the caller passes a live Function object, whose cell follows the header.
        // Every Function object has a non-NULL `safe_call` (the ABI requires it; the official
        // runtime jumps through it unchecked too), so this is a single checked-NULL tail call.
        Ok(unsafe {
            let cell = &*func
                .cast::<TVMFFIObject>()
                .add(1)
                .cast::<TVMFFIFunctionCell>();
            (cell.safe_call.unwrap_unchecked())(func, args, num_args, result)
        })
    })
}

/// `TVMFFIFunctionCall` with a NULL function: a C function of its own, so the hot path above
/// makes no call that could unwind.
#[cold]
#[inline(never)]
extern "C" fn null_function() -> c_int {
    boundary::status(CApi, || {
        Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "argument `func` is NULL",
        ))
    })
}

/// The registry, holding the built-in globals from its first use.
fn registry() -> &'static RwLock<Registry> {
    registry::get_or_init(builtin_globals)
}

fn read_registry() -> std::sync::RwLockReadGuard<'static, Registry> {
    registry()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write_registry() -> std::sync::RwLockWriteGuard<'static, Registry> {
    registry()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[allow(non_snake_case)]
/// `TVMFFIFunctionGetGlobal`: a new reference, or NULL (rc 0) when missing.
///
/// # Safety
/// The C contract of `TVMFFIFunctionGetGlobal` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIFunctionGetGlobal(
    name: *const TVMFFIByteArray,
    out: *mut TVMFFIObjectHandle,
) -> c_int {
    boundary::status(CApi, || {
        let name = arg_bytes(name, "name")?;
        let out = out_ptr(out, "out")?;
        let function = read_registry().get(name).and_then(|e| e.function.clone());
        // SAFETY: checked out pointer; a new reference or NULL.
        unsafe {
            *out = function.map_or(core::ptr::null_mut(), |f| {
                f.into_object_ref().into_raw().cast()
            })
        };
        Ok(())
    })
}

fn already_registered(name: &[u8]) -> Error {
    Error::new(
        ErrorKind::RUNTIME_ERROR,
        format!(
            "Global Function `{}` is already registered",
            std::string::String::from_utf8_lossy(name)
        ),
    )
}

#[allow(non_snake_case)]
/// `TVMFFIFunctionSetGlobal`: the registry keeps its own reference; NULL registers an entry
/// that lookups report as missing.
///
/// # Safety
/// The C contract of `TVMFFIFunctionSetGlobal` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIFunctionSetGlobal(
    name: *const TVMFFIByteArray,
    f: TVMFFIObjectHandle,
    allow_override: c_int,
) -> c_int {
    boundary::status(CApi, || {
        let name = arg_bytes(name, "name")?;
        let function = core::ptr::NonNull::new(f.cast::<TVMFFIObject>()).map(|p| {
            // SAFETY: the caller passes a live object; we take our own reference. Like the
            // official runtime, the type is not checked here.
            let object = unsafe { ObjectRef::from_raw_borrowed(p) };
            // SAFETY: see above.
            unsafe { Function::from_object_ref_unchecked(object) }
        });
        let mut registry = write_registry();
        if allow_override == 0 && registry.get(name).is_some() {
            return Err(already_registered(name));
        }
        let old = registry.remove(name);
        registry.insert(name, function, b"", field_flags::IS_STATIC_METHOD);
        drop(registry);
        drop(old);
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIFunctionSetGlobalFromMethodInfo`.
///
/// # Safety
/// The C contract of `TVMFFIFunctionSetGlobalFromMethodInfo` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIFunctionSetGlobalFromMethodInfo(
    method_info: *const TVMFFIMethodInfo,
    allow_override: c_int,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: checked non-null; the caller passes a valid record.
        let info = unsafe { arg_ref(method_info, "method_info")? };
        // SAFETY: the record's strings are valid for the call.
        let (name, metadata) = unsafe {
            (
                byte_array_bytes(&info.name),
                byte_array_bytes(&info.metadata),
            )
        };
        // SAFETY: `method` is a valid view.
        let method = unsafe { AnyView::from_raw(info.method) };
        let function = if method.is_none() {
            None
        } else {
            Some(method.get::<Function>().map_err(|_| {
                Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "Cannot convert from type `{}` to `ffi.Function`",
                        pactum_core::internal::display_type_name(method.type_index())
                    ),
                )
            })?)
        };
        let mut registry = write_registry();
        if allow_override == 0 && registry.get(name).is_some() {
            let message = format!(
                "Global Function `{}` is already registered, possible causes:\n- Two GlobalDef().def registrations for the same function \nPlease remove the duplicate registration.",
                std::string::String::from_utf8_lossy(name)
            );
            eprintln!("Traceback (most recent call last):\nRuntimeError: {message}");
            return Err(Error::new(ErrorKind::RUNTIME_ERROR, message));
        }
        let old = registry.remove(name);
        registry.insert(name, function, metadata, info.flags);
        drop(registry);
        drop(old);
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIAnyViewToOwnedAny`: copies the 16 bytes, then converts borrowed kinds (C strings
/// to String, byte arrays to Bytes, rvalue references moved) and adds a reference to objects.
///
/// # Safety
/// The C contract of `TVMFFIAnyViewToOwnedAny` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIAnyViewToOwnedAny(
    any_view: *const TVMFFIAny,
    out: *mut TVMFFIAny,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: checked non-null; the caller passes a valid view.
        let view = unsafe { *arg_ref(any_view, "any_view")? };
        let out = out_ptr(out, "out")?;
        let owned = match TVMFFITypeIndex(view.type_index) {
            TVMFFITypeIndex::RAW_STR
            | TVMFFITypeIndex::BYTE_ARRAY_PTR
            | TVMFFITypeIndex::OBJECT_RVALUE_REF => {
                // SAFETY: a valid view for the duration of the call.
                unsafe { AnyView::from_raw(view) }.to_any()?.into_raw()
            }
            _ => {
                if view.type_index >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
                    // SAFETY: a live object; the copy owns a new reference. The type index is
                    // kept as passed, as the official runtime does.
                    unsafe { header::inc_ref(view.value.v_obj) };
                }
                view
            }
        };
        // SAFETY: checked out pointer.
        unsafe { *out = owned };
        Ok(())
    })
}

/// Every global pactum's runtime registers at start-up, in registration order.
fn builtin_globals() -> Vec<BuiltinGlobal> {
    let mut globals = value_globals::object_globals();
    globals.extend(registry_globals());
    globals.extend(value_globals::container_globals());
    globals.extend(module_globals::module_globals());
    globals.extend(repr_globals::repr_globals());
    globals.extend(dataclass::dataclass_globals());
    globals.extend(recursive_globals::recursive_globals());
    globals.extend(json_globals::json_globals());
    globals.extend(serialization_globals::serialization_globals());
    globals.extend(structural_globals::structural_globals());
    globals.extend(structural_visit::visit_globals());
    globals.extend(structural_mutate::mutate_globals());
    globals.extend(visit_error_context::visit_error_context_globals());
    globals
}

/// The registry's own globals: removal, listing, metadata, and functions from C pointers.
fn registry_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.FunctionRemoveGlobal", &[STR], BOOL, |a| {
            let name = a.string_bytes(0)?;
            let removed = write_registry().remove(name);
            Ok(Any::from(removed.is_some()))
        }),
        typed("ffi.FunctionListGlobalNamesFunctor", &[], FUNCTION, |_| {
            let names = read_registry().names();
            Ok(Function::from_packed(move |args: &[AnyView<'_>]| {
                let index = args
                    .first()
                    .map(|a| a.get::<i64>())
                    .transpose()?
                    .unwrap_or(-1);
                if index < 0 {
                    return Ok(Any::from(names.len() as i64));
                }
                let name = names
                    .get(index as usize)
                    .ok_or_else(|| index_error(index, names.len()))?;
                Ok(pactum_core::String::value_from_bytes(name))
            })
            .into())
        }),
        typed("ffi.GetGlobalFuncMetadata", &[STR], STR, |a| {
            let name = a.string_bytes(0)?;
            let registry = read_registry();
            let entry = registry.get(name).ok_or_else(|| {
                Error::new(
                    ErrorKind::RUNTIME_ERROR,
                    format!(
                        "Global Function is not found: {}",
                        std::string::String::from_utf8_lossy(name)
                    ),
                )
            })?;
            Ok(pactum_core::String::value_from_bytes(&entry.metadata))
        }),
        typed(
            "ffi.FunctionFromExternC",
            &[VOID_PTR, VOID_PTR, VOID_PTR],
            FUNCTION,
            |a| {
                let self_ = a.get::<pactum_core::OpaquePtr>(0)?.0;
                let safe_call = a.get::<pactum_core::OpaquePtr>(1)?.0;
                let deleter = a.get::<pactum_core::OpaquePtr>(2)?.0;
                if safe_call.is_null() {
                    return Err(Error::new(ErrorKind::VALUE_ERROR, "safe_call is NULL"));
                }
                // SAFETY: the caller passes a TVMFFISafeCallType and a `void(void*)` deleter (or
                // NULL), exactly as for TVMFFIFunctionCreate.
                let function = unsafe {
                    let safe_call =
                        core::mem::transmute::<*mut core::ffi::c_void, SafeCallFn>(safe_call);
                    let deleter = (!deleter.is_null()).then(|| {
                        core::mem::transmute::<
                            *mut core::ffi::c_void,
                            unsafe extern "C" fn(*mut core::ffi::c_void),
                        >(deleter)
                    });
                    if self_.is_null() && deleter.is_none() {
                        Function::from_safe_call_direct(safe_call)
                    } else {
                        Function::from_safe_call(self_, safe_call, deleter)
                    }
                };
                Ok(function.into())
            },
        ),
    ]
}
