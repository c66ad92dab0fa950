//! Reference-counted FFI objects: untyped [`ObjectRef`], weak references, the
//! [`ObjectRefType`] trait implemented by every typed reference, and user-defined object types
//! ([`ObjectType`], [`Obj`]).

pub(crate) mod alloc;
mod custom;
pub(crate) mod header;
pub(crate) mod release;
pub(crate) mod types;

pub(crate) use alloc::{ObjectBox, alloc_raw_object, free_raw_object, new_object_box};
#[doc(hidden)]
pub use custom::register_object_type;
pub use custom::{Obj, ObjectType};
pub use types::{TypeInfo, type_index_of_key, type_key_of};

use core::fmt;
use core::ptr::NonNull;
use std::sync::{Mutex, MutexGuard};

use pactum_sys::tvm_ffi::{TVMFFIObject, TVMFFITypeIndex};

/// An owned strong reference to an FFI object of any type (type index 64 or above).
///
/// Cloning adds a strong reference and dropping releases one, following the ABI's counting
/// protocol, so the object may be shared freely with C, C++ and Python.
#[repr(transparent)]
pub struct ObjectRef(NonNull<TVMFFIObject>);

// SAFETY: object headers are updated atomically and every FFI object type is required by the
// ABI to be shareable across threads (C++ `ObjectRef` is sent between threads freely).
unsafe impl Send for ObjectRef {}
// SAFETY: as above; `&ObjectRef` only reads the header.
unsafe impl Sync for ObjectRef {}

impl ObjectRef {
    /// Takes ownership of one strong reference held by the caller.
    ///
    /// # Safety
    /// `ptr` must point to a live object and the caller must transfer a strong reference.
    #[inline]
    pub unsafe fn from_raw_owned(ptr: NonNull<TVMFFIObject>) -> Self {
        Self(ptr)
    }

    /// Adds a strong reference to an object the caller borrows.
    ///
    /// # Safety
    /// `ptr` must point to a live object that stays alive during this call.
    #[inline]
    pub unsafe fn from_raw_borrowed(ptr: NonNull<TVMFFIObject>) -> Self {
        // SAFETY: the caller guarantees the object is alive.
        unsafe { header::inc_ref(ptr.as_ptr()) };
        Self(ptr)
    }

    /// The object pointer, still owned by `self`.
    #[inline]
    pub fn as_raw(&self) -> *mut TVMFFIObject {
        self.0.as_ptr()
    }

    /// Gives up ownership: the caller now owns the strong reference.
    #[inline]
    pub fn into_raw(self) -> *mut TVMFFIObject {
        let ptr = self.0.as_ptr();
        core::mem::forget(self);
        ptr
    }

    /// The runtime type index stored in the header.
    #[inline]
    pub fn type_index(&self) -> i32 {
        // SAFETY: `self` keeps the object alive.
        unsafe { (*self.as_raw()).type_index }
    }

    /// Whether the object's type is `T` or one of its subtypes.
    pub fn is<T: ObjectRefType>(&self) -> bool {
        T::accepts_type_index(self.type_index())
    }

    /// Converts into the typed reference `T`, or gives `self` back when the type differs.
    pub fn downcast<T: ObjectRefType>(self) -> Result<T, Self> {
        if self.is::<T>() {
            // SAFETY: the type check just passed.
            Ok(unsafe { T::from_object_ref_unchecked(self) })
        } else {
            Err(self)
        }
    }

    /// Number of strong references.
    pub fn strong_count(&self) -> u32 {
        // SAFETY: `self` keeps the object alive.
        unsafe { header::strong_count(self.as_raw()) }
    }

    /// Number of weak references (strong holders together count as one).
    pub fn weak_count(&self) -> u32 {
        // SAFETY: `self` keeps the object alive.
        unsafe { header::weak_count(self.as_raw()) }
    }

    /// Whether this is the only reference, strong or weak.
    pub fn is_unique(&self) -> bool {
        // SAFETY: `self` holds a strong reference.
        unsafe { header::is_unique(self.as_raw()) }
    }

    /// Makes a weak reference that does not keep the object alive.
    pub fn downgrade(&self) -> WeakObjectRef {
        // SAFETY: `self` keeps the memory alive.
        unsafe { header::inc_weak(self.as_raw()) };
        WeakObjectRef(self.0)
    }

    /// Whether both references point to the same object.
    pub fn ptr_eq(&self, other: &ObjectRef) -> bool {
        self.0 == other.0
    }
}

impl Clone for ObjectRef {
    #[inline]
    fn clone(&self) -> Self {
        // SAFETY: `self` keeps the object alive.
        unsafe { header::inc_ref(self.as_raw()) };
        Self(self.0)
    }
}

impl Drop for ObjectRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `self` owns one strong reference.
        unsafe { header::dec_ref(self.as_raw()) }
    }
}

impl fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectRef({} @ {:p})", self.type_key(), self.0)
    }
}

/// A weak reference: keeps the memory but not the object alive.
pub struct WeakObjectRef(NonNull<TVMFFIObject>);

// SAFETY: see ObjectRef.
unsafe impl Send for WeakObjectRef {}
// SAFETY: see ObjectRef.
unsafe impl Sync for WeakObjectRef {}

impl WeakObjectRef {
    /// A strong reference, if the object is still alive.
    pub fn upgrade(&self) -> Option<ObjectRef> {
        // SAFETY: `self` holds a weak reference, so the header is readable.
        // `then`, not `then_some`: building an ObjectRef eagerly would drop (and decrement) it
        // when the upgrade fails.
        unsafe { header::try_upgrade(self.0.as_ptr()) }.then(|| ObjectRef(self.0))
    }
}

impl Clone for WeakObjectRef {
    fn clone(&self) -> Self {
        // SAFETY: `self` keeps the memory alive.
        unsafe { header::inc_weak(self.0.as_ptr()) };
        Self(self.0)
    }
}

impl Drop for WeakObjectRef {
    fn drop(&mut self) {
        // SAFETY: `self` owns one weak reference.
        unsafe { header::dec_weak(self.0.as_ptr()) }
    }
}

impl fmt::Debug for WeakObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WeakObjectRef({:p})", self.0)
    }
}

/// A typed strong reference to an object: a `repr(transparent)` wrapper of [`ObjectRef`]
/// whose type index is known to be accepted by [`Self::accepts_type_index`].
///
/// # Safety
/// Implementors must be `repr(transparent)` over [`ObjectRef`], and every object whose type
/// index `accepts_type_index` accepts must have the memory layout the implementor reads.
pub unsafe trait ObjectRefType: Sized + Clone {
    /// Name used in conversion errors (normally the type key, e.g. `ffi.Array`).
    fn type_name() -> std::borrow::Cow<'static, str>;

    /// Whether an object of `type_index` can be viewed as `Self`.
    fn accepts_type_index(type_index: i32) -> bool;

    /// Wraps without checking.
    ///
    /// # Safety
    /// `object`'s type index must be accepted by [`Self::accepts_type_index`].
    unsafe fn from_object_ref_unchecked(object: ObjectRef) -> Self;

    /// The untyped reference.
    fn as_object_ref(&self) -> &ObjectRef;

    /// Gives up the typed view.
    fn into_object_ref(self) -> ObjectRef;
}

// SAFETY: ObjectRef accepts every object type and reads only the header.
unsafe impl ObjectRefType for ObjectRef {
    fn type_name() -> std::borrow::Cow<'static, str> {
        "ffi.Object".into()
    }
    fn accepts_type_index(type_index: i32) -> bool {
        type_index >= TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0
    }
    unsafe fn from_object_ref_unchecked(object: ObjectRef) -> Self {
        object
    }
    fn as_object_ref(&self) -> &ObjectRef {
        self
    }
    fn into_object_ref(self) -> ObjectRef {
        self
    }
}

/// Implements [`ObjectRefType`] for a built-in typed reference `$ty(ObjectRef)` of static type
/// index `$index` (the `Any` conversions come from `any::builtin_object_ref!`, one layer up).
macro_rules! object_ref_type {
    ($ty:ident, $index:expr, $key:literal) => {
        // SAFETY: `$ty` is repr(transparent) over ObjectRef and reads the layout of `$key`,
        // which static type index `$index` denotes.
        unsafe impl $crate::object::ObjectRefType for $ty {
            fn type_name() -> ::std::borrow::Cow<'static, str> {
                $key.into()
            }
            #[inline]
            fn accepts_type_index(type_index: i32) -> bool {
                type_index == $index.0
            }
            #[inline]
            unsafe fn from_object_ref_unchecked(object: $crate::object::ObjectRef) -> Self {
                $ty(object)
            }
            #[inline]
            fn as_object_ref(&self) -> &$crate::object::ObjectRef {
                &self.0
            }
            #[inline]
            fn into_object_ref(self) -> $crate::object::ObjectRef {
                self.0
            }
        }
    };
}
pub(crate) use object_ref_type;

/// Locks serialising Rust access to mutable shared containers (List, Dict), striped by address.
static OBJECT_LOCKS: [Mutex<()>; 64] = [const { Mutex::new(()) }; 64];

/// Locks the stripe of `object`. Rust code holds it while touching a mutable container's cell.
pub(crate) fn object_lock(object: &ObjectRef) -> MutexGuard<'static, ()> {
    let stripe = (object.as_raw() as usize >> 4) % OBJECT_LOCKS.len();
    OBJECT_LOCKS[stripe]
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
