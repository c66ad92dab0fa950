#!/usr/bin/env python3
"""Whole-process timings of two or more commands, alternated, as medians of paired ratios.

    python3 bench/iree_paths/paired.py --runs 21 --cwd DIR \
        --cmd iree 'iree-run-module --module=m.vmfb ...' \
        --cmd pactum 'target/release/pactum run --module=m.vmfb ...'

Each round runs every command once, in turn (the order rotating each round, so that neither
always follows the other); the first command is the reference: for each other command the
ratio of its time to the reference's in the same round is taken, and the median of those
ratios reported with its spread (the 25th and 75th percentiles), beside each command's median
wall time. One warm-up round first (page cache, CPU frequency). Output goes to /dev/null;
a command that fails stops the run.
"""
import argparse
import shlex
import statistics
import subprocess
import time


def quantile(values, q):
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def run_once(argv, cwd):
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--cwd", default=None)
    parser.add_argument("--cmd", nargs=2, action="append", metavar=("NAME", "COMMAND"), required=True)
    args = parser.parse_args()
    commands = [(name, shlex.split(text)) for name, text in args.cmd]
    times = {name: [] for name, _ in commands}
    for name, argv in commands:
        run_once(argv, args.cwd)
    for round_index in range(args.runs):
        shift = round_index % len(commands)
        for name, argv in commands[shift:] + commands[:shift]:
            times[name].append(run_once(argv, args.cwd))
    reference = commands[0][0]
    for name, _ in commands:
        line = f"{name:>12}: median {statistics.median(times[name]) * 1e3:8.2f} ms"
        if name != reference:
            ratios = [t / r for t, r in zip(times[name], times[reference])]
            line += (
                f"   ratio to {reference}: median {statistics.median(ratios):.3f}"
                f" (p25 {quantile(ratios, 0.25):.3f}, p75 {quantile(ratios, 0.75):.3f})"
            )
        print(line)


if __name__ == "__main__":
    main()
