//! Library modules: loading shared libraries and system-library symbols, looking functions
//! up, imports, and the library context (`module_globals.rs` publishes these as `ffi.*`
//! globals).
//!
//! A module owns the loaded library; functions taken from it keep the module alive. The
//! library's `__tvm_ffi__library_ctx` receives the module's address as an opaque token (its
//! `ModuleObj*` when the module is a C++ object, as the official runtime writes; else its
//! handle), which `TVMFFIEnvModLookupFromImports` accepts only while that module lives.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIFunctionCell, TVMFFIObject, TVMFFITypeIndex};

use super::args::SafeCallFn;
use pactum_core::any::Any;
use pactum_core::containers::Array;
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::boundary::{self, EntryKind};
use pactum_core::internal::{ObjectBox, header, new_object_box};
use pactum_core::module::Module;
use pactum_core::object::{ObjectRef, ObjectRefType};

/// The kind of modules over a shared library or the system library, as the official runtime's.
const LIBRARY_KIND: &str = "library";

/// Where a module's symbols come from.
enum Symbols {
    /// A `dlopen`ed shared library. It is never closed: objects the library made (strings,
    /// functions, tensors) carry deleters in its code and may outlive every module handle.
    Library(core::mem::ManuallyDrop<libloading::os::unix::Library>),
    /// Symbols registered with `TVMFFIEnvModRegisterSystemLibSymbol`, looked up under a prefix.
    System { prefix: std::string::String },
    /// Functions served by code (`pactum::ModuleImpl`, through `pactum.Module.from_functions`):
    /// no symbols; `get_function(name) -> Optional[Function]` and
    /// `get_text(what, name) -> Optional[str]` (`what` is `metadata` or `doc`) answer lookups.
    Served {
        kind: std::string::String,
        get_function: Function,
        get_text: Function,
    },
}

impl Symbols {
    fn lookup(&self, name: &str) -> Option<*mut c_void> {
        match self {
            Symbols::Library(library) => {
                // SAFETY: we only read the symbol's address.
                let symbol = unsafe { library.get::<*mut c_void>(name.as_bytes()) }.ok()?;
                Some(symbol.into_raw()).filter(|p| !p.is_null())
            }
            Symbols::System { prefix } => {
                let table = system_lib_symbols();
                table
                    .get(&format!("{prefix}{name}"))
                    .or_else(|| table.get(name))
                    .map(|&p| p as *mut c_void)
            }
            Symbols::Served { .. } => None,
        }
    }

    fn function_symbol(&self, name: &str) -> Option<*mut c_void> {
        match self {
            Symbols::Library(_) => self.lookup(&format!("__tvm_ffi_{name}")),
            Symbols::System { prefix } => {
                let table = system_lib_symbols();
                table
                    .get(&format!("__tvm_ffi_{prefix}{name}"))
                    .or_else(|| table.get(&format!("__tvm_ffi_{name}")))
                    .map(|&p| p as *mut c_void)
            }
            Symbols::Served { .. } => None,
        }
    }
}

/// The object body of modules pactum's runtime makes, after the header, laid out as the
/// official `ModuleObj`'s fields: `imports` at handle+24 (`imports_`), then the slot of
/// `import_lookup_cache_`, then the runtime's state.
///
/// With a C++ part in the library (pactum-capi's `libtvm_ffi.so`), the object is a C++
/// `ModuleObj` it allocates (see `cxx_support::set_cxx_module_allocator`): a vtable pointer
/// in front of the header, C++ members here, this runtime's [`ModuleState`] in `state`.
/// Without one (a Rust program running pactum's runtime), it is an `ObjectBox<ModuleCell>`
/// and has no vtable.
#[repr(C)]
struct ModuleCell {
    imports: UnsafeCell<Array>,
    /// `import_lookup_cache_` of a C++ module object (its C++ code's, never read here); null
    /// in modules without a C++ part.
    _cxx_lookup_cache: UnsafeCell<*mut c_void>,
    /// Owned: released by `release_module_state` (from the C++ destructor, or from `Drop`).
    state: core::ptr::NonNull<ModuleState>,
}

/// What the runtime keeps for each of its modules.
struct ModuleState {
    symbols: Arc<Symbols>,
    cache: Mutex<HashMap<std::string::String, Function>>,
}

// SAFETY: `imports` is only replaced under MODULE_EDIT; `_cxx_lookup_cache` is never accessed
// here; the state is thread-safe (Arc, Mutex) and only read until the module dies.
unsafe impl Sync for ModuleCell {}
// SAFETY: as above.
unsafe impl Send for ModuleCell {}

impl ModuleCell {
    fn state(&self) -> &ModuleState {
        // SAFETY: the state lives as long as the module object (released when it dies).
        unsafe { self.state.as_ref() }
    }
}

impl Drop for ModuleCell {
    fn drop(&mut self) {
        let address = self as *mut ModuleCell as usize - core::mem::size_of::<TVMFFIObject>();
        // SAFETY: an ObjectBox<ModuleCell> dies once; its state was made by `new_module`.
        unsafe { release_module_state(address, self.state.as_ptr().cast()) };
    }
}

/// Forgets the dying module at `handle` and drops its state.
///
/// # Safety
/// `state` is the state `new_module` made for that module, released once, when it dies.
pub(crate) unsafe fn release_module_state(handle: usize, state: *mut c_void) {
    live_modules().remove(&handle);
    // SAFETY: per the contract, a Box made by `new_module` and released once.
    drop(unsafe { Box::from_raw(state.cast::<ModuleState>()) });
}

static MODULE_EDIT: Mutex<()> = Mutex::new(());

fn live_modules() -> MutexGuard<'static, HashSet<usize>> {
    static LIVE: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn context_symbols() -> MutexGuard<'static, Vec<(Box<[u8]>, usize)>> {
    static SYMBOLS: Mutex<Vec<(Box<[u8]>, usize)>> = Mutex::new(Vec::new());
    SYMBOLS.lock().unwrap_or_else(|p| p.into_inner())
}

fn system_lib_symbols() -> MutexGuard<'static, HashMap<std::string::String, usize>> {
    static SYMBOLS: OnceLock<Mutex<HashMap<std::string::String, usize>>> = OnceLock::new();
    SYMBOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// A copy of the registered context symbols, in registration order.
pub(crate) fn context_symbols_snapshot() -> Vec<(Box<[u8]>, *mut c_void)> {
    context_symbols()
        .iter()
        .map(|(name, symbol)| (name.clone(), *symbol as *mut c_void))
        .collect()
}

/// Whether `object` is a live module object this runtime made.
pub(crate) fn is_live_module(object: *const TVMFFIObject) -> bool {
    live_modules().contains(&(object as usize))
}

pub(crate) fn register_context_symbol(name: &[u8], symbol: *mut c_void) {
    context_symbols().push((name.into(), symbol as usize));
}

pub(crate) fn register_system_lib_symbol(name: &[u8], symbol: *mut c_void) {
    let name = std::string::String::from_utf8_lossy(name).into_owned();
    let mut table = system_lib_symbols();
    if let Some(&old) = table.get(&name) {
        if old != symbol as usize {
            eprintln!(
                "Warning:SystemLib symbol {name} get overriden to a different address {:p}->{:#x}",
                symbol, old
            );
        }
    }
    table.insert(name, symbol as usize);
}

/// ModuleObj's member functions for modules made by C++ code, when the library has a C++ part
/// to run them (pactum-capi's `libtvm_ffi.so` installs it; see `cxx_support`).
static CXX_MODULE_OPERATIONS: OnceLock<Function> = OnceLock::new();

pub(crate) fn set_cxx_module_operations(operations: Function) {
    let _ = CXX_MODULE_OPERATIONS.set(operations);
}

/// Direct answers of the C++ part for the two module questions Python asks on every call of a
/// compiled function (`tvm.runtime.Executable` walks the module's import tree each time): its
/// kind and its property mask. Each takes a module handle and writes the answer into `out`
/// (0); returns 1, with `out` untouched, for a module this runtime made (which the runtime
/// answers for), and -1 with the error raised when the module's C++ code threw. Unlike the
/// packed operations, they need neither an operation name nor the runtime's lock and table of
/// live modules (the C++ part knows its own module class).
#[derive(Clone, Copy)]
pub struct CxxModuleQueries {
    /// `ModuleObj::kind()` as a String value.
    pub kind: unsafe extern "C" fn(*const TVMFFIObject, *mut TVMFFIAny) -> c_int,
    /// `ModuleObj::GetPropertyMask()`.
    pub property_mask: unsafe extern "C" fn(*const TVMFFIObject, *mut i64) -> c_int,
}

static CXX_MODULE_QUERIES: OnceLock<CxxModuleQueries> = OnceLock::new();

pub(crate) fn set_cxx_module_queries(queries: CxxModuleQueries) {
    let _ = CXX_MODULE_QUERIES.set(queries);
}

/// The C++ part's queries, when every module object is a C++ `ModuleObj` (the module
/// allocator is installed too, so even this runtime's modules have a vtable).
fn cxx_module_queries() -> Option<&'static CxxModuleQueries> {
    CXX_MODULE_QUERIES.get().filter(|_| has_cxx_vtable())
}

/// Writes `ModuleObj::kind()` of the module `module` (a handle) into `out` as a String value
/// through the C++ part's direct query: 0, or -1 with the error raised; 1 (the queries'
/// "answer it yourself"), with `out` untouched, for this runtime's own modules and when there
/// is no C++ part.
///
/// # Safety
/// `module` is a live module object's handle and `out` a writable value slot holding None.
pub(crate) unsafe fn cxx_module_kind_into(
    module: *const TVMFFIObject,
    out: *mut TVMFFIAny,
) -> c_int {
    match cxx_module_queries() {
        // SAFETY: forwarded from this function's contract, which is the query's.
        Some(queries) => unsafe { (queries.kind)(module, out) },
        None => 1,
    }
}

/// Writes `ModuleObj::GetPropertyMask()` of the module `module` into `out`, as
/// [`cxx_module_kind_into`] does its kind.
///
/// # Safety
/// `module` is a live module object's handle.
pub(crate) unsafe fn cxx_module_property_mask_into(
    module: *const TVMFFIObject,
    out: &mut i64,
) -> c_int {
    match cxx_module_queries() {
        // SAFETY: forwarded from this function's contract; `out` is a writable integer.
        Some(queries) => unsafe { (queries.property_mask)(module, out) },
        None => 1,
    }
}

/// The C++ operations to run on `module` when C++ code made it: every module object this
/// runtime did not make is a C++ `ModuleObj` (the module type is final, so nothing else has
/// its type index). `None` for our own modules, and when there is no C++ part (then `cell_of`
/// reports the module as foreign).
fn cxx_operations_for(module: &Module) -> Option<&'static Function> {
    let operations = CXX_MODULE_OPERATIONS.get()?;
    let address = module.as_object_ref().as_raw() as usize;
    (!live_modules().contains(&address)).then_some(operations)
}

/// Our module cell behind `module`, if pactum's runtime made it.
fn cell_of(module: &Module) -> Result<&ModuleCell> {
    let address = module.as_object_ref().as_raw() as usize;
    if !live_modules().contains(&address) {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "module was not created by this runtime",
        ));
    }
    // SAFETY: a live module of ours: an ObjectBox<ModuleCell>, kept alive by `module`.
    Ok(unsafe { &(*(address as *const ObjectBox<ModuleCell>)).cell })
}

/// Makes a C++ module object (`ModuleObj`'s layout, vtable in front) of `kind` holding the
/// runtime's `state` at handle+40, released through `release_module_state` when it dies; a new
/// reference to its handle, or `None` when it could not be made (the state stays the caller's).
///
/// # Safety (of calling it)
/// `state` is a module state of this runtime, which the object then owns.
pub type CxxModuleAllocator =
    unsafe fn(kind: &str, state: *mut c_void) -> Option<core::ptr::NonNull<TVMFFIObject>>;

static CXX_MODULE_ALLOCATOR: OnceLock<CxxModuleAllocator> = OnceLock::new();

pub(crate) fn set_cxx_module_allocator(allocator: CxxModuleAllocator) {
    let _ = CXX_MODULE_ALLOCATOR.set(allocator);
}

/// The module objects that have a C++ vtable in front of their header (made through the C++
/// part): their library context is their `ModuleObj*`, as the official runtime's modules.
fn has_cxx_vtable() -> bool {
    CXX_MODULE_ALLOCATOR.get().is_some()
}

fn new_module(symbols: Arc<Symbols>, kind: &str) -> Result<Module> {
    let state = Box::into_raw(Box::new(ModuleState {
        symbols,
        cache: Mutex::new(HashMap::new()),
    }));
    let handle = match CXX_MODULE_ALLOCATOR.get() {
        Some(allocate) => {
            // SAFETY: a fresh state of ours, which the object owns from here on.
            match unsafe { allocate(kind, state.cast()) } {
                Some(handle) => handle,
                None => {
                    // SAFETY: the allocator did not take the state: it is still ours.
                    drop(unsafe { Box::from_raw(state) });
                    return Err(Error::new(
                        ErrorKind::RUNTIME_ERROR,
                        format!("out of memory making a module of kind {kind}"),
                    ));
                }
            }
        }
        None => {
            let cell = ModuleCell {
                imports: UnsafeCell::new(Array::new([])),
                _cxx_lookup_cache: UnsafeCell::new(core::ptr::null_mut()),
                // SAFETY: Box::into_raw never returns null.
                state: unsafe { core::ptr::NonNull::new_unchecked(state) },
            };
            new_object_box(TVMFFITypeIndex::MODULE.0, cell).cast()
        }
    };
    live_modules().insert(handle.as_ptr() as usize);
    // SAFETY: a fresh module object whose single strong reference we take.
    Ok(unsafe { Module::from_object_ref_unchecked(ObjectRef::from_raw_owned(handle)) })
}

/// Payload of functions wrapping a library symbol.
#[repr(C)]
struct SymbolFunction {
    cell: TVMFFIFunctionCell,
    symbol: SafeCallFn,
    _module: Module,
}

/// Calls the symbol with handle NULL after checking the result slot, like the official
/// wrapper; any failure code becomes -1.
unsafe extern "C" fn symbol_safe_call(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    let call = |handle: *mut c_void, args, num_args, result| {
        // SAFETY: installed only in ObjectBox<SymbolFunction> objects, alive during the call.
        let symbol = unsafe { ObjectBox::cell(handle.cast::<ObjectBox<SymbolFunction>>()).symbol };
        // SAFETY: the library exports the symbol with the safe-call convention; modules' entry
        // points receive a NULL handle.
        Ok(unsafe { symbol(core::ptr::null_mut(), args, num_args, result) })
    };
    let call_args = (handle, args, num_args, result);
    // SAFETY: the convention passes a valid result slot.
    unsafe { boundary::safe_call(EntryKind::Callback, call_args, call) }
}

fn wrap_symbol(module: &Module, symbol: *mut c_void) -> Function {
    // SAFETY: exported `__tvm_ffi_<name>` symbols have the safe-call signature.
    let symbol = unsafe { core::mem::transmute::<*mut c_void, SafeCallFn>(symbol) };
    let payload = SymbolFunction {
        cell: TVMFFIFunctionCell {
            safe_call: Some(symbol_safe_call),
            cpp_call: core::ptr::null_mut(),
        },
        symbol,
        _module: module.clone(),
    };
    let ptr = new_object_box(TVMFFITypeIndex::FUNCTION.0, payload);
    // SAFETY: a fresh function object whose reference we take.
    unsafe { Function::from_object_ref_unchecked(ObjectRef::from_raw_owned(ptr.cast())) }
}

fn imports_of(cell: &ModuleCell) -> Array {
    let _edit = MODULE_EDIT.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: replaced only under MODULE_EDIT, which we hold.
    unsafe { (*cell.imports.get()).clone() }
}

/// `ModuleGetFunction`: this library's symbol, else (when asked) the imports, depth first.
pub(crate) fn get_function(
    module: &Module,
    name: &str,
    query_imports: bool,
) -> Result<Option<Function>> {
    if let Some(operations) = cxx_operations_for(module) {
        return operations.call_typed(("GetFunction", module.clone(), name, query_imports));
    }
    let cell = cell_of(module)?;
    if let Symbols::Served { get_function, .. } = &*cell.state().symbols {
        if let Some(function) = get_function.call_typed::<_, Option<Function>>((name,))? {
            return Ok(Some(function));
        }
    } else if let Some(symbol) = cell.state().symbols.function_symbol(name) {
        return Ok(Some(wrap_symbol(module, symbol)));
    }
    if query_imports {
        for import in imports_of(cell).iter() {
            let import = import.clone().cast::<Module>()?;
            if let Some(function) = get_function(&import, name, true)? {
                return Ok(Some(function));
            }
        }
    }
    Ok(None)
}

/// Calls `__tvm_ffi__<what>_<name>` (a getter returning a string), searching imports.
pub(crate) fn get_function_text(
    module: &Module,
    what: &str,
    name: &str,
    query_imports: bool,
) -> Result<Option<pactum_core::String>> {
    if let Some(operations) = cxx_operations_for(module) {
        let operation = if what == "doc" {
            "GetFunctionDoc"
        } else {
            "GetFunctionMetadata"
        };
        return operations.call_typed((operation, module.clone(), name, query_imports));
    }
    let cell = cell_of(module)?;
    if let Symbols::Served { get_text, .. } = &*cell.state().symbols {
        if let Some(text) = get_text.call_typed::<_, Option<pactum_core::String>>((what, name))? {
            return Ok(Some(text));
        }
    } else if let Some(symbol) = cell
        .state()
        .symbols
        .lookup(&format!("__tvm_ffi__{what}_{name}"))
    {
        let getter = wrap_symbol(module, symbol);
        let value = getter.call(&[])?;
        let type_index = value.type_index();
        return value.cast::<pactum_core::String>().map(Some).map_err(|_| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "Cannot convert from type `{}` to `str`",
                    pactum_core::object::type_key_of(type_index)
                ),
            )
        });
    }
    if query_imports {
        for import in imports_of(cell).iter() {
            let import = import.clone().cast::<Module>()?;
            if let Some(text) = get_function_text(&import, what, name, true)? {
                return Ok(Some(text));
            }
        }
    }
    Ok(None)
}

/// Stores `value` in a `void*` variable that a loaded library exports for the loader to fill.
///
/// Atomically: loading one library on several threads at once gives every load the same
/// variables (`dlopen` maps a library once), and plain writes from those threads were a data
/// race (ThreadSanitizer, `tests/all/stress.rs`). The last load's value wins, as with the
/// official runtime.
///
/// # Safety
/// `slot` must be the address of a `void*` variable of a loaded library (never unloaded).
unsafe fn store_library_variable(slot: *mut c_void, value: *mut c_void) {
    // SAFETY: a `void*` variable is pointer-aligned, as `AtomicPtr` requires, and stays mapped
    // (libraries are never closed); pactum only ever stores to it atomically.
    let variable = unsafe { AtomicPtr::from_ptr(slot.cast::<*mut c_void>()) };
    variable.store(value, Ordering::Release);
}

/// Writes registered context symbols and the library context, and builds the import tree
/// from `__tvm_ffi__library_bin` when the library has one.
fn finish_library_load(symbols: Arc<Symbols>) -> Result<Module> {
    for (name, value) in context_symbols().iter() {
        let name = std::string::String::from_utf8_lossy(name);
        if let Some(slot) = symbols.lookup(&name) {
            // SAFETY: a context symbol is a `void*` variable the library exports to be filled.
            unsafe { store_library_variable(slot, *value as *mut c_void) };
        }
    }
    let library_bin = symbols.lookup("__tvm_ffi__library_bin");
    // The library's context is the module wrapping the library itself (the `_lib` entry of
    // an import tree), not the tree's root: the root may be a C++ module (a Relax VM
    // executable), whose handle is no context `TVMFFIEnvModLookupFromImports` accepts.
    let (root, library_module) = match library_bin {
        None => {
            let module = new_module(symbols.clone(), LIBRARY_KIND)?;
            (module.clone(), Some(module))
        }
        Some(bin) => load_library_bin(bin.cast::<u8>(), &symbols)?,
    };
    if let (Some(ctx), Some(library_module)) =
        (symbols.lookup("__tvm_ffi__library_ctx"), library_module)
    {
        // The module's `ModuleObj*` when it is a C++ object (as the official runtime writes),
        // else its handle: `lookup_from_imports` takes either.
        let handle = library_module.as_object_ref().as_raw().cast::<u8>();
        let context = if has_cxx_vtable() {
            handle.wrapping_sub(CXX_VTABLE_POINTER_SIZE)
        } else {
            handle
        };
        // SAFETY: `__tvm_ffi__library_ctx` is a `void*` variable; it receives an opaque token
        // (our module's address) without a reference, as the loader convention says.
        unsafe { store_library_variable(ctx, context.cast()) };
    }
    Ok(root)
}

/// A bounds-checked reader over the `__tvm_ffi__library_bin` payload.
struct BinReader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl BinReader<'_> {
    fn u64(&mut self) -> Result<u64> {
        let end = self
            .offset
            .checked_add(8)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| self.truncated())?;
        let value = u64::from_le_bytes(self.bytes[self.offset..end].try_into().expect("8 bytes"));
        self.offset = end;
        Ok(value)
    }

    fn vec_u64(&mut self) -> Result<Vec<u64>> {
        let count = self.u64()?;
        if count > (self.bytes.len() - self.offset) as u64 / 8 {
            return Err(self.truncated());
        }
        (0..count).map(|_| self.u64()).collect()
    }

    fn bytes(&mut self) -> Result<&[u8]> {
        let len = self.u64()?;
        if len == 0 || len > (self.bytes.len() - self.offset) as u64 {
            return Err(self.truncated());
        }
        let start = self.offset;
        self.offset += len as usize;
        Ok(&self.bytes[start..self.offset])
    }

    fn truncated(&self) -> Error {
        Error::new(
            ErrorKind::INTERNAL_ERROR,
            format!(
                "__tvm_ffi__library_bin is malformed at byte offset {}",
                self.offset + 8
            ),
        )
    }
}

/// The import tree of `__tvm_ffi__library_bin`: its root, and the module wrapping the library
/// (its last `_lib` entry, the one the official loader makes the library's context).
fn load_library_bin(bin: *const u8, symbols: &Arc<Symbols>) -> Result<(Module, Option<Module>)> {
    // SAFETY: the symbol starts with a little-endian u64 byte count of the payload after it.
    let len = unsafe { bin.cast::<[u8; 8]>().read_unaligned() };
    let len = usize::try_from(u64::from_le_bytes(len)).map_err(|_| {
        Error::new(
            ErrorKind::INTERNAL_ERROR,
            "__tvm_ffi__library_bin length overflows",
        )
    })?;
    // SAFETY: the library provides `len` payload bytes after the count.
    let payload = unsafe { core::slice::from_raw_parts(bin.add(8), len) };
    let mut reader = BinReader {
        bytes: payload,
        offset: 0,
    };
    let indptr = reader.vec_u64()?;
    let child_indices = reader.vec_u64()?;
    let count = indptr.len().saturating_sub(1);
    let mut modules = Vec::with_capacity(count);
    let mut library_module = None;
    for _ in 0..count {
        let kind = std::string::String::from_utf8_lossy(reader.bytes()?).into_owned();
        if kind == "_lib" {
            let module = new_module(symbols.clone(), LIBRARY_KIND)?;
            library_module = Some(module.clone());
            modules.push(module);
        } else {
            let blob = pactum_core::Bytes::new(reader.bytes()?);
            let loader = format!("ffi.Module.load_from_bytes.{kind}");
            let function = Function::get_global(&loader).ok_or_else(|| {
                Error::new(
                    ErrorKind::RUNTIME_ERROR,
                    format!(
                        "Library binary was created using {{{kind}}} but a loader of that name is not registered. Make sure to have runtime that registers {loader}"
                    ),
                )
            })?;
            modules.push(function.call_typed::<_, Module>((&blob,))?);
        }
    }
    for i in 0..count {
        let (start, end) = (indptr[i] as usize, indptr[i + 1] as usize);
        let children = child_indices
            .get(start..end)
            .ok_or_else(|| reader.truncated())?;
        for &child in children {
            let child = modules
                .get(child as usize)
                .ok_or_else(|| reader.truncated())?
                .clone();
            import_module(&modules[i], &child)?;
        }
    }
    let root = modules
        .into_iter()
        .next()
        .ok_or_else(|| reader.truncated())?;
    Ok((root, library_module))
}

/// Makes `libtvm_ffi.so` resolvable for modules loaded next (installs the forwarder when
/// this process runs pactum's own runtime and no such library is loaded yet).
fn prepare_module_loading() -> Result<()> {
    match pactum_core::runtime::kind() {
        pactum_core::runtime::RuntimeKind::Host { .. } => Ok(()),
        pactum_core::runtime::RuntimeKind::Builtin => super::forwarder::install(),
    }
}

pub(crate) fn load_shared_library(path: &str) -> Result<Module> {
    prepare_module_loading()?;
    // A truncated library would crash the process inside dlopen (SIGBUS).
    if let Some(detail) = pactum_core::module::truncated_library(std::path::Path::new(path)) {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!("Failed to load dynamic shared library {path}: {detail}"),
        ));
    }
    // SAFETY: loading a library runs its initialisers; that is what the caller asked for.
    let library = unsafe { libloading::os::unix::Library::open(Some(path), libc::RTLD_LAZY | libc::RTLD_LOCAL) }.map_err(|e| {
        let detail = match &e {
            libloading::Error::DlOpen { desc } => format!("{desc:?}").trim_matches('"').to_owned(),
            other => other.to_string(),
        };
        Error::new(
            ErrorKind::INTERNAL_ERROR,
            format!("Check failed: (lib_handle_ != nullptr) is false: Failed to load dynamic shared library {path} {detail}"),
        )
    })?;
    finish_library_load(Arc::new(Symbols::Library(core::mem::ManuallyDrop::new(
        library,
    ))))
}

/// `ModuleImportModule`: refuses cycles.
pub(crate) fn import_module(module: &Module, other: &Module) -> Result<()> {
    fn reaches(from: &Module, target: &Module) -> Result<bool> {
        if from.as_object_ref().ptr_eq(target.as_object_ref()) {
            return Ok(true);
        }
        for import in imports_of_any(from)?.iter() {
            if reaches(&import.clone().cast::<Module>()?, target)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
    if let Some(operations) = cxx_operations_for(module) {
        return operations.call_typed(("ImportModule", module.clone(), other.clone()));
    }
    if reaches(other, module)? {
        return Err(Error::new(
            ErrorKind::RUNTIME_ERROR,
            "Cyclic dependency detected during import",
        ));
    }
    let cell = cell_of(module)?;
    let _edit = MODULE_EDIT.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: replaced only under MODULE_EDIT, which we hold.
    let imports = unsafe { &mut *cell.imports.get() };
    let mut values: Vec<Any> = imports.iter().cloned().collect();
    values.push(other.clone().into());
    *imports = Array::new(values);
    Ok(())
}

/// How `TVMFFIEnvModLookupFromImports` looks up from the imports of a module made by C++ code,
/// whose library context is its `ModuleObj*` (the address of its vtable pointer).
///
/// # Safety (of calling it)
/// `library_ctx` must be the `ModuleObj*` of a live C++ module.
pub type CxxLookupFromImports = unsafe fn(*mut c_void, &str) -> Result<*mut TVMFFIObject>;

/// How far a C++ module object's `ModuleObj*` is in front of its handle.
const CXX_VTABLE_POINTER_SIZE: usize = core::mem::size_of::<*const c_void>();

static CXX_LOOKUP_FROM_IMPORTS: OnceLock<CxxLookupFromImports> = OnceLock::new();

pub(crate) fn set_cxx_lookup_from_imports(lookup: CxxLookupFromImports) {
    let _ = CXX_LOOKUP_FROM_IMPORTS.set(lookup);
}

/// `TVMFFIEnvModLookupFromImports`: imports first, then the global registry; cached.
///
/// # Safety
/// The C contract: `library_ctx` is the context a module's library holds (`__tvm_ffi__library_ctx`):
/// the handle of one of our modules, or the `ModuleObj*` of a module made by C++ code.
pub(crate) unsafe fn lookup_from_imports(
    library_ctx: *mut c_void,
    name: &str,
) -> Result<*mut TVMFFIObject> {
    let module = {
        let live = live_modules();
        // One of ours by its handle, or by its `ModuleObj*` (the vtable pointer's address) when
        // it is a C++ object.
        let library_ctx = if !library_ctx.is_null()
            && has_cxx_vtable()
            && live.contains(&((library_ctx as usize).wrapping_add(CXX_VTABLE_POINTER_SIZE)))
        {
            library_ctx
                .cast::<u8>()
                .wrapping_add(CXX_VTABLE_POINTER_SIZE)
                .cast()
        } else {
            library_ctx
        };
        if library_ctx.is_null() || !live.contains(&(library_ctx as usize)) {
            drop(live);
            if let (false, Some(lookup)) = (library_ctx.is_null(), CXX_LOOKUP_FROM_IMPORTS.get()) {
                // Not one of ours: by the C contract, the context of a module made by C++
                // code, which writes its `ModuleObj*` there (as the official runtime's
                // library modules and TVM's JIT modules do).
                // SAFETY: forwarded from the caller's contract.
                return unsafe { lookup(library_ctx, name) };
            }
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "library_ctx is not the context of a loaded module",
            ));
        }
        let object = library_ctx.cast::<TVMFFIObject>();
        // SAFETY: a live module's memory stays valid while it is in the set (removal happens
        // under this lock before the memory is freed); upgrading fails if it is dying.
        if !unsafe { header::try_upgrade(object) } {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "library_ctx belongs to a module being unloaded",
            ));
        }
        // SAFETY: we now own a strong reference to a live module.
        unsafe {
            Module::from_object_ref_unchecked(ObjectRef::from_raw_owned(
                core::ptr::NonNull::new_unchecked(object),
            ))
        }
    };
    let cell = cell_of(&module)?;
    if let Some(function) = cell
        .state()
        .cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(name)
    {
        return Ok(function.as_object_ref().as_raw());
    }
    let mut found = None;
    for import in imports_of(cell).iter() {
        if let Some(function) = get_function(&import.clone().cast::<Module>()?, name, true)? {
            found = Some(function);
            break;
        }
    }
    let function = match found.or_else(|| Function::get_global(name)) {
        Some(function) => function,
        None => {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!("Cannot find function {name} in the imported modules or global registry."),
            ));
        }
    };
    let raw = function.as_object_ref().as_raw();
    cell.state()
        .cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(name.to_owned())
        .or_insert(function);
    Ok(raw)
}

/// Fails unless pactum's runtime made `module` (the official runtime's modules have another
/// layout).
pub(crate) fn ensure_ours(module: &Module) -> Result<()> {
    cell_of(module).map(|_| ())
}

/// The C++ operations for `module` when C++ code made it (see `cxx_operations_for`), for the
/// globals that answer differently for our own modules.
pub(crate) fn cxx_module_operations(module: &Module) -> Option<&'static Function> {
    cxx_operations_for(module)
}

/// The imports of any module: ours, or one C++ code made.
fn imports_of_any(module: &Module) -> Result<Array> {
    if let Some(operations) = cxx_operations_for(module) {
        return operations.call_typed(("GetImports", module.clone()));
    }
    Ok(imports_of(cell_of(module)?))
}

/// `ModuleGetKind`: `library` for loaded libraries and system libraries, the implementation's
/// kind for served modules.
pub(crate) fn module_kind(module: &Module) -> Result<std::string::String> {
    if let Some(operations) = cxx_operations_for(module) {
        return operations.call_typed(("GetKind", module.clone()));
    }
    Ok(match &*cell_of(module)?.state().symbols {
        Symbols::Served { kind, .. } => kind.clone(),
        Symbols::Library(_) | Symbols::System { .. } => LIBRARY_KIND.to_owned(),
    })
}

/// `pactum.Module.from_functions`: a module whose functions, metadata and docs are answered by
/// `get_function(name) -> Optional[Function]` and `get_text(what, name) -> Optional[str]`.
pub(crate) fn served_module(
    kind: &str,
    get_function: Function,
    get_text: Function,
) -> Result<Module> {
    if kind.is_empty() {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "a served module needs a non-empty kind",
        ));
    }
    new_module(
        Arc::new(Symbols::Served {
            kind: kind.to_owned(),
            get_function,
            get_text,
        }),
        kind,
    )
}

/// `ModuleClearImports`.
pub(crate) fn clear_imports(module: &Module) -> Result<()> {
    if let Some(operations) = cxx_operations_for(module) {
        return operations.call_typed(("ClearImports", module.clone()));
    }
    let cell = cell_of(module)?;
    let old = {
        let _edit = MODULE_EDIT.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: replaced only under MODULE_EDIT, which we hold.
        core::mem::replace(unsafe { &mut *cell.imports.get() }, Array::new([]))
    };
    drop(old);
    Ok(())
}

/// A module over the symbols registered with `TVMFFIEnvModRegisterSystemLibSymbol`, looked up
/// under `prefix`.
pub(crate) fn load_system_lib(prefix: &str) -> Result<Module> {
    finish_library_load(Arc::new(Symbols::System {
        prefix: prefix.to_owned(),
    }))
}
