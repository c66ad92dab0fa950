//! [`Array`] (`ffi.Array`): an immutable-by-convention sequence with inline element storage
//! (elements right after the 56-byte object, `data_deleter` NULL), like C++ `ArrayObj`.

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::fmt;

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIObject, TVMFFISeqCell, TVMFFITypeIndex};

use super::seq;
use crate::any::{Any, AnyView, FromAny};
use crate::boundary;
use crate::error::{Error, ErrorKind, Result};
use crate::object::{ObjectRef, alloc_raw_object, free_raw_object};

const ARRAY_HEADER: usize =
    core::mem::size_of::<TVMFFIObject>() + core::mem::size_of::<TVMFFISeqCell>();

fn array_layout(capacity: usize) -> Layout {
    let bytes = capacity
        .checked_mul(16)
        .and_then(|b| b.checked_add(ARRAY_HEADER))
        .expect("array too large");
    Layout::from_size_align(bytes, 8).expect("array too large")
}

unsafe extern "C" fn array_deleter(obj: *mut c_void, flags: c_int) {
    let cell = obj
        .cast::<TVMFFIObject>()
        .wrapping_add(1)
        .cast::<TVMFFISeqCell>();
    let release = || {
        // SAFETY: the strong count reached zero; C++ may have moved the elements out (size 0)
        // or mutated them in place, so follow the cell as it is now.
        unsafe {
            seq::drop_elements((*cell).data.cast::<TVMFFIAny>(), (*cell).size);
            (*cell).size = 0;
            if let Some(deleter) = (*cell).data_deleter {
                deleter((*cell).data);
            }
        }
    };
    let free = || {
        // SAFETY: C++ never changes an Array's capacity in place, so it still describes our
        // allocation; the weak flag comes once.
        unsafe {
            let capacity = (*cell).capacity as usize;
            free_raw_object(obj.cast(), array_layout(capacity));
        }
    };
    boundary::object_deleter(flags, release, free);
}

/// A sequence of values (`ffi.Array`).
#[repr(transparent)]
#[derive(Clone)]
pub struct Array(ObjectRef);

crate::any::builtin_object_ref!(Array, TVMFFITypeIndex::ARRAY, "ffi.Array");

impl Array {
    /// An array holding `values`, in order.
    pub fn new(values: impl IntoIterator<Item = Any>) -> Array {
        let values: Vec<Any> = values.into_iter().collect();
        let capacity = values.len();
        let obj = alloc_raw_object(
            array_layout(capacity),
            TVMFFITypeIndex::ARRAY.0,
            Some(array_deleter),
        )
        .as_ptr();
        // SAFETY: the allocation holds the header, the cell and `capacity` elements.
        unsafe {
            let data = obj.cast::<u8>().add(ARRAY_HEADER).cast::<TVMFFIAny>();
            for (i, value) in values.into_iter().enumerate() {
                data.add(i).write(value.into_raw());
            }
            obj.add(1).cast::<TVMFFISeqCell>().write(TVMFFISeqCell {
                data: data.cast(),
                size: capacity as i64,
                capacity: capacity as i64,
                data_deleter: None,
            });
        }
        // SAFETY: a fresh object whose single strong reference we take.
        Array(unsafe { ObjectRef::from_raw_owned(core::ptr::NonNull::new_unchecked(obj)) })
    }

    /// An array of `len` values made by `make(0)`, `make(1)`, ... in order, written straight
    /// into the new array (no intermediate vector). The first error is returned, and the
    /// values made before it are released.
    pub fn try_from_fn<E>(
        len: usize,
        mut make: impl FnMut(usize) -> core::result::Result<Any, E>,
    ) -> core::result::Result<Array, E> {
        let obj = alloc_raw_object(
            array_layout(len),
            TVMFFITypeIndex::ARRAY.0,
            Some(array_deleter),
        )
        .as_ptr();
        // SAFETY: the allocation holds the header, the cell and `len` elements; the cell
        // starts empty, so the deleter releases nothing it should not.
        let (data, cell) = unsafe {
            let data = obj.cast::<u8>().add(ARRAY_HEADER).cast::<TVMFFIAny>();
            let cell = obj.add(1).cast::<TVMFFISeqCell>();
            cell.write(TVMFFISeqCell {
                data: data.cast(),
                size: 0,
                capacity: len as i64,
                data_deleter: None,
            });
            (data, cell)
        };
        // SAFETY: a fresh object whose single strong reference we take; from here on, an
        // early return drops it and its deleter releases the `size` elements written.
        let array =
            Array(unsafe { ObjectRef::from_raw_owned(core::ptr::NonNull::new_unchecked(obj)) });
        for i in 0..len {
            let value = make(i)?;
            // SAFETY: slot `i` is inside the allocation and unused; counting it only after
            // the write keeps the cell consistent. Nobody else sees the array yet.
            unsafe {
                data.add(i).write(value.into_raw());
                (*cell).size = i as i64 + 1;
            }
        }
        Ok(array)
    }

    /// An array of views converted to owned values.
    pub fn from_views(values: &[AnyView<'_>]) -> Result<Array> {
        Array::try_from_fn(values.len(), |i| values[i].to_any())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        seq::elements(&self.0).len()
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements.
    pub fn as_slice(&self) -> &[Any] {
        seq::elements(&self.0)
    }

    /// Element `index` as a view.
    pub fn get(&self, index: usize) -> Option<AnyView<'_>> {
        seq::get(&self.0, index)
    }

    /// Element `index` converted to `T`; an `IndexError` past the end.
    pub fn get_as<T: FromAny>(&self, index: usize) -> Result<T> {
        let value = self.as_slice().get(index).ok_or_else(|| {
            Error::new(
                ErrorKind::INDEX_ERROR,
                format!("Index {index} out of bounds {}", self.len()),
            )
        })?;
        value.clone().cast()
    }

    /// Iterates over the elements.
    pub fn iter(&self) -> core::slice::Iter<'_, Any> {
        self.as_slice().iter()
    }

    /// Overwrites the elements with `values` (as many as the array holds), in place, as C++
    /// may update a uniquely held array. For a wrong count nothing changes and `values` come
    /// back.
    ///
    /// # Safety
    /// Nothing else may read or write this array while this runs or keep a borrow of its
    /// elements: the array must be reachable only through the caller (the structural mutator's
    /// in-place mode, whose path from the root is uniquely owned).
    #[doc(hidden)]
    pub unsafe fn overwrite_unshared(&self, values: Vec<Any>) -> Result<(), Vec<Any>> {
        let cell = seq::cell(&self.0);
        // SAFETY: the cell of a live array; read before any write.
        let size = unsafe { (*cell).size };
        if usize::try_from(size).ok() != Some(values.len()) {
            return Err(values);
        }
        let mut old = Vec::with_capacity(values.len());
        for (index, value) in values.into_iter().enumerate() {
            // SAFETY: an in-bounds slot of an array nobody else uses (the caller's contract);
            // the replaced value is owned here and released after the loop.
            old.push(unsafe {
                Any::from_raw(
                    (*cell)
                        .data
                        .cast::<TVMFFIAny>()
                        .add(index)
                        .replace(value.into_raw()),
                )
            });
        }
        drop(old);
        Ok(())
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

impl FromIterator<Any> for Array {
    fn from_iter<I: IntoIterator<Item = Any>>(iter: I) -> Self {
        Array::new(iter)
    }
}

impl<'a> IntoIterator for &'a Array {
    type Item = &'a Any;
    type IntoIter = core::slice::Iter<'a, Any>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
