//! Mirror of `tvm/ffi/c_api.h` (apache-tvm-ffi 0.1.15.post2, header version 0.1.16), plus the
//! two object layouts that C++ code inlines but the C header does not spell out
//! ([`TVMFFIMapCell`] for `ffi.Map`/`ffi.Dict`).

use core::ffi::{c_char, c_int, c_void};

use crate::dlpack::{DLDataType, DLDevice};

/// `TVM_FFI_VERSION_MAJOR`.
pub const TVM_FFI_VERSION_MAJOR: u32 = 0;
/// `TVM_FFI_VERSION_MINOR`.
pub const TVM_FFI_VERSION_MINOR: u32 = 1;
/// `TVM_FFI_VERSION_PATCH` (the 0.1.15.post2 wheel reports 16).
pub const TVM_FFI_VERSION_PATCH: u32 = 16;

/// `TVMFFIVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TVMFFIVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Patch version.
    pub patch: u32,
}

/// `TVMFFITypeIndex` (an open C enum stored as `int32_t`): runtime type tags shared by
/// [`TVMFFIAny::type_index`] and [`TVMFFIObject::type_index`].
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TVMFFITypeIndex(pub i32);

impl TVMFFITypeIndex {
    /// `kTVMFFIAny`: only in annotations, never stored in a value.
    pub const ANY: Self = Self(-1);
    /// `kTVMFFINone`.
    pub const NONE: Self = Self(0);
    /// `kTVMFFIInt`: `v_int64`.
    pub const INT: Self = Self(1);
    /// `kTVMFFIBool`: `v_int64` is 0 or 1.
    pub const BOOL: Self = Self(2);
    /// `kTVMFFIFloat`: `v_float64`.
    pub const FLOAT: Self = Self(3);
    /// `kTVMFFIOpaquePtr`: `v_ptr`, borrowed.
    pub const OPAQUE_PTR: Self = Self(4);
    /// `kTVMFFIDataType`: `v_dtype`.
    pub const DATA_TYPE: Self = Self(5);
    /// `kTVMFFIDevice`: `v_device`.
    pub const DEVICE: Self = Self(6);
    /// `kTVMFFIDLTensorPtr`: `v_ptr` is a borrowed `DLTensor*`.
    pub const DL_TENSOR_PTR: Self = Self(7);
    /// `kTVMFFIRawStr`: `v_c_str`, borrowed, NUL-terminated; never in an owned Any.
    pub const RAW_STR: Self = Self(8);
    /// `kTVMFFIByteArrayPtr`: `v_ptr` is a borrowed `TVMFFIByteArray*`.
    pub const BYTE_ARRAY_PTR: Self = Self(9);
    /// `kTVMFFIObjectRValueRef`: `v_ptr` points at a slot holding an owned object pointer.
    pub const OBJECT_RVALUE_REF: Self = Self(10);
    /// `kTVMFFISmallStr`: up to 7 bytes inline in `v_bytes`, length in `small_str_len`.
    pub const SMALL_STR: Self = Self(11);
    /// `kTVMFFISmallBytes`: like [`Self::SMALL_STR`] for bytes.
    pub const SMALL_BYTES: Self = Self(12);
    /// `kTVMFFIUnchanged`: structural-mutation marker.
    pub const UNCHANGED: Self = Self(13);
    /// `kTVMFFIStaticObjectBegin`: first object type index.
    pub const STATIC_OBJECT_BEGIN: Self = Self(64);
    /// `kTVMFFIObject`: the root object type (`ffi.Object`).
    pub const OBJECT: Self = Self(64);
    /// `kTVMFFIStr`: `ffi.String`.
    pub const STR: Self = Self(65);
    /// `kTVMFFIBytes`: `ffi.Bytes`.
    pub const BYTES: Self = Self(66);
    /// `kTVMFFIError`: `ffi.Error`.
    pub const ERROR: Self = Self(67);
    /// `kTVMFFIFunction`: `ffi.Function`.
    pub const FUNCTION: Self = Self(68);
    /// `kTVMFFIShape`: `ffi.Shape`.
    pub const SHAPE: Self = Self(69);
    /// `kTVMFFITensor`: `ffi.Tensor`.
    pub const TENSOR: Self = Self(70);
    /// `kTVMFFIArray`: `ffi.Array`.
    pub const ARRAY: Self = Self(71);
    /// `kTVMFFIMap`: `ffi.Map`.
    pub const MAP: Self = Self(72);
    /// `kTVMFFIModule`: `ffi.Module`.
    pub const MODULE: Self = Self(73);
    /// `kTVMFFIOpaquePyObject`: `ffi.OpaquePyObject`.
    pub const OPAQUE_PY_OBJECT: Self = Self(74);
    /// `kTVMFFIList`: `ffi.List`.
    pub const LIST: Self = Self(75);
    /// `kTVMFFIDict`: `ffi.Dict`.
    pub const DICT: Self = Self(76);
    /// `kTVMFFIVisitInterrupt`.
    pub const VISIT_INTERRUPT: Self = Self(77);
    /// `kTVMFFIBigInt`: `ffi.BigInt`.
    pub const BIG_INT: Self = Self(78);
    /// `kTVMFFIStaticObjectEnd`.
    pub const STATIC_OBJECT_END: Self = Self(79);
    /// `kTVMFFIDynObjectBegin`: first index allocated at runtime.
    pub const DYN_OBJECT_BEGIN: Self = Self(128);
}

/// `TVMFFIObjectHandle`.
pub type TVMFFIObjectHandle = *mut c_void;

/// `kTVMFFIObjectDeleterFlagBitMaskStrong`: strong count reached zero; destroy, keep memory.
pub const TVMFFI_OBJECT_DELETER_FLAG_STRONG: c_int = 1;
/// `kTVMFFIObjectDeleterFlagBitMaskWeak`: weak count reached zero; free the memory.
pub const TVMFFI_OBJECT_DELETER_FLAG_WEAK: c_int = 2;
/// `kTVMFFIObjectDeleterFlagBitMaskBoth`: both at once.
pub const TVMFFI_OBJECT_DELETER_FLAG_BOTH: c_int = 3;

/// One strong reference in `combined_ref_count` (low 32 bits).
pub const TVMFFI_STRONG_REF_ONE: u64 = 1;
/// One weak reference in `combined_ref_count` (high 32 bits).
pub const TVMFFI_WEAK_REF_ONE: u64 = 1 << 32;
/// `combined_ref_count` of a fresh object: one strong reference plus the weak reference
/// that all strong holders share.
pub const TVMFFI_FRESH_REF_COUNT: u64 = TVMFFI_STRONG_REF_ONE | TVMFFI_WEAK_REF_ONE;

/// Object deleter: `void (*)(void* self, int flags)`.
pub type TVMFFIObjectDeleter = Option<unsafe extern "C" fn(self_: *mut c_void, flags: c_int)>;

/// `TVMFFIObject`: the 24-byte header every heap object starts with.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIObject {
    /// Strong count in the low 32 bits, weak count in the high 32 bits. Updated atomically.
    pub combined_ref_count: u64,
    /// Runtime type index.
    pub type_index: i32,
    /// Always zero.
    pub padding: u32,
    /// Called when a count reaches zero (the C union with an `int64_t` only fixes alignment).
    pub deleter: TVMFFIObjectDeleter,
}

/// The 8-byte value half of [`TVMFFIAny`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union TVMFFIAnyValue {
    /// Int and Bool.
    pub v_int64: i64,
    /// Float.
    pub v_float64: f64,
    /// Typeless pointers (OpaquePtr, DLTensorPtr, ByteArrayPtr, ObjectRValueRef).
    pub v_ptr: *mut c_void,
    /// RawStr.
    pub v_c_str: *const c_char,
    /// Objects (type index >= 64).
    pub v_obj: *mut TVMFFIObject,
    /// DataType.
    pub v_dtype: DLDataType,
    /// Device.
    pub v_device: DLDevice,
    /// SmallStr and SmallBytes contents.
    pub v_bytes: [u8; 8],
    /// The raw word, used for hashing and equality.
    pub v_uint64: u64,
}

impl core::fmt::Debug for TVMFFIAnyValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: every field is 8 bytes of plain data; reading the raw word is always valid.
        let word = unsafe { self.v_uint64 };
        write!(f, "{word:#018x}")
    }
}

/// `TVMFFIAny`: the 16-byte tagged value passed across the ABI.
///
/// Every byte not used by the stored type must be zero: hashing and equality compare raw words.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIAny {
    /// Type tag ([`TVMFFITypeIndex`] as its raw value).
    pub type_index: i32,
    /// The C union of `zero_padding` and `small_str_len`: the length for SmallStr/SmallBytes,
    /// zero for every other type.
    pub small_str_len: u32,
    /// The payload.
    pub value: TVMFFIAnyValue,
}

impl TVMFFIAny {
    /// The None value (all zero).
    pub const NONE: Self = Self {
        type_index: 0,
        small_str_len: 0,
        value: TVMFFIAnyValue { v_uint64: 0 },
    };
}

/// `TVMFFIByteArray`: a borrowed span of bytes (used by String, Bytes and the C API).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIByteArray {
    /// First byte (may be dangling when `size` is 0).
    pub data: *const c_char,
    /// Number of bytes.
    pub size: usize,
}

/// `TVMFFIShapeCell`: follows the header of a Shape object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIShapeCell {
    /// The extents.
    pub data: *const i64,
    /// Number of extents.
    pub size: usize,
}

/// `TVMFFISeqCell`: follows the header of Array and List objects.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFISeqCell {
    /// First element; elements are owned `TVMFFIAny` values.
    pub data: *mut c_void,
    /// Elements in use.
    pub size: i64,
    /// Elements allocated.
    pub capacity: i64,
    /// Frees `data` when it was allocated apart from the object (List); NULL when the
    /// elements live inside the object allocation (Array).
    pub data_deleter: Option<unsafe extern "C" fn(data: *mut c_void)>,
}

/// Cell of the C++ `MapBaseObj` (Map and Dict objects), which C++ code built from the headers
/// reads and writes inline. It is not declared in `c_api.h`.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIMapCell {
    /// Slot storage: key/value pairs (small form) or slot blocks (dense form).
    pub data: *mut c_void,
    /// Number of entries.
    pub size: u64,
    /// Slot count; the most significant bit marks the small (linear) form.
    pub slots: u64,
    /// Frees `data` when it was allocated apart from the object; NULL when inline.
    pub data_deleter: Option<unsafe extern "C" fn(data: *mut c_void)>,
}

/// Most significant bit of [`TVMFFIMapCell::slots`]: the map uses the small (linear) form.
pub const TVMFFI_MAP_SMALL_TAG: u64 = 1 << 63;

/// `kTVMFFIBacktraceUpdateModeReplace`.
pub const TVMFFI_BACKTRACE_UPDATE_MODE_REPLACE: i32 = 0;
/// `kTVMFFIBacktraceUpdateModeAppend`.
pub const TVMFFI_BACKTRACE_UPDATE_MODE_APPEND: i32 = 1;

/// `TVMFFIErrorCell`: follows the header of an Error object.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIErrorCell {
    /// Error kind, e.g. `ValueError`.
    pub kind: TVMFFIByteArray,
    /// Message.
    pub message: TVMFFIByteArray,
    /// Backtrace, most recent call first.
    pub backtrace: TVMFFIByteArray,
    /// Replaces or appends to the backtrace (mode `TVMFFI_BACKTRACE_UPDATE_MODE_*`).
    pub update_backtrace: Option<
        unsafe extern "C" fn(
            self_: TVMFFIObjectHandle,
            backtrace: *const TVMFFIByteArray,
            update_mode: i32,
        ),
    >,
    /// Owned Error that caused this one, or NULL.
    pub cause_chain: TVMFFIObjectHandle,
    /// Owned object with extra context, or NULL.
    pub extra_context: TVMFFIObjectHandle,
}

/// `TVMFFISafeCallType`: the packed-function calling convention.
///
/// `args` are borrowed; `result` must hold a non-object value (normally None) on entry and
/// holds an owned value on success. Returns 0, or -1 with the error in the thread-local slot.
pub type TVMFFISafeCallType = Option<
    unsafe extern "C" fn(
        handle: *mut c_void,
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
    ) -> c_int,
>;

/// `TVMFFIFunctionCell`: follows the header of a Function object.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIFunctionCell {
    /// The C entry point; receives the function object as `handle`.
    pub safe_call: TVMFFISafeCallType,
    /// C++ throwing entry point; NULL for functions not written in C++.
    pub cpp_call: *mut c_void,
}

/// `TVMFFIOpaqueObjectCell`: follows the header of an opaque object.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIOpaqueObjectCell {
    /// The wrapped foreign handle (a `PyObject*` for Python).
    pub handle: *mut c_void,
}

/// `TVMFFIObjectAllocHeader`: placed right before objects returned by a custom allocator.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIObjectAllocHeader {
    /// Reclaims the allocation given the object body pointer, or NULL.
    pub delete_space: Option<unsafe extern "C" fn(ptr: *mut c_void)>,
}

/// `TVMFFICustomAllocator`.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFICustomAllocator {
    /// Allocates an object body preceded by a [`TVMFFIObjectAllocHeader`].
    pub allocate: Option<
        unsafe extern "C" fn(
            size: usize,
            alignment: usize,
            type_index: i32,
            context: *mut c_void,
        ) -> *mut c_void,
    >,
    /// Passed unchanged to `allocate`.
    pub context: *mut c_void,
}

/// `TVMFFIFieldGetter`.
pub type TVMFFIFieldGetter =
    Option<unsafe extern "C" fn(field: *mut c_void, result: *mut TVMFFIAny) -> c_int>;
/// `TVMFFIFieldSetter`.
pub type TVMFFIFieldSetter =
    Option<unsafe extern "C" fn(field: *mut c_void, value: *const TVMFFIAny) -> c_int>;
/// `TVMFFIObjectCreator`.
pub type TVMFFIObjectCreator =
    Option<unsafe extern "C" fn(result: *mut TVMFFIObjectHandle) -> c_int>;

/// `TVMFFIFieldFlagBitMask` values.
pub mod field_flags {
    /// `kTVMFFIFieldFlagBitMaskWritable`.
    pub const WRITABLE: i64 = 1 << 0;
    /// `kTVMFFIFieldFlagBitMaskHasDefault`.
    pub const HAS_DEFAULT: i64 = 1 << 1;
    /// `kTVMFFIFieldFlagBitMaskIsStaticMethod`.
    pub const IS_STATIC_METHOD: i64 = 1 << 2;
    /// `kTVMFFIFieldFlagBitMaskSEqHashIgnore`.
    pub const SEQ_HASH_IGNORE: i64 = 1 << 3;
    /// `kTVMFFIFieldFlagBitMaskSEqHashDefPattern`.
    pub const SEQ_HASH_DEF_PATTERN: i64 = 1 << 4;
    /// `kTVMFFIFieldFlagBitMaskDefaultFromFactory`.
    pub const DEFAULT_FROM_FACTORY: i64 = 1 << 5;
    /// `kTVMFFIFieldFlagBitMaskReprOff`.
    pub const REPR_OFF: i64 = 1 << 6;
    /// `kTVMFFIFieldFlagBitMaskCompareOff`.
    pub const COMPARE_OFF: i64 = 1 << 7;
    /// `kTVMFFIFieldFlagBitMaskHashOff`.
    pub const HASH_OFF: i64 = 1 << 8;
    /// `kTVMFFIFieldFlagBitMaskInitOff`.
    pub const INIT_OFF: i64 = 1 << 9;
    /// `kTVMFFIFieldFlagBitMaskKwOnly`.
    pub const KW_ONLY: i64 = 1 << 10;
    /// `kTVMFFIFieldFlagBitSetterIsFunctionObj`.
    pub const SETTER_IS_FUNCTION_OBJ: i64 = 1 << 11;
    /// `kTVMFFIFieldFlagBitMaskSEqHashDefSimple`.
    pub const SEQ_HASH_DEF_SIMPLE: i64 = 1 << 12;
}

/// `TVMFFISEqHashKind` (open C enum).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TVMFFISEqHashKind(pub i32);

impl TVMFFISEqHashKind {
    /// `kTVMFFISEqHashKindUnsupported`.
    pub const UNSUPPORTED: Self = Self(0);
    /// `kTVMFFISEqHashKindTreeNode`.
    pub const TREE_NODE: Self = Self(1);
    /// `kTVMFFISEqHashKindFreeVar`.
    pub const FREE_VAR: Self = Self(2);
    /// `kTVMFFISEqHashKindDAGNode`.
    pub const DAG_NODE: Self = Self(3);
    /// `kTVMFFISEqHashKindConstTreeNode`.
    pub const CONST_TREE_NODE: Self = Self(4);
    /// `kTVMFFISEqHashKindUniqueInstance`.
    pub const UNIQUE_INSTANCE: Self = Self(5);
}

/// `TVMFFIDefRegionKind` values.
pub mod def_region_kind {
    /// `kTVMFFIDefRegionKindNone`.
    pub const NONE: i32 = 0;
    /// `kTVMFFIDefRegionKindPattern`.
    pub const PATTERN: i32 = 1;
    /// `kTVMFFIDefRegionKindSimple`.
    pub const SIMPLE: i32 = 2;
}

/// `TVMFFIFieldInfo`: reflection record of one object field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIFieldInfo {
    /// Field name.
    pub name: TVMFFIByteArray,
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// Structured metadata as JSON.
    pub metadata: TVMFFIByteArray,
    /// [`field_flags`] bits.
    pub flags: i64,
    /// Size of the field in bytes.
    pub size: i64,
    /// Alignment of the field.
    pub alignment: i64,
    /// Offset of the field from the object start.
    pub offset: i64,
    /// Reads the field.
    pub getter: TVMFFIFieldGetter,
    /// A [`TVMFFIFieldSetter`] or, with `SETTER_IS_FUNCTION_OBJ`, a Function object handle.
    pub setter: *mut c_void,
    /// Default value or factory (an AnyView).
    pub default_value_or_factory: TVMFFIAny,
    /// Static type index of the declared field type.
    pub field_static_type_index: i32,
}

/// `TVMFFIMethodInfo`: reflection record of one method (or a global function).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIMethodInfo {
    /// Method name.
    pub name: TVMFFIByteArray,
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// Structured metadata as JSON.
    pub metadata: TVMFFIByteArray,
    /// Flags ([`field_flags::IS_STATIC_METHOD`]).
    pub flags: i64,
    /// The method as a Function, stored as an AnyView.
    pub method: TVMFFIAny,
}

/// `TVMFFITypeMetadata`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeMetadata {
    /// Docstring of the type.
    pub doc: TVMFFIByteArray,
    /// Creates an empty instance.
    pub creator: TVMFFIObjectCreator,
    /// Total object size if fixed, else 0.
    pub total_size: i32,
    /// Structural equality/hash kind.
    pub structural_eq_hash_kind: TVMFFISEqHashKind,
}

/// `TVMFFITypeAttrColumn`: one attribute for every type index in a range.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeAttrColumn {
    /// `data[type_index - begin_index]`, AnyView values (None where unset).
    pub data: *const TVMFFIAny,
    /// Number of entries.
    pub size: i32,
    /// Type index of `data[0]`.
    pub begin_index: i32,
}

/// `TVMFFITypeInfo`: runtime type information.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeInfo {
    /// The type index.
    pub type_index: i32,
    /// Number of ancestors.
    pub type_depth: i32,
    /// Unique type key.
    pub type_key: TVMFFIByteArray,
    /// `type_ancestors[d]` is the ancestor at depth `d` (`type_depth` entries).
    pub type_ancestors: *const *const TVMFFITypeInfo,
    /// Cached hash of the type key.
    pub type_key_hash: u64,
    /// Number of reflected fields.
    pub num_fields: i32,
    /// Number of reflected methods.
    pub num_methods: i32,
    /// Reflected fields.
    pub fields: *const TVMFFIFieldInfo,
    /// Reflected methods.
    pub methods: *const TVMFFIMethodInfo,
    /// Extra metadata, or NULL.
    pub metadata: *const TVMFFITypeMetadata,
}

/// `TVMFFIStreamHandle` (from `c_env_api.h`).
pub type TVMFFIStreamHandle = *mut c_void;
