"""apache-tvm 0.27 on the official libtvm_ffi.so and on pactum's, in the same run (issue 24,
item 4): TVM's Python call overhead, a Relax VM run and a global-function call
(bench/tvm_clients/tvm_bench.py), each library in its own process, alternated (the official
library first in odd rounds, pactum's first in even ones), after one uncounted warm-up pair. Each
process reports the median over batches of the mean time per call; the result is, per case, the
median of the paired ratios pactum / official with their quartiles. The library each process
mapped is checked (PACTUM_EXPECT_LIB).

usage: run.py --venv VENV --pactum-lib PATH [--rounds N] [--markdown FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--pactum-lib", required=True, help="pactum's libtvm_ffi.so (release)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    python = Path(args.venv) / "bin/python"
    package = Path(subprocess.run(
        [python, "-c", "import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))"],
        check=True, capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory(prefix="pactum-tvm-bench-") as scratch:
        # pactum's library in a copy of the tvm_ffi package put first on PYTHONPATH, so the venv
        # itself stays official.
        shutil.copytree(package, Path(scratch) / "tvm_ffi")
        for info in package.parent.glob("apache_tvm_ffi-*.dist-info"):
            shutil.copytree(info, Path(scratch) / info.name)
        swapped = Path(scratch) / "tvm_ffi/lib/libtvm_ffi.so"
        shutil.copyfile(args.pactum_lib, swapped)
        libraries = {
            "official": {"PACTUM_EXPECT_LIB": str(package / "lib/libtvm_ffi.so")},
            "pactum": {"PACTUM_EXPECT_LIB": str(swapped), "PYTHONPATH": scratch},
        }

        def measure(which):
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.update(libraries[which], PYTHONDONTWRITEBYTECODE="1")
            done = subprocess.run([python, HERE / "tvm_bench.py"], env=env,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"error: the {which} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
            return json.loads(done.stdout.strip().splitlines()[-1])

        measure("official")
        measure("pactum")
        times = {"official": [], "pactum": []}
        for round_index in range(args.rounds):
            order = ["official", "pactum"] if round_index % 2 == 0 else ["pactum", "official"]
            for which in order:
                times[which].append(measure(which))
                print(f"round {round_index + 1} {which}: {times[which][-1]}", flush=True)
    load = os.getloadavg()[0]
    lines = [
        f"{args.rounds} alternated rounds; {os.cpu_count()} cores; load average {load:.1f} at the end.",
        "",
        "| case | official | pactum | pactum / official (median of paired ratios) | quartiles |",
        "|---|---|---|---|---|",
    ]
    for case in times["official"][0]:
        official = [t[case] for t in times["official"]]
        ours = [t[case] for t in times["pactum"]]
        ratios = [p / o for p, o in zip(ours, official)]
        low, high = quartiles(ratios)
        lines.append(f"| `{case}` | {statistics.median(official):.2f} µs | "
                     f"{statistics.median(ours):.2f} µs | **{statistics.median(ratios):.2f}** | "
                     f"{low:.2f}–{high:.2f} |")
    table = "\n".join(lines)
    print("\n" + table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
