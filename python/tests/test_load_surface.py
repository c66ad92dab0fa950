"""pactum.iree.load's options (bytes sources, devices, linked modules, parameter scopes, trace
callbacks, casts), Export.submit and pactum.iree.benchmark, compared with iree.runtime
(iree-base-runtime 3.13.0) where it has the same feature.

Modules that no fixture holds (two linked modules, a traced one) are compiled here, from the
MLIR below, by the pinned iree-compile (iree-base-compiler 3.13.0, installed next to this
Python by scripts/requirements-peer.txt)."""

from __future__ import annotations

import gc
import mmap
import os
import pathlib
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import Future

import numpy as np
import pytest
import tvm_ffi

import pactum
from conftest import vmfb

ireert = pytest.importorskip("iree.runtime")

VMVX = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx"]

LIBA = """
module @liba {
  func.func @double(%x: i32) -> i32 {
    %0 = arith.addi %x, %x : i32
    return %0 : i32
  }
}
"""

MAIN = """
module @main {
  func.func private @liba.double(i32) -> i32
  func.func @quad(%x: i32) -> i32 {
    %0 = call @liba.double(%x) : (i32) -> i32
    %1 = call @liba.double(%0) : (i32) -> i32
    return %1 : i32
  }
}
"""

# One dispatch (traced by --iree-flow-trace-dispatch-tensors: its inputs and outputs) and one
# explicit trace of the result.
TRACED = """
func.func @mul_add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  %1 = arith.addf %0, %a : tensor<4xf32>
  flow.tensor.trace "mul_add_result" = [%1 : tensor<4xf32>]
  return %1 : tensor<4xf32>
}
"""


def _iree_compile(source: str, out: pathlib.Path, *flags: str) -> str:
    compiler = pathlib.Path(sys.executable).parent / "iree-compile"
    assert compiler.is_file(), f"the pinned iree-compile is missing next to {sys.executable}"
    mlir = out.with_suffix(".mlir")
    mlir.write_text(source)
    run = subprocess.run(
        [str(compiler), *VMVX, *flags, str(mlir), "-o", str(out)], capture_output=True, text=True
    )
    assert run.returncode == 0, f"iree-compile failed:\n{run.stderr}"
    return str(out)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compiled")
    return {
        "liba": _iree_compile(LIBA, folder / "liba.vmfb"),
        "main": _iree_compile(MAIN, folder / "main.vmfb"),
        "traced": _iree_compile(TRACED, folder / "traced.vmfb", "--iree-flow-trace-dispatch-tensors"),
    }


def _iree_module(source, *, driver="local-sync", linked=(), copy=False):
    """The last of `linked` + `source` loaded by iree.runtime, from a path or from bytes."""
    config = ireert.Config(driver)

    def vm_module(item):
        if isinstance(item, str):
            return ireert.VmModule.mmap(config.vm_instance, item)
        return (ireert.VmModule.copy_buffer if copy else ireert.VmModule.wrap_buffer)(config.vm_instance, item)

    modules = [vm_module(m) for m in (*linked, source)]
    return ireert.load_vm_modules(*modules, config=config)[-1]


def _host(value):
    return value.to_host() if isinstance(value, ireert.DeviceArray) else value


A = np.array([1, 2, 3, 4], np.float32)
B = np.array([10, 20, 30, 40], np.float32)


# --- load(source): paths and bytes-like objects -------------------------------------------


@pytest.mark.parametrize(
    "kind", ["bytes", "bytearray", "memoryview", "numpy", "readonly numpy", "mmap", "pathlib"]
)
def test_load_from_a_bytes_like_source_as_iree(kind, tmp_path):
    """Every bytes-like source (and a pathlib path) loads the module whose results are
    iree.runtime's for the same bytes (VmModule.copy_buffer)."""
    path = vmfb("vmvx_tensors.vmfb")
    data = pathlib.Path(path).read_bytes()
    if kind == "bytes":
        source = data
    elif kind == "bytearray":
        source = bytearray(data)
    elif kind == "memoryview":
        source = memoryview(data)
    elif kind == "numpy":
        source = np.frombuffer(data, np.uint8).copy()
    elif kind == "readonly numpy":
        source = np.frombuffer(data, np.uint8)
    elif kind == "mmap":
        file = open(path, "rb")
        source = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        file.close()
    else:
        source = pathlib.Path(path)
    ours = pactum.iree.load(source)
    theirs = _iree_module(data, copy=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for a, b in zip(ours.split_rows(x), theirs.split_rows(x)):
        np.testing.assert_array_equal(a, _host(b))
    assert ours.exports == tuple(e for e in theirs.vm_module.function_names if not e.startswith("__"))
    assert ours.path == (path if kind == "pathlib" else None)


def test_bytes_are_read_in_place_and_writable_buffers_copied():
    """A bytes source is not copied: the module holds the bytes object (and lets go of it with
    the module). A bytearray is copied, since pactum verifies a module once: changing it
    after the load changes nothing."""
    data = pathlib.Path(vmfb("vm_direct.vmfb")).read_bytes()
    before = sys.getrefcount(data)
    module = pactum.iree.load(data)
    assert sys.getrefcount(data) > before, "the module should hold the bytes it reads in place"
    assert module.frob_or_double(21) == 42
    del module
    gc.collect()
    assert sys.getrefcount(data) == before

    writable = bytearray(data)
    before = sys.getrefcount(writable)
    module = pactum.iree.load(writable)
    assert sys.getrefcount(writable) == before
    writable[:] = bytes(len(writable))
    assert module.frob_or_double(21) == 42


def _aligned(data: bytes, alignment: int = 64) -> memoryview:
    """A copy of `data` at an address that is a multiple of `alignment`."""
    room = np.zeros(len(data) + alignment, np.uint8)
    start = -room.ctypes.data % alignment
    room[start : start + len(data)] = np.frombuffer(data, np.uint8)
    return memoryview(room[start : start + len(data)])


def test_bytes_source_as_iree_wrap_buffer():
    """iree.runtime's in-place load (VmModule.wrap_buffer, which wants 64-byte aligned memory)
    and pactum's (any alignment) give the same results."""
    data = pathlib.Path(vmfb("multi_export_vmvx.vmfb")).read_bytes()
    ours = pactum.iree.load(data)
    theirs = _iree_module(_aligned(data))
    for name in ours:
        fn = ours[name]
        if fn.signature.text and "ndarray" not in fn.signature.text and "(i32, i32)" in fn.signature.text:
            assert fn(7, 35) == theirs[name](7, 35)


def test_inspect_of_bytes_is_inspect_of_the_file():
    path = vmfb("abi_structs_vmvx.vmfb")
    assert pactum.iree.inspect(pathlib.Path(path).read_bytes()) == pactum.iree.inspect(path)


def test_a_source_of_another_kind_is_a_type_error():
    with pytest.raises(TypeError, match="source: expected a path or a bytes-like object"):
        pactum.iree.load(42)


# --- devices ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "device,threads", [("local-sync", None), ("local-task", None), ("local-task", 1), ("local-task", 3)]
)
def test_devices_as_iree(device, threads):
    """The MLP (llvm-cpu, dispatches on the device's workers) gives iree.runtime's results on
    the same driver."""
    path = vmfb("mlp_llvm_cpu.vmfb")
    ours = pactum.iree.load(path, device=device, threads=threads)
    assert ours.device == device
    theirs = _iree_module(path, driver=device)
    x = np.random.default_rng(7).standard_normal((4, 16)).astype(np.float32)
    name = ours.exports[0]
    np.testing.assert_array_equal(ours[name](x), _host(theirs[name](x)))


VULKAN_ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.mark.parametrize("device", ["vulkan", "vulkan://0"])
def test_a_module_compiled_for_vulkan_runs_on_the_vulkan_device(tmp_path, device):
    """device="vulkan" runs a module compiled with --iree-hal-target-device=vulkan on pactum's
    Vulkan device (lavapipe in CI; without a Vulkan driver this fails, saying what is missing)."""
    compiler = pathlib.Path(sys.executable).parent / "iree-compile"
    mlir = tmp_path / "add.mlir"
    mlir.write_text(VULKAN_ADD)
    out = tmp_path / "add.vmfb"
    run = subprocess.run(
        [str(compiler), "--iree-hal-target-device=vulkan", str(mlir), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"iree-compile failed:\n{run.stderr}"
    module = pactum.iree.load(str(out), device=device)
    assert module.device == device
    np.testing.assert_array_equal(module["add"](A, B), A + B)


def test_a_bad_device_is_a_value_error_naming_the_choices():
    with pytest.raises(
        ValueError,
        match=r"unknown device 'nosuchdevice' \(expected one of: local-task, local-sync, vulkan, vulkan://N\)",
    ):
        pactum.iree.load(vmfb("vm_direct.vmfb"), device="nosuchdevice")
    # iree.runtime refuses it too (with an error of its own).
    with pytest.raises(Exception):
        ireert.Config("nosuchdevice")


@pytest.mark.parametrize(
    "device,threads,error,match",
    [
        ("local-sync", 2, ValueError, "local-task only"),
        ("local-task", 0, ValueError, "expected 1 to 255"),
        ("local-task", 256, ValueError, "expected 1 to 255"),
        ("local-task", "2", TypeError, "threads: expected an int"),
    ],
)
def test_bad_threads(device, threads, error, match):
    with pytest.raises(error, match=match):
        pactum.iree.load(vmfb("vm_direct.vmfb"), device=device, threads=threads)


def test_the_rust_global_refuses_bad_options_too():
    """pactum.iree.load_module (the global behind load, for other bindings) checks its options
    itself: a bad device, a misspelt key."""
    load_module = tvm_ffi.get_global_func("pactum.iree.load_module")
    with pytest.raises(ValueError, match="expected one of: local-task, local-sync"):
        load_module(vmfb("vm_direct.vmfb"), {"device": "gpu"})
    with pytest.raises(ValueError, match='unknown key "devise"'):
        load_module(vmfb("vm_direct.vmfb"), {"devise": "local-sync"})
    module = load_module(vmfb("vm_direct.vmfb"), {"device": "local-sync", "threads": None})
    assert module.kind == "vmfb" and module["frob_or_double"](21) == 42


# --- modules=[...] ----------------------------------------------------------------------------


@pytest.mark.parametrize("as_bytes", [False, True], ids=["paths", "bytes"])
def test_linked_modules_as_iree(compiled, as_bytes):
    """A module importing another's function runs with that module linked before it, from
    paths or bytes, as iree.runtime runs it in one context (iree-run-module's repeated
    --module)."""
    liba, main = compiled["liba"], compiled["main"]
    if as_bytes:
        liba, main = pathlib.Path(liba).read_bytes(), pathlib.Path(main).read_bytes()
    ours = pactum.iree.load(main, modules=[liba])
    theirs = _iree_module(compiled["main"], linked=[compiled["liba"]])
    for x in (0, 5, -7, 1 << 20):
        assert ours.quad(x) == theirs.quad(x) == 4 * x


def test_a_missing_import_names_the_module_and_its_file(compiled):
    with pytest.raises(ValueError) as error:
        pactum.iree.load(compiled["main"])
    message = str(error.value)
    assert '"liba"' in message and "not registered" in message
    assert message.count(compiled["main"]) == 1, message


def test_a_missing_linked_module_is_file_not_found(compiled, tmp_path):
    missing = tmp_path / "nope.vmfb"
    with pytest.raises(FileNotFoundError) as error:
        pactum.iree.load(compiled["main"], modules=[missing])
    assert error.value.filename == str(missing)


def test_a_corrupt_linked_module_is_named_once(compiled, tmp_path):
    corrupt = tmp_path / "corrupt.vmfb"
    corrupt.write_bytes(pathlib.Path(compiled["liba"]).read_bytes()[:300])
    with pytest.raises(ValueError) as error:
        pactum.iree.load(compiled["main"], modules=[corrupt])
    assert str(error.value).startswith(f"{corrupt}: "), str(error.value)
    assert compiled["main"] not in str(error.value)


def test_modules_of_another_kind_are_type_errors(compiled):
    with pytest.raises(TypeError, match=r"modules\[0\]"):
        pactum.iree.load(compiled["main"], modules=[3.5])
    with pytest.raises(TypeError, match="wrap it in a list"):
        pactum.iree.load(compiled["main"], modules=compiled["liba"])


def test_a_native_module_object_is_what_its_method_returns(compiled):
    """An object with _pactum_native_module() is asked for the module it stands for (the
    pactum.iree native-module classes implement it); what it returns must be one."""

    class NotANativeModule:
        def _pactum_native_module(self):
            return 17

    with pytest.raises(TypeError, match=r"modules\[0\]: expected a path \(str\), bytes"):
        pactum.iree.load(compiled["main"], modules=[NotANativeModule()])


# --- parameters={...} -------------------------------------------------------------------------


def test_a_missing_parameter_archive_is_file_not_found(tmp_path):
    missing = tmp_path / "weights.irpa"
    with pytest.raises(FileNotFoundError) as error:
        pactum.iree.load(vmfb("vm_direct.vmfb"), parameters={"model": missing})
    assert error.value.filename == str(missing)


def test_an_unreadable_parameter_archive_is_named(tmp_path):
    garbage = tmp_path / "weights.irpa"
    garbage.write_bytes(b"this is not a parameter archive")
    with pytest.raises(ValueError) as error:
        pactum.iree.load(vmfb("vm_direct.vmfb"), parameters={"model": garbage})
    assert str(garbage) in str(error.value)


def test_parameters_of_another_kind_are_type_errors():
    with pytest.raises(TypeError, match="parameters: expected a dict"):
        pactum.iree.load(vmfb("vm_direct.vmfb"), parameters=["model.irpa"])
    with pytest.raises(TypeError, match=r"parameters\['model'\]"):
        pactum.iree.load(vmfb("vm_direct.vmfb"), parameters={"model": 3})

    class NotAnIndex:
        def _pactum_parameter_index(self):
            return 3

    with pytest.raises(TypeError, match=r"parameters\[0\]: the archive must be a path"):
        pactum.iree.load(vmfb("vm_direct.vmfb"), parameters={"model": NotAnIndex()})


# --- trace=callback ---------------------------------------------------------------------------


def _iree_traces(path):
    """What iree.runtime's HAL debug sink receives for mul_add(A, B): (key, [arrays])."""
    seen = []
    config = ireert.Config("local-sync")
    device = config.device

    def sink(key, views):
        seen.append((key, [ireert.DeviceArray(device, v, implicit_host_transfer=True).to_host().copy() for v in views]))

    hal = ireert.create_hal_module(config.vm_instance, device, debug_sink=ireert.HalModuleDebugSink(sink))
    vm_module = ireert.VmModule.mmap(config.vm_instance, path)
    context = ireert.VmContext(config.vm_instance, modules=[hal, vm_module])
    invoker = ireert.FunctionInvoker(context, device, vm_module.lookup_function("mul_add"))
    result = invoker(A, B).to_host()
    del invoker, context, hal, sink, device, config, vm_module
    gc.collect()
    return seen, result


def test_trace_callback_receives_what_iree_traces(compiled):
    path = compiled["traced"]
    theirs, expected = _iree_traces(path)
    ours = []
    module = pactum.iree.load(path, trace=lambda key, arrays: ours.append((key, arrays)))
    np.testing.assert_array_equal(module.mul_add(A, B), expected)
    assert [k for k, _ in ours] == [k for k, _ in theirs]
    assert [k for k, _ in ours] == [
        "mul_add_dispatch_0::mul_add_dispatch_0_elementwise_4_f32 inputs",
        "mul_add_dispatch_0::mul_add_dispatch_0_elementwise_4_f32 outputs",
        "mul_add_result",
    ]
    for (_, mine), (_, iree) in zip(ours, theirs):
        assert len(mine) == len(iree)
        for a, b in zip(mine, iree):
            assert isinstance(a, np.ndarray) and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_without_a_trace_callback_tracing_does_nothing(compiled):
    module = pactum.iree.load(compiled["traced"])
    np.testing.assert_array_equal(module.mul_add(A, B), A * B + A)


def test_an_exception_in_the_trace_callback_fails_the_call(compiled):
    def trace(key, arrays):
        raise KeyError("no room for " + key)

    module = pactum.iree.load(compiled["traced"], trace=trace)
    with pytest.raises(Exception, match="no room for mul_add_dispatch_0"):
        module.mul_add(A, B)


def test_trace_must_be_callable(compiled):
    with pytest.raises(TypeError, match="trace: expected a callable"):
        pactum.iree.load(compiled["traced"], trace="print")


# --- Export.submit ----------------------------------------------------------------------------


def test_submit_returns_a_future_before_the_call_finishes(compiled):
    """The call runs on another thread: here it is held inside its trace callback until the
    test releases it, so submit() must have returned while it runs."""
    release = threading.Event()
    started = threading.Event()

    def trace(key, arrays):
        started.set()
        assert release.wait(30), "the test never released the call"

    module = pactum.iree.load(compiled["traced"], trace=trace)
    future = module.mul_add.submit(A, B)
    assert isinstance(future, Future)
    assert started.wait(30), "the submitted call never started"
    assert not future.done()
    release.set()
    np.testing.assert_array_equal(future.result(timeout=30), module.mul_add(A, B))


def test_several_submitted_calls_run_at_once(compiled):
    """Three calls that each wait (in their trace callback) until all three are inside the
    module: they finish only if they run at the same time."""
    barrier = threading.Barrier(3, timeout=30)
    module = pactum.iree.load(compiled["traced"], trace=lambda key, arrays: barrier.wait())
    futures = [module.mul_add.submit(A * k, B) for k in (1, 2, 3)]
    for k, future in zip((1, 2, 3), futures):
        np.testing.assert_array_equal(future.result(timeout=60), (A * k) * B + A * k)


def test_submit_result_and_exception_are_the_calls():
    module = pactum.iree.load(vmfb("abi_structs_vmvx.vmfb"))
    bias, scale = np.array([1, 2, 3, 4], np.float32), np.array([0.5, -2, 1e-3, 3.25], np.float32)
    direct = module.dict_in({"bias": bias, "n": 3}, scale=scale)
    submitted = module.dict_in.submit({"bias": bias, "n": 3}, scale=scale).result(timeout=60)
    assert direct.keys() == submitted.keys()
    for key in direct:
        np.testing.assert_array_equal(direct[key], submitted[key])
    with pytest.raises(Exception) as direct_error:
        module.dict_in({"bias": bias}, scale=scale)
    failed = module.dict_in.submit({"bias": bias}, scale=scale)
    error = failed.exception(timeout=60)
    assert type(error) is type(direct_error.value) and str(error) == str(direct_error.value)


@pytest.mark.parametrize("name", ["async_export_llvm_cpu.vmfb", "async_export_vmvx.vmfb"])
def test_submit_of_an_async_export(name):
    """A coarse-fences export (add_async: a + b) submitted runs with the fences pactum makes,
    like a direct call. (iree.runtime's Python calls leave the fences to the caller.)"""
    module = pactum.iree.load(vmfb(name))
    export = module.add_async
    assert export.signature.cconv.endswith("rr_r")
    expected = A + B
    np.testing.assert_array_equal(export.submit(A, B).result(timeout=60), expected)
    np.testing.assert_array_equal(export(A, B), expected)


# --- benchmark --------------------------------------------------------------------------------


def test_benchmark_times_each_repetition():
    module = pactum.iree.load(vmfb("multi_export_llvm_cpu.vmfb"))
    result = pactum.iree.benchmark(module.add, 7, 35, repetitions=5, warmup=2)
    assert result.repetitions == len(result.times) == 5 and result.warmup == 2
    assert all(isinstance(t, float) and t > 0 for t in result.times)
    assert result.min == min(result.times) <= result.median <= max(result.times) == result.max
    assert result.mean == pytest.approx(statistics.fmean(result.times))
    assert result.median == statistics.median(result.times)
    assert result.stddev == pytest.approx(statistics.stdev(result.times))
    assert "5 calls: mean" in str(result)


def test_benchmark_calls_warmup_plus_repetitions_times_with_the_arguments():
    calls = []

    def function(*args, **kwargs):
        calls.append((args, kwargs))
        time.sleep(0.001)

    result = pactum.iree.benchmark(function, 1, 2, repetitions=4, warmup=3, scale=5)
    assert calls == [((1, 2), {"scale": 5})] * 7
    assert result.min >= 0.001
    assert pactum.iree.benchmark(function, repetitions=1, warmup=0).stddev == 0.0


def test_benchmark_of_an_export_with_keywords():
    module = pactum.iree.load(vmfb("vmvx_tensors.vmfb"))
    result = pactum.iree.benchmark(module.dict_summary, np.array([1, 2, 4], np.float32), repetitions=3, repeat=2)
    assert result.repetitions == 3


@pytest.mark.parametrize("repetitions,warmup", [(0, 1), (-1, 0), (2, -1), (1.5, 0)])
def test_benchmark_refuses_bad_counts(repetitions, warmup):
    with pytest.raises(ValueError):
        pactum.iree.benchmark(print, repetitions=repetitions, warmup=warmup)


def test_benchmark_propagates_the_functions_exception():
    module = pactum.iree.load(vmfb("multi_export_llvm_cpu.vmfb"))
    with pytest.raises(TypeError):
        pactum.iree.benchmark(module.add, "seven", 35, repetitions=2)


# --- casts ------------------------------------------------------------------------------------


def test_dlpack_and_numpy_tensors_of_another_dtype_are_refused_alike():
    """Refused by default with the argument's path and both dtypes; converted, for both kinds,
    with allow_casts=True (iree.runtime converts NumPy arrays always and refuses DLPack
    tensors: see test_vs_iree)."""
    x64 = np.arange(6, dtype=np.float64).reshape(2, 3)
    strict = pactum.iree.load(vmfb("vmvx_tensors.vmfb"))
    for value in (x64, tvm_ffi.from_dlpack(x64)):
        with pytest.raises(TypeError) as error:
            strict.split_rows(value)
        message = str(error.value)
        assert message.startswith("args[0]: ") and "float64" in message and "f32" in message, message
    loose = pactum.iree.load(vmfb("vmvx_tensors.vmfb"), allow_casts=True)
    expected = strict.split_rows(x64.astype(np.float32))
    for value in (x64, tvm_ffi.from_dlpack(x64)):
        for a, b in zip(loose.split_rows(value), expected):
            np.testing.assert_array_equal(a, b)
    # Array-likes that are not NumPy arrays (lists, scalars) are converted, as before.
    for a, b in zip(strict.split_rows(x64.tolist()), expected):
        np.testing.assert_array_equal(a, b)


def test_keyword_arguments_are_named_in_cast_errors():
    module = pactum.iree.load(vmfb("abi_structs_vmvx.vmfb"))
    with pytest.raises(TypeError, match=r'^kwargs\["x"\]: .*int64'):
        module.pair_out(x=np.arange(4), k=5)


# --- errors -----------------------------------------------------------------------------------


def test_a_corrupt_module_is_named_once(tmp_path):
    corrupt = tmp_path / "corrupt.vmfb"
    corrupt.write_bytes(pathlib.Path(vmfb("vm_scalars.vmfb")).read_bytes()[:2000])
    with pytest.raises(ValueError) as error:
        pactum.iree.load(corrupt)
    assert str(error.value).count(str(corrupt)) == 1, str(error.value)
    with pytest.raises(ValueError) as error:
        pactum.iree.load(corrupt.read_bytes())
    assert "<module bytes>" in str(error.value)


def test_a_missing_module_or_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        pactum.iree.load(tmp_path / "missing.vmfb")
    with pytest.raises(IsADirectoryError):
        pactum.iree.load(tmp_path)
    assert os.path.isdir(tmp_path)



# --- tensor arguments: in place where IREE's import would be, copies elsewhere ------------

ADD_4096 = """
func.func @add(%a: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<4096xf32> {
  %0 = arith.addf %a, %b : tensor<4096xf32>
  return %0 : tensor<4096xf32>
}
"""


def _aligned_floats(values: np.ndarray, offset: int = 0) -> np.ndarray:
    """A float32 copy of `values` whose first element is `offset` bytes past a multiple of 64."""
    room = np.zeros(values.size + 32, np.float32)
    start = (-room.ctypes.data % 64 + offset) // 4
    array = room[start : start + values.size]
    array[:] = values
    assert array.ctypes.data % 64 == offset
    return array


@pytest.fixture(scope="module")
def add_4096(tmp_path_factory):
    return _iree_compile(ADD_4096, tmp_path_factory.mktemp("add_4096") / "add.vmfb")


def test_array_arguments_aligned_or_not_give_iree_runtimes_results(add_4096):
    """A 64-byte aligned array goes to the program in place (IREE's import of a host
    allocation), a misaligned one as a copy (IREE's import refuses it): the same results as
    iree.runtime (which copies every array), never sharing memory with an argument."""
    values = np.linspace(-3, 5, 4096, dtype=np.float32)
    ours = pactum.iree.load(add_4096, device="local-sync")
    theirs = _iree_module(add_4096)
    for offset in (0, 16):
        a = _aligned_floats(values, offset)
        b = _aligned_floats(values[::-1].copy(), offset)
        got = ours.add(a, b)
        np.testing.assert_array_equal(got, _host(theirs.add(a, b)))
        assert not np.shares_memory(got, a) and not np.shares_memory(got, b)
        np.testing.assert_array_equal(a, values)


def test_read_only_arrays_are_passed_as_copies_as_iree_runtime_takes_them(add_4096):
    """DLPack cannot mark memory read-only (NumPy refuses to export it): pactum copies a
    read-only array, so no program can write it, where iree.runtime copies every array."""
    values = np.linspace(0, 1, 4096, dtype=np.float32)
    read_only = _aligned_floats(values)
    read_only.flags.writeable = False
    frozen = np.frombuffer(values.tobytes(), np.float32)  # over immutable bytes
    ours = pactum.iree.load(add_4096, device="local-sync")
    theirs = _iree_module(add_4096)
    np.testing.assert_array_equal(ours.add(read_only, frozen), _host(theirs.add(read_only, frozen)))
    np.testing.assert_array_equal(read_only, values)


DOUBLE_IN_PLACE = """
func.func @double_in_place(%arg0: !hal.buffer_view) -> !hal.buffer_view {
  %t = hal.tensor.import %arg0 : !hal.buffer_view -> tensor<4096xf32>
  %r = arith.addf %t, %t : tensor<4096xf32>
  %a = hal.tensor.alias %r : tensor<4096xf32> to %arg0 : !hal.buffer_view
  %o = hal.tensor.export %a : tensor<4096xf32> -> !hal.buffer_view
  return %o : !hal.buffer_view
}
"""


def test_a_program_writing_its_argument_writes_an_aligned_array_never_a_copied_one(tmp_path):
    """A program with an in-place result (`hal.tensor.alias`) writes its argument's memory: an
    aligned writable array is that memory (IREE's import of a host allocation), a misaligned
    one (IREE's import refuses it) and a read-only one go as copies, as iree.runtime passes
    every array. The results are iree.runtime's."""
    path = _iree_compile(DOUBLE_IN_PLACE, tmp_path / "double.vmfb")
    values = np.arange(4096, dtype=np.float32) - 100.5
    ours = pactum.iree.load(path, device="local-sync")
    theirs = _iree_module(path)
    expected = _host(theirs.double_in_place(values.copy()))
    np.testing.assert_array_equal(expected, values * 2)
    imported = _aligned_floats(values)
    np.testing.assert_array_equal(ours.double_in_place(imported), expected)
    np.testing.assert_array_equal(imported, values * 2)
    misaligned = _aligned_floats(values, 16)
    np.testing.assert_array_equal(ours.double_in_place(misaligned), expected)
    np.testing.assert_array_equal(misaligned, values)
    read_only = _aligned_floats(values)
    read_only.flags.writeable = False
    np.testing.assert_array_equal(ours.double_in_place(read_only), expected)
    np.testing.assert_array_equal(read_only, values)
