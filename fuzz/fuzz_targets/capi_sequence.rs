//! pactum's C API (`libtvm_ffi.so`, the `pactum-capi` crate), driven the way a C program
//! drives it: the input is a sequence of operations on a small pool of owned values. The
//! operations create values (ints, floats, strings, bytes, big ints, data types, C-callback
//! functions, opaque objects, DLPack tensors, and containers through the `ffi.*` globals),
//! copy, move (object rvalue references) and release them, call functions with argument lists
//! of any types (borrowed C strings, byte arrays, DLTensor pointers and rvalue references
//! included; the typed `ffi.*` globals mostly get their parameter types, to get past the type
//! checks), raise, create and fetch errors, register and look up globals, convert views to
//! owned values, and read type information.
//!
//! The target keeps its own model of what each pool slot owns, so it never hands the API a
//! released handle (the C contract cannot detect those). It also keeps to the contract where
//! the runtime trusts the caller: only `Function` objects are called, no reference cycles are
//! built (a mutable container only receives values that cannot reach it), and globals that
//! load files or remove registry entries are never called.
//!
//! Checked on every input:
//! - Every owned value the API hands back is well formed: no borrowed kinds, unused bytes
//!   zeroed, object headers with the value's type index and a live count.
//! - Reference counts move by exactly one on copies and releases, and never drop below the
//!   number of references the pool holds.
//! - Every failing call returns -1 with an `ffi.Error` (non-empty kind and message) in the
//!   thread's slot, leaves the result untouched, and keeps ownership rules (a DLPack tensor
//!   whose import fails stays with the caller).
//! - Values read back as written: strings and bytes (small or heap, NUL after heap data), big
//!   int words, data type strings, error parts, globals, stream handles and type information.
//! - At the end of the input, once the pool, the registered globals, the raised error and the
//!   streams are released, every deleter has run exactly once (callback states, opaque
//!   handles, DLPack tensors) and the reference counts of the runtime's own functions and
//!   singletons are back to where they started. libFuzzer's leak check covers the rest.
#![no_main]

use core::ffi::{c_char, c_int, c_void};
use core::ptr::null_mut;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pactum::sys::dlpack::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion,
    DLTensor,
};
use pactum::sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFIErrorCell, TVMFFIFunctionCell,
    TVMFFIMethodInfo, TVMFFIObject, TVMFFIOpaqueObjectCell, TVMFFISeqCell, TVMFFIStreamHandle,
    TVMFFITypeIndex as T,
};
use tvm_ffi as capi;

/// Values the pool holds at most; more are released as soon as they are checked.
const POOL: usize = 16;
/// Operations per input.
const MAX_OPS: usize = 96;
/// Arguments per call.
const MAX_ARGS: usize = 6;

/// Globals the target may call: every `ffi.*` container and query function. The others
/// (module loading, `ffi.FunctionRemoveGlobal`, `ffi.FunctionFromExternC`, ...) read files,
/// change the registry for later inputs or turn raw pointers into code.
const CALLABLE: &[&str] = &[
    "ffi.String",
    "ffi.Bytes",
    "ffi.Shape",
    "ffi.Array",
    "ffi.ArrayGetItem",
    "ffi.ArraySize",
    "ffi.ArrayContains",
    "ffi.List",
    "ffi.ListGetItem",
    "ffi.ListSetItem",
    "ffi.ListSize",
    "ffi.ListContains",
    "ffi.ListAppend",
    "ffi.ListInsert",
    "ffi.ListPop",
    "ffi.ListErase",
    "ffi.ListEraseRange",
    "ffi.ListReplaceSlice",
    "ffi.ListReverse",
    "ffi.ListClear",
    "ffi.ListReserve",
    "ffi.Map",
    "ffi.MapSize",
    "ffi.MapGetItem",
    "ffi.MapCount",
    "ffi.MapForwardIterFunctor",
    "ffi.MapGetItemOrMissing",
    "ffi.Dict",
    "ffi.DictSize",
    "ffi.DictGetItem",
    "ffi.DictSetItem",
    "ffi.DictCount",
    "ffi.DictErase",
    "ffi.DictClear",
    "ffi.DictForwardIterFunctor",
    "ffi.DictGetItemOrMissing",
    "ffi.ContainerFindFirstNonCPUDevice",
    "ffi.GetRegisteredTypeKeys",
    "ffi.GetInvalidObject",
    "ffi.GetKwargsObject",
    "ffi.FunctionListGlobalNamesFunctor",
    "ffi.GetGlobalFuncMetadata",
];

/// What a callable global takes.
enum Param {
    Any,
    /// An index (a small int).
    Index,
    /// A String.
    Str,
    /// A registered global's name (as a C string).
    Name,
    Bytes,
    /// An object of this type.
    Object(T),
}

/// The parameters of the typed callable globals (`None` for the variadic ones).
fn params(name: &str) -> Option<&'static [Param]> {
    use Param::*;
    const ARRAY: Param = Object(T::ARRAY);
    const LIST: Param = Object(T::LIST);
    const MAP: Param = Object(T::MAP);
    const DICT: Param = Object(T::DICT);
    Some(match name {
        "ffi.String" => &[Str],
        "ffi.Bytes" => &[Bytes],
        "ffi.ArrayGetItem" => &[ARRAY, Index],
        "ffi.ArraySize" => &[ARRAY],
        "ffi.ArrayContains" => &[ARRAY, Any],
        "ffi.ListGetItem" | "ffi.ListPop" | "ffi.ListErase" | "ffi.ListReserve" => &[LIST, Index],
        "ffi.ListSetItem" | "ffi.ListInsert" => &[LIST, Index, Any],
        "ffi.ListSize" | "ffi.ListReverse" | "ffi.ListClear" => &[LIST],
        "ffi.ListContains" | "ffi.ListAppend" => &[LIST, Any],
        "ffi.ListEraseRange" => &[LIST, Index, Index],
        "ffi.ListReplaceSlice" => &[LIST, Index, Index, LIST],
        "ffi.MapSize" | "ffi.MapForwardIterFunctor" => &[MAP],
        "ffi.MapGetItem" | "ffi.MapCount" | "ffi.MapGetItemOrMissing" => &[MAP, Any],
        "ffi.DictSize" | "ffi.DictClear" | "ffi.DictForwardIterFunctor" => &[DICT],
        "ffi.DictGetItem" | "ffi.DictCount" | "ffi.DictErase" | "ffi.DictGetItemOrMissing" => {
            &[DICT, Any]
        }
        "ffi.DictSetItem" => &[DICT, Any, Any],
        "ffi.ContainerFindFirstNonCPUDevice" => &[Any],
        "ffi.GetRegisteredTypeKeys"
        | "ffi.GetInvalidObject"
        | "ffi.GetKwargsObject"
        | "ffi.FunctionListGlobalNamesFunctor" => &[],
        "ffi.GetGlobalFuncMetadata" => &[Name],
        _ => return None,
    })
}

/// Globals that store their later arguments into their first (a List or Dict): these may
/// only receive values that cannot reach a container, so that no cycle (a leak) is built.
const MUTATORS: &[&str] = &[
    "ffi.ListSetItem",
    "ffi.ListAppend",
    "ffi.ListInsert",
    "ffi.ListReplaceSlice",
    "ffi.DictSetItem",
];

/// Type keys worth asking for by name.
const TYPE_KEYS: &[&str] = &[
    "ffi.Object",
    "ffi.String",
    "ffi.Bytes",
    "ffi.Error",
    "ffi.Function",
    "ffi.Shape",
    "ffi.Tensor",
    "ffi.Array",
    "ffi.Map",
    "ffi.Module",
    "ffi.List",
    "ffi.Dict",
    "ffi.BigInt",
    "ffi.OpaquePyObject",
    "int",
    "float",
    "None",
];

const DTYPE_NAMES: &[&str] = &[
    "int8",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "bool",
    "float32x4",
    "int0",
    "float8",
    "e4m3",
    "handle",
    "void",
    "uint1",
    "int32x-1",
];

/// Callback states alive (created by `TVMFFIFunctionCreate`, freed by their deleter).
static CALLBACKS_LIVE: AtomicI64 = AtomicI64::new(0);
/// Functions made with a NULL `self` and a deleter whose deleter has not run.
static NULL_SELF_LIVE: AtomicI64 = AtomicI64::new(0);
/// Opaque handles not yet given back to their deleter.
static OPAQUE_LIVE: AtomicI64 = AtomicI64::new(0);
/// DLPack tensors made here whose deleter has not run.
static MANAGED_LIVE: AtomicI64 = AtomicI64::new(0);

const CALLBACK_MAGIC: u64 = 0x6675_7a7a_6361_6c6c;
const OPAQUE_MAGIC: u64 = 0x6675_7a7a_6f70_6171;

fuzz_target!(|data: &[u8]| {
    let mut state = State::new();
    let mut u = Unstructured::new(data);
    for _ in 0..MAX_OPS {
        if u.is_empty() {
            break;
        }
        if state.step(&mut u).is_err() {
            break;
        }
        state.check_pool();
    }
    state.finish();
});

// ---------------------------------------------------------------------------------------------
// Process-wide facts, gathered once.

struct Runtime {
    /// Function objects the target must not call (see [`CALLABLE`]).
    forbidden: HashSet<usize>,
    /// Function objects of [`MUTATORS`].
    mutators: HashSet<usize>,
    /// `ffi.FunctionRemoveGlobal`, used to remove what an input registered.
    remove_global: usize,
    /// Strong counts of the runtime's functions and singletons while the target holds one
    /// reference, with a name for messages.
    baseline: Vec<(String, u32)>,
}

thread_local! {
    static RUNTIME: Runtime = Runtime::gather();
    /// A DLTensor that is not an object, for `DLTensorPtr` arguments; never freed.
    static STATIC_TENSOR: usize = static_tensor();
    /// What the environment allocator installed by the target does next (see `fuzz_allocator`).
    static ALLOCATOR_MODE: RefCell<u8> = const { RefCell::new(0) };
}

fn static_tensor() -> usize {
    let shape: &'static mut [i64; 2] = Box::leak(Box::new([2, 2]));
    let data: &'static mut [f32; 4] = Box::leak(Box::new([1.0, 2.0, 3.0, 4.0]));
    let tensor = Box::leak(Box::new(DLTensor {
        data: data.as_mut_ptr().cast(),
        device: DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        },
        ndim: 2,
        dtype: data_type(2, 32, 1),
        shape: shape.as_mut_ptr(),
        strides: null_mut(),
        byte_offset: 0,
    }));
    core::ptr::from_mut(tensor) as usize
}

static OPAQUE_TARGET: u64 = 0;

impl Runtime {
    fn gather() -> Runtime {
        let mut forbidden = HashSet::new();
        let mut mutators = HashSet::new();
        // Every registered name, through the runtime's own listing functor.
        let lister = get_global(b"ffi.FunctionListGlobalNamesFunctor");
        let functor = must(call_owned(lister, &[]), "FunctionListGlobalNamesFunctor");
        let functor_object = unsafe { functor.value.v_obj }.cast::<c_void>();
        let count = must(
            call_owned(functor_object, &[pod(T::INT, u64::MAX)]),
            "name count",
        );
        let count = unsafe { count.value.v_int64 };
        let mut names = Vec::new();
        for i in 0..count {
            let name = must(
                call_owned(functor_object, &[pod(T::INT, i as u64)]),
                "a global name",
            );
            names.push(
                unsafe { string_bytes(&name) }
                    .expect("names are strings")
                    .to_vec(),
            );
            unsafe { release(name) };
        }
        unsafe {
            release(functor);
            capi::TVMFFIObjectDecRef(lister.cast());
        }
        let mut baseline = Vec::new();
        for name in &names {
            let function = get_global(name);
            if function.is_null() {
                continue;
            }
            let text = String::from_utf8_lossy(name).into_owned();
            if CALLABLE.contains(&text.as_str()) {
                if MUTATORS.contains(&text.as_str()) {
                    mutators.insert(function as usize);
                }
                baseline.push((text, unsafe { strong(function.cast()) }));
            } else {
                forbidden.insert(function as usize);
            }
            unsafe { capi::TVMFFIObjectDecRef(function) };
        }
        for name in CALLABLE {
            assert!(
                baseline.iter().any(|(n, _)| n == name),
                "{name} is not registered"
            );
        }
        for name in ["ffi.GetInvalidObject", "ffi.GetKwargsObject"] {
            baseline.push((format!("{name}()"), singleton_count(name)));
        }
        let remove_global = get_global(b"ffi.FunctionRemoveGlobal") as usize;
        assert_ne!(remove_global, 0);
        // The registry keeps it alive; the target needs no reference of its own.
        unsafe { capi::TVMFFIObjectDecRef(remove_global as *mut c_void) };
        Runtime {
            forbidden,
            mutators,
            remove_global,
            baseline,
        }
    }

    /// The counts [`Runtime::baseline`] records, measured now.
    fn counts(&self) -> Vec<(String, u32)> {
        self.baseline
            .iter()
            .map(|(name, _)| {
                let count = match name.strip_suffix("()") {
                    Some(singleton) => singleton_count(singleton),
                    None => {
                        let function = get_global(name.as_bytes());
                        let count = unsafe { strong(function.cast()) };
                        unsafe { capi::TVMFFIObjectDecRef(function) };
                        count
                    }
                };
                (name.clone(), count)
            })
            .collect()
    }
}

fn singleton_count(name: &str) -> u32 {
    let function = get_global(name.as_bytes());
    let object = must(call_owned(function, &[]), "singleton");
    let count = unsafe { strong(object.value.v_obj) };
    unsafe {
        release(object);
        capi::TVMFFIObjectDecRef(function);
    }
    count
}

// ---------------------------------------------------------------------------------------------
// Small helpers over the raw ABI.

fn pod(type_index: T, word: u64) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index.0,
        small_str_len: 0,
        value: TVMFFIAnyValue { v_uint64: word },
    }
}

fn object_value(object: *mut TVMFFIObject) -> TVMFFIAny {
    let type_index = unsafe { (*object).type_index };
    TVMFFIAny {
        type_index,
        small_str_len: 0,
        value: TVMFFIAnyValue { v_obj: object },
    }
}

fn byte_array(bytes: &[u8]) -> TVMFFIByteArray {
    TVMFFIByteArray {
        data: bytes.as_ptr().cast(),
        size: bytes.len(),
    }
}

/// # Safety
/// `array` must describe live bytes (or be empty).
unsafe fn bytes_of<'a>(array: TVMFFIByteArray) -> &'a [u8] {
    if array.size == 0 {
        &[]
    } else {
        assert!(!array.data.is_null(), "a non-empty byte array at NULL");
        unsafe { core::slice::from_raw_parts(array.data.cast(), array.size) }
    }
}

fn is_object(value: &TVMFFIAny) -> bool {
    value.type_index >= T::STATIC_OBJECT_BEGIN.0
}

/// The strong count of a live object.
///
/// # Safety
/// `object` must be live.
unsafe fn strong(object: *mut TVMFFIObject) -> u32 {
    let count = unsafe { &*object.cast::<AtomicU64>() }.load(Ordering::SeqCst);
    count as u32
}

/// Gives up an owned value.
///
/// # Safety
/// `value` must be owned by the caller.
unsafe fn release(value: TVMFFIAny) {
    if is_object(&value) {
        assert_eq!(
            unsafe { capi::TVMFFIObjectDecRef(value.value.v_obj.cast()) },
            0
        );
    }
}

/// The contents of a String or Bytes value (small or heap).
///
/// # Safety
/// `value` must be live.
unsafe fn string_bytes(value: &TVMFFIAny) -> Option<&[u8]> {
    match T(value.type_index) {
        T::SMALL_STR | T::SMALL_BYTES => {
            let bytes = unsafe { &value.value.v_bytes };
            Some(&bytes[..value.small_str_len as usize])
        }
        T::STR | T::BYTES => {
            let cell = unsafe { &*value.value.v_obj.add(1).cast::<TVMFFIByteArray>() };
            Some(unsafe { bytes_of(*cell) })
        }
        _ => None,
    }
}

/// The kind and message of a live error object.
///
/// # Safety
/// `error` must be a live `ffi.Error`.
unsafe fn error_parts<'a>(error: *mut TVMFFIObject) -> (&'a [u8], &'a [u8], &'a TVMFFIErrorCell) {
    let cell = unsafe { &*error.add(1).cast::<TVMFFIErrorCell>() };
    unsafe { (bytes_of(cell.kind), bytes_of(cell.message), cell) }
}

/// The DLTensor inside a live Tensor object.
///
/// # Safety
/// `tensor` must be a live `ffi.Tensor`.
unsafe fn dl_tensor<'a>(tensor: *mut TVMFFIObject) -> &'a DLTensor {
    unsafe { &*tensor.add(1).cast::<DLTensor>() }
}

/// Checks the invariants of an owned value the API produced.
///
/// # Safety
/// `value` must be owned and live.
unsafe fn check_owned(value: &TVMFFIAny, what: &str) {
    let word = unsafe { value.value.v_uint64 };
    let small_len = value.small_str_len;
    match T(value.type_index) {
        T::NONE => assert!(word == 0 && small_len == 0, "{what}: None with payload"),
        T::INT | T::FLOAT | T::OPAQUE_PTR | T::DEVICE | T::DL_TENSOR_PTR => {
            assert_eq!(small_len, 0, "{what}: padding of {}", value.type_index)
        }
        T::BOOL => assert!(small_len == 0 && word <= 1, "{what}: bool {word:#x}"),
        T::DATA_TYPE => assert!(
            small_len == 0 && word >> 32 == 0,
            "{what}: data type with padding {word:#x}"
        ),
        T::SMALL_STR | T::SMALL_BYTES => {
            assert!(small_len <= 7, "{what}: small string of {small_len} bytes");
            let bytes = unsafe { value.value.v_bytes };
            assert!(
                bytes[small_len as usize..].iter().all(|&b| b == 0),
                "{what}: small string with unused bytes set: {bytes:?}"
            );
        }
        T::RAW_STR | T::BYTE_ARRAY_PTR | T::OBJECT_RVALUE_REF => {
            panic!(
                "{what}: borrowed kind {} in an owned value",
                value.type_index
            )
        }
        _ if is_object(value) => {
            assert_eq!(small_len, 0, "{what}: object value with padding");
            let object = unsafe { value.value.v_obj };
            assert!(
                !object.is_null(),
                "{what}: NULL object of type {}",
                value.type_index
            );
            let header = unsafe { &*object };
            assert_eq!(
                header.type_index, value.type_index,
                "{what}: header and value disagree on the type"
            );
            assert_eq!(header.padding, 0, "{what}: header padding");
            assert!(header.deleter.is_some(), "{what}: object without a deleter");
            assert!(unsafe { strong(object) } >= 1, "{what}: dead object");
            if matches!(T(value.type_index), T::STR | T::BYTES) {
                let cell = unsafe { &*object.add(1).cast::<TVMFFIByteArray>() };
                let terminator = unsafe { *cell.data.add(cell.size) };
                assert_eq!(terminator, 0, "{what}: heap string without a NUL after it");
            }
        }
        other => panic!("{what}: unexpected type index {other:?}"),
    }
}

/// Whether a value can be stored into a mutable container without possibly making a cycle.
///
/// # Safety
/// `value` must be a live view.
unsafe fn is_leaf(value: &TVMFFIAny) -> bool {
    if value.type_index == T::OBJECT_RVALUE_REF.0 {
        let object = unsafe { *value.value.v_ptr.cast::<*mut TVMFFIObject>() };
        return object.is_null() || unsafe { is_leaf(&object_value(object)) };
    }
    !is_object(value)
        || matches!(
            T(value.type_index),
            T::OBJECT | T::STR | T::BYTES | T::SHAPE | T::TENSOR | T::OPAQUE_PY_OBJECT | T::BIG_INT
        )
}

/// A List whose elements are all leaves (what `ffi.ListReplaceSlice` splices in).
///
/// # Safety
/// `value` must be a live view.
unsafe fn is_list_of_leaves(value: &TVMFFIAny) -> bool {
    let object = match T(value.type_index) {
        T::LIST => unsafe { value.value.v_obj },
        T::OBJECT_RVALUE_REF => unsafe { *value.value.v_ptr.cast::<*mut TVMFFIObject>() },
        _ => return false,
    };
    if object.is_null() || unsafe { (*object).type_index } != T::LIST.0 {
        return false;
    }
    let cell = unsafe { &*object.add(1).cast::<TVMFFISeqCell>() };
    let elements = cell.data.cast::<TVMFFIAny>();
    (0..cell.size as usize).all(|i| unsafe { is_leaf(&*elements.add(i)) })
}

/// Whether the target may call `function` with `args` (see the module documentation).
///
/// # Safety
/// `function` must be a live Function and `args` live views.
unsafe fn may_call(function: *mut c_void, args: &[TVMFFIAny]) -> bool {
    RUNTIME.with(|runtime| {
        if runtime.forbidden.contains(&(function as usize)) {
            return false;
        }
        if !runtime.mutators.contains(&(function as usize)) {
            return true;
        }
        args.iter()
            .enumerate()
            .skip(1)
            .all(|(i, arg)| unsafe { is_leaf(arg) || (i == 3 && is_list_of_leaves(arg)) })
    })
}

fn get_global(name: &[u8]) -> *mut c_void {
    let array = byte_array(name);
    let mut out = null_mut();
    let rc = unsafe { capi::TVMFFIFunctionGetGlobal(&array, &mut out) };
    assert_eq!(rc, 0, "GetGlobal fails");
    out
}

/// Calls a function on views; the owned result, or the error (taken from the slot).
fn call_owned(function: *mut c_void, args: &[TVMFFIAny]) -> Result<TVMFFIAny, *mut TVMFFIObject> {
    let mut args = args.to_vec();
    let mut result = TVMFFIAny::NONE;
    let rc = unsafe {
        capi::TVMFFIFunctionCall(function, args.as_mut_ptr(), args.len() as i32, &mut result)
    };
    if rc == 0 {
        unsafe { check_owned(&result, "call result") };
        Ok(result)
    } else {
        assert_eq!(rc, -1, "a failing call returns -1");
        assert_eq!(result.type_index, 0, "a failing call wrote its result");
        Err(take_raised("a call"))
    }
}

/// The result of a call that must succeed.
fn must(result: Result<TVMFFIAny, *mut TVMFFIObject>, what: &str) -> TVMFFIAny {
    result.unwrap_or_else(|error| {
        let (kind, message, _) = unsafe { error_parts(error) };
        panic!(
            "{what} failed: {}: {}",
            String::from_utf8_lossy(kind),
            String::from_utf8_lossy(message)
        )
    })
}

/// Takes the raised error, which must be there and well formed (non-empty kind and message).
fn take_raised(what: &str) -> *mut TVMFFIObject {
    let mut error: *mut c_void = null_mut();
    unsafe { capi::TVMFFIErrorMoveFromRaised(&mut error) };
    assert!(!error.is_null(), "{what} failed without raising an error");
    let error = error.cast::<TVMFFIObject>();
    unsafe {
        check_owned(&object_value(error), what);
        assert_eq!((*error).type_index, T::ERROR.0, "{what} raised a non-error");
        let (kind, message, _) = error_parts(error);
        assert!(!kind.is_empty(), "{what} raised an error without a kind");
        assert!(
            !message.is_empty(),
            "{what} raised a {} without a message",
            String::from_utf8_lossy(kind)
        );
    }
    error
}

/// The raised error, left raised.
fn peek_raised() -> *mut TVMFFIObject {
    let mut error: *mut c_void = null_mut();
    unsafe {
        capi::TVMFFIErrorMoveFromRaised(&mut error);
        if !error.is_null() {
            capi::TVMFFIErrorSetRaised(error);
            capi::TVMFFIObjectDecRef(error);
        }
    }
    error.cast()
}

/// Takes the raised error and checks its kind.
fn expect_error(what: &str, kind: &str) -> *mut TVMFFIObject {
    let error = take_raised(what);
    let (got, message, _) = unsafe { error_parts(error) };
    assert_eq!(
        got,
        kind.as_bytes(),
        "{what}: wrong kind of error ({})",
        String::from_utf8_lossy(message)
    );
    error
}

fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL left")
}

// ---------------------------------------------------------------------------------------------
// C callbacks, opaque handles, DLPack producers and the environment allocator.

struct Callback {
    magic: u64,
    behavior: u8,
}

/// A packed function written in C: what it does depends on its state (`self`):
/// 0 returns None, 1 returns its first argument, 2 returns the argument count, 3 raises, and
/// 4 calls its first argument (a function) with the others.
unsafe extern "C" fn callback(
    self_: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    let behavior = if self_.is_null() {
        0
    } else {
        let state = unsafe { &*self_.cast::<Callback>() };
        assert_eq!(state.magic, CALLBACK_MAGIC, "a callback got another `self`");
        state.behavior
    };
    assert!(num_args >= 0 && (num_args == 0 || !args.is_null()));
    assert_eq!(
        unsafe { (*result).type_index },
        0,
        "result slot not None on entry"
    );
    let args = if num_args == 0 {
        &[][..]
    } else {
        unsafe { core::slice::from_raw_parts(args, num_args as usize) }
    };
    match behavior {
        0 => 0,
        1 => match args.first() {
            Some(first) => unsafe { capi::TVMFFIAnyViewToOwnedAny(first, result) },
            None => {
                unsafe {
                    capi::TVMFFIErrorSetRaisedFromCStr(
                        c"ValueError".as_ptr(),
                        c"fuzz: echo without arguments".as_ptr(),
                    )
                };
                -1
            }
        },
        2 => {
            unsafe { *result = pod(T::INT, num_args as u64) };
            0
        }
        3 => {
            unsafe {
                capi::TVMFFIErrorSetRaisedFromCStr(
                    c"FuzzError".as_ptr(),
                    c"fuzz: raised by a callback".as_ptr(),
                )
            };
            -1
        }
        _ => match args.split_first() {
            Some((first, rest))
                if first.type_index == T::FUNCTION.0
                    && unsafe { may_call(first.value.v_obj.cast(), rest) } =>
            {
                let mut rest = rest.to_vec();
                unsafe {
                    capi::TVMFFIFunctionCall(
                        first.value.v_obj.cast(),
                        rest.as_mut_ptr(),
                        rest.len() as i32,
                        result,
                    )
                }
            }
            _ => 0,
        },
    }
}

/// A callback made with NULL `self` and deleter: it receives its own function object.
unsafe extern "C" fn direct_callback(
    handle: *mut c_void,
    _args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    let object = handle.cast::<TVMFFIObject>();
    assert!(!object.is_null(), "a direct callback without its function");
    unsafe {
        assert_eq!((*object).type_index, T::FUNCTION.0);
        let cell = &*object.add(1).cast::<TVMFFIFunctionCell>();
        assert_eq!(
            cell.safe_call.map(|f| f as usize),
            Some(direct_callback as *const () as usize),
            "a direct callback got another function object"
        );
        *result = pod(T::INT, num_args as u64);
    }
    0
}

unsafe extern "C" fn callback_deleter(self_: *mut c_void) {
    if self_.is_null() {
        NULL_SELF_LIVE.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let state = unsafe { Box::from_raw(self_.cast::<Callback>()) };
    assert_eq!(state.magic, CALLBACK_MAGIC, "a deleter got another `self`");
    CALLBACKS_LIVE.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn opaque_deleter(handle: *mut c_void) {
    let magic = unsafe { Box::from_raw(handle.cast::<u64>()) };
    assert_eq!(*magic, OPAQUE_MAGIC, "an opaque deleter got another handle");
    OPAQUE_LIVE.fetch_sub(1, Ordering::SeqCst);
}

/// A DLPack tensor made here: the managed struct first, then what it points into.
#[repr(C)]
struct Managed {
    managed: DLManagedTensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
    data: Vec<u64>,
}

#[repr(C)]
struct ManagedVersioned {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    strides: Vec<i64>,
    data: Vec<u64>,
}

unsafe extern "C" fn managed_deleter(managed: *mut DLManagedTensor) {
    drop(unsafe { Box::from_raw(managed.cast::<Managed>()) });
    MANAGED_LIVE.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn versioned_deleter(managed: *mut DLManagedTensorVersioned) {
    drop(unsafe { Box::from_raw(managed.cast::<ManagedVersioned>()) });
    MANAGED_LIVE.fetch_sub(1, Ordering::SeqCst);
}

/// What a fuzzed tensor looks like.
#[derive(Clone, Debug)]
struct TensorSpec {
    shape: Vec<i64>,
    dtype: DLDataType,
    /// 0: no strides, 1: compact strides, 2: reversed (transposed) compact strides.
    strides: u8,
    device: DLDevice,
    byte_offset: u64,
}

const fn data_type(code: u8, bits: u8, lanes: u16) -> DLDataType {
    DLDataType { code, bits, lanes }
}

/// float32, int64, int8, uint16, bool, bfloat16, float32x4.
const DTYPES: &[DLDataType] = &[
    data_type(2, 32, 1),
    data_type(0, 64, 1),
    data_type(0, 8, 1),
    data_type(1, 16, 1),
    data_type(6, 8, 1),
    data_type(4, 16, 1),
    data_type(2, 32, 4),
];

impl TensorSpec {
    fn arbitrary(u: &mut Unstructured<'_>) -> Result<TensorSpec> {
        let ndim: usize = u.int_in_range(0..=3)?;
        let mut shape = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            shape.push(u.int_in_range(0..=4)?);
        }
        let device = if u.ratio(1, 8)? {
            DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: u.int_in_range(0..=1)?,
            }
        } else {
            DLDevice {
                device_type: DLDeviceType::CPU,
                device_id: 0,
            }
        };
        Ok(TensorSpec {
            shape,
            dtype: *u.choose(DTYPES)?,
            strides: u.int_in_range(0..=2)?,
            device,
            byte_offset: if u.ratio(1, 4)? { 8 } else { 0 },
        })
    }

    fn item_bytes(&self) -> usize {
        usize::from(self.dtype.bits) * usize::from(self.dtype.lanes) / 8
    }

    fn numel(&self) -> usize {
        self.shape.iter().map(|&d| d as usize).product()
    }

    fn strides(&self) -> Vec<i64> {
        let ndim = self.shape.len();
        let mut strides = vec![1i64; ndim];
        if self.strides == 2 {
            for k in 1..ndim {
                strides[k] = strides[k - 1] * self.shape[k - 1];
            }
        } else {
            for k in (0..ndim.saturating_sub(1)).rev() {
                strides[k] = strides[k + 1] * self.shape[k + 1];
            }
        }
        strides
    }

    /// Shape, strides, backing words, and the DLTensor over them.
    fn parts(&self) -> (Vec<i64>, Vec<i64>, Vec<u64>) {
        let bytes = self.numel() * self.item_bytes() + self.byte_offset as usize;
        (
            self.shape.clone(),
            self.strides(),
            vec![0x3ff0_0000_0000_0000u64; bytes.div_ceil(8).max(1)],
        )
    }

    fn dl_tensor(&self, shape: &mut [i64], strides: &mut [i64], data: &mut [u64]) -> DLTensor {
        DLTensor {
            data: data.as_mut_ptr().cast(),
            device: self.device,
            ndim: shape.len() as i32,
            dtype: self.dtype,
            shape: shape.as_mut_ptr(),
            strides: if self.strides == 0 {
                null_mut()
            } else {
                strides.as_mut_ptr()
            },
            byte_offset: self.byte_offset,
        }
    }

    fn managed(&self) -> *mut DLManagedTensor {
        let (shape, strides, data) = self.parts();
        let mut boxed = Box::new(Managed {
            managed: DLManagedTensor {
                dl_tensor: DLTensor {
                    data: null_mut(),
                    device: self.device,
                    ndim: 0,
                    dtype: self.dtype,
                    shape: null_mut(),
                    strides: null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: null_mut(),
                deleter: Some(managed_deleter),
            },
            shape,
            strides,
            data,
        });
        let Managed {
            managed,
            shape,
            strides,
            data,
        } = &mut *boxed;
        managed.dl_tensor = self.dl_tensor(shape, strides, data);
        MANAGED_LIVE.fetch_add(1, Ordering::SeqCst);
        Box::into_raw(boxed).cast()
    }

    fn managed_versioned(&self, version: DLPackVersion) -> *mut DLManagedTensorVersioned {
        let (shape, strides, data) = self.parts();
        let mut boxed = Box::new(ManagedVersioned {
            managed: DLManagedTensorVersioned {
                version,
                manager_ctx: null_mut(),
                deleter: Some(versioned_deleter),
                flags: 0,
                dl_tensor: DLTensor {
                    data: null_mut(),
                    device: self.device,
                    ndim: 0,
                    dtype: self.dtype,
                    shape: null_mut(),
                    strides: null_mut(),
                    byte_offset: 0,
                },
            },
            shape,
            strides,
            data,
        });
        let ManagedVersioned {
            managed,
            shape,
            strides,
            data,
        } = &mut *boxed;
        managed.dl_tensor = self.dl_tensor(shape, strides, data);
        MANAGED_LIVE.fetch_add(1, Ordering::SeqCst);
        Box::into_raw(boxed).cast()
    }
}

/// The environment allocator the target installs around `TVMFFIEnvTensorAlloc`: mode 0
/// allocates like the prototype, 1 refuses through `set_error`, 2 claims success without a
/// tensor.
unsafe extern "C" fn fuzz_allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char)>,
) -> i32 {
    let prototype = unsafe { &*prototype };
    match ALLOCATOR_MODE.with(|m| *m.borrow()) {
        0 => {
            let shape = if prototype.ndim > 0 {
                unsafe { core::slice::from_raw_parts(prototype.shape, prototype.ndim as usize) }
                    .to_vec()
            } else {
                Vec::new()
            };
            let spec = TensorSpec {
                shape,
                dtype: prototype.dtype,
                strides: 0,
                device: prototype.device,
                byte_offset: 0,
            };
            let version = DLPackVersion { major: 1, minor: 3 };
            unsafe { *out = spec.managed_versioned(version) };
            0
        }
        1 => {
            let set_error = set_error.expect("the runtime passes set_error");
            unsafe {
                set_error(
                    error_ctx,
                    c"FuzzAllocError".as_ptr(),
                    c"fuzz: allocation refused".as_ptr(),
                )
            };
            -1
        }
        _ => {
            unsafe { *out = null_mut() };
            0
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Arguments.

/// One argument of a call, before it exists.
enum ArgSpec {
    /// A view of a pool value.
    Slot(usize),
    /// An rvalue reference to a new reference of a pool object.
    Move(usize),
    RawStr(Vec<u8>),
    ByteArray(Vec<u8>),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    DataType(DLDataType),
    Device(i32, i32),
    /// The static, non-object DLTensor.
    TensorPtr,
    Opaque(bool),
}

/// Arguments as views, with the storage they borrow.
struct Args {
    values: Vec<TVMFFIAny>,
    _strings: Vec<CString>,
    _arrays: Vec<(Box<[u8]>, Box<TVMFFIByteArray>)>,
    /// Rvalue-reference cells: each holds a reference until something moves it out. Boxed,
    /// so that the argument's pointer to its cell stays valid as the vector grows.
    #[allow(clippy::vec_box)]
    cells: Vec<Box<*mut TVMFFIObject>>,
}

impl Args {
    fn build(pool: &[TVMFFIAny], specs: Vec<ArgSpec>) -> Args {
        let mut args = Args {
            values: Vec::with_capacity(specs.len()),
            _strings: Vec::new(),
            _arrays: Vec::new(),
            cells: Vec::new(),
        };
        for spec in specs {
            let value = match spec {
                ArgSpec::Slot(i) => pool[i],
                ArgSpec::Move(i) => {
                    let object = unsafe { pool[i].value.v_obj };
                    assert_eq!(unsafe { capi::TVMFFIObjectIncRef(object.cast()) }, 0);
                    let mut cell = Box::new(object);
                    let value = TVMFFIAny {
                        type_index: T::OBJECT_RVALUE_REF.0,
                        small_str_len: 0,
                        value: TVMFFIAnyValue {
                            v_ptr: core::ptr::from_mut(&mut *cell).cast(),
                        },
                    };
                    args.cells.push(cell);
                    value
                }
                ArgSpec::RawStr(bytes) => {
                    let text = c_string(&bytes);
                    let value = TVMFFIAny {
                        type_index: T::RAW_STR.0,
                        small_str_len: 0,
                        value: TVMFFIAnyValue {
                            v_c_str: text.as_ptr(),
                        },
                    };
                    args._strings.push(text);
                    value
                }
                ArgSpec::ByteArray(bytes) => {
                    let bytes = bytes.into_boxed_slice();
                    let mut array = Box::new(byte_array(&bytes));
                    let value = TVMFFIAny {
                        type_index: T::BYTE_ARRAY_PTR.0,
                        small_str_len: 0,
                        value: TVMFFIAnyValue {
                            v_ptr: core::ptr::from_mut(&mut *array).cast(),
                        },
                    };
                    args._arrays.push((bytes, array));
                    value
                }
                ArgSpec::Int(v) => pod(T::INT, v as u64),
                ArgSpec::Float(v) => pod(T::FLOAT, v.to_bits()),
                ArgSpec::Bool(v) => pod(T::BOOL, u64::from(v)),
                ArgSpec::None => TVMFFIAny::NONE,
                ArgSpec::DataType(dtype) => dtype_value(dtype),
                ArgSpec::Device(device_type, device_id) => pod(
                    T::DEVICE,
                    u64::from(device_type as u32) | (u64::from(device_id as u32) << 32),
                ),
                ArgSpec::TensorPtr => pod(
                    T::DL_TENSOR_PTR,
                    STATIC_TENSOR.with(|&tensor| tensor as u64),
                ),
                ArgSpec::Opaque(null) => pod(
                    T::OPAQUE_PTR,
                    if null {
                        0
                    } else {
                        core::ptr::addr_of!(OPAQUE_TARGET) as u64
                    },
                ),
            };
            args.values.push(value);
        }
        args
    }

    /// Releases the references the callee did not move out.
    fn finish(self) {
        for cell in self.cells {
            if !cell.is_null() {
                unsafe { capi::TVMFFIObjectDecRef((*cell).cast()) };
            }
        }
    }
}

fn dtype_value(dtype: DLDataType) -> TVMFFIAny {
    let word =
        u64::from(dtype.code) | (u64::from(dtype.bits) << 8) | (u64::from(dtype.lanes) << 16);
    pod(T::DATA_TYPE, word)
}

fn dtype_of(value: &TVMFFIAny) -> DLDataType {
    unsafe { value.value.v_dtype }
}

fn bytes(u: &mut Unstructured<'_>, max: usize) -> Result<Vec<u8>> {
    let length = u.int_in_range(0..=max)?;
    Ok(u.bytes(length)?.to_vec())
}

// ---------------------------------------------------------------------------------------------
// The model and the operations.

struct State {
    /// Owned values: each object in here holds one strong reference.
    pool: Vec<TVMFFIAny>,
    /// Globals registered by this input (name, function or NULL); the registry owns them.
    globals: HashMap<Vec<u8>, usize>,
    /// The first stream each (device type, id) had before this input set one.
    streams: HashMap<(i32, i32), TVMFFIStreamHandle>,
}

impl State {
    fn new() -> State {
        // Gather the runtime facts before the first input changes anything.
        RUNTIME.with(|_| {});
        State {
            pool: Vec::new(),
            globals: HashMap::new(),
            streams: HashMap::new(),
        }
    }

    /// Adds an owned value to the pool (checked first), or releases it when the pool is full.
    fn push(&mut self, value: TVMFFIAny, what: &str) {
        unsafe { check_owned(&value, what) };
        if self.pool.len() < POOL {
            self.pool.push(value);
        } else {
            unsafe { release(value) };
        }
    }

    fn push_object(&mut self, object: *mut c_void, what: &str) {
        assert!(!object.is_null(), "{what} gave a NULL object");
        self.push(object_value(object.cast()), what);
    }

    fn pick(&self, u: &mut Unstructured<'_>) -> Result<Option<usize>> {
        if self.pool.is_empty() {
            Ok(None)
        } else {
            Ok(Some(u.choose_index(self.pool.len())?))
        }
    }

    /// A pool object of type `type_index`, if there is one (chosen by the input).
    fn pick_type(&self, u: &mut Unstructured<'_>, type_index: T) -> Result<Option<usize>> {
        let candidates: Vec<usize> = (0..self.pool.len())
            .filter(|&i| self.pool[i].type_index == type_index.0)
            .collect();
        if candidates.is_empty() {
            Ok(None)
        } else {
            Ok(Some(*u.choose(&candidates)?))
        }
    }

    fn holders(&self, object: *mut TVMFFIObject) -> u32 {
        self.pool
            .iter()
            .filter(|v| is_object(v) && unsafe { v.value.v_obj } == object)
            .count() as u32
    }

    /// Every pooled object is live, typed as its value says, and counts at least the
    /// references the pool holds.
    fn check_pool(&self) {
        for value in &self.pool {
            if is_object(value) {
                let object = unsafe { value.value.v_obj };
                let header = unsafe { &*object };
                assert_eq!(
                    header.type_index, value.type_index,
                    "a pooled object changed type"
                );
                let count = unsafe { strong(object) };
                let held = self.holders(object);
                assert!(
                    count >= held,
                    "object of type {} has {count} strong references, the pool holds {held}",
                    value.type_index
                );
            }
        }
    }

    /// Up to [`MAX_ARGS`] arguments of any kinds.
    fn arg_specs(&self, u: &mut Unstructured<'_>) -> Result<Vec<ArgSpec>> {
        let count = u.int_in_range(0..=MAX_ARGS)?;
        let mut specs = Vec::with_capacity(count);
        for _ in 0..count {
            specs.push(self.arg_spec(u)?);
        }
        Ok(specs)
    }

    /// One argument of any kind: mostly pool values, else borrowed and inline kinds.
    fn arg_spec(&self, u: &mut Unstructured<'_>) -> Result<ArgSpec> {
        Ok(match u.int_in_range(0..=15)? {
            0..=5 => match self.pick(u)? {
                Some(i) => ArgSpec::Slot(i),
                None => ArgSpec::None,
            },
            6 => match self.pick(u)? {
                Some(i) if is_object(&self.pool[i]) => ArgSpec::Move(i),
                Some(i) => ArgSpec::Slot(i),
                None => ArgSpec::None,
            },
            7 => ArgSpec::RawStr(bytes(u, 24)?),
            8 => ArgSpec::ByteArray(bytes(u, 24)?),
            9 => ArgSpec::Int(u.int_in_range(-3..=8)?),
            10 => ArgSpec::Int(u.arbitrary()?),
            11 => ArgSpec::Float(u.arbitrary()?),
            12 => ArgSpec::Bool(u.arbitrary()?),
            13 => ArgSpec::DataType(*u.choose(DTYPES)?),
            14 => {
                if u.arbitrary()? {
                    ArgSpec::Device(u.int_in_range(1..=4)?, u.int_in_range(0..=1)?)
                } else {
                    ArgSpec::TensorPtr
                }
            }
            _ => {
                if u.arbitrary()? {
                    ArgSpec::Opaque(u.arbitrary()?)
                } else {
                    ArgSpec::None
                }
            }
        })
    }

    /// Arguments of the types a callable global takes (so that calls get past the type
    /// checks), falling back to any kind where the pool has no value of the type.
    fn typed_specs(&self, u: &mut Unstructured<'_>, params: &[Param]) -> Result<Vec<ArgSpec>> {
        let mut specs = Vec::with_capacity(params.len());
        for param in params {
            let types: &[T] = match param {
                Param::Any => {
                    specs.push(self.arg_spec(u)?);
                    continue;
                }
                Param::Index => {
                    specs.push(ArgSpec::Int(u.int_in_range(-1..=5)?));
                    continue;
                }
                Param::Name => {
                    let names: Vec<&[u8]> = self
                        .globals
                        .keys()
                        .map(Vec::as_slice)
                        .chain(CALLABLE.iter().map(|n| n.as_bytes()))
                        .collect();
                    specs.push(ArgSpec::RawStr(u.choose(&names)?.to_vec()));
                    continue;
                }
                Param::Str => &[T::SMALL_STR, T::STR],
                Param::Bytes => &[T::SMALL_BYTES, T::BYTES],
                Param::Object(t) => core::slice::from_ref(t),
            };
            let candidates: Vec<usize> = (0..self.pool.len())
                .filter(|&i| types.contains(&T(self.pool[i].type_index)))
                .collect();
            let spec = if candidates.is_empty() {
                self.arg_spec(u)?
            } else {
                let i = *u.choose(&candidates)?;
                if is_object(&self.pool[i]) && u.ratio(1, 8)? {
                    ArgSpec::Move(i)
                } else {
                    ArgSpec::Slot(i)
                }
            };
            specs.push(spec);
        }
        Ok(specs)
    }

    /// Calls `function` (a live Function) if the target may, keeping the result or error.
    fn call(&mut self, function: *mut c_void, specs: Vec<ArgSpec>, what: &str) {
        let args = Args::build(&self.pool, specs);
        if unsafe { may_call(function, &args.values) } {
            match call_owned(function, &args.values) {
                Ok(result) => self.push(result, what),
                Err(error) => self.push_object(error.cast(), what),
            }
        }
        args.finish();
    }

    /// One operation, chosen and parameterised by the input. Everything is drawn from the
    /// input before the first C call, so running out of data never leaves a half-done step.
    fn step(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        match u.int_in_range(0..=31)? {
            0 => self.new_pod(u),
            1 | 2 => self.new_string(u),
            3 => self.new_big_int(u),
            4 => self.dtype_from_string(u),
            5 => self.dtype_to_string(u),
            6 | 7 => self.new_function(u),
            8 => self.new_opaque(u),
            9 | 10 => self.new_tensor(u),
            11 => self.tensor_to_dlpack(u),
            12 => self.tensor_view(u),
            13 => self.env_tensor_alloc(u),
            14 => self.copy(u),
            15 => self.inc_ref(u),
            16 => self.drop_value(u),
            17 => self.move_value(u),
            18 | 19 => self.call_slot(u),
            20..=22 => self.call_global(u),
            23 => self.raise_from_c_str(u),
            24 => self.error_create(u),
            25 => self.set_raised(u),
            26 => self.get_global_op(u),
            27 => self.set_global(u),
            28 => self.set_global_from_method_info(u),
            29 => self.type_info(u),
            30 => self.borrowed_to_owned(u),
            _ => self.environment(u),
        }
    }

    fn new_pod(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let value = match u.int_in_range(0..=5)? {
            0 => pod(T::INT, u.arbitrary::<i64>()? as u64),
            1 => pod(T::FLOAT, u.arbitrary::<f64>()?.to_bits()),
            2 => pod(T::BOOL, u64::from(u.arbitrary::<bool>()?)),
            3 => dtype_value(*u.choose(DTYPES)?),
            4 => pod(T::DEVICE, u64::from(u.int_in_range(1u32..=13)?)),
            _ => TVMFFIAny::NONE,
        };
        self.push(value, "a POD value");
        Ok(())
    }

    /// `TVMFFIStringFromByteArray` / `TVMFFIBytesFromByteArray`: small up to 7 bytes, else an
    /// object; the contents read back.
    fn new_string(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let is_bytes: bool = u.arbitrary()?;
        let input = bytes(u, 40)?;
        let array = byte_array(&input);
        let mut out = TVMFFIAny::NONE;
        let rc = unsafe {
            if is_bytes {
                capi::TVMFFIBytesFromByteArray(&array, &mut out)
            } else {
                capi::TVMFFIStringFromByteArray(&array, &mut out)
            }
        };
        assert_eq!(rc, 0, "string creation fails");
        unsafe { check_owned(&out, "a new string") };
        let (small, heap) = if is_bytes {
            (T::SMALL_BYTES, T::BYTES)
        } else {
            (T::SMALL_STR, T::STR)
        };
        let expected = if input.len() <= 7 { small } else { heap };
        assert_eq!(out.type_index, expected.0, "{} bytes", input.len());
        assert_eq!(unsafe { string_bytes(&out) }, Some(&input[..]));
        self.push(out, "a new string");
        Ok(())
    }

    /// `TVMFFIBigIntFromByteArray`: whole words only, normalised to Int when one word does,
    /// with the same value as the input words (read back with `GetContentByteArray`).
    fn new_big_int(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let input = if u.arbitrary()? {
            bytes(u, 40)?
        } else {
            let words: usize = u.int_in_range(0..=4)?;
            let mut input = Vec::new();
            for _ in 0..words {
                let word: i64 = match u.int_in_range(0..=3)? {
                    0 => 0,
                    1 => -1,
                    _ => u.arbitrary()?,
                };
                input.extend_from_slice(&word.to_ne_bytes());
            }
            input
        };
        let array = byte_array(&input);
        let mut out = TVMFFIAny::NONE;
        let rc = unsafe { capi::TVMFFIBigIntFromByteArray(&array, &mut out) };
        if input.len() % 8 != 0 {
            assert_eq!(rc, -1, "a partial word is refused");
            let error = expect_error("BigIntFromByteArray", "ValueError");
            self.push_object(error.cast(), "a BigInt error");
            return Ok(());
        }
        assert_eq!(rc, 0);
        unsafe { check_owned(&out, "a big int") };
        let content = unsafe { capi::TVMFFIBigIntGetContentByteArray(&out) };
        let content = unsafe { bytes_of(content) }.to_vec();
        assert!(content.len() % 8 == 0 && !content.is_empty());
        let words = |bytes: &[u8]| -> Vec<i64> {
            bytes
                .chunks_exact(8)
                .map(|c| i64::from_ne_bytes(c.try_into().unwrap()))
                .collect()
        };
        let (given, stored) = (words(&input), words(&content));
        if stored.len() == 1 {
            assert_eq!(out.type_index, T::INT.0, "one word is an Int");
        } else {
            assert_eq!(out.type_index, T::BIG_INT.0);
            let (top, next) = (stored[stored.len() - 1], stored[stored.len() - 2]);
            assert_ne!(top, if next < 0 { -1 } else { 0 }, "not normalised");
        }
        let sign = if stored[stored.len() - 1] < 0 { -1 } else { 0 };
        for i in 0..given.len().max(stored.len()) {
            let a = given
                .get(i)
                .copied()
                .unwrap_or(if given.last().is_some_and(|&w| w < 0) {
                    -1
                } else {
                    0
                });
            let b = stored.get(i).copied().unwrap_or(sign);
            assert_eq!(a, b, "word {i} of {given:?} stored as {stored:?}");
        }
        self.push(out, "a big int");
        Ok(())
    }

    /// `TVMFFIDataTypeFromString`, then printed and parsed back to the same type.
    fn dtype_from_string(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let text = if u.arbitrary()? {
            u.choose(DTYPE_NAMES)?.as_bytes().to_vec()
        } else {
            bytes(u, 20)?
        };
        let array = byte_array(&text);
        let mut dtype = data_type(0, 0, 0);
        if unsafe { capi::TVMFFIDataTypeFromString(&array, &mut dtype) } != 0 {
            let error = take_raised("DataTypeFromString");
            self.push_object(error.cast(), "a dtype error");
            return Ok(());
        }
        let mut printed = TVMFFIAny::NONE;
        if unsafe { capi::TVMFFIDataTypeToString(&dtype, &mut printed) } != 0 {
            let error = take_raised("DataTypeToString");
            self.push_object(error.cast(), "a dtype error");
        } else {
            unsafe { check_owned(&printed, "a dtype string") };
            assert_eq!(
                printed.type_index,
                T::STR.0,
                "dtype strings are String objects"
            );
            let text_back = unsafe { string_bytes(&printed) }.unwrap().to_vec();
            let array = byte_array(&text_back);
            let mut again = data_type(0, 0, 0);
            let rc = unsafe { capi::TVMFFIDataTypeFromString(&array, &mut again) };
            assert_eq!(
                rc,
                0,
                "{:?} printed as {:?} does not parse",
                String::from_utf8_lossy(&text),
                String::from_utf8_lossy(&text_back)
            );
            assert_eq!(
                (again.code, again.bits, again.lanes),
                (dtype.code, dtype.bits, dtype.lanes),
                "{:?} printed as {:?}",
                String::from_utf8_lossy(&text),
                String::from_utf8_lossy(&text_back)
            );
            self.push(printed, "a dtype string");
        }
        self.push(dtype_value(dtype), "a dtype");
        Ok(())
    }

    /// `TVMFFIDataTypeToString` on any data type (from the pool or the input).
    fn dtype_to_string(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let dtype = match self.pick_type(u, T::DATA_TYPE)? {
            Some(i) if u.arbitrary()? => dtype_of(&self.pool[i]),
            _ => DLDataType {
                code: u.arbitrary()?,
                bits: u.arbitrary()?,
                lanes: u.arbitrary()?,
            },
        };
        let mut out = TVMFFIAny::NONE;
        if unsafe { capi::TVMFFIDataTypeToString(&dtype, &mut out) } == 0 {
            assert_eq!(out.type_index, T::STR.0, "dtype strings are String objects");
            self.push(out, "a dtype string");
        } else {
            assert_eq!(out.type_index, 0, "a failure wrote its output");
            let error = take_raised("DataTypeToString");
            self.push_object(error.cast(), "a dtype error");
        }
        Ok(())
    }

    /// `TVMFFIFunctionCreate` with a callback state (and deleter), with both NULL (the
    /// callback gets its function object), with NULL `self` and a deleter, or with no callback.
    fn new_function(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let form = u.int_in_range(0..=7)?;
        let behavior = u.int_in_range(0..=4)?;
        let mut out: *mut c_void = null_mut();
        match form {
            0..=4 => {
                let state = Box::into_raw(Box::new(Callback {
                    magic: CALLBACK_MAGIC,
                    behavior,
                }));
                CALLBACKS_LIVE.fetch_add(1, Ordering::SeqCst);
                let rc = unsafe {
                    capi::TVMFFIFunctionCreate(
                        state.cast(),
                        Some(callback),
                        Some(callback_deleter),
                        &mut out,
                    )
                };
                assert_eq!(rc, 0, "FunctionCreate fails");
            }
            5 => {
                let rc = unsafe {
                    capi::TVMFFIFunctionCreate(null_mut(), Some(direct_callback), None, &mut out)
                };
                assert_eq!(rc, 0, "FunctionCreate fails");
            }
            6 => {
                NULL_SELF_LIVE.fetch_add(1, Ordering::SeqCst);
                let rc = unsafe {
                    capi::TVMFFIFunctionCreate(
                        null_mut(),
                        Some(callback),
                        Some(callback_deleter),
                        &mut out,
                    )
                };
                assert_eq!(rc, 0, "FunctionCreate fails");
            }
            _ => {
                // No callback: refused, and the state stays the caller's.
                let state = Box::into_raw(Box::new(Callback {
                    magic: CALLBACK_MAGIC,
                    behavior,
                }));
                let rc = unsafe {
                    capi::TVMFFIFunctionCreate(state.cast(), None, Some(callback_deleter), &mut out)
                };
                assert_eq!(rc, -1, "a function without a callback");
                drop(unsafe { Box::from_raw(state) });
                let error = take_raised("FunctionCreate(NULL)");
                self.push_object(error.cast(), "a FunctionCreate error");
                return Ok(());
            }
        }
        self.push_object(out, "a new function");
        Ok(())
    }

    /// `TVMFFIObjectCreateOpaque`: only index 74; a refused handle stays the caller's.
    fn new_opaque(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let type_index = if u.ratio(3, 4)? {
            T::OPAQUE_PY_OBJECT.0
        } else {
            u.int_in_range(-2..=200)?
        };
        let handle = Box::into_raw(Box::new(OPAQUE_MAGIC));
        OPAQUE_LIVE.fetch_add(1, Ordering::SeqCst);
        let mut out: *mut c_void = null_mut();
        let rc = unsafe {
            capi::TVMFFIObjectCreateOpaque(
                handle.cast(),
                type_index,
                Some(opaque_deleter),
                &mut out,
            )
        };
        if type_index == T::OPAQUE_PY_OBJECT.0 {
            assert_eq!(rc, 0, "CreateOpaque fails");
            let cell = unsafe {
                &*out
                    .cast::<TVMFFIObject>()
                    .add(1)
                    .cast::<TVMFFIOpaqueObjectCell>()
            };
            assert_eq!(
                cell.handle,
                handle.cast(),
                "the opaque object lost its handle"
            );
            self.push_object(out, "an opaque object");
        } else {
            assert_eq!(rc, -1, "CreateOpaque accepts type index {type_index}");
            unsafe { opaque_deleter(handle.cast()) };
            let error = expect_error("CreateOpaque", "RuntimeError");
            self.push_object(error.cast(), "a CreateOpaque error");
        }
        Ok(())
    }

    /// `TVMFFITensorFromDLPack[Versioned]` of a tensor made here: on success the tensor
    /// describes it; on failure the caller still owns it.
    fn new_tensor(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let spec = TensorSpec::arbitrary(u)?;
        let versioned: bool = u.arbitrary()?;
        let version = DLPackVersion {
            major: if u.ratio(7, 8)? {
                1
            } else {
                u.int_in_range(0..=2)?
            },
            minor: u.int_in_range(0..=3)?,
        };
        let alignment = *u.choose(&[0, 0, 1, 8, 64, 3])?;
        let contiguous: bool = u.arbitrary()?;
        let live = MANAGED_LIVE.load(Ordering::SeqCst);
        let mut out: *mut c_void = null_mut();
        let rc = if versioned {
            let managed = spec.managed_versioned(version);
            let rc = unsafe {
                capi::TVMFFITensorFromDLPackVersioned(
                    managed,
                    alignment,
                    i32::from(contiguous),
                    &mut out,
                )
            };
            if rc != 0 {
                assert_eq!(
                    MANAGED_LIVE.load(Ordering::SeqCst),
                    live + 1,
                    "a refused import was deleted"
                );
                unsafe { versioned_deleter(managed) };
            }
            rc
        } else {
            let managed = spec.managed();
            let rc = unsafe {
                capi::TVMFFITensorFromDLPack(managed, alignment, i32::from(contiguous), &mut out)
            };
            if rc != 0 {
                assert_eq!(
                    MANAGED_LIVE.load(Ordering::SeqCst),
                    live + 1,
                    "a refused import was deleted"
                );
                unsafe { managed_deleter(managed) };
            }
            rc
        };
        if rc != 0 {
            assert_eq!(rc, -1);
            let error = take_raised("TensorFromDLPack");
            self.push_object(error.cast(), "a DLPack error");
            return Ok(());
        }
        assert_eq!(
            MANAGED_LIVE.load(Ordering::SeqCst),
            live + 1,
            "an import deleted its tensor"
        );
        let tensor = unsafe { dl_tensor(out.cast()) };
        assert_eq!(tensor.ndim as usize, spec.shape.len());
        assert_eq!(
            (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes),
            (spec.dtype.code, spec.dtype.bits, spec.dtype.lanes)
        );
        assert_eq!(tensor.byte_offset, spec.byte_offset);
        if tensor.ndim > 0 {
            let shape = unsafe { core::slice::from_raw_parts(tensor.shape, spec.shape.len()) };
            assert_eq!(shape, &spec.shape[..]);
            assert!(!tensor.strides.is_null(), "strides are filled in");
            let strides = unsafe { core::slice::from_raw_parts(tensor.strides, spec.shape.len()) };
            assert_eq!(strides, &spec.strides()[..]);
        }
        self.push_object(out, "a DLPack tensor");
        Ok(())
    }

    /// `TVMFFITensorToDLPack[Versioned]` of any pool object (only tensors export), then the
    /// export is either deleted or imported again (sharing the memory).
    fn tensor_to_dlpack(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some(i) = self.pick(u)? else {
            return Ok(());
        };
        let versioned: bool = u.arbitrary()?;
        let reimport: bool = u.arbitrary()?;
        let value = self.pool[i];
        let handle = if is_object(&value) {
            unsafe { value.value.v_obj.cast::<c_void>() }
        } else {
            null_mut()
        };
        let before = if handle.is_null() {
            0
        } else {
            unsafe { strong(handle.cast()) }
        };
        let is_tensor = value.type_index == T::TENSOR.0;
        let mut out: *mut c_void = null_mut();
        if versioned {
            let mut managed: *mut DLManagedTensorVersioned = null_mut();
            let rc = unsafe { capi::TVMFFITensorToDLPackVersioned(handle, &mut managed) };
            if !is_tensor {
                assert_eq!(rc, -1, "a {} exports as a tensor", value.type_index);
                let error = take_raised("TensorToDLPackVersioned");
                self.push_object(error.cast(), "an export error");
                return Ok(());
            }
            assert_eq!(rc, 0);
            assert_eq!(
                unsafe { strong(handle.cast()) },
                before + 1,
                "the export holds a reference"
            );
            let m = unsafe { &*managed };
            assert_eq!((m.version.major, m.version.minor), (1, 3));
            let deleter = m.deleter.expect("an export has a deleter");
            if reimport {
                let rc = unsafe { capi::TVMFFITensorFromDLPackVersioned(managed, 0, 0, &mut out) };
                if rc != 0 {
                    unsafe { deleter(managed) };
                    let error = take_raised("re-import");
                    self.push_object(error.cast(), "a re-import error");
                    return Ok(());
                }
            } else {
                unsafe { deleter(managed) };
                assert_eq!(
                    unsafe { strong(handle.cast()) },
                    before,
                    "the deleter releases"
                );
                return Ok(());
            }
        } else {
            let mut managed: *mut DLManagedTensor = null_mut();
            let rc = unsafe { capi::TVMFFITensorToDLPack(handle, &mut managed) };
            if !is_tensor {
                assert_eq!(rc, -1, "a {} exports as a tensor", value.type_index);
                let error = take_raised("TensorToDLPack");
                self.push_object(error.cast(), "an export error");
                return Ok(());
            }
            assert_eq!(rc, 0);
            assert_eq!(
                unsafe { strong(handle.cast()) },
                before + 1,
                "the export holds a reference"
            );
            let deleter = unsafe { (*managed).deleter }.expect("an export has a deleter");
            if reimport {
                let rc = unsafe { capi::TVMFFITensorFromDLPack(managed, 0, 0, &mut out) };
                if rc != 0 {
                    unsafe { deleter(managed) };
                    let error = take_raised("re-import");
                    self.push_object(error.cast(), "a re-import error");
                    return Ok(());
                }
            } else {
                unsafe { deleter(managed) };
                assert_eq!(
                    unsafe { strong(handle.cast()) },
                    before,
                    "the deleter releases"
                );
                return Ok(());
            }
        }
        let (a, b) = unsafe { (dl_tensor(handle.cast()), dl_tensor(out.cast())) };
        assert_eq!(a.data, b.data, "a re-imported tensor shares the memory");
        assert_eq!(a.ndim, b.ndim);
        self.push_object(out, "a re-imported tensor");
        Ok(())
    }

    /// `TVMFFITensorCreateUnsafeView`: a flat prefix of a tensor (with or without strides,
    /// without is refused), or a non-tensor source (refused).
    fn tensor_view(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some(i) = self.pick(u)? else {
            return Ok(());
        };
        let with_strides = u.ratio(7, 8)?;
        let fraction: u8 = u.arbitrary()?;
        let value = self.pool[i];
        if !is_object(&value) {
            return Ok(());
        }
        let source = unsafe { value.value.v_obj };
        let mut out: *mut c_void = null_mut();
        if value.type_index != T::TENSOR.0 {
            let prototype = STATIC_TENSOR.with(|&tensor| unsafe { *(tensor as *const DLTensor) });
            let rc =
                unsafe { capi::TVMFFITensorCreateUnsafeView(source.cast(), &prototype, &mut out) };
            assert_eq!(rc, -1, "a view of a {}", value.type_index);
            let error = take_raised("CreateUnsafeView");
            self.push_object(error.cast(), "a view error");
            return Ok(());
        }
        let tensor = unsafe { dl_tensor(source) };
        let shape = if tensor.ndim > 0 {
            unsafe { core::slice::from_raw_parts(tensor.shape, tensor.ndim as usize) }
        } else {
            &[]
        };
        let numel: i64 = shape.iter().product();
        let mut view_shape = [numel * i64::from(fraction) / 255];
        let mut view_strides = [1i64];
        let prototype = DLTensor {
            ndim: 1,
            shape: view_shape.as_mut_ptr(),
            strides: if with_strides {
                view_strides.as_mut_ptr()
            } else {
                null_mut()
            },
            ..*tensor
        };
        let before = unsafe { strong(source) };
        let rc = unsafe { capi::TVMFFITensorCreateUnsafeView(source.cast(), &prototype, &mut out) };
        if !with_strides {
            assert_eq!(rc, -1, "a view without strides");
            let error = take_raised("CreateUnsafeView");
            self.push_object(error.cast(), "a view error");
            return Ok(());
        }
        assert_eq!(rc, 0, "CreateUnsafeView fails");
        assert_eq!(
            unsafe { strong(source) },
            before + 1,
            "the view holds its source"
        );
        let view = unsafe { dl_tensor(out.cast()) };
        assert_eq!(view.data, tensor.data);
        assert_eq!(unsafe { *view.shape }, view_shape[0]);
        self.push_object(out, "a tensor view");
        Ok(())
    }

    /// `TVMFFIEnvTensorAlloc` through an allocator installed for this call only.
    fn env_tensor_alloc(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let spec = TensorSpec::arbitrary(u)?;
        let mode = u.int_in_range(0..=3)?;
        let (mut shape, mut strides, mut data) = spec.parts();
        let mut prototype = spec.dl_tensor(&mut shape, &mut strides, &mut data);
        let mut out: *mut c_void = null_mut();
        if mode == 3 {
            // No allocator installed: refused.
            let rc = unsafe { capi::TVMFFIEnvTensorAlloc(&mut prototype, &mut out) };
            assert_eq!(rc, -1, "TensorAlloc without an allocator");
            let error = expect_error("TensorAlloc", "RuntimeError");
            self.push_object(error.cast(), "an alloc error");
            return Ok(());
        }
        ALLOCATOR_MODE.with(|m| *m.borrow_mut() = mode);
        let mut previous = None;
        unsafe {
            capi::TVMFFIEnvSetDLPackManagedTensorAllocator(Some(fuzz_allocator), 0, &mut previous)
        };
        assert!(previous.is_none(), "an allocator was left installed");
        let rc = unsafe { capi::TVMFFIEnvTensorAlloc(&mut prototype, &mut out) };
        let mut mine = None;
        unsafe { capi::TVMFFIEnvSetDLPackManagedTensorAllocator(None, 0, &mut mine) };
        assert_eq!(
            mine.map(|f| f as usize),
            Some(fuzz_allocator as *const () as usize)
        );
        match mode {
            0 => {
                assert_eq!(rc, 0, "TensorAlloc fails");
                let tensor = unsafe { dl_tensor(out.cast()) };
                assert_eq!(tensor.ndim, prototype.ndim);
                self.push_object(out, "an allocated tensor");
            }
            1 => {
                assert_eq!(rc, -1);
                let error = expect_error("TensorAlloc", "FuzzAllocError");
                self.push_object(error.cast(), "an alloc error");
            }
            _ => {
                assert_eq!(rc, -1, "an allocator returning no tensor");
                let error = take_raised("TensorAlloc");
                self.push_object(error.cast(), "an alloc error");
            }
        }
        Ok(())
    }

    /// `TVMFFIAnyViewToOwnedAny` of a pool value: the same value, one more reference.
    fn copy(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some(i) = self.pick(u)? else {
            return Ok(());
        };
        let view = self.pool[i];
        let before = if is_object(&view) {
            unsafe { strong(view.value.v_obj) }
        } else {
            0
        };
        let mut out = TVMFFIAny::NONE;
        assert_eq!(unsafe { capi::TVMFFIAnyViewToOwnedAny(&view, &mut out) }, 0);
        assert_eq!(out.type_index, view.type_index);
        assert_eq!(out.small_str_len, view.small_str_len);
        assert_eq!(unsafe { out.value.v_uint64 }, unsafe {
            view.value.v_uint64
        });
        if is_object(&view) {
            assert_eq!(
                unsafe { strong(view.value.v_obj) },
                before + 1,
                "a copy adds one reference"
            );
        }
        self.push(out, "a copy");
        Ok(())
    }

    /// `TVMFFIObjectIncRef`: a second owner of the same object.
    fn inc_ref(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some(i) = self.pick(u)? else {
            return Ok(());
        };
        let value = self.pool[i];
        if !is_object(&value) {
            // NULL is refused.
            assert_eq!(unsafe { capi::TVMFFIObjectIncRef(null_mut()) }, -1);
            let error = take_raised("IncRef(NULL)");
            self.push_object(error.cast(), "an IncRef error");
            return Ok(());
        }
        let object = unsafe { value.value.v_obj };
        let before = unsafe { strong(object) };
        assert_eq!(unsafe { capi::TVMFFIObjectIncRef(object.cast()) }, 0);
        assert_eq!(unsafe { strong(object) }, before + 1);
        self.push(value, "an IncRef");
        Ok(())
    }

    /// `TVMFFIObjectDecRef` (or nothing, for values that are not objects).
    fn drop_value(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some(i) = self.pick(u)? else {
            // NULL is a no-op.
            assert_eq!(unsafe { capi::TVMFFIObjectDecRef(null_mut()) }, 0);
            return Ok(());
        };
        let value = self.pool.swap_remove(i);
        if is_object(&value) {
            let object = unsafe { value.value.v_obj };
            let others = self.holders(object);
            let before = unsafe { strong(object) };
            unsafe { release(value) };
            if others > 0 {
                assert_eq!(
                    unsafe { strong(object) },
                    before - 1,
                    "a release removes one reference"
                );
            }
        }
        Ok(())
    }

    /// `TVMFFIAnyViewToOwnedAny` of an `ObjectRValueRef`: moves the reference out of the slot
    /// (which becomes NULL); a second move fails and writes nothing.
    fn move_value(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some(i) = self.pick(u)? else {
            return Ok(());
        };
        let twice: bool = u.arbitrary()?;
        if !is_object(&self.pool[i]) {
            return Ok(());
        }
        let value = self.pool.swap_remove(i);
        let object = unsafe { value.value.v_obj };
        let before = unsafe { strong(object) };
        let mut cell = object;
        let view = TVMFFIAny {
            type_index: T::OBJECT_RVALUE_REF.0,
            small_str_len: 0,
            value: TVMFFIAnyValue {
                v_ptr: core::ptr::from_mut(&mut cell).cast(),
            },
        };
        let mut out = TVMFFIAny::NONE;
        assert_eq!(unsafe { capi::TVMFFIAnyViewToOwnedAny(&view, &mut out) }, 0);
        assert!(cell.is_null(), "a move leaves the slot NULL");
        assert_eq!(unsafe { out.value.v_obj }, object);
        assert_eq!(unsafe { strong(object) }, before, "a move keeps the count");
        if twice {
            let mut again = TVMFFIAny::NONE;
            assert_eq!(
                unsafe { capi::TVMFFIAnyViewToOwnedAny(&view, &mut again) },
                -1
            );
            assert_eq!(again.type_index, 0, "a failed move wrote its output");
            let error = expect_error("second move", "InternalError");
            self.push(out, "a moved value");
            self.push_object(error.cast(), "a move error");
        } else {
            self.push(out, "a moved value");
        }
        Ok(())
    }

    /// `TVMFFIFunctionCall` of a pool value (a NULL function is refused).
    fn call_slot(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let function = self.pick_type(u, T::FUNCTION)?;
        let specs = self.arg_specs(u)?;
        match function {
            Some(i) => {
                let function = unsafe { self.pool[i].value.v_obj.cast() };
                self.call(function, specs, "a call");
            }
            None => {
                let mut result = TVMFFIAny::NONE;
                let rc =
                    unsafe { capi::TVMFFIFunctionCall(null_mut(), null_mut(), 0, &mut result) };
                assert_eq!(rc, -1, "calling NULL");
                let error = take_raised("FunctionCall(NULL)");
                self.push_object(error.cast(), "a call error");
            }
        }
        Ok(())
    }

    /// A callable global, looked up and called.
    fn call_global(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let name = *u.choose(CALLABLE)?;
        let typed = u.ratio(3, 4)?;
        let specs = match (typed, params(name)) {
            (true, Some(params)) => self.typed_specs(u, params)?,
            (true, None) if name == "ffi.Shape" => {
                let count = u.int_in_range(0..=4)?;
                let mut specs = Vec::with_capacity(count);
                for _ in 0..count {
                    specs.push(ArgSpec::Int(u.int_in_range(0..=5)?));
                }
                specs
            }
            (true, None) => {
                // ffi.Array, ffi.List, ffi.Map, ffi.Dict: any values, in pairs for maps.
                let mut specs = self.arg_specs(u)?;
                if name.ends_with("Map") || name.ends_with("Dict") {
                    specs.truncate(specs.len() & !1);
                }
                specs
            }
            (false, _) => self.arg_specs(u)?,
        };
        let function = get_global(name.as_bytes());
        assert!(!function.is_null(), "{name} is missing");
        self.call(function, specs, name);
        unsafe { capi::TVMFFIObjectDecRef(function) };
        Ok(())
    }

    /// `TVMFFIErrorSetRaisedFromCStr[Parts]`, fetched back with its kind and message.
    fn raise_from_c_str(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let kind = c_string(&bytes(u, 16)?);
        let parts_count = u.int_in_range(0..=4)?;
        let mut parts = Vec::new();
        for _ in 0..parts_count {
            parts.push(if u.ratio(1, 5)? {
                None
            } else {
                Some(c_string(&bytes(u, 16)?))
            });
        }
        let use_parts: bool = u.arbitrary()?;
        let raise_twice: bool = u.arbitrary()?;
        if raise_twice {
            unsafe {
                capi::TVMFFIErrorSetRaisedFromCStr(c"Replaced".as_ptr(), c"replaced".as_ptr())
            };
        }
        let expected: Vec<u8> = if use_parts {
            let pointers: Vec<*const c_char> = parts
                .iter()
                .map(|p| p.as_ref().map_or(core::ptr::null(), |p| p.as_ptr()))
                .collect();
            unsafe {
                capi::TVMFFIErrorSetRaisedFromCStrParts(
                    kind.as_ptr(),
                    pointers.as_ptr(),
                    pointers.len() as i32,
                )
            };
            parts
                .iter()
                .flatten()
                .flat_map(|p| p.as_bytes().to_vec())
                .collect()
        } else {
            let message = parts.first().cloned().flatten().unwrap_or_default();
            unsafe { capi::TVMFFIErrorSetRaisedFromCStr(kind.as_ptr(), message.as_ptr()) };
            message.as_bytes().to_vec()
        };
        let mut error: *mut c_void = null_mut();
        unsafe { capi::TVMFFIErrorMoveFromRaised(&mut error) };
        assert!(!error.is_null(), "the raised error is gone");
        let (got_kind, got_message, cell) = unsafe { error_parts(error.cast()) };
        assert_eq!(got_kind, kind.as_bytes());
        assert_eq!(got_message, &expected[..]);
        assert!(cell.cause_chain.is_null() && cell.extra_context.is_null());
        let mut empty: *mut c_void = null_mut();
        unsafe { capi::TVMFFIErrorMoveFromRaised(&mut empty) };
        assert!(empty.is_null(), "a moved error is still raised");
        self.push_object(error, "a raised error");
        Ok(())
    }

    /// `TVMFFIErrorCreate[WithCauseAndExtraContext]`: the parts read back; cause and context
    /// gain a reference.
    fn error_create(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let kind = bytes(u, 16)?;
        let message = bytes(u, 32)?;
        let backtrace = bytes(u, 32)?;
        let with_cause: bool = u.arbitrary()?;
        let cause = self.pick_type(u, T::ERROR)?;
        let extra = self.pick(u)?;
        let (kind_array, message_array, backtrace_array) = (
            byte_array(&kind),
            byte_array(&message),
            byte_array(&backtrace),
        );
        let mut out: *mut c_void = null_mut();
        let (cause, extra) = if with_cause {
            let cause = cause.map_or(null_mut(), |i| unsafe { self.pool[i].value.v_obj });
            let extra = match extra {
                Some(i) if is_object(&self.pool[i]) => unsafe { self.pool[i].value.v_obj },
                _ => null_mut(),
            };
            let counts = |o: *mut TVMFFIObject| if o.is_null() { 0 } else { unsafe { strong(o) } };
            let (cause_before, extra_before) = (counts(cause), counts(extra));
            let rc = unsafe {
                capi::TVMFFIErrorCreateWithCauseAndExtraContext(
                    &kind_array,
                    &message_array,
                    &backtrace_array,
                    cause.cast(),
                    extra.cast(),
                    &mut out,
                )
            };
            assert_eq!(rc, 0, "ErrorCreateWithCause fails");
            let same = usize::from(cause == extra && !cause.is_null()) as u32;
            if !cause.is_null() {
                assert_eq!(counts(cause), cause_before + 1 + same);
            }
            if !extra.is_null() && cause != extra {
                assert_eq!(counts(extra), extra_before + 1);
            }
            (cause, extra)
        } else {
            let rc = unsafe {
                capi::TVMFFIErrorCreate(&kind_array, &message_array, &backtrace_array, &mut out)
            };
            assert_eq!(rc, 0, "ErrorCreate fails");
            (null_mut(), null_mut())
        };
        let (got_kind, got_message, cell) = unsafe { error_parts(out.cast()) };
        assert_eq!(got_kind, &kind[..]);
        assert_eq!(got_message, &message[..]);
        assert_eq!(unsafe { bytes_of(cell.backtrace) }, &backtrace[..]);
        assert_eq!(cell.cause_chain, cause.cast());
        assert_eq!(cell.extra_context, extra.cast());
        self.push_object(out, "a new error");
        Ok(())
    }

    /// `TVMFFIErrorSetRaised` of a pool error (its own reference), then moved back out, left
    /// raised for a later step (or the end of the input), or cleared with NULL.
    fn set_raised(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let error = self.pick_type(u, T::ERROR)?;
        let then = u.int_in_range(0..=2)?;
        let Some(i) = error else {
            unsafe { capi::TVMFFIErrorSetRaised(null_mut()) };
            let mut none: *mut c_void = null_mut();
            unsafe { capi::TVMFFIErrorMoveFromRaised(&mut none) };
            assert!(none.is_null(), "SetRaised(NULL) leaves an error");
            return Ok(());
        };
        let object = unsafe { self.pool[i].value.v_obj };
        // The slot may hold this error already (left raised by an earlier step): raising it
        // again keeps the one reference the slot has.
        let already = peek_raised() == object;
        let before = unsafe { strong(object) };
        unsafe { capi::TVMFFIErrorSetRaised(object.cast()) };
        assert_eq!(
            unsafe { strong(object) },
            before + u32::from(!already),
            "the slot takes one reference"
        );
        match then {
            0 => {
                let mut back: *mut c_void = null_mut();
                unsafe { capi::TVMFFIErrorMoveFromRaised(&mut back) };
                assert_eq!(back, object.cast(), "a different error came back");
                self.push_object(back, "a raised error");
            }
            1 => {
                unsafe { capi::TVMFFIErrorSetRaised(null_mut()) };
                assert_eq!(
                    unsafe { strong(object) },
                    before - u32::from(already),
                    "clearing releases"
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// A name for the registry: one this input registered, a callable global, or a new
    /// `fuzz.` name (never a runtime global, which later inputs rely on).
    fn global_name(&self, u: &mut Unstructured<'_>, for_lookup: bool) -> Result<Vec<u8>> {
        let registered: Vec<&Vec<u8>> = self.globals.keys().collect();
        Ok(match u.int_in_range(0..=3)? {
            0 if !registered.is_empty() => (*u.choose(&registered)?).clone(),
            1 if for_lookup => u.choose(CALLABLE)?.as_bytes().to_vec(),
            2 if for_lookup => bytes(u, 24)?,
            _ => {
                // UTF-8: the `ffi.*` functions that take names (`ffi.FunctionRemoveGlobal`,
                // `ffi.GetGlobalFuncMetadata`) refuse other strings.
                let mut name = b"fuzz.".to_vec();
                name.extend(String::from_utf8_lossy(&bytes(u, 12)?).as_bytes());
                name
            }
        })
    }

    /// `TVMFFIFunctionGetGlobal`: what this input registered comes back (NULL for an entry
    /// without a function); callable globals exist.
    fn get_global_op(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let name = self.global_name(u, true)?;
        let function = get_global(&name);
        if let Some(&registered) = self.globals.get(&name) {
            assert_eq!(
                function as usize, registered,
                "GetGlobal gives another function"
            );
        } else if name.starts_with(b"fuzz.") {
            assert!(function.is_null(), "an unregistered fuzz global exists");
        } else if CALLABLE.iter().any(|c| c.as_bytes() == &name[..]) {
            assert!(!function.is_null(), "a runtime global is missing");
        }
        if !function.is_null() {
            self.push_object(function, "a global");
        }
        Ok(())
    }

    /// `TVMFFIFunctionSetGlobal` of a pool function (or NULL) under a `fuzz.` name: a taken
    /// name without `allow_override` is refused and keeps its function.
    fn set_global(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let name = self.global_name(u, false)?;
        let function = self.pick_type(u, T::FUNCTION)?;
        let null: bool = u.ratio(1, 8)?;
        let allow_override: bool = u.arbitrary()?;
        let function = match function {
            Some(i) if !null => unsafe { self.pool[i].value.v_obj.cast::<c_void>() },
            _ => null_mut(),
        };
        let array = byte_array(&name);
        let rc =
            unsafe { capi::TVMFFIFunctionSetGlobal(&array, function, c_int::from(allow_override)) };
        if self.globals.contains_key(&name) && !allow_override {
            assert_eq!(rc, -1, "a taken name without override");
            let error = expect_error("SetGlobal", "RuntimeError");
            self.push_object(error.cast(), "a SetGlobal error");
        } else {
            assert_eq!(rc, 0, "SetGlobal fails");
            self.globals.insert(name.clone(), function as usize);
            self.check_metadata(&name, b"");
        }
        Ok(())
    }

    /// `TVMFFIFunctionSetGlobalFromMethodInfo` with any pool value as the method: functions
    /// and None register (with the metadata), anything else is a TypeError; a taken name
    /// without `allow_override` is a RuntimeError.
    fn set_global_from_method_info(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let name = self.global_name(u, false)?;
        let method = self.pick(u)?;
        let metadata = bytes(u, 24)?;
        let allow_override = !self.globals.contains_key(&name) || !u.ratio(1, 8)?;
        let method = method.map_or(TVMFFIAny::NONE, |i| self.pool[i]);
        let info = TVMFFIMethodInfo {
            name: byte_array(&name),
            doc: byte_array(b""),
            metadata: byte_array(&metadata),
            flags: 0,
            method,
        };
        let rc = unsafe {
            capi::TVMFFIFunctionSetGlobalFromMethodInfo(&info, c_int::from(allow_override))
        };
        let is_method = method.type_index == T::FUNCTION.0 || method.type_index == T::NONE.0;
        if !is_method {
            // The method is converted before the name is looked at.
            assert_eq!(rc, -1, "a method of type {}", method.type_index);
            let error = expect_error("SetGlobalFromMethodInfo", "TypeError");
            self.push_object(error.cast(), "a SetGlobal error");
        } else if self.globals.contains_key(&name) && !allow_override {
            assert_eq!(rc, -1, "a taken name without override");
            let error = expect_error("SetGlobalFromMethodInfo", "RuntimeError");
            self.push_object(error.cast(), "a SetGlobal error");
        } else {
            assert_eq!(rc, 0, "SetGlobalFromMethodInfo fails");
            let function = if method.type_index == 0 {
                0
            } else {
                unsafe { method.value.v_obj as usize }
            };
            self.globals.insert(name.clone(), function);
            self.check_metadata(&name, &metadata);
        }
        Ok(())
    }

    /// `ffi.GetGlobalFuncMetadata` of a registered name gives its metadata.
    fn check_metadata(&self, name: &[u8], expected: &[u8]) {
        let getter = get_global(b"ffi.GetGlobalFuncMetadata");
        let array = byte_array(name);
        let mut key = TVMFFIAny::NONE;
        assert_eq!(
            unsafe { capi::TVMFFIStringFromByteArray(&array, &mut key) },
            0
        );
        let metadata = must(
            call_owned(getter, &[key]),
            "the metadata of a registered global",
        );
        assert_eq!(unsafe { string_bytes(&metadata) }, Some(expected));
        unsafe {
            release(metadata);
            release(key);
            capi::TVMFFIObjectDecRef(getter);
        }
    }

    /// `TVMFFIGetTypeInfo` (of a pool value's type or any index) and `TVMFFITypeKeyToIndex`:
    /// the two agree, and the ancestors are consistent.
    fn type_info(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let by_key: bool = u.arbitrary()?;
        let index = match self.pick(u)? {
            Some(i) if u.arbitrary()? => self.pool[i].type_index,
            _ => u.int_in_range(-3..=140)?,
        };
        let key = if u.arbitrary()? {
            u.choose(TYPE_KEYS)?.as_bytes().to_vec()
        } else {
            bytes(u, 16)?
        };
        let index = if by_key {
            let array = byte_array(&key);
            let mut index = -1;
            if unsafe { capi::TVMFFITypeKeyToIndex(&array, &mut index) } != 0 {
                let error = expect_error("TypeKeyToIndex", "InternalError");
                self.push_object(error.cast(), "a type error");
                return Ok(());
            }
            index
        } else {
            index
        };
        let info = unsafe { capi::TVMFFIGetTypeInfo(index) };
        if info.is_null() {
            assert!(!by_key, "a registered key has no type info");
            let error = take_raised("GetTypeInfo");
            self.push_object(error.cast(), "a type error");
            return Ok(());
        }
        let info = unsafe { &*info };
        assert_eq!(info.type_index, index);
        let type_key = unsafe { bytes_of(info.type_key) };
        assert!(!type_key.is_empty());
        if by_key {
            assert_eq!(type_key, &key[..]);
        }
        let array = byte_array(type_key);
        let mut back = -1;
        assert_eq!(unsafe { capi::TVMFFITypeKeyToIndex(&array, &mut back) }, 0);
        assert_eq!(
            back,
            index,
            "{} maps to another index",
            String::from_utf8_lossy(type_key)
        );
        assert!(info.type_depth >= 0 && info.num_fields >= 0 && info.num_methods >= 0);
        for depth in 0..info.type_depth as usize {
            let ancestor = unsafe { *info.type_ancestors.add(depth) };
            assert!(!ancestor.is_null());
            assert_eq!(unsafe { (*ancestor).type_depth }, depth as i32);
        }
        Ok(())
    }

    /// `TVMFFIAnyViewToOwnedAny` of a borrowed C string or byte array: a String or Bytes
    /// with the same contents.
    fn borrowed_to_owned(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let input = bytes(u, 24)?;
        let as_c_string: bool = u.arbitrary()?;
        let text = c_string(&input);
        let array = byte_array(&input);
        let (view, expected, types) = if as_c_string {
            let view = TVMFFIAny {
                type_index: T::RAW_STR.0,
                small_str_len: 0,
                value: TVMFFIAnyValue {
                    v_c_str: text.as_ptr(),
                },
            };
            (view, text.as_bytes(), [T::SMALL_STR.0, T::STR.0])
        } else {
            let view = TVMFFIAny {
                type_index: T::BYTE_ARRAY_PTR.0,
                small_str_len: 0,
                value: TVMFFIAnyValue {
                    v_ptr: core::ptr::from_ref(&array).cast_mut().cast(),
                },
            };
            (view, &input[..], [T::SMALL_BYTES.0, T::BYTES.0])
        };
        let mut out = TVMFFIAny::NONE;
        assert_eq!(unsafe { capi::TVMFFIAnyViewToOwnedAny(&view, &mut out) }, 0);
        unsafe { check_owned(&out, "an owned string") };
        assert!(
            types.contains(&out.type_index),
            "converted to type {}",
            out.type_index
        );
        assert_eq!(unsafe { string_bytes(&out) }, Some(expected));
        self.push(out, "an owned string");
        Ok(())
    }

    /// Streams (set, read back, restored at the end), version, allocator, signals, backtrace
    /// and `TVMFFIBigIntGetContentByteArray` of pool values.
    fn environment(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        match u.int_in_range(0..=3)? {
            0 => {
                let device_type = u.int_in_range(-1..=16)?;
                let device_id = u.int_in_range(-1..=2)?;
                let stream = if u.ratio(1, 4)? {
                    0
                } else {
                    u.int_in_range(1usize..=1 << 20)? * 8
                };
                let stream = stream as TVMFFIStreamHandle;
                let mut original: TVMFFIStreamHandle = null_mut();
                let rc = unsafe {
                    capi::TVMFFIEnvSetStream(device_type, device_id, stream, &mut original)
                };
                if device_type < 0 || device_id < 0 {
                    assert_eq!(rc, -1);
                    let error = expect_error("EnvSetStream", "ValueError");
                    self.push_object(error.cast(), "a stream error");
                } else {
                    assert_eq!(rc, 0);
                    self.streams
                        .entry((device_type, device_id))
                        .or_insert(original);
                    let now = unsafe { capi::TVMFFIEnvGetStream(device_type, device_id) };
                    assert_eq!(now, stream, "the stream does not read back");
                }
            }
            1 => {
                let mut version = pactum::sys::tvm_ffi::TVMFFIVersion::default();
                unsafe { capi::TVMFFIGetVersion(&mut version) };
                assert_eq!((version.major, version.minor), (0, 1));
                assert!(!unsafe { capi::TVMFFIGetCustomAllocator() }.is_null());
                assert_eq!(unsafe { capi::TVMFFIEnvCheckSignals() }, 0);
            }
            2 => {
                let file = c_string(&bytes(u, 12)?);
                let line = u.arbitrary()?;
                let trace =
                    unsafe { capi::TVMFFIBacktrace(file.as_ptr(), line, c"fuzz".as_ptr(), 0) };
                assert!(!trace.is_null());
                let text = unsafe { bytes_of(*trace) };
                let mut first = b"  File \"".to_vec();
                first.extend_from_slice(file.as_bytes());
                first.extend_from_slice(format!("\", line {line}, in fuzz\n").as_bytes());
                assert!(
                    text.starts_with(&first),
                    "backtrace does not start with the given frame"
                );
            }
            _ => {
                let Some(i) = self.pick(u)? else {
                    return Ok(());
                };
                let value = self.pool[i];
                let content = unsafe { capi::TVMFFIBigIntGetContentByteArray(&value) };
                match T(value.type_index) {
                    T::INT => {
                        assert_eq!(
                            unsafe { bytes_of(content) },
                            &unsafe { value.value.v_int64 }.to_ne_bytes()
                        )
                    }
                    T::BIG_INT => assert!(content.size >= 16 && content.size % 8 == 0),
                    _ => assert_eq!(content.size, 0),
                }
            }
        }
        Ok(())
    }

    /// Releases everything the input made and checks that nothing is left behind.
    fn finish(mut self) {
        self.check_pool();
        for value in self.pool.drain(..) {
            unsafe { release(value) };
        }
        // Globals this input registered (the registry holds their functions).
        let remove = RUNTIME.with(|runtime| runtime.remove_global) as *mut c_void;
        for name in self.globals.keys() {
            let array = byte_array(name);
            let mut key = TVMFFIAny::NONE;
            assert_eq!(
                unsafe { capi::TVMFFIStringFromByteArray(&array, &mut key) },
                0
            );
            let removed = must(call_owned(remove, &[key]), "FunctionRemoveGlobal");
            assert_eq!(removed.type_index, T::BOOL.0);
            assert_eq!(
                unsafe { removed.value.v_int64 },
                1,
                "a registered global was missing"
            );
            unsafe { release(key) };
        }
        // A raised error left for the end.
        let mut error: *mut c_void = null_mut();
        unsafe { capi::TVMFFIErrorMoveFromRaised(&mut error) };
        unsafe { capi::TVMFFIObjectDecRef(error) };
        for (&(device_type, device_id), &stream) in &self.streams {
            let rc =
                unsafe { capi::TVMFFIEnvSetStream(device_type, device_id, stream, null_mut()) };
            assert_eq!(rc, 0);
        }
        for (name, counter) in [
            ("callback states", &CALLBACKS_LIVE),
            ("NULL-self functions", &NULL_SELF_LIVE),
            ("opaque handles", &OPAQUE_LIVE),
            ("DLPack tensors", &MANAGED_LIVE),
        ] {
            assert_eq!(
                counter.load(Ordering::SeqCst),
                0,
                "{name} not deleted (or deleted twice) after everything was released"
            );
        }
        RUNTIME.with(|runtime| {
            let now = runtime.counts();
            for ((name, before), (_, after)) in runtime.baseline.iter().zip(&now) {
                assert_eq!(before, after, "the reference count of {name} changed");
            }
        });
    }
}
