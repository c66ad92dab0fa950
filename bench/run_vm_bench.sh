#!/usr/bin/env bash
# pactum's VM interpreter against IREE's (`iree-benchmark-module` of the pinned
# iree-base-runtime in .venv), on the same modules, functions and inputs, alternated RUNS
# times; prints the medians and the ratio pactum / IREE.
#   - call overhead: vm_direct.mix(1, 2, 1.5, 0.25) (4 arguments, 5 instructions, 3 results);
#   - VM-heavy: vm_scalars.spin(1000000) (a million trips of a 14-instruction loop).
#
# usage: bench/run_vm_bench.sh [RUNS=5]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
IREE="${PACTUM_IREE_BIN:-$PWD/.venv/bin}/iree-benchmark-module"
F=crates/pactum-iree/tests/fixtures/vmfb
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
cargo bench -q -p pactum-iree --bench vm --no-run 2>/dev/null
for _ in $(seq "$RUNS"); do
  cargo bench -q -p pactum-iree --bench vm -- call_mix spin_fixture 2>/dev/null \
    | grep -E '(call_mix|spin_fixture)' >> "$OUT/pactum"
  "$IREE" --module=$F/vm_direct.vmfb --function=mix --input=1 --input=2 --input=1.5 \
    --input=0.25 --benchmark_min_time=0.5s 2>/dev/null | grep BM_ >> "$OUT/iree"
  "$IREE" --module=$F/vm_scalars.vmfb --function=spin --input=1000000 \
    --benchmark_min_time=1s 2>/dev/null | grep BM_ >> "$OUT/iree"
done
python3 - "$OUT" "$RUNS" <<'PY'
import re, statistics, sys
out, runs = sys.argv[1], sys.argv[2]
units = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
ours = {"call_mix": [], "spin_fixture": []}
for line in open(f"{out}/pactum", encoding="utf-8"):
    cells = [c.strip() for c in line.split("│")]
    name = cells[0].split()[1]
    value, unit = cells[2].split()
    ours[name].append(float(value) * units[unit])
theirs = {"mix": [], "spin": []}
for line in open(f"{out}/iree", encoding="utf-8"):
    m = re.match(r"BM_(\w+)/\S+\s+([\d.]+) (\w+)\s+[\d.]+ \w+\s+\d+\s+items_per_second=([\d.]+)([kMG]?)/s", line)
    if m:
        rate = float(m.group(4)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(5)]
        theirs[m.group(1)].append(1.0 / rate)
print(f"pactum VM vs iree-benchmark-module, medians of {runs} alternated runs")
print()
print("| call | pactum | IREE | pactum / IREE |")
print("|---|---|---|---|")
for label, a, b, scale, unit in (
    ("vm_direct.mix(1, 2, 1.5, 0.25)", "call_mix", "mix", 1e9, "ns"),
    ("vm_scalars.spin(1000000)", "spin_fixture", "spin", 1e3, "ms"),
):
    p, i = statistics.median(ours[a]), statistics.median(theirs[b])
    print(f"| {label} | {p * scale:.3g} {unit} | {i * scale:.3g} {unit} | {p / i:.2f} |")
PY
