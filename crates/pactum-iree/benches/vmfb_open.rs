//! Open + verify + list exports of `.vmfb` files with 1 MiB and 1 GiB of external read-only
//! data. The files are made by `bench/run_vmfb_bench.sh`, which sets `PACTUM_VMFB_BENCH_DIR`.

use std::hint::black_box;
use std::path::PathBuf;

use divan::Bencher;
use pactum_iree::vmfb::VmfbFile;

fn main() {
    divan::main();
}

fn file(size: &str) -> PathBuf {
    let dir = std::env::var_os("PACTUM_VMFB_BENCH_DIR")
        .map(PathBuf::from)
        .expect("PACTUM_VMFB_BENCH_DIR must name the directory of the generated modules; run bench/run_vmfb_bench.sh");
    dir.join(format!("rodata_{size}.vmfb"))
}

#[divan::bench(args = ["1MiB", "1GiB"])]
fn open_verify_list_exports(bencher: Bencher, size: &str) {
    let path = file(size);
    bencher.bench(|| {
        let file = VmfbFile::open(black_box(&path)).unwrap();
        let module = file.module().unwrap();
        module.exports().map(|e| e.local_name.len()).sum::<usize>()
    });
}
