//! IREE `llvm-cpu` executables through pactum's VM and HAL: one `context.invoke` of an
//! export per iteration, its inputs built once as buffer views, on the shared worker pool
//! (`pool_*`, against IREE's `local-task`) and on the calling thread (`caller_*`, against
//! `local-sync`). `bench/run_cpu_bench.sh` runs the same modules, functions and inputs
//! through `iree-benchmark-module` and compares.
//!
//! Modules compiled at bench time come from environment variables (a case whose variable is
//! unset is skipped):
//!   - `PACTUM_CPU_MATMUL`: `matmul(512x512xf32=1, 512x512xf32=1)` (bench/cpu/matmul.mlir);
//!   - `PACTUM_CPU_ELEMENTWISE`: `axpb(16777216xf32=1)`, x * 2 + 1 (bench/cpu/elementwise.mlir);
//!   - `PACTUM_CPU_MLP_BIG`: `predict` of bench/cpu/mlp_big.mlir (batch 64, 512 -> 1024 ->
//!     1024 -> 10; the input 1, weights and biases 0.01).
//!
//! The committed fixtures always run: `mlp_llvm_cpu.predict(4x16xf32=0.5)` and
//! `multi_export_llvm_cpu.add_vec(4xf32=1, 4xf32=2)` (a tiny dispatch: the per-call cost).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use divan::Bencher;
use pactum_iree::hal::{
    DENSE_ROW_MAJOR, HalBuffer, HalBufferView, HalElementType, HalModule, LocalDevice, Workers,
};
use pactum_iree::vm::{Context, Function, Limits, Ref, Value};
use pactum_iree::vmfb::VmfbFile;

fn main() {
    divan::main();
}

/// A module, the export to call and its inputs, as iree-benchmark-module's `--input=` splats.
struct Case {
    /// The environment variable with the module's path, or a fixture's file name.
    module: Module,
    function: &'static str,
    inputs: &'static [&'static str],
}

enum Module {
    Env(&'static str),
    Fixture(&'static str),
}

const MATMUL: Case = Case {
    module: Module::Env("PACTUM_CPU_MATMUL"),
    function: "matmul",
    inputs: &["512x512xf32=1", "512x512xf32=1"],
};
const ELEMENTWISE: Case = Case {
    module: Module::Env("PACTUM_CPU_ELEMENTWISE"),
    function: "axpb",
    inputs: &["16777216xf32=1"],
};
const MLP: Case = Case {
    module: Module::Fixture("mlp_llvm_cpu.vmfb"),
    function: "predict",
    inputs: &["4x16xf32=0.5"],
};
const MLP_BIG: Case = Case {
    module: Module::Env("PACTUM_CPU_MLP_BIG"),
    function: "predict",
    inputs: &[
        "64x512xf32=1",
        "512x1024xf32=0.01",
        "1024xf32=0.01",
        "1024x1024xf32=0.01",
        "1024xf32=0.01",
        "1024x10xf32=0.01",
        "10xf32=0.01",
    ],
};
const ADD_VEC: Case = Case {
    module: Module::Fixture("multi_export_llvm_cpu.vmfb"),
    function: "add_vec",
    inputs: &["4xf32=1", "4xf32=2"],
};

/// A splat (`512x512xf32=1`) as a buffer view of f32s.
fn splat(text: &str) -> Value {
    let (head, value) = text.split_once('=').unwrap();
    let mut dims: Vec<&str> = head.split('x').collect();
    assert_eq!(dims.pop(), Some("f32"), "{text}");
    let shape: Vec<u64> = dims.iter().map(|d| d.parse().unwrap()).collect();
    let value: f32 = value.parse().unwrap();
    let count = shape.iter().product::<u64>() as usize;
    let bytes: Vec<u8> = std::iter::repeat_n(value.to_le_bytes(), count)
        .flatten()
        .collect();
    let buffer = HalBuffer::from_bytes(&bytes, None).unwrap();
    let ty = HalElementType::parse("f32").unwrap();
    let view = HalBufferView::new(buffer, shape, ty, DENSE_ROW_MAJOR).unwrap();
    Value::Ref(Some(Ref::Object(Arc::new(view))))
}

/// The loaded module, the export and its inputs; `None` when the case's variable is unset.
fn load(case: &Case, workers: Workers) -> Option<(Context, Function, Vec<Value>)> {
    let path = match case.module {
        Module::Env(var) => PathBuf::from(std::env::var_os(var)?),
        Module::Fixture(name) => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vmfb")
            .join(name),
    };
    let mut context = Context::new(Limits::default());
    let device = LocalDevice::new(workers).with_memory_budget(context.memory_budget().cloned());
    let hal = HalModule::new(Arc::new(device));
    context.register_native(Arc::new(hal)).unwrap();
    let name = context
        .load_bytecode(Arc::new(VmfbFile::open(&path).unwrap()))
        .unwrap();
    let function = context
        .lookup_export(&format!("{name}.{}", case.function))
        .unwrap();
    let inputs = case.inputs.iter().map(|text| splat(text)).collect();
    Some((context, function, inputs))
}

fn run(bencher: Bencher, case: &Case, workers: Workers) {
    let Some((context, function, inputs)) = load(case, workers) else {
        if let Module::Env(var) = case.module {
            eprintln!("skipped: {var} is not set (bench/run_cpu_bench.sh sets it)");
        }
        return;
    };
    bencher.bench_local(|| {
        context
            .invoke(black_box(&function), black_box(&inputs))
            .unwrap()
    });
}

macro_rules! cases {
    ($($pool:ident, $caller:ident: $case:expr;)*) => {$(
        #[divan::bench]
        fn $pool(bencher: Bencher) {
            run(bencher, &$case, Workers::shared());
        }

        #[divan::bench]
        fn $caller(bencher: Bencher) {
            run(bencher, &$case, Workers::CallerThread);
        }
    )*};
}

cases! {
    pool_matmul, caller_matmul: MATMUL;
    pool_elementwise, caller_elementwise: ELEMENTWISE;
    pool_mlp, caller_mlp: MLP;
    pool_mlp_big, caller_mlp_big: MLP_BIG;
    pool_add_vec, caller_add_vec: ADD_VEC;
}
