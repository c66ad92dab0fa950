//! The VM interpreter: a trivial export call (`vm_direct.mix`: four arguments, five
//! instructions, three results) and a VM-heavy loop (a counted loop of five instructions a
//! trip, with block arguments passed through remaps).
//!
//! `PACTUM_VM_BENCH_WRITE=DIR` also writes the loop module to `DIR/loop.vmfb`, so that IREE's
//! `iree-benchmark-module` can run the same bytecode.

#[path = "../tests/vm/asm.rs"]
mod asm;

use std::hint::black_box;
use std::path::Path;

use divan::Bencher;
use pactum_iree::vm::{Context, Limits, Value};
use pactum_iree::vmfb::VmfbFile;

fn main() {
    divan::main();
}

fn vm_direct() -> Context {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb/vm_direct.vmfb");
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(path).unwrap())
        .unwrap();
    context
}

#[divan::bench]
fn call_mix(bencher: Bencher) {
    let context = vm_direct();
    let mix = context.lookup_export("vm_direct.mix").unwrap();
    let args = [
        Value::I32(1),
        Value::I64(2),
        Value::F32(1.5),
        Value::F64(0.25),
    ];
    bencher.bench(|| context.invoke(black_box(&mix), black_box(&args)).unwrap());
}

#[divan::bench]
fn call_bump(bencher: Bencher) {
    let context = vm_direct();
    let bump = context.lookup_export("vm_direct.bump").unwrap();
    bencher.bench(|| context.invoke(black_box(&bump), &[]).unwrap());
}

/// `sum(n)`: `s = 0; while n != 0 { s += n; n -= 1 }`, the loop state in block arguments.
fn loop_module() -> Vec<u8> {
    use asm::Func;
    let mut f = Func::new("sum", "0i_i", 8, 0);
    f.block();
    f.const_i32(0, 1).const_i32(1, 2);
    let to_loop = f.br(0);
    let head = f.block();
    f.patch(to_loop, head);
    f.op(0x4D).r(0).r(3);
    f.op(0x57).r(3);
    let body_at = f.target(0);
    f.remap(&[]);
    let exit_at = f.target(0);
    f.remap(&[(1, 4)]);
    let body = f.block();
    f.patch(body_at, body);
    f.bin(0x22, 1, 0, 5).bin(0x23, 0, 2, 6);
    f.op(0x56);
    f.target(head);
    f.remap(&[(5, 1), (6, 0)]);
    let exit = f.block();
    f.patch(exit_at, exit);
    f.ret(&[4]);
    asm::bytes(&asm::module("bench", &[f]))
}

#[divan::bench(args = [1_000, 100_000])]
fn loop_sum(bencher: Bencher, n: i32) {
    let bytes = loop_module();
    if let Some(dir) = std::env::var_os("PACTUM_VM_BENCH_WRITE") {
        std::fs::write(Path::new(&dir).join("loop.vmfb"), &bytes).unwrap();
    }
    let mut context = Context::new(Limits::default());
    context.load_bytecode(bytes).unwrap();
    let sum = context.lookup_export("bench.sum").unwrap();
    let args = [Value::I32(n)];
    bencher
        .counter(divan::counter::ItemsCount::new(n as usize))
        .bench(|| context.invoke(black_box(&sum), black_box(&args)).unwrap());
}

#[divan::bench]
fn load_and_verify_vm_direct(bencher: Bencher) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb/vm_direct.vmfb");
    let bytes = std::fs::read(path).unwrap();
    bencher.bench(|| {
        let mut context = Context::new(Limits::default());
        context.load_bytecode(black_box(bytes.clone())).unwrap();
        context
    });
}

/// `vm_scalars.spin(1000000)`: the VM-heavy fixture export (a million trips of a 14-instruction
/// loop), the same module and input `bench/run_vm_bench.sh` gives `iree-benchmark-module`.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn spin_fixture(bencher: Bencher) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb/vm_scalars.vmfb");
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(path).unwrap())
        .unwrap();
    let spin = context.lookup_export("vm_scalars.spin").unwrap();
    bencher.bench(|| {
        context
            .invoke(black_box(&spin), &[Value::I32(1_000_000)])
            .unwrap()
    });
}
