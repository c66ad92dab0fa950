"""One process of the TVM-client benchmark: apache-tvm 0.27 calls timed on whichever
libtvm_ffi.so the installed tvm_ffi package loads (bench/tvm_clients/run.py starts it on the
official library and on pactum's, alternated).

Cases, each compiled once for llvm, then called in batches; prints one JSON object mapping each
case to the median over batches of the mean time per call, in microseconds:
- `te_call`: a TE vector add of 4 floats called from Python (the packed-call path: Python
  arguments through tvm_ffi, the compiled function, the result);
- `relax_vm`: a Relax model of two Linear(64, 64) + ReLU layers (tvm.relax.frontend.nn) run on
  the Relax VM (VM instructions, builtins and packed calls inside the runtime);
- `global_call`: a global function of the library that does little (`ffi.String` on a short
  str), called from Python: the FFI's own call overhead.
Exits 2 when the library mapped is not PACTUM_EXPECT_LIB (when set).
"""

import json
import os
import statistics
import sys
import time

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, te
from tvm.relax.frontend import nn


def mapped_library():
    with open("/proc/self/maps") as maps:
        return sorted({l.split()[-1] for l in maps if l.rstrip().endswith("libtvm_ffi.so")})


expected = os.environ.get("PACTUM_EXPECT_LIB")
if expected and mapped_library() != [os.path.realpath(expected)]:
    print(f"wrong library mapped: {mapped_library()}, expected {expected}", file=sys.stderr)
    sys.exit(2)

DEV = tvm.cpu()
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


def te_call():
    a = te.placeholder((4,), name="A")
    b = te.placeholder((4,), name="B")
    c = te.compute((4,), lambda i: a[i] + b[i], name="C")
    mod = tvm.compile(te.create_prim_func([a, b, c]), target="llvm")
    x = tvm.runtime.tensor(np.ones(4, "float32"), DEV)
    y = tvm.runtime.tensor(np.ones(4, "float32"), DEV)
    out = tvm.runtime.tensor(np.zeros(4, "float32"), DEV)
    return per_call_us(lambda: mod(x, y, out), 20000)


def relax_vm():
    class Model(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(64, 64)
            self.fc2 = nn.Linear(64, 64)

        def forward(self, x):
            return nn.relu(self.fc2(nn.relu(self.fc1(x))))

    mod, params = Model().export_tvm({"forward": {"x": nn.spec.Tensor((1, 64), "float32")}})
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), DEV)
    rng = np.random.default_rng(0)
    args = [tvm.runtime.tensor(rng.standard_normal((1, 64)).astype("float32"), DEV)]
    for _, spec in params:
        args.append(tvm.runtime.tensor(rng.standard_normal(spec.shape).astype("float32"), DEV))
    forward = vm["forward"]
    return per_call_us(lambda: forward(*args), 5000)


def global_call():
    f = tvm_ffi.get_global_func("ffi.String")
    return per_call_us(lambda: f("pactum"), 50000)


print(json.dumps({"te_call": te_call(), "relax_vm": relax_vm(), "global_call": global_call()}))
