//! `pactum demo`: a guided tour of the packed-function ABI, every step checked.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use pactum::sys::tvm_ffi::TVMFFIByteArray;
use pactum::{Any, AnyView, Array, DataType, Error, Function, Module, Tensor};

/// A C module written against the C ABI (declarations inline, so no headers are needed).
const DEMO_MODULE_C: &str = r#"
#include <stdint.h>
typedef struct { int32_t type_index; uint32_t pad; union { int64_t i; double f; void* p; } v; } Any;
void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
__attribute__((visibility("default"))) int __tvm_ffi_scale(void* h, const Any* args, int32_t n, Any* out) {
  (void)h;
  if (n != 2 || args[0].type_index != 3 || args[1].type_index != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "scale(x: float, k: int) from C got the wrong arguments");
    return -1;
  }
  out->type_index = 3; out->pad = 0; out->v.f = args[0].v.f * (double)args[1].v.i;
  return 0;
}
"#;

fn step(title: &str) {
    println!("\n== {title}");
}

pub fn run() -> Result<()> {
    println!(
        "pactum demo: packed functions over the TVM FFI ABI (apache-tvm-ffi 0.1.15 compatible)"
    );
    println!("runtime: {:?}", pactum::runtime::kind());

    step("1. A Rust closure as a packed function, called dynamically");
    let add = Function::from_typed(|a: i64, b: i64| a + b);
    let result = add.call(&[AnyView::from(40i64), AnyView::from(2i64)])?;
    println!("add(40, 2) via Function::call(&[AnyView]) = {result:?}");
    ensure!(
        result.get::<i64>()? == 42,
        "dynamic call returned {result:?}"
    );

    step("2. The same function through a typed handle (arguments encoded on the stack)");
    let typed = add.typed_unchecked::<(i64, i64), i64>();
    let sum = typed.call((1, 2))?;
    println!("add.typed_unchecked::<(i64, i64), i64>().call((1, 2)) = {sum}");
    ensure!(sum == 3);

    step("3. Through the C ABI: TVMFFIFunctionCall on the raw function handle");
    let args = [
        *AnyView::from(20i64).as_raw(),
        *AnyView::from(22i64).as_raw(),
    ];
    let mut out = Any::none().into_raw();
    // SAFETY: a live function handle, two valid argument cells and a None result slot.
    let rc = unsafe {
        (pactum::runtime::api().TVMFFIFunctionCall)(
            add.as_object_ref().as_raw().cast(),
            args.as_ptr().cast_mut(),
            2,
            &mut out,
        )
    };
    // SAFETY: on success the result cell is owned by us.
    let value = unsafe { Any::from_raw(out) };
    println!("TVMFFIFunctionCall(add, [20, 22]) -> rc={rc}, result={value:?}");
    ensure!(rc == 0 && value.get::<i64>()? == 42);

    step("4. The global registry");
    add.register_global("demo.add", true)?;
    let found = Function::get_global("demo.add").context("demo.add is registered")?;
    let via_registry: i64 = found.call_typed((5i64, 6i64))?;
    println!("Function::get_global(\"demo.add\")(5, 6) = {via_registry}");
    ensure!(via_registry == 11);
    let name = "demo.add";
    let bytes = TVMFFIByteArray {
        data: name.as_ptr().cast(),
        size: name.len(),
    };
    let mut handle = std::ptr::null_mut();
    // SAFETY: a valid name and out pointer.
    let rc = unsafe { (pactum::runtime::api().TVMFFIFunctionGetGlobal)(&bytes, &mut handle) };
    println!(
        "TVMFFIFunctionGetGlobal(\"demo.add\") -> rc={rc}, same object: {}",
        handle == found.as_object_ref().as_raw().cast()
    );
    ensure!(rc == 0 && !handle.is_null());
    // SAFETY: GetGlobal returned a new reference.
    unsafe { (pactum::runtime::api().TVMFFIObjectDecRef)(handle) };

    step("5. Errors and panics cross the boundary as error objects");
    let checked = Function::from_typed(|n: i64| -> pactum::Result<i64> {
        if n < 0 {
            pactum::bail!(ValueError, "expected a non-negative number, got {n}");
        }
        Ok(n)
    });
    let error = checked.call_typed::<_, i64>((-3i64,)).unwrap_err();
    println!("checked(-3) -> {error}");
    let panicky = Function::from_typed(|_: i64| -> i64 { panic!("a panic inside a callback") });
    // The demo silences Rust's default panic report for this deliberate panic; the library
    // itself never touches the panic hook.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let error = panicky.call_typed::<_, i64>((0i64,)).unwrap_err();
    std::panic::set_hook(default_hook);
    println!("panicky(0)  -> {error}  (caught at the boundary; the process carries on)");
    ensure!(error.kind() == "RustPanic");
    let error = add.call(&[AnyView::from(1i64)]).unwrap_err();
    println!("add(1)      -> {error}");

    step("6. Tensors, zero copy through DLPack");
    let scale = Function::from_typed(|x: Tensor, factor: f64| -> pactum::Result<Tensor> {
        let values: Vec<f32> = x.to_vec()?;
        Tensor::from_slice(
            &values.iter().map(|v| v * factor as f32).collect::<Vec<_>>(),
            x.shape(),
        )
    });
    let input = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    let exported = input.to_dlpack_versioned();
    // SAFETY: a versioned DLPack tensor we just exported; ownership passes to the import.
    let imported = unsafe { Tensor::from_dlpack_versioned(exported, 64, true) }?;
    println!(
        "exported and re-imported a {:?} {} tensor; same memory: {}",
        input.shape(),
        input.dtype(),
        imported.data_ptr() == input.data_ptr()
    );
    let output: Tensor = scale.call_typed((&imported, 10.0))?;
    println!(
        "scale(x, 10.0) = {:?} with dtype {}",
        output.to_vec::<f32>()?,
        output.dtype()
    );
    ensure!(
        output.to_vec::<f32>()? == vec![10.0, 20.0, 30.0, 40.0] && output.dtype() == DataType::F32
    );

    step("7. Containers with the official memory layout");
    let array = Array::new([Any::from(1i64), Any::from("two"), Any::from(3.0)]);
    let size: i64 = Function::get_global("ffi.ArraySize")
        .context("ffi.ArraySize")?
        .call_typed((&array,))?;
    println!(
        "ffi.ArraySize([1, \"two\", 3.0]) = {size}; element 1 = {:?}",
        array.get(1)
    );
    ensure!(size == 3);

    step("8. A C module loaded into this Rust process");
    match load_c_module() {
        Ok(module) => {
            let scale_c = module.function("scale")?;
            let value: f64 = scale_c.call_typed((1.5f64, 4i64))?;
            println!("module[\"scale\"](1.5, 4) = {value}");
            ensure!(value == 6.0);
            let error = scale_c.call_typed::<_, Any>(("oops",)).unwrap_err();
            println!("module[\"scale\"](\"oops\") -> {error}");
            ensure!(error.kind() == "TypeError");
        }
        Err(reason) => println!("skipped (needs a C compiler): {reason:#}"),
    }
    step("9. The example kernels: a Rust library exported with #[pactum::export]");
    kernels()?;

    step("10. An IREE module (.vmfb compiled by iree-compile 3.13), run by pactum's VM");
    iree_module()?;

    ensure!(Error::take_raised().is_none(), "no error left behind");
    println!("\nall demo steps passed");
    Ok(())
}

/// A VM-only module compiled by iree-compile 3.13 (the `vm_direct` test fixture), bundled.
const VM_DIRECT: &[u8] = include_bytes!("../../pactum-iree/tests/fixtures/vmfb/vm_direct.vmfb");

fn iree_module() -> Result<()> {
    use pactum_iree::module::IreeModule;
    let module = IreeModule::from_bytes(VM_DIRECT.to_vec(), pactum_iree::vm::Limits::default())?;
    let names: Vec<&str> = module.export_names().collect();
    println!(
        "loaded and verified module `{}` ({} bytes): exports {}",
        module.name(),
        VM_DIRECT.len(),
        names.join(", ")
    );
    let frob = module.function("frob_or_double")?;
    let doubled: i64 = frob.call_typed((21,))?;
    println!(
        "frob_or_double(21) = {doubled}  (its optional import `optional_ext.frob` is absent, so \
         it doubles)"
    );
    ensure!(doubled == 42);
    let mix = module.function("mix")?;
    let mixed: pactum::Array = mix.call_typed((1, 2, 1.5, 0.25))?;
    println!(
        "mix(1, 2, 1.5, 0.25) with calling convention {} = {:?}",
        module.calling_convention("mix")?,
        mixed.iter().collect::<Vec<_>>()
    );
    let bump = module.function("bump")?;
    let (first, second): (i64, i64) = (bump.call_typed(())?, bump.call_typed(())?);
    println!("bump() twice = {first}, {second}  (module globals persist)");
    ensure!((first, second) == (1, 2));
    let error = mix.call_typed::<_, Any>((1,)).unwrap_err();
    println!("mix(1) -> {error}");
    Ok(())
}

/// Where the example kernels library is: `$PACTUM_KERNELS_LIB`, or next to this executable
/// (`cargo build -p pactum-example-kernels` puts it there).
fn kernels_path() -> Result<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("PACTUM_KERNELS_LIB") {
        return Ok(path.into());
    }
    let exe = std::env::current_exe().context("locating the pactum executable")?;
    let path = exe.with_file_name("libpactum_example_kernels.so");
    ensure!(
        path.exists(),
        "{} is missing; build it with `cargo build -p pactum-example-kernels` (the README's demo command does)",
        path.display()
    );
    Ok(path)
}

fn kernels() -> Result<()> {
    let path = kernels_path()?;
    let module = Module::load(&path)?;
    println!("loaded {}", display(&path));
    for name in ["add_one", "matmul", "apply_twice"] {
        let signature = module.function_schema(name)?.context("metadata")?;
        let doc = module
            .function_doc(name)?
            .map(|d| d.as_str().to_owned())
            .unwrap_or_default();
        println!("  {}  -- {doc}", signature.render(name));
    }

    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
    let y = Tensor::empty(&[3], DataType::F32)?;
    module.function("add_one")?.call_typed::<_, ()>((&x, &y))?;
    println!(
        "add_one([1, 2, 3], y) wrote y = {:?} in place (zero copy)",
        y.to_vec::<f32>()?
    );
    ensure!(y.to_vec::<f32>()? == vec![2.0, 3.0, 4.0]);

    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    // A typed handle, its signature checked once against the schema the library records.
    let matmul = module.typed::<(&Tensor, &Tensor), Tensor>("matmul")?;
    let product = matmul.call((&a, &a))?;
    println!(
        "matmul(a, a) = {:?} (a new tensor made by the library)",
        product.to_vec::<f32>()?
    );
    ensure!(product.to_vec::<f32>()? == vec![7.0, 10.0, 15.0, 22.0]);

    let callback = Function::from_typed(|v: i64| v * 10);
    let twice: i64 = module
        .function("apply_twice")?
        .call_typed((&callback, 4i64))?;
    println!("apply_twice(|v| v * 10, 4) = {twice} (the library called back into this program)");
    ensure!(twice == 80);

    let error = module
        .function("add_one")?
        .call_typed::<_, ()>((&x, &x))
        .unwrap_err();
    println!("add_one(x, x) -> {error}");
    ensure!(error.kind() == "ValueError");
    Ok(())
}

/// Compiles `DEMO_MODULE_C` into a library with `NEEDED libtvm_ffi.so` (linking against the
/// forwarder image as a stand-in) and loads it: the forwarder pactum installs in memory
/// serves the module's C API calls from this process's runtime.
fn load_c_module() -> Result<Module> {
    let dir = std::env::temp_dir().join(format!("pactum-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("libtvm_ffi.so"),
        pactum::sys::forwarder::FORWARDER_LIBRARY,
    )?;
    let source = dir.join("demo_module.c");
    std::fs::File::create(&source)?.write_all(DEMO_MODULE_C.as_bytes())?;
    let library = dir.join("demo_module.so");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&compiler)
        .args(["-shared", "-fPIC", "-O2", "-fvisibility=hidden"])
        .arg(&source)
        .arg("-o")
        .arg(&library)
        .arg(format!("-L{}", dir.display()))
        .arg("-ltvm_ffi")
        .status()
        .with_context(|| format!("running {compiler}"))?;
    ensure!(status.success(), "{compiler} failed");
    println!(
        "built {} (NEEDED libtvm_ffi.so; no rpath, no LD_LIBRARY_PATH)",
        display(&library)
    );
    let module = Module::load(&library)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(module)
}

fn display(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
