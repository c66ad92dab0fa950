"""pytest plugin of scripts/tvm_test_subset.sh: appends each test's outcome to the file named by
$PACTUM_OUTCOMES as it is known (one line: node id, tab, outcome, tab, first message line), and a
`started` line before each test, so that a test that kills the process (a segmentation fault)
is known after the fact. Tests already in the file are deselected, so a rerun after a crash
continues where the crash left off; `python pactum_outcomes.py --files-not-done OUTCOMES` prints
the test files that still have tests not done, for that rerun.

Outcomes: passed, failed, skipped, errors (setup or teardown failed, or the file failed to
collect); an expected failure counts as skipped and an unexpected pass as passed, as pytest's
JUnit report counts them.
"""

import os
import sys

import pytest


def _path():
    return os.environ["PACTUM_OUTCOMES"]


def _write(node_id, outcome, message=""):
    first = (message or "").strip().splitlines()
    first = first[0][:300] if first else ""
    with open(_path(), "a", encoding="utf-8") as out:
        out.write(f"{node_id}\t{outcome}\t{first}\n")
        out.flush()


def _known():
    known = set()
    if os.path.exists(_path()):
        with open(_path(), encoding="utf-8") as lines:
            for line in lines:
                node_id, outcome, _ = line.rstrip("\n").split("\t", 2)
                if outcome != "started":
                    known.add(node_id)
    return known


def pytest_collection_modifyitems(config, items):
    # The first run's collection names every test, so that a rerun after a crash can be limited
    # to the files that still have tests not done (`--files-not-done`).
    if not os.path.exists(_path() + ".collected"):
        with open(_path() + ".collected", "w", encoding="utf-8") as out:
            out.writelines(item.nodeid + "\n" for item in items)
    known = _known()
    done = [item for item in items if item.nodeid in known]
    if done:
        items[:] = [item for item in items if item.nodeid not in known]
        config.hook.pytest_deselected(items=done)


def pytest_collectreport(report):
    if report.failed and report.nodeid not in _known():
        _write(report.nodeid, "errors", str(report.longrepr).strip().splitlines()[-1:][0]
               if str(report.longrepr).strip() else "")


def pytest_runtest_logstart(nodeid, location):
    _write(nodeid, "started")


def _message(report):
    if hasattr(report, "wasxfail"):
        return report.wasxfail
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        return report.longrepr[2]
    text = str(report.longrepr or "").strip().splitlines()
    errors = [line for line in text if line.startswith("E ")]
    return (errors or text or [""])[0] if report.when != "call" or report.failed else ""


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    state = _state.setdefault(report.nodeid, {})
    if report.when == "setup":
        if report.failed:
            state["outcome"] = ("errors", _message(report))
        elif report.skipped:
            state["outcome"] = ("skipped", _message(report))
    elif report.when == "call":
        if hasattr(report, "wasxfail"):
            state["outcome"] = ("passed" if report.passed else "skipped", _message(report))
        elif report.failed:
            state["outcome"] = ("failed", _message(report))
        elif report.skipped:
            state["outcome"] = ("skipped", _message(report))
        else:
            state["outcome"] = ("passed", "")
    elif report.when == "teardown":
        outcome = state.get("outcome", ("passed", ""))
        if report.failed and outcome[0] in ("passed", "skipped"):
            outcome = ("errors", _message(report))
        _write(report.nodeid, *outcome)
        del _state[report.nodeid]


_state = {}


def _files_not_done(outcomes_path):
    """The test files, in collection order, with a collected test that has no outcome yet."""
    os.environ["PACTUM_OUTCOMES"] = outcomes_path
    known = _known()
    files = []
    with open(outcomes_path + ".collected", encoding="utf-8") as collected:
        for line in collected:
            node_id = line.rstrip("\n")
            file = node_id.split("::", 1)[0]
            if node_id not in known and file not in files:
                files.append(file)
    return files


if __name__ == "__main__":
    if sys.argv[1:2] != ["--files-not-done"] or len(sys.argv) != 3:
        sys.exit("usage: pactum_outcomes.py --files-not-done OUTCOMES")
    print("\n".join(_files_not_done(sys.argv[2])))
