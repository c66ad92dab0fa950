#!/usr/bin/env bash
# Instructions per C -> TVMFFIFunctionCall packed call (callee included), counted by
# valgrind's callgrind for pactum's libtvm_ffi.so and the official one: repeatable where
# wall-clock time on a shared machine is not.
#
# usage: bench/count_c_call_instructions.sh [CALLS=100000]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CALLS="${1:-100000}"
CONFIG="${PACTUM_TVM_FFI_CONFIG:-$PWD/.venv/bin/tvm-ffi-config}"
INCLUDE="$("$CONFIG" --includedir)"
OFFICIAL="$("$CONFIG" --libdir)"
cargo build --release -q -p pactum-capi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for name in official pactum; do
  libdir=$OFFICIAL; [ "$name" = pactum ] && libdir="$PWD/target/release"
  mkdir -p "$WORK/$name"
  gcc -O2 -std=c11 bench/c/call_bench.c -I"$INCLUDE" -L"$libdir" -ltvm_ffi -Wl,-rpath,"$libdir" -o "$WORK/$name/call_bench"
  gcc -O2 -std=c11 -shared -fPIC -fvisibility=hidden bench/c/bench_module.c -I"$INCLUDE" -L"$libdir" -ltvm_ffi -o "$WORK/$name/bench_module.so"
done
echo "Instructions per C -> TVMFFIFunctionCall call, callee included (callgrind, $CALLS calls + 10% warm-up)"
echo
echo "| callee | official | pactum | pactum / official |"
echo "|---|---|---|---|"
for case in callback_args0 callback_ints3 callback_tensor1 module_args0 module_ints3 module_tensor1; do
  row="| $case"
  declare -A ir=()
  for name in official pactum; do
    valgrind --tool=callgrind --callgrind-out-file="$WORK/$name.$case.cg" \
      "$WORK/$name/call_bench" "$WORK/$name/bench_module.so" "$CALLS" "$case" >/dev/null 2>&1
    total="$(callgrind_annotate --inclusive=yes --threshold=100 "$WORK/$name.$case.cg" 2>/dev/null | awk '/:time_calls / {gsub(",", "", $1); if (!seen) print $1; seen=1}')"
    ir[$name]="$(python3 -c "print(f'{$total / ($CALLS * 1.1):.1f}')")"
    row="$row | ${ir[$name]}"
  done
  echo "$row | $(python3 -c "print(f'{${ir[pactum]} / ${ir[official]}:.2f}')") |"
done
