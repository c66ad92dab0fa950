"""One process of the TVM-client benchmark: apache-tvm 0.27 calls timed on whichever
libtvm_ffi.so the installed tvm_ffi package loads (bench/tvm_clients/run.py starts it on the
official library and on pactum's, alternated).

The cases (cases.py) are each built once, then called in batches; prints one JSON object
mapping each case to the median over batches of the mean time per call, in microseconds.
Exits 2 when the library mapped is not PACTUM_EXPECT_LIB (when set).
"""

import json
import os
import statistics
import sys
import time

from cases import CASES


def mapped_library():
    with open("/proc/self/maps") as maps:
        return sorted({l.split()[-1] for l in maps if l.rstrip().endswith("libtvm_ffi.so")})


expected = os.environ.get("PACTUM_EXPECT_LIB")
if expected and mapped_library() != [os.path.realpath(expected)]:
    print(f"wrong library mapped: {mapped_library()}, expected {expected}", file=sys.stderr)
    sys.exit(2)

BATCHES = 7


def per_call_us(call, calls):
    call()  # warm: first-call caches
    means = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        means.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(means)


print(json.dumps({name: per_call_us(build(), calls) for name, (build, calls) in CASES.items()}))
