"""Python -> IREE export: `pactum.iree` against `iree.runtime`'s function invoker on the same
.vmfb (iree-base-runtime, driver local-sync), same arguments, timed alternately in one process.

Columns: pactum.iree (results as NumPy arrays, dicts, lists, Python scalars); iree.runtime
(tensor results left as its lazy DeviceArray); iree.runtime with tensor results read to NumPy
(`.to_host()`, what pactum returns); the ratio pactum / iree.runtime (median of paired ratios,
<= 1.0 means pactum is as fast or faster); and the raw tvm_ffi Function of the same export
(`tvm_ffi.load_module`, no Python-side conversions), pactum's floor.

usage: python bench/python_iree_bench.py [NUMBER=20000] [REPEAT=11]
"""
import pathlib
import statistics
import sys
import timeit

import numpy as np
import tvm_ffi
import iree.runtime as ireert

import pactum

VMFB = pathlib.Path(__file__).resolve().parents[1] / "crates/pactum-iree/tests/fixtures/vmfb"


def to_host(value):
    """iree.runtime's results with every DeviceArray read into NumPy."""
    if isinstance(value, ireert.DeviceArray):
        return value.to_host()
    if isinstance(value, dict):
        return {k: to_host(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_host(v) for v in value)
    return value


def same(a, b):
    a, b = to_host(a), to_host(b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
CASES = [
    # (label, file, export, args, kwargs)
    ("add(i32, i32) -> i32 (multi_export_llvm_cpu)", "multi_export_llvm_cpu.vmfb", "add", (3, 4), {}),
    ("frob_or_double(i32) -> i32 (vm_direct)", "vm_direct.vmfb", "frob_or_double", (21,), {}),
    ("dict_in({bias: f32[4], n}, scale=f32[4]) -> {out, n_squared} (abi_structs_vmvx)",
     "abi_structs_vmvx.vmfb", "dict_in", ({"bias": f32(1, 2, 3, 4), "n": 3},),
     {"scale": f32(0.5, -2, 1e-3, 3.25)}),
    ("dict_summary(f32[3], repeat=3) -> {total, count, repeated} (tensors_llvm_cpu)",
     "tensors_llvm_cpu.vmfb", "dict_summary", (f32(1, 2, 4),), {"repeat": 3}),
]


def main() -> None:
    number = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    print(f"Python -> IREE export, {number} calls x {repeat} repetitions (alternating); "
          "us per call, medians")
    print()
    print("| call | pactum.iree | iree.runtime | iree.runtime + to_host | pactum / iree.runtime "
          "| pactum / iree.runtime + to_host | raw tvm_ffi Function |")
    print("|---|---|---|---|---|---|---|")
    for label, file, name, args, kwargs in CASES:
        path = str(VMFB / file)
        ours = pactum.iree.load(path)[name]
        theirs = getattr(ireert.load_vm_flatbuffer_file(path, driver="local-sync"), name)
        raw = tvm_ffi.load_module(path)[name]
        raw_args = list(args)
        if kwargs:
            raw_args += [tvm_ffi.core.KWARGS] + [x for kv in kwargs.items() for x in kv]
        assert same(ours(*args, **kwargs), theirs(*args, **kwargs)), label
        env = {"ours": ours, "theirs": theirs, "raw": raw, "args": args, "kwargs": kwargs,
               "raw_args": raw_args, "to_host": to_host}
        statements = ["ours(*args, **kwargs)", "theirs(*args, **kwargs)",
                      "to_host(theirs(*args, **kwargs))", "raw(*raw_args)"]
        times = {s: [] for s in statements}
        for i in range(repeat):
            for s in statements if i % 2 == 0 else reversed(statements):
                times[s].append(timeit.timeit(s, globals=env, number=number) / number * 1e6)
        o, t, th, r = (times[s] for s in statements)
        ratio = statistics.median(a / b for a, b in zip(o, t))
        ratio_host = statistics.median(a / b for a, b in zip(o, th))
        print(f"| {label} | {statistics.median(o):.2f} | {statistics.median(t):.2f} | "
              f"{statistics.median(th):.2f} | {ratio:.2f} | {ratio_host:.2f} | "
              f"{statistics.median(r):.2f} |")


if __name__ == "__main__":
    main()
