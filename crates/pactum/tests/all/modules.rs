//! A pure-Rust host (this test binary runs pactum's built-in runtime) loading a C-built
//! module that records `NEEDED libtvm_ffi.so`: the forwarder must make its C API calls reach
//! this process's runtime (same error slot, same registry).

use std::path::Path;
use std::sync::OnceLock;

use pactum::{Any, Function, Module};

use super::support;

fn module() -> Option<&'static Module> {
    static MODULE: OnceLock<Option<Module>> = OnceLock::new();
    MODULE
        .get_or_init(|| {
            let include = support::official_include_dir()?;
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/rust_host_module.c");
            let library = support::build_c_module(
                "rust_host_module",
                &[&source],
                &include,
                &support::official_lib_dir(),
            );
            Function::from_typed(|x: i64| x * 3)
                .register_global("pactum.test.triple", true)
                .unwrap();
            Some(
                Module::load(&library)
                    .expect("a C module with NEEDED libtvm_ffi.so loads into a Rust host"),
            )
        })
        .as_ref()
}

#[test]
fn c_module_functions_are_callable() {
    let Some(module) = module() else { return };
    assert_eq!(
        pactum::runtime::kind(),
        pactum::runtime::RuntimeKind::Builtin
    );
    let add = module.function("add_i64").unwrap();
    assert_eq!(add.call_typed::<_, i64>((40i64, 2i64)).unwrap(), 42);
    assert!(module.implements("add_i64").unwrap());
    assert!(!module.implements("missing").unwrap());
    assert!(module.get_function("missing").unwrap().is_none());
    assert_eq!(module.kind().unwrap().as_str(), "library");
}

#[test]
fn errors_raised_in_c_reach_the_rust_caller() {
    let Some(module) = module() else { return };
    let error = module.function("fail").unwrap().call(&[]).unwrap_err();
    assert_eq!(error.kind(), "ValueError");
    assert_eq!(error.message(), "failure from a C module");
    assert!(
        !error.backtrace().is_empty(),
        "errors raised from C carry a native backtrace"
    );
    let error = module
        .function("add_i64")
        .unwrap()
        .call(&[Any::from(1i64).view(), Any::from("x").view()])
        .unwrap_err();
    assert_eq!(error.kind(), "TypeError");
    assert!(
        pactum::Error::take_raised().is_none(),
        "the slot was emptied by the caller"
    );
}

#[test]
fn c_module_sees_the_host_registry_and_library_context() {
    let Some(module) = module() else { return };
    let call_global = module.function("call_global").unwrap();
    let tripled: i64 = call_global
        .call_typed(("pactum.test.triple", 5i64))
        .unwrap();
    assert_eq!(tripled, 15);
    let error = call_global
        .call_typed::<_, Any>(("pactum.test.nonexistent", 5i64))
        .unwrap_err();
    assert_eq!(error.message(), "call_global: no such global function");
    let via_context: i64 = module
        .function("via_context")
        .unwrap()
        .call_typed((7i64,))
        .unwrap();
    assert_eq!(via_context, 21);
}

#[test]
fn metadata_and_docs_are_read_from_the_library() {
    let Some(module) = module() else { return };
    let metadata = module
        .function_metadata("add_i64")
        .unwrap()
        .expect("metadata");
    assert!(
        metadata.as_str().starts_with("{\"type_schema\":"),
        "{metadata}"
    );
    assert_eq!(
        module.function_doc("add_i64").unwrap().unwrap().as_str(),
        "Adds two integers."
    );
    assert!(module.function_doc("fail").unwrap().is_none());
}

#[test]
fn missing_libraries_are_clear_errors() {
    let error = Module::load("./definitely/not/here.so").unwrap_err();
    assert!(
        error
            .message()
            .contains("Failed to load dynamic shared library ./definitely/not/here.so"),
        "{error}"
    );
    let error = Module::load("no_extension").unwrap_err();
    assert_eq!(
        error.message(),
        "Failed to get file format from no_extension"
    );
}
