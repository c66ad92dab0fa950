//! The built-in `ffi.*` globals over modules: loading files (`ffi.ModuleLoadFromFile`,
//! `ffi.Module.load_from_file.so`), `ffi.SystemLib`, looking functions up, imports, and the
//! module pins of `ffi.ModuleGlobalsAdd`, and `pactum.Module.from_functions` (modules served by
//! Rust code, behind `Module::from_impl`).

use core::ffi::c_int;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::builtin::{
    ARRAY_OF_STR, BOOL, FALL_THROUGH, FUNCTION, INT, MODULE, NONE, OPTIONAL_FUNCTION, OPTIONAL_STR,
    STR, packed, typed, with_fast_entry,
};
use super::modules::{
    clear_imports, cxx_module_kind_into, cxx_module_operations, cxx_module_property_mask_into,
    ensure_ours, get_function, get_function_text, import_module, load_shared_library,
    load_system_lib, module_kind, served_module,
};
use super::registry::BuiltinGlobal;
use pactum_core::any::Any;
use pactum_core::containers::Array;
use pactum_core::error::{Error, ErrorKind};
use pactum_core::function::Function;
use pactum_core::module::{MODULE_FROM_FUNCTIONS, Module};
use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIObject, TVMFFITypeIndex};

fn module_globals_pins() -> MutexGuard<'static, HashMap<usize, Module>> {
    static PINS: OnceLock<Mutex<HashMap<usize, Module>>> = OnceLock::new();
    PINS.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn system_libs() -> MutexGuard<'static, HashMap<std::string::String, Module>> {
    static LIBS: OnceLock<Mutex<HashMap<std::string::String, Module>>> = OnceLock::new();
    LIBS.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The module handle of a call with exactly one argument, a module; `None` otherwise.
///
/// # Safety
/// `args` holds `num_args` valid values (the safe-call convention).
unsafe fn only_module_argument(
    args: *const TVMFFIAny,
    num_args: i32,
) -> Option<*const TVMFFIObject> {
    if num_args != 1 {
        return None;
    }
    // SAFETY: one valid value, per this function's contract.
    let arg = unsafe { &*args };
    // SAFETY: a value of type index ffi.Module holds an object pointer.
    (arg.type_index == TVMFFITypeIndex::MODULE.0).then(|| unsafe { arg.value.v_obj }.cast_const())
}

/// `ffi.ModuleGetKind` of a module C++ code made, answered by the C++ part (Python asks it on
/// every call of a compiled function: `tvm.runtime.Executable` walks the import tree).
unsafe extern "C" fn module_kind_fast(
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: the safe-call convention's arguments.
    match unsafe { only_module_argument(args, num_args) } {
        // SAFETY: a module the caller keeps alive for the call; the result slot holds None.
        Some(module) => unsafe { cxx_module_kind_into(module, result) },
        None => FALL_THROUGH,
    }
}

/// `ffi.ModuleGetPropertyMask` of a module C++ code made, as `module_kind_fast`.
unsafe extern "C" fn module_property_mask_fast(
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: the safe-call convention's arguments.
    let Some(module) = (unsafe { only_module_argument(args, num_args) }) else {
        return FALL_THROUGH;
    };
    let mut mask = 0i64;
    // SAFETY: a module the caller keeps alive for the call.
    let answered = unsafe { cxx_module_property_mask_into(module, &mut mask) };
    if answered == 0 {
        // SAFETY: the convention's result slot, holding None (an integer owns nothing).
        unsafe { result.write(Any::from(mask).into_raw()) };
    }
    answered
}

/// The `ffi.Module*` globals, `ffi.SystemLib` and the loader of shared libraries.
pub(crate) fn module_globals() -> Vec<BuiltinGlobal> {
    vec![
        typed("ffi.ModuleLoadFromFile", &[STR], MODULE, |a| {
            let path = a.get::<pactum_core::String>(0)?;
            let path = path.as_str();
            let format = match path.rfind('.') {
                Some(dot) => &path[dot + 1..],
                None => {
                    return Err(Error::new(
                        ErrorKind::RUNTIME_ERROR,
                        format!("Failed to get file format from {path}"),
                    ));
                }
            };
            let format = if matches!(format, "dll" | "dylib" | "dso") {
                "so"
            } else {
                format
            };
            let loader_name = format!("ffi.Module.load_from_file.{format}");
            let loader = Function::get_global(&loader_name).ok_or_else(|| {
                Error::new(
                    ErrorKind::RUNTIME_ERROR,
                    format!(
                        "Loader for `.{format}` files is not registered, resolved to ({loader_name}) in the global registry.Ensure that you have loaded the correct runtime code, andthat you are on the correct hardware architecture."
                    ),
                )
            })?;
            loader.call_typed::<_, Any>((path, format))
        }),
        typed(
            "ffi.ModuleImplementsFunction",
            &[MODULE, STR, BOOL],
            BOOL,
            |a| {
                let (module, name) = (a.get::<Module>(0)?, a.get::<pactum_core::String>(1)?);
                let query_imports = a.get::<bool>(2)?;
                if let Some(operations) = cxx_module_operations(&module) {
                    let args = ("ImplementsFunction", module, name, query_imports);
                    return operations.call_typed::<_, Any>(args);
                }
                let found = get_function(&module, &name, query_imports)?;
                Ok(Any::from(found.is_some()))
            },
        ),
        typed(
            "ffi.ModuleGetFunctionMetadata",
            &[MODULE, STR, BOOL],
            OPTIONAL_STR,
            |a| {
                Ok(get_function_text(
                    &a.get::<Module>(0)?,
                    "metadata",
                    &a.get::<pactum_core::String>(1)?,
                    a.get::<bool>(2)?,
                )?
                .into())
            },
        ),
        typed(
            "ffi.ModuleGetFunctionDoc",
            &[MODULE, STR, BOOL],
            OPTIONAL_STR,
            |a| {
                Ok(get_function_text(
                    &a.get::<Module>(0)?,
                    "doc",
                    &a.get::<pactum_core::String>(1)?,
                    a.get::<bool>(2)?,
                )?
                .into())
            },
        ),
        typed(
            "ffi.ModuleGetFunction",
            &[MODULE, STR, BOOL],
            OPTIONAL_FUNCTION,
            |a| {
                Ok(get_function(
                    &a.get::<Module>(0)?,
                    &a.get::<pactum_core::String>(1)?,
                    a.get::<bool>(2)?,
                )?
                .into())
            },
        ),
        with_fast_entry(
            typed("ffi.ModuleGetPropertyMask", &[MODULE], INT, |a| {
                let module = a.get::<Module>(0)?;
                if let Some(operations) = cxx_module_operations(&module) {
                    return operations.call_typed::<_, Any>(("GetPropertyMask", module));
                }
                ensure_ours(&module)?;
                Ok(Any::from(3i64))
            }),
            module_property_mask_fast,
        ),
        typed("ffi.ModuleInspectSource", &[MODULE, STR], STR, |a| {
            let module = a.get::<Module>(0)?;
            if let Some(operations) = cxx_module_operations(&module) {
                let format = a.get::<pactum_core::String>(1)?;
                return operations.call_typed::<_, Any>(("InspectSource", module, format));
            }
            ensure_ours(&module)?;
            Ok(Any::from(""))
        }),
        with_fast_entry(
            typed("ffi.ModuleGetKind", &[MODULE], STR, |a| {
                let module = a.get::<Module>(0)?;
                // The C++ answer as it comes (a String): no copy into a Rust string and back.
                if let Some(operations) = cxx_module_operations(&module) {
                    return operations.call_typed::<_, Any>(("GetKind", module));
                }
                Ok(Any::from(module_kind(&module)?.as_str()))
            }),
            module_kind_fast,
        ),
        typed("ffi.ModuleGetWriteFormats", &[MODULE], ARRAY_OF_STR, |a| {
            let module = a.get::<Module>(0)?;
            if let Some(operations) = cxx_module_operations(&module) {
                return operations.call_typed::<_, Any>(("GetWriteFormats", module));
            }
            ensure_ours(&module)?;
            Ok(Array::new([]).into())
        }),
        typed("ffi.ModuleWriteToFile", &[MODULE, STR, STR], NONE, |a| {
            let module = a.get::<Module>(0)?;
            if let Some(operations) = cxx_module_operations(&module) {
                let file = a.get::<pactum_core::String>(1)?;
                let format = a.get::<pactum_core::String>(2)?;
                return operations.call_typed::<_, Any>(("WriteToFile", module, file, format));
            }
            let kind = module_kind(&module)?;
            Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!("Module[{kind}] does not support WriteToFile"),
            ))
        }),
        typed("ffi.ModuleImportModule", &[MODULE, MODULE], NONE, |a| {
            import_module(&a.get::<Module>(0)?, &a.get::<Module>(1)?)?;
            Ok(Any::none())
        }),
        typed("ffi.ModuleClearImports", &[MODULE], NONE, |a| {
            clear_imports(&a.get::<Module>(0)?)?;
            Ok(Any::none())
        }),
        typed("ffi.ModuleGlobalsAdd", &[MODULE], NONE, |a| {
            let module = a.get::<Module>(0)?;
            module_globals_pins().insert(module.as_object_ref().as_raw() as usize, module);
            Ok(Any::none())
        }),
        typed("ffi.ModuleGlobalsRemove", &[MODULE], NONE, |a| {
            let module = a.get::<Module>(0)?;
            let removed = module_globals_pins().remove(&(module.as_object_ref().as_raw() as usize));
            drop(removed);
            Ok(Any::none())
        }),
        packed("ffi.SystemLib", |args| {
            let prefix = match args.first() {
                Some(prefix) => prefix.get::<pactum_core::String>()?.as_str().to_owned(),
                None => std::string::String::new(),
            };
            if let Some(module) = system_libs().get(&prefix) {
                return Ok(module.clone().into());
            }
            let module = load_system_lib(&prefix)?;
            Ok(system_libs().entry(prefix).or_insert(module).clone().into())
        }),
        typed(
            MODULE_FROM_FUNCTIONS,
            &[STR, FUNCTION, FUNCTION],
            MODULE,
            |a| {
                Ok(served_module(
                    &a.get::<pactum_core::String>(0)?,
                    a.get::<Function>(1)?,
                    a.get::<Function>(2)?,
                )?
                .into())
            },
        ),
        typed("ffi.Module.load_from_file.so", &[STR, STR], MODULE, |a| {
            Ok(load_shared_library(&a.get::<pactum_core::String>(0)?)?.into())
        }),
    ]
}
