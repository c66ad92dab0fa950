//! The reference-counting protocol on the 24-byte object header.
//!
//! This is ABI: C++ code compiled from the official headers performs the same operations
//! inline on objects we create, and we perform them on objects C++ creates. It is the only
//! code in pactum that touches `combined_ref_count`.
//!
//! The count packs the strong count in the low 32 bits and the weak count in the high 32 bits;
//! all strong holders together own one weak reference.

use core::sync::atomic::{AtomicU64, Ordering};

use pactum_sys::tvm_ffi::{
    TVMFFI_FRESH_REF_COUNT, TVMFFI_OBJECT_DELETER_FLAG_BOTH, TVMFFI_OBJECT_DELETER_FLAG_STRONG,
    TVMFFI_OBJECT_DELETER_FLAG_WEAK, TVMFFI_STRONG_REF_ONE, TVMFFI_WEAK_REF_ONE, TVMFFIObject,
};

const STRONG_MASK: u64 = (1 << 32) - 1;

/// The header's count as an atomic.
///
/// # Safety
/// `obj` must point to a live object header.
#[inline(always)]
unsafe fn counter<'a>(obj: *mut TVMFFIObject) -> &'a AtomicU64 {
    // SAFETY: the caller guarantees a live header; the field is 8-byte aligned (layout.rs) and
    // every party updates it only with atomic operations.
    unsafe { AtomicU64::from_ptr(core::ptr::addr_of_mut!((*obj).combined_ref_count)) }
}

/// Orders what follows (destruction, freeing) after every other holder's release decrement.
///
/// An acquire load of the count, where the protocol usually has `fence(Acquire)`: it reads
/// this thread's own decrement or a later value, so it synchronises with every earlier release
/// decrement, exactly as the fence does, and it costs no more (only the path that destroys or
/// frees runs it). ThreadSanitizer does not model standalone fences: with a fence, it reported
/// every object freed by one thread as racing with another thread's earlier decrement
/// (`scripts/sanitize.sh tsan`). std's `Arc` makes the same substitution under TSan.
///
/// # Safety
/// `obj` must point to an object whose memory is alive.
#[inline(always)]
unsafe fn acquire_count(obj: *mut TVMFFIObject) {
    // SAFETY: forwarded from the caller.
    unsafe { counter(obj) }.load(Ordering::Acquire);
}

/// Calls the object's deleter, if any, with `flags`.
///
/// # Safety
/// `obj` must be a live object whose count just reached the state `flags` describes.
#[inline(never)]
unsafe fn run_deleter(obj: *mut TVMFFIObject, flags: i32) {
    // SAFETY: the caller guarantees a live header.
    if let Some(deleter) = unsafe { (*obj).deleter } {
        // SAFETY: the deleter contract is exactly this call.
        unsafe { deleter(obj.cast(), flags) }
    }
}

/// Adds one strong reference.
///
/// # Safety
/// `obj` must point to a live object on which the caller holds a reference.
#[inline(always)]
pub unsafe fn inc_ref(obj: *mut TVMFFIObject) {
    // SAFETY: forwarded from the caller.
    unsafe { counter(obj) }.fetch_add(TVMFFI_STRONG_REF_ONE, Ordering::Relaxed);
}

/// Drops one strong reference, destroying and freeing the object as the protocol requires.
///
/// # Safety
/// `obj` must point to a live object and the caller must own the strong reference it drops.
#[inline(always)]
pub unsafe fn dec_ref(obj: *mut TVMFFIObject) {
    // SAFETY: forwarded from the caller.
    let before = unsafe { counter(obj) }.fetch_sub(TVMFFI_STRONG_REF_ONE, Ordering::Release);
    if before == TVMFFI_FRESH_REF_COUNT {
        // SAFETY: the memory is alive until the deleter below frees it.
        unsafe { acquire_count(obj) };
        // SAFETY: last strong and last weak reference: destroy and free in one call.
        unsafe { run_deleter(obj, TVMFFI_OBJECT_DELETER_FLAG_BOTH) };
    } else if before & STRONG_MASK == TVMFFI_STRONG_REF_ONE {
        // SAFETY: last strong reference while weak references remain.
        unsafe { drop_last_strong(obj) };
    }
}

#[cold]
unsafe fn drop_last_strong(obj: *mut TVMFFIObject) {
    // SAFETY: the memory is alive: the strong holders' weak reference is not released yet.
    unsafe { acquire_count(obj) };
    // SAFETY: the strong count reached zero: destroy but keep the memory.
    unsafe { run_deleter(obj, TVMFFI_OBJECT_DELETER_FLAG_STRONG) };
    // Release the weak reference the strong holders shared.
    // SAFETY: the memory is still alive until the weak count reaches zero.
    unsafe { dec_weak(obj) };
}

/// Adds one weak reference.
///
/// # Safety
/// `obj` must point to an object whose memory is alive (strong or weak reference held).
#[inline]
pub unsafe fn inc_weak(obj: *mut TVMFFIObject) {
    // SAFETY: forwarded from the caller.
    unsafe { counter(obj) }.fetch_add(TVMFFI_WEAK_REF_ONE, Ordering::Relaxed);
}

/// Drops one weak reference, freeing the memory when it was the last.
///
/// # Safety
/// The caller must own the weak reference it drops.
#[inline]
pub unsafe fn dec_weak(obj: *mut TVMFFIObject) {
    // SAFETY: forwarded from the caller.
    let before = unsafe { counter(obj) }.fetch_sub(TVMFFI_WEAK_REF_ONE, Ordering::Release);
    if before == TVMFFI_WEAK_REF_ONE {
        // SAFETY: the memory is alive until the deleter below frees it.
        unsafe { acquire_count(obj) };
        // SAFETY: no strong and no weak reference is left: free the memory.
        unsafe { run_deleter(obj, TVMFFI_OBJECT_DELETER_FLAG_WEAK) };
    }
}

/// Adds a strong reference if the object is still alive (strong count above zero).
///
/// # Safety
/// The caller must hold a weak reference to `obj`.
pub unsafe fn try_upgrade(obj: *mut TVMFFIObject) -> bool {
    // SAFETY: forwarded from the caller.
    let count = unsafe { counter(obj) };
    let mut current = count.load(Ordering::Relaxed);
    while current & STRONG_MASK != 0 {
        match count.compare_exchange_weak(
            current,
            current + TVMFFI_STRONG_REF_ONE,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
    false
}

/// Current strong count.
///
/// # Safety
/// `obj` must point to an object whose memory is alive.
#[inline]
pub unsafe fn strong_count(obj: *mut TVMFFIObject) -> u32 {
    // SAFETY: forwarded from the caller.
    (unsafe { counter(obj) }.load(Ordering::Relaxed) & STRONG_MASK) as u32
}

/// Current weak count (including the one the strong holders share).
///
/// # Safety
/// `obj` must point to an object whose memory is alive.
#[inline]
pub unsafe fn weak_count(obj: *mut TVMFFIObject) -> u32 {
    // SAFETY: forwarded from the caller.
    (unsafe { counter(obj) }.load(Ordering::Relaxed) >> 32) as u32
}

/// Whether the caller's reference is the only one (strong and weak), so the object may be
/// mutated in place.
///
/// # Safety
/// `obj` must point to a live object on which the caller holds a strong reference.
#[inline]
pub unsafe fn is_unique(obj: *mut TVMFFIObject) -> bool {
    // SAFETY: forwarded from the caller. Acquire pairs with the Release of other holders' drops.
    unsafe { counter(obj) }.load(Ordering::Acquire) == TVMFFI_FRESH_REF_COUNT
}
