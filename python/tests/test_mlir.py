"""pactum.mlir: functions of libraries lowered by MLIR 22 (crates/pactum-mlir/tests/mlir, built
by the `mlir_libs` fixture) called with NumPy arrays through the official tvm_ffi runtime.
Memref arguments see the arrays' own memory (no copy); memref results come back as NumPy
arrays over MLIR's allocations. Results are compared with NumPy.
"""

import gc
import json

import numpy as np
import pytest
import tvm_ffi

import pactum
from conftest import MLIR_SOURCES as SOURCES


def declaration(stem, name):
    """The func.func header of @name, as written in the test source."""
    for line in (SOURCES / f"{stem}.mlir").read_text().splitlines():
        if f"func.func @{name}(" in line:
            return line.strip().rstrip("{").rstrip()
    raise KeyError(name)


_LIBRARIES = {}


@pytest.fixture(scope="module")
def mod(mlir_libs):
    """Loads functions of the test libraries: `mod(name, stem=..., copying=...)`."""

    def load(name, stem="memref_core", copying=False):
        library = _LIBRARIES.get(stem)
        if library is None:
            library = _LIBRARIES[stem] = pactum.mlir.load(mlir_libs / f"lib{stem}.so")
        return library.function(declaration(stem, name), layout_mismatch="copy" if copying else "raise")

    return load


def load(mod, name, stem="memref_core", copying=False):
    return mod(name, stem=stem, copying=copying)


def test_add_one_writes_into_the_numpy_array_in_place(mod):
    add_one = load(mod, "add_one")
    x = np.array([1.0, 2.0, 3.0, 4.5], dtype=np.float32)
    y = np.zeros(4, dtype=np.float32)
    assert add_one(x, y) is None
    np.testing.assert_array_equal(y, [2.0, 3.0, 4.0, 5.5])


def test_two_d_and_strided_views_of_numpy_arrays(mod):
    scale = load(mod, "scale_2d")
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    scale(m, 2.0)
    np.testing.assert_array_equal(m, [[0, 2, 4], [6, 8, 10]])

    scale_strided = load(mod, "scale_strided")
    base = np.ones((6, 8), dtype=np.float32)
    window = base[1:3, 1:7:2]  # offset 9, strides [8, 2] in elements
    scale_strided(window, 3.0)
    expected = np.ones((6, 8), dtype=np.float32)
    expected[1:3, 1:7:2] = 3.0
    np.testing.assert_array_equal(base, expected)

    total = load(mod, "sum_strided_1d")(np.arange(10, dtype=np.float64)[1::3])
    assert total == 1 + 4 + 7


def test_returned_allocations_are_numpy_arrays_owning_mlirs_memory(mod):
    alloc = load(mod, "alloc_2d")
    array = alloc(3, 4)
    assert isinstance(array, np.ndarray)
    assert array.dtype == np.int32 and array.shape == (3, 4)
    np.testing.assert_array_equal(array, np.add.outer(np.arange(3) * 100, np.arange(4)))
    # NumPy views MLIR's buffer (no copy): the array's data is the tensor's.
    raw = alloc.ffi_function(3, 4)
    assert isinstance(raw, tvm_ffi.Tensor)
    assert np.from_dlpack(raw).ctypes.data == raw.data_ptr()
    unranked = load(mod, "alloc_unranked")(3, 2.5)
    np.testing.assert_array_equal(unranked, np.full(3, 2.5))


def test_many_returned_allocations_are_freed(mod):
    """100k results of 64 KiB each would be 6.4 GB if MLIR's malloc were never freed."""
    import resource

    alloc = load(mod, "alloc_2d")
    for _ in range(2000):
        alloc(128, 128)
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(100_000):
        alloc(128, 128)
    gc.collect()
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 50_000, f"max RSS grew by {grown_kib} KiB over 100k results"


def test_a_view_result_outlives_its_argument(mod):
    m = np.arange(15, dtype=np.float32).reshape(3, 5)
    expected = m[1:, ::2].copy()
    view = load(mod, "inner_view")(m)
    del m
    gc.collect()
    np.testing.assert_array_equal(view, expected)


def test_scalars_of_every_kind(mod):
    assert list(load(mod, "divmod")(-7, 2)) == [-3, -1]
    d, b2, c3, a1, e = load(mod, "mixed")(41, 21, 1.5, 2.25, 100, np.array([0.5, 9.0]))
    assert (d, b2, c3, a1, e) == (2.75, 42, 4.5, 42, 102)
    assert load(mod, "ints")(-1, -300, 200, -70000, True) == -69101
    zero_d = load(mod, "zero_d")
    a, b = np.array(3.0, dtype=np.float32), np.array(4.0, dtype=np.float32)
    assert zero_d(a, b) == 7.0 and b == 6.0
    assert load(mod, "zero_d_result")(3.0) == 9.0


def test_half_precision(mod):
    axpy = load(mod, "f16_axpy", stem="memref_half")
    x = np.array([1, 2, 3], dtype=np.float16)
    y = np.full(3, 0.5, dtype=np.float16)
    assert axpy(2.0, x, y) == 13.5
    np.testing.assert_array_equal(y, np.array([2.5, 4.5, 6.5], dtype=np.float16))


def test_rejections_raise_python_exceptions(mod):
    add_one = load(mod, "add_one")
    out = np.zeros(4, dtype=np.float32)
    with pytest.raises(TypeError, match="argument 0: memref<\\?xf32> needs dtype float32, got a float64"):
        add_one(np.zeros(4), out)
    with pytest.raises(ValueError, match="needs rank 1, got a rank-2"):
        add_one(np.zeros((2, 2), dtype=np.float32), out)
    with pytest.raises(ValueError, match="identity layout"):
        add_one(np.zeros(8, dtype=np.float32)[::2], out)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        add_one(out)
    with pytest.raises(ValueError, match="needs extent 2 in dimension 0"):
        load(mod, "static_mat")(np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="does not fit i8"):
        load(mod, "ints")(300, 0, 0, 0, False)


def test_copying_loader_handles_a_transposed_array(mod):
    scale = load(mod, "scale_2d", copying=True)
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    scale(base.T, 10.0)
    np.testing.assert_array_equal(base, np.arange(6).reshape(2, 3) * 10)


def test_bad_declarations_and_missing_functions(mlir_libs):
    library = pactum.mlir.load(mlir_libs / "libmemref_core.so")
    with pytest.raises(ValueError, match="at byte"):
        library.function("func.func @add_one(%a: memref<?xf33>)")
    with pytest.raises(AttributeError, match="has no function `nope`"):
        library.function("func.func @nope(%a: i64) -> i64")
    with pytest.raises(ValueError, match="layout_mismatch"):
        library.function("func.func @add_one(%a: memref<?xf32>, %b: memref<?xf32>)", layout_mismatch="maybe")
    with pytest.raises(RuntimeError, match="cannot load"):
        pactum.mlir.load("/nonexistent/lib.so")


def test_function_attributes(mlir_libs):
    library = pactum.mlir.load(mlir_libs / "libmemref_core.so")
    f = library.function(declaration("memref_core", "mixed"))
    assert f.name == "mixed"
    assert f.signature == "(i32, i64, f32, f64, index, memref<?xf64>) -> (f64, i64, f32, i32, index)"
    assert f.result_types == ("f64", "i64", "f32", "i32", "index")
    assert "@mixed" in repr(f) and "libmemref_core.so" in repr(library)


def test_tvm_ffi_tensors_and_torch_tensors_are_accepted(mod):
    add_one = load(mod, "add_one")
    x = np.array([1.0, 2.0], dtype=np.float32)
    y = np.zeros(2, dtype=np.float32)
    add_one(tvm_ffi.from_dlpack(x), tvm_ffi.from_dlpack(y))
    np.testing.assert_array_equal(y, x + 1)
    torch = pytest.importorskip("torch")
    tx, ty = torch.tensor([1.0, 5.0]), torch.zeros(2)
    add_one(tx, ty)
    assert ty.tolist() == [2.0, 6.0]


TABLE = json.loads((SOURCES / "calls.json").read_text())["calls"]


def bf16_bits(values):
    """bfloat16 bit patterns of exactly representable values (the top half of float32)."""
    return (np.array(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("call", TABLE, ids=[c["function"] for c in TABLE])
def test_every_function_of_the_call_table(mod, call):
    function = load(mod, call["function"], stem=call["file"])
    args, arrays = [], {}
    for index, arg in enumerate(call["args"]):
        if isinstance(arg, dict):
            if arg["dtype"] == "bfloat16":
                # NumPy has no bfloat16: the bits travel as uint16, viewed as bfloat16.
                array = bf16_bits(arg["data"]).reshape(arg["shape"])
                args.append(pactum.mlir.bitcast(array, "bfloat16"))
            else:
                array = np.array(arg["data"], dtype=arg["dtype"]).reshape(arg["shape"])
                args.append(array)
            arrays[index] = array
        else:
            args.append(arg)
    result = function(*args)
    expected = call["results"]
    assert result is None or len(expected) == 1 or isinstance(result, tuple)
    results = [] if result is None else [result] if len(expected) == 1 else list(result)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        if isinstance(want, dict):
            array = np.from_dlpack(got) if isinstance(got, tvm_ffi.Tensor) else got
            assert isinstance(got, np.ndarray) or want["dtype"] == "bfloat16"
            assert str(array.dtype) == want["dtype"] and list(array.shape) == want["shape"]
            np.testing.assert_allclose(array.reshape(-1), want["data"], rtol=1e-6)
        else:
            assert got == pytest.approx(want, rel=1e-6)
    for index, want in call.get("after", {}).items():
        array = arrays[int(index)]
        if call["args"][int(index)]["dtype"] == "bfloat16":
            array = bf16_values(array)
        np.testing.assert_allclose(array.reshape(-1), want, rtol=1e-6)
