#!/usr/bin/env python3
"""Runs pactum's end-to-end conformance suite: the test programs of generate.py, compiled by
the pinned iree-compile for each backend configuration IREE's own e2e suites use, run
through IREE's runtime (iree.runtime with a Python `check` module,
crates/pactum-iree/tests/python/iree_check_runner.py) and through pactum (`pactum test`),
and compared function by function.

A function agrees when both runtimes give it the same outcome (pass, fail or error). The run
fails when a function IREE's runtime passes does not pass under pactum, when a function of the
deliberately failing suite passes under either runtime, or when a peer is missing. Functions
IREE's runtime gets wrong (it fails a check NumPy's expected value sets, or raises) are
counted and listed, not failed: there pactum may agree with IREE or with NumPy. Counts are
printed per suite and backend.

The Vulkan column (`--backend vulkan`: every program llvm-cpu runs, compiled with
`--iree-hal-target-device=vulkan`, run by IREE's Python runtime and by `pactum test` on the
`vulkan` device, lavapipe where no GPU is present) runs by default with the three CPU
configurations; without a Vulkan driver the run stops and says so (`--backend llvm-cpu
--backend vmvx --backend vmvx-ukernels` for the CPU columns alone).

known_differences.txt lists what pactum does not do yet: one line per pattern
(`SOURCE::FUNCTION [BACKEND]`, shell wildcards allowed) and its cause after ` -- `. A listed
difference is reported, not failed; a pattern that matches no difference fails the run, so a
fix must take its line out.

Usage: run.py [--out DIR] [--pactum PATH] [--suite NAME ...] [--backend NAME ...] [--jobs N]
  (no --backend: llvm-cpu, vmvx, vmvx-ukernels and vulkan; `--backend vulkan` for the Vulkan column alone)
"""

import argparse
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
IREE_RUNNER = ROOT / "crates/pactum-iree/tests/python/iree_check_runner.py"

# Each backend configuration as IREE's e2e suites build and run it (tests/e2e/*/CMakeLists.txt:
# llvm-cpu on local-task, vmvx on local-task, vmvx with microkernels on local-sync, vulkan-spirv
# on vulkan): its iree-compile flags and the device that runs it.
LOCAL = "--iree-hal-target-device=local"
BACKENDS = {
    "llvm-cpu": ([LOCAL, "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic"],
                 "local-task"),
    "vmvx": ([LOCAL, "--iree-hal-local-target-device-backends=vmvx"], "local-task"),
    "vmvx-ukernels": ([LOCAL, "--iree-hal-local-target-device-backends=vmvx", "--iree-vmvx-enable-microkernels"],
                      "local-sync"),
    "vulkan": (["--iree-hal-target-device=vulkan"], "vulkan"),
}
# Run only when named with --backend (none now: the Vulkan column agrees with IREE on every
# function and costs about two CPU-minutes, so it runs by default since issue 25).
OPT_IN_BACKENDS = set()


def backends_of(entry, chosen):
    """The backends an entry of cases.json runs on: its own (generate.py's), and vulkan
    wherever llvm-cpu runs, restricted to `chosen` (None: every backend not opt-in)."""
    backends = list(entry["backends"]) + (["vulkan"] if "llvm-cpu" in entry["backends"] else [])
    if chosen:
        return [b for b in backends if b in chosen]
    return [b for b in backends if b not in OPT_IN_BACKENDS]


def require_vulkan_driver():
    """Exits, saying why, when no Vulkan device is there for the Vulkan column: without one
    every IREE run would be an error and nothing would be compared (a silent skip)."""
    import iree._runtime_libs as libs

    tool = Path(libs.__file__).parent / "iree-run-module"
    listed = subprocess.run([str(tool), "--list_devices"], capture_output=True, text=True).stdout
    if "vulkan://" not in listed:
        sys.exit("error: --backend vulkan, but NO VULKAN DRIVER: iree-run-module --list_devices "
                 "shows no vulkan:// device. Install one (Debian: apt-get install "
                 "mesa-vulkan-drivers libvulkan1, which gives lavapipe).")


def known_differences():
    """[(pattern, cause)] from known_differences.txt."""
    entries = []
    for line in (HERE / "known_differences.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, _, cause = line.partition(" -- ")
        entries.append((pattern.strip(), cause.strip()))
    return entries


def matches(where, pattern):
    """Whether `SOURCE::FUNCTION [BACKEND]` matches a pattern of that form with shell
    wildcards (matched part by part: brackets are literal)."""
    (name, backend), (name_pattern, backend_pattern) = (w.rsplit(" [", 1) for w in (where, pattern))
    return fnmatch.fnmatchcase(name, name_pattern) and fnmatch.fnmatchcase(backend, backend_pattern)


def venv_tool(name):
    path = ROOT / ".venv/bin" / name
    if not path.exists():
        sys.exit(f"{path} is missing: scripts/test.sh installs the pinned peers into .venv")
    return path


def compile_module(compiler, out, entry, backend):
    """Compiles one generated source for one backend, reusing an earlier output when the
    source, flags and compiler are unchanged."""
    source = out / entry["source"]
    flags = list(BACKENDS[backend][0])
    if entry["input_type"]:
        flags.append(f"--iree-input-type={entry['input_type']}")
    key = hashlib.sha256(source.read_bytes() + "\0".join(flags).encode() + str(compiler).encode()).hexdigest()
    module = source.with_name(f"{source.stem}.{backend}.vmfb")
    stamp = module.with_suffix(".key")
    if module.exists() and stamp.exists() and stamp.read_text() == key:
        return module, None
    result = subprocess.run([str(compiler), *flags, source.name, "-o", module.name],
                            cwd=source.parent, capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if "error:" in line]
        return None, (errors[0] if errors else result.stderr.strip()[-400:])
    stamp.write_text(key)
    return module, None


def iree_outcomes(python, module, device):
    """{function: (outcome, detail)} from IREE's runtime with the Python check module."""
    result = subprocess.run([str(python), str(IREE_RUNNER), "--device", device, str(module)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None, f"iree_check_runner.py exited with {result.returncode}: {result.stderr.strip()[-400:]}"
    (report,) = json.loads(result.stdout)
    if report["error"]:
        return None, report["error"]
    outcomes = {}
    for test in report["tests"]:
        detail = test["error"] or "; ".join(f["headline"] for f in test["failures"])
        outcomes[test["name"]] = (test["outcome"], detail)
    return outcomes, None


def pactum_outcomes(pactum, module, device):
    """{function: (outcome, detail)} from `pactum test --json`."""
    result = subprocess.run([str(pactum), "test", str(module), "--device", device, "--json"],
                            capture_output=True, text=True)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        return None, f"pactum test exited with {result.returncode}: {result.stderr.strip()[-400:]}"
    if report.get("error"):
        return None, report["error"]
    outcomes = {}
    for test in report["tests"]:
        detail = test.get("error") or "; ".join(f["message"].splitlines()[0] for f in test.get("failures", []))
        outcomes[test["name"]] = (test["outcome"], detail)
    return outcomes, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "target/conformance/e2e"))
    parser.add_argument("--pactum", default=str(ROOT / "target/debug/pactum"))
    parser.add_argument("--suite", action="append", help="only these suites (repeatable)")
    parser.add_argument("--backend", action="append", choices=sorted(BACKENDS), help="only these backends")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    python = venv_tool("python")
    compiler = venv_tool("iree-compile")
    pactum = Path(args.pactum)
    if not pactum.exists():
        sys.exit(f"{pactum} is missing: build it with `cargo build -p pactum-cli`")
    out = Path(args.out)
    subprocess.run([str(python), str(HERE / "generate.py"), str(out)], check=True)
    index = json.loads((out / "cases.json").read_text())
    jobs = [(entry, backend) for entry in index for backend in backends_of(entry, args.backend)
            if not args.suite or entry["suite"] in args.suite]

    if any(backend == "vulkan" for _, backend in jobs):
        require_vulkan_driver()

    def run_one(job):
        entry, backend = job
        module, compile_error = compile_module(compiler, out, entry, backend)
        if module is None:
            return entry, backend, None, None, f"iree-compile failed: {compile_error}"
        device = BACKENDS[backend][1]
        theirs, their_error = iree_outcomes(python, module, device)
        ours, our_error = pactum_outcomes(pactum, module, device)
        return entry, backend, theirs or their_error, ours or our_error, None

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(run_one, jobs))

    counts = {}
    problems = []
    iree_wrong = []
    for entry, backend, theirs, ours, error in results:
        row = counts.setdefault((entry["suite"], backend), {"functions": 0, "iree_pass": 0, "agree": 0,
                                                            "pactum_pass": 0, "disagree": 0})
        functions = entry["functions"]
        row["functions"] += len(functions)
        if error:
            for name in functions:
                problems.append((f"{entry['source']}::{name} [{backend}]", error))
            row["disagree"] += len(functions)
            continue
        for name in functions:
            their = theirs.get(name, ("missing", "")) if isinstance(theirs, dict) else ("error", theirs)
            our = ours.get(name, ("missing", "")) if isinstance(ours, dict) else ("error", ours)
            row["iree_pass"] += their[0] == "pass"
            row["pactum_pass"] += our[0] == "pass"
            where = f"{entry['source']}::{name} [{backend}]"
            if entry.get("must_fail") and "pass" in (their[0], our[0]):
                problems.append((where, f"must fail, but IREE {their[0]}, pactum {our[0]}"))
                row["disagree"] += 1
            elif their[0] == "pass" and our[0] != "pass":
                problems.append((where, f"IREE pass, pactum {our[0]} ({our[1][:300]})"))
                row["disagree"] += 1
            else:
                row["agree"] += their[0] == our[0]
                if their[0] != "pass" and not entry.get("must_fail"):
                    iree_wrong.append(f"{where}: IREE {their[0]} ({their[1][:200]}), pactum {our[0]}")

    print(f"{'suite':<14} {'backend':<14} {'functions':>9} {'IREE pass':>9} {'pactum pass':>11} {'agree':>6}")
    for (suite, backend), row in sorted(counts.items()):
        print(f"{suite:<14} {backend:<14} {row['functions']:>9} {row['iree_pass']:>9} {row['pactum_pass']:>11}"
              f" {row['agree']:>6}")
    total = {k: sum(row[k] for row in counts.values()) for k in ("functions", "iree_pass", "pactum_pass", "agree")}
    print(f"{'all':<14} {'':<14} {total['functions']:>9} {total['iree_pass']:>9} {total['pactum_pass']:>11}"
          f" {total['agree']:>6}")
    for case in iree_wrong:
        print("IREE WRONG", case)
    known = known_differences()
    used = set()
    unexplained = []
    for where, problem in problems:
        causes = [(p, c) for p, c in known if matches(where, p)]
        if causes:
            used.add(causes[0][0])
            print(f"KNOWN   {where}: {causes[0][1]}")
        else:
            unexplained.append(f"{where}: {problem}")
    for problem in unexplained:
        print("DIFFERS", problem)
    stale = [p for p, _ in known if p not in used and any(
        matches(f"{e['source']}::{f} [{b}]", p) for e, b in jobs for f in e["functions"])]
    for pattern in stale:
        print(f"STALE   {pattern}: matches no difference any more; take it out of known_differences.txt")
    print(f"{len(problems) - len(unexplained)} known differences, {len(unexplained)} unexplained, "
          f"{len(stale)} stale entries")
    sys.exit(1 if unexplained or stale else 0)


if __name__ == "__main__":
    main()
