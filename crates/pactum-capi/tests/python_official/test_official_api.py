"""The official apache-tvm-ffi package's public API, unmodified, on the library under test."""

import copy
import os

import numpy as np
import pytest
import tvm_ffi

from conftest import LIB, loaded_libtvm_ffi


def test_the_library_under_test_is_loaded():
    path = loaded_libtvm_ffi()
    expected = os.environ.get("PACTUM_EXPECT_LIB")
    if expected:
        assert os.path.samefile(path, expected), path
    assert ("site-packages" in path) == (LIB == "official"), path


def test_version_and_global_names():
    assert tvm_ffi.__version__.startswith("0.1.15")
    names = set(tvm_ffi.registry.list_global_func_names())
    for name in ["ffi.Array", "ffi.Map", "ffi.FunctionListGlobalNamesFunctor", "ffi.ModuleLoadFromFile"]:
        assert name in names


# Containers


def test_array_from_python():
    a = tvm_ffi.convert([1, 2.5, "x", None])
    assert isinstance(a, tvm_ffi.Array)
    assert len(a) == 4
    assert a[0] == 1 and a[1] == 2.5 and a[2] == "x" and a[3] is None
    assert a[-1] is None
    assert list(a) == [1, 2.5, "x", None]
    assert "x" in a and 7 not in a


def test_array_nested_and_slicing():
    a = tvm_ffi.Array([1, [2, 3], {"k": 4}])
    assert isinstance(a[1], tvm_ffi.Array) and list(a[1]) == [2, 3]
    assert isinstance(a[2], tvm_ffi.Map) and a[2]["k"] == 4
    assert list(tvm_ffi.Array([0, 1, 2, 3])[1:3]) == [1, 2]


def test_array_index_error():
    with pytest.raises(IndexError):
        tvm_ffi.Array([1])[5]


def test_list_mutation():
    lst = tvm_ffi.List([1, 2])
    lst.append(3)
    lst.insert(0, 0)
    assert list(lst) == [0, 1, 2, 3]
    assert lst.pop() == 3
    lst[0] = "zero"
    assert list(lst) == ["zero", 1, 2]
    del lst[1]
    assert list(lst) == ["zero", 2]
    lst.clear()
    assert len(lst) == 0


def test_map_from_python():
    m = tvm_ffi.convert({"a": 1, "b": [2]})
    assert isinstance(m, tvm_ffi.Map)
    assert len(m) == 2
    assert m["a"] == 1 and list(m["b"]) == [2]
    assert "a" in m and "z" not in m
    assert sorted(m.keys()) == ["a", "b"]
    assert dict(m.items())["a"] == 1
    assert m.get("z", 9) == 9
    with pytest.raises(KeyError):
        m["z"]


def test_dict_mutation():
    d = tvm_ffi.Dict({"a": 1})
    d["b"] = 2
    assert len(d) == 2 and d["b"] == 2
    del d["a"]
    assert list(d.keys()) == ["b"]
    d[3] = "int key"
    assert d[3] == "int key"


def test_container_repr():
    assert repr(tvm_ffi.convert([1, 2, "x"])) == '(1, 2, "x")'
    assert repr(tvm_ffi.convert({"a": 1})) == '{"a": 1}'
    assert repr(tvm_ffi.List([1, 2])) == "[1, 2]"
    # The official strings, nested: Array as a tuple (a one-element one with its comma), Map and
    # Dict as dicts, strings double-quoted, None.
    assert repr(tvm_ffi.convert([1, [2.5, None], {"k": "v"}])) == '(1, (2.5, None), {"k": "v"})'
    assert repr(tvm_ffi.convert([])) == "()"
    assert repr(tvm_ffi.convert({})) == "{}"
    assert repr(tvm_ffi.List([1, "a"])) == '[1, "a"]'
    assert repr(tvm_ffi.Dict({"a": [1]})) == '{"a": (1,)}'
    assert repr(tvm_ffi.Map({1: 2, "b": None})) == '{1: 2, "b": None}'


REPR_PRINT = tvm_ffi.get_global_func("ffi.ReprPrint")


def test_repr_print_primitives_and_floats():
    # Floats as C's %g: six significant digits, exponents with a sign and two digits.
    floats = [1.0, 2.5, 0.1, 1e20, 1e16, 123456789.0, 123456.0, 123456.7, 1e6, 1.5e-7, 1e-5, 1e-4]
    assert repr(tvm_ffi.convert(floats)) == (
        "(1, 2.5, 0.1, 1e+20, 1e+16, 1.23457e+08, 123456, 123457, 1e+06, 1.5e-07, 1e-05, 0.0001)"
    )
    assert repr(tvm_ffi.convert([float("inf"), float("-inf"), float("nan"), -0.0, 0.1 + 0.2])) == (
        "(inf, -inf, nan, -0, 0.3)"
    )
    assert repr(tvm_ffi.convert([True, False, None, -3, 2**62, -(2**63)])) == (
        "(True, False, None, -3, 4611686018427387904, -9223372036854775808)"
    )
    assert REPR_PRINT(None) == "None"
    assert REPR_PRINT(True) == "True"
    assert REPR_PRINT(1) == "1"
    assert REPR_PRINT(1.5) == "1.5"
    assert REPR_PRINT(tvm_ffi.dtype("float32")) == "float32"
    assert REPR_PRINT(tvm_ffi.Device("cuda", 1)) == "cuda:1"


def test_repr_print_strings_and_bytes():
    assert REPR_PRINT("abc") == '"abc"'
    assert REPR_PRINT("x" * 40) == '"' + "x" * 40 + '"'
    strings = ['a"b', "\\", "\n\t\r", "\b\f\v\a\x00\x1f\x7f ~'/", "\u00e9\u2028", "\U0001f600"]
    assert repr(tvm_ffi.convert(strings)) == (
        r'("a\"b", "\\", "\n\t\r", "\x08\x0c\x0b\x07\x00\x1f\x7f ~' + "'" + r'/", "\u00e9\u2028", "\U0001f600")'
    )
    assert REPR_PRINT(b"ab") == 'b"ab"'
    assert REPR_PRINT(b"\x00\n\"\\' ~\x7f\x80\xff") == r'b"\x00\x0a\x22\x5c' + "'" + r' ~\x7f\x80\xff"'


def test_repr_print_containers_shapes_and_tensors():
    assert REPR_PRINT(tvm_ffi.Shape((1, 2, 3))) == "Shape(1, 2, 3)"
    assert REPR_PRINT(tvm_ffi.Shape(())) == "Shape()"
    assert repr(tvm_ffi.convert([tvm_ffi.Shape((5,))])) == "(Shape(5),)"
    assert repr(tvm_ffi.convert([1, [2, [3]]])) == "(1, (2, (3,)))"
    assert repr(tvm_ffi.List([[1]])) == "[(1,)]"
    assert repr(tvm_ffi.List([])) == "[]"
    assert repr(tvm_ffi.Dict({})) == "{}"
    # Map and Dict keep insertion order, nested too; any key type.
    assert repr(tvm_ffi.convert({"b": 1, "a": {"z": 1, "y": 2}})) == '{"b": 1, "a": {"z": 1, "y": 2}}'
    assert repr(tvm_ffi.convert({1: 2, "b": None, 3.5: []})) == '{1: 2, "b": None, 3.5: ()}'
    shared = tvm_ffi.convert([1])
    assert repr(tvm_ffi.convert([shared, shared])) == "((1,), (1,))"
    # A container met again inside itself prints as `...`.
    lst = tvm_ffi.List([1])
    lst.append(lst)
    assert repr(lst) == "[1, ...]"
    d = tvm_ffi.Dict({})
    d["x"] = d
    assert repr(d) == '{"x": ...}'
    t = tvm_ffi.from_dlpack(np.arange(6, dtype="float32").reshape(2, 3))
    assert REPR_PRINT(t) == "float32[2, 3]@cpu:0"
    assert repr(tvm_ffi.convert([tvm_ffi.from_dlpack(np.zeros((), dtype="int64"))])) == "(int64[]@cpu:0,)"


def test_repr_print_other_objects():
    assert REPR_PRINT(tvm_ffi.get_global_func("ffi.String")) == "ffi.Function"
    assert repr(tvm_ffi.convert([lambda: 1])) == "(ffi.Function,)"
    assert REPR_PRINT(object()) == "ffi.OpaquePyObject"
    assert REPR_PRINT(tvm_ffi.get_global_func("ffi.GetInvalidObject")()) == "<MISSING>"
    assert REPR_PRINT(tvm_ffi.get_global_func("ffi.GetKwargsObject")()) == "<KWARGS>"


def test_container_equality():
    assert tvm_ffi.convert([1, 2]) == tvm_ffi.convert([1, 2])
    assert tvm_ffi.convert([1, 2]) != tvm_ffi.convert([1, 3])
    assert tvm_ffi.convert({"a": 1}) == tvm_ffi.convert({"a": 1})
    assert tvm_ffi.convert([1, "x"]) == tvm_ffi.convert([1, "x"])


def test_container_hash():
    assert hash(tvm_ffi.convert([1, 2])) == hash(tvm_ffi.convert([1, 2]))
    # Python exposes the value; the official one (ffi.RecursiveHash), not Python's tuple hash.
    assert hash(tvm_ffi.convert([1, 2])) == 2823377144815479104


def test_container_copy():
    a = tvm_ffi.convert([1, [2]])
    assert list(copy.deepcopy(a)[1]) == [2]
    assert list(copy.copy(a)[1]) == [2]


# Strings, bytes, shapes


def test_string_bytes_shape():
    s = tvm_ffi.convert("hello world, a string longer than the small-string limit")
    assert isinstance(s, tvm_ffi.core.String) and s.startswith("hello")
    short = tvm_ffi.convert("ab")
    assert short == "ab"
    b = tvm_ffi.convert(b"\x00\x01bytes")
    assert isinstance(b, tvm_ffi.core.Bytes) and bytes(b) == b"\x00\x01bytes"
    shape = tvm_ffi.Shape((1, 2, 3))
    assert tuple(shape) == (1, 2, 3) and len(shape) == 3 and shape[-1] == 3
    echo = tvm_ffi.get_global_func("ffi.String")
    assert echo("x" * 100) == "x" * 100


# Functions and callbacks


def test_convert_python_callable():
    f = tvm_ffi.convert(lambda x, y: x * 10 + y)
    assert isinstance(f, tvm_ffi.Function)
    assert f(4, 2) == 42


def test_callback_receives_ffi_values():
    seen = []
    f = tvm_ffi.convert(lambda *args: seen.append(args) or len(args))
    assert f(1, "s", [1, 2], {"k": "v"}, None) == 5
    args = seen[0]
    assert args[0] == 1 and args[1] == "s" and list(args[2]) == [1, 2] and args[3]["k"] == "v"
    assert args[4] is None


def test_register_and_get_global_func():
    name = f"pactum_test.add_one_{LIB}"

    @tvm_ffi.register_global_func(name)
    def add_one(x):
        return x + 1

    f = tvm_ffi.get_global_func(name)
    assert f(41) == 42
    assert name in tvm_ffi.registry.list_global_func_names()
    tvm_ffi.registry.remove_global_func(name)
    assert tvm_ffi.get_global_func(name, allow_missing=True) is None


def test_function_passed_through_ffi():
    # A Python function travels through an FFI container and is called back.
    arr = tvm_ffi.Array([tvm_ffi.convert(lambda: "called")])
    assert arr[0]() == "called"


def test_global_func_metadata():
    meta = tvm_ffi.registry.get_global_func_metadata("ffi.ArraySize")
    assert "type_schema" in meta


# Errors


def test_error_from_python_callback_propagates():
    def fail(msg):
        raise ValueError(msg)

    f = tvm_ffi.convert(fail)
    with pytest.raises(ValueError, match="boom"):
        f("boom")


def test_error_kinds_round_trip_through_ffi():
    for kind in [TypeError, KeyError, IndexError, AttributeError, RuntimeError]:

        def fail(kind=kind):
            raise kind("from python")

        outer = tvm_ffi.convert(lambda g: g())
        with pytest.raises(kind, match="from python"):
            outer(tvm_ffi.convert(fail))


def test_error_backtrace_stops_at_the_ffi_boundary():
    # tvm_ffi makes a Python traceback frame of every backtrace line (~4 µs each): the native
    # part ends where Python's own frames begin, as the official backtrace_utils.h does.
    def fail():
        raise ValueError("boundary")

    with pytest.raises(ValueError) as info:
        tvm_ffi.convert(fail)()
    backtrace = info.value.__tvm_ffi_error__.backtrace
    assert "in fail" in backtrace
    for interpreter_frame in ["Py_RunMain", "_PyEval_EvalFrameDefault", "__libc_start_main"]:
        assert interpreter_frame not in backtrace
    assert len(backtrace.splitlines()) <= 8


def test_error_from_library_global():
    with pytest.raises(TypeError, match="Mismatched type"):
        tvm_ffi.get_global_func("ffi.ArraySize")("not an array")


def test_custom_error_kind():
    @tvm_ffi.register_error("PactumTestError")
    class PactumTestError(Exception):
        pass

    def fail():
        raise PactumTestError("custom")

    outer = tvm_ffi.convert(lambda g: g())
    with pytest.raises(PactumTestError, match="custom"):
        outer(tvm_ffi.convert(fail))


# DataType and Device


def test_dtype():
    d = tvm_ffi.dtype("float32")
    assert str(d) == "float32" and d.bits == 32 and d.lanes == 1
    assert tvm_ffi.dtype("int8x4").lanes == 4
    echo = tvm_ffi.convert(lambda x: x)
    assert str(echo(d)) == "float32"
    assert str(tvm_ffi.dtype("bfloat16")) == "bfloat16"


def test_custom_dtypes_resolve_through_the_registered_globals():
    # Unregistered: the error names the global the runtime asks (TVM registers it).
    with pytest.raises(ValueError, match="dtype.get_custom_type_code"):
        tvm_ffi.dtype("custom[pactum_half]16")
    codes = {"pactum_half": 150, "pactum_quarter": 151}
    names = {code: name for name, code in codes.items()}
    tvm_ffi.register_global_func("dtype.get_custom_type_code", lambda name: codes[name])
    tvm_ffi.register_global_func("dtype.get_custom_type_name", lambda code: names[code])
    half = tvm_ffi.dtype("custom[pactum_half]16x4")
    assert (half.type_code, half.bits, half.lanes) == (150, 16, 4)
    quarter = tvm_ffi.dtype("custom[pactum_quarter]")  # no bits: 32, as for other codes
    assert (quarter.type_code, quarter.bits, quarter.lanes) == (151, 32, 1)
    # The runtime's string form has the name and the lanes, never the bits; a round trip
    # through a function converts in the library.
    echo = tvm_ffi.convert(lambda x: x)
    assert str(echo(half)) == "custom[pactum_half]x4"
    assert str(echo(quarter)) == "custom[pactum_quarter]"
    with pytest.raises(ValueError, match="closing brace"):
        tvm_ffi.dtype("custom[pactum_half")


def test_device():
    dev = tvm_ffi.device("cuda:1")
    assert dev.dlpack_device_type() == 2 and dev.index == 1
    echo = tvm_ffi.convert(lambda x: x)
    back = echo(tvm_ffi.device("cpu", 0))
    assert back.dlpack_device_type() == 1 and back.index == 0


# Tensors via DLPack


def test_tensor_numpy_round_trip():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    t = tvm_ffi.from_dlpack(x)
    assert t.shape == (3, 4) and str(t.dtype) == "float32"
    y = np.from_dlpack(t)
    np.testing.assert_array_equal(x, y)
    x[0, 0] = 100.0  # shares memory
    assert np.from_dlpack(t)[0, 0] == 100.0


def test_tensor_through_callback():
    x = np.arange(5, dtype="int64")
    identity = tvm_ffi.convert(lambda t: t)
    out = identity(tvm_ffi.from_dlpack(x))
    np.testing.assert_array_equal(np.from_dlpack(out), x)


def test_tensor_strided_view_refused_or_kept():
    x = np.arange(10, dtype="int32")[::2]
    t = tvm_ffi.from_dlpack(x)
    np.testing.assert_array_equal(np.from_dlpack(t), x)


# Modules


def test_system_lib_module():
    mod = tvm_ffi.system_lib()
    assert isinstance(mod, tvm_ffi.Module)
    assert mod.kind == "library" or isinstance(mod.kind, str)


def test_load_missing_module_errors():
    with pytest.raises(RuntimeError):
        tvm_ffi.load_module("/nonexistent/pactum_missing_module.so")


# Structural equality and hashing, serialization


def test_structural_equal():
    assert tvm_ffi.structural_equal([1, 2], [1, 2])
    assert not tvm_ffi.structural_equal([1, 2], [1, 3])


def test_structural_hash():
    assert tvm_ffi.structural_hash([1, 2]) == tvm_ffi.structural_hash([1, 2])


def test_json_graph_round_trip():
    from tvm_ffi import serialization

    text = serialization.to_json_graph_str(tvm_ffi.convert([1, 2]))
    assert text == '{"root_index":2,"nodes":[{"type":"int","data":1},{"type":"int","data":2},{"type":"ffi.Array","data":[0,1]}]}'
    assert list(serialization.from_json_graph_str(text)) == [1, 2]


# The wheel's own testing library (C++ reflection: fields, methods, generated __ffi_init__)


def test_testing_library_object():
    import tvm_ffi.testing

    pair = tvm_ffi.testing.TestIntPair(1, 2)
    assert pair.a == 1 and pair.b == 2
    # ffi.ReprPrint of an object with reflected fields: its type key and fields.
    assert REPR_PRINT(pair) == "testing.TestIntPair(a=1, b=2)"
