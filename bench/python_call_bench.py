"""Python -> packed call overhead: the pactum kernels library (examples/kernels) against the same
functions written in C against the official headers (bench/c/bench_module.c), both loaded with
the official tvm_ffi runtime, timed alternately in one process.

usage: python bench/python_call_bench.py KERNELS.so C_MODULE.so [NUMBER] [REPEAT]
Prints a Markdown table of the median ns per call and the median of the per-repetition ratios.
"""
import statistics
import sys
import timeit

import numpy as np
import tvm_ffi


def main() -> None:
    kernels_path, c_path = sys.argv[1], sys.argv[2]
    number = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    kernels = tvm_ffi.load_module(kernels_path)
    c_module = tvm_ffi.load_module(c_path)
    array = np.zeros(16, dtype="float32")
    tensor = tvm_ffi.from_dlpack(array)
    # Statements, not lambdas: the timed loop runs only the call itself.
    cases = {
        "nop()": "f()",
        "nop_i3(1, 2, 3)": "f(1, 2, 3)",
        "nop_tensor(numpy array)": "f(array)",
        "nop_tensor(tvm_ffi.Tensor)": "f(tensor)",
    }
    names = {"nop()": "nop", "nop_i3(1, 2, 3)": "nop_i3", "nop_tensor(numpy array)": "nop_tensor",
             "nop_tensor(tvm_ffi.Tensor)": "nop_tensor"}
    print(f"Python -> packed call, {number} calls x {repeat} repetitions (alternating modules); "
          "ns per call")
    print()
    print("| call | C module (official headers) | pactum-exported | pactum / C (median of paired ratios) |")
    print("|---|---|---|---|")
    for label, statement in cases.items():
        c_env = {"f": c_module[names[label]], "array": array, "tensor": tensor}
        rust_env = {"f": kernels[names[label]], "array": array, "tensor": tensor}
        c_times, rust_times = [], []
        for i in range(repeat):
            # Each repetition times both modules back to back, taking turns at going first, so
            # drift in machine load hits both alike; the ratio is the median of these pairs.
            pair = [(c_env, c_times), (rust_env, rust_times)]
            for env, times in pair if i % 2 == 0 else reversed(pair):
                times.append(timeit.timeit(statement, globals=env, number=number) / number * 1e9)
        c_ns, rust_ns = statistics.median(c_times), statistics.median(rust_times)
        ratio = statistics.median(r / c for r, c in zip(rust_times, c_times))
        print(f"| {label} | {c_ns:.1f} | {rust_ns:.1f} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
