#!/usr/bin/env bash
# vmvx dispatches in process: `pactum bench` against IREE's native `iree-benchmark-module` (the
# pinned runtime wheel's `_runtime_libs`), on the same modules, functions and splat inputs,
# on local-task and local-sync, alternated RUNS times. The three cases of issue 23
# (bench/iree_paths/vmvx_{matmul,mlp,cnn}.mlir) are compiled for vmvx first. Each run takes
# the median of 3 repetitions per tool; the table gives, per case and device, the median over
# runs of the paired ratio pactum / IREE and its spread (min–max). With PACTUM_BASE set to
# another pactum binary (an older build), that binary is run in the same rounds: its ratios to
# IREE are printed alongside, and the paired ratio pactum / base.
#
# usage: bench/run_vmvx_bench.sh [RUNS=5]   (builds target/release/pactum)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
IREE="${PACTUM_IREE_BENCH:-$PWD/.venv/lib/python3.11/site-packages/iree/_runtime_libs/iree-benchmark-module}"
COMPILE="${PACTUM_IREE_COMPILE:-$PWD/.venv/bin/iree-compile}"
PACTUM="$PWD/target/release/pactum"
BASE="${PACTUM_BASE:-}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
cargo build -q --release -p pactum-cli
for case in matmul mlp cnn; do
  "$COMPILE" --iree-hal-target-device=local --iree-hal-local-target-device-backends=vmvx \
    "bench/iree_paths/vmvx_$case.mlir" -o "$OUT/vmvx_$case.vmfb"
done
args() {
  case "$1" in
    matmul) echo --function=matmul_bias_relu --input=128x256xf32=0.5 --input=256x128xf32=0.25 \
      --input=128xf32=-1 ;;
    mlp) echo --function=mlp --input=16x784xf32=0.5 --input=784x512xf32=0.01 \
      --input=512xf32=0.1 --input=512x512xf32=0.01 --input=512xf32=0.1 \
      --input=512x10xf32=0.01 --input=10xf32=0.1 ;;
    cnn) echo --function=cnn --input=1x32x32x3xf32=0.5 --input=3x3x3x16xf32=0.1 \
      --input=16xf32=0.1 --input=3x3x16x32xf32=0.05 --input=32xf32=0.1 \
      --input=6272x10xf32=0.01 --input=10xf32=0.1 ;;
  esac
}
median() { grep -E 'real_time_median' | head -1 | awk '{print $2, $3}'; }
for run in $(seq "$RUNS"); do
  for case in matmul mlp cnn; do
    for device in local-task local-sync; do
      flags="--module=$OUT/vmvx_$case.vmfb $(args "$case") --device=$device --benchmark_repetitions=3"
      # shellcheck disable=SC2086
      {
        echo "$run $case $device pactum $("$PACTUM" bench $flags 2>/dev/null | median)"
        echo "$run $case $device iree $("$IREE" $flags 2>/dev/null | median)"
        if [ -n "$BASE" ]; then
          echo "$run $case $device base $("$BASE" bench $flags 2>/dev/null | median)"
        fi
      } >> "$OUT/times"
    done
  done
done
python3 - "$OUT/times" "$RUNS" <<'PY'
import collections, statistics, sys
units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
times = collections.defaultdict(dict)
for line in open(sys.argv[1], encoding="utf-8"):
    run, case, device, tool, value, unit = line.split()
    times[(case, device, run)][tool] = float(value) * units[unit]
tools = [t for t in ("pactum", "base") if any(t in v for v in times.values())]
print(f"vmvx in process, pactum bench vs iree-benchmark-module, {sys.argv[2]} alternated runs")
print()
paired = ["pactum / base"] if "base" in tools else []
print("| case | device | IREE (median) | " + " | ".join([f"{t} / IREE: median (min–max)" for t in tools] + [f"{p}: median (min–max)" for p in paired]) + " |")
print("|---|---|---|" + "---|" * len(tools + paired))
for case in ("matmul", "mlp", "cnn"):
    for device in ("local-task", "local-sync"):
        runs = [v for (c, d, _), v in sorted(times.items()) if (c, d) == (case, device)]
        iree = statistics.median(v["iree"] for v in runs)
        cells = []
        for t, against in [(t, "iree") for t in tools] + [("pactum", "base")] * len(paired):
            ratios = [v[t] / v[against] for v in runs]
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})")
        print(f"| {case} | {device} | {iree * 1e3:.1f} ms | " + " | ".join(cells) + " |")
PY
