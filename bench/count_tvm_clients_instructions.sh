#!/usr/bin/env bash
# Instructions per call of bench/tvm_clients/cases.py's cases (te_call, relax_vm,
# global_call), counted by valgrind's callgrind on the official libtvm_ffi.so and on pactum's
# (release build, swapped into a copy of the tvm_ffi package as run.py does): repeatable where
# wall time on a shared machine is not (PYTHONHASHSEED=0 fixes Python's hashing, so two runs
# of one library agree to an instruction). Per library and case, one valgrind run that builds
# the case uninstrumented, then counts N and 2N calls (bench/tvm_clients/callgrind_driver.py);
# the per-call figures are by object, then libtvm_ffi.so's and libc's functions.
#
# usage: bench/count_tvm_clients_instructions.sh [CASES="te_call relax_vm"] [PACTUM_LIB]
#
# PACTUM_TVM_CALLGRIND_SIM=1 adds callgrind's cache and branch simulation (--cache-sim=yes
# --branch-sim=yes): simulated I1/D1/LL misses and mispredicted branches per call, by object.
# PACTUM_TVM_LIBRARIES="pactum" (or "official") counts one library only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${PACTUM_TVM_VENV:-$PWD/.venv-tvm}"
cases="${1:-te_call relax_vm}"
lib="${2:-}"
if [ -z "$lib" ]; then
  export PACTUM_TVM_FFI_CONFIG="${PACTUM_TVM_FFI_CONFIG:-$venv/bin/tvm-ffi-config}"
  cargo build -q --release -p pactum-capi
  lib="${CARGO_TARGET_DIR:-target}/release/libtvm_ffi.so"
fi
sim=()
if [ "${PACTUM_TVM_CALLGRIND_SIM:-0}" = 1 ]; then sim=(--cache-sim=yes --branch-sim=yes); fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cc -O1 -shared -fPIC -o "$scratch/callgrind_control.so" bench/tvm_clients/callgrind_control.c
package="$("$venv/bin/python" -c 'import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))')"
mkdir "$scratch/pactum"
cp -r "$package" "$scratch/pactum/tvm_ffi"
cp -r "$package"/../apache_tvm_ffi-*.dist-info "$scratch/pactum/"
cp "$lib" "$scratch/pactum/tvm_ffi/lib/libtvm_ffi.so"
for case in $cases; do
  case "$case" in relax_vm) n=300 ;; *) n=1000 ;; esac
  for which in ${PACTUM_TVM_LIBRARIES:-official pactum}; do
    path=""
    [ "$which" = pactum ] && path="$scratch/pactum"
    PYTHONPATH="$path" PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 \
      valgrind --tool=callgrind --instr-atstart=no "${sim[@]}" \
      --callgrind-out-file="$scratch/$which.$case.out" \
      "$venv/bin/python" bench/tvm_clients/callgrind_driver.py "$case" "$n" \
      "$scratch/callgrind_control.so" >"$scratch/$which.$case.log" 2>&1 ||
      { tail -20 "$scratch/$which.$case.log"; exit 1; }
    echo "== $case on the $which libtvm_ffi.so ($(grep -o "mapped.*" "$scratch/$which.$case.log"))"
    "$venv/bin/python" bench/tvm_clients/callgrind_per_call.py \
      "$scratch/$which.$case.out.1" "$scratch/$which.$case.out.2" "$n"
  done
done
