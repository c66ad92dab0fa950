#!/usr/bin/env bash
# C -> packed call overhead through TVMFFIFunctionCall, pactum's libtvm_ffi.so against the
# official one, measured in the same run: the same C program is built against each library,
# and repetitions alternate between them. Prints a Markdown table of medians (ns per call).
#
# usage: bench/run_c_call_bench.sh [CALLS=10000000] [REPS=7]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CALLS="${1:-10000000}"
REPS="${2:-7}"
CONFIG="${PACTUM_TVM_FFI_CONFIG:-$PWD/.venv/bin/tvm-ffi-config}"
INCLUDE="$("$CONFIG" --includedir)"
OFFICIAL="$("$CONFIG" --libdir)"

cargo build --release -q -p pactum-capi
PACTUM="$PWD/target/release"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

for name in official pactum; do
  libdir=$OFFICIAL; [ "$name" = pactum ] && libdir=$PACTUM
  mkdir -p "$WORK/$name"
  gcc -O2 -std=c11 bench/c/call_bench.c -I"$INCLUDE" -L"$libdir" -ltvm_ffi -Wl,-rpath,"$libdir" -o "$WORK/$name/call_bench"
  gcc -O2 -std=c11 -shared -fPIC -fvisibility=hidden bench/c/bench_module.c -I"$INCLUDE" -L"$libdir" -ltvm_ffi -o "$WORK/$name/bench_module.so"
done

for rep in $(seq "$REPS"); do
  for name in official pactum; do
    "$WORK/$name/call_bench" "$WORK/$name/bench_module.so" "$CALLS" | sed "s/^/$name /" >> "$WORK/results.txt"
  done
done

python3 - "$WORK/results.txt" "$CALLS" "$REPS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    lib, case, ns = line.split()
    rows.setdefault(case, {}).setdefault(lib, []).append(float(ns))
print(f"C -> TVMFFIFunctionCall, {sys.argv[2]} calls x {sys.argv[3]} repetitions (alternating libraries); ns per call")
print()
print("| callee | official median | pactum median | pactum / official |")
print("|---|---|---|---|")
for case, libs in rows.items():
    o, p = statistics.median(libs["official"]), statistics.median(libs["pactum"])
    print(f"| {case} | {o:.2f} | {p:.2f} | {p / o:.2f} |")
PY
