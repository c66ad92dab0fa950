//! The 50 C functions exported by `libtvm_ffi.so` (declared in `tvm/ffi/c_api.h` and
//! `tvm/ffi/extra/c_env_api.h`), listed once.
//!
//! [`tvm_ffi_c_api!`](crate::tvm_ffi_c_api) hands the list to a callback macro, so the function table
//! ([`TVMFFICApi`]), the exports of the `pactum-capi` library and the forwarder stay in the
//! same order with the same signatures.

use core::ffi::{c_char, c_int, c_void};

use crate::dlpack::{
    DLDataType, DLManagedTensor, DLManagedTensorVersioned, DLPackManagedTensorAllocator, DLTensor,
};
use crate::tvm_ffi::*;

/// Invokes `$callback! { $(fn NAME(ARGS) -> RET;)* }` with every C API function in export order.
#[macro_export]
macro_rules! tvm_ffi_c_api {
    ($callback:ident) => {
        $callback! {
            fn TVMFFIGetVersion(out_version: *mut TVMFFIVersion) -> ();
            fn TVMFFIObjectIncRef(obj: TVMFFIObjectHandle) -> c_int;
            fn TVMFFIObjectDecRef(obj: TVMFFIObjectHandle) -> c_int;
            fn TVMFFIObjectCreateOpaque(handle: *mut c_void, type_index: i32, deleter: Option<unsafe extern "C" fn(*mut c_void)>, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIGetCustomAllocator() -> *mut TVMFFICustomAllocator;
            fn TVMFFISetCustomAllocator(allocator: *mut TVMFFICustomAllocator) -> c_int;
            fn TVMFFITypeKeyToIndex(type_key: *const TVMFFIByteArray, out_tindex: *mut i32) -> c_int;
            fn TVMFFIFunctionCreate(self_: *mut c_void, safe_call: TVMFFISafeCallType, deleter: Option<unsafe extern "C" fn(*mut c_void)>, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIFunctionGetGlobal(name: *const TVMFFIByteArray, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIAnyViewToOwnedAny(any_view: *const TVMFFIAny, out: *mut TVMFFIAny) -> c_int;
            fn TVMFFIFunctionCall(func: TVMFFIObjectHandle, args: *mut TVMFFIAny, num_args: i32, result: *mut TVMFFIAny) -> c_int;
            fn TVMFFIErrorMoveFromRaised(result: *mut TVMFFIObjectHandle) -> ();
            fn TVMFFIErrorSetRaised(error: TVMFFIObjectHandle) -> ();
            fn TVMFFIErrorSetRaisedFromCStr(kind: *const c_char, message: *const c_char) -> ();
            fn TVMFFIErrorSetRaisedFromCStrParts(kind: *const c_char, message_parts: *const *const c_char, num_parts: i32) -> ();
            fn TVMFFIErrorCreate(kind: *const TVMFFIByteArray, message: *const TVMFFIByteArray, backtrace: *const TVMFFIByteArray, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIErrorCreateWithCauseAndExtraContext(kind: *const TVMFFIByteArray, message: *const TVMFFIByteArray, backtrace: *const TVMFFIByteArray, cause_chain: TVMFFIObjectHandle, extra_context: TVMFFIObjectHandle, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFITensorFromDLPack(from: *mut DLManagedTensor, require_alignment: i32, require_contiguous: i32, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFITensorToDLPack(from: TVMFFIObjectHandle, out: *mut *mut DLManagedTensor) -> c_int;
            fn TVMFFITensorFromDLPackVersioned(from: *mut DLManagedTensorVersioned, require_alignment: i32, require_contiguous: i32, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFITensorToDLPackVersioned(from: TVMFFIObjectHandle, out: *mut *mut DLManagedTensorVersioned) -> c_int;
            fn TVMFFITensorCreateUnsafeView(source: TVMFFIObjectHandle, prototype: *const DLTensor, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIStringFromByteArray(input: *const TVMFFIByteArray, out: *mut TVMFFIAny) -> c_int;
            fn TVMFFIBytesFromByteArray(input: *const TVMFFIByteArray, out: *mut TVMFFIAny) -> c_int;
            fn TVMFFIBigIntFromByteArray(input: *const TVMFFIByteArray, out: *mut TVMFFIAny) -> c_int;
            fn TVMFFIBigIntGetContentByteArray(value: *const TVMFFIAny) -> TVMFFIByteArray;
            fn TVMFFIDataTypeFromString(str: *const TVMFFIByteArray, out: *mut DLDataType) -> c_int;
            fn TVMFFIDataTypeToString(dtype: *const DLDataType, out: *mut TVMFFIAny) -> c_int;
            fn TVMFFIFunctionSetGlobal(name: *const TVMFFIByteArray, f: TVMFFIObjectHandle, allow_override: c_int) -> c_int;
            fn TVMFFIFunctionSetGlobalFromMethodInfo(method_info: *const TVMFFIMethodInfo, allow_override: c_int) -> c_int;
            fn TVMFFITypeRegisterField(type_index: i32, info: *const TVMFFIFieldInfo) -> c_int;
            fn TVMFFITypeRegisterMethod(type_index: i32, info: *const TVMFFIMethodInfo) -> c_int;
            fn TVMFFITypeRegisterMetadata(type_index: i32, metadata: *const TVMFFITypeMetadata) -> c_int;
            fn TVMFFITypeRegisterAttr(type_index: i32, attr_name: *const TVMFFIByteArray, attr_value: *const TVMFFIAny) -> c_int;
            fn TVMFFIGetTypeAttrColumn(attr_name: *const TVMFFIByteArray) -> *const TVMFFITypeAttrColumn;
            fn TVMFFIBacktrace(filename: *const c_char, lineno: c_int, func: *const c_char, cross_ffi_boundary: c_int) -> *const TVMFFIByteArray;
            fn TVMFFITypeGetOrAllocIndex(type_key: *const TVMFFIByteArray, static_type_index: i32, type_depth: i32, num_child_slots: i32, child_slots_can_overflow: i32, parent_type_index: i32) -> i32;
            fn TVMFFIGetTypeInfo(type_index: i32) -> *const TVMFFITypeInfo;
            fn TVMFFIHandleInitOnce(handle_addr: *mut *mut c_void, init_func: Option<unsafe extern "C" fn(*mut *mut c_void) -> c_int>) -> c_int;
            fn TVMFFIHandleDeinitOnce(handle_addr: *mut *mut c_void, deinit_func: Option<unsafe extern "C" fn(*mut c_void) -> c_int>) -> c_int;
            fn TVMFFIEnvSetStream(device_type: i32, device_id: i32, stream: TVMFFIStreamHandle, opt_out_original_stream: *mut TVMFFIStreamHandle) -> c_int;
            fn TVMFFIEnvGetStream(device_type: i32, device_id: i32) -> TVMFFIStreamHandle;
            fn TVMFFIEnvSetDLPackManagedTensorAllocator(allocator: DLPackManagedTensorAllocator, write_to_global_context: c_int, opt_out_original_allocator: *mut DLPackManagedTensorAllocator) -> c_int;
            fn TVMFFIEnvGetDLPackManagedTensorAllocator() -> DLPackManagedTensorAllocator;
            fn TVMFFIEnvTensorAlloc(prototype: *mut DLTensor, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIEnvCheckSignals() -> c_int;
            fn TVMFFIEnvRegisterCAPI(name: *const c_char, symbol: *mut c_void) -> c_int;
            fn TVMFFIEnvModLookupFromImports(library_ctx: TVMFFIObjectHandle, func_name: *const c_char, out: *mut TVMFFIObjectHandle) -> c_int;
            fn TVMFFIEnvModRegisterContextSymbol(name: *const c_char, symbol: *mut c_void) -> c_int;
            fn TVMFFIEnvModRegisterSystemLibSymbol(name: *const c_char, symbol: *mut c_void) -> c_int;
        }
    };
}

macro_rules! define_table {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        /// Every C API function as a function pointer, in export order.
        ///
        /// A table describes one implementation of the C API: the official `libtvm_ffi.so`
        /// (resolved with `dlsym`) or pactum's own runtime.
        #[allow(non_snake_case)]
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct TVMFFICApi {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg: $ty),*) -> $ret,
            )*
        }

        /// The exported symbol names, in [`TVMFFICApi`] field order.
        pub const TVM_FFI_C_API_NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

tvm_ffi_c_api!(define_table);

/// Number of functions in the C API.
pub const TVM_FFI_C_API_LEN: usize = TVM_FFI_C_API_NAMES.len();

const _: () = assert!(TVM_FFI_C_API_LEN == 50);
const _: () = assert!(
    core::mem::size_of::<TVMFFICApi>() == TVM_FFI_C_API_LEN * core::mem::size_of::<*const c_void>()
);
