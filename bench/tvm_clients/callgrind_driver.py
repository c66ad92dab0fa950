"""One case of bench/tvm_clients/tvm_bench.py under callgrind (bench/count_tvm_clients_instructions.sh):
the case is built and warmed with instrumentation off, then N calls are counted (dump 1) and
2N more (dump 2); (dump 2 - dump 1) / N is the cost of one call, with whatever the loop does
once (the dumps' own calls) cancelled out.

usage: callgrind_driver.py CASE N CONTROL_LIB   (valgrind --tool=callgrind --instr-atstart=no)
"""
import ctypes, sys
import numpy as np
import tvm, tvm_ffi
from tvm import relax, te
from tvm.relax.frontend import nn

cg = ctypes.CDLL(sys.argv[3])
DEV = tvm.cpu()

def te_call():
    a = te.placeholder((4,), name="A"); b = te.placeholder((4,), name="B")
    c = te.compute((4,), lambda i: a[i] + b[i], name="C")
    mod = tvm.compile(te.create_prim_func([a, b, c]), target="llvm")
    x = tvm.runtime.tensor(np.ones(4, "float32"), DEV)
    y = tvm.runtime.tensor(np.ones(4, "float32"), DEV)
    out = tvm.runtime.tensor(np.zeros(4, "float32"), DEV)
    return lambda: mod(x, y, out)

def relax_vm():
    class Model(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(64, 64); self.fc2 = nn.Linear(64, 64)
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

maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("libtvm_ffi.so")})
print("mapped", maps, file=sys.stderr)
case, n = sys.argv[1], int(sys.argv[2])
call = globals()[case]()
for _ in range(50): call()
cg.cg_start()
for _ in range(50): call()
cg.cg_zero()
for _ in range(n): call()
cg.cg_dump(b"N")
for _ in range(2 * n): call()
cg.cg_dump(b"2N")
cg.cg_stop()
