#!/usr/bin/env bash
# IREE llvm-cpu executables: pactum's VM + HAL (crates/pactum-iree/benches/cpu.rs) against
# iree-benchmark-module of the pinned iree-base-runtime, on the same modules, functions and
# inputs, alternated RUNS times; prints the medians and the ratios pactum / IREE:
#   - pactum's shared worker pool (Workers::shared(), one thread per core) vs --device=local-task;
#   - pactum on the calling thread (Workers::CallerThread) vs --device=local-sync.
# Cases:
#   - matmul: bench/cpu/matmul.mlir, a 512x512 f32 matmul (inputs 512x512xf32=1, twice);
#   - elementwise: bench/cpu/elementwise.mlir, x * 2 + 1 over 16M f32 (input 16777216xf32=1);
#   - mlp: the fixture mlp_llvm_cpu.vmfb, predict(4x16xf32=0.5);
#   - mlp_big: bench/cpu/mlp_big.mlir, predict at batch 64, 512 -> 1024 -> 1024 -> 10
#     (input 1, weights and biases 0.01);
#   - add_vec: the fixture multi_export_llvm_cpu.vmfb, add_vec(4xf32=1, 4xf32=2): the cost of
#     one call with one tiny dispatch.
# The bench/cpu modules are compiled into a temporary folder by the pinned iree-compile with
# --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=host (nothing is committed).
# Both sides report wall-clock time: divan's median of its samples; iree-benchmark-module's
# benchmarks are .../real_time, whose items_per_second is iterations per wall-clock second
# (its "Time" column is wall-clock, "CPU" is the process's CPU time): we take 1 / rate.
#
# usage: bench/run_cpu_bench.sh [RUNS=5]
#   PACTUM_IREE_BIN: the folder of iree-benchmark-module (default .venv/bin);
#   PACTUM_IREE_COMPILE: iree-compile (default .venv-iree/bin/iree-compile);
#   MIN_TIME: seconds each benchmark runs, on each side (default 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
MIN_TIME="${MIN_TIME:-2}"
IREE="${PACTUM_IREE_BIN:-$PWD/.venv/bin}/iree-benchmark-module"
COMPILE="${PACTUM_IREE_COMPILE:-$PWD/.venv-iree/bin/iree-compile}"
F=crates/pactum-iree/tests/fixtures/vmfb
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
FLAGS=(--iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=host)
for m in matmul elementwise mlp_big; do
  "$COMPILE" "${FLAGS[@]}" "bench/cpu/$m.mlir" -o "$OUT/$m.vmfb"
done
export PACTUM_CPU_MATMUL="$OUT/matmul.vmfb" PACTUM_CPU_ELEMENTWISE="$OUT/elementwise.vmfb" \
  PACTUM_CPU_MLP_BIG="$OUT/mlp_big.vmfb"
cargo bench -q -p pactum-iree --bench cpu --no-run 2>/dev/null

# case | module | function | inputs
CASES=(
  "matmul|$OUT/matmul.vmfb|matmul|512x512xf32=1 512x512xf32=1"
  "elementwise|$OUT/elementwise.vmfb|axpb|16777216xf32=1"
  "mlp|$F/mlp_llvm_cpu.vmfb|predict|4x16xf32=0.5"
  "mlp_big|$OUT/mlp_big.vmfb|predict|64x512xf32=1 512x1024xf32=0.01 1024xf32=0.01 1024x1024xf32=0.01 1024xf32=0.01 1024x10xf32=0.01 10xf32=0.01"
  "add_vec|$F/multi_export_llvm_cpu.vmfb|add_vec|4xf32=1 4xf32=2"
)
for _ in $(seq "$RUNS"); do
  cargo bench -q -p pactum-iree --bench cpu -- --min-time "$MIN_TIME" 2>/dev/null \
    | grep -E '(pool|caller)_' >> "$OUT/pactum"
  for case in "${CASES[@]}"; do
    IFS='|' read -r name module function inputs <<< "$case"
    args=()
    for input in $inputs; do args+=("--input=$input"); done
    for device in local-task local-sync; do
      "$IREE" --module="$module" --function="$function" "${args[@]}" --device="$device" \
        --benchmark_min_time="${MIN_TIME}s" 2>/dev/null | grep BM_ \
        | sed "s/^/$name $device /" >> "$OUT/iree"
    done
  done
done
python3 - "$OUT" "$RUNS" "${FLAGS[*]}" <<'PY'
import re, statistics, sys
out, runs, flags = sys.argv[1:4]
units = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
ours = {}
for line in open(f"{out}/pactum", encoding="utf-8"):
    cells = [c.strip() for c in line.split("│")]
    name = cells[0].split()[1]
    value, unit = cells[2].split()
    ours.setdefault(name, []).append(float(value) * units[unit])
theirs = {}
for line in open(f"{out}/iree", encoding="utf-8"):
    m = re.match(r"(\w+) ([\w-]+) BM_\S+/real_time\s.*items_per_second=([\d.]+)([kMG]?)/s", line)
    if m:
        rate = float(m.group(3)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(4)]
        theirs.setdefault((m.group(1), m.group(2)), []).append(1.0 / rate)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
import os
print(f"pactum vs iree-benchmark-module on llvm-cpu modules, medians of {runs} alternated runs")
print(f"({os.cpu_count()} cores, {cpu}; bench/cpu modules compiled with {flags})")
print()
def show(t):
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if t * scale >= 1:
            return f"{t * scale:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"
print("| case | pactum pool | IREE local-task | ratio | pactum caller-thread | IREE local-sync | ratio |")
print("|---|---|---|---|---|---|---|")
for case in ("matmul", "elementwise", "mlp", "mlp_big", "add_vec"):
    row = [case]
    for ours_name, device in ((f"pool_{case}", "local-task"), (f"caller_{case}", "local-sync")):
        a, b = ours.get(ours_name), theirs.get((case, device))
        if not a or not b:
            row += ["-", "-", "-"]
            continue
        p, i = statistics.median(a), statistics.median(b)
        row += [show(p), show(i), f"{p / i:.2f}"]
    print("| " + " | ".join(row) + " |")
PY
