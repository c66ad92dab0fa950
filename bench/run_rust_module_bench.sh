#!/usr/bin/env bash
# Rust -> module function through pactum's loader (examples/kernels/benches/module_call.rs):
# the pactum-exported kernels against the same functions in C (official headers), both loaded
# with pactum::Module::load in one process. Runs the bench RUNS times and prints a Markdown
# table of the median of divan's per-run medians and the pactum / C ratio.
#
# usage: bench/run_rust_module_bench.sh [RUNS=5]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
CONFIG="${PACTUM_TVM_FFI_CONFIG:-$PWD/.venv/bin/tvm-ffi-config}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -std=c11 -shared -fPIC -fvisibility=hidden bench/c/bench_module.c -I"$("$CONFIG" --includedir)" \
  -L"$("$CONFIG" --libdir)" -ltvm_ffi -o "$WORK/bench_module.so"
export PACTUM_BENCH_C_MODULE="$WORK/bench_module.so"
cargo bench -q -p pactum-example-kernels --bench module_call --no-run 2>/dev/null
for _ in $(seq "$RUNS"); do
  cargo bench -q -p pactum-example-kernels --bench module_call 2>/dev/null >> "$WORK/out"
done
python3 - "$WORK/out" "$RUNS" <<'PY'
import collections, statistics, sys
units = {"ns": 1.0, "µs": 1e3, "ms": 1e6}
medians = collections.defaultdict(list)
group = None
for line in open(sys.argv[1], encoding="utf-8"):
    # Rows look like "├─ dynamic/nop │ ..." (a group) and "│  ├─ c  5.0 ns │ 5.1 ns │ 5.0 ns │ ...".
    cells = [c.strip() for c in line.lstrip("│├╰─ ").split("│")]
    if len(cells) < 3 or not cells[0]:
        continue
    name = cells[0].split()[0]
    if name not in ("c", "pactum"):
        group = name
        continue
    value, unit = cells[2].split()
    medians[(group, name)].append(float(value) * units[unit])
print(f"Rust -> module function via pactum::Module, divan, median of {sys.argv[2]} runs' medians; ns per call")
print()
print("| call | C module (official headers) | pactum-exported | pactum / C |")
print("|---|---|---|---|")
for path in ("dynamic", "typed"):
    for case in ("nop", "nop_i3", "nop_tensor"):
        c = statistics.median(medians[(f"{path}/{case}", "c")])
        p = statistics.median(medians[(f"{path}/{case}", "pactum")])
        print(f"| {path} {case} | {c:.2f} | {p:.2f} | {p / c:.2f} |")
PY
