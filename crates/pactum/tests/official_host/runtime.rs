//! Runtime services through the official library: errors, the registry and the type table.

use pactum::object::{TypeInfo, type_index_of_key};
use pactum::sys::tvm_ffi::TVMFFIByteArray;
use pactum::{Any, Error, ErrorKind, Function, Obj, ObjectType};

use super::maps::official;

#[test]
fn errors_go_through_the_official_slot() {
    if !official() {
        return;
    }
    Error::new(ErrorKind::KEY_ERROR, "raised by pactum").set_raised();
    let mut handle = std::ptr::null_mut();
    // SAFETY: a valid out pointer; the official runtime hands over its slot's reference.
    unsafe { (pactum::runtime::api().TVMFFIErrorMoveFromRaised)(&mut handle) };
    assert!(!handle.is_null(), "the official slot holds pactum's error");
    // SAFETY: MoveFromRaised returned a new reference.
    let object = unsafe {
        pactum::ObjectRef::from_raw_owned(std::ptr::NonNull::new(handle.cast()).unwrap())
    };
    let error: Error = Any::from(object).cast().unwrap();
    assert_eq!(error.message(), "raised by pactum");
    // And an error raised by the official runtime comes back to pactum.
    let error = Function::get_global("ffi.ArraySize")
        .unwrap()
        .call(&[1i64.into()])
        .unwrap_err();
    assert_eq!(error.kind(), "TypeError");
    assert!(
        error
            .message()
            .starts_with("Mismatched type on argument #0"),
        "{error}"
    );
}

#[test]
fn pactum_functions_are_visible_in_the_official_registry() {
    if !official() {
        return;
    }
    Function::from_typed(|x: i64| x + 1)
        .register_global("pactum.host.increment", true)
        .unwrap();
    let name = "pactum.host.increment";
    let bytes = TVMFFIByteArray {
        data: name.as_ptr().cast(),
        size: name.len(),
    };
    let mut handle = std::ptr::null_mut();
    // SAFETY: valid name and out pointer.
    let rc = unsafe { (pactum::runtime::api().TVMFFIFunctionGetGlobal)(&bytes, &mut handle) };
    assert_eq!(rc, 0);
    assert!(!handle.is_null());
    // SAFETY: GetGlobal returned a new reference.
    unsafe { (pactum::runtime::api().TVMFFIObjectDecRef)(handle) };
    let listed: pactum::Function = Function::get_global("ffi.FunctionListGlobalNamesFunctor")
        .unwrap()
        .call_typed(())
        .unwrap();
    let count: i64 = listed.call_typed((-1i64,)).unwrap();
    let names: Vec<std::string::String> = (0..count)
        .map(|i| listed.call_typed((i,)).unwrap())
        .collect();
    assert!(names.iter().any(|n| n == name));
}

struct HostPoint {
    x: i64,
}
pactum::object_type!(HostPoint, "pactum.host.Point");

#[test]
fn user_types_are_registered_in_the_official_type_table() {
    if !official() {
        return;
    }
    let index = HostPoint::type_index();
    assert!(index >= 128);
    assert_eq!(type_index_of_key("pactum.host.Point").unwrap(), index);
    let info = TypeInfo::of(index).expect("registered");
    assert_eq!(info.type_key(), "pactum.host.Point");
    assert_eq!(info.ancestor(0).unwrap().type_key(), "ffi.Object");
    let point: Obj<HostPoint> = Any::from(Obj::new(HostPoint { x: 3 })).cast().unwrap();
    assert_eq!(point.x, 3);
    // Asking about an index nobody registered is answered, not fatal (the official
    // TVMFFIGetTypeInfo would exit the process).
    assert!(TypeInfo::of(100_000).is_none());
    assert!(TypeInfo::of(index + 1000).is_none());
}
