//! `.vmfb` files through the runtime's module loader: after
//! `pactum_iree::module::register_vmfb_loader()`, `pactum::Module::load` (`ffi.ModuleLoadFromFile`)
//! gives a module of kind `vmfb` whose exports are the `IreeModule`'s functions, served by
//! `pactum::Module::from_impl`.

use std::path::PathBuf;
use std::sync::Arc;

use pactum::{Any, Array, ErrorKind, Function, Module, ModuleImpl};
use pactum_iree::module::{IreeModule, VMFB_LOADER, register_vmfb_loader};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vmfb")
        .join(name)
}

fn load_vm_direct() -> Module {
    register_vmfb_loader().unwrap();
    Module::load(fixture("vm_direct.vmfb")).unwrap()
}

#[test]
fn a_vmfb_loads_through_module_load_after_registration() {
    let module = load_vm_direct();
    assert_eq!(module.kind().unwrap().as_str(), "vmfb");
    let direct = IreeModule::load(fixture("vm_direct.vmfb")).unwrap();

    let mix: Array = module
        .function("mix")
        .unwrap()
        .call_typed((1, 2, 1.5, 0.25))
        .unwrap();
    let expected: Array = direct
        .function("mix")
        .unwrap()
        .call_typed((1, 2, 1.5, 0.25))
        .unwrap();
    assert_eq!(mix.len(), 3);
    assert_eq!(
        mix.get_as::<f64>(0).unwrap(),
        expected.get_as::<f64>(0).unwrap()
    );
    assert_eq!(
        mix.get_as::<i64>(1).unwrap(),
        expected.get_as::<i64>(1).unwrap()
    );
    assert_eq!(
        mix.get_as::<f64>(2).unwrap(),
        expected.get_as::<f64>(2).unwrap()
    );
    let frob = module.function("frob_or_double").unwrap();
    assert_eq!(frob.call_typed::<_, i64>((21,)).unwrap(), 42);

    assert!(module.get_function("nope").unwrap().is_none());
    assert!(!module.implements("nope").unwrap());
    assert!(module.implements("mix").unwrap());
    assert!(module.function_metadata("mix").unwrap().is_none());
    assert!(module.function_doc("mix").unwrap().is_none());
    assert_eq!(
        module.function("nope").unwrap_err().kind(),
        ErrorKind::VALUE_ERROR
    );

    // Functions taken from one loaded module share its state (globals); a new load has its own.
    let bump = module.function("bump").unwrap();
    assert_eq!(bump.call_typed::<_, i64>(()).unwrap(), 1);
    assert_eq!(module.call("bump", &[]).unwrap().cast::<i64>().unwrap(), 2);
    let again = Module::load(fixture("vm_direct.vmfb")).unwrap();
    assert_eq!(again.call("bump", &[]).unwrap().cast::<i64>().unwrap(), 1);
}

#[test]
fn registration_is_idempotent_and_the_loader_is_a_global() {
    register_vmfb_loader().unwrap();
    let first = Function::get_global(VMFB_LOADER).unwrap();
    register_vmfb_loader().unwrap();
    let second = Function::get_global(VMFB_LOADER).unwrap();
    assert!(first.as_object_ref().ptr_eq(second.as_object_ref()));
    // The loader takes (path, format) like `ffi.Module.load_from_file.so`.
    let path = fixture("vm_direct.vmfb");
    let module: Module = first.call_typed((path.to_str().unwrap(), "vmfb")).unwrap();
    assert_eq!(module.kind().unwrap().as_str(), "vmfb");
}

#[test]
fn load_errors_name_the_file() {
    register_vmfb_loader().unwrap();
    let missing = fixture("no_such_module.vmfb");
    let error = Module::load(&missing).unwrap_err();
    assert!(
        error.message().contains("no_such_module.vmfb"),
        "{}",
        error.message()
    );
}

#[test]
fn a_vmfb_module_imports_and_is_imported_like_a_library() {
    let module = load_vm_direct();
    let importer = Module::from_impl(Arc::new(Empty)).unwrap();
    assert_eq!(importer.kind().unwrap().as_str(), "empty");
    assert!(importer.get_function("mix").unwrap().is_none());
    Function::get_global("ffi.ModuleImportModule")
        .unwrap()
        .call_typed::<_, Any>((&importer, &module))
        .unwrap();
    // Imports are searched after the module's own functions.
    let frob = importer.function("frob_or_double").unwrap();
    assert_eq!(frob.call_typed::<_, i64>((4,)).unwrap(), 8);
    assert_eq!(
        importer.function_metadata("own").unwrap().unwrap().as_str(),
        "{\"own\":true}"
    );
    assert_eq!(
        importer.function_doc("own").unwrap().unwrap().as_str(),
        "own"
    );
    assert_eq!(
        importer
            .function("own")
            .unwrap()
            .call_typed::<_, i64>(())
            .unwrap(),
        7
    );
}

/// A served module with one function of its own, metadata and doc.
struct Empty;

impl ModuleImpl for Empty {
    fn kind(&self) -> &str {
        "empty"
    }

    fn get_function(&self, name: &str) -> pactum::Result<Option<Function>> {
        Ok((name == "own").then(|| Function::from_typed(|| 7i64)))
    }

    fn function_metadata(&self, name: &str) -> Option<String> {
        (name == "own").then(|| "{\"own\":true}".to_owned())
    }

    fn function_doc(&self, name: &str) -> Option<String> {
        (name == "own").then(|| "own".to_owned())
    }
}
