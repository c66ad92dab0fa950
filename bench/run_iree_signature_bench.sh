#!/usr/bin/env bash
# IREE signatures (crates/pactum-iree/benches/iree_signatures.rs): each codec's parse time and
# throughput, and a structured call (iree.abi, a 3-level nested dict of 16 tensors) against
# the flat call it wraps. Runs the bench RUNS times; prints the median of divan's per-run
# medians.
#
# usage: bench/run_iree_signature_bench.sh [RUNS=7]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-7}"
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
cargo bench -q -p pactum-iree --bench iree_signatures --no-run 2>/dev/null
for _ in $(seq "$RUNS"); do
  cargo bench -q -p pactum-iree --bench iree_signatures 2>/dev/null >> "$OUT"
done
python3 - "$OUT" "$RUNS" <<'PY'
import collections, statistics, sys
units = {"ns": 1.0, "µs": 1e3, "ms": 1e6}
medians = collections.defaultdict(list)
sizes = {}
group = None
for line in open(sys.argv[1], encoding="utf-8"):
    cells = [c.strip() for c in line.lstrip("│├╰─ ").split("│")]
    if len(cells) < 3 or not cells[0] or not cells[0][0].isalpha():
        continue
    name = cells[0].split()[0]
    if name in ("true", "false"):
        name = f"{group}/{name}"
    elif not cells[2]:
        group = name
        continue
    elif "/" not in name:
        continue
    value, unit = cells[2].split()
    medians[name].append(float(value) * units[unit])
print(f"IREE signatures, divan, median of {sys.argv[2]} runs' medians")
print()
inputs = {"iree_abi": 172, "raw": 46, "sip": 80, "cconv": 20, "declaration": 157}
print("| codec | input bytes | parse (ns) | MB/s |")
print("|---|---|---|---|")
for codec, size in inputs.items():
    ns = statistics.median(medians[f"parse/{codec}"])
    print(f"| {codec} | {size} | {ns:.0f} | {size / ns * 1e3:.0f} |")
print()
flat = statistics.median(medians["call/flat_16_tensors"])
ordered = statistics.median(medians["call/structured_16_tensors/true"])
reversed_ = statistics.median(medians["call/structured_16_tensors/false"])
print("| call | ns per call |")
print("|---|---|")
print(f"| flat function, prebuilt nested arrays | {flat:.1f} |")
print(f"| structured wrapper, dict keys in record order | {ordered:.1f} |")
print(f"| structured wrapper, dict keys reversed | {reversed_:.1f} |")
PY
