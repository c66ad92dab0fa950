"""Structural hashing and equality (tvm_ffi.structural_hash, structural_equal,
get_first_structural_mismatch) of the official package on the library under test.

Hash values are the official library's (apache-tvm-ffi 0.1.15.post2), asserted literally: a
user may store them, so the same value must hash the same on either library.
"""

import math

import numpy as np
import pytest
import tvm_ffi

sh = tvm_ffi.structural_hash
se = tvm_ffi.structural_equal


def tensor(array):
    return tvm_ffi.from_dlpack(array)


# Hash values


def test_hash_of_plain_values():
    assert sh(None) == 2654435769
    assert sh(1) == 2654435835
    assert sh(-5) == 2654435829
    assert sh(True) == 2654435896
    assert sh(1.5) == 4609434221268138618
    assert sh(0.0) == 2654435962
    assert sh(-0.0) == 9223372039509211770
    assert sh(float("inf")) == 9218868439881841274
    assert sh(float("-inf")) == 18442240476736617082
    assert sh(2**63 - 1) == 9223372039509211641
    assert sh(-(2**63)) == 9223372039509211640
    assert sh(tvm_ffi.dtype("float32")) == 2654509817
    assert sh(tvm_ffi.dtype("int8")) == 2654503679
    assert sh(tvm_ffi.Device("cpu", 0)) == 2654436157
    assert sh(tvm_ffi.Device("cuda", 1)) == 6949403450


def test_every_nan_hashes_alike():
    quiet = float("nan")
    other = np.frombuffer(np.uint64(0x7FF0000000000123).tobytes(), dtype=np.float64)[0]
    assert math.isnan(other)
    assert sh(quiet) == sh(float(other)) == 9221120239695526522


def test_hash_of_strings_and_bytes():
    # Short strings are stored inline, longer ones on the heap: both hash by content.
    assert sh("abc") == 2660953131
    assert sh("abcdefg") == 4352227701
    assert sh("abcdefgh") == 3546921335
    assert sh("hello world!!") == 4293989463
    assert sh(b"ab") == 2654461713
    assert sh(b"abcdefg") == 29104510917598993
    assert sh(b"abcdefgh") == 3546921268
    assert sh(b"0123456789") == 4226898610


def test_hash_of_big_integers():
    assert sh(2**70) == 2654440898
    assert sh(-(2**70)) == 4801924417


def test_hash_of_containers():
    assert sh([1, 2]) == 2823322240268045181
    assert sh([1, [2, "x"], {"a": 1}]) == 3371116785955831277
    assert sh({"a": 1, "b": [2, 3]}) == 6586561902959890249
    assert sh(tvm_ffi.List([1, 2])) == 10056980416207041362
    assert sh(tvm_ffi.Dict({"a": 1})) == 11172378485020937918
    assert sh(tvm_ffi.Shape((2, 3))) == 284796581919864661
    assert sh([]) == sh(()) == 16435870007801073400
    assert sh({}) == sh(tvm_ffi.Map({})) == 11694236735499009312
    assert sh(tvm_ffi.Dict({})) == 15172656615495456774
    assert sh(tvm_ffi.List([])) == 15500799574071159530


def test_map_hash_does_not_depend_on_insertion_order():
    assert sh({"a": 1, "b": 2}) == sh({"b": 2, "a": 1}) == 8387368743028195433
    assert sh({1: "x", 2: "y"}) == 8387368694942120626
    assert sh({1.5: None}) == 3649982565410467074
    assert sh({None: 1}) == 8690073498391460785
    big = {str(i): i for i in range(20)}
    assert sh(big) == sh(dict(reversed(list(big.items())))) == 5115696525365215968


def test_hash_of_tensors_by_content():
    a = tensor(np.array([1, 2, 3], dtype="int32"))
    b = tensor(np.array([1, 2, 3], dtype="int32"))
    c = tensor(np.array([1, 2, 4], dtype="int32"))
    assert sh(a) == sh(b) == 5983373821351626769
    assert sh(c) == 5983373821351626770
    assert sh(c, skip_tensor_content=True) == 7239897801979768248
    f = tensor(np.arange(6, dtype="float32").reshape(2, 3))
    assert sh(f) == 9518699746703856482
    assert sh(f, skip_tensor_content=True) == 5983373821381510500
    assert sh(tensor(np.zeros((0,), "float32"))) == 5983373821351635300
    assert sh(tensor(np.zeros((2, 0), "float64"))) == 9518699745998305765


def test_hash_arguments():
    assert sh([1, 2], map_free_vars=True) == 2823322240268045181
    assert sh(1, True, True) == 2654435835


# Errors


def test_non_contiguous_tensor_content_is_refused():
    transposed = tensor(np.arange(6, dtype="float32").reshape(2, 3).T)
    with pytest.raises(RuntimeError) as info:
        sh(transposed)
    assert str(info.value) == "Check failed: (tensor.IsContiguous()) is false: Can only hash contiguous tensor"
    assert sh(transposed, skip_tensor_content=True) == 5983373821381513878
    with pytest.raises(RuntimeError) as info:
        se(transposed, tensor(np.arange(6, dtype="float32").reshape(3, 2)))
    assert str(info.value) == "Check failed: (lhs.IsContiguous()) is false: Can only compare contiguous tensor"


def test_types_without_structural_metadata_are_refused():
    message = "Type metadata is not set for type `ffi.Function`, so StructuralHash is not supported for this type"
    with pytest.raises(TypeError) as info:
        sh(lambda x: x)
    assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        se(tvm_ffi.convert(lambda x: x), tvm_ffi.convert(lambda x: 1))
    assert str(info.value) == message


# Equality


def test_equal_plain_values():
    assert se(1, 1) and not se(1, 2)
    assert not se(1, True)
    assert not se(0.0, -0.0)
    assert se(float("nan"), float("nan"))
    assert not se(float("nan"), 1.0) and not se(1.0, float("nan"))
    assert se(2**70, 2**70) and not se(2**70, 2**71)
    assert se(tvm_ffi.dtype("int8"), tvm_ffi.dtype("int8"))
    assert not se(tvm_ffi.Device("cuda", 1), tvm_ffi.Device("cuda", 0))


def test_equal_strings_and_bytes():
    assert se("abc", "abc") and se("hello world!!", "hello world!!")
    assert not se("abc", "abd")
    assert se(b"ab", b"ab") and se(b"0123456789", b"0123456789")
    assert not se("ab", b"ab")


def test_equal_nested_containers():
    assert se([1, 2], [1, 2])
    assert not se([1, 2], [1, 3])
    assert not se([1, 2], [1, 2, 3])
    assert se([1, "a", None], [1, "a", None])
    assert se({"x": [1, {"y": 2}]}, {"x": [1, {"y": 2}]})
    assert not se({"x": [1, {"y": 2}]}, {"x": [1, {"y": 3}]})
    assert se({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not se({"a": 1}, {"a": 1, "b": 2})
    # An Array and a List, or a Map and a Dict, are different kinds of container.
    assert not se([1, 2], tvm_ffi.List([1, 2]))
    assert not se({"a": 1}, tvm_ffi.Dict({"a": 1}))
    assert se(tvm_ffi.List([1, [2]]), tvm_ffi.List([1, [2]]))
    assert se(tvm_ffi.Dict({"a": [1]}), tvm_ffi.Dict({"a": [1]}))


def test_equal_shapes():
    assert se(tvm_ffi.Shape((1, 2)), tvm_ffi.Shape((1, 2)))
    assert not se(tvm_ffi.Shape((1, 2)), tvm_ffi.Shape((1, 3)))
    assert not se(tvm_ffi.Shape((1, 2)), tvm_ffi.Shape((1, 2, 1)))


def test_equal_tensors():
    a = tensor(np.array([1, 2, 3], dtype="int32"))
    b = tensor(np.array([1, 2, 3], dtype="int32"))
    c = tensor(np.array([1, 2, 4], dtype="int32"))
    assert se(a, b) and not se(a, c)
    assert se(a, c, skip_tensor_content=True)
    assert not se(tensor(np.zeros((2,), "float32")), tensor(np.zeros((2,), "int32")))
    assert not se(tensor(np.zeros((2,), "float32")), tensor(np.zeros((3,), "float32")))
