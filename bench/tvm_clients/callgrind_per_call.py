"""Per-call instructions of a bench/tvm_clients/callgrind_driver.py run, by object and by
function: (dump 2 - dump 1) / N of callgrind's self costs (calls' inclusive lines skipped).

usage: callgrind_per_call.py DUMP1 DUMP2 N [TOP_FUNCTIONS]
"""
import collections
import os
import re
import sys


def self_costs(path):
    names = {"ob": {}, "fn": {}}
    by_object, by_function = collections.Counter(), collections.Counter()
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
        if line.startswith("ob="):
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
    return by_object, by_function


def main():
    first, second, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    (obj1, fn1), (obj2, fn2) = self_costs(first), self_costs(second)
    print(f"per call: {(sum(obj2.values()) - sum(obj1.values())) / n:.0f} instructions")
    for key in sorted(set(obj1) | set(obj2), key=lambda k: obj1[k] - obj2[k]):
        if abs(obj2[key] - obj1[key]) >= n:
            print(f"  {(obj2[key] - obj1[key]) / n:9.0f}  {key}")
    print("functions of libtvm_ffi.so and libc:")
    rows = [(k, (fn2[k] - fn1[k]) / n) for k in set(fn1) | set(fn2)
            if k[0] and ("libtvm_ffi" in k[0] or k[0].startswith("libc."))]
    for (obj, fn), cost in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"  {cost:9.1f}  {obj}  {fn[:120]}")


if __name__ == "__main__":
    main()
