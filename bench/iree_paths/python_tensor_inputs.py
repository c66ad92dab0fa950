#!/usr/bin/env python3
"""In-process calls from Python with NumPy arguments: `pactum.iree.load(...)` against
`iree.runtime` on the same arrays, alternated, medians of paired ratios.

    python bench/iree_paths/python_tensor_inputs.py MLP_ARGS.vmfb [local-sync|local-task]

MLP_ARGS.vmfb is bench/iree_paths/mlp_args.mlir compiled for llvm-cpu. The weights are given
twice: as NumPy allocates them (16 bytes past a 64-byte boundary on glibc: pactum copies them,
as IREE's import would refuse them) and 64-byte aligned (pactum passes them in place).
iree.runtime copies every array either way. Each sample is the mean of a batch of calls;
batches of the runtimes alternate.
"""
import statistics
import sys
import time

import numpy as np
import iree.runtime as ireert
import pactum


def aligned(array):
    room = np.empty(array.nbytes + 64, np.uint8)
    start = -room.ctypes.data % 64
    out = room[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def batch_time(call, args, count):
    start = time.perf_counter()
    for _ in range(count):
        call(*args)
    return (time.perf_counter() - start) / count


def main():
    path = sys.argv[1]
    device = sys.argv[2] if len(sys.argv) > 2 else "local-sync"
    r = np.random.default_rng(0)
    shapes = [(1, 784), (784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
    plain = [(r.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
    in_place = [aligned(a) for a in plain]
    ours = pactum.iree.load(path, device=device)
    config = ireert.Config(device)
    theirs = ireert.load_vm_modules(ireert.VmModule.mmap(config.vm_instance, path), config=config)[-1]
    expected = np.asarray(theirs.mlp(*plain))
    np.testing.assert_array_equal(ours.mlp(*plain), expected)
    np.testing.assert_array_equal(ours.mlp(*in_place), expected)
    runs = {
        "iree.runtime": (theirs.mlp, plain),
        "pactum numpy-allocated": (ours.mlp, plain),
        "pactum 64-byte aligned": (ours.mlp, in_place),
    }
    count = 200
    samples = {name: [] for name in runs}
    for name, (call, args) in runs.items():
        batch_time(call, args, count)
    for _ in range(15):
        for name, (call, args) in runs.items():
            samples[name].append(batch_time(call, args, count))
    reference = samples["iree.runtime"]
    for name, times in samples.items():
        ratios = sorted(t / r for t, r in zip(times, reference))
        print(
            f"{device} {name:>24}: median {statistics.median(times) * 1e3:.3f} ms/call,"
            f" ratio to iree.runtime {statistics.median(ratios):.3f}"
            f" (p25 {ratios[len(ratios) // 4]:.3f}, p75 {ratios[3 * len(ratios) // 4]:.3f})"
        )


if __name__ == "__main__":
    main()
