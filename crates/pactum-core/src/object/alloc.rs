//! Allocation of objects made by pactum.
//!
//! Each object carries its own deleter, so any runtime (C++, Python, another pactum copy) can
//! release it. Memory comes from Rust's global allocator; the deleter gives it back with the
//! same layout.

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use pactum_sys::tvm_ffi::{TVMFFI_FRESH_REF_COUNT, TVMFFIObject, TVMFFIObjectDeleter};

use crate::boundary;

/// A header followed by a Rust payload: the shape of most objects pactum makes.
#[repr(C)]
pub struct ObjectBox<C> {
    /// The object header.
    pub header: TVMFFIObject,
    /// The payload, dropped by the deleter on the strong flag.
    pub cell: ManuallyDrop<C>,
}

impl<C> ObjectBox<C> {
    /// The payload of the object at `this`.
    ///
    /// # Safety
    /// `this` must point to a live `ObjectBox<C>` whose payload is not being dropped, and the
    /// reference must not outlive the object.
    #[inline(always)]
    pub unsafe fn cell<'a>(this: *mut Self) -> &'a C {
        // SAFETY: forwarded from the caller; ManuallyDrop<C> is repr(transparent) over C.
        unsafe { &*core::ptr::addr_of!((*this).cell).cast::<C>() }
    }
}

/// A fresh header: one strong reference plus the shared weak reference.
pub fn fresh_header(type_index: i32, deleter: TVMFFIObjectDeleter) -> TVMFFIObject {
    TVMFFIObject {
        combined_ref_count: TVMFFI_FRESH_REF_COUNT,
        type_index,
        padding: 0,
        deleter,
    }
}

/// Moves `cell` into a new object of `type_index`, released by `box_deleter`.
pub fn new_object_box<C>(type_index: i32, cell: C) -> NonNull<ObjectBox<C>> {
    let boxed = Box::new(ObjectBox {
        header: fresh_header(type_index, Some(box_deleter::<C>)),
        cell: ManuallyDrop::new(cell),
    });
    // SAFETY: Box::into_raw never returns null.
    unsafe { NonNull::new_unchecked(Box::into_raw(boxed)) }
}

/// Deleter of [`ObjectBox`]: drops the payload on the strong flag, frees on the weak flag.
pub(crate) unsafe extern "C" fn box_deleter<C>(obj: *mut c_void, flags: c_int) {
    let obj = obj.cast::<ObjectBox<C>>();
    boundary::object_deleter(
        flags,
        // SAFETY: the strong count reached zero: nobody else reads the payload, and it is
        // dropped exactly once because the protocol passes the strong flag once.
        || unsafe { ManuallyDrop::drop(&mut (*obj).cell) },
        // SAFETY: made by Box::new in new_object_box with this exact type; the weak flag comes
        // once, after the strong flag.
        || drop(unsafe { Box::from_raw(obj.cast::<ManuallyDrop<ObjectBox<C>>>()) }),
    );
}

/// Allocates `layout` for a variable-size object and writes its header; the caller fills the
/// rest. Aborts on allocation failure like `Box`; panics on a layout that cannot hold a header
/// (smaller than 24 bytes or aligned to less than 8).
pub fn alloc_raw_object(
    layout: Layout,
    type_index: i32,
    deleter: TVMFFIObjectDeleter,
) -> NonNull<TVMFFIObject> {
    // A real check: this is callable from safe code (through `internal`), and a smaller
    // layout would make the header write below overflow the allocation.
    assert!(
        layout.size() >= core::mem::size_of::<TVMFFIObject>() && layout.align() >= 8,
        "an object layout must hold its header: {layout:?}"
    );
    // SAFETY: the layout is non-zero sized (it holds at least a header).
    let ptr = unsafe { std::alloc::alloc(layout) }.cast::<TVMFFIObject>();
    let Some(ptr) = NonNull::new(ptr) else {
        std::alloc::handle_alloc_error(layout)
    };
    // SAFETY: fresh allocation large enough for a header.
    unsafe { ptr.as_ptr().write(fresh_header(type_index, deleter)) };
    ptr
}

/// Frees memory from [`alloc_raw_object`].
///
/// # Safety
/// `obj` must come from [`alloc_raw_object`] with the same `layout`, and be unreachable.
pub unsafe fn free_raw_object(obj: *mut TVMFFIObject, layout: Layout) {
    // SAFETY: forwarded from the caller.
    unsafe { std::alloc::dealloc(obj.cast(), layout) }
}
