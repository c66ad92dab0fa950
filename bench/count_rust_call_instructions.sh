#!/usr/bin/env bash
# Instructions per Rust -> Rust packed call, counted by valgrind's callgrind (repeatable on a
# shared, noisy machine, unlike wall-clock time). Each call path of
# crates/pactum/benches/packed_call.rs is an #[inline(never)] function called CALLS times.
#
# usage: bench/count_rust_call_instructions.sh [CALLS=20000]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CALLS="${1:-20000}"
cargo bench -q -p pactum --bench packed_call --no-run 2>/dev/null
BIN="$(ls -t target/release/deps/packed_call-* | grep -v '\.d$' | head -1)"
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$OUT" "$BIN" --bench --sample-count 1 --sample-size "$CALLS" >/dev/null 2>&1
callgrind_annotate --inclusive=yes --threshold=100 "$OUT" 2>/dev/null | python3 -c '
import re, sys
calls = int(sys.argv[1])
counts = {}
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) .*packed_call::(enter_\w+|typed_call\w*) ", line)
    if m:
        counts[m.group(2)] = int(m.group(1).replace(",", "")) / calls
typed = {0: "typed_call0", 1: "typed_call3", 2: "typed_call_tensor"}
print(f"Instructions per call (callgrind, {calls} calls per case)")
print()
print("| arguments | raw safe_call | Function::call (dynamic) | ratio | TypedFunction::call | ratio |")
print("|---|---|---|---|---|---|")
for case, name in enumerate(("args0", "ints3", "tensor1")):
    r, d, t = counts[f"enter_raw_{name}"], counts[f"enter_dynamic_{name}"], counts[typed[case]]
    print(f"| {name} | {r:.0f} | {d:.0f} | {d / r:.2f} | {t:.0f} | {t / r:.2f} |")
' "$CALLS"
