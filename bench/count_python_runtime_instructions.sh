#!/usr/bin/env bash
# Instructions per case of bench/python_runtime_bench.py, counted by valgrind's callgrind on the
# official tvm_ffi package with its own libtvm_ffi.so and with pactum's (release build):
# repeatable where wall-clock time on a shared machine is not. Two valgrind runs per case and
# library (~10 s each; official error rows are slow, libbacktrace under valgrind).
#
# usage: bench/count_python_runtime_instructions.sh [NUMBER=5000] [FILTER]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PACTUM_BENCH_MODE=count
exec bench/run_python_runtime_bench.sh "${1:-5000}" "${2:-}"
