#!/usr/bin/env bash
# Issue 24's benchmark: apache-tvm 0.27 (TVM's Python call overhead, a Relax VM run, a global
# function call) on the official libtvm_ffi.so and on pactum's (release build), alternated, as
# medians of paired ratios (bench/tvm_clients/run.py). The venv is the one scripts/tvm_clients.sh
# installs (apache-tvm pinned there); it is created when missing.
#
# usage: bench/run_tvm_clients_bench.sh [--rounds N] [--markdown FILE]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${PACTUM_TVM_VENV:-$PWD/.venv-tvm}"
if [ ! -x "$venv/bin/python" ]; then
  scripts/tvm_clients.sh "$venv"
fi
export PACTUM_TVM_FFI_CONFIG="${PACTUM_TVM_FFI_CONFIG:-$venv/bin/tvm-ffi-config}"
cargo build -q --release -p pactum-capi
exec "$venv/bin/python" bench/tvm_clients/run.py --venv "$venv" \
  --pactum-lib "${CARGO_TARGET_DIR:-target}/release/libtvm_ffi.so" "$@"
