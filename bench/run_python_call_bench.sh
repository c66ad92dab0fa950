#!/usr/bin/env bash
# Python -> packed-call overhead of the pactum-exported kernels against the same functions in C
# (official headers), both under the official tvm_ffi runtime in one process.
#
# usage: bench/run_python_call_bench.sh [NUMBER=200000] [REPEAT=15]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONFIG="${PACTUM_TVM_FFI_CONFIG:-$PWD/.venv/bin/tvm-ffi-config}"
PYTHON="${PACTUM_PYTHON:-$PWD/.venv/bin/python}"
cargo build --release -q -p pactum-example-kernels
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -std=c11 -shared -fPIC -fvisibility=hidden bench/c/bench_module.c -I"$("$CONFIG" --includedir)" \
  -L"$("$CONFIG" --libdir)" -ltvm_ffi -o "$WORK/bench_module.so"
"$PYTHON" bench/python_call_bench.py "$PWD/target/release/libpactum_example_kernels.so" "$WORK/bench_module.so" "${1:-200000}" "${2:-15}"
