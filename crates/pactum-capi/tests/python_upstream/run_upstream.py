"""Runs the official apache-tvm-ffi test suite (fetched by scripts/fetch_peer_tests.sh from the
pinned release's sdist) on the official libtvm_ffi.so and on pactum's, and compares outcomes.

usage: run_upstream.py TESTS_DIR PACTUM_LIB KNOWN_DIFFERENCES WORK_DIR

Every test that passes on the official library must pass on pactum's, except those listed in
KNOWN_DIFFERENCES (one pytest node id per line, `#` comments), and a listed test that passes on
pactum's library fails the run too, so the list stays true. The pactum run uses a copy of the
installed package whose tvm_ffi/lib/libtvm_ffi.so is pactum's, first on PYTHONPATH; a pytest
plugin (pactum_upstream_check.py) checks in each run which libtvm_ffi.so the process mapped.
"""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

HERE = Path(__file__).resolve().parent


def outcomes(junit: Path) -> dict:
    result = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        node = f"{module}.py::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        # A test with a failing teardown is reported twice; failure wins.
        if result.get(node) != "failed":
            result[node] = outcome
    return result


def run(label: str, tests: Path, work: Path, expect_lib: Path, pythonpath) -> dict:
    junit = work / f"{label}.xml"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    paths = [str(HERE)] + ([str(pythonpath)] if pythonpath else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PACTUM_EXPECT_LIB"] = str(expect_lib)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The C++ extension tests build with ninja from this venv.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pactum_upstream_check",
        "--tb=line", "-rfE", f"--junitxml={junit}", str(tests),
    ]
    completed = subprocess.run(command, cwd=tests, env=env, capture_output=True, text=True)
    tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-40:])
    if completed.returncode < 0 or not junit.exists():
        sys.exit(f"the official suite crashed on the {label} library (rc={completed.returncode}):\n{tail}")
    print(f"--- {label} library: {tail.splitlines()[-1] if tail else ''}")
    return outcomes(junit)


def main() -> None:
    tests, pactum_lib, known_file, work = (Path(a).resolve() for a in sys.argv[1:5])
    import tvm_ffi

    package = Path(tvm_ffi.__file__).resolve().parent
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    official = run("official", tests, work, package / "lib" / "libtvm_ffi.so", None)

    scratch = work / "package"
    shutil.copytree(package, scratch / "tvm_ffi")
    for dist_info in package.parent.glob("apache_tvm_ffi-*.dist-info"):
        shutil.copytree(dist_info, scratch / dist_info.name)
    replaced = scratch / "tvm_ffi" / "lib" / "libtvm_ffi.so"
    shutil.copy(pactum_lib, replaced)
    pactum = run("pactum", tests, work, replaced, scratch)

    known = {}
    for line in known_file.read_text().splitlines():
        node, _, reason = line.partition("#")
        if node.strip():
            known[node.strip()] = reason.strip()
    passed_official = [node for node, outcome in official.items() if outcome == "passed"]
    if len(passed_official) < 1000:
        sys.exit(f"the official suite did not run: {len(passed_official)} tests passed on the official library")
    regressions = [n for n in passed_official if pactum.get(n) != "passed" and n not in known]
    stale = [n for n in known if pactum.get(n) == "passed"]
    unknown = [n for n in known if n not in official]
    print(
        f"official: {len(passed_official)} passed of {len(official)}; "
        f"pactum: {sum(o == 'passed' for o in pactum.values())} passed of {len(pactum)}; "
        f"known differences: {len(known)}"
    )
    for node, reason in known.items():
        print(f"  differs (known): {node}  # {reason}")
    problems = [f"fails on pactum only: {n} ({pactum.get(n, 'not run')})" for n in regressions]
    problems += [f"listed as a known difference but passes on pactum: {n}" for n in stale]
    problems += [f"listed as a known difference but not in the suite: {n}" for n in unknown]
    if problems:
        sys.exit("\n".join(problems))


if __name__ == "__main__":
    main()
