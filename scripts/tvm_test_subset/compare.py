"""Compares the outcomes of the same tests on two libraries (scripts/tvm_test_subset.sh: apache-tvm's
tests on the official libtvm_ffi.so and on pactum's, each an outcome file written by
pactum_outcomes.py): prints each library's counts and every test whose outcome differs, with
each side's first message line. A test that started and never finished killed its process: it
counts as `crashed`. Exit status 1 when any outcome differs or a library ran no test.

usage: compare.py OFFICIAL_OUTCOMES PACTUM_OUTCOMES
"""

import sys

OUTCOMES = ("passed", "failed", "skipped", "errors", "crashed")


def outcomes(path):
    """Maps each node id to (outcome, first message line)."""
    found = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            node_id, outcome, message = line.rstrip("\n").split("\t", 2)
            if outcome == "started":
                found.setdefault(node_id, ("crashed", "the process died in this test"))
            else:
                found[node_id] = (outcome, message)
    return found


def main():
    reports = {"official": outcomes(sys.argv[1]), "pactum": outcomes(sys.argv[2])}
    for name, report in reports.items():
        counts = {o: sum(1 for v, _ in report.values() if v == o) for o in OUTCOMES}
        print(f"{name}: {len(report)} tests: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES))
    official, pactum = reports["official"], reports["pactum"]
    absent = ("absent", "")
    differ = sorted(t for t in official.keys() | pactum.keys()
                    if official.get(t, absent)[0] != pactum.get(t, absent)[0])
    print(f"outcomes that differ: {len(differ)}")
    for node_id in differ:
        (o_outcome, o_message), (p_outcome, p_message) = official.get(node_id, absent), pactum.get(node_id, absent)
        print(f"  {node_id}: official {o_outcome}, pactum {p_outcome}")
        if o_message:
            print(f"    official: {o_message[:200]}")
        if p_message:
            print(f"    pactum:   {p_message[:200]}")
    return 1 if differ or not official or not pactum else 0


if __name__ == "__main__":
    sys.exit(main())
