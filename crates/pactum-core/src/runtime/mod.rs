//! Which implementation of the C API this process uses, and access to it.
//!
//! A process has exactly one TVM FFI runtime: one error slot per thread, one global registry,
//! one type table. pactum finds it on first use:
//!
//! 1. If a library whose SONAME is `libtvm_ffi.so` is already loaded (the official one under
//!    Python, pactum's own `pactum-capi` under a C program, or the forwarder below), pactum
//!    binds to its 50 C functions ([`RuntimeKind::Host`]).
//! 2. Otherwise the runtime linked into the program serves ([`RuntimeKind::Builtin`]): pactum's
//!    own (crate `pactum-runtime`, brought by the `pactum` crate's default `runtime` feature),
//!    which registers its C API table here when the program starts ([`register_builtin`]).
//!    Before such a process loads a C-built module (which records `NEEDED libtvm_ffi.so`), that
//!    runtime loads an embedded forwarding `libtvm_ffi.so` from memory and points it at itself,
//!    so the module's C API calls reach the same runtime with no file on disk and no
//!    `LD_LIBRARY_PATH`.
//!
//! A process with neither (a program built without the `runtime` feature, loading no
//! `libtvm_ffi.so`) has no runtime: its first pactum call panics with a message saying so.
//!
//! See `docs/ARCHITECTURE.md`.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use pactum_sys::{TVM_FFI_C_API_NAMES, TVMFFICApi};

/// Where this process's C API comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuntimeKind {
    /// The runtime linked into this program (pactum's own, `pactum-runtime`).
    Builtin,
    /// A loaded `libtvm_ffi.so` (official, `pactum-capi`, or pactum's forwarder), at `path`.
    Host {
        /// The library's path as the dynamic loader reports it.
        path: std::string::String,
    },
}

struct Runtime {
    api: &'static TVMFFICApi,
    kind: RuntimeKind,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The table [`register_builtin`] recorded (null until then).
static BUILTIN: AtomicPtr<TVMFFICApi> = AtomicPtr::new(core::ptr::null_mut());

/// Registers the C API of the runtime linked into this program, which serves the process when
/// no `libtvm_ffi.so` is loaded. `pactum-runtime` calls it when the program starts; the first
/// registration wins and later ones are ignored (two copies of a runtime in one program cannot
/// split its state). Registering after this process's runtime was chosen changes nothing.
///
/// # Safety
/// Every function of `api` must implement the C contract of the function of the same name in
/// the official headers (`tvm/ffi/c_api.h`, `tvm/ffi/extra/c_env_api.h`), for as long as the
/// process runs: pactum's safe API calls them on that basis.
pub unsafe fn register_builtin(api: &'static TVMFFICApi) {
    let _ = BUILTIN.compare_exchange(
        core::ptr::null_mut(),
        core::ptr::from_ref(api).cast_mut(),
        Ordering::AcqRel,
        Ordering::Acquire,
    );
}

fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| match find_loaded_runtime() {
        Some((api, path)) => Runtime {
            api: Box::leak(Box::new(api)),
            kind: RuntimeKind::Host { path },
        },
        None => Runtime {
            api: registered_builtin(),
            kind: RuntimeKind::Builtin,
        },
    })
}

fn registered_builtin() -> &'static TVMFFICApi {
    let api = BUILTIN.load(Ordering::Acquire);
    if api.is_null() {
        panic!(
            "pactum: no TVM FFI runtime serves this process: no libtvm_ffi.so is loaded and none \
             is linked in (depend on the `pactum` crate with its default `runtime` feature, or \
             load libtvm_ffi.so first)"
        );
    }
    // SAFETY: the only non-null value ever stored is a `&'static TVMFFICApi` (`register_builtin`).
    unsafe { &*api }
}

/// The C API of this process's runtime.
#[inline]
pub fn api() -> &'static TVMFFICApi {
    runtime().api
}

/// Which runtime serves this process.
pub fn kind() -> RuntimeKind {
    runtime().kind.clone()
}

/// The name a TVM FFI runtime library is loaded under, and its SONAME.
const LIBRARY_NAME: &str = "libtvm_ffi.so";

/// Binds to an already-loaded `libtvm_ffi.so`, if there is one exporting the whole C API.
fn find_loaded_runtime() -> Option<(TVMFFICApi, std::string::String)> {
    // The loaded objects are looked through first, and the library is then opened by the path
    // it was loaded from: a `dlopen` by bare name that finds nothing loaded searches the whole
    // library path on disk (some forty failed `openat`s) before it gives up, which every plain
    // Rust program, where nothing is loaded, paid at its first pactum call.
    let loaded_from = loaded_object_named(LIBRARY_NAME)?;
    let flags = libc::RTLD_NOW | libc::RTLD_NOLOAD;
    // SAFETY: RTLD_NOLOAD never loads anything; it only returns a handle to a library that is
    // already loaded, so no initialisers run.
    let library = unsafe {
        libloading::os::unix::Library::open(
            Some(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&loaded_from)),
            flags,
        )
    }
    .ok()?;
    let mut functions = [core::ptr::null::<core::ffi::c_void>(); pactum_sys::TVM_FFI_C_API_LEN];
    for (slot, name) in functions.iter_mut().zip(TVM_FFI_C_API_NAMES) {
        // SAFETY: we only read the symbol's address.
        let symbol = unsafe { library.get::<*const core::ffi::c_void>(name.as_bytes()) }.ok()?;
        *slot = symbol.into_raw().cast_const();
        if slot.is_null() {
            return None;
        }
    }
    let path = library_path(functions[0]).unwrap_or_else(|| "libtvm_ffi.so".to_owned());
    // The handle is never closed: the runtime lives as long as the process.
    core::mem::forget(library);
    // SAFETY: TVMFFICApi is a repr(C) array of function pointers in TVM_FFI_C_API_NAMES order
    // with the header's signatures, and every entry was resolved to a non-null address.
    let api = unsafe {
        core::mem::transmute::<[*const core::ffi::c_void; pactum_sys::TVM_FFI_C_API_LEN], TVMFFICApi>(
            functions,
        )
    };
    Some((api, path))
}

/// The path of a loaded object (the main program aside) whose SONAME or file name is `name`,
/// as the dynamic loader matches a `dlopen` by bare name against the objects it has loaded.
fn loaded_object_named(name: &str) -> Option<Vec<u8>> {
    struct Search<'a> {
        name: &'a [u8],
        found: Option<Vec<u8>>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut core::ffi::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `Search` passed to `dl_iterate_phdr` below, borrowed by no one
        // else while it runs; `info` is the loader's description of one loaded object, valid
        // for this call.
        let (search, info) = unsafe { (&mut *data.cast::<Search<'_>>(), &*info) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: the loader's NUL-terminated name of the object, alive during the call.
        let path = unsafe { core::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes();
        // The main program has no name here and cannot be opened by one.
        if path.is_empty() {
            return 0;
        }
        let file_name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        let segments = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: the loader's program headers of the object: `dlpi_phnum` entries.
            unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
        };
        if file_name == search.name
            || soname(info.dlpi_addr as usize, segments) == Some(search.name)
        {
            search.found = Some(path.to_vec());
            return 1;
        }
        0
    }
    let mut search = Search {
        name: name.as_bytes(),
        found: None,
    };
    // SAFETY: `visit` matches the callback type and only reads what the loader hands it;
    // `search` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), core::ptr::from_mut(&mut search).cast()) };
    search.found
}

/// The SONAME a loaded object records in its dynamic section, read from its mapped segments.
/// `base` is the object's load address, `segments` its program headers. Every address is
/// checked to lie in one of the object's readable `PT_LOAD` segments before it is read.
fn soname<'a>(base: usize, segments: &'a [ElfProgramHeader]) -> Option<&'a [u8]> {
    const DT_NULL: usize = 0;
    const DT_STRTAB: usize = 5;
    const DT_SONAME: usize = 14;
    // The mapped, readable bytes from `address` to the end of its segment.
    let readable = |address: usize| -> Option<&'a [u8]> {
        segments.iter().find_map(|segment| {
            if segment.p_type != libc::PT_LOAD || segment.p_flags & libc::PF_R == 0 {
                return None;
            }
            let start = base.checked_add(segment.p_vaddr as usize)?;
            let end = start.checked_add(segment.p_memsz as usize)?;
            (start..end).contains(&address).then(|| {
                // SAFETY: the range lies in a readable segment the loader mapped for this
                // object (p_memsz bytes from its load address), which stays mapped while the
                // object is loaded: the callers hold the loader's lock (`dl_iterate_phdr`).
                unsafe { core::slice::from_raw_parts(address as *const u8, end - address) }
            })
        })
    };
    let dynamic = segments
        .iter()
        .find(|segment| segment.p_type == libc::PT_DYNAMIC)?;
    let entries = readable(base.checked_add(dynamic.p_vaddr as usize)?)?;
    let entry_size = 2 * core::mem::size_of::<usize>();
    let entries = &entries[..entries.len().min(dynamic.p_memsz as usize)];
    let word = |bytes: &[u8]| usize::from_ne_bytes(bytes.try_into().unwrap_or_default());
    let (mut strtab, mut soname) = (None, None);
    for entry in entries.chunks_exact(entry_size) {
        let (tag, value) = entry.split_at(core::mem::size_of::<usize>());
        match word(tag) {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(word(value)),
            DT_SONAME => soname = Some(word(value)),
            _ => {}
        }
    }
    let strtab = strtab?;
    // glibc rewrites the string table's entry to an address when it loads an object whose
    // dynamic section is writable; otherwise (the vDSO, read-only dynamic sections) it stays
    // an offset from the load address.
    let strtab = if strtab < base {
        base.checked_add(strtab)?
    } else {
        strtab
    };
    let text = readable(strtab.checked_add(soname?)?)?;
    text.iter().position(|&b| b == 0).map(|end| &text[..end])
}

/// A program header, as `dl_iterate_phdr` reports them.
#[cfg(target_pointer_width = "64")]
type ElfProgramHeader = libc::Elf64_Phdr;
#[cfg(target_pointer_width = "32")]
type ElfProgramHeader = libc::Elf32_Phdr;

/// The file a code address belongs to.
fn library_path(address: *const core::ffi::c_void) -> Option<std::string::String> {
    // SAFETY: an all-zero Dl_info (null pointers) is a valid value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads loader tables; `info` is a valid out pointer.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
    Some(
        unsafe { core::ffi::CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    /// This crate's unit tests run in a process without a runtime: no `libtvm_ffi.so` is
    /// loaded, and `pactum-runtime` (linked through the dev-dependency on `pactum`, for the doc
    /// examples) registers with the copy of `pactum-core` it was built against, not with this
    /// test build of it. So the first call that needs a runtime says what is missing.
    #[test]
    #[should_panic(expected = "no TVM FFI runtime serves this process")]
    fn a_process_without_a_runtime_says_so() {
        let _ = super::api();
    }
}
