"""Per-call instructions of a bench/tvm_clients/callgrind_driver.py run, by object and by
function: (dump 2 - dump 1) / N of callgrind's self costs (calls' inclusive lines skipped).
When the dumps hold more events than instructions (callgrind's `--cache-sim=yes
--branch-sim=yes`), a table of every event per call by object follows: simulated cache misses
(I1mr, ILmr, D1mr, ...) and branches and their mispredictions (Bc/Bcm conditional, Bi/Bim
indirect).

usage: callgrind_per_call.py DUMP1 DUMP2 N [TOP_FUNCTIONS]
"""
import collections
import os
import re
import sys


def self_costs(path):
    names = {"ob": {}, "fn": {}}
    by_object, by_function = collections.Counter(), collections.Counter()
    events_by_object = collections.defaultdict(collections.Counter)
    events = ["Ir"]
    obj = fn = None
    after_calls = False

    def name(kind, text):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", text)
        if not m:
            return text
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind][m.group(1)]

    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("ob="):
            obj = os.path.basename(name("ob", line[3:]))
        elif line.startswith("fn="):
            fn = name("fn", line[3:])
        elif line.startswith("cob="):
            name("ob", line[4:])
        elif line.startswith("cfn="):
            name("fn", line[4:])
        elif line.startswith("calls="):
            after_calls = True
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            if after_calls:
                after_calls = False
                continue
            parts = line.split()
            if len(parts) >= 2:
                by_object[obj] += int(parts[1])
                by_function[(obj, fn)] += int(parts[1])
                # Events a line does not list are zero (callgrind drops trailing zeros).
                for event, value in zip(events, parts[1:]):
                    events_by_object[obj][event] += int(value)
    return by_object, by_function, events, events_by_object


def main():
    first, second, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    (obj1, fn1, events, ev1), (obj2, fn2, _, ev2) = self_costs(first), self_costs(second)
    print(f"per call: {(sum(obj2.values()) - sum(obj1.values())) / n:.0f} instructions")
    for key in sorted(set(obj1) | set(obj2), key=lambda k: obj1[k] - obj2[k]):
        if abs(obj2[key] - obj1[key]) >= n:
            print(f"  {(obj2[key] - obj1[key]) / n:9.0f}  {key}")
    print("functions of libtvm_ffi.so and libc:")
    rows = [(k, (fn2[k] - fn1[k]) / n) for k in set(fn1) | set(fn2)
            if k[0] and ("libtvm_ffi" in k[0] or k[0].startswith("libc."))]
    for (obj, fn), cost in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"  {cost:9.1f}  {obj}  {fn[:120]}")
    if len(events) > 1:
        print_events(events, ev1, ev2, n)


def print_events(events, ev1, ev2, n):
    """Every event per call, by object (objects with at least one instruction per call)."""
    print("events per call by object:")
    print(f"  {'object':<28}" + "".join(f"{e:>10}" for e in events))
    total = {e: 0.0 for e in events}
    for key in sorted(set(ev1) | set(ev2), key=lambda k: ev1[k]["Ir"] - ev2[k]["Ir"]):
        row = {e: (ev2[key][e] - ev1[key][e]) / n for e in events}
        for e in events:
            total[e] += row[e]
        if row["Ir"] >= 1:
            print(f"  {str(key)[:28]:<28}" + "".join(f"{row[e]:10.1f}" for e in events))
    print(f"  {'total':<28}" + "".join(f"{total[e]:10.1f}" for e in events))


if __name__ == "__main__":
    main()
