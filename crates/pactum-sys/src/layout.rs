//! Compile-time checks that every struct matches the C layout of the official headers
//! (x86_64 / 64-bit; sizes and offsets from `../shared/research/tvm_ffi_facts.md` §3).

use core::mem::{align_of, offset_of, size_of};

use crate::dlpack::*;
use crate::tvm_ffi::*;

macro_rules! assert_layout {
    ($ty:ty, size = $size:expr, align = $align:expr $(, $field:ident @ $offset:expr)* $(,)?) => {
        const _: () = {
            assert!(size_of::<$ty>() == $size, concat!("size of ", stringify!($ty)));
            assert!(align_of::<$ty>() == $align, concat!("align of ", stringify!($ty)));
            $(assert!(offset_of!($ty, $field) == $offset, concat!(stringify!($ty), ".", stringify!($field)));)*
        };
    };
}

// DLPack 1.3.
assert_layout!(DLPackVersion, size = 8, align = 4, major @ 0, minor @ 4);
assert_layout!(DLDevice, size = 8, align = 4, device_type @ 0, device_id @ 4);
assert_layout!(DLDataType, size = 4, align = 2, code @ 0, bits @ 1, lanes @ 2);

#[cfg(target_pointer_width = "64")]
mod pointer_width_64 {
    use super::*;

    assert_layout!(DLTensor, size = 48, align = 8,
        data @ 0, device @ 8, ndim @ 16, dtype @ 20, shape @ 24, strides @ 32, byte_offset @ 40);
    assert_layout!(DLManagedTensor, size = 64, align = 8, dl_tensor @ 0, manager_ctx @ 48, deleter @ 56);
    assert_layout!(DLManagedTensorVersioned, size = 80, align = 8,
        version @ 0, manager_ctx @ 8, deleter @ 16, flags @ 24, dl_tensor @ 32);

    // TVM FFI.
    assert_layout!(TVMFFIVersion, size = 12, align = 4, major @ 0, minor @ 4, patch @ 8);
    assert_layout!(TVMFFIObject, size = 24, align = 8,
        combined_ref_count @ 0, type_index @ 8, padding @ 12, deleter @ 16);
    assert_layout!(TVMFFIAny, size = 16, align = 8, type_index @ 0, small_str_len @ 4, value @ 8);
    assert_layout!(TVMFFIAnyValue, size = 8, align = 8);
    assert_layout!(TVMFFIByteArray, size = 16, align = 8, data @ 0, size @ 8);
    assert_layout!(TVMFFIShapeCell, size = 16, align = 8, data @ 0, size @ 8);
    assert_layout!(TVMFFISeqCell, size = 32, align = 8, data @ 0, size @ 8, capacity @ 16, data_deleter @ 24);
    assert_layout!(TVMFFIMapCell, size = 32, align = 8, data @ 0, size @ 8, slots @ 16, data_deleter @ 24);
    assert_layout!(TVMFFIErrorCell, size = 72, align = 8,
        kind @ 0, message @ 16, backtrace @ 32, update_backtrace @ 48, cause_chain @ 56, extra_context @ 64);
    assert_layout!(TVMFFIFunctionCell, size = 16, align = 8, safe_call @ 0, cpp_call @ 8);
    assert_layout!(TVMFFIOpaqueObjectCell, size = 8, align = 8, handle @ 0);
    assert_layout!(TVMFFIObjectAllocHeader, size = 8, align = 8, delete_space @ 0);
    assert_layout!(TVMFFICustomAllocator, size = 16, align = 8, allocate @ 0, context @ 8);
    assert_layout!(TVMFFIFieldInfo, size = 120, align = 8,
        name @ 0, doc @ 16, metadata @ 32, flags @ 48, size @ 56, alignment @ 64, offset @ 72,
        getter @ 80, setter @ 88, default_value_or_factory @ 96, field_static_type_index @ 112);
    assert_layout!(TVMFFIMethodInfo, size = 72, align = 8, name @ 0, doc @ 16, metadata @ 32, flags @ 48, method @ 56);
    assert_layout!(TVMFFITypeMetadata, size = 32, align = 8, doc @ 0, creator @ 16, total_size @ 24, structural_eq_hash_kind @ 28);
    assert_layout!(TVMFFITypeAttrColumn, size = 16, align = 8, data @ 0, size @ 8, begin_index @ 12);
    assert_layout!(TVMFFITypeInfo, size = 72, align = 8,
        type_index @ 0, type_depth @ 4, type_key @ 8, type_ancestors @ 24, type_key_hash @ 32,
        num_fields @ 40, num_methods @ 44, fields @ 48, methods @ 56, metadata @ 64);
}

// MLIR memref descriptors (mlir_facts.md §4: 24, 40 and 56 bytes for ranks 0, 1 and 2).
#[cfg(target_pointer_width = "64")]
mod memref_descriptors {
    use super::*;
    use crate::mlir::*;

    assert_layout!(MemRefDescriptor<0>, size = 24, align = 8, allocated @ 0, aligned @ 8, offset @ 16);
    assert_layout!(MemRefDescriptor<1>, size = 40, align = 8, offset @ 16, sizes @ 24, strides @ 32);
    assert_layout!(MemRefDescriptor<2>, size = 56, align = 8, offset @ 16, sizes @ 24, strides @ 40);
    assert_layout!(UnrankedMemRefDescriptor, size = 16, align = 8, rank @ 0, descriptor @ 8);
    const _: () = assert!(ranked_descriptor_bytes(2) == size_of::<MemRefDescriptor<2>>());
}

// IREE's executable library ABI, version 6 (offsets checked against an IREE 3.13 library).
#[cfg(target_pointer_width = "64")]
mod iree_hal_64 {
    use super::*;
    use crate::iree_hal::*;

    assert_layout!(IreeHalExecutableLibraryHeader, size = 24, align = 8,
        version @ 0, name @ 8, features @ 16, sanitizer @ 20);
    assert_layout!(IreeHalExecutableEnvironmentV0, size = 96, align = 8,
        constants @ 0, import_thunk @ 8, import_funcs @ 16, import_contexts @ 24, processor @ 32);
    assert_layout!(IreeHalExecutableDispatchStateV0, size = 48, align = 8,
        workgroup_size_x @ 0, workgroup_size_y @ 4, workgroup_size_z @ 8, constant_count @ 10,
        workgroup_count_x @ 12, workgroup_count_y @ 16, workgroup_count_z @ 20,
        max_concurrency @ 22, binding_count @ 23, constants @ 24, binding_ptrs @ 32,
        binding_lengths @ 40);
    assert_layout!(IreeHalExecutableWorkgroupStateV0, size = 32, align = 8,
        workgroup_id_x @ 0, workgroup_id_y @ 4, workgroup_id_z @ 8, reserved @ 10,
        processor_id @ 12, local_memory @ 16, local_memory_size @ 24);
    assert_layout!(IreeHalExecutableDispatchAttrsV0, size = 64, align = 8,
        flags @ 0, local_memory_pages @ 8, constant_count @ 10, binding_count @ 11,
        workgroup_size_x @ 12, workgroup_size_y @ 16, workgroup_size_z @ 20,
        parameter_count @ 22, reserved_1 @ 24);
    assert_layout!(IreeHalExecutableExportTableV0, size = 80, align = 8,
        count @ 0, ptrs @ 8, attrs @ 16, params @ 24, occupancy @ 32, names @ 40, tags @ 48,
        parameter_names @ 56, source_locations @ 64, stage_locations @ 72);
    assert_layout!(IreeHalExecutableLibraryV0, size = 128, align = 8,
        header @ 0, imports @ 8, exports @ 24, constants @ 104, sources @ 112);
}
