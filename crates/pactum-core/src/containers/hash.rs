//! `AnyHash` and `AnyEqual`: the key hash and equality of Map and Dict, bit-for-bit those of
//! the official headers (C++ code inlines them and probes maps we build).

use crate::any::Payload;
use std::sync::OnceLock;

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIByteArray, TVMFFITypeAttrColumn, TVMFFITypeIndex};

use crate::runtime;

const MUL: u64 = 1_099_511_628_211;
const MOD: u64 = 2_147_483_647;

/// `StableHashCombine`.
#[inline]
pub fn hash_combine(key: u64, value: u64) -> u64 {
    key ^ value
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(key << 6)
        .wrapping_add(key >> 2)
}

/// `StableHashBytes`: a multiplicative hash over little-endian 8-byte words, modulo 2^31-1.
pub fn stable_hash_bytes(bytes: &[u8]) -> u64 {
    let mut result = 0u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        result = result.wrapping_mul(MUL).wrapping_add(word) % MOD;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        result = result
            .wrapping_mul(MUL)
            .wrapping_add(u64::from_le_bytes(word))
            % MOD;
    }
    result
}

/// The attribute columns the hash consults, looked up once like the C++ function-local statics.
fn hook_column(
    name: &'static str,
    cache: &'static OnceLock<usize>,
) -> Option<&'static TVMFFITypeAttrColumn> {
    let address = *cache.get_or_init(|| {
        let bytes = TVMFFIByteArray {
            data: name.as_ptr().cast(),
            size: name.len(),
        };
        // SAFETY: a valid attribute name; the runtime keeps columns at stable addresses.
        unsafe { (runtime::api().TVMFFIGetTypeAttrColumn)(&bytes) as usize }
    });
    // SAFETY: a non-null column pointer stays valid for the life of the process.
    unsafe { (address as *const TVMFFITypeAttrColumn).as_ref() }
}

/// The hook registered for `type_index` in `column`, if any.
fn hook_entry(column: Option<&TVMFFITypeAttrColumn>, type_index: i32) -> Option<TVMFFIAny> {
    let column = column?;
    let offset = type_index.checked_sub(column.begin_index)?;
    if offset < 0 || offset >= column.size || column.data.is_null() {
        return None;
    }
    // SAFETY: `data` holds `size` values (the runtime re-reads it on every call, as do we).
    let entry = unsafe { *column.data.add(offset as usize) };
    (entry.type_index != TVMFFITypeIndex::NONE.0).then_some(entry)
}

static ANY_HASH_COLUMN: OnceLock<usize> = OnceLock::new();
static ANY_EQUAL_COLUMN: OnceLock<usize> = OnceLock::new();

type NativeHash = unsafe extern "C" fn(*const TVMFFIAny) -> TVMFFIAny;
type NativeEqual = unsafe extern "C" fn(*const TVMFFIAny, *const TVMFFIAny) -> TVMFFIAny;

/// Calls a hook (a native function pointer or a Function object) and reads an Int/Bool result.
fn call_hook(hook: TVMFFIAny, args: &[TVMFFIAny]) -> Option<i64> {
    let result = match TVMFFITypeIndex(hook.type_index) {
        TVMFFITypeIndex::OPAQUE_PTR => {
            // SAFETY: the runtime stores native hooks of exactly these signatures.
            unsafe {
                if args.len() == 1 {
                    let f: NativeHash = core::mem::transmute(hook.value.v_ptr);
                    f(&args[0])
                } else {
                    let f: NativeEqual = core::mem::transmute(hook.value.v_ptr);
                    f(&args[0], &args[1])
                }
            }
        }
        TVMFFITypeIndex::FUNCTION => {
            // SAFETY: a live Function object stored in the column; args are valid views.
            let function =
                unsafe { &*core::ptr::addr_of!(hook.value.v_obj).cast::<crate::Function>() };
            // SAFETY: the arguments are live values owned by the caller for this call.
            let views = args
                .iter()
                .map(|a| unsafe { crate::AnyView::from_raw(*a) })
                .collect::<Vec<_>>();
            function.call(&views).ok()?.into_raw()
        }
        _ => return None,
    };
    // SAFETY: hooks return an owned value (Int, Bool, or an Error object).
    let value = unsafe { crate::Any::from_raw(result) };
    value.get::<i64>().ok()
}

/// `AnyHash`.
pub(crate) fn any_hash(value: &TVMFFIAny) -> u64 {
    let type_index = value.type_index;
    // SAFETY (union reads): each arm reads the field the type index stores.
    match TVMFFITypeIndex(type_index) {
        TVMFFITypeIndex::SMALL_STR => hash_combine(65, value.uint64() % MOD),
        TVMFFITypeIndex::SMALL_BYTES => hash_combine(66, value.uint64() % MOD),
        TVMFFITypeIndex::STR | TVMFFITypeIndex::BYTES => {
            // SAFETY: string objects carry a byte array after the header.
            let bytes = unsafe { crate::raw::byte_array_slice(value.value.v_obj.add(1).cast()) };
            hash_combine(type_index as u64, stable_hash_bytes(bytes))
        }
        _ if type_index >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 => {
            let hook = hook_entry(hook_column("__any_hash__", &ANY_HASH_COLUMN), type_index);
            match hook.and_then(|hook| call_hook(hook, &[*value])) {
                Some(hash) => hash_combine(type_index as u64, hash as u64),
                // SAFETY: objects hash by pointer.
                None => hash_combine(type_index as u64, value.uint64()),
            }
        }
        // SAFETY: POD values hash their raw payload word.
        _ => hash_combine(type_index as u64, value.uint64()),
    }
}

/// The two 8-byte words of a value: its type index and padding, then its payload.
#[inline]
pub fn raw_words(value: &TVMFFIAny) -> (u64, u64) {
    // SAFETY: TVMFFIAny is 16 bytes of plain data.
    let words: [u64; 2] = unsafe { core::mem::transmute(*value) };
    (words[0], words[1])
}

fn content(value: &TVMFFIAny) -> &[u8] {
    // SAFETY: callers pass live values; AnyView is repr(transparent) over TVMFFIAny.
    let view = unsafe { &*(value as *const TVMFFIAny).cast::<crate::AnyView<'_>>() };
    crate::any::view_bytes(view).unwrap_or(&[])
}

/// `AnyEqual`.
/// [`any_equal`] with the common case inline: two short (inline) strings are equal exactly
/// when their 16 bytes are.
#[inline]
pub(crate) fn any_equal_fast(lhs: &TVMFFIAny, rhs: &TVMFFIAny) -> bool {
    let small = TVMFFITypeIndex::SMALL_STR.0;
    if lhs.type_index == small && rhs.type_index == small {
        return raw_words(lhs) == raw_words(rhs);
    }
    any_equal(lhs, rhs)
}

/// `AnyEqual`: the key equality of Map and Dict.
pub(crate) fn any_equal(lhs: &TVMFFIAny, rhs: &TVMFFIAny) -> bool {
    if raw_words(lhs) == raw_words(rhs) {
        return true;
    }
    let (l, r) = (lhs.type_index, rhs.type_index);
    if l == r {
        if l == TVMFFITypeIndex::STR.0 || l == TVMFFITypeIndex::BYTES.0 {
            return content(lhs) == content(rhs);
        }
        if l >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0 {
            if let Some(hook) = hook_entry(hook_column("__any_equal__", &ANY_EQUAL_COLUMN), l) {
                return call_hook(hook, &[*lhs, *rhs]).is_some_and(|v| v != 0);
            }
        }
        return false;
    }
    let pair =
        |a: TVMFFITypeIndex, b: TVMFFITypeIndex| (l == a.0 && r == b.0) || (l == b.0 && r == a.0);
    if pair(TVMFFITypeIndex::STR, TVMFFITypeIndex::SMALL_STR)
        || pair(TVMFFITypeIndex::BYTES, TVMFFITypeIndex::SMALL_BYTES)
    {
        return content(lhs) == content(rhs);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Any;

    #[test]
    fn hashes_match_the_official_runtime() {
        // Sample values measured against apache-tvm-ffi 0.1.15.post2 (see docs/ARCHITECTURE.md).
        assert_eq!(any_hash(Any::from(0i64).as_raw()), 2654435832);
        assert_eq!(any_hash(Any::from(1i64).as_raw()), 2654435835);
        assert_eq!(any_hash(Any::from(-1i64).as_raw()), 2654435833);
        assert_eq!(any_hash(Any::from(true).as_raw()), 2654435896);
        assert_eq!(any_hash(Any::from(1.0f64).as_raw()), 4607182421454453370);
        assert_eq!(any_hash(Any::from("").as_raw()), 2654440008);
        assert_eq!(any_hash(Any::from("a").as_raw()), 2654439979);
        assert_eq!(any_hash(Any::from("abcdefg").as_raw()), 4352227701);
        assert_eq!(any_hash(Any::from("abcdefgh").as_raw()), 3546921335);
        assert_eq!(any_hash(Any::from("hello world!!").as_raw()), 4293989463);
        assert_eq!(
            any_hash(Any::from(crate::DataType::F32).as_raw()),
            2654509817
        );
        assert_eq!(
            any_hash(Any::from(crate::Device::cuda(3)).as_raw()),
            15539338042
        );
    }

    #[test]
    fn small_and_heap_strings_are_equal_keys() {
        let small = Any::from("abc");
        let heap = crate::string::heap_value(b"abc", TVMFFITypeIndex::STR);
        assert_eq!(heap.type_index(), 65);
        assert!(any_equal(small.as_raw(), heap.as_raw()));
        assert!(any_equal(heap.as_raw(), small.as_raw()));
        assert_eq!(any_hash(small.as_raw()), any_hash(heap.as_raw()));
        assert!(!any_equal(
            Any::from(0.0f64).as_raw(),
            Any::from(-0.0f64).as_raw()
        ));
        assert!(!any_equal(
            Any::from(1i64).as_raw(),
            Any::from(true).as_raw()
        ));
    }
}
