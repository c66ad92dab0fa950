//! The Python package's native-module adapter (`crates/pactum-python/src/native_module.rs`,
//! compiled into this binary: the package itself is a cdylib bound to the official runtime),
//! serving the imports of a module compiled at test time, with Rust closures as the FFI
//! functions Python callables are there. Built through its global, as Python builds it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use pactum::{Any, AnyView, Array, Error, ErrorKind, Function, Obj, Tensor};
use pactum_iree::module::{IreeModule, NativeModuleObject};

#[path = "../../../pactum-python/src/native_module.rs"]
mod adapter;

/// Imports of every kind the adapter converts: i32, i64, f64, a buffer view and an f32, none,
/// and one that fails. One file with the Python package's test of the same adapter
/// (`python/tests/test_native_module.py`).
const HOST_MLIR: &str = include_str!("../../../../python/tests/pyhost.mlir");

/// HOST_MLIR compiled for vmvx by the pinned iree-compile (once per test process, into
/// cargo's temporary folder for integration tests), or `None` when the peer tools are skipped
/// (`PACTUM_SKIP_PEER=1`).
fn host_vmfb(test: &str) -> Option<std::path::PathBuf> {
    static COMPILED: OnceLock<std::path::PathBuf> = OnceLock::new();
    let compiler = pactum_testing::iree::tool_or_skip("iree-compile", test)?;
    Some(
        COMPILED
            .get_or_init(|| {
                let dir =
                    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffi_native_module");
                std::fs::create_dir_all(&dir).unwrap();
                let source = dir.join("host.mlir");
                let out = dir.join("host.vmfb");
                std::fs::write(&source, HOST_MLIR).unwrap();
                let status = std::process::Command::new(compiler)
                    .args([
                        "--iree-hal-target-backends=vmvx",
                        "--iree-vm-target-extension-f64",
                        "--iree-input-demote-f64-to-f32=false",
                    ])
                    .arg(&source)
                    .arg("-o")
                    .arg(&out)
                    .status()
                    .unwrap();
                assert!(
                    status.success(),
                    "iree-compile failed on {}",
                    source.display()
                );
                out
            })
            .clone(),
    )
}

/// One result, as the adapter expects functions to return them (an array of results).
fn one(value: impl Into<Any>) -> pactum::Result<Array> {
    Ok(Array::new([value.into()]))
}

/// The `pyhost` module through `pactum.iree.native_module`, `calls` counting into `counter`.
fn pyhost(counter: Arc<AtomicI64>) -> Obj<NativeModuleObject> {
    adapter::register().unwrap();
    let functions = [
        (
            "add",
            "0ii_i",
            Function::from_typed(|a: i64, b: i64| one(a + b)),
        ),
        (
            "mul64",
            "0II_I",
            Function::from_typed(|a: i64, b: i64| one(a * b)),
        ),
        ("half", "0F_F", Function::from_typed(|x: f64| one(x / 2.0))),
        (
            "scale",
            "0rf_r",
            Function::from_typed(|x: Tensor, s: f64| {
                let scaled: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| v * s as f32).collect();
                one(Tensor::from_slice(&scaled, x.shape())?)
            }),
        ),
        (
            "calls",
            "0v_i",
            Function::from_typed(move || one(counter.fetch_add(1, Ordering::SeqCst) + 1)),
        ),
        (
            "fail",
            "0i_i",
            Function::from_typed(|x: i64| -> pactum::Result<Array> {
                Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("pyhost refuses {x}"),
                ))
            }),
        ),
    ];
    let entries = Array::new(functions.into_iter().map(|(name, cconv, function)| {
        Any::from(Array::new([
            Any::from(name),
            Any::from(cconv),
            Any::from(function),
        ]))
    }));
    let make = Function::get_global(adapter::NATIVE_MODULE).expect("registered above");
    let name = Any::from("pyhost");
    let entries = Any::from(entries);
    make.call(&[name.view(), entries.view()])
        .unwrap()
        .cast::<Obj<NativeModuleObject>>()
        .unwrap()
}

fn load(path: &std::path::Path, counter: Arc<AtomicI64>) -> IreeModule {
    IreeModule::builder()
        .native_module(pyhost(counter).0.clone())
        .load(path)
        .unwrap()
}

#[test]
fn ffi_functions_serve_a_compiled_modules_imports() {
    let Some(path) = host_vmfb("ffi_functions_serve_a_compiled_modules_imports") else {
        return;
    };
    let module = load(&path, Arc::default());
    let add_twice = module.function("add_twice").unwrap();
    assert_eq!(add_twice.call_typed::<_, i64>((2, 3)).unwrap(), 8);
    assert_eq!(
        add_twice.call_typed::<_, i64>((-7, 1 << 20)).unwrap(),
        (1 << 21) - 7
    );

    let mul_half = module.function("mul_half").unwrap();
    let results: Array = mul_half.call_typed((1i64 << 33, -3i64, 5.0f64)).unwrap();
    assert_eq!(results.get_as::<i64>(0).unwrap(), -3 << 33);
    assert_eq!(results.get_as::<f64>(1).unwrap(), 2.5);

    let x = Tensor::from_slice(&[1.0f32, -2.0, 0.5, 8.0], &[4]).unwrap();
    let scale_plus = module.function("scale_plus").unwrap();
    let y: Tensor = scale_plus.call_typed((&x, 2.5f64)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [3.5, -7.0, 1.75, 28.0]);
}

#[test]
fn an_error_of_an_import_fails_the_call_naming_it_and_the_module_stays_usable() {
    let Some(path) = host_vmfb("an_error_of_an_import_fails_the_call") else {
        return;
    };
    let counter = Arc::new(AtomicI64::new(0));
    let module = load(&path, counter.clone());
    let error = module
        .call("fail", &[AnyView::from(7i64)])
        .expect_err("the import raised");
    let message = error.message();
    assert!(
        message.contains("pyhost.fail") && message.contains("pyhost refuses 7"),
        "{message}"
    );
    let calls = module.function("calls").unwrap();
    assert_eq!(calls.call_typed::<_, i64>(()).unwrap(), 1);
    assert_eq!(calls.call_typed::<_, i64>(()).unwrap(), 2);
    assert_eq!(counter.load(Ordering::SeqCst), 2);
}

#[test]
fn a_result_that_does_not_match_the_convention_is_an_error_not_a_trap_of_the_process() {
    let Some(path) = host_vmfb("a_result_that_does_not_match") else {
        return;
    };
    adapter::register().unwrap();
    let make = Function::get_global(adapter::NATIVE_MODULE).unwrap();
    // `add` returns two results where its convention has one; `calls` a string for an i32.
    let entries = Any::from(Array::new([
        Any::from(Array::new([
            Any::from("add"),
            Any::from("0ii_i"),
            Any::from(Function::from_typed(
                |a: i64, b: i64| -> pactum::Result<Array> {
                    Ok(Array::new([Any::from(a), Any::from(b)]))
                },
            )),
        ])),
        Any::from(Array::new([
            Any::from("calls"),
            Any::from("0v_i"),
            Any::from(Function::from_typed(|| one("seven"))),
        ])),
    ]));
    let host = make
        .call(&[Any::from("pyhost").view(), entries.view()])
        .unwrap()
        .cast::<Obj<NativeModuleObject>>()
        .unwrap();
    // The module also imports functions this one lacks: loading fails, naming one.
    let error = IreeModule::builder()
        .native_module(host.0.clone())
        .load(&path)
        .expect_err("pyhost.mul64 is missing");
    assert!(error.message().contains("pyhost."), "{}", error.message());
    // Called directly, through the adapter's invoke global, each mismatch is an error.
    let invoke = Function::get_global(adapter::NATIVE_MODULE_INVOKE).unwrap();
    let host_any = Any::from(host);
    let args = Any::from(Array::new([Any::from(1i64), Any::from(2i64)]));
    let error = invoke
        .call(&[host_any.view(), Any::from("add").view(), args.view()])
        .expect_err("two results for one");
    assert!(
        error.message().contains("pyhost.add") && error.message().contains("returned 2 results"),
        "{}",
        error.message()
    );
    let no_args = Any::from(Array::new([]));
    let error = invoke
        .call(&[host_any.view(), Any::from("calls").view(), no_args.view()])
        .expect_err("a string for an i32");
    assert!(
        error.message().contains("pyhost.calls") && error.message().contains("expected an int"),
        "{}",
        error.message()
    );
}
