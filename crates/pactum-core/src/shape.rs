//! [`Shape`] (`ffi.Shape`): an immutable list of int64 extents, stored inline after the
//! header and shape cell.

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::fmt;
use core::ops::Deref;

use pactum_sys::tvm_ffi::{TVMFFIObject, TVMFFIShapeCell, TVMFFITypeIndex};

use crate::object::{ObjectRef, alloc_raw_object, free_raw_object};

const SHAPE_HEADER: usize =
    core::mem::size_of::<TVMFFIObject>() + core::mem::size_of::<TVMFFIShapeCell>();

fn shape_layout(len: usize) -> Layout {
    let bytes = len
        .checked_mul(8)
        .and_then(|b| b.checked_add(SHAPE_HEADER))
        .expect("shape too large");
    Layout::from_size_align(bytes, 8).expect("shape too large")
}

unsafe extern "C" fn shape_deleter(obj: *mut c_void, flags: c_int) {
    crate::boundary::object_deleter(
        flags,
        || {},
        || {
            let obj = obj.cast::<TVMFFIObject>();
            // SAFETY: the cell after the header records the extent count we allocated for.
            let len = unsafe { (*obj.add(1).cast::<TVMFFIShapeCell>()).size };
            // SAFETY: allocated by Shape::new with this layout; the weak flag comes once.
            unsafe { free_raw_object(obj, shape_layout(len)) }
        },
    )
}

/// An immutable shape (`ffi.Shape`).
#[repr(transparent)]
#[derive(Clone)]
pub struct Shape(ObjectRef);

crate::any::builtin_object_ref!(Shape, TVMFFITypeIndex::SHAPE, "ffi.Shape");

impl Shape {
    /// Copies `dims` into a new shape.
    pub fn new(dims: &[i64]) -> Shape {
        let obj = alloc_raw_object(
            shape_layout(dims.len()),
            TVMFFITypeIndex::SHAPE.0,
            Some(shape_deleter),
        )
        .as_ptr();
        // SAFETY: the allocation holds header + cell + dims.len() extents.
        unsafe {
            let data = obj.cast::<u8>().add(SHAPE_HEADER).cast::<i64>();
            core::ptr::copy_nonoverlapping(dims.as_ptr(), data, dims.len());
            obj.add(1).cast::<TVMFFIShapeCell>().write(TVMFFIShapeCell {
                data,
                size: dims.len(),
            });
        }
        // SAFETY: a fresh object whose single strong reference we take.
        Shape(unsafe { ObjectRef::from_raw_owned(core::ptr::NonNull::new_unchecked(obj)) })
    }

    /// The extents.
    pub fn as_slice(&self) -> &[i64] {
        // SAFETY: every Shape object has a shape cell after the header describing its extents.
        unsafe {
            let cell = &*self.0.as_raw().add(1).cast::<TVMFFIShapeCell>();
            if cell.size == 0 {
                &[]
            } else {
                core::slice::from_raw_parts(cell.data, cell.size)
            }
        }
    }

    /// Number of elements (product of extents).
    pub fn numel(&self) -> i64 {
        self.as_slice().iter().product()
    }
}

impl Deref for Shape {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        self.as_slice()
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shape({:?})", self.as_slice())
    }
}

impl PartialEq for Shape {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
