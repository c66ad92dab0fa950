"""MLIR-compiled functions called from Python: the kernels library's `mlir_load` turns a
function of a library lowered by MLIR 22 (crates/pactum-mlir/tests/mlir) into a tvm_ffi Function,
called with NumPy arrays through the OFFICIAL tvm_ffi runtime. Memref arguments see the
arrays' own memory (no copy); memref results come back as tensors NumPy reads without a copy.
"""

import json
import os
import pathlib

import numpy as np
import pytest
import tvm_ffi

SOURCES = pathlib.Path(__file__).resolve().parents[4] / "crates" / "pactum-mlir" / "tests" / "mlir"


@pytest.fixture(scope="module")
def mod():
    return tvm_ffi.load_module(os.environ["PACTUM_KERNELS_LIB"])


def declaration(stem, name):
    """The func.func header of @name, as written in the test source."""
    for line in (SOURCES / f"{stem}.mlir").read_text().splitlines():
        if f"func.func @{name}(" in line:
            return line.strip().rstrip("{").rstrip()
    raise KeyError(name)


def load(mod, name, stem="memref_core", copying=False):
    library = os.path.join(os.environ["PACTUM_MLIR_LIBS"], f"lib{stem}.so")
    loader = mod.mlir_load_copying if copying else mod.mlir_load
    return loader(library, declaration(stem, name))


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


def test_returned_allocations_reach_numpy_without_a_copy(mod):
    result = load(mod, "alloc_2d")(3, 4)
    array = np.from_dlpack(result)
    assert array.dtype == np.int32 and array.shape == (3, 4)
    assert array[2, 3] == 203
    # The NumPy array views the tensor's memory: the same address.
    assert array.ctypes.data == result.data_ptr()
    unranked = np.from_dlpack(load(mod, "alloc_unranked")(3, 2.5))
    np.testing.assert_array_equal(unranked, [2.5, 2.5, 2.5])


def test_a_view_result_outlives_its_argument(mod):
    m = np.arange(15, dtype=np.float32).reshape(3, 5)
    view = load(mod, "inner_view")(m)
    del m
    np.testing.assert_array_equal(np.from_dlpack(view), [[5, 7, 9], [10, 12, 14]])


def test_scalars_of_every_kind(mod):
    assert list(load(mod, "divmod")(-7, 2)) == [-3, -1]
    d, b2, c3, a1, e = load(mod, "mixed")(41, 21, 1.5, 2.25, 100, np.array([0.5, 9.0]))
    assert (d, b2, c3, a1, e) == (2.75, 42, 4.5, 42, 102)
    assert load(mod, "ints")(-1, -300, 200, -70000, True) == -69101
    zero_d = load(mod, "zero_d")
    a, b = np.array(3.0, dtype=np.float32), np.array(4.0, dtype=np.float32)
    assert zero_d(a, b) == 7.0 and b == 6.0
    assert np.from_dlpack(load(mod, "zero_d_result")(3.0)) == 9.0


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


def test_bad_declarations_and_missing_functions(mod):
    library = os.path.join(os.environ["PACTUM_MLIR_LIBS"], "libmemref_core.so")
    with pytest.raises(ValueError, match="at byte"):
        mod.mlir_load(library, "func.func @add_one(%a: memref<?xf33>)")
    with pytest.raises(AttributeError, match="has no function `nope`"):
        mod.mlir_load(library, "func.func @nope(%a: i64) -> i64")
    with pytest.raises(RuntimeError, match="cannot load"):
        mod.mlir_load("/nonexistent/lib.so", "func.func @f() -> ()")


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
                args.append(mod.bitcast(array, "bfloat16"))
            else:
                array = np.array(arg["data"], dtype=arg["dtype"]).reshape(arg["shape"])
                args.append(array)
            arrays[index] = array
        else:
            args.append(arg)
    result = function(*args)
    expected = call["results"]
    results = [] if result is None else [result] if len(expected) == 1 else list(result)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        if isinstance(want, dict):
            array = np.from_dlpack(got)
            assert str(array.dtype) == want["dtype"] and list(array.shape) == want["shape"]
            np.testing.assert_allclose(array.reshape(-1), want["data"], rtol=1e-6)
        else:
            assert got == pytest.approx(want, rel=1e-6)
    for index, want in call.get("after", {}).items():
        array = arrays[int(index)]
        if call["args"][int(index)]["dtype"] == "bfloat16":
            array = bf16_values(array)
        np.testing.assert_allclose(array.reshape(-1), want, rtol=1e-6)
