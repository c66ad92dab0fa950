#!/usr/bin/env bash
# Rust -> Rust packed-call overhead (crates/pactum/benches/packed_call.rs), run RUNS times;
# prints a Markdown table of the median of divan's per-run medians, and each call path's
# ratio to calling the raw safe_call pointer measured in the same runs.
#
# usage: bench/run_rust_call_bench.sh [RUNS=5]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
cargo bench -q -p pactum --bench packed_call --no-run 2>/dev/null
for _ in $(seq "$RUNS"); do
  cargo bench -q -p pactum --bench packed_call 2>/dev/null | grep -E '^(├|╰)' >> "$OUT"
done
python3 - "$OUT" "$RUNS" <<'PY'
import collections, re, statistics, sys
units = {"ns": 1.0, "µs": 1e3, "ms": 1e6}
medians = collections.defaultdict(list)
for line in open(sys.argv[1], encoding="utf-8"):
    cells = [c.strip() for c in line.split("│")]
    name = cells[0].split()[1]
    value, unit = cells[2].split()
    medians[name].append(float(value) * units[unit])
print(f"Rust -> Rust packed calls, divan, median of {sys.argv[2]} runs' medians; ns per call")
print()
print("| arguments | raw safe_call | Function::call (dynamic) | ratio | TypedFunction::call | ratio |")
print("|---|---|---|---|---|---|")
for case in ("args0", "ints3", "tensor1"):
    raw = statistics.median(medians[f"raw_safe_call/{case}"])
    dyn = statistics.median(medians[f"dynamic_call/{case}"])
    typ = statistics.median(medians[f"typed_call/{case}"])
    print(f"| {case} | {raw:.2f} | {dyn:.2f} | {dyn / raw:.2f} | {typ:.2f} | {typ / raw:.2f} |")
PY
