//! User-defined object types: a Rust value behind an FFI object header, registered in the
//! runtime's type table under a type key with a dynamic index (128 and above).

use core::marker::PhantomData;
use core::ops::Deref;

use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use super::{ObjectBox, ObjectRef, ObjectRefType, new_object_box, types};

/// A Rust type that can live inside an FFI object.
///
/// Implement it with [`object_type!`](crate::object_type) for a type at the root of the
/// hierarchy, or by hand for a subtype.
///
/// # Safety
/// - `TYPE_KEY` must be unique to this Rust type in the process: every object the runtime
///   labels with this key's index is read as `Self`.
/// - If `parent_type_index` names another `ObjectType` `P`, `Self` must be `repr(C)` and start
///   with a field of type `P`, so that an object of `Self` can be read as `P`.
pub unsafe trait ObjectType: Send + Sync + Sized + 'static {
    /// Unique type key, e.g. `"mylib.Point"`.
    const TYPE_KEY: &'static str;

    /// The parent's type index (the root `ffi.Object` by default).
    fn parent_type_index() -> i32 {
        TVMFFITypeIndex::OBJECT.0
    }

    /// The index the runtime assigned to [`Self::TYPE_KEY`] (registered on first use).
    fn type_index() -> i32;
}

/// Registers `key` as a subtype of `parent` (used by [`object_type!`](crate::object_type)).
#[doc(hidden)]
pub fn register_object_type(key: &str, parent: i32) -> i32 {
    types::register_type(key, parent)
}

/// Declares a Rust type as an FFI object type at the root of the type hierarchy.
///
/// ```
/// struct Counter { hits: std::sync::atomic::AtomicU64 }
/// pactum::object_type!(Counter, "example.Counter");
///
/// let counter = pactum::Obj::new(Counter { hits: 0.into() });
/// assert!(<Counter as pactum::ObjectType>::type_index() >= 128);
/// let any = pactum::Any::from(counter.clone());
/// let back: pactum::Obj<Counter> = any.cast().unwrap();
/// back.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
/// assert_eq!(counter.hits.load(std::sync::atomic::Ordering::Relaxed), 1);
/// ```
///
/// The key must be unique to this type in the process (see [`ObjectType`]).
#[macro_export]
macro_rules! object_type {
    ($ty:ty, $key:expr) => {
        // SAFETY: the macro's caller promises the key is unique to `$ty`; the parent is the
        // root object, so no layout prefix is required.
        unsafe impl $crate::ObjectType for $ty {
            const TYPE_KEY: &'static str = $key;
            fn type_index() -> i32 {
                static INDEX: ::std::sync::OnceLock<i32> = ::std::sync::OnceLock::new();
                *INDEX.get_or_init(|| {
                    $crate::object::register_object_type(
                        $key,
                        <Self as $crate::ObjectType>::parent_type_index(),
                    )
                })
            }
        }
    };
}

/// A strong reference to an object holding a `T`.
#[repr(transparent)]
pub struct Obj<T: ObjectType> {
    object: ObjectRef,
    _marker: PhantomData<T>,
}

impl<T: ObjectType> Obj<T> {
    /// Moves `value` into a new object of type `T`.
    pub fn new(value: T) -> Self {
        const {
            assert!(
                core::mem::align_of::<T>() <= 8,
                "object payloads must be at most 8-byte aligned"
            )
        };
        let ptr = new_object_box(T::type_index(), value);
        // SAFETY: a fresh object with one strong reference that we take.
        let object = unsafe { ObjectRef::from_raw_owned(ptr.cast()) };
        Obj {
            object,
            _marker: PhantomData,
        }
    }

    /// The untyped reference.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.object
    }
}

impl<T: ObjectType> Deref for Obj<T> {
    type Target = T;
    fn deref(&self) -> &T {
        let boxed = self.object.as_raw().cast::<ObjectBox<T>>();
        // SAFETY: the type check at construction guarantees the object holds a `T` (or a
        // subtype starting with a `T`) right after the header; `self` keeps it alive.
        unsafe { &(*boxed).cell }
    }
}

impl<T: ObjectType> Clone for Obj<T> {
    fn clone(&self) -> Self {
        Obj {
            object: self.object.clone(),
            _marker: PhantomData,
        }
    }
}

impl<T: ObjectType + core::fmt::Debug> core::fmt::Debug for Obj<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Obj").field(&**self).finish()
    }
}

// SAFETY: Obj<T> is repr(transparent) over ObjectRef (PhantomData is zero-sized) and accepts
// exactly `T` and its subtypes, whose layout starts with a `T` (ObjectType's contract).
unsafe impl<T: ObjectType> ObjectRefType for Obj<T> {
    fn type_name() -> std::borrow::Cow<'static, str> {
        T::TYPE_KEY.into()
    }
    fn accepts_type_index(type_index: i32) -> bool {
        types::is_instance(type_index, T::type_index())
    }
    unsafe fn from_object_ref_unchecked(object: ObjectRef) -> Self {
        Obj {
            object,
            _marker: PhantomData,
        }
    }
    fn as_object_ref(&self) -> &ObjectRef {
        &self.object
    }
    fn into_object_ref(self) -> ObjectRef {
        self.object
    }
}

impl<T: ObjectType> From<Obj<T>> for crate::Any {
    fn from(value: Obj<T>) -> Self {
        crate::Any::from_object_ref(value.object)
    }
}

impl<T: ObjectType> crate::any::FromAny for Obj<T> {
    fn from_any(any: crate::Any) -> crate::Result<Self> {
        crate::any::object_from_any(any)
    }
}

impl<'a, T: ObjectType> crate::any::FromAnyView<'a> for Obj<T> {
    fn from_any_view(view: &'a crate::AnyView<'_>) -> crate::Result<Self> {
        crate::any::object_from_view(view)
    }
}

impl<'a, T: ObjectType> From<&'a Obj<T>> for crate::AnyView<'a> {
    fn from(value: &'a Obj<T>) -> Self {
        crate::any::view_of_object(value)
    }
}
