#!/usr/bin/env python3
"""bench/iree_paths: in-process timings of one call, pactum against IREE, alternated.

Each round runs every tool once with the same flags (`pactum bench` and the native
`iree-benchmark-module` take the same ones) and reads the median of its repetitions' mean real
time per call. Per round, the ratio of each pactum build to IREE is taken; the medians of those
paired ratios, and their spread (min..max), are printed. The machine may be shared: the
spread says how noisy the run was.

Usage: paired_bench.py --rounds N --device D [--pactum NAME=PATH ...] -- FLAGS...
  (the flags after `--` go to every tool; --benchmark_repetitions=3 is added)
"""

from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
IREE = (ROOT / ".venv/lib/python3.11/site-packages/iree/_runtime_libs/iree-benchmark-module")
ROW = re.compile(r"^BM_\S+/real_time\s+([0-9.]+) (ns|us|ms|s)\b")
SCALE = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def time_us(cmd) -> float:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [float(m.group(1)) * SCALE[m.group(2)] for m in map(ROW.match, out.splitlines()) if m]
    if not rows:
        sys.exit(f"no timing rows in the output of {cmd}:\n{out}")
    return statistics.median(rows)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", required=True)
    parser.add_argument("--pactum", action="append", default=[],
                        help="NAME=PATH of a pactum binary (default: target/release/pactum)")
    parser.add_argument("flags", nargs="*")
    args = parser.parse_args()
    builds = dict(p.split("=", 1) for p in args.pactum) or {
        "pactum": str(ROOT / "target/release/pactum")}
    flags = args.flags + [f"--device={args.device}", "--benchmark_repetitions=3"]
    times = {name: [] for name in [*builds, "iree"]}
    for _ in range(args.rounds):
        times["iree"].append(time_us([str(IREE), *flags]))
        for name, path in builds.items():
            times[name].append(time_us([path, "bench", *flags]))
    print(f"device {args.device}, {args.rounds} rounds; per-call real time, us (median)")
    print(f"  iree: {statistics.median(times['iree']):.2f}")
    for name in builds:
        ratios = [t / i for t, i in zip(times[name], times["iree"])]
        print(f"  {name}: {statistics.median(times[name]):.2f}; ratio to iree: median "
              f"{statistics.median(ratios):.3f} (spread {min(ratios):.3f}..{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
