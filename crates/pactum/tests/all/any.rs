//! `Any`/`AnyView` conversions, small-string rules, borrowed kinds and their failures.

use std::ffi::CString;

use pactum::sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFIObject, TVMFFITypeIndex,
};
use pactum::{Any, AnyView, Bytes, DataType, Device, ObjectRef, String};
use proptest::prelude::*;

proptest! {
    #[test]
    fn integers_round_trip(value in any::<i64>()) {
        let any = Any::from(value);
        prop_assert_eq!(any.type_index(), TVMFFITypeIndex::INT.0);
        prop_assert_eq!(any.as_raw().small_str_len, 0);
        prop_assert_eq!(any.get::<i64>().unwrap(), value);
        prop_assert_eq!(any.clone().cast::<i64>().unwrap(), value);
        prop_assert_eq!(any.get::<i32>().ok(), i32::try_from(value).ok());
        prop_assert_eq!(any.get::<u8>().ok(), u8::try_from(value).ok());
        prop_assert_eq!(any.get::<u64>().ok(), u64::try_from(value).ok());
    }

    #[test]
    fn floats_round_trip_bit_exactly(bits in any::<u64>()) {
        let value = f64::from_bits(bits);
        let any = Any::from(value);
        prop_assert_eq!(any.type_index(), TVMFFITypeIndex::FLOAT.0);
        prop_assert_eq!(any.get::<f64>().unwrap().to_bits(), bits);
    }

    #[test]
    fn strings_round_trip_inline_or_heap(text in ".{0,40}") {
        let any = Any::from(text.as_str());
        let inline = text.len() <= 7;
        prop_assert_eq!(any.type_index(), if inline { 11 } else { 65 });
        prop_assert_eq!(any.get::<&str>().unwrap(), text.as_str());
        let owned: String = any.clone().cast().unwrap();
        prop_assert_eq!(owned.as_str(), text.as_str());
        prop_assert_eq!(owned.is_inline(), inline);
        if inline {
            // Unused inline bytes are zero, so hashing and equality can compare raw words.
            let raw = any.as_raw();
            prop_assert_eq!(raw.small_str_len as usize, text.len());
            // SAFETY: the raw cells and pointers come from live values this test owns.
            let bytes = unsafe { raw.value.v_bytes };
            prop_assert!(bytes[text.len()..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn bytes_round_trip_with_embedded_nuls(data in proptest::collection::vec(any::<u8>(), 0..40)) {
        let any = Any::from(data.as_slice());
        prop_assert_eq!(any.type_index(), if data.len() <= 7 { 12 } else { 66 });
        prop_assert_eq!(any.get::<&[u8]>().unwrap(), data.as_slice());
        let bytes: Bytes = any.cast().unwrap();
        prop_assert_eq!(bytes.as_bytes(), data.as_slice());
    }

    #[test]
    fn dtypes_round_trip(code in 0u8..=4, bits in prop::sample::select(vec![8u8, 16, 32, 64]), lanes in 1u16..9) {
        let dtype = DataType { code: pactum::sys::dlpack::DLDataTypeCode(code), bits, lanes };
        let any = Any::from(dtype);
        prop_assert_eq!(any.get::<DataType>().unwrap(), dtype);
        if code != 3 {
            let text = dtype.to_string();
            prop_assert_eq!(DataType::parse(&text).unwrap(), dtype, "{}", text);
        }
    }
}

#[test]
fn heap_strings_are_nul_terminated_and_shared() {
    let text = "a string longer than seven bytes";
    let any = Any::from(text);
    let object = any.as_object_ref().expect("heap string is an object");
    // SAFETY: the raw cells and pointers come from live values this test owns.
    let cell = unsafe { &*object.as_raw().add(1).cast::<TVMFFIByteArray>() };
    assert_eq!(cell.size, text.len());
    // SAFETY: the raw cells and pointers come from live values this test owns.
    assert_eq!(unsafe { *cell.data.add(text.len()) }, 0, "trailing NUL");
    let copy = any.clone();
    assert_eq!(object.strong_count(), 2);
    drop(copy);
    assert_eq!(object.strong_count(), 1);
}

#[test]
fn failed_conversions_name_expected_and_actual_types() {
    let error = Any::from("text").get::<i64>().unwrap_err();
    assert_eq!(error.kind(), "TypeError");
    assert_eq!(error.message(), "expected int, got ffi.String");
    let error = Any::from(1.5).cast::<pactum::Array>().unwrap_err();
    assert_eq!(error.message(), "expected ffi.Array, got float");
    let error = Any::from(300i64).get::<u8>().unwrap_err();
    assert_eq!(error.kind(), "ValueError");
    assert_eq!(error.message(), "integer 300 is out of range for uint8");
    let error = Any::none().get::<bool>().unwrap_err();
    assert_eq!(error.message(), "expected bool, got None");
}

#[test]
fn bool_int_and_float_follow_the_runtime_rules() {
    assert_eq!(Any::from(true).get::<i64>().unwrap(), 1);
    assert!(Any::from(7i64).get::<bool>().unwrap());
    assert_eq!(Any::from(3i64).get::<f64>().unwrap(), 3.0);
    assert!(
        Any::from(2.0f64).get::<i64>().is_err(),
        "floats never narrow to int silently"
    );
    assert_eq!(Any::from(true).type_index(), TVMFFITypeIndex::BOOL.0);
}

#[test]
fn devices_and_options() {
    let any = Any::from(Device::cuda(3));
    assert_eq!(any.get::<Device>().unwrap(), Device::cuda(3));
    assert_eq!(
        Any::from(Option::<i64>::None).get::<Option<i64>>().unwrap(),
        None
    );
    assert_eq!(Any::from(Some(4i64)).get::<Option<i64>>().unwrap(), Some(4));
    assert!(
        Any::from(1i64)
            .get::<Option<std::string::String>>()
            .is_err()
    );
    assert_eq!(
        Any::from("float16").get::<DataType>().unwrap(),
        DataType::F16,
        "strings convert to dtypes"
    );
}

#[test]
fn borrowed_c_strings_and_byte_arrays_become_owned_values() {
    let short = CString::new("abc").unwrap();
    let long = CString::new("a C string that is long").unwrap();
    for (text, expected_index) in [(&short, 11), (&long, 65)] {
        let view = AnyView::from(text.as_c_str());
        assert_eq!(view.type_index(), TVMFFITypeIndex::RAW_STR.0);
        assert_eq!(view.get::<&str>().unwrap(), text.to_str().unwrap());
        let owned = view.to_any().unwrap();
        assert_eq!(owned.type_index(), expected_index);
        assert_eq!(owned.get::<&str>().unwrap(), text.to_str().unwrap());
    }
    let data = b"bytes\0with nul";
    let array = TVMFFIByteArray {
        data: data.as_ptr().cast(),
        size: data.len(),
    };
    let raw = TVMFFIAny {
        type_index: TVMFFITypeIndex::BYTE_ARRAY_PTR.0,
        small_str_len: 0,
        value: TVMFFIAnyValue {
            v_ptr: (&array as *const TVMFFIByteArray).cast_mut().cast(),
        },
    };
    // SAFETY: the raw cells and pointers come from live values this test owns.
    let view = unsafe { AnyView::from_raw(raw) };
    let owned = view.to_any().unwrap();
    assert_eq!(owned.type_index(), TVMFFITypeIndex::BYTES.0);
    assert_eq!(owned.get::<&[u8]>().unwrap(), data);
}

#[test]
fn rvalue_references_move_once() {
    let object = Any::from("moved heap string value");
    let raw_object = object.into_raw();
    // SAFETY: the raw cells and pointers come from live values this test owns.
    let mut slot: *mut TVMFFIObject = unsafe { raw_object.value.v_obj };
    // SAFETY: the raw cells and pointers come from live values this test owns.
    let view = unsafe {
        AnyView::from_raw(TVMFFIAny {
            type_index: TVMFFITypeIndex::OBJECT_RVALUE_REF.0,
            small_str_len: 0,
            value: TVMFFIAnyValue {
                v_ptr: (&mut slot as *mut *mut TVMFFIObject).cast(),
            },
        })
    };
    let moved = view.to_any().unwrap();
    assert!(slot.is_null(), "the slot gives up its reference");
    assert_eq!(
        moved.type_index(),
        TVMFFITypeIndex::STR.0,
        "the type comes from the object header"
    );
    assert_eq!(
        moved.as_object_ref().unwrap().strong_count(),
        1,
        "moved, not copied"
    );
    let error = view.to_any().unwrap_err();
    assert_eq!(error.kind(), "InternalError");
    assert!(error.message().contains("RValueRef already moved"));
}

#[test]
fn objects_convert_with_reference_counts() {
    let array = pactum::Array::new([Any::from(1i64)]);
    let object: &ObjectRef = array.as_object_ref();
    let any = Any::from(array.clone());
    assert_eq!(object.strong_count(), 2);
    let view = any.view();
    let back: pactum::Array = view.get().unwrap();
    assert_eq!(object.strong_count(), 3);
    drop(back);
    drop(any);
    assert_eq!(object.strong_count(), 1);
    assert_eq!(object.type_key(), "ffi.Array");
}
