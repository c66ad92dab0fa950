"""apache-tvm 0.27 and tvm-ffi-orcjit 0.1.3 (a C and a C++ object file) programs, run on
whichever libtvm_ffi.so the installed tvm_ffi package loads.

Run by scripts/tvm_clients.sh (scripts/both_libraries.sh) on the official library and on
pactum's. Prints one line per program (OK or FAIL with the error) and a count; exits 1 when
any program fails, 2 when the library mapped is not the one in PACTUM_EXPECT_LIB.
"""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_harness import finish, program, require_expected_library  # noqa: E402


@program("import tvm")
def import_tvm():
    import tvm  # noqa: F401


require_expected_library()

import tvm  # noqa: E402
from tvm import te  # noqa: E402

DEV = tvm.cpu()
N = 64
built = {}


def tensor(array):
    return tvm.runtime.tensor(array, DEV)


@program("TE vector add built for llvm and run")
def vector_add():
    a = te.placeholder((1024,), name="A")
    b = te.placeholder((1024,), name="B")
    c = te.compute((1024,), lambda i: a[i] + b[i], name="C")
    mod = tvm.compile(te.create_prim_func([a, b, c]), target="llvm")
    x, y = np.random.rand(1024).astype("float32"), np.random.rand(1024).astype("float32")
    out = tensor(np.zeros(1024, "float32"))
    mod(tensor(x), tensor(y), out)
    np.testing.assert_allclose(out.numpy(), x + y)


def run_matmul(mod):
    x, y = np.random.rand(N, N).astype("float32"), np.random.rand(N, N).astype("float32")
    out = tensor(np.zeros((N, N), "float32"))
    mod(tensor(x), tensor(y), out)
    np.testing.assert_allclose(out.numpy(), x @ y, rtol=1e-4)


@program("TE matmul built for llvm and run")
def matmul():
    a = te.placeholder((N, N), name="A")
    b = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    c = te.compute((N, N), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    built["matmul"] = tvm.compile(te.create_prim_func([a, b, c]), target="llvm")
    run_matmul(built["matmul"])


@program("export_library + load_module")
def export_and_load():
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "matmul.so")
        built["matmul"].export_library(path)
        run_matmul(tvm.runtime.load_module(path))


@program("Relax model from tvm.relax.frontend.nn on the Relax VM")
def relax_model():
    from tvm import relax
    from tvm.relax.frontend import nn

    class Model(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return nn.relu(self.fc(x))

    mod, params = Model().export_tvm({"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), DEV)
    x = np.random.rand(2, 8).astype("float32")
    weight = np.random.rand(4, 8).astype("float32")
    bias = np.random.rand(4).astype("float32")
    out = vm["forward"](tensor(x), tensor(weight), tensor(bias)).numpy()
    np.testing.assert_allclose(out, np.maximum(x @ weight.T + bias, 0), rtol=1e-5)
    assert [name for name, _ in params] == ["fc.weight", "fc.bias"], params


@program("Relax model exported with export_library, loaded and run on the VM")
def relax_exported():
    from tvm import relax
    from tvm.relax.frontend import nn

    class Model(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return nn.relu(self.fc(x))

    mod, _ = Model().export_tvm({"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "model.so")
        tvm.compile(mod, target="llvm").export_library(path)
        loaded = tvm.runtime.load_module(path)
        assert loaded.kind == "relax.VMExecutable", loaded.kind
        assert [m.kind for m in loaded.imports] == ["library"], loaded.imports
        vm = relax.VirtualMachine(loaded, DEV)
        x = np.random.rand(2, 8).astype("float32")
        weight = np.random.rand(4, 8).astype("float32")
        bias = np.random.rand(4).astype("float32")
        out = vm["forward"](tensor(x), tensor(weight), tensor(bias)).numpy()
        np.testing.assert_allclose(out, np.maximum(x @ weight.T + bias, 0), rtol=1e-5)


@program("Relax VM compiled to native code (exec_mode=compiled), exported, loaded and run")
def relax_compiled_exported():
    # The library's VM functions look the VM builtins up from the library's context, which must
    # be the library's own module, not the import tree's root (the C++ VM executable).
    from tvm import relax
    from tvm.relax.frontend import nn

    class Model(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return nn.relu(self.fc(x))

    mod, _ = Model().export_tvm({"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "model.so")
        relax.build(mod, target="llvm", exec_mode="compiled").export_library(path)
        vm = relax.VirtualMachine(tvm.runtime.load_module(path), DEV)
        x = np.random.rand(2, 8).astype("float32")
        weight = np.random.rand(4, 8).astype("float32")
        bias = np.random.rand(4).astype("float32")
        vm.set_input("forward", tensor(x), tensor(weight), tensor(bias))
        vm.invoke_stateful("forward")
        out = vm.get_outputs("forward").numpy()
        np.testing.assert_allclose(out, np.maximum(x @ weight.T + bias, 0), rtol=1e-5)


@program("TIR call_packed from JIT code (TVMFFIEnvModLookupFromImports)")
def call_packed():
    import tvm_ffi
    from tvm.script import tirx as T

    @tvm_ffi.register_global_func("pactum.tvm_smoke.add_one", override=True)
    def add_one(x):
        return x + 1

    @T.prim_func
    def main(out: T.Buffer((1,), "int64")):
        out[0] = T.call_packed("pactum.tvm_smoke.add_one", T.int64(41), dtype="int64")

    result = tensor(np.zeros(1, "int64"))
    tvm.compile(main, target="llvm")(result)
    assert result.numpy()[0] == 42, result.numpy()


@program("tvm-ffi-orcjit loads a C object file and calls its export")
def orcjit_c_object():
    import subprocess

    import tvm_ffi.libinfo
    import tvm_ffi_orcjit

    here = os.path.dirname(os.path.abspath(__file__))
    source = os.path.join(here, "..", "c", "modules", "sample_module.c")
    with tempfile.TemporaryDirectory() as scratch:
        obj = os.path.join(scratch, "sample_module.o")
        include = tvm_ffi.libinfo.find_include_path()
        subprocess.run(
            [os.environ.get("CC", "gcc"), "-std=c11", "-O1", "-fPIC", "-c", f"-I{include}",
             source, "-o", obj],
            check=True,
        )
        mod = tvm_ffi_orcjit.default_session().load_module(obj)
        assert mod.kind == "orcjit", mod.kind
        assert mod.add_i64(2, 3) == 5


@program("tvm-ffi-orcjit loads a C++ object file with typed exports and calls them")
def orcjit_cxx_object():
    import subprocess

    import tvm_ffi
    import tvm_ffi.libinfo
    import tvm_ffi_orcjit

    @tvm_ffi.register_global_func("pactum.tvm_smoke.triple", override=True)
    def triple(x):
        return 3 * x

    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "orcjit_typed.cc")
    with tempfile.TemporaryDirectory() as scratch:
        obj = os.path.join(scratch, "orcjit_typed.o")
        include = tvm_ffi.libinfo.find_include_path()
        subprocess.run(
            [os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-fPIC", "-c", f"-I{include}",
             source, "-o", obj],
            check=True,
        )
        mod = tvm_ffi_orcjit.default_session().load_module(obj)
        assert mod.kind == "orcjit", mod.kind
        assert mod.add_ints(2, 3) == 5
        assert mod.greet("orcjit") == "hello, orcjit"
        assert list(mod.squares(4)) == [0, 1, 4, 9]
        assert mod.double_non_negative(21) == 42
        assert mod.call_global("pactum.tvm_smoke.triple", 14) == 42
        try:
            mod.double_non_negative(-1)
        except ValueError as error:
            assert str(error) == "negative input -1", str(error)
        else:
            raise AssertionError("the C++ ValueError thrown in JIT code was lost")


finish()
