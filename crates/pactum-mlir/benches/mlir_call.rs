//! MLIR memref calls from Rust: pactum's dynamic call (`MlirFunction::call_into` over
//! `&[AnyView]`, on the register path and through libffi) and typed call
//! (`TypedMlirFunction::call`) against a direct `extern "C"` call of
//! the same `_mlir_ciface_` symbol, for a pointer-only function (`add_one`, two 4-element
//! vectors) and a mixed-scalar one (`mixed`: i32, i64, f32, f64, index and a memref in, five
//! scalars out through a result struct). The direct call gets the best case: descriptors built
//! once, outside the loop (`direct_fill` rebuilds them from the tensors each call, as a
//! hand-written caller would). Run: `bench/run_mlir_bench.sh` (or
//! `cargo bench -p pactum --bench mlir_call`), which builds the MLIR libraries first.

use std::hint::black_box;
use std::path::Path;

use divan::Bencher;
use pactum::sys::mlir::MemRefDescriptor;
use pactum::{Any, AnyView, DataType, Tensor};
use pactum_mlir::{CallPath, MlirFunction, MlirLibrary};

fn main() {
    divan::main();
}

fn library() -> (MlirLibrary, libloading::Library) {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mlir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mlir/build.sh");
    let status = std::process::Command::new("bash")
        .arg(script)
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "building the MLIR libraries failed");
    let path = out.join("libmemref_core.so");
    // SAFETY: our own test library; no initialisers.
    let raw = unsafe { libloading::Library::new(&path) }.unwrap();
    // SAFETY: our test library; the declarations below are copied from its source.
    (unsafe { MlirLibrary::open(&path) }.unwrap(), raw)
}

const ADD_ONE: &str = "func.func @add_one(%in: memref<?xf32>, %out: memref<?xf32>)";
const MIXED: &str = "func.func @mixed(%a: i32, %b: i64, %c: f32, %d: f64, %e: index, \
                     %m: memref<?xf64>) -> (f64, i64, f32, i32, index)";

type AddOne = unsafe extern "C" fn(*mut MemRefDescriptor<1>, *mut MemRefDescriptor<1>);

#[repr(C)]
#[derive(Default)]
struct MixedResults {
    d: f64,
    b: i64,
    c: f32,
    a: i32,
    e: i64,
}

type Mixed =
    unsafe extern "C" fn(*mut MixedResults, i32, i64, f32, f64, i64, *mut MemRefDescriptor<1>);

fn descriptor(tensor: &Tensor) -> MemRefDescriptor<1> {
    MemRefDescriptor {
        allocated: tensor.data_ptr(),
        aligned: tensor.data_ptr(),
        offset: 0,
        sizes: [tensor.shape()[0] as isize],
        strides: [1],
    }
}

fn pactum_function(library: &MlirLibrary, declaration: &str, path: CallPath) -> MlirFunction {
    library.function(declaration).unwrap().with_call_path(path)
}

mod add_one {
    use super::*;

    fn tensors() -> (Tensor, Tensor) {
        (
            Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap(),
            Tensor::empty(&[4], DataType::F32).unwrap(),
        )
    }

    #[divan::bench]
    fn direct(bencher: Bencher) {
        let (_library, raw) = library();
        // SAFETY: the symbol has this C signature (mlir_facts.md §4).
        let function: AddOne = *unsafe { raw.get::<AddOne>(b"_mlir_ciface_add_one") }.unwrap();
        let (input, output) = tensors();
        let (mut a, mut b) = (descriptor(&input), descriptor(&output));
        bencher.bench_local(|| {
            // SAFETY: both descriptors describe live 4-element float buffers.
            unsafe { function(black_box(&mut a), black_box(&mut b)) }
        });
    }

    #[divan::bench]
    fn direct_fill(bencher: Bencher) {
        let (_library, raw) = library();
        // SAFETY: the symbol has this C signature (mlir_facts.md §4).
        let function: AddOne = *unsafe { raw.get::<AddOne>(b"_mlir_ciface_add_one") }.unwrap();
        let (input, output) = tensors();
        bencher.bench_local(|| {
            let (mut a, mut b) = (
                descriptor(black_box(&input)),
                descriptor(black_box(&output)),
            );
            // SAFETY: both descriptors describe live 4-element float buffers.
            unsafe { function(&mut a, &mut b) }
        });
    }

    fn pactum(bencher: Bencher, path: CallPath) {
        let (library, _raw) = library();
        let function = pactum_function(&library, ADD_ONE, path);
        assert_eq!(function.call_path(), path);
        let (input, output) = tensors();
        let args: [AnyView<'_>; 2] = [(&input).into(), (&output).into()];
        let mut results: Vec<Any> = Vec::new();
        bencher.bench_local(|| function.call_into(black_box(&args), &mut results).unwrap());
        assert_eq!(output.to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0, 5.0]);
    }

    #[divan::bench]
    fn pactum_registers(bencher: Bencher) {
        pactum(bencher, CallPath::Registers);
    }

    #[divan::bench]
    fn pactum_libffi(bencher: Bencher) {
        pactum(bencher, CallPath::Libffi);
    }

    #[divan::bench]
    fn pactum_typed(bencher: Bencher) {
        let (library, _raw) = library();
        let function = pactum_function(&library, ADD_ONE, CallPath::Registers)
            .typed::<(&Tensor, &Tensor), ()>()
            .unwrap();
        let (input, output) = tensors();
        bencher.bench_local(|| function.call(black_box((&input, &output))).unwrap());
        assert_eq!(output.to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0, 5.0]);
    }
}

mod mixed {
    use super::*;

    #[divan::bench]
    fn direct(bencher: Bencher) {
        let (_library, raw) = library();
        // SAFETY: the symbol has this C signature (mlir_facts.md §4).
        let function: Mixed = *unsafe { raw.get::<Mixed>(b"_mlir_ciface_mixed") }.unwrap();
        let m = Tensor::from_slice(&[0.5f64, 9.0, 9.0], &[3]).unwrap();
        let mut d = descriptor(&m);
        let mut out = MixedResults::default();
        bencher.bench_local(|| {
            // SAFETY: a live descriptor and result struct of the right layout.
            unsafe {
                function(
                    &mut out,
                    black_box(41),
                    black_box(21),
                    black_box(1.5),
                    black_box(2.25),
                    black_box(100),
                    black_box(&mut d),
                )
            };
            black_box(&out);
        });
        assert_eq!(out.d, 2.75);
    }

    fn pactum(bencher: Bencher, path: CallPath) {
        let (library, _raw) = library();
        let function = pactum_function(&library, MIXED, path);
        assert_eq!(function.call_path(), path);
        let m = Tensor::from_slice(&[0.5f64, 9.0, 9.0], &[3]).unwrap();
        let args: [AnyView<'_>; 6] = [
            41i64.into(),
            21i64.into(),
            1.5.into(),
            2.25.into(),
            100i64.into(),
            (&m).into(),
        ];
        let mut results: Vec<Any> = Vec::with_capacity(5);
        bencher.bench_local(|| function.call_into(black_box(&args), &mut results).unwrap());
        assert_eq!(results[0].get::<f64>().unwrap(), 2.75);
    }

    #[divan::bench]
    fn pactum_registers(bencher: Bencher) {
        pactum(bencher, CallPath::Registers);
    }

    #[divan::bench]
    fn pactum_libffi(bencher: Bencher) {
        pactum(bencher, CallPath::Libffi);
    }

    #[divan::bench]
    fn pactum_typed(bencher: Bencher) {
        let (library, _raw) = library();
        let function = pactum_function(&library, MIXED, CallPath::Registers)
            .typed::<(i32, i64, f32, f64, i64, &Tensor), (f64, i64, f32, i32, i64)>()
            .unwrap();
        let m = Tensor::from_slice(&[0.5f64, 9.0, 9.0], &[3]).unwrap();
        let mut last = (0.0, 0, 0.0, 0, 0);
        bencher.bench_local(|| {
            last = function
                .call(black_box((41, 21, 1.5, 2.25, 100, &m)))
                .unwrap()
        });
        assert_eq!(last.0, 2.75);
    }
}
