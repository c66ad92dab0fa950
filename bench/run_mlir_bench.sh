#!/usr/bin/env bash
# MLIR memref calls, in one run: Rust (crates/pactum-mlir/benches/mlir_call.rs: pactum's dynamic call
# against a direct extern "C" call, RUNS runs, medians) and Python (bench/mlir_python_bench.py:
# the bridge against ctypes). Builds the MLIR test libraries with crates/pactum-mlir/tests/mlir/build.sh.
#
# usage: bench/run_mlir_bench.sh [RUNS=5] [PY_NUMBER=100000] [PY_REPEAT=11]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
PYTHON="${PACTUM_PYTHON:-$PWD/.venv/bin/python}"
LIBS="$PWD/target/tmp/mlir"
bash crates/pactum-mlir/tests/mlir/build.sh "$LIBS"
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
cargo bench -q -p pactum-mlir --bench mlir_call --no-run 2>/dev/null
for _ in $(seq "$RUNS"); do
  cargo bench -q -p pactum-mlir --bench mlir_call -- --sample-size 20000 --sample-count 100 2>/dev/null \
    | grep -E '(├|╰)─ ' >> "$OUT"
done
python3 - "$OUT" "$RUNS" <<'PY'
import collections, statistics, sys
units = {"ns": 1.0, "µs": 1e3, "ms": 1e6}
medians = collections.defaultdict(list)
group = None
for line in open(sys.argv[1], encoding="utf-8"):
    # "│  ├─ name  fastest │ slowest │ median │ ...": the tree prefix goes, then the cells.
    cells = [c.strip() for c in line.lstrip(" │").split("│")]
    name = cells[0].split("─ ")[-1].split()[0]
    if len(cells) < 3 or not cells[1]:
        group = name
        continue
    value, unit = cells[2].split()
    medians[f"{group}/{name}"].append(float(value) * units[unit])
print(f"Rust -> MLIR function, divan, median of {sys.argv[2]} runs' medians; ns per call")
print()
print("| function | direct extern \"C\" | pactum dynamic, registers | ratio / difference | pactum dynamic, libffi | ratio / difference | pactum typed | ratio / difference |")
print("|---|---|---|---|---|---|---|---|")
for group in ("add_one", "mixed"):
    direct = statistics.median(medians[f"{group}/direct"])
    cells = []
    for path in ("pactum_registers", "pactum_libffi", "pactum_typed"):
        value = statistics.median(medians[f"{group}/{path}"])
        cells.append(f"{value:.1f} | {value / direct:.2f}x / {value - direct:+.1f} ns")
    print(f"| {group} | {direct:.1f} | " + " | ".join(cells) + " |")
if "add_one/direct_fill" in medians:
    print()
    print(f"Direct call with the two descriptors filled from the tensors each call: "
          f"{statistics.median(medians['add_one/direct_fill']):.1f} ns")
PY
echo
cargo build --release -q -p pactum-example-kernels
"$PYTHON" bench/mlir_python_bench.py "$PWD/target/release/libpactum_example_kernels.so" \
  "$LIBS/libmemref_core.so" "${2:-100000}" "${3:-11}"
