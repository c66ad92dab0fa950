//! The reference-counting protocol, deleter flags, weak references and user-defined types.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use pactum::sys::tvm_ffi::{TVMFFI_FRESH_REF_COUNT, TVMFFIObject};
use pactum::{Any, Obj, ObjectRef, ObjectRefType, ObjectType};

/// A C-style object with a deleter that records the flags it is called with.
#[repr(C)]
struct Probe {
    header: TVMFFIObject,
    log: *const Mutex<Vec<c_int>>,
}

unsafe extern "C" fn probe_deleter(obj: *mut c_void, flags: c_int) {
    let probe = obj.cast::<Probe>();
    // SAFETY: the probe object is allocated by this test and alive while referenced.
    unsafe { (*(*probe).log).lock().unwrap().push(flags) };
    if flags & 2 != 0 {
        // SAFETY: the probe object is allocated by this test and alive while referenced.
        drop(unsafe { Box::from_raw(probe) });
    }
}

fn new_probe(log: &Mutex<Vec<c_int>>) -> ObjectRef {
    let probe = Box::new(Probe {
        header: TVMFFIObject {
            combined_ref_count: TVMFFI_FRESH_REF_COUNT,
            type_index: 64,
            padding: 0,
            deleter: Some(probe_deleter),
        },
        log,
    });
    // SAFETY: the probe object is allocated by this test and alive while referenced.
    unsafe {
        ObjectRef::from_raw_owned(std::ptr::NonNull::new(Box::into_raw(probe).cast()).unwrap())
    }
}

#[test]
fn last_reference_calls_the_deleter_once_with_both_flags() {
    let log = Mutex::new(Vec::new());
    let object = new_probe(&log);
    assert_eq!(
        // SAFETY: the probe object is allocated by this test and alive while referenced.
        unsafe { (*object.as_raw()).combined_ref_count },
        0x1_0000_0001
    );
    let clone = object.clone();
    assert_eq!(object.strong_count(), 2);
    drop(object);
    assert!(log.lock().unwrap().is_empty());
    drop(clone);
    assert_eq!(*log.lock().unwrap(), vec![3]);
}

#[test]
fn weak_references_split_destroy_and_free() {
    let log = Mutex::new(Vec::new());
    let object = new_probe(&log);
    let weak = object.downgrade();
    assert_eq!(object.weak_count(), 2);
    assert!(weak.upgrade().is_some());
    drop(object);
    assert_eq!(
        *log.lock().unwrap(),
        vec![1],
        "strong count hit zero: destroy only"
    );
    assert!(weak.upgrade().is_none(), "a dead object cannot be upgraded");
    let weak2 = weak.clone();
    drop(weak);
    assert_eq!(*log.lock().unwrap(), vec![1]);
    drop(weak2);
    assert_eq!(
        *log.lock().unwrap(),
        vec![1, 2],
        "weak count hit zero: free"
    );
}

#[test]
fn uniqueness_needs_no_other_strong_or_weak_reference() {
    let log = Mutex::new(Vec::new());
    let object = new_probe(&log);
    assert!(object.is_unique());
    let weak = object.downgrade();
    assert!(!object.is_unique());
    drop(weak);
    assert!(object.is_unique());
}

static POINTS_DROPPED: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
struct Point {
    x: f64,
    y: f64,
}
impl Drop for Point {
    fn drop(&mut self) {
        POINTS_DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}
pactum::object_type!(Point, "pactum.test.Point");

#[repr(C)]
#[derive(Debug)]
struct Point3 {
    base: Point,
    z: f64,
}
// SAFETY: Point3 starts with a Point and its key is unique to it.
unsafe impl ObjectType for Point3 {
    const TYPE_KEY: &'static str = "pactum.test.Point3";
    fn parent_type_index() -> i32 {
        Point::type_index()
    }
    fn type_index() -> i32 {
        static INDEX: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
        *INDEX.get_or_init(|| {
            pactum::object::register_object_type(Self::TYPE_KEY, Self::parent_type_index())
        })
    }
}

#[test]
fn user_types_get_dynamic_indices_and_ancestry() {
    let point_index = Point::type_index();
    let point3_index = Point3::type_index();
    assert!(point_index >= 128 && point3_index >= 128 && point3_index != point_index);
    assert_eq!(
        pactum::object::type_index_of_key("pactum.test.Point").unwrap(),
        point_index
    );
    let info = pactum::object::TypeInfo::of(point3_index).unwrap();
    assert_eq!(info.type_key(), "pactum.test.Point3");
    assert_eq!(info.type_depth(), 2);
    assert_eq!(info.ancestor(0).unwrap().type_index(), 64);
    assert_eq!(info.ancestor(1).unwrap().type_index(), point_index);

    let before = POINTS_DROPPED.load(Ordering::SeqCst);
    let p3 = Obj::new(Point3 {
        base: Point { x: 1.0, y: 2.0 },
        z: 3.0,
    });
    let any = Any::from(p3.clone());
    assert!(
        any.as_object_ref().unwrap().is::<Obj<Point>>(),
        "a Point3 is a Point"
    );
    let as_point: Obj<Point> = any.clone().cast().unwrap();
    assert_eq!((as_point.x, as_point.y), (1.0, 2.0));
    let error = Any::from(Obj::new(Point { x: 0.0, y: 0.0 }))
        .cast::<Obj<Point3>>()
        .unwrap_err();
    assert_eq!(
        error.message(),
        "expected pactum.test.Point3, got pactum.test.Point"
    );
    assert_eq!(p3.z, 3.0);
    drop((p3, any, as_point));
    assert_eq!(
        POINTS_DROPPED.load(Ordering::SeqCst),
        before + 2,
        "both points dropped exactly once"
    );
}

#[test]
fn unknown_type_keys_are_errors() {
    let error = pactum::object::type_index_of_key("no.such.Type").unwrap_err();
    assert!(error.message().contains("no.such.Type"), "{error}");
    assert_eq!(pactum::object::type_key_of(71), "ffi.Array");
    assert_eq!(pactum::object::type_key_of(5), "DataType");
}

#[test]
fn shapes_store_extents_inline() {
    let shape = pactum::Shape::new(&[2, 3, 4]);
    assert_eq!(shape.as_slice(), &[2, 3, 4]);
    assert_eq!(shape.numel(), 24);
    let object = shape.as_object_ref();
    // SAFETY: the probe object is allocated by this test and alive while referenced.
    let cell = unsafe {
        &*object
            .as_raw()
            .add(1)
            .cast::<pactum::sys::tvm_ffi::TVMFFIShapeCell>()
    };
    assert_eq!(
        cell.data as usize,
        object.as_raw() as usize + 40,
        "extents follow the 40-byte header"
    );
    let back: pactum::Shape = Any::from(shape.clone()).cast().unwrap();
    assert_eq!(back, shape);
}

#[test]
fn arrays_and_lists_use_the_official_layouts() {
    let array = pactum::Array::new((0..5).map(|i| Any::from(i as i64)));
    // SAFETY: the probe object is allocated by this test and alive while referenced.
    let cell = unsafe {
        &*array
            .as_object_ref()
            .as_raw()
            .add(1)
            .cast::<pactum::sys::tvm_ffi::TVMFFISeqCell>()
    };
    assert_eq!(
        cell.data as usize,
        array.as_object_ref().as_raw() as usize + 56,
        "inline elements"
    );
    assert!(cell.data_deleter.is_none());
    assert_eq!((cell.size, cell.capacity), (5, 5));
    assert_eq!(array.get_as::<i64>(4).unwrap(), 4);
    assert_eq!(array.get_as::<i64>(5).unwrap_err().kind(), "IndexError");

    let list = pactum::List::new();
    for i in 0..10 {
        list.push(i as i64);
    }
    list.insert(0, "head").unwrap();
    assert_eq!(list.len(), 11);
    assert_eq!(list.get(0).unwrap().get::<&str>().unwrap(), "head");
    assert_eq!(list.remove(1).unwrap().get::<i64>().unwrap(), 0);
    list.set(0, 99i64).unwrap();
    assert_eq!(list.pop().unwrap().get::<i64>().unwrap(), 9);
    // SAFETY: the probe object is allocated by this test and alive while referenced.
    let cell = unsafe {
        &*list
            .as_object_ref()
            .as_raw()
            .add(1)
            .cast::<pactum::sys::tvm_ffi::TVMFFISeqCell>()
    };
    assert!(
        cell.data_deleter.is_some(),
        "list buffers always carry a deleter"
    );
    assert!(list.insert(100, 1i64).is_err());
    list.clear();
    assert!(list.is_empty());
}
