"""Python -> MLIR-compiled function: `pactum.mlir` (a function of `pactum.mlir.load(path)`,
called with NumPy arrays) against Python `ctypes` on the same shared library,
with memref descriptors filled from the NumPy arrays on every call (one ctypes Structure class
per rank, defined once: the fast way to write it; MLIR's own `np_to_memref` is ~30x slower and
leaks, mlir_facts.md section 7). A third column times ctypes with descriptors built once, a
floor no real caller with fresh arrays gets. Timed alternately in one process.

usage: python bench/mlir_python_bench.py KERNELS.so LIBMEMREF_CORE.so [NUMBER] [REPEAT]
"""
import ctypes
import statistics
import sys
import timeit

import numpy as np
import tvm_ffi

import pactum


class MemRef1D(ctypes.Structure):
    _fields_ = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
        ("sizes", ctypes.c_int64 * 1),
        ("strides", ctypes.c_int64 * 1),
    ]


class MixedResults(ctypes.Structure):
    _fields_ = [
        ("d", ctypes.c_double),
        ("b", ctypes.c_int64),
        ("c", ctypes.c_float),
        ("a", ctypes.c_int32),
        ("e", ctypes.c_int64),
    ]


def descriptor(array):
    """What a ctypes caller writes per call: pointers, offset, extents and strides from NumPy."""
    d = MemRef1D()
    d.allocated = d.aligned = array.ctypes.data
    d.offset = 0
    d.sizes[0] = array.shape[0]
    d.strides[0] = array.strides[0] // array.itemsize
    return d


def main() -> None:
    kernels_path, library_path = sys.argv[1], sys.argv[2]
    number = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 11
    kernels = tvm_ffi.load_module(kernels_path)
    mlir_library = pactum.mlir.load(library_path)
    add_one = mlir_library.function(
        "func.func @add_one(%in: memref<?xf32>, %out: memref<?xf32>)")
    mixed = mlir_library.function(
        "func.func @mixed(%a: i32, %b: i64, %c: f32, %d: f64, %e: index, %m: memref<?xf64>) "
        "-> (f64, i64, f32, i32, index)")

    library = ctypes.CDLL(library_path)
    c_add_one = library._mlir_ciface_add_one
    c_add_one.argtypes = [ctypes.POINTER(MemRef1D), ctypes.POINTER(MemRef1D)]
    c_add_one.restype = None
    c_mixed = library._mlir_ciface_mixed
    c_mixed.argtypes = [ctypes.POINTER(MixedResults), ctypes.c_int32, ctypes.c_int64,
                        ctypes.c_float, ctypes.c_double, ctypes.c_int64, ctypes.POINTER(MemRef1D)]
    c_mixed.restype = None

    x = np.array([1, 2, 3, 4], dtype=np.float32)
    y = np.zeros(4, dtype=np.float32)
    m = np.array([0.5, 9.0, 9.0])

    def ctypes_add_one():
        c_add_one(descriptor(x), descriptor(y))

    def ctypes_mixed():
        out = MixedResults()
        c_mixed(out, 41, 21, 1.5, 2.25, 100, descriptor(m))
        return out.d, out.b, out.c, out.a, out.e

    dx, dy, dm = descriptor(x), descriptor(y), descriptor(m)
    out = MixedResults()

    # Both paths compute the same thing.
    add_one(x, y)
    assert list(y) == [2, 3, 4, 5]
    y[:] = 0
    ctypes_add_one()
    assert list(y) == [2, 3, 4, 5]
    assert mixed(41, 21, 1.5, 2.25, 100, m) == ctypes_mixed() == (2.75, 42, 4.5, 42, 103)

    # tvm_ffi's own cost of taking two NumPy arrays (it imports each through __dlpack__):
    # the kernels library's Rust add_one, same arguments, same work.
    rust_add_one = kernels.add_one
    # Arrays converted to tvm_ffi tensors once, the counterpart of prebuilt descriptors.
    tx, ty, tm = tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(y), tvm_ffi.from_dlpack(m)
    env = {"tx": tx, "ty": ty, "tm": tm, "rust_add_one": rust_add_one, "add_one": add_one, "mixed": mixed, "x": x, "y": y, "m": m,
           "ctypes_add_one": ctypes_add_one, "ctypes_mixed": ctypes_mixed,
           "c_add_one": c_add_one, "c_mixed": c_mixed, "dx": dx, "dy": dy, "dm": dm, "out": out}
    cases = {
        "add_one(x, y), 4 x f32": ("add_one(x, y)", "ctypes_add_one()", "c_add_one(dx, dy)",
                                   "add_one(tx, ty)"),
        "mixed(5 scalars, m) -> 5 scalars": (
            "mixed(41, 21, 1.5, 2.25, 100, m)", "ctypes_mixed()",
            "c_mixed(out, 41, 21, 1.5, 2.25, 100, dm)", "mixed(41, 21, 1.5, 2.25, 100, tm)"),
    }
    print(f"Python -> MLIR function, {number} calls x {repeat} repetitions (alternating); "
          "ns per call, medians")
    print()
    print("| call | pactum.mlir (NumPy arrays) | ctypes, descriptors from NumPy per call | "
          "ctypes / pactum (median of paired ratios) | ctypes, descriptors prebuilt | "
          "pactum.mlir, tvm_ffi tensors made once | prebuilt ctypes / pactum |")
    print("|---|---|---|---|---|---|---|")
    for label, (ours, theirs, floor, ours_prebuilt) in cases.items():
        statements = [ours, theirs, floor, ours_prebuilt]
        times = {statement: [] for statement in statements}
        for i in range(repeat):
            for statement in statements if i % 2 == 0 else reversed(statements):
                times[statement].append(
                    timeit.timeit(statement, globals=env, number=number) / number * 1e9)
        ratio = statistics.median(t / o for o, t in zip(times[ours], times[theirs]))
        prebuilt_ratio = statistics.median(
            t / o for o, t in zip(times[ours_prebuilt], times[floor]))
        print(f"| {label} | {statistics.median(times[ours]):.0f} | "
              f"{statistics.median(times[theirs]):.0f} | {ratio:.1f} | "
              f"{statistics.median(times[floor]):.0f} | "
              f"{statistics.median(times[ours_prebuilt]):.0f} | {prebuilt_ratio:.2f} |")
    reference = [timeit.timeit("rust_add_one(x, y)", globals=env, number=number) / number * 1e9
                 for _ in range(repeat)]
    print()
    print(f"Reference: a pactum-exported Rust add_one(x, y) taking the same two NumPy arrays "
          f"through tvm_ffi: {statistics.median(reference):.0f} ns (tvm_ffi imports each array "
          f"through __dlpack__).")


if __name__ == "__main__":
    main()
