#!/usr/bin/env python3
"""Chooses the slice the README test command runs, from a whole-corpus run's outcomes.

    corpus.py --json outcomes.json          # the whole corpus
    select_slice.py outcomes.json           # rewrites slice.txt and known_differences.txt

The choice is deterministic for given outcomes (names sorted, first ones taken):
- every operator (op family): its first case IREE gets right on llvm-cpu, or its first case
  when IREE gets none right (so every operator IREE cannot run is still imported and compiled);
  and that same case on vmvx where it is compiled for vmvx and IREE gets it right; function-expanded
  cases (`*_expanded`) are bodies of operators chosen themselves, and come in through classes;
- every class of outcome, per backend: its first two cases (so every failure class is run);
- MEMCHECK: a few cases run again under valgrind.
known_differences.txt gets every slice case pactum gets wrong, with its cause; the comments on
each cause are kept from the existing file.
"""

import collections
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
MEMCHECK = [("test_add", "llvm-cpu"), ("test_conv_with_strides_padding", "llvm-cpu"),
            ("test_gridsample_bilinear", "llvm-cpu"), ("test_gridsample_zeros_padding", "llvm-cpu"),
            ("test_matmul_2d", "vmvx")]
PER_CLASS = 2


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: select_slice.py OUTCOMES.json (from corpus.py --json)")
    outcomes = [r for r in json.loads(pathlib.Path(sys.argv[1]).read_text()) if not r["memcheck"]]
    by_key = {(r["case"], r["backend"]): r for r in outcomes}
    chosen = set()
    by_op = collections.defaultdict(list)
    for r in sorted(outcomes, key=lambda r: r["case"]):
        by_op[r["op"]].append(r)
    for op, rs in sorted(by_op.items()):
        if op.startswith("expanded:"):
            continue  # function bodies of primitive operators, which are chosen themselves
        llvm = [r for r in rs if r["backend"] == "llvm-cpu"]
        right = [r for r in llvm if r["outcome"] in ("both-right", "pactum-wrong")]
        first = (right or llvm)[0]["case"]
        chosen.add(first + " llvm-cpu")
        vmvx = [r for r in rs if r["backend"] == "vmvx"
                and r["outcome"] in ("both-right", "pactum-wrong")]
        if any(r["case"] == first for r in vmvx):
            chosen.add(first + " vmvx")
    by_class = collections.defaultdict(list)
    for r in sorted(outcomes, key=lambda r: r["case"]):
        by_class[(r["backend"], r["outcome"], r["class"])].append(r)
    for rs in by_class.values():
        for r in rs[:PER_CLASS]:
            chosen.add(f"{r['case']} {r['backend']}")
    for case, backend in MEMCHECK:
        if (case, backend) not in by_key:
            sys.exit(f"memcheck case {case} {backend} is not in the outcomes")
        chosen.add(f"{case} {backend}")

    lines = ["# The ONNX conformance slice run by scripts/test.sh: `CASE BACKEND [memcheck]`.",
             "# Chosen by select_slice.py from a whole-corpus run (see its docstring); "
             "memcheck: also run",
             "# pactum under valgrind. Edit by rerunning select_slice.py, or by hand.", ""]
    for entry in sorted(chosen):
        case, backend = entry.split()
        lines.append(entry + (" memcheck" if (case, backend) in MEMCHECK else ""))
    (HERE / "slice.txt").write_text("\n".join(lines) + "\n")

    known_file = HERE / "known_differences.txt"
    header, cause_notes = [], {}
    if known_file.exists():
        for line in known_file.read_text().splitlines():
            if line.startswith("# cause "):
                cause, _, note = line[len("# cause "):].partition(":")
                cause_notes[cause.strip()] = note.strip()
    wrong = sorted((r for r in outcomes if r["outcome"] == "pactum-wrong"
                    and f"{r['case']} {r['backend']}" in chosen),
                   key=lambda r: (r["class"], r["case"], r["backend"]))
    header = ["# Slice cases IREE's runtime gets right and pactum does not: `CASE BACKEND CAUSE`.",
              "# corpus.py --slice fails on any other difference, and on a listed case that no "
              "longer fails",
              "# with its cause (a fix must remove its lines). Causes (from pactum's error text, "
              "corpus.py's", "# PACTUM_CAUSES):"]
    for cause in sorted({r["class"] for r in wrong} | set(cause_notes)):
        header.append(f"# cause {cause}: {cause_notes.get(cause, '(describe)')}")
    body = [f"{r['case']} {r['backend']} {r['class']}" for r in wrong]
    known_file.write_text("\n".join(header + [""] + body) + "\n")
    counts = collections.Counter(e.split()[1] for e in chosen)
    print(f"slice: {len(chosen)} case runs ({dict(counts)}), {len(body)} known differences")


if __name__ == "__main__":
    main()
