//! Packed-call overhead of a Rust closure called from Rust: the raw `safe_call` pointer (the
//! floor), the dynamic `Function::call` over `&[AnyView]`, and the typed call. Arguments: none,
//! three ints, one tensor. Each variant is one `#[inline(never)]` call, so the harness around
//! it is identical. Run: `cargo bench -p pactum --bench packed_call`.

use std::hint::black_box;

use divan::Bencher;
use pactum::sys::tvm_ffi::{TVMFFIAny, TVMFFIFunctionCell};
use pactum::{Any, AnyView, DataType, Function, Tensor, TypedFunction};

fn main() {
    divan::main();
}

/// The three callees: a no-op, a sum of three ints, and a tensor reader.
fn callees() -> [Function; 3] {
    [
        Function::from_typed(|| ()),
        Function::from_typed(|a: i64, b: i64, c: i64| a + b + c),
        Function::from_typed(|t: Tensor| t.ndim() as i64),
    ]
}

/// Calls the function object's `safe_call` pointer directly, as a C caller does.
#[inline(always)]
fn raw_call(function: &Function, args: &[TVMFFIAny]) -> Any {
    let object = function.as_object_ref().as_raw();
    // SAFETY: Function objects carry their cell right after the 24-byte header.
    let cell = unsafe { &*object.add(1).cast::<TVMFFIFunctionCell>() };
    let mut result = Any::none().into_raw();
    // SAFETY: valid arguments, a None result slot, a live function.
    let rc = unsafe {
        (cell.safe_call.expect("safe_call"))(
            object.cast(),
            args.as_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: on success the result is owned by the caller.
    unsafe { Any::from_raw(result) }
}

#[inline(always)]
fn dynamic_call(function: &Function, args: &[AnyView<'_>]) -> Any {
    function.call(args).unwrap()
}

/// One named, non-inlined entry point per case and call path, so the harness around each is
/// identical and instruction counts (bench/count_rust_call_instructions.sh) can be told apart.
macro_rules! entry_points {
    ($($case:literal: $raw:ident, $dynamic:ident);* $(;)?) => {$(
        #[inline(never)]
        fn $raw(function: &Function, args: &[TVMFFIAny]) -> Any {
            black_box($case);
            raw_call(function, args)
        }
        #[inline(never)]
        fn $dynamic(function: &Function, args: &[AnyView<'_>]) -> Any {
            black_box($case);
            dynamic_call(function, args)
        }
    )*};
}
entry_points!(
    0: enter_raw_args0, enter_dynamic_args0;
    1: enter_raw_ints3, enter_dynamic_ints3;
    2: enter_raw_tensor1, enter_dynamic_tensor1;
);

#[inline(never)]
fn typed_call0(function: &TypedFunction<(), ()>) {
    black_box(0);
    function.call(()).unwrap()
}

#[inline(never)]
fn typed_call3(function: &TypedFunction<(i64, i64, i64), i64>, a: i64, b: i64, c: i64) -> i64 {
    black_box(1);
    function.call((a, b, c)).unwrap()
}

#[inline(never)]
fn typed_call_tensor<'a>(function: &TypedFunction<(&'a Tensor,), i64>, tensor: &'a Tensor) -> i64 {
    black_box(2);
    function.call((tensor,)).unwrap()
}

struct Fixture {
    functions: [Function; 3],
    tensor: Tensor,
}

fn fixture() -> Fixture {
    Fixture {
        functions: callees(),
        tensor: Tensor::empty(&[16], DataType::F32).unwrap(),
    }
}

#[divan::bench(name = "raw_safe_call/args0")]
fn raw_args0(bencher: Bencher) {
    let f = fixture();
    bencher.bench_local(|| enter_raw_args0(black_box(&f.functions[0]), black_box(&[])));
}

#[divan::bench(name = "raw_safe_call/ints3")]
fn raw_ints3(bencher: Bencher) {
    let f = fixture();
    let args = [
        *AnyView::from(1i64).as_raw(),
        *AnyView::from(2i64).as_raw(),
        *AnyView::from(3i64).as_raw(),
    ];
    bencher.bench_local(|| enter_raw_ints3(black_box(&f.functions[1]), black_box(&args)));
}

#[divan::bench(name = "raw_safe_call/tensor1")]
fn raw_tensor1(bencher: Bencher) {
    let f = fixture();
    let args = [*AnyView::from(&f.tensor).as_raw()];
    bencher.bench_local(|| enter_raw_tensor1(black_box(&f.functions[2]), black_box(&args)));
}

#[divan::bench(name = "dynamic_call/args0")]
fn dynamic_args0(bencher: Bencher) {
    let f = fixture();
    bencher.bench_local(|| enter_dynamic_args0(black_box(&f.functions[0]), black_box(&[])));
}

#[divan::bench(name = "dynamic_call/ints3")]
fn dynamic_ints3(bencher: Bencher) {
    let f = fixture();
    let args = [
        AnyView::from(1i64),
        AnyView::from(2i64),
        AnyView::from(3i64),
    ];
    bencher.bench_local(|| enter_dynamic_ints3(black_box(&f.functions[1]), black_box(&args)));
}

#[divan::bench(name = "dynamic_call/tensor1")]
fn dynamic_tensor1(bencher: Bencher) {
    let f = fixture();
    let args = [AnyView::from(&f.tensor)];
    bencher.bench_local(|| enter_dynamic_tensor1(black_box(&f.functions[2]), black_box(&args)));
}

#[divan::bench(name = "typed_call/args0")]
fn typed_args0(bencher: Bencher) {
    let f = fixture();
    let typed = f.functions[0].typed_unchecked::<(), ()>();
    bencher.bench_local(|| typed_call0(black_box(&typed)));
}

#[divan::bench(name = "typed_call/ints3")]
fn typed_ints3(bencher: Bencher) {
    let f = fixture();
    let typed = f.functions[1].typed_unchecked::<(i64, i64, i64), i64>();
    bencher
        .bench_local(|| typed_call3(black_box(&typed), black_box(1), black_box(2), black_box(3)));
}

#[divan::bench(name = "typed_call/tensor1")]
fn typed_tensor1(bencher: Bencher) {
    let f = fixture();
    let typed = f.functions[2].typed_unchecked::<(&Tensor,), i64>();
    bencher.bench_local(|| typed_call_tensor(black_box(&typed), black_box(&f.tensor)));
}
