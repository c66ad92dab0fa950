//! Strings, bytes, arbitrary-precision integers and data-type strings.

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use pactum_core::any::Payload;

use pactum_sys::dlpack::DLDataType;
use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFIObject, TVMFFITypeIndex,
};

use super::args::{arg_bytes, arg_ref, out_ptr};
use super::custom_dtypes::RegisteredCustomTypes;
use pactum_core::dtype::DataType;
use pactum_core::error::{Error, ErrorKind};
use pactum_core::internal::boundary::{self, EntryKind::CApi};
use pactum_core::internal::{ByteString, byte_string_value, heap_byte_string};
use pactum_core::internal::{alloc_raw_object, free_raw_object};

#[allow(non_snake_case)]
/// `TVMFFIStringFromByteArray`: SmallStr up to 7 bytes, else a String object.
///
/// # Safety
/// The C contract of `TVMFFIStringFromByteArray` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIStringFromByteArray(
    input: *const TVMFFIByteArray,
    out: *mut TVMFFIAny,
) -> c_int {
    boundary::status(CApi, || {
        let bytes = arg_bytes(input, "input")?;
        let out = out_ptr(out, "out")?;
        // SAFETY: checked out pointer; the caller receives the owned value.
        unsafe { *out = byte_string_value(bytes, ByteString::Str).into_raw() };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIBytesFromByteArray`: SmallBytes up to 7 bytes, else a Bytes object.
///
/// # Safety
/// The C contract of `TVMFFIBytesFromByteArray` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIBytesFromByteArray(
    input: *const TVMFFIByteArray,
    out: *mut TVMFFIAny,
) -> c_int {
    boundary::status(CApi, || {
        let bytes = arg_bytes(input, "input")?;
        let out = out_ptr(out, "out")?;
        // SAFETY: checked out pointer; the caller receives the owned value.
        unsafe { *out = byte_string_value(bytes, ByteString::Bytes).into_raw() };
        Ok(())
    })
}

/// BigInt object: header, word count (size_t) at +24, words at +32.
const BIG_INT_HEADER: usize = 32;

fn big_int_layout(words: usize) -> Layout {
    Layout::from_size_align(BIG_INT_HEADER + words * 8, 8).expect("BigInt too large")
}

unsafe extern "C" fn big_int_deleter(obj: *mut c_void, flags: c_int) {
    boundary::object_deleter(
        flags,
        || {},
        || {
            // SAFETY: the word count sits right after the header, as allocated.
            let words = unsafe { obj.cast::<u8>().add(24).cast::<usize>().read() };
            // SAFETY: allocated by make_big_int with this layout; the weak flag comes once.
            unsafe { free_raw_object(obj.cast(), big_int_layout(words)) }
        },
    )
}

/// Normalises little-endian two's-complement words: Int when one word is enough.
pub(crate) fn int_from_words(words: &[i64]) -> TVMFFIAny {
    let mut len = words.len();
    while len > 1 {
        let top = words[len - 1];
        let sign_of_next = if words[len - 2] < 0 { -1 } else { 0 };
        if top != sign_of_next {
            break;
        }
        len -= 1;
    }
    if len <= 1 {
        let value = words.first().copied().unwrap_or(0);
        return TVMFFIAny {
            type_index: TVMFFITypeIndex::INT.0,
            small_str_len: 0,
            value: TVMFFIAnyValue { v_int64: value },
        };
    }
    let obj = alloc_raw_object(
        big_int_layout(len),
        TVMFFITypeIndex::BIG_INT.0,
        Some(big_int_deleter),
    )
    .as_ptr();
    // SAFETY: the allocation holds the header, the count and `len` words.
    unsafe {
        obj.cast::<u8>().add(24).cast::<usize>().write(len);
        core::ptr::copy_nonoverlapping(
            words.as_ptr(),
            obj.cast::<u8>().add(BIG_INT_HEADER).cast::<i64>(),
            len,
        );
    }
    TVMFFIAny {
        type_index: TVMFFITypeIndex::BIG_INT.0,
        small_str_len: 0,
        value: TVMFFIAnyValue { v_obj: obj },
    }
}

/// The words of an Int or BigInt value.
///
/// # Safety
/// `value` must be a live Int or BigInt.
pub(crate) unsafe fn big_int_words(value: &TVMFFIAny) -> Vec<i64> {
    if value.type_index == TVMFFITypeIndex::INT.0 {
        // SAFETY: Int stores v_int64.
        return vec![value.int64()];
    }
    // SAFETY: forwarded from the caller: a BigInt object with its count and words.
    unsafe {
        let obj = value.value.v_obj.cast::<u8>();
        let count = obj.add(24).cast::<usize>().read();
        core::slice::from_raw_parts(obj.add(BIG_INT_HEADER).cast::<i64>(), count).to_vec()
    }
}

/// The hash of a BigInt (the official `BigInt::hash()`): the stable hash of its words' bytes.
pub(crate) fn big_int_hash(words: &[i64]) -> u64 {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    pactum_core::internal::stable_hash_bytes(&bytes)
}

/// The order of two integers given as minimal two's-complement words, least significant
/// first (the forms of Int and BigInt values).
pub(crate) fn compare_int_words(lhs: &[i64], rhs: &[i64]) -> core::cmp::Ordering {
    let negative = |words: &[i64]| words.last().is_some_and(|&w| w < 0);
    let (lhs_negative, rhs_negative) = (negative(lhs), negative(rhs));
    if lhs_negative != rhs_negative {
        return rhs_negative.cmp(&lhs_negative);
    }
    if lhs.len() != rhs.len() {
        // A minimal form with more words has the larger magnitude.
        let longer = lhs.len().cmp(&rhs.len());
        return if lhs_negative {
            longer.reverse()
        } else {
            longer
        };
    }
    let lower = |words: &[i64]| {
        words
            .iter()
            .rev()
            .skip(1)
            .map(|&w| w as u64)
            .collect::<Vec<_>>()
    };
    lhs.last()
        .cmp(&rhs.last())
        .then_with(|| lower(lhs).cmp(&lower(rhs)))
}

#[allow(non_snake_case)]
/// `TVMFFIBigIntFromByteArray`: whole native-endian words, least significant first.
///
/// # Safety
/// The C contract of `TVMFFIBigIntFromByteArray` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIBigIntFromByteArray(
    input: *const TVMFFIByteArray,
    out: *mut TVMFFIAny,
) -> c_int {
    boundary::status(CApi, || {
        let bytes = arg_bytes(input, "input")?;
        let out = out_ptr(out, "out")?;
        // SAFETY: checked out pointer.
        unsafe { *out = TVMFFIAny::NONE };
        if bytes.len() % 8 != 0 {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "BigInt content must contain whole 64-bit words",
            ));
        }
        let words: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|c| i64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect();
        // SAFETY: checked out pointer; the caller receives the owned value.
        unsafe { *out = int_from_words(&words) };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIBigIntGetContentByteArray`: borrows the words of an Int (inside the caller's value)
/// or a BigInt. Other values give an empty array.
///
/// # Safety
/// The C contract of `TVMFFIBigIntGetContentByteArray` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIBigIntGetContentByteArray(
    value: *const TVMFFIAny,
) -> TVMFFIByteArray {
    let empty = TVMFFIByteArray {
        data: core::ptr::null(),
        size: 0,
    };
    boundary::value(CApi, empty, || {
        // SAFETY: the caller passes a live value or NULL.
        let Some(value) = (unsafe { value.as_ref() }) else {
            return Ok(empty);
        };
        Ok(match TVMFFITypeIndex(value.type_index) {
            TVMFFITypeIndex::INT => TVMFFIByteArray {
                data: core::ptr::addr_of!(value.value.v_int64).cast(),
                size: 8,
            },
            TVMFFITypeIndex::BIG_INT => {
                // SAFETY: a BigInt object: count at +24, words at +32.
                unsafe {
                    let obj = value.value.v_obj.cast::<u8>();
                    let count = obj.add(24).cast::<usize>().read();
                    TVMFFIByteArray {
                        data: obj.add(BIG_INT_HEADER).cast(),
                        size: count * 8,
                    }
                }
            }
            _ => empty,
        })
    })
}

#[allow(non_snake_case)]
/// `TVMFFIDataTypeFromString`.
///
/// # Safety
/// The C contract of `TVMFFIDataTypeFromString` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIDataTypeFromString(
    str: *const TVMFFIByteArray,
    out: *mut DLDataType,
) -> c_int {
    boundary::status(CApi, || {
        let bytes = arg_bytes(str, "str")?;
        let out = out_ptr(out, "out")?;
        let text = core::str::from_utf8(bytes).map_err(|_| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("unknown dtype `{}`", String::from_utf8_lossy(bytes)),
            )
        })?;
        let dtype = DataType::parse_with(text, &RegisteredCustomTypes)?;
        // SAFETY: checked out pointer.
        unsafe { *out = dtype.into() };
        Ok(())
    })
}

#[allow(non_snake_case)]
/// `TVMFFIDataTypeToString`: always a String object (type 65), even when short.
///
/// # Safety
/// The C contract of `TVMFFIDataTypeToString` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIDataTypeToString(
    dtype: *const DLDataType,
    out: *mut TVMFFIAny,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: checked non-null; the caller passes a valid data type.
        let dtype = DataType::from(unsafe { *arg_ref(dtype, "dtype")? });
        let out = out_ptr(out, "out")?;
        let text = dtype.to_runtime_string_with(&RegisteredCustomTypes)?;
        // SAFETY: checked out pointer; the caller receives the owned value.
        unsafe { *out = heap_byte_string(text.as_bytes(), ByteString::Str).into_raw() };
        Ok(())
    })
}

#[allow(dead_code)]
fn _header_size_is_24() {
    const { assert!(core::mem::size_of::<TVMFFIObject>() == 24) };
}

#[cfg(test)]
mod tests {
    use super::compare_int_words;
    use core::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn integer_words_order_by_value() {
        let two_pow_70 = [0, 64];
        let minus_two_pow_70 = [0, -64];
        let two_pow_64_minus_one = [-1, 0];
        assert_eq!(compare_int_words(&two_pow_70, &[5]), Greater);
        assert_eq!(compare_int_words(&minus_two_pow_70, &[5]), Less);
        assert_eq!(compare_int_words(&minus_two_pow_70, &[i64::MIN]), Less);
        assert_eq!(compare_int_words(&two_pow_64_minus_one, &two_pow_70), Less);
        assert_eq!(
            compare_int_words(&two_pow_64_minus_one, &[i64::MAX]),
            Greater
        );
        assert_eq!(compare_int_words(&[1, 64], &two_pow_70), Greater);
        assert_eq!(compare_int_words(&[-1, -65], &minus_two_pow_70), Less);
        assert_eq!(compare_int_words(&two_pow_70, &[0, 64]), Equal);
        assert_eq!(compare_int_words(&[0, 0, 1], &two_pow_70), Greater);
        assert_eq!(compare_int_words(&[0, 0, -1], &minus_two_pow_70), Less);
    }
}
