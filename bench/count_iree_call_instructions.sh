#!/usr/bin/env bash
# Instructions per structured call (crates/pactum-iree/benches/iree_signatures.rs, both key orders),
# counted by callgrind: two runs of N and 2N calls per case, so setup cancels out.
#
# usage: bench/count_iree_call_instructions.sh [N=2000]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N="${1:-2000}"
cargo bench -q -p pactum-iree --bench iree_signatures --no-run 2>/dev/null
BIN="$(ls -t target/release/deps/iree_signatures-* | grep -v '\.d$' | head -1)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
count() {
  valgrind --tool=callgrind --callgrind-out-file="$WORK/out" "$BIN" --bench "$1" \
    --sample-count 1 --sample-size "$2" >/dev/null 2>&1
  callgrind_annotate --inclusive=yes "$WORK/out" 2>/dev/null | grep "$3 \[" | head -1 \
    | awk '{gsub(",", "", $1); print $1}'
}
structured_1=$(count structured_16_tensors "$N" "iree_signatures::call_structured")
structured_2=$(count structured_16_tensors "$((2 * N))" "iree_signatures::call_structured")
python3 - "$N" "$structured_1" "$structured_2" <<'PY'
import sys
n, s1, s2 = (int(x) for x in sys.argv[1:])
# The structured case has two variants (key orders), each called n (then 2n) times.
print(f"structured call: {(s2 - s1) / (2 * n):.0f} instructions per call (mean of both key orders)")
PY
