//! [`Module`] (`ffi.Module`): a loaded library of packed functions.
//!
//! Modules are driven through the runtime's `ffi.Module*` global functions, so the same code
//! works with the official runtime (whose modules are C++ objects) and with pactum's own.

use std::path::Path;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::any::{Any, AnyView};
use crate::error::{Error, ErrorKind, Result};
use crate::function::Function;
use crate::object::{ObjectRef, builtin_object_ref};

/// A loaded module (`ffi.Module`).
#[repr(transparent)]
#[derive(Clone, Debug)]
pub struct Module(ObjectRef);

builtin_object_ref!(Module, TVMFFITypeIndex::MODULE, "ffi.Module");

fn global(name: &str) -> Result<Function> {
    Function::get_global(name).ok_or_else(|| {
        Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!("the runtime has no global function `{name}`"),
        )
    })
}

impl Module {
    /// Loads a shared library exporting `__tvm_ffi_<name>` functions (`ffi.ModuleLoadFromFile`).
    ///
    /// A path without a directory goes through the dynamic loader's search path, as with
    /// `dlopen`; use `./lib.so` for a file in the working directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Module> {
        crate::runtime::prepare_module_loading()?;
        let path = path.as_ref();
        let text = path.to_str().ok_or_else(|| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("module path is not UTF-8: {}", path.display()),
            )
        })?;
        global("ffi.ModuleLoadFromFile")?.call_typed::<_, Module>((text,))
    }

    /// The function exported as `name`, searching imported modules too; `None` if absent.
    pub fn get_function(&self, name: &str) -> Result<Option<Function>> {
        global("ffi.ModuleGetFunction")?.call_typed::<_, Option<Function>>((self, name, true))
    }

    /// The function exported as `name`, or a `ValueError` naming it.
    pub fn function(&self, name: &str) -> Result<Function> {
        self.get_function(name)?.ok_or_else(|| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("module has no function `{name}`"),
            )
        })
    }

    /// Whether the module exports `name`.
    pub fn implements(&self, name: &str) -> Result<bool> {
        global("ffi.ModuleImplementsFunction")?.call_typed::<_, bool>((self, name, true))
    }

    /// The `__tvm_ffi__metadata_<name>` JSON of an export, if the library provides one.
    pub fn function_metadata(&self, name: &str) -> Result<Option<crate::String>> {
        global("ffi.ModuleGetFunctionMetadata")?
            .call_typed::<_, Option<crate::String>>((self, name, true))
    }

    /// The `__tvm_ffi__doc_<name>` text of an export, if the library provides one.
    pub fn function_doc(&self, name: &str) -> Result<Option<crate::String>> {
        global("ffi.ModuleGetFunctionDoc")?
            .call_typed::<_, Option<crate::String>>((self, name, true))
    }

    /// The module kind (`library` for shared libraries).
    pub fn kind(&self) -> Result<crate::String> {
        global("ffi.ModuleGetKind")?.call_typed::<_, crate::String>((self,))
    }

    /// Calls export `name` with `args`.
    pub fn call(&self, name: &str, args: &[AnyView<'_>]) -> Result<Any> {
        self.function(name)?.call(args)
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}
