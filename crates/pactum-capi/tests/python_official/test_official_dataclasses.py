"""Reflected objects through the official package: the wheel's C++ testing types (fields,
generated ``__ffi_init__``), types defined from Python (``py_class``), enums (C++ and Python),
and objects made by reflection. Runs unchanged on the official library and on pactum's.

The expected texts are the official library's; the same assertions pass on both.
"""

import copy
from typing import Any, Optional

import pytest
import tvm_ffi
import tvm_ffi.testing as T
from tvm_ffi.dataclasses import EnumState, IntEnum, StrEnum, field, py_class

REPR_PRINT = tvm_ffi.get_global_func("ffi.ReprPrint")


def raises(exception, message, call):
    with pytest.raises(exception) as info:
        call()
    assert str(info.value) == message


# The runtime's own reflected types


def test_enum_state_starts_with_empty_containers():
    state = EnumState()
    assert isinstance(state.entries, tvm_ffi.List) and len(state.entries) == 0
    assert isinstance(state.indexes, tvm_ffi.Dict) and len(state.indexes) == 0
    assert isinstance(state.attrs, tvm_ffi.Dict) and len(state.attrs) == 0
    assert REPR_PRINT(state) == "ffi.EnumState(entries=[], indexes={}, attrs={})"


def test_runtime_type_fields_are_reflected():
    def names(key):
        info = tvm_ffi.core._lookup_or_register_type_info_from_type_key(key)
        return [f.name for f in info.fields]

    assert names("ffi.EnumState") == ["entries", "indexes", "attrs"]
    assert names("ffi.Enum") == ["_int_index", "_str_index"]
    assert names("ffi.IntEnum") == ["value"]
    assert names("ffi.StrEnum") == ["value"]
    assert names("ffi.reflection.AccessStep") == ["kind", "key"]
    assert names("ffi.reflection.AccessPath") == ["parent", "step", "depth"]


# C++ types of the testing library: fields and the generated __ffi_init__


def test_cxx_fields_and_repr():
    pair = T.TestIntPair(1, 2)
    assert (pair.a, pair.b) == (1, 2)
    assert REPR_PRINT(pair) == "testing.TestIntPair(a=1, b=2)"


def test_generated_init_binds_positional_keyword_and_defaults():
    assert REPR_PRINT(T._TestCxxAutoInitSimple(1, 2)) == "testing.TestCxxAutoInitSimple(x=1, y=2)"
    assert REPR_PRINT(T._TestCxxKwOnly(x=1, y=2, z=3, w=4)) == "testing.TestCxxKwOnly(x=1, y=2, z=3, w=4)"
    assert (
        REPR_PRINT(T._TestCxxInitSubset(1))
        == 'testing.TestCxxInitSubset(required_field=1, optional_field=-1, note="default")'
    )


def test_generated_init_errors():
    raises(
        TypeError,
        "testing.TestCxxAutoInit.__ffi_init__() missing required argument: 'a'",
        lambda: T._TestCxxAutoInit(),
    )
    raises(
        TypeError,
        "testing.TestCxxAutoInit.__ffi_init__() missing required keyword-only argument: 'c'",
        lambda: T._TestCxxAutoInit(1, 2),
    )
    raises(
        TypeError,
        "testing.TestCxxAutoInit.__ffi_init__() got an unexpected keyword argument 'b'",
        lambda: T._TestCxxAutoInit(a=1, b=2),
    )
    raises(
        TypeError,
        "testing.TestCxxKwOnly.__ffi_init__() takes at most 0 positional argument(s), but 2 were given",
        lambda: T._TestCxxKwOnly(1, 2),
    )
    raises(
        TypeError,
        "testing.TestCxxAutoInitChild.__ffi_init__() takes at most 3 positional argument(s), but 4 were given",
        lambda: T._TestCxxAutoInitChild(1, 2, 3, 4),
    )


def test_object_from_packed_args():
    assert REPR_PRINT(T.create_object("testing.TestIntPair", a=1, b=2)) == "testing.TestIntPair(a=1, b=2)"
    raises(
        TypeError,
        "Required field `b` not set in type `testing.TestIntPair`",
        lambda: T.create_object("testing.TestIntPair", a=1),
    )
    raises(
        TypeError,
        "Type `testing.TestIntPair` does not have field `c`",
        lambda: T.create_object("testing.TestIntPair", a=1, b=2, c=3),
    )


def test_cxx_enums():
    assert [(e.name, e.value) for e in T._TestCxxIntEnum] == [("low", 10), ("high", 20)]
    assert [(e.name, e.value) for e in T._TestCxxStrEnum] == [("+", "+"), ("*", "*")]
    assert T._TestCxxIntEnum.get(10) is T._TestCxxIntEnum.low or T._TestCxxIntEnum.get(10).same_as(
        T._TestCxxIntEnum.low
    )
    assert T._TestCxxIntEnum(20).name == "high"
    with pytest.raises(KeyError):
        T._TestCxxIntEnum.get(1)


# Types defined from Python


@py_class("pactum_test.Point")
class Point(tvm_ffi.Object):
    x: int
    y: float = 2.5
    name: str = field(default="p", kw_only=True)


@py_class("pactum_test.Holder")
class Holder(tvm_ffi.Object):
    items: tvm_ffi.List
    point: Optional[Point] = None
    anything: Any = None


def test_py_class_fields_defaults_and_repr():
    point = Point(1)
    assert (point.x, point.y, point.name) == (1, 2.5, "p")
    assert REPR_PRINT(point) == 'pactum_test.Point(x=1, y=2.5, name="p")'
    assert REPR_PRINT(Point(1, 3.0, name="q")) == 'pactum_test.Point(x=1, y=3, name="q")'
    point.x = 7
    assert point.x == 7


def test_py_class_init_errors():
    raises(TypeError, "pactum_test.Point.__ffi_init__() missing required argument: 'x'", lambda: Point())
    raises(
        TypeError,
        "pactum_test.Point.__ffi_init__() field 'x':\n  expected int, got str",
        lambda: Point("a"),
    )
    raises(
        TypeError,
        "pactum_test.Point.__ffi_init__() takes at most 2 positional argument(s), but 3 were given",
        lambda: Point(1, 2.0, 3),
    )
    raises(
        TypeError,
        "pactum_test.Point.__ffi_init__() got an unexpected keyword argument 'z'",
        lambda: Point(1, z=3),
    )


def test_py_class_object_and_any_fields_keep_their_values():
    items = tvm_ffi.List([1, 2])
    holder = Holder(items, Point(3), anything="text")
    assert holder.items.same_as(items)
    assert holder.point.x == 3
    assert holder.anything == "text"
    holder.anything = tvm_ffi.convert({"k": 1})
    assert holder.anything["k"] == 1
    holder.point = None
    assert holder.point is None
    # Many objects created and dropped: each releases its fields (a leak or double release
    # would show up as a crash or a wrong value here).
    for i in range(2000):
        Holder(tvm_ffi.convert([i]), Point(i), anything=str(i))
    assert list(holder.items) == [1, 2]


def test_py_class_shallow_copy_shares_field_values():
    items = tvm_ffi.List([1])
    holder = Holder(items, Point(4))
    clone = copy.copy(holder)
    assert not clone.same_as(holder)
    assert clone.items.same_as(items) and clone.point.same_as(holder.point)


def test_python_enums():
    class Color(IntEnum, type_key="pactum_test.Color"):
        RED = 1
        GREEN = 2

    class Fruit(StrEnum, type_key="pactum_test.Fruit"):
        APPLE = "apple"

    assert [c.name for c in Color] == ["RED", "GREEN"]
    assert Color(2) is Color.GREEN or Color(2).same_as(Color.GREEN)
    assert Color.RED.value == 1
    assert Fruit("apple").value == "apple"
    with pytest.raises(ValueError):
        Color(3)


# Conversions for typed fields (the `__ffi_convert__` type attributes)


def convert_with(type_key, value):
    info = tvm_ffi.core._lookup_or_register_type_info_from_type_key(type_key)
    return tvm_ffi.core._lookup_type_attr(info.type_index, "__ffi_convert__")(value)


def test_builtin_conversions():
    assert isinstance(convert_with("ffi.Array", tvm_ffi.List([1, 2])), tvm_ffi.Array)
    assert isinstance(convert_with("ffi.List", tvm_ffi.convert([1, 2])), tvm_ffi.List)
    assert isinstance(convert_with("ffi.Map", tvm_ffi.Dict({"a": 1})), tvm_ffi.Map)
    assert isinstance(convert_with("ffi.Dict", tvm_ffi.convert({"a": 1})), tvm_ffi.Dict)
    assert tuple(convert_with("ffi.Shape", tvm_ffi.List([2, 3]))) == (2, 3)
    assert convert_with("ffi.Object", None) is None
    assert convert_with("ffi.String", "s") == "s"
    array = tvm_ffi.convert([1])
    assert convert_with("ffi.Array", array).same_as(array)
    cases = [
        ("ffi.Object", 1, "Cannot cast from `int` to `ffi.Object`"),
        ("ffi.Object", "s", "Cannot cast from `ffi.SmallStr` to `ffi.Object`"),
        ("ffi.String", None, "Cannot cast from `None` to `str`"),
        ("ffi.Bytes", "x" * 40, "Cannot cast from `ffi.String` to `bytes`"),
        ("ffi.Error", None, "Cannot cast from `None` to `ffi.Error`"),
        ("ffi.Array", {"a": 1}, "Cannot cast from `ffi.Map` to `Array<Any>`"),
        ("ffi.Map", None, "Cannot cast from `None` to `Map<Any, Any>`"),
        ("ffi.List", 1, "Cannot cast from `int` to `List<Any>`"),
        ("ffi.Dict", [1], "Cannot cast from `ffi.Array` to `Dict<Any, Any>`"),
        ("ffi.Shape", None, "Cannot cast from `None` to `ffi.Shape`"),
        ("ffi.IntEnum", 1, "Cannot cast from `int` to `ffi.IntEnum`"),
        ("ffi.StrEnum", "a", "Cannot cast from `ffi.SmallStr` to `ffi.StrEnum`"),
    ]
    for key, value, message in cases:
        raises(TypeError, message, lambda: convert_with(key, value))
    assert convert_with("ffi.IntEnum", T._TestCxxIntEnum.low).same_as(T._TestCxxIntEnum.low)


@py_class("pactum_test.Typed")
class Typed(tvm_ffi.Object):
    obj: tvm_ffi.Object = tvm_ffi.convert([])
    arr: tvm_ffi.Array = tvm_ffi.convert([])


def test_typed_field_conversion_errors_name_the_converter():
    raises(
        TypeError,
        "pactum_test.Typed.__ffi_init__() field 'obj':\n  expected Object, got str\n"
        "    __ffi_convert__ failed:\n      Cannot cast from `ffi.SmallStr` to `ffi.Object`",
        lambda: Typed(obj="hello"),
    )
    assert isinstance(Typed(arr=tvm_ffi.List([1])).arr, tvm_ffi.Array)


def test_enum_fields_print_as_their_names():
    holder = T._TestCxxEnumHolder(10, "+")
    assert REPR_PRINT(holder) == (
        "testing.TestCxxEnumHolder(priority=testing.TestCxxIntEnum.low, opcode=testing.TestCxxStrEnum.+)"
    )
    assert REPR_PRINT(T._TestCxxIntEnum.high) == "testing.TestCxxIntEnum.high"


def test_repr_cycles_addresses_and_big_ints(monkeypatch):
    import re

    derived = T.TestObjectDerived(v_i64=1, v_f64=0.0, v_str="", v_map={}, v_array=[])
    cyclic = tvm_ffi.List([1])
    cyclic.append(cyclic)
    assert REPR_PRINT(cyclic) == "[1, ...]"
    assert REPR_PRINT(2**100) == "1267650600228229401496703205376"
    assert REPR_PRINT(tvm_ffi.convert([-(2**70) + 3])) == "(-1180591620717411303421,)"
    monkeypatch.setenv("TVM_FFI_REPR_WITH_ADDR", "1")
    assert re.fullmatch(r"\[1, \.\.\.@(0x[0-9a-f]+)\]@\1", REPR_PRINT(cyclic))
    assert re.fullmatch(
        r"testing\.TestObjectDerived@0x[0-9a-f]+\(v_i64=1, v_f64=0, v_str=\"\", v_map=\{\}@0x[0-9a-f]+, "
        r"v_array=\(\)@0x[0-9a-f]+\)",
        REPR_PRINT(derived),
    )
