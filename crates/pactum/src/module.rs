//! [`Module`] (`ffi.Module`): a loaded library of packed functions.
//!
//! Modules are driven through the runtime's `ffi.Module*` global functions, so the same code
//! works with the official runtime (whose modules are C++ objects) and with pactum's own.

use std::path::Path;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::any::{Any, AnyView};
use crate::error::{Error, ErrorKind, Result};
use crate::function::Function;
use crate::object::ObjectRef;

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
