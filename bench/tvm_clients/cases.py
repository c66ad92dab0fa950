"""The TVM-client benchmark's cases, each built once (compiled for llvm) and returned as a
callable that makes one call: shared by tvm_bench.py (wall time) and callgrind_driver.py
(instruction counts), so both measure the same calls.

- `te_call`: a TE vector add of 4 floats called from Python (the packed-call path: Python
  arguments through tvm_ffi, the compiled function, the result);
- `relax_vm`: a Relax model of two Linear(64, 64) + ReLU layers (tvm.relax.frontend.nn) run on
  the Relax VM (VM instructions, builtins and packed calls inside the runtime);
- `global_call`: a global function of the library that does little (`ffi.String` on a short
  str), called from Python: the FFI's own call overhead.
"""

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, te
from tvm.relax.frontend import nn

DEV = tvm.cpu()


def te_call():
    a = te.placeholder((4,), name="A")
    b = te.placeholder((4,), name="B")
    c = te.compute((4,), lambda i: a[i] + b[i], name="C")
    mod = tvm.compile(te.create_prim_func([a, b, c]), target="llvm")
    x = tvm.runtime.tensor(np.ones(4, "float32"), DEV)
    y = tvm.runtime.tensor(np.ones(4, "float32"), DEV)
    out = tvm.runtime.tensor(np.zeros(4, "float32"), DEV)
    return lambda: mod(x, y, out)


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
    return lambda: forward(*args)


def global_call():
    f = tvm_ffi.get_global_func("ffi.String")
    return lambda: f("pactum")


# Each case's builder and how many calls one timed batch makes.
CASES = {"te_call": (te_call, 20000), "relax_vm": (relax_vm, 5000), "global_call": (global_call, 50000)}
