"""Recursive hashing, comparison and deep copy (ffi.RecursiveHash, ffi.RecursiveEq/Lt/Le/Gt/Ge,
ffi.DeepCopy), which hash(), ==, != and copy.deepcopy of the official package's containers use.

The literal hashes and messages are those the official library (apache-tvm-ffi 0.1.15.post2)
gives; every test runs on both libraries.
"""

import copy
import math

import pytest
import tvm_ffi

RECURSIVE_HASH = tvm_ffi.get_global_func("ffi.RecursiveHash")
EQ = tvm_ffi.get_global_func("ffi.RecursiveEq")
LT = tvm_ffi.get_global_func("ffi.RecursiveLt")
LE = tvm_ffi.get_global_func("ffi.RecursiveLe")
GT = tvm_ffi.get_global_func("ffi.RecursiveGt")
GE = tvm_ffi.get_global_func("ffi.RecursiveGe")
DEEP_COPY = tvm_ffi.get_global_func("ffi.DeepCopy")
convert = tvm_ffi.convert


def cyclic_list(head):
    """A List [head, <itself>]."""
    items = tvm_ffi.List([head])
    items.append(items)
    return items


# Hash


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: None, 2654435769),
        (lambda: True, 2654435896),
        (lambda: False, 2654435899),
        (lambda: 0, 2654435832),
        (lambda: -5, 2654435829),
        (lambda: 2**70, 64),
        (lambda: -(2**70), 2147483587),
        (lambda: 1.5, 4609434221268138618),
        (lambda: 0.0, 2654435962),
        (lambda: -0.0, 2654435962),
        (lambda: math.nan, 9221120239695526522),
        (lambda: math.inf, 9218868439881841274),
        (lambda: "abc", 2660953131),
        (lambda: "hello world, longer than small", 4741198001),
        (lambda: b"ab\x00", 2654465256),
        (lambda: b"x" * 40, 2859532773),
        (lambda: tvm_ffi.dtype("float32"), 11093831584875),
        (lambda: tvm_ffi.Device("cuda", 1), 175247678514),
        (lambda: tvm_ffi.Shape((2, 3)), 284796581919864661),
        (lambda: convert([1, 2]), 2823377144815479104),
        (lambda: convert([]), -2010874065908478216),
        (lambda: tvm_ffi.List([1, 2]), -8389770539569074377),
        (lambda: convert({"a": 1, "b": [2, 3]}), -8049154896903474206),
        (lambda: tvm_ffi.Dict({"a": 1}), 737077992245535816),
        (lambda: convert([[1, "x"], {"k": (1.5, None)}]), 818974578011142824),
        (lambda: cyclic_list(1), 5960482439972758480),
    ],
)
def test_recursive_hash_is_the_official_value(make, expected):
    assert RECURSIVE_HASH(make()) == expected


def test_hash_of_containers_is_the_recursive_hash():
    assert hash(convert([1, 2])) == 2823377144815479104
    assert hash(tvm_ffi.List([1, "x"])) == -8389770539568347233
    assert hash(convert({"a": [1, 2]})) == 4618591511263209096
    mixed = [None, True, 1, 1.5, "s", b"b", tvm_ffi.dtype("int8"), tvm_ffi.Device("cpu", 0)]
    mixed += [tvm_ffi.Shape((1,)), 2**70, -(2**80)]
    assert hash(convert(mixed)) == 3896608397498970165


def test_hash_ignores_map_order_and_zero_sign_and_follows_content():
    assert hash(tvm_ffi.Dict({"a": 1, "b": 2})) == hash(tvm_ffi.Dict({"b": 2, "a": 1})) == -7274322034432031886
    assert hash(convert([-0.0])) == hash(convert([0.0]))
    assert hash(convert([math.nan])) == hash(convert([float("nan")]))
    # Equal contents in distinct objects hash alike; kinds matter (Array vs List, int vs float).
    assert hash(convert([[1], [1]])) == hash(convert([[1], [1]]))
    assert hash(convert([1, 2])) != hash(tvm_ffi.List([1, 2]))
    assert hash(convert([1])) != hash(convert([1.0]))
    shared = convert([1, 2])
    assert hash(convert([shared, shared])) == hash(convert([[1, 2], [1, 2]])) == -5805468773502341941


def test_containers_hash_and_compare_deeply_nested_values():
    # Deeper chains crash pactum's debug build when they are freed (its containers release
    # their elements recursively), not while they are walked.
    deep = tvm_ffi.List()
    tail = deep
    for i in range(5000):
        node = tvm_ffi.List([i])
        tail.append(node)
        tail = node
    twin = copy.deepcopy(deep)
    assert not twin.same_as(deep)
    assert RECURSIVE_HASH(deep) == RECURSIVE_HASH(twin) == 2346930400265684809
    assert deep == twin and LE(deep, twin) and not LT(deep, twin)


# Equality and ordering


def test_equality_of_nested_containers():
    assert convert([1, [2, "x"], {"k": None}]) == convert([1, [2, "x"], {"k": None}])
    assert convert([1, [2, "x"]]) != convert([1, [2, "y"]])
    assert convert({"a": [1, 2], "b": 2}) == convert({"b": 2, "a": [1, 2]})
    assert convert({"a": 1}) != convert({"a": 1, "b": 2})
    assert convert({"a": 1}) != convert({"b": 1})
    assert tvm_ffi.List([1, 2]) == [1, 2] and convert([1, 2]) != (1, 3)
    assert tvm_ffi.Dict({"a": [1]}) == tvm_ffi.Dict({"a": [1]})
    long_text = "a string long enough to be stored as an object"
    assert convert([long_text]) == convert([long_text[:10] + long_text[10:]])


def test_values_of_different_kinds_are_unequal():
    assert not EQ(1, 1.0)
    assert not EQ(True, 1)
    assert not EQ(b"a", "a")
    assert not EQ(None, 0)
    assert convert([1]) != convert([1.0])
    assert EQ(-0.0, 0.0) and EQ(math.nan, math.nan) and not EQ(math.nan, 1.0)
    assert EQ(2**70, 2**70) and not EQ(2**70, 5)


@pytest.mark.parametrize(
    "lhs, rhs, expected",
    [
        (None, 1, [False, True, True, False, False]),
        (1, None, [False, False, False, True, True]),
        ("abc", "abd", [False, True, True, False, False]),
        ("ab", "abc", [False, True, True, False, False]),
        (b"b", b"a", [False, False, False, True, True]),
        ([1, 2], [1, 2, 3], [False, True, True, False, False]),
        ([1, 3], [1, 2, 3], [False, False, False, True, True]),
        ([1, [2, "a"]], [1, [2, "a"]], [True, False, True, False, True]),
        ([{"a": 1}, 2], [{"a": 1}, 3], [False, True, True, False, False]),
        ({"a": 1}, {"a": 1}, [True, False, True, False, True]),
        (2**70, 5, [False, False, False, True, True]),
        (-(2**70), 5, [False, True, True, False, False]),
        (2**70, 2**71, [False, True, True, False, False]),
        (-0.0, 0.0, [True, False, True, False, True]),
        (True, False, [False, False, False, True, True]),
    ],
)
def test_three_way_comparison(lhs, rhs, expected):
    lhs, rhs = convert(lhs), convert(rhs)
    assert [f(lhs, rhs) for f in (EQ, LT, LE, GT, GE)] == expected


def test_ordering_of_data_types_devices_and_shapes():
    assert GT(tvm_ffi.dtype("float32"), tvm_ffi.dtype("int32"))
    assert LT(tvm_ffi.Device("cpu", 0), tvm_ffi.Device("cuda", 0))
    assert LT(tvm_ffi.Device("cuda", 0), tvm_ffi.Device("cuda", 1))
    assert LT(tvm_ffi.Shape((1, 2)), tvm_ffi.Shape((1, 2, 0)))
    assert GE(tvm_ffi.Shape((1, 3)), tvm_ffi.Shape((1, 2, 9)))


@pytest.mark.parametrize(
    "lhs, rhs, error, message",
    [
        (1, "a", TypeError, "Cannot compare values of different types: int vs ffi.SmallStr"),
        ("a", 1, TypeError, "Cannot compare values of different types: ffi.SmallStr vs int"),
        (1, 1.0, TypeError, "Cannot compare values of different types: int vs float"),
        (True, 1, TypeError, "Cannot compare values of different types: bool vs int"),
        (b"a", "a", TypeError, "Cannot compare values of different types: ffi.SmallBytes vs ffi.SmallStr"),
        ([1], [1.0], TypeError, "Cannot compare values of different types: int vs float"),
        (math.nan, math.nan, TypeError, "Cannot order NaN values"),
        (math.nan, 1.0, TypeError, "Cannot order NaN values"),
        ({"a": 1}, {"a": 2}, TypeError, "Cannot order Map/Dict values"),
        ({"a": 1}, {"b": 1}, TypeError, "Cannot order Map/Dict values"),
        ({"a": 1}, {"a": 1, "b": 2}, TypeError, "Cannot order Map/Dict values"),
        ([{"a": [1]}], [{"a": [2]}], TypeError, "Cannot order Map/Dict values"),
    ],
)
def test_ordering_errors(lhs, rhs, error, message):
    lhs, rhs = convert(lhs), convert(rhs)
    for order in (LT, LE, GT, GE):
        with pytest.raises(error) as info:
            order(lhs, rhs)
        assert str(info.value) == message


def test_array_and_list_are_different_kinds():
    assert not EQ(convert([1]), tvm_ffi.List([1]))
    with pytest.raises(TypeError) as info:
        LT(convert([1]), tvm_ffi.List([1]))
    assert str(info.value) == "Cannot compare values of different types: ffi.Array vs ffi.List"


def test_cycles_are_equal_but_cannot_be_ordered():
    first, second = cyclic_list(1), cyclic_list(1)
    assert first == first and first == second and EQ(first, second)
    with pytest.raises(ValueError) as info:
        LT(first, second)
    assert str(info.value) == "RecursiveCompare: cyclic reference detected in ordering"
    assert first != cyclic_list(2)


# Deep copy


def test_deepcopy_rebuilds_nested_containers():
    original = convert([1, [2], {"k": tvm_ffi.List([3])}])
    copied = copy.deepcopy(original)
    assert copied == original and isinstance(copied, tvm_ffi.Array)
    assert not copied.same_as(original) and not copied[1].same_as(original[1])
    assert not copied[2]["k"].same_as(original[2]["k"])
    copied[2]["k"].append(4)
    assert list(original[2]["k"]) == [3] and list(copied[2]["k"]) == [3, 4]
    assert list(copy.deepcopy(convert([1, [2]]))[1]) == [2]


def test_deepcopy_keeps_shared_references():
    item = tvm_ffi.List([1])
    outer = tvm_ffi.List([item, item, convert([item])])
    copied = copy.deepcopy(outer)
    assert copied[0].same_as(copied[1]) and copied[2][0].same_as(copied[0])
    assert not copied[0].same_as(item) and copied[0] == item
    array = convert([1, 2])
    copied = copy.deepcopy(convert([array, array]))
    assert copied[0].same_as(copied[1]) and not copied[0].same_as(array)
    text = convert("a long string that is not small at all")
    blob = convert(b"bytes long enough to be an object")
    shape = tvm_ffi.Shape((1, 2))
    leaves = tvm_ffi.List([text, shape, blob])
    copied = copy.deepcopy(leaves)
    assert list(copied) == [text, shape, blob]
    assert DEEP_COPY(5) == 5 and DEEP_COPY("abc") == "abc" and DEEP_COPY(None) is None


def test_deepcopy_preserves_cycles():
    items = cyclic_list(1)
    copied = copy.deepcopy(items)
    assert len(copied) == 2 and copied[1].same_as(copied) and not copied.same_as(items)
    # An Array reached again through a List it contains.
    inner = tvm_ffi.List()
    array = convert([inner, 5])
    inner.append(array)
    copied = copy.deepcopy(array)
    assert copied[0][0].same_as(copied) and not copied[0].same_as(inner)
    copied = copy.deepcopy(inner)
    assert copied[0][0].same_as(copied)
    # Dicts holding themselves, directly or through a Map.
    table = tvm_ffi.Dict({"a": 1})
    table["self"] = table
    copied = copy.deepcopy(convert({"k": table}))
    assert copied["k"]["self"].same_as(copied["k"]) and not copied["k"].same_as(table)
    assert sorted(copied["k"].keys()) == ["a", "self"]
    table = tvm_ffi.Dict()
    mapping = convert({"x": table})
    table["m"] = mapping
    copied = copy.deepcopy(mapping)
    assert copied["x"]["m"].same_as(copied) and list(copied["x"].keys()) == ["m"]


def test_deepcopy_of_an_object_without_shallow_copy_fails():
    with pytest.raises(RuntimeError) as info:
        DEEP_COPY(convert([convert(lambda: 1)]))
    assert str(info.value) == (
        'Check failed: (copy_fn.has_value()) is false: Cannot deep copy object of type "ffi.Function" '
        "because it is not copy-constructible"
    )


# Reflected objects of the wheel's testing library (loaded with the package), built through
# their registered __ffi_init__ / __ffi_new__ type attributes (without tvm_ffi.testing's classes).


def make(type_key, *args):
    type_index = tvm_ffi.core._object_type_key_to_index(type_key)
    return tvm_ffi.core._lookup_type_attr(type_index, "__ffi_init__")(*args)


def make_edges():
    """A testing.TestDeepCopyEdges: two writable fields, `v_any` and `v_obj`, both None."""
    type_index = tvm_ffi.core._object_type_key_to_index("testing.TestDeepCopyEdges")
    return tvm_ffi.core._lookup_type_attr(type_index, "__ffi_new__")()


def test_reflected_objects_hash_and_compare_field_by_field():
    pair, twin, other = (make("testing.TestIntPair", 1, b) for b in (2, 2, 3))
    assert RECURSIVE_HASH(pair) == RECURSIVE_HASH(twin) == 6631092596281450728
    assert RECURSIVE_HASH(other) == 6631092596281450731
    assert EQ(pair, twin) and not EQ(pair, other)
    assert LT(pair, other) and not GT(pair, other) and LE(pair, twin)
    different = make("testing.TestCompare", 1, "n", 5)
    assert not EQ(pair, different)
    for lhs, rhs in [(pair, different), (convert([pair]), convert([different]))]:
        with pytest.raises(TypeError) as info:
            LT(lhs, rhs)
        assert str(info.value) == (
            "Cannot compare values of different types: testing.TestIntPair vs testing.TestCompare"
        )


def test_fields_flagged_off_are_skipped():
    # testing.TestCompare: `ignored_field` is compare-off (so also left out of the hash).
    first, second = make("testing.TestCompare", 1, "n", 5), make("testing.TestCompare", 1, "n", 6)
    assert EQ(first, second) and RECURSIVE_HASH(first) == RECURSIVE_HASH(second) == -5489667494180696498
    # testing.TestHash: `hash_ignored` is hash-off only.
    first, second = make("testing.TestHash", 1, "n", 5), make("testing.TestHash", 1, "n", 6)
    assert not EQ(first, second)
    assert RECURSIVE_HASH(first) == RECURSIVE_HASH(second) == -2333583975415125679


def test_hash_and_compare_hooks():
    # testing.TestCustomHash hashes only `key`; equality still compares every field.
    first, second = make("testing.TestCustomHash", 1, "a"), make("testing.TestCustomHash", 1, "b")
    assert RECURSIVE_HASH(first) == RECURSIVE_HASH(second) == 2654435835
    assert not EQ(first, second)
    assert RECURSIVE_HASH(convert([first, first])) == 2823377144815479171
    # testing.TestCustomCompare's __ffi_eq__/__ffi_compare__ look only at `key`.
    one_a, one_b = make("testing.TestCustomCompare", 1, "a"), make("testing.TestCustomCompare", 1, "b")
    two = make("testing.TestCustomCompare", 2, "a")
    assert EQ(one_a, one_b) and not EQ(one_a, two) and EQ(convert([one_a]), convert([one_b]))
    assert LT(one_a, two) and GE(one_a, one_b)
    assert RECURSIVE_HASH(one_a) == RECURSIVE_HASH(one_b) == 2654435835
    # testing.TestEqWithoutHash defines __ffi_eq__ but no __ffi_hash__.
    eq_only = make("testing.TestEqWithoutHash", 1, "a")
    assert EQ(eq_only, make("testing.TestEqWithoutHash", 1, "b"))
    with pytest.raises(ValueError) as info:
        RECURSIVE_HASH(eq_only)
    assert str(info.value) == (
        "RecursiveHash: type 'testing.TestEqWithoutHash' defines __ffi_eq__ or __ffi_compare__ but "
        "not __ffi_hash__. Add a __ffi_hash__ hook to maintain the invariant "
        "RecursiveEq(a,b) => RecursiveHash(a)==RecursiveHash(b)."
    )


def test_deepcopy_of_reflected_objects():
    pair = make("testing.TestIntPair", 1, 2)
    copied = DEEP_COPY(pair)
    assert not copied.same_as(pair) and EQ(copied, pair)
    assert tvm_ffi.get_global_func("testing.TestIntPairSum")(copied) == 3
    shared = DEEP_COPY(tvm_ffi.List([pair, pair]))
    assert shared[0].same_as(shared[1]) and not shared[0].same_as(pair)
    holder = make_edges()
    holder.v_any = convert({"k": [1, 2]})
    holder.v_obj = convert([3])
    copied = DEEP_COPY(holder)
    assert not copied.v_any.same_as(holder.v_any) and copied.v_any == holder.v_any
    assert EQ(copied, holder) and RECURSIVE_HASH(copied) == RECURSIVE_HASH(holder) == 998500049118349714
    with pytest.raises(RuntimeError) as info:
        DEEP_COPY(make("testing.TestNonCopyable", 3))
    assert str(info.value) == (
        'Check failed: (copy_fn.has_value()) is false: Cannot deep copy object of type "testing.TestNonCopyable" '
        "because it is not copy-constructible"
    )


def test_objects_inside_themselves():
    node = make_edges()
    node.v_obj = node
    node.v_any = tvm_ffi.List([node, 1])
    copied = DEEP_COPY(node)
    assert copied.v_obj.same_as(copied) and copied.v_any[0].same_as(copied)
    assert not copied.same_as(node) and not copied.v_any.same_as(node.v_any)
    assert RECURSIVE_HASH(node) == RECURSIVE_HASH(copied) == -1808918210760358149
    assert EQ(node, copied)
    with pytest.raises(ValueError) as info:
        LT(node, copied)
    assert str(info.value) == "RecursiveCompare: cyclic reference detected in ordering"
    assert repr(copied) == "testing.TestDeepCopyEdges(v_any=[..., 1], v_obj=...)"
    # An Array reached again through an object it contains.
    item = make_edges()
    array = convert([item, 2])
    item.v_any = array
    item.v_obj = tvm_ffi.List([array])
    copied = DEEP_COPY(array)
    assert copied[0].v_any.same_as(copied) and copied[0].v_obj[0].same_as(copied)
    assert not copied[0].same_as(item)
    for cyclic in (node, item):  # break the cycles so the objects are freed
        cyclic.v_any = None
        cyclic.v_obj = None


# Through the classes of tvm_ffi.testing and Python-defined dataclasses: the dunders they
# install (==, <, hash(), copy.deepcopy) call the same globals.


def test_dataclass_dunders_use_the_recursive_operations():
    import tvm_ffi.testing as testing

    low = testing._TestCxxClassDerived(1, 2, 3.0, 4.0)
    high = testing._TestCxxClassDerived(1, 2, 3.5, 4.0)
    assert low < high and not low >= high and low == copy.deepcopy(low)
    assert hash(low) == -7866201278444041963
    derived = testing.TestObjectDerived(v_map={"a": [1]}, v_array=[1, 2], v_i64=3, v_f64=1.5, v_str="s")
    copied = copy.deepcopy(derived)
    assert not copied.same_as(derived) and not copied.v_map.same_as(derived.v_map)
    assert copied.v_i64 == 3 and copied.v_str == "s" and dict(copied.v_map) == dict(derived.v_map)
    assert EQ(copied, derived) and RECURSIVE_HASH(copied) == RECURSIVE_HASH(derived) == -3661477882748252147


def test_deepcopy_shares_enum_singletons():
    import tvm_ffi.testing as testing

    holder = testing._TestCxxEnumHolder(testing._TestCxxIntEnum.low, testing._TestCxxStrEnum.mul)
    copied = copy.deepcopy(holder)
    assert not copied.same_as(holder)
    assert copied.priority.same_as(holder.priority) and copied.opcode.same_as(holder.opcode)
    assert EQ(copied, holder) and RECURSIVE_HASH(copied) == RECURSIVE_HASH(holder) == 1530984191233795796


def test_python_defined_dataclass_order_hash_and_copy():
    from tvm_ffi.dataclasses import py_class

    @py_class("pactum.tests.RecursivePoint", eq=True, order=True, unsafe_hash=True)
    class Point(tvm_ffi.Object):
        x: int
        y: list

    first, second = Point(1, [1, 2]), Point(1, [1, 3])
    assert first < second and first == Point(1, [1, 2]) and first != second
    assert hash(first) == hash(Point(1, [1, 2])) == 4270098703752298429
    copied = copy.deepcopy(first)
    assert isinstance(copied, Point) and copied.x == 1 and list(copied.y) == [1, 2]
    assert not copied.y.same_as(first.y) and copy.copy(first).y.same_as(first.y)
