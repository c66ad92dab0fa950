#!/usr/bin/env python3
"""pactum's VM interpreter against IREE's on the scalar loops of issue 23, in wall-clock and CPU
time: `pactum bench` of two builds (OLD, NEW) and the pinned `iree-benchmark-module`
(`--device=local-sync`), alternated ROUNDS times (the order reversed every other round), each
run taking the median of 3 repetitions. Prints, per loop, the medians and the medians of the
paired ratios (with their range), so that a shared, noisy machine shows as spread.

    bench/compare_vm_loops.py ROUNDS OLD_PACTUM NEW_PACTUM

The loops: bench/iree_paths/loop_i64.mlir and loop_f32.mlir (compiled here for vmvx by the
pinned `iree-compile`), 20 million trips each, and vm_scalars.spin(1000000).
"""

import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
IREE = next(VENV.glob("lib/python3*/site-packages/iree/_runtime_libs/iree-benchmark-module"))
UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def median_times(cmd):
    """(real, cpu) seconds of the `_median` row of a Google-Benchmark console output."""
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"_median\s+([\d.]+) (\S+)\s+([\d.]+) (\S+)", out)
    if not m:
        raise SystemExit(f"no median row in the output of {cmd[0]}:\n{out[-2000:]}")
    return float(m[1]) * UNITS[m[2]], float(m[3]) * UNITS[m[4]]


def main():
    rounds, old, new = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    tmp = pathlib.Path(tempfile.mkdtemp())
    for name in ("loop_i64", "loop_f32"):
        subprocess.run(
            [VENV / "bin/iree-compile", "--iree-hal-target-device=local",
             "--iree-hal-local-target-device-backends=vmvx",
             ROOT / f"bench/iree_paths/{name}.mlir", "-o", tmp / f"{name}.vmfb"],
            check=True,
        )
    scalars = ROOT / "crates/pactum-iree/tests/fixtures/vmfb/vm_scalars.vmfb"
    cases = {
        "loop_i64(20000000)": [f"--module={tmp}/loop_i64.vmfb", "--function=loop_i64",
                               "--input=20000000"],
        "loop_f32(20000000, 1.5)": [f"--module={tmp}/loop_f32.vmfb", "--function=loop_f32",
                                    "--input=20000000", "--input=1.5"],
        "vm_scalars.spin(1000000)": [f"--module={scalars}", "--function=spin",
                                     "--input=1000000"],
    }
    runs = {}
    for r in range(rounds):
        for case, args in cases.items():
            order = [("old", [old, "bench", *args]), ("new", [new, "bench", *args]),
                     ("iree", [IREE, *args, "--device=local-sync"])]
            if r % 2:
                order.reverse()
            for who, cmd in order:
                runs.setdefault((case, who), []).append(
                    median_times([*cmd, "--benchmark_repetitions=3"]))
    print(f"medians of {rounds} alternated rounds (each the median of 3 repetitions)")
    print()
    print("| loop | time | old | new | IREE | old / IREE | new / IREE | new / old |")
    print("|---|---|---|---|---|---|---|---|")
    for case in cases:
        o, n, i = (runs[(case, who)] for who in ("old", "new", "iree"))
        for col, label in ((0, "wall"), (1, "CPU")):
            def ratio(a, b):
                rs = [x[col] / y[col] for x, y in zip(a, b)]
                return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"

            def ms(a):
                return f"{statistics.median(x[col] for x in a) * 1e3:.0f} ms"

            print(f"| {case} | {label} | {ms(o)} | {ms(n)} | {ms(i)} | {ratio(o, i)} "
                  f"| {ratio(n, i)} | {ratio(n, o)} |")


if __name__ == "__main__":
    main()
