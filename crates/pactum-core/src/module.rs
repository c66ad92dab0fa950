//! [`Module`] (`ffi.Module`): a loaded library of packed functions.
//!
//! Modules are driven through the runtime's `ffi.Module*` global functions, so the same code
//! works with the official runtime (whose modules are C++ objects) and with pactum's own.

use std::path::Path;
use std::sync::Arc;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::any::{Any, AnyView};
use crate::error::{Error, ErrorKind, Result};
use crate::function::Function;
use crate::object::ObjectRef;

/// The global function of pactum's runtime that makes a module served by functions (the bridge
/// behind [`Module::from_impl`]): `(kind: str, get_function: Function, get_text: Function) ->
/// Module`, where `get_function(name) -> Optional[Function]` and `get_text(what, name) ->
/// Optional[str]` with `what` one of `metadata`, `doc`.
///
/// The bridge is made of TVM FFI functions rather than a Rust trait object so that any copy of
/// pactum in the process (a Rust module loaded by a C program running `pactum-capi`, say) can
/// make modules in the one runtime that serves the process.
pub const MODULE_FROM_FUNCTIONS: &str = "pactum.Module.from_functions";

/// A module whose functions are served by Rust code, for [`Module::from_impl`].
///
/// The runtime asks it on every `ffi.ModuleGetFunction` (and `ModuleImplementsFunction`,
/// metadata and doc lookups) that reaches the module; imports added with
/// `ffi.ModuleImportModule` are searched after it, as for library modules.
pub trait ModuleImpl: Send + Sync + 'static {
    /// The module kind `ffi.ModuleGetKind` reports (`vmfb`, ...); must not be empty.
    fn kind(&self) -> &str;

    /// The function exported as `name`, `None` when there is none (an error only for a
    /// failure to produce it).
    fn get_function(&self, name: &str) -> Result<Option<Function>>;

    /// The metadata JSON of export `name` (as `__tvm_ffi__metadata_<name>` gives it), if any.
    fn function_metadata(&self, name: &str) -> Option<std::string::String> {
        let _ = name;
        None
    }

    /// The documentation of export `name` (as `__tvm_ffi__doc_<name>` gives it), if any.
    fn function_doc(&self, name: &str) -> Option<std::string::String> {
        let _ = name;
        None
    }
}

/// A loaded module (`ffi.Module`).
#[repr(transparent)]
#[derive(Clone, Debug)]
pub struct Module(ObjectRef);

crate::any::builtin_object_ref!(Module, TVMFFITypeIndex::MODULE, "ffi.Module");
crate::function::encode_by_view!(Module);

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
        let path = path.as_ref();
        let text = path.to_str().ok_or_else(|| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("module path is not UTF-8: {}", path.display()),
            )
        })?;
        if let Some(detail) = truncated_library(path) {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("Failed to load dynamic shared library {text}: {detail}"),
            ));
        }
        global("ffi.ModuleLoadFromFile")?.call_typed::<_, Module>((text,))
    }

    /// A module whose functions `implementation` serves (see [`ModuleImpl`]), usable wherever
    /// a loaded library is: `ffi.ModuleGetFunction`, imports, `ffi.ModuleGetKind`, C callers.
    ///
    /// Needs pactum's own runtime (`pactum-runtime` linked into the program, or `pactum-capi`'s `libtvm_ffi.so`):
    /// where the official library serves the process this is a `RuntimeError` saying so.
    pub fn from_impl(implementation: Arc<dyn ModuleImpl>) -> Result<Module> {
        let bridge = Function::get_global(MODULE_FROM_FUNCTIONS).ok_or_else(|| {
            let runtime = match crate::runtime::kind() {
                crate::runtime::RuntimeKind::Builtin => "pactum's built-in runtime".to_owned(),
                crate::runtime::RuntimeKind::Host { path } => format!("the library {path}"),
            };
            Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!(
                    "Module::from_impl needs pactum's own runtime, which registers \
                     `{MODULE_FROM_FUNCTIONS}`; this process is served by {runtime}, which does \
                     not (the official libtvm_ffi.so cannot hold modules served by Rust code)"
                ),
            )
        })?;
        let kind = implementation.kind().to_owned();
        let functions = implementation.clone();
        let get_function = Function::from_packed(move |args: &[AnyView<'_>]| {
            let [name] = args else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("get_function takes 1 argument (name), got {}", args.len()),
                ));
            };
            Ok(functions.get_function(name.get::<&str>()?)?.into())
        });
        let get_text = Function::from_packed(move |args: &[AnyView<'_>]| {
            let [what, name] = args else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "get_text takes 2 arguments (what, name), got {}",
                        args.len()
                    ),
                ));
            };
            let name = name.get::<&str>()?;
            let text = match what.get::<&str>()? {
                "metadata" => implementation.function_metadata(name),
                "doc" => implementation.function_doc(name),
                _ => None,
            };
            Ok(text.map(|t| crate::String::from(t.as_str())).into())
        });
        bridge.call_typed::<_, Module>((kind.as_str(), &get_function, &get_text))
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

    /// The module kind (`library` for shared libraries, [`ModuleImpl::kind`] for modules made
    /// by [`from_impl`](Self::from_impl)).
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

/// Why the shared library at `path` must not be given to `dlopen`, when its file is an ELF64
/// object cut short: its program headers or a loadable segment end past the end of the file.
///
/// glibc maps such segments anyway and the process dies of SIGBUS when the loader touches the
/// missing pages (Python's `ctypes.CDLL` dies the same way), so a truncated copy of a library
/// must be refused before it is loaded. Anything else (a missing file, a bare name for the
/// loader's search path, another format) is left to `dlopen` and its own errors. The program
/// headers are read one by one, so nothing is allocated in proportion to what the header claims.
/// Loading a library runs its code: this catches damaged files, not malicious ones.
pub fn truncated_library(path: &Path) -> Option<std::string::String> {
    use std::os::unix::fs::FileExt;
    // dlopen searches the loader's path for a name without a slash, not the working directory.
    if !path.as_os_str().as_encoded_bytes().contains(&b'/') {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    // ELF magic, 64-bit, little-endian: the objects this platform loads.
    if header[..6] != *b"\x7fELF\x02\x01" {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u64::from(u16::from_le_bytes([b[at], b[at + 1]]));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (table, entry_size, count) = (
        u64_at(&header, 0x20),
        u16_at(&header, 0x36),
        u16_at(&header, 0x38),
    );
    if entry_size < 56 {
        return None; // not a program header table dlopen accepts either
    }
    let table_end = table.saturating_add(entry_size * count);
    if table_end > len {
        return Some(format!(
            "the file is truncated: its program headers end at byte {table_end}, but it has {len} \
             bytes"
        ));
    }
    let mut entry = [0u8; 56];
    for index in 0..count {
        file.read_exact_at(&mut entry, table + index * entry_size)
            .ok()?;
        const PT_LOAD: u32 = 1;
        if u32::from_le_bytes(entry[..4].try_into().unwrap()) != PT_LOAD {
            continue;
        }
        let end = u64_at(&entry, 8).saturating_add(u64_at(&entry, 32));
        if end > len {
            return Some(format!(
                "the file is truncated: loadable segment {index} ends at byte {end}, but it has \
                 {len} bytes"
            ));
        }
    }
    None
}
