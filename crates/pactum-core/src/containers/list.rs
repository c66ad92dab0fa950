//! [`List`] (`ffi.List`): a mutable, shared sequence whose elements live in a separate
//! heap buffer freed through the cell's `data_deleter` (never NULL), so C++ code can grow a
//! list we made and we can grow one C++ made (see [`alloc_elements`] for which allocator).
//!
//! Lists are shared and mutable like their C++ counterpart. Rust code reaches the contents
//! only under a lock keyed by the object's address ([`crate::containers::lock`]), so safe Rust
//! never races with itself; foreign code mutating the same list concurrently is as unsafe as
//! it is in C++.

use core::ffi::{c_int, c_void};
use core::fmt;

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIObject, TVMFFISeqCell, TVMFFITypeIndex};

use super::seq;
use crate::any::Any;
use crate::boundary;
use crate::error::{Error, ErrorKind, Result};
use crate::object::object_lock;
use crate::object::{ObjectRef, alloc_raw_object, free_raw_object};

const LIST_LAYOUT: core::alloc::Layout = match core::alloc::Layout::from_size_align(56, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("invalid list layout"),
};

/// The deleter of buffers from `malloc` (processes with no C++ runtime in the global scope).
pub(crate) unsafe extern "C" fn free_buffer(data: *mut c_void) {
    // SAFETY: installed only next to buffers `alloc_elements` got from malloc.
    boundary::deleter(|| unsafe { libc::free(data) })
}

/// The deleter of buffers from C++'s `operator new`: `::operator delete`, as C++'s own
/// `ListObj::RawDataDeleter`.
unsafe extern "C" fn delete_buffer(data: *mut c_void) {
    boundary::deleter(|| {
        let cxx = cxx_allocator().expect("installed only where the C++ allocator was found");
        // SAFETY: installed only next to buffers from `cxx.new` (or from the C++ header's
        // `ListObj::Reserve`, which calls the same global `::operator new`).
        unsafe { (cxx.delete)(data) }
    })
}

/// C++'s global `operator new(size_t, const std::nothrow_t&)` and `operator delete(void*)`.
struct CxxAllocator {
    new: unsafe extern "C" fn(usize, *const u8) -> *mut c_void,
    delete: unsafe extern "C" fn(*mut c_void),
}

/// The C++ allocator of the process's global scope, looked up once, at the first list buffer.
///
/// The C++ header's `ListObj::Reserve` grows a list by allocating with `::operator new`, calling
/// the cell's `data_deleter` on the old buffer and keeping that deleter for the new one. So the
/// deleter we install must release `operator new` memory: freeing it with `free` is an
/// allocation/deallocation mismatch, which breaks programs that replace `operator new` and
/// aborts them under AddressSanitizer (`scripts/sanitize.sh` found it with
/// `crates/pactum-capi/tests/cpp/interop.cc`). Where C++ is loaded we therefore allocate and
/// free list buffers as the official library does. Where it is not (a Rust or C host),
/// `malloc`/`free` stay in use; a C++ runtime loaded later (say, privately by a C++ module a
/// Rust host loads) is not seen, so lists its header code grows are freed with `free`, which
/// matches libstdc++'s default `operator new` but not a replaced one.
fn cxx_allocator() -> Option<&'static CxxAllocator> {
    static CXX_ALLOCATOR: std::sync::OnceLock<Option<CxxAllocator>> = std::sync::OnceLock::new();
    CXX_ALLOCATOR
        .get_or_init(|| {
            // Miri has no dynamic loader: pure-Rust runs use malloc/free, which it models.
            if cfg!(miri) {
                return None;
            }
            // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only reads the loader's
            // tables.
            let (new, delete) = unsafe {
                (
                    libc::dlsym(libc::RTLD_DEFAULT, c"_ZnwmRKSt9nothrow_t".as_ptr()),
                    libc::dlsym(libc::RTLD_DEFAULT, c"_ZdlPv".as_ptr()),
                )
            };
            if new.is_null() || delete.is_null() {
                return None;
            }
            type NewFn = unsafe extern "C" fn(usize, *const u8) -> *mut c_void;
            type DeleteFn = unsafe extern "C" fn(*mut c_void);
            // SAFETY: these Itanium-mangled names are `operator new(std::size_t, const
            // std::nothrow_t&)` (the empty `nothrow_t` passed by reference, a pointer; NULL
            // instead of throwing) and `operator delete(void*)`, with exactly these signatures.
            Some(unsafe {
                CxxAllocator {
                    new: core::mem::transmute::<*mut c_void, NewFn>(new),
                    delete: core::mem::transmute::<*mut c_void, DeleteFn>(delete),
                }
            })
        })
        .as_ref()
}

unsafe extern "C" fn list_deleter(obj: *mut c_void, flags: c_int) {
    let cell = obj
        .cast::<TVMFFIObject>()
        .wrapping_add(1)
        .cast::<TVMFFISeqCell>();
    let release = || {
        // SAFETY: the strong count reached zero; follow the cell as C++ may have left it.
        unsafe {
            seq::drop_elements((*cell).data.cast::<TVMFFIAny>(), (*cell).size);
            (*cell).size = 0;
            if let Some(deleter) = (*cell).data_deleter {
                deleter((*cell).data);
            }
            (*cell).data = core::ptr::null_mut();
        }
    };
    // SAFETY: allocated by List::with_capacity with LIST_LAYOUT; the weak flag comes once.
    let free = || unsafe { free_raw_object(obj.cast(), LIST_LAYOUT) };
    boundary::object_deleter(flags, release, free);
}

/// A mutable, shared sequence of values (`ffi.List`).
#[repr(transparent)]
#[derive(Clone)]
pub struct List(ObjectRef);

crate::any::builtin_object_ref!(List, TVMFFITypeIndex::LIST, "ffi.List");

/// A buffer for `capacity` values and the `data_deleter` that frees it: C++'s `operator new`
/// and `operator delete` when the process has them (see [`cxx_allocator`]), else `malloc` and
/// `free`.
fn alloc_elements(capacity: usize) -> (*mut TVMFFIAny, unsafe extern "C" fn(*mut c_void)) {
    let cxx = cxx_allocator();
    let deleter = if cxx.is_some() {
        delete_buffer
    } else {
        free_buffer
    };
    if capacity == 0 {
        return (core::ptr::null_mut(), deleter);
    }
    let bytes = capacity.checked_mul(16).expect("list too large");
    let data = match cxx {
        // SAFETY: the nothrow `operator new` of a positive size; the tag is never read.
        Some(cxx) => unsafe { (cxx.new)(bytes, [0u8].as_ptr()) },
        // SAFETY: plain allocation of a positive size.
        None => unsafe { libc::malloc(bytes) },
    }
    .cast::<TVMFFIAny>();
    if data.is_null() {
        std::alloc::handle_alloc_error(
            core::alloc::Layout::from_size_align(bytes, 16).expect("list too large"),
        );
    }
    (data, deleter)
}

impl List {
    /// An empty list.
    pub fn new() -> List {
        List::with_capacity(0)
    }

    /// An empty list with room for `capacity` values.
    pub fn with_capacity(capacity: usize) -> List {
        let (data, deleter) = alloc_elements(capacity);
        let obj =
            alloc_raw_object(LIST_LAYOUT, TVMFFITypeIndex::LIST.0, Some(list_deleter)).as_ptr();
        // SAFETY: the allocation holds the header and the cell.
        unsafe {
            obj.add(1).cast::<TVMFFISeqCell>().write(TVMFFISeqCell {
                data: data.cast(),
                size: 0,
                capacity: capacity as i64,
                data_deleter: Some(deleter),
            });
        }
        // SAFETY: a fresh object whose single strong reference we take.
        List(unsafe { ObjectRef::from_raw_owned(core::ptr::NonNull::new_unchecked(obj)) })
    }

    /// A list holding `values`.
    pub fn from_values(values: impl IntoIterator<Item = Any>) -> List {
        let values: Vec<Any> = values.into_iter().collect();
        let list = List::with_capacity(values.len());
        for value in values {
            list.push(value);
        }
        list
    }

    fn with_cell<R>(&self, body: impl FnOnce(&mut TVMFFISeqCell) -> R) -> R {
        let _guard = object_lock(&self.0);
        // SAFETY: the lock serialises Rust access to this object's cell; `self` keeps it alive.
        body(unsafe { &mut *seq::cell(&self.0) })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.with_cell(|cell| cell.size.max(0) as usize)
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of element `index`.
    pub fn get(&self, index: usize) -> Option<Any> {
        self.with_cell(|cell| {
            // SAFETY: in-bounds element of the locked cell.
            (index < cell.size.max(0) as usize)
                .then(|| unsafe { (*cell.data.cast::<Any>().add(index)).clone() })
        })
    }

    /// A snapshot of the elements.
    pub fn to_vec(&self) -> Vec<Any> {
        self.with_cell(|cell| {
            let size = cell.size.max(0) as usize;
            // SAFETY: `size` owned elements at `data` in the locked cell.
            (0..size)
                .map(|i| unsafe { (*cell.data.cast::<Any>().add(i)).clone() })
                .collect()
        })
    }

    /// Makes room for at least `additional` more values.
    fn reserve_locked(cell: &mut TVMFFISeqCell, additional: usize) {
        let size = cell.size.max(0) as usize;
        let needed = size.checked_add(additional).expect("list too large");
        if cell.capacity.max(0) as usize >= needed {
            return;
        }
        let new_capacity = needed.max((cell.capacity.max(0) as usize).saturating_mul(2));
        let (data, deleter) = alloc_elements(new_capacity);
        // SAFETY: move `size` raw values into the new buffer (values are bitwise-relocatable),
        // then release the old buffer through whichever deleter allocated it.
        unsafe {
            if size > 0 {
                core::ptr::copy_nonoverlapping(cell.data.cast::<TVMFFIAny>(), data, size);
            }
            if let Some(deleter) = cell.data_deleter {
                deleter(cell.data);
            }
        }
        cell.data = data.cast();
        cell.capacity = new_capacity as i64;
        cell.data_deleter = Some(deleter);
    }

    /// Makes room for at least `capacity` values in total.
    pub fn reserve(&self, capacity: usize) {
        self.with_cell(|cell| {
            let size = cell.size.max(0) as usize;
            List::reserve_locked(cell, capacity.saturating_sub(size));
        })
    }

    /// Appends a value.
    pub fn push(&self, value: impl Into<Any>) {
        let value = value.into();
        self.with_cell(|cell| {
            List::reserve_locked(cell, 1);
            // SAFETY: capacity exceeds size after reserving.
            unsafe {
                cell.data
                    .cast::<TVMFFIAny>()
                    .add(cell.size as usize)
                    .write(value.into_raw())
            };
            cell.size += 1;
        })
    }

    /// Inserts at `index` (0..=len).
    pub fn insert(&self, index: usize, value: impl Into<Any>) -> Result<()> {
        let value = value.into();
        self.with_cell(|cell| {
            let size = cell.size.max(0) as usize;
            if index > size {
                return Err(Error::new(
                    ErrorKind::INDEX_ERROR,
                    format!("Index {index} out of bounds [0, {size}]"),
                ));
            }
            List::reserve_locked(cell, 1);
            // SAFETY: shift the tail up by one within capacity, then fill the hole.
            unsafe {
                let data = cell.data.cast::<TVMFFIAny>();
                core::ptr::copy(data.add(index), data.add(index + 1), size - index);
                data.add(index).write(value.into_raw());
            }
            cell.size += 1;
            Ok(())
        })
    }

    /// Replaces element `index`.
    pub fn set(&self, index: usize, value: impl Into<Any>) -> Result<()> {
        let value = value.into();
        let old = self.with_cell(|cell| {
            let size = cell.size.max(0) as usize;
            if index >= size {
                return Err(Error::new(
                    ErrorKind::INDEX_ERROR,
                    format!("Index {index} out of bounds {size}"),
                ));
            }
            // SAFETY: in-bounds slot; the old value is handed back to be dropped outside the lock.
            Ok(unsafe {
                Any::from_raw(
                    cell.data
                        .cast::<TVMFFIAny>()
                        .add(index)
                        .replace(value.into_raw()),
                )
            })
        })?;
        drop(old);
        Ok(())
    }

    /// Removes and returns element `index`.
    pub fn remove(&self, index: usize) -> Result<Any> {
        self.with_cell(|cell| {
            let size = cell.size.max(0) as usize;
            if index >= size {
                return Err(Error::new(
                    ErrorKind::INDEX_ERROR,
                    format!("Index {index} out of bounds {size}"),
                ));
            }
            // SAFETY: take the value out and close the gap.
            let value = unsafe {
                let data = cell.data.cast::<TVMFFIAny>();
                let value = data.add(index).read();
                core::ptr::copy(data.add(index + 1), data.add(index), size - index - 1);
                Any::from_raw(value)
            };
            cell.size -= 1;
            Ok(value)
        })
    }

    /// Removes and returns the last element.
    pub fn pop(&self) -> Option<Any> {
        let len = self.len();
        if len == 0 {
            None
        } else {
            self.remove(len - 1).ok()
        }
    }

    /// Removes every element (keeps the capacity).
    pub fn clear(&self) {
        let removed = self.with_cell(|cell| {
            let size = cell.size.max(0) as usize;
            cell.size = 0;
            // SAFETY: the values are taken out of the cell before being dropped.
            (0..size)
                .map(|i| unsafe { Any::from_raw(cell.data.cast::<TVMFFIAny>().add(i).read()) })
                .collect::<Vec<_>>()
        });
        drop(removed);
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

impl Default for List {
    fn default() -> Self {
        List::new()
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.to_vec()).finish()
    }
}
