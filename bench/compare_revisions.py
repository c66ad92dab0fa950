#!/usr/bin/env python3
"""Runs the same divan benchmarks of two revisions of pactum alternately and prints, for each
benchmark, the medians of both and the median of the per-round ratios new / old, with their
range: is a change slower than what it replaced, measured in one session on one machine?

    bench/compare_revisions.py OLD_REV [NEW_REV=HEAD] [--rounds 7] [--bench PKG:BENCH[:FILTER]]...

Each revision is checked out into a temporary worktree (with this checkout's `.venv` linked in)
and its bench binaries are built in release mode there. Then every round runs each benchmark
binary of both trees, the order swapped from one round to the next, and reads divan's median
per case. Defaults: `pactum:packed_call` (packed calls from Rust), `pactum-iree:vm` (the VM
loop and call overhead), `pactum-iree:cpu` (llvm-cpu dispatch; its large modules come from the
`PACTUM_CPU_*` variables `bench/run_cpu_bench.sh` sets, the fixtures' cases run without them).
A case present in one tree only is reported and skipped. Wall-clock time on a shared machine
is noisy: the ratio's range says how noisy.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = {"ps": 1e-12, "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
DEFAULT_BENCHES = ["pactum:packed_call", "pactum-iree:vm", "pactum-iree:cpu"]


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, check=True, text=True, **kw)


def checkout(rev, into):
    run(["git", "worktree", "add", "--detach", "--quiet", str(into), rev], ROOT)
    for link in (".venv", ".peer"):
        if (ROOT / link).exists() and not (into / link).exists():
            (into / link).symlink_to((ROOT / link).resolve())


def build(tree, package, bench):
    """Builds one bench binary in `tree` and returns its path."""
    out = run(
        ["cargo", "bench", "-q", "-p", package, "--bench", bench, "--no-run",
         "--message-format=json"],
        tree,
        capture_output=True,
    ).stdout
    for line in out.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == bench \
                and message.get("executable"):
            return message["executable"]
    raise SystemExit(f"{tree}: no executable for {package} --bench {bench}")


def medians(binary, filters, cwd):
    """Runs a divan bench binary; returns {case path: median seconds}."""
    text = run([binary, "--bench", *filters], cwd, capture_output=True).stdout
    results, stack = {}, []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) < 3:
            continue
        head = cells[0]
        m = re.match(r"^([│├╰─\s]*)(\S+)\s*(.*)$", head)
        if not m:
            continue
        depth = len(m.group(1)) // 3
        name, fastest = m.group(2), m.group(3).strip()
        del stack[depth:]
        stack.append(name)
        value = cells[2].split()
        if fastest and len(value) == 2 and value[1] in UNITS:
            results["/".join(stack)] = float(value[0]) * UNITS[value[1]]
    return results


def show(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--bench", action="append", help="PACKAGE:BENCH[:FILTER]")
    args = parser.parse_args()
    benches = [b.split(":") for b in (args.bench or DEFAULT_BENCHES)]
    with tempfile.TemporaryDirectory(prefix="pactum-compare-") as work:
        trees = {"old": Path(work) / "old", "new": Path(work) / "new"}
        revs = {"old": args.old, "new": args.new}
        try:
            for side, tree in trees.items():
                checkout(revs[side], tree)
            binaries = {
                (side, tuple(b)): build(tree, b[0], b[1])
                for b in benches
                for side, tree in trees.items()
            }
            samples = {}
            for round_ in range(args.rounds):
                order = ["old", "new"] if round_ % 2 == 0 else ["new", "old"]
                for b in benches:
                    got = {
                        side: medians(binaries[(side, tuple(b))], b[2:], trees[side])
                        for side in order
                    }
                    for case in sorted(set(got["old"]) | set(got["new"])):
                        key = f"{b[0]}:{b[1]} {case}"
                        pair = (got["old"].get(case), got["new"].get(case))
                        samples.setdefault(key, []).append(pair)
                print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                               check=False, capture_output=True)
    print(f"old = {args.old}, new = {args.new}: divan medians, {args.rounds} alternated rounds")
    print()
    print("| benchmark | old | new | new / old (median of rounds) | range |")
    print("|---|---|---|---|---|")
    for key, pairs in samples.items():
        if any(o is None or n is None for o, n in pairs):
            print(f"| {key} | (in one tree only) | | | |")
            continue
        ratios = [n / o for o, n in pairs]
        print(
            f"| {key} | {show(statistics.median(o for o, _ in pairs))} | "
            f"{show(statistics.median(n for _, n in pairs))} | "
            f"{statistics.median(ratios):.3f} | {min(ratios):.2f}–{max(ratios):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
