#!/usr/bin/env bash
# Open + verify + list exports of .vmfb files with 1 MiB and 1 GiB of external read-only data
# (made with pactum's writer), in process (divan, crates/pactum-iree/benches/vmfb_open.rs) and as
# commands: `pactum inspect` against IREE's `iree-dump-module --output=metadata` (the native
# binary of the pinned iree-base-runtime wheel), alternated in one run. Prints medians.
#
# usage: bench/run_vmfb_bench.sh [REPEAT=21]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPEAT="${1:-21}"
DIR="${PACTUM_VMFB_BENCH_DIR:-$(mktemp -d)}"
export PACTUM_VMFB_BENCH_DIR="$DIR"
trap '[ -z "${KEEP:-}" ] && rm -rf "$DIR"' EXIT
DUMP="$(.venv/bin/python -c 'import iree._runtime_libs as l, os; print(os.path.join(l.__path__[0], "iree-dump-module"))')"
cargo build -q --release -p pactum-cli
cargo build -q --release -p pactum-iree --example vmfb_with_rodata
for spec in 1MiB:1048576 1GiB:1073741824; do
  target/release/examples/vmfb_with_rodata "$DIR/rodata_${spec%%:*}.vmfb" "${spec##*:}"
done
ls -l "$DIR"
echo
cargo bench -q -p pactum-iree --bench vmfb_open 2>/dev/null | grep -E "1MiB|1GiB|fastest"
echo
python3 - "$DIR" "$DUMP" "$REPEAT" <<'PY'
import os, statistics, subprocess, sys, time
directory, dump, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1e3
print(f"commands, median of {repeat} alternated runs; ms per run")
print()
print("| file | pactum inspect | iree-dump-module --output=metadata | iree / pactum |")
print("|---|---|---|---|")
for size in ("1MiB", "1GiB"):
    path = os.path.join(directory, f"rodata_{size}.vmfb")
    ours, theirs = [], []
    for _ in range(repeat):
        ours.append(timed(["target/release/pactum", "inspect", path]))
        theirs.append(timed([dump, "--output=metadata", path]))
    o, t = statistics.median(ours), statistics.median(theirs)
    print(f"| {size} | {o:.2f} | {t:.2f} | {t / o:.1f} |")
PY
