//! DLPack import and export with ownership, strides, offsets and the official checks.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use pactum::sys::dlpack::*;
use pactum::{Any, DataType, Device, Tensor};

/// A producer-owned tensor: data, shape and strides live in the box, freed by the deleter.
struct Producer {
    data: Vec<f32>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    deleted: &'static AtomicUsize,
}

fn dl_tensor(producer: &mut Producer, byte_offset: u64) -> DLTensor {
    DLTensor {
        data: producer.data.as_mut_ptr().cast(),
        device: DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        },
        ndim: producer.shape.len() as i32,
        dtype: DataType::F32.into(),
        shape: producer.shape.as_mut_ptr(),
        strides: producer
            .strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset,
    }
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let managed = unsafe { Box::from_raw(managed) };
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let producer = unsafe { Box::from_raw(managed.manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let managed = unsafe { Box::from_raw(managed) };
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let producer = unsafe { Box::from_raw(managed.manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
}

fn legacy(producer: Producer, byte_offset: u64) -> *mut DLManagedTensor {
    let producer = Box::into_raw(Box::new(producer));
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let dl_tensor = dl_tensor(unsafe { &mut *producer }, byte_offset);
    Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor,
        manager_ctx: producer.cast(),
        deleter: Some(delete_legacy),
    }))
}

fn versioned(producer: Producer, flags: u64) -> *mut DLManagedTensorVersioned {
    let producer = Box::into_raw(Box::new(producer));
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let dl_tensor = dl_tensor(unsafe { &mut *producer }, 0);
    Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 3 },
        manager_ctx: producer.cast(),
        deleter: Some(delete_versioned),
        flags,
        dl_tensor,
    }))
}

#[test]
fn imports_are_zero_copy_and_free_the_producer_once() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let data: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let data_ptr = data.as_ptr();
    let managed = legacy(
        Producer {
            data,
            shape: vec![2, 3],
            strides: None,
            deleted: &DELETED,
        },
        4,
    );
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let tensor = unsafe { Tensor::from_dlpack(managed, 0, false) }.unwrap();
    assert_eq!(tensor.shape(), &[2, 3]);
    assert_eq!(
        tensor.strides(),
        vec![3, 1],
        "compact strides are filled in"
    );
    assert!(!tensor.dl_tensor().strides.is_null());
    assert_eq!(tensor.dl_tensor().data as *const f32, data_ptr, "zero copy");
    assert_eq!(
        tensor.data_ptr() as usize,
        data_ptr as usize + 4,
        "byte_offset honoured"
    );
    assert_eq!(
        (tensor.dtype(), tensor.device()),
        (DataType::F32, Device::CPU)
    );
    let clone = tensor.clone();
    drop(tensor);
    assert_eq!(DELETED.load(Ordering::SeqCst), 0);
    drop(clone);
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);
}

#[test]
fn failed_imports_leave_ownership_with_the_caller() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let non_contiguous = Producer {
        data: vec![0.0; 6],
        shape: vec![2, 3],
        strides: Some(vec![1, 2]),
        deleted: &DELETED,
    };
    let managed = legacy(non_contiguous, 0);
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let error = unsafe { Tensor::from_dlpack(managed, 0, true) }.unwrap_err();
    assert_eq!(
        (error.kind().as_ref(), error.message().as_ref()),
        ("RuntimeError", "FromDLPack: Tensor is not contiguous.")
    );
    // A 4-byte offset into a malloc'd (16-byte aligned) buffer is never 64-byte aligned.
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    unsafe { (*managed).dl_tensor.byte_offset = 4 };
    // SAFETY: as above; a failed import leaves ownership here.
    let error = unsafe { Tensor::from_dlpack(managed, 64, false) }.unwrap_err();
    assert_eq!(
        error.message(),
        "FromDLPack: Data is not aligned to 64 bytes."
    );
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    unsafe { delete_legacy(managed) };
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);

    let padded = versioned(
        Producer {
            data: vec![0.0; 2],
            shape: vec![2],
            strides: None,
            deleted: &DELETED,
        },
        DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    );
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let error = unsafe { Tensor::from_dlpack_versioned(padded, 0, false) }.unwrap_err();
    assert_eq!(error.message(), "Subbyte type padded is not yet supported");
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    unsafe { delete_versioned(padded) };
    assert_eq!(DELETED.load(Ordering::SeqCst), 2);
}

#[test]
fn contiguity_ignores_unit_and_empty_dimensions() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let unit = Producer {
        data: vec![0.0; 3],
        shape: vec![3, 1],
        strides: Some(vec![1, 99]),
        deleted: &DELETED,
    };
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let tensor = unsafe { Tensor::from_dlpack_versioned(versioned(unit, 0), 0, true) }.unwrap();
    assert!(tensor.is_contiguous());
    let empty = Producer {
        data: vec![],
        shape: vec![0, 4],
        strides: Some(vec![7, 7]),
        deleted: &DELETED,
    };
    assert!(
        // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
        unsafe { Tensor::from_dlpack_versioned(versioned(empty, 0), 0, true) }
            .unwrap()
            .is_contiguous()
    );
}

#[test]
fn exports_hold_a_reference_until_the_consumer_deletes() {
    let tensor = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let object = tensor.as_object_ref().clone();
    let legacy = tensor.to_dlpack();
    let versioned = tensor.to_dlpack_versioned();
    assert_eq!(object.strong_count(), 4);
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    unsafe {
        assert_eq!((*versioned).version, DLPackVersion { major: 1, minor: 3 });
        assert_eq!((*versioned).flags, 0);
        assert_eq!((*legacy).dl_tensor.data, tensor.dl_tensor().data);
        assert_eq!(
            std::slice::from_raw_parts((*legacy).dl_tensor.shape, 2),
            &[2, 2]
        );
        ((*legacy).deleter.unwrap())(legacy);
        ((*versioned).deleter.unwrap())(versioned);
    }
    assert_eq!(object.strong_count(), 2);
}

#[test]
fn round_trip_through_dlpack_keeps_the_memory() {
    let tensor = Tensor::from_slice(&[5i32, 6, 7], &[3]).unwrap();
    let exported = tensor.to_dlpack_versioned();
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let imported = unsafe { Tensor::from_dlpack_versioned(exported, 64, true) }.unwrap();
    assert_eq!(imported.data_ptr(), tensor.data_ptr());
    imported.copy_from_slice(&[1i32, 2, 3]).unwrap();
    assert_eq!(
        tensor.to_vec::<i32>().unwrap(),
        vec![1, 2, 3],
        "writes are visible through both"
    );
    assert!(Any::from(imported).cast::<Tensor>().is_ok());
}

#[test]
fn typed_access_checks_dtype_device_and_layout() {
    let tensor = Tensor::empty(&[4], DataType::F64).unwrap();
    assert_eq!(tensor.to_vec::<f64>().unwrap(), vec![0.0; 4]);
    let error = tensor.to_vec::<f32>().unwrap_err();
    assert_eq!(error.message(), "expected dtype float32, got float64");
    assert_eq!(
        tensor.data_ptr() as usize % 64,
        0,
        "pactum allocations are 64-byte aligned"
    );
    let mut shape = [4i64];
    let mut strides = [2i64];
    let proto = DLTensor {
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        ..*tensor.dl_tensor()
    };
    // SAFETY: the producer memory is owned by boxes this test made, alive until its deleter runs.
    let view = unsafe { tensor.unsafe_view(&proto) }.unwrap();
    assert_eq!(view.strides(), vec![2]);
    assert!(
        view.to_vec::<f64>().is_err(),
        "non-contiguous views are refused by typed access"
    );
    assert_eq!(
        tensor.as_object_ref().strong_count(),
        2,
        "a view keeps its source alive"
    );
    drop(view);
    assert_eq!(tensor.as_object_ref().strong_count(), 1);
    assert!(Tensor::empty(&[-1], DataType::F32).is_err());
    let _ = std::ptr::null::<c_void>();
}

#[test]
fn view_as_reinterprets_elements_of_the_same_size() {
    let bits = Tensor::from_slice(&[0x3fc0u16, 0x4010], &[2]).unwrap();
    let bf16 = bits.view_as(DataType::BF16).unwrap();
    assert_eq!(bf16.dtype(), DataType::BF16);
    assert_eq!(bf16.data_ptr(), bits.data_ptr());
    assert_eq!(
        bf16.to_vec::<half::bf16>().unwrap(),
        [half::bf16::from_f32(1.5), half::bf16::from_f32(2.25)]
    );
    let error = bits.view_as(DataType::F32).unwrap_err();
    assert!(error.message().contains("element sizes differ"), "{error}");
}
