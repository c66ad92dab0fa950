//! Rust -> module function through pactum's loader: the `#[pactum::export]`ed `nop`, `nop_i3`
//! and `nop_tensor` of this crate's cdylib against the same three functions written in C
//! against the official headers (`bench/c/bench_module.c`), both loaded with `Module::load`
//! in one process and called with the dynamic `Function::call` and the typed call.
//!
//! Run: `bench/run_rust_module_bench.sh` (builds the C module and sets
//! `PACTUM_BENCH_C_MODULE`).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::OnceLock;

use divan::Bencher;
use pactum::{AnyView, DataType, Function, Module, Tensor, TypedFunction};

fn main() {
    divan::main();
}

/// The two modules, loaded once: modules are never unloaded, and loading is not what we time.
struct Modules {
    pactum: Module,
    c: Module,
}

fn modules() -> &'static Modules {
    static MODULES: OnceLock<Modules> = OnceLock::new();
    MODULES.get_or_init(|| {
        // The bench executable lives in target/release/deps/, next to the fresh cdylib.
        let deps = std::env::current_exe()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let kernels = deps.join("libpactum_example_kernels.so");
        let c_module = std::env::var_os("PACTUM_BENCH_C_MODULE")
            .map(PathBuf::from)
            .expect(
                "PACTUM_BENCH_C_MODULE must name the C module; run bench/run_rust_module_bench.sh",
            );
        Modules {
            pactum: Module::load(&kernels).unwrap_or_else(|e| panic!("{}: {e}", kernels.display())),
            c: Module::load(&c_module).unwrap_or_else(|e| panic!("{}: {e}", c_module.display())),
        }
    })
}

fn module(which: &str) -> &'static Module {
    match which {
        "pactum" => &modules().pactum,
        _ => &modules().c,
    }
}

const MODULES: [&str; 2] = ["c", "pactum"];

#[divan::bench(name = "dynamic/nop", args = MODULES)]
fn dynamic_nop(bencher: Bencher, which: &str) {
    let function: Function = module(which).function("nop").unwrap();
    bencher.bench_local(|| black_box(&function).call(black_box(&[])).unwrap());
}

#[divan::bench(name = "dynamic/nop_i3", args = MODULES)]
fn dynamic_nop_i3(bencher: Bencher, which: &str) {
    let function = module(which).function("nop_i3").unwrap();
    let args = [
        AnyView::from(1i64),
        AnyView::from(2i64),
        AnyView::from(3i64),
    ];
    bencher.bench_local(|| black_box(&function).call(black_box(&args)).unwrap());
}

#[divan::bench(name = "dynamic/nop_tensor", args = MODULES)]
fn dynamic_nop_tensor(bencher: Bencher, which: &str) {
    let function = module(which).function("nop_tensor").unwrap();
    let tensor = Tensor::empty(&[16], DataType::F32).unwrap();
    let args = [AnyView::from(&tensor)];
    bencher.bench_local(|| black_box(&function).call(black_box(&args)).unwrap());
}

#[divan::bench(name = "typed/nop", args = MODULES)]
fn typed_nop(bencher: Bencher, which: &str) {
    let function: TypedFunction<(), ()> = module(which).function("nop").unwrap().typed_unchecked();
    bencher.bench_local(|| black_box(&function).call(()).unwrap());
}

#[divan::bench(name = "typed/nop_i3", args = MODULES)]
fn typed_nop_i3(bencher: Bencher, which: &str) {
    let function: TypedFunction<(i64, i64, i64), ()> =
        module(which).function("nop_i3").unwrap().typed_unchecked();
    bencher.bench_local(|| {
        black_box(&function)
            .call((black_box(1), black_box(2), black_box(3)))
            .unwrap()
    });
}

#[divan::bench(name = "typed/nop_tensor", args = MODULES)]
fn typed_nop_tensor(bencher: Bencher, which: &str) {
    let function: TypedFunction<(&Tensor,), ()> = module(which)
        .function("nop_tensor")
        .unwrap()
        .typed_unchecked();
    let tensor = Tensor::empty(&[16], DataType::F32).unwrap();
    bencher.bench_local(|| black_box(&function).call((black_box(&tensor),)).unwrap());
}
