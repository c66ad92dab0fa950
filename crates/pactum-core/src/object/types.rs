//! The runtime type table: type keys, indices, ancestry and registration of new types.

use core::ffi::c_char;
use std::collections::HashSet;
use std::sync::Mutex;

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIByteArray, TVMFFIObjectHandle, TVMFFISeqCell, TVMFFITypeIndex, TVMFFITypeInfo,
};

use crate::error::{Error, ErrorKind, Result};
use crate::object::header;
use crate::runtime;

/// Type keys of the static type indices below [`TVMFFITypeIndex::STATIC_OBJECT_END`], as the
/// official runtime registers them.
pub const STATIC_TYPE_KEYS: &[(i32, &str)] = &[
    (0, "None"),
    (1, "int"),
    (2, "bool"),
    (3, "float"),
    (4, "void*"),
    (5, "DataType"),
    (6, "Device"),
    (7, "DLTensor*"),
    (8, "const char*"),
    (9, "TVMFFIByteArray*"),
    (10, "ObjectRValueRef"),
    (11, "ffi.SmallStr"),
    (12, "ffi.SmallBytes"),
    (13, "ffi.Unchanged"),
    (64, "ffi.Object"),
    (65, "ffi.String"),
    (66, "ffi.Bytes"),
    (67, "ffi.Error"),
    (68, "ffi.Function"),
    (69, "ffi.Shape"),
    (70, "ffi.Tensor"),
    (71, "ffi.Array"),
    (72, "ffi.Map"),
    (73, "ffi.Module"),
    (74, "ffi.OpaquePyObject"),
    (75, "ffi.List"),
    (76, "ffi.Dict"),
    (77, "ffi.VisitInterrupt"),
    (78, "ffi.BigInt"),
];

/// The static key of `type_index`, without asking the runtime.
pub(crate) fn static_type_key(type_index: i32) -> Option<&'static str> {
    STATIC_TYPE_KEYS
        .iter()
        .find(|(index, _)| *index == type_index)
        .map(|(_, key)| *key)
}

/// Runtime information about a registered type (borrowed from the runtime, which keeps it for
/// the life of the process).
#[derive(Clone, Copy)]
pub struct TypeInfo(&'static TVMFFITypeInfo);

impl TypeInfo {
    /// Information for `type_index`, or `None` when the runtime does not know it.
    pub fn of(type_index: i32) -> Option<TypeInfo> {
        if type_index < 0 {
            return None;
        }
        // Indices from the end of the runtime's own static types up are registered by
        // programs: dynamic ones, and the static ones a library reserves for its own types
        // below the dynamic range (TVM's runtime does), which need not exist.
        if type_index >= TVMFFITypeIndex::STATIC_OBJECT_END.0
            && !program_index_is_registered(type_index)
        {
            return None;
        }
        // SAFETY: the index is one of the runtime's static indices or a registered one
        // (checked above).
        let raw = unsafe { (runtime::api().TVMFFIGetTypeInfo)(type_index) };
        // SAFETY: the runtime keeps type information alive for the life of the process.
        unsafe { raw.as_ref() }.map(TypeInfo)
    }

    /// The type index.
    pub fn type_index(&self) -> i32 {
        self.0.type_index
    }

    /// The type key, e.g. `ffi.Array`.
    pub fn type_key(&self) -> &'static str {
        // SAFETY: type keys are permanent UTF-8 strings owned by the runtime.
        unsafe { byte_array_str(&self.0.type_key) }
    }

    /// Depth in the type tree (the root `ffi.Object` has depth 0).
    pub fn type_depth(&self) -> i32 {
        self.0.type_depth
    }

    /// The ancestor at `depth` (`0 <= depth < type_depth`).
    pub fn ancestor(&self, depth: i32) -> Option<TypeInfo> {
        if depth < 0 || depth >= self.0.type_depth || self.0.type_ancestors.is_null() {
            return None;
        }
        // SAFETY: `type_ancestors` has `type_depth` permanent entries.
        let raw = unsafe { *self.0.type_ancestors.add(depth as usize) };
        // SAFETY: ancestors are permanent type information.
        unsafe { raw.as_ref() }.map(TypeInfo)
    }

    /// Number of reflected fields.
    pub fn num_fields(&self) -> i32 {
        self.0.num_fields
    }

    /// Number of reflected methods.
    pub fn num_methods(&self) -> i32 {
        self.0.num_methods
    }

    /// The raw record.
    pub fn as_raw(&self) -> &'static TVMFFITypeInfo {
        self.0
    }
}

impl core::fmt::Debug for TypeInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TypeInfo")
            .field("type_index", &self.type_index())
            .field("type_key", &self.type_key())
            .field("type_depth", &self.type_depth())
            .finish()
    }
}

/// Reads a permanent byte array as `str` (lossy on invalid UTF-8, which runtimes never store
/// in type keys).
///
/// # Safety
/// `bytes` must describe memory that lives for the rest of the process.
unsafe fn byte_array_str(bytes: &TVMFFIByteArray) -> &'static str {
    if bytes.data.is_null() || bytes.size == 0 {
        return "";
    }
    // SAFETY: forwarded from the caller.
    let slice = unsafe { core::slice::from_raw_parts(bytes.data.cast::<u8>(), bytes.size) };
    core::str::from_utf8(slice).unwrap_or("<invalid type key>")
}

/// Whether a type index a program registers (a dynamic one, or a static one reserved by a
/// library above the runtime's own) is known to the runtime, so `TVMFFIGetTypeInfo` may be
/// asked about it (the official runtime exits the process on an unregistered index). Learnt from the
/// runtime's registered keys (`ffi.GetRegisteredTypeKeys`, then `TVMFFITypeKeyToIndex`), cached,
/// and refreshed on a miss.
fn program_index_is_registered(type_index: i32) -> bool {
    static KNOWN: Mutex<Option<HashSet<i32>>> = Mutex::new(None);
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if known.as_ref().is_some_and(|k| k.contains(&type_index)) {
        return true;
    }
    let Some(refreshed) = registered_indices() else {
        return false;
    };
    let found = refreshed.contains(&type_index);
    *known = Some(refreshed);
    found
}

/// The index of every registered type key, asked through raw C API calls so that the type
/// table needs no function or container types (which are built on it).
fn registered_indices() -> Option<HashSet<i32>> {
    let api = runtime::api();
    let name = b"ffi.GetRegisteredTypeKeys";
    let name = TVMFFIByteArray {
        data: name.as_ptr().cast::<c_char>(),
        size: name.len(),
    };
    let mut function: TVMFFIObjectHandle = core::ptr::null_mut();
    // SAFETY: a valid byte array and out pointer for the call.
    let rc = unsafe { (api.TVMFFIFunctionGetGlobal)(&name, &mut function) };
    if rc != 0 || function.is_null() {
        drop(Error::take_raised());
        return None;
    }
    let mut result = TVMFFIAny::NONE;
    // SAFETY: `function` is a live function handle we own; no arguments; a valid result slot.
    let rc = unsafe { (api.TVMFFIFunctionCall)(function, core::ptr::null_mut(), 0, &mut result) };
    // SAFETY: we own the reference `TVMFFIFunctionGetGlobal` returned.
    unsafe { header::dec_ref(function.cast()) };
    if rc != 0 {
        drop(Error::take_raised());
        return None;
    }
    if result.type_index < TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
        return None;
    }
    // SAFETY: an object-typed result holds an owned reference in `v_obj`.
    let array = unsafe { result.value.v_obj };
    let mut indices = HashSet::new();
    if result.type_index == TVMFFITypeIndex::ARRAY.0 {
        // SAFETY: an Array object carries its sequence cell right after the 24-byte header,
        // and `data` holds `size` values alive while the array is.
        let keys = unsafe {
            let cell = &*array.add(1).cast::<TVMFFISeqCell>();
            if cell.data.is_null() || cell.size <= 0 {
                &[][..]
            } else {
                core::slice::from_raw_parts(cell.data.cast::<TVMFFIAny>(), cell.size as usize)
            }
        };
        for key in keys {
            let bytes: &[u8] = match TVMFFITypeIndex(key.type_index) {
                TVMFFITypeIndex::SMALL_STR => {
                    // SAFETY: a small string keeps its bytes inline in the value.
                    let inline = unsafe { &key.value.v_bytes };
                    &inline[..(key.small_str_len as usize).min(inline.len())]
                }
                // SAFETY: a String object has its byte array right after the header.
                TVMFFITypeIndex::STR => unsafe {
                    crate::raw::byte_array_slice(key.value.v_obj.add(1).cast())
                },
                _ => continue,
            };
            let key = TVMFFIByteArray {
                data: bytes.as_ptr().cast::<c_char>(),
                size: bytes.len(),
            };
            let mut index = 0i32;
            // SAFETY: valid byte array and out pointer for the call.
            if unsafe { (api.TVMFFITypeKeyToIndex)(&key, &mut index) } == 0 {
                indices.insert(index);
            } else {
                drop(Error::take_raised());
            }
        }
    }
    // SAFETY: we own the reference the call returned.
    unsafe { header::dec_ref(array) };
    Some(indices)
}

/// The type key of `type_index` (e.g. `int`, `ffi.String`), or `type_index(N)` when unknown.
pub fn type_key_of(type_index: i32) -> std::string::String {
    if let Some(key) = static_type_key(type_index) {
        return key.to_owned();
    }
    match TypeInfo::of(type_index) {
        Some(info) => info.type_key().to_owned(),
        None => format!("type_index({type_index})"),
    }
}

/// The index registered for `key`; a `KeyError`-like `ValueError` when unknown.
pub fn type_index_of_key(key: &str) -> Result<i32> {
    let bytes = TVMFFIByteArray {
        data: key.as_ptr().cast::<c_char>(),
        size: key.len(),
    };
    let mut index = 0i32;
    // SAFETY: `bytes` and `index` are valid for the call.
    let rc = unsafe { (runtime::api().TVMFFITypeKeyToIndex)(&bytes, &mut index) };
    if rc != 0 {
        return Err(Error::take_raised().unwrap_or_else(|| {
            Error::new(ErrorKind::VALUE_ERROR, format!("Cannot find type `{key}`"))
        }));
    }
    Ok(index)
}

/// Whether a value of `type_index` is an instance of `target` (equal or a subtype).
pub fn is_instance(type_index: i32, target: i32) -> bool {
    if type_index == target {
        return true;
    }
    if target == TVMFFITypeIndex::OBJECT.0 {
        return type_index >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0;
    }
    // Static types derive only from the root object.
    if type_index < TVMFFITypeIndex::DYN_OBJECT_BEGIN.0 {
        return false;
    }
    let (Some(info), Some(target_info)) = (TypeInfo::of(type_index), TypeInfo::of(target)) else {
        return false;
    };
    target_info.type_depth() < info.type_depth()
        && info
            .ancestor(target_info.type_depth())
            .is_some_and(|a| a.type_index() == target)
}

/// Registers (or finds) the dynamic type `key` under `parent_index` and returns its index.
pub(crate) fn register_type(key: &str, parent_index: i32) -> i32 {
    let parent_depth = TypeInfo::of(parent_index)
        .map(|p| p.type_depth())
        .unwrap_or(0);
    let bytes = TVMFFIByteArray {
        data: key.as_ptr().cast::<c_char>(),
        size: key.len(),
    };
    // SAFETY: `bytes` is valid for the call; -1 asks for a dynamic index.
    unsafe {
        (runtime::api().TVMFFITypeGetOrAllocIndex)(&bytes, -1, parent_depth + 1, 0, 1, parent_index)
    }
}

// The type-table queries of `ObjectRef` live with the table, which sits above the reference
// type itself.
impl super::ObjectRef {
    /// The type key (e.g. `ffi.Array`), from the runtime's type table.
    pub fn type_key(&self) -> std::string::String {
        type_key_of(self.type_index())
    }

    /// Whether the object is of type `type_index` or one of its subtypes.
    pub fn is_instance_of(&self, type_index: i32) -> bool {
        is_instance(self.type_index(), type_index)
    }
}
