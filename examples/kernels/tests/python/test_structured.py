"""Structured calls from Python: pactum's IREE binder (`pactum::iree::structured`), built by
the kernels library's `iree_bind`, wraps a Python function taking flat arguments into one
taking nested dicts and lists of NumPy arrays, called through the OFFICIAL tvm_ffi runtime.

Keyword arguments use tvm_ffi's KWARGS protocol (`f(*args, KWARGS, "name", value, ...)`).
"""

import json
import os

import numpy as np
import pytest
import tvm_ffi
from tvm_ffi.core import KWARGS


@pytest.fixture(scope="module")
def mod():
    return tvm_ffi.load_module(os.environ["PACTUM_KERNELS_LIB"])


def call(function, *args, **kwargs):
    """Calls a packed function with keyword arguments, the tvm_ffi way."""
    packed = list(args)
    if kwargs:
        packed.append(KWARGS)
        for name, value in kwargs.items():
            packed += [name, value]
    return function(*packed)


def abi(args, results):
    return json.dumps({"a": args, "r": results, "v": 1}, separators=(",", ":"))


F32_4 = ["ndarray", "f32", 1, 4]


def test_a_dict_argument_arrives_as_its_slots_and_a_dict_result_is_rebuilt(mod):
    signature = abi(
        [["sdict", ["bias", F32_4], ["n", "i32"]], ["named", "scale", F32_4]],
        [["sdict", ["out", F32_4], ["n_squared", "i32"]]],
    )
    received = []

    def flat(slots, scale):
        received.append((type(slots), len(slots)))
        bias, n = slots
        return [np.from_dlpack(bias) * np.from_dlpack(scale), n * n]

    f = mod.iree_bind({"iree.abi": signature}, flat, None, False)
    bias = np.arange(4, dtype=np.float32)
    result = call(f, {"n": 3, "bias": bias}, scale=np.full(4, 2, dtype=np.float32))
    assert received == [(tvm_ffi.Array, 2)]
    assert list(result.keys()) == ["out", "n_squared"]
    np.testing.assert_array_equal(np.from_dlpack(result["out"]), [0, 2, 4, 6])
    assert result["n_squared"] == 9


def test_nested_dicts_and_lists_of_numpy_arrays_pass_without_copies(mod):
    # {"encoder": {"w": [matrix, vector], "b": vector}, "decoder": [vector, ...]}
    signature = abi(
        [
            [
                "sdict",
                [
                    "encoder",
                    [
                        "sdict",
                        ["w", ["slist", ["ndarray", "f32", 2, None, 3], ["ndarray", "f32", 1, 3]]],
                        ["b", ["ndarray", "f32", 1, None]],
                    ],
                ],
                ["decoder", ["py_homogeneous_list", ["ndarray", "f32", 1, None]]],
            ]
        ],
        ["f32"],
    )

    def flat(model):
        encoder, decoder = model
        w, b = encoder
        matrix, vector = w
        # Write through the flat argument: the caller's array must see it (zero copy).
        np.from_dlpack(matrix)[0, 0] = 100.0
        total = float(np.from_dlpack(matrix).sum() + np.from_dlpack(vector).sum())
        total += float(np.from_dlpack(b).sum())
        total += sum(float(np.from_dlpack(v).sum()) for v in decoder)
        return total

    f = mod.iree_bind({"iree.abi": signature}, flat, None, False)
    matrix = np.ones((2, 3), dtype=np.float32)
    model = {
        "decoder": [np.full(2, 1.5, dtype=np.float32), np.full(5, 2, dtype=np.float32)],
        "encoder": {"b": np.ones(7, dtype=np.float32), "w": [matrix, np.ones(3, dtype=np.float32)]},
    }
    total = f(model)
    assert matrix[0, 0] == 100.0
    assert total == pytest.approx(100 + 5 + 3 + 7 + 3 + 10)


def test_mismatches_name_the_path_and_raise_the_matching_exception(mod):
    signature = abi(
        ["i32", ["sdict", ["w", ["slist", "i32", "i32", ["ndarray", "f32", 2, None, None]]]]],
        [],
    )
    calls = []
    f = mod.iree_bind({"iree.abi": signature}, lambda *a: calls.append(a), None, False)
    with pytest.raises(TypeError, match=r'^args\[1\]\["w"\]\[2\]: expected ndarray<f32, 2>, got int$'):
        f(1, {"w": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"ndarray<f32, \[4\]>: rank 1 does not match the expected rank 2"):
        f(1, {"w": [1, 2, np.zeros(4, dtype=np.float32)]})
    with pytest.raises(TypeError, match=r'expected ndarray<f32, 2>, got ndarray<f64, \[1, 1\]> \(casting float64 to float32 needs allow_casts\)'):
        f(1, {"w": [1, 2, np.zeros((1, 1))]})
    with pytest.raises(KeyError, match=r'args\[1\]: missing key \\?"w\\?"'):
        f(1, {"v": 1})
    with pytest.raises(ValueError, match=r"^args\[0\]: 4294967296 does not fit i32$"):
        f(2**32, {"w": [1, 2, np.zeros((1, 1), dtype=np.float32)]})
    with pytest.raises(TypeError, match=r"^takes 2 positional arguments but 3 were given$"):
        f(1, 2, 3)
    assert calls == []
    f(1, {"w": [1, 2, np.zeros((1, 1), dtype=np.float32)]})
    assert len(calls) == 1


def test_casts_and_strided_arrays_are_converted(mod):
    signature = abi([["ndarray", "f32", 2, 2, 3]], [["ndarray", "f32", 2, 2, 3]])
    f = mod.iree_bind({"iree.abi": signature}, lambda x: x, None, True)
    doubles = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = np.from_dlpack(f(doubles))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, doubles)
    strided = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]
    out = np.from_dlpack(f(strided))
    assert out.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(out, strided)


def test_named_arguments_are_keyword_only(mod):
    signature = abi(["i32", ["named", "k", "i32"]], ["i32"])
    f = mod.iree_bind({"iree.abi": signature}, lambda a, k: a * 10 + k, None, False)
    assert call(f, 4, k=2) == 42
    with pytest.raises(TypeError, match="missing keyword argument `k`"):
        f(4)
    with pytest.raises(TypeError, match="unexpected keyword argument `q`"):
        call(f, 4, k=2, q=1)


def test_an_exception_in_the_flat_function_keeps_its_type(mod):
    signature = abi(["i32"], ["i32"])

    def flat(x):
        raise ValueError(f"bad {x}")

    f = mod.iree_bind({"iree.abi": signature}, flat, None, False)
    with pytest.raises(ValueError, match="^bad 7$"):
        f(7)


def test_sip_structures_bind_positional_and_keyword_leaves(mod):
    # Inputs [ {bar: raw 1, foo: raw 0}, raw 2 ]; results [raw 0, raw 1]; raw types from `f`.
    attributes = {
        "sipv": 1,
        "sip": "I31!S27!k0D17!K4!bar_1K4!foo_0k1_2R12!S9!k0_0k1_1",
        "fv": 1,
        "f": "I17!S3!t7S3!t7B4!d-1R11!S3!t7B3!d2",
    }
    received = []

    def flat(foo, bar, x):
        received.append((foo, bar, np.from_dlpack(x).shape))
        return [foo - bar, np.zeros(2, dtype=np.float32)]

    f = mod.iree_bind(attributes, flat, None, False)
    difference, zeros = f({"foo": 10, "bar": 3}, np.ones(5, dtype=np.float32))
    assert received == [(10, 3, (5,))]
    assert difference == 7
    assert np.from_dlpack(zeros).shape == (2,)


def test_a_result_allocator_pre_allocates_outputs(mod):
    # (Buffer<float32[?]>) -> (Buffer<float32[?]>): the allocator gets the dynamic extent.
    attributes = {"fv": 1, "f": "I7!B4!d-1R7!B4!d-1", "fbr": "allocate"}
    asked = []

    def allocate(dims):
        asked.append(list(dims))
        return [np.empty(dims[0], dtype=np.float32)]

    def flat(x, out):
        np.from_dlpack(out)[:] = np.from_dlpack(x) + 1

    f = mod.iree_bind(attributes, flat, allocate, False)
    result = np.from_dlpack(f(np.arange(3, dtype=np.float32)))
    assert asked == [[3]]
    np.testing.assert_array_equal(result, [1, 2, 3])


def test_without_a_signature_dicts_are_ordered_by_key(mod):
    f = mod.iree_bind({}, lambda values: list(values), None, False)
    assert list(f({"zeta": 1, "alpha": 2, "mid": 3})) == [2, 3, 1]
    with pytest.raises(TypeError, match="keyword arguments need a signature"):
        call(f, 1, k=2)


def test_bad_attributes_are_rejected_with_the_key(mod):
    with pytest.raises(ValueError, match=r"^attribute `iree.abi`: iree.abi JSON: at byte \d+: "):
        mod.iree_bind({"iree.abi": '{"a":[["ndarray"]],"r":[]}'}, lambda: None, None, False)
    with pytest.raises(ValueError, match="^attribute `f`: raw signature: "):
        mod.iree_bind({"f": "R1!"}, lambda: None, None, False)
