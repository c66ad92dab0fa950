//! Mirror of `dlpack/dlpack.h`, DLPack 1.3 (the copy shipped in the apache-tvm-ffi wheel).
//!
//! Open C enums (device type, data-type code) are newtypes over their C integer with
//! associated constants: any value a foreign producer writes is representable.

use core::ffi::c_void;

/// `DLPACK_MAJOR_VERSION`.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// `DLPACK_MINOR_VERSION`.
pub const DLPACK_MINOR_VERSION: u32 = 3;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write through the tensor.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer copied the data for this export.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded to whole bytes.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DLPackVersion {
    /// Major version; a mismatch means the layout changed.
    pub major: u32,
    /// Minor version; a mismatch only adds enumeration values.
    pub minor: u32,
}

/// `DLDeviceType` (an open C enum stored as `int32_t`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// `kDLCPU`.
    pub const CPU: Self = Self(1);
    /// `kDLCUDA`.
    pub const CUDA: Self = Self(2);
    /// `kDLCUDAHost`: pinned host memory.
    pub const CUDA_HOST: Self = Self(3);
    /// `kDLOpenCL`.
    pub const OPENCL: Self = Self(4);
    /// `kDLVulkan`.
    pub const VULKAN: Self = Self(7);
    /// `kDLMetal`.
    pub const METAL: Self = Self(8);
    /// `kDLVPI`.
    pub const VPI: Self = Self(9);
    /// `kDLROCM`.
    pub const ROCM: Self = Self(10);
    /// `kDLROCMHost`.
    pub const ROCM_HOST: Self = Self(11);
    /// `kDLExtDev`.
    pub const EXT_DEV: Self = Self(12);
    /// `kDLCUDAManaged`.
    pub const CUDA_MANAGED: Self = Self(13);
    /// `kDLOneAPI`.
    pub const ONE_API: Self = Self(14);
    /// `kDLWebGPU`.
    pub const WEBGPU: Self = Self(15);
    /// `kDLHexagon`.
    pub const HEXAGON: Self = Self(16);
    /// `kDLMAIA`.
    pub const MAIA: Self = Self(17);
    /// `kDLTrn`.
    pub const TRN: Self = Self(18);
}

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// The device type.
    pub device_type: DLDeviceType,
    /// The device ordinal; 0 for host memory.
    pub device_id: i32,
}

/// `DLDataTypeCode` (an open C enum stored as `uint8_t` inside [`DLDataType`]).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DLDataTypeCode(pub u8);

impl DLDataTypeCode {
    /// `kDLInt`.
    pub const INT: Self = Self(0);
    /// `kDLUInt`.
    pub const UINT: Self = Self(1);
    /// `kDLFloat`.
    pub const FLOAT: Self = Self(2);
    /// `kDLOpaqueHandle`.
    pub const OPAQUE_HANDLE: Self = Self(3);
    /// `kDLBfloat`.
    pub const BFLOAT: Self = Self(4);
    /// `kDLComplex`.
    pub const COMPLEX: Self = Self(5);
    /// `kDLBool`.
    pub const BOOL: Self = Self(6);
    /// `kDLFloat8_e3m4`.
    pub const FLOAT8_E3M4: Self = Self(7);
    /// `kDLFloat8_e4m3`.
    pub const FLOAT8_E4M3: Self = Self(8);
    /// `kDLFloat8_e4m3b11fnuz`.
    pub const FLOAT8_E4M3B11FNUZ: Self = Self(9);
    /// `kDLFloat8_e4m3fn`.
    pub const FLOAT8_E4M3FN: Self = Self(10);
    /// `kDLFloat8_e4m3fnuz`.
    pub const FLOAT8_E4M3FNUZ: Self = Self(11);
    /// `kDLFloat8_e5m2`.
    pub const FLOAT8_E5M2: Self = Self(12);
    /// `kDLFloat8_e5m2fnuz`.
    pub const FLOAT8_E5M2FNUZ: Self = Self(13);
    /// `kDLFloat8_e8m0fnu`.
    pub const FLOAT8_E8M0FNU: Self = Self(14);
    /// `kDLFloat6_e2m3fn`.
    pub const FLOAT6_E2M3FN: Self = Self(15);
    /// `kDLFloat6_e3m2fn`.
    pub const FLOAT6_E3M2FN: Self = Self(16);
    /// `kDLFloat4_e2m1fn`.
    pub const FLOAT4_E2M1FN: Self = Self(17);
}

/// `DLDataType`: element type of a tensor.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// Type code ([`DLDataTypeCode`] as its raw byte).
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a borrowed, unmanaged tensor description.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// Opaque data pointer (device pointer for non-CPU devices).
    pub data: *mut c_void,
    /// Where the data lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for compact row-major.
    pub strides: *mut i64,
    /// Offset in bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (the legacy, unversioned managed tensor).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The described tensor.
    pub dl_tensor: DLTensor,
    /// Producer context.
    pub manager_ctx: *mut c_void,
    /// Called by the consumer exactly once when it no longer needs the tensor.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version the producer wrote.
    pub version: DLPackVersion,
    /// Producer context.
    pub manager_ctx: *mut c_void,
    /// Called by the consumer exactly once when it no longer needs the tensor.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The described tensor.
    pub dl_tensor: DLTensor,
}

/// `DLPackManagedTensorAllocator`: allocates a tensor shaped like `prototype`.
pub type DLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: Option<
            unsafe extern "C" fn(
                error_ctx: *mut c_void,
                kind: *const core::ffi::c_char,
                message: *const core::ffi::c_char,
            ),
        >,
    ) -> i32,
>;
