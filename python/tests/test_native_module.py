"""pactum.iree.NativeModule (Python callables serving a module's imports) and
pactum.iree.ParameterIndex (parameters built in memory), python/pactum/iree_native.py.

The module tests compile a small program importing `pyhost.*` with the pinned iree-compile
(iree-base-compiler 3.13.0, in the same environment as this Python) and compare what pactum
returns with iree.runtime's PyModuleInterface serving the same imports with the same Python
functions, loaded with `pactum.iree.load(..., modules=[...])`; the `invoke` tests call a module
through the same Rust adapter without a `.vmfb`.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import pactum
from pactum.iree import NativeModule, ParameterIndex

# The program importing `pyhost.*`; the Rust adapter's tests
# (crates/pactum-iree/tests/all/ffi_native_module.rs) compile the same file.
HOST_MLIR = (pathlib.Path(__file__).parent / "pyhost.mlir").read_text()

# The imports' calling conventions, as iree-compile 3.13 records them for HOST_MLIR.
CCONVS = {
    "add": "0ii_i",
    "mul64": "0II_I",
    "half": "0F_F",
    "scale": "0rf_r",
    "calls": "0v_i",
    "fail": "0i_i",
}


class Host:
    """The imports' Python side: one instance per loaded context (its call count is state)."""

    def __init__(self, iface):
        self.count = 0

    def add(self, a, b):
        return a + b

    def mul64(self, a, b):
        return a * b

    def half(self, x):
        return x / 2

    def scale(self, x, s):
        return (x * s).astype(np.float32)

    def calls(self):
        self.count += 1
        return self.count

    def fail(self, x):
        raise ValueError(f"pyhost refuses {x}")


def pactum_host() -> NativeModule:
    host = NativeModule("pyhost", Host)
    for name, cconv in CCONVS.items():
        host.export(name, cconv, getattr(Host, name))
    return host


def compile_mlir(tmp_path_factory, name: str, text: str, *flags: str) -> str:
    """`text` compiled for vmvx by the pinned iree-compile (next to this Python)."""
    compiler = pathlib.Path(sys.executable).parent / "iree-compile"
    assert compiler.is_file(), f"the pinned iree-compile is missing next to {sys.executable}"
    out = tmp_path_factory.mktemp("native") / f"{name}.vmfb"
    source = out.with_suffix(".mlir")
    source.write_text(text)
    subprocess.run(
        [str(compiler), "--iree-hal-target-backends=vmvx", *flags, str(source), "-o", str(out)],
        check=True,
    )
    return str(out)


@pytest.fixture(scope="session")
def host_vmfb(tmp_path_factory) -> str:
    return compile_mlir(
        tmp_path_factory,
        "host",
        HOST_MLIR,
        "--iree-vm-target-extension-f64",
        "--iree-input-demote-f64-to-f32=false",
    )


def iree_host_context(vmfb_path: str):
    """The module in an iree.runtime context whose `pyhost` module is a PyModuleInterface
    calling the same Host methods, buffer views converted to and from NumPy."""
    rt = pytest.importorskip("iree.runtime")
    config = rt.Config("local-sync")

    def scale(self, x, s):
        view = x.deref(rt.HalBufferView)
        array = np.array(view.map().asarray(view.shape, np.dtype(np.float32)))
        return rt.asdevicearray(config.device, Host.scale(self, array, s))._buffer_view.ref

    iface = rt.PyModuleInterface("pyhost", Host)
    for name, cconv in CCONVS.items():
        iface.export(name, cconv, scale if name == "scale" else getattr(Host, name))
    context = rt.SystemContext(config=config)
    context.add_vm_module(iface.create())
    context.add_vm_module(rt.VmModule.mmap(config.vm_instance, vmfb_path))
    return context.modules.module, iface


def as_list(value):
    if isinstance(value, (tuple, list)):
        return [as_list(v) for v in value]
    if hasattr(value, "to_host"):
        return value.to_host().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


CALLS = [
    ("add_twice", (2, 3)),
    ("add_twice", (-7, 1 << 20)),
    ("mul_half", (1 << 33, -3, 5.0)),
    ("scale_plus", (np.array([1, -2, 0.5, 8], np.float32), 2.5)),
]


@pytest.mark.parametrize("function,args", CALLS, ids=[f"{f}{i}" for i, (f, _) in enumerate(CALLS)])
def test_a_python_module_serves_imports_as_iree_runtime_does(host_vmfb, function, args):
    module = pactum.iree.load(host_vmfb, modules=[pactum_host()])
    iree_module, _iface = iree_host_context(host_vmfb)
    ours = as_list(module[function](*args))
    theirs = as_list(getattr(iree_module, function)(*args))
    assert ours == theirs


def test_each_load_gets_its_own_state(host_vmfb):
    host = pactum_host()
    first = pactum.iree.load(host_vmfb, modules=[host])
    second = pactum.iree.load(host_vmfb, modules=[host])
    assert [first.calls(), first.calls(), second.calls(), first.calls()] == [1, 2, 1, 3]


def test_an_exception_in_an_import_fails_the_call_naming_it(host_vmfb):
    module = pactum.iree.load(host_vmfb, modules=[pactum_host()])
    with pytest.raises(Exception) as raised:
        module.fail(7)
    message = str(raised.value)
    assert "pyhost.fail" in message and "ValueError" in message and "pyhost refuses 7" in message
    assert module.add_twice(1, 1) == 3, "the module stays usable after a failed import"


def test_submitted_calls_reach_python_imports_from_their_threads(host_vmfb):
    module = pactum.iree.load(host_vmfb, modules=[pactum_host()])
    futures = [module.add_twice.submit(i, 1) for i in range(16)]
    assert [f.result(timeout=60) for f in futures] == [i + 2 for i in range(16)]
    scaled = module.scale_plus.submit(np.ones(4, np.float32), 3.0).result(timeout=60)
    assert scaled.tolist() == [4, 4, 4, 4]


def test_a_missing_import_is_refused_at_load(host_vmfb):
    partial = NativeModule("pyhost")
    partial.export("add", "0ii_i", lambda a, b: a + b)
    with pytest.raises(Exception, match="pyhost"):
        pactum.iree.load(host_vmfb, modules=[partial])


def test_the_compiler_records_the_conventions_the_tests_export(host_vmfb):
    imports = {i["name"]: i.get("cconv") for i in pactum.iree.inspect(host_vmfb)["imports"]}
    assert {f"pyhost.{n}": c for n, c in CCONVS.items()}.items() <= imports.items()


# ------------------------------------------------------------------ invoke: the adapter alone


def test_invoke_converts_scalars_by_calling_convention():
    host = NativeModule("m")
    host.export("add", "0ii_i", lambda a, b: a + b)
    host.export("mul", "0II_I", lambda a, b: a * b)
    host.export("mix", "0fF_Ff", lambda a, b: (a + b, a - b))
    host.export("nothing", "0v_v", lambda: None)
    assert host.invoke("add", 2, 3) == 5
    assert host.invoke("add", 0x7FFFFFFF, 1) == -(1 << 31), "i32 results wrap as IREE's i32 do"
    assert host.invoke("mul", 1 << 40, 3) == 3 << 40
    assert host.invoke("mix", 1.5, 0.25) == (1.75, 1.25)
    assert host.invoke("nothing") is None
    assert host.invoke("add", np.int32(4), np.int64(5)) == 9, "NumPy scalars are numbers"


def test_invoke_passes_tensors_bytes_lists_and_variadic_spans():
    host = NativeModule("m")
    seen = {}

    def scale(x, s):
        seen["x"] = x
        return x * np.float32(s)

    host.export("scale", "0rf_r", scale)
    host.export("reverse", "0r_r", lambda b: bytes(reversed(b)))
    host.export("total", "0CID_I", lambda xs: sum(xs))
    host.export("pairs", "0CiiD_i", lambda ps: sum(a * b for a, b in ps))
    host.export("listed", "0r_r", lambda items: [len(items), items[0] * 2.0, None])
    out = host.invoke("scale", np.arange(4, dtype=np.float32).reshape(2, 2), 2.0)
    assert isinstance(seen["x"], np.ndarray) and seen["x"].shape == (2, 2)
    assert out.dtype == np.float32 and out.tolist() == [[0, 2], [4, 6]]
    assert host.invoke("reverse", b"abc") == b"cba"
    assert host.invoke("total", [1, 2, 3 << 40]) == 6 + (3 << 40) - 3
    assert host.invoke("pairs", [[1, 2], [3, 4]]) == 14
    assert host.invoke("listed", [5, 6]) == [2, 10.0, None]


def test_invoke_reports_a_python_exception_naming_the_function():
    host = NativeModule("host")

    def boom(x):
        raise KeyError(f"no entry {x}")

    host.export("boom", "0i_i", boom)
    with pytest.raises(RuntimeError, match=r"host\.boom: UNKNOWN: KeyError: .*no entry 7"):
        host.invoke("boom", 7)


@pytest.mark.parametrize(
    "cconv,function,message",
    [
        ("0i_ii", lambda x: x, "tuple of 2 results"),
        ("0i_v", lambda x: x, "no results"),
        ("0i_i", lambda x: "text", "int"),
        ("0i_i", lambda x: 1 << 40, "does not fit in 32 bits"),
        ("0i_r", lambda x: object(), "reference result"),
    ],
)
def test_invoke_refuses_results_that_do_not_match_the_convention(cconv, function, message):
    host = NativeModule("host")
    host.export("f", cconv, function)
    with pytest.raises(RuntimeError, match=rf"host\.f: .*{message}"):
        host.invoke("f", 1)


def test_bad_definitions_are_refused_naming_them():
    with pytest.raises(ValueError, match="module name"):
        NativeModule("a.b")
    host = NativeModule("host")
    host.export("f", "0i_i", lambda x: x)
    with pytest.raises(ValueError, match="defined twice"):
        host.export("f", "0i_i", lambda x: x)
    with pytest.raises(TypeError, match="not callable"):
        host.export("g", "0i_i", 3)
    with pytest.raises(ValueError, match="version 0"):
        host.export("h", "1i_i", lambda x: x)
    bad = NativeModule("host")
    bad.export("k", "0iq_i", lambda x: x)
    with pytest.raises(ValueError, match=r"`host\.k`: calling convention `0iq_i`"):
        bad._pactum_native_module()
    with pytest.raises(AttributeError, match="no function `nope`"):
        host.invoke("nope")


def test_the_decorator_exports_under_the_function_name():
    host = NativeModule("host")

    @host.function("0ii_i")
    def add(a, b):
        return a + b

    @host.function("0i_i", name="negate")
    def _negate(a):
        return -a

    assert host.functions == {"add": "0ii_i", "negate": "0i_i"}
    assert add(1, 2) == 3, "the decorated function stays callable"
    assert host.invoke("negate", 4) == -4


def test_the_ffi_object_is_the_module_a_load_registers():
    import tvm_ffi

    obj = pactum_host()._pactum_native_module()
    assert isinstance(obj, tvm_ffi.Object)
    invoke = tvm_ffi.get_global_func("pactum.iree.native_module_invoke")
    assert list(invoke(obj, "add", [20, 22])) == [42]


# ------------------------------------------------------------------ ParameterIndex


def test_add_buffer_holds_numpy_arrays_without_copying():
    index = ParameterIndex()
    weights = np.arange(6, dtype=np.float32)
    index.add_buffer("w", weights, metadata="meta")
    weights[0] = 42  # the index aliases the array, as iree.runtime's does
    [(key, entry)] = index.items()
    assert key == "w" and entry.length == 24 and entry.metadata == b"meta"
    assert entry.is_file and not entry.is_splat
    assert np.frombuffer(entry.file_view, np.float32).tolist() == [42, 1, 2, 3, 4, 5]


def test_add_buffer_takes_bytes_and_buffers():
    index = ParameterIndex()
    index.add_buffer("b", b"\x01\x02\x03")
    index.add_buffer("ba", bytearray(b"xyz"))
    index.add_buffer("2d", np.ones((2, 3), np.int16))
    assert index.keys() == ["b", "ba", "2d"]
    assert bytes(index[0].file_view) == b"\x01\x02\x03"
    assert bytes(index[1].file_view) == b"xyz"
    assert index[2].length == 12
    with pytest.raises(ValueError, match="C-contiguous"):
        index.add_buffer("t", np.ones((3, 2), np.float32).T)


def test_add_splat_and_replacing_a_key():
    index = ParameterIndex()
    index.add_splat("z", np.float32(1.0), 16)
    index.add_splat("b", b"\x07", 3)
    assert len(index) == 2 and "z" in index
    assert index[0].is_splat and index[0].splat_pattern == np.float32(1.0).tobytes() and index[0].length == 16
    index.add_buffer("z", b"new")
    assert len(index) == 2 and index.keys() == ["z", "b"] and bytes(index[0].file_view) == b"new"
    with pytest.raises(ValueError, match="1, 2, 4, 8 or 16 bytes"):
        index.add_splat("bad", b"abc", 9)
    index.add_splat("cut", np.float32(0), 6)  # the last repetition cut short, as IREE allows
    assert index[2].length == 6
    with pytest.raises(ValueError, match="is a splat"):
        index[1].file_view


def test_an_archive_written_and_read_back_keeps_every_entry_as_iree_reads_it(tmp_path):
    rt = pytest.importorskip("iree.runtime")
    index = ParameterIndex()
    index.add_buffer("w", np.arange(6, dtype=np.float32), metadata=b"\x01meta")
    index.add_splat("z", np.int16(-2), 64)
    index.add_buffer("b", b"bytes")
    path = tmp_path / "built.irpa"
    archive = index.create_archive_file(path)
    assert [(k, e.length, e.is_splat, e.metadata) for k, e in archive.items()] == [
        ("w", 24, False, b"\x01meta"),
        ("z", 64, True, b""),
        ("b", 5, False, b""),
    ]
    assert bytes(archive[0].file_view) == np.arange(6, dtype=np.float32).tobytes()
    assert archive[1].splat_pattern == np.int16(-2).tobytes()
    theirs = rt.ParameterIndex()
    theirs.load(str(path))
    assert [(k, e.length, e.is_splat, bytes(e.metadata)) for k, e in theirs.items()] == [
        ("w", 24, False, b"\x01meta"),
        ("z", 64, True, b""),
        ("b", 5, False, b""),
    ]
    assert bytes(theirs.items()[0][1].file_view) == np.arange(6, dtype=np.float32).tobytes()
    assert bytes(theirs.items()[1][1].splat_pattern) == np.int16(-2).tobytes()


def test_load_errors_name_the_file(tmp_path):
    index = ParameterIndex()
    with pytest.raises(FileNotFoundError):
        index.load(tmp_path / "missing.irpa")
    junk = tmp_path / "junk.irpa"
    junk.write_bytes(b"not an archive at all")
    with pytest.raises(ValueError, match="junk.irpa"):
        index.load(junk)
    assert len(index) == 0


def test_the_ffi_object_is_the_live_index():
    import tvm_ffi

    index = ParameterIndex()
    obj = index._pactum_parameter_index()
    assert isinstance(obj, tvm_ffi.Object)
    index.add_splat("z", b"\0", 4)
    items = tvm_ffi.get_global_func("pactum.iree.parameter_index_items")(obj)
    assert [str(item[0]) for item in items] == ["z"]


PARAMS_MLIR = """
util.global private @w = #stream.parameter.named<"model"::"w"> : tensor<4xf32>
util.global private @b = #stream.parameter.named<"model"::"b"> : tensor<4xf32>
func.func @affine(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4xf32>
  %b = util.global.load @b : tensor<4xf32>
  %0 = arith.mulf %x, %w : tensor<4xf32>
  %1 = arith.addf %0, %b : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


@pytest.fixture(scope="session")
def params_vmfb(tmp_path_factory) -> str:
    return compile_mlir(tmp_path_factory, "params", PARAMS_MLIR)


def test_an_index_built_in_memory_serves_parameters_as_iree_runtimes_does(params_vmfb):
    rt = pytest.importorskip("iree.runtime")
    weights = np.array([1, -2, 0.5, 4], np.float32)
    x = np.array([3, 5, 7, 9], np.float32)

    ours = ParameterIndex()
    ours.add_buffer("w", weights)
    ours.add_splat("b", np.float32(0.25), 16)
    got = pactum.iree.load(params_vmfb, parameters={"model": ours}).affine(x)

    config = rt.Config("local-sync")
    theirs = rt.ParameterIndex()
    theirs.add_buffer("w", weights)
    theirs.add_splat("b", np.array(0.25, np.float32), 16)
    context = rt.SystemContext(config=config)
    context.add_vm_module(rt.create_io_parameters_module(config.vm_instance, theirs.create_provider(scope="model")))
    context.add_vm_module(rt.VmModule.mmap(config.vm_instance, params_vmfb))
    expected = context.modules.module.affine(x).to_host()

    assert got.tolist() == expected.tolist() == (x * weights + 0.25).tolist()


def test_an_index_keeps_its_buffers_alive_after_python_drops_them(params_vmfb):
    import gc

    index = ParameterIndex()
    index.add_buffer("w", np.array([2, 2, 2, 2], np.float32))  # no other reference
    index.add_buffer("b", bytearray(np.float32([1, 1, 1, 1]).tobytes()))
    gc.collect()
    module = pactum.iree.load(params_vmfb, parameters={"model": index})
    del index
    gc.collect()
    assert module.affine(np.array([1, 2, 3, 4], np.float32)).tolist() == [3, 5, 7, 9]
