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


# Mismatch paths (ffi.GetFirstStructuralMismatch), rendered by the package's AccessPath


def mismatch(lhs, rhs, **kwargs):
    found = tvm_ffi.get_first_structural_mismatch(lhs, rhs, **kwargs)
    return None if found is None else tuple(repr(path) for path in found)


def test_mismatch_paths_of_containers():
    assert mismatch([1, [2, 3]], [1, [2, 3]]) is None
    assert mismatch([1, [2, 3]], [1, [2, 4]]) == ("<root>[1][1]", "<root>[1][1]")
    assert mismatch({"a": [1]}, {"a": [2]}) == ('<root>["a"][0]', '<root>["a"][0]')
    assert mismatch([1, 2, 3], [1, 2]) == ("<root>[2]", "<root>[<missing:2>]")
    assert mismatch([1], [1, 2]) == ("<root>[<missing:1>]", "<root>[1]")
    assert mismatch({"a": 1}, {"b": 1}) == ('<root>["a"]', '<root>[<missing:"a">]')
    assert mismatch({"a": 1}, {"a": 1, "b": 2}) == ('<root>[<missing:"b">]', '<root>["b"]')
    assert mismatch(tvm_ffi.List([1, 2]), tvm_ffi.List([1])) == ("<root>[1]", "<root>[<missing:1>]")
    assert mismatch(tvm_ffi.Dict({1: 2}), tvm_ffi.Dict({1: 3})) == ("<root>[1]", "<root>[1]")
    # A difference at the top, or inside a value that is not a container, is the root.
    assert mismatch(1, 2) == ("<root>", "<root>")
    assert mismatch(tvm_ffi.Shape((1, 2)), tvm_ffi.Shape((1, 3))) == ("<root>", "<root>")


def test_mismatch_paths_are_access_paths():
    from tvm_ffi.access_path import AccessKind, AccessPath

    lhs, rhs = tvm_ffi.get_first_structural_mismatch([1, [2, 3]], [1, [2, 4]])
    assert isinstance(lhs, AccessPath) and lhs.depth == 2
    assert lhs == rhs and lhs == AccessPath.root().array_item(1).array_item(1)
    assert lhs.step.kind == AccessKind.ARRAY_ITEM and lhs.step.key == 1
    assert repr(lhs.parent) == "<root>[1]"
    assert [repr(step) for step in lhs.to_steps()] == ["[1]", "[1]"]


def test_access_paths_built_from_python():
    from tvm_ffi.access_path import AccessPath

    root = AccessPath.root()
    assert repr(root) == "<root>" and root.parent is None and root.step is None and root.depth == 0
    path = root.attr("a").array_item(2).map_item("k").attr_missing("z").array_item_missing(3).map_item_missing(1.5)
    assert repr(path) == '<root>.a[2]["k"][<missing:"z">][<missing:3>][<missing:1.5>]'
    assert path.depth == 6
    assert repr(path.to_steps()) == '(.a, [2], ["k"], [<missing:"z">], [<missing:3>], [<missing:1.5>])'
    assert root.is_prefix_of(path) and not path.is_prefix_of(root)
    assert path.parent.is_prefix_of(path) and not root.attr("b").is_prefix_of(path)
    assert path == root.attr("a").array_item(2).map_item("k").attr_missing("z").array_item_missing(3).map_item_missing(1.5)
    assert path != root and root.attr("a") != root.attr("b") and root.array_item(1) != root.map_item(1)
    assert repr(root.map_item(None)) == "<root>[None]"
    assert repr(root.map_item_missing(None)) == "<root>[<missing:None>]"
    assert repr(root.map_item([1, "x"])) == '<root>[(1, "x")]'
    assert repr(root.map_item(b"x")) == '<root>[b"x"]'
    assert repr(root._extend(path.step)) == "<root>[<missing:1.5>]"
    with pytest.raises(ValueError, match="AccessPath can't be initialized directly"):
        AccessPath()
    with pytest.raises(TypeError) as info:
        root._attr(1)
    assert str(info.value) == (
        "Mismatched type on argument #1 when calling: `ffi.reflection.AccessPath._attr(0: "
        "ffi.reflection.AccessPath, 1: str) -> ffi.reflection.AccessPath`. Expected `str` but got `int`"
    )


def test_structural_key():
    from tvm_ffi.structural import StructuralKey

    key = StructuralKey([1, 2])
    assert key.hash_i64 == hash(key) == 2823322240268045181
    assert repr(key) == "ffi.StructuralKey(key=(1, 2), hash_i64=2823322240268045181)"
    assert key == StructuralKey([1, 2]) and key != StructuralKey([1, 3])
    assert {key: "a"}[StructuralKey([1, 2])] == "a"
    # Map keys hash and compare structurally through the type's hooks.
    merged = tvm_ffi.Map({key: 1, StructuralKey([1, 2]): 2})
    assert len(merged) == 1 and merged[StructuralKey([1, 2])] == 2


# Reflected objects, by their structural kind (types defined from Python with py_class)


@pytest.fixture(scope="module")
def kinds():
    from typing import Any

    from tvm_ffi import Object
    from tvm_ffi.dataclasses import field, py_class

    class Kinds:
        @py_class("test_structural.Var", structural_eq="var")
        class Var(Object):
            name: str = field(structural_eq="ignore")

        @py_class("test_structural.Fn", structural_eq="tree")
        class Fn(Object):
            params: Any = field(structural_eq="def-pattern")
            body: Any

        @py_class("test_structural.Let", structural_eq="tree")
        class Let(Object):
            var: Any = field(structural_eq="def-simple")
            value: Any
            body: Any

        @py_class("test_structural.Node", structural_eq="dag")
        class Node(Object):
            v: int

        @py_class("test_structural.Leaf", structural_eq="const-tree")
        class Leaf(Object):
            v: int
            note: str = field(structural_eq="ignore", default="")

        @py_class("test_structural.Unique", structural_eq="singleton")
        class Unique(Object):
            v: int

        @py_class("test_structural.Opaque", structural_eq=None)
        class Opaque(Object):
            v: int

        @py_class("test_structural.Hooked", structural_eq="tree")
        class Hooked(Object):
            a: int
            b: int

            def __s_equal__(self, other, callback):
                return callback(self.a, other.a, 0, "a")

            def __s_hash__(self, init, callback):
                return callback(self.a, init, 0)

    return Kinds


def test_tree_nodes_compare_fields_except_ignored_ones(kinds):
    Leaf = kinds.Leaf
    assert sh(Leaf(1)) == sh(Leaf(1, "note")) == 7876658321761065759
    assert se(Leaf(1), Leaf(1, "other")) and not se(Leaf(1), Leaf(2))
    assert mismatch(Leaf(1), Leaf(2)) == ("<root>.v", "<root>.v")


def test_free_variables_bind_inside_definitions(kinds):
    Var, Fn, Let = kinds.Var, kinds.Fn, kinds.Let
    x, y = Var("x"), Var("y")
    assert se(x, x) and not se(x, y)
    assert se(x, y, map_free_vars=True)
    assert sh(x, map_free_vars=True) == sh(y, map_free_vars=True)
    assert se(Fn([x], [x, 1]), Fn([y], [y, 1]))
    assert sh(Fn([x], [x, 1])) == sh(Fn([y], [y, 1]))
    assert not se(Fn([x], [x, 1]), Fn([y], [x, 1]))
    assert mismatch(Fn([x], [x, 1]), Fn([y], [x, 1])) == ("<root>.body[0]", "<root>.body[0]")
    assert se(Let(x, 1, x), Let(y, 1, y)) and not se(Let(x, 1, x), Let(y, 1, x))
    assert mismatch([Fn([x], {"k": [x, 2]})], [Fn([y], {"k": [y, 3]})]) == (
        '<root>[0].body["k"][1]',
        '<root>[0].body["k"][1]',
    )
    # Map keys that are bound variables are looked up as the variables they are bound to.
    assert se(Fn([x], {x: 1}), Fn([y], {y: 1})) and sh(Fn([x], {x: 1})) == sh(Fn([y], {y: 1}))
    assert mismatch(Fn([x], {x: 1}), Fn([y], {x: 1})) == (
        '<root>.body[test_structural.Var(name="x")]',
        '<root>.body[<missing:test_structural.Var(name="y")>]',
    )


def test_dag_nodes_keep_their_sharing(kinds):
    Node = kinds.Node
    shared = Node(1)
    assert se([shared, shared], [shared, shared])
    assert se([Node(1), Node(1)], [Node(1), Node(1)])
    assert not se([shared, shared], [Node(1), Node(1)])
    assert sh([shared, shared]) != sh([Node(1), Node(1)])


def test_unique_instances_compare_by_identity(kinds):
    Unique = kinds.Unique
    one = Unique(1)
    assert se(one, one) and not se(one, Unique(1))
    assert sh(one) == sh(Unique(1))


def test_structural_hooks(kinds):
    Hooked = kinds.Hooked
    assert se(Hooked(1, 2), Hooked(1, 3)) and not se(Hooked(1, 2), Hooked(2, 2))
    assert sh(Hooked(1, 2)) == sh(Hooked(1, 3))
    assert mismatch(Hooked(1, 2), Hooked(2, 2)) == ("<root>.a", "<root>.a")


def test_types_without_a_structural_kind_are_refused(kinds):
    message = "Type metadata is not set for type `test_structural.Opaque`, so StructuralHash is not supported for this type"
    with pytest.raises(TypeError) as info:
        sh(kinds.Opaque(1))
    assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        se(kinds.Opaque(1), kinds.Opaque(1))
    assert str(info.value) == message


def test_access_paths_are_const_tree_nodes():
    from tvm_ffi.access_path import AccessPath

    root = AccessPath.root()
    assert sh(root) == 15883335515245100999
    assert sh(root.attr("a").array_item(1)) == 3746930958184406357
    assert se(root.attr("a"), AccessPath.root().attr("a")) and not se(root.attr("a"), root.attr("b"))
    assert mismatch(root.attr("a").array_item(1), root.attr("a").array_item(2)) == (
        "<root>.step.key",
        "<root>.step.key",
    )


def test_runtime_objects_without_a_structural_kind_are_refused():
    from tvm_ffi.structural import StructuralKey

    for value, key in [(StructuralKey([1]), "ffi.StructuralKey"), (tvm_ffi.system_lib(), "ffi.Module")]:
        with pytest.raises(TypeError) as info:
            sh(value)
        assert str(info.value) == f"_type_s_eq_hash_kind is not set for type `{key}`, so StructuralHash is not supported for this type"
    with pytest.raises(TypeError) as info:
        sh(tvm_ffi.convert(object()))
    assert str(info.value) == "Type metadata is not set for type `ffi.OpaquePyObject`, so StructuralHash is not supported for this type"


def test_structural_key_globals():
    from tvm_ffi.structural import StructuralKey

    make = tvm_ffi.get_global_func("ffi.StructuralKey")
    equal = tvm_ffi.get_global_func("ffi.StructuralKeyEqual")
    assert make([1, 2]).hash_i64 == 2823322240268045181 and make("x").key == "x"
    key = StructuralKey([1])
    assert equal(key, key) and equal(key, StructuralKey([1])) and not equal(key, StructuralKey([2]))
    # The same value on both sides is equal before either is checked to be a key.
    assert equal(1, 1) and equal("x", "x") and equal(None, None)
    for args, name in [((1, 2), "lhs_obj"), ((key, 2), "rhs_obj"), ((1, key), "lhs_obj")]:
        with pytest.raises(RuntimeError) as info:
            equal(*args)
        assert str(info.value) == f"Check not null: {name} "


def test_enum_singletons_hash_by_name_and_compare_by_identity():
    import tvm_ffi.testing

    low, high = tvm_ffi.testing._TestCxxIntEnum.low, tvm_ffi.testing._TestCxxIntEnum.high
    assert sh(low) == 8588477143423540257 and sh(high) == 8588477141675566637
    assert se(low, low) and not se(low, high)
    assert mismatch(high, low) == ("<root>", "<root>")
    assert sh(tvm_ffi.testing._TestCxxStrEnum.add) == 16230601536410347024


def test_map_entries_whose_key_has_no_stable_hash_are_left_out(kinds):
    Leaf = kinds.Leaf
    # A fresh object key has no hash independent of the walk: its entry is left out.
    assert sh({Leaf(1): 1}) == sh({Leaf(1): 2}) == 11694236735499009313
    # Once the walk has hashed the object, the entry counts, value included.
    leaf = Leaf(1)
    assert sh([leaf, {leaf: 5}]) != sh([leaf, {leaf: 6}])
    assert sh({1: 1, True: 2}) == 8690073498391464551
    assert not se({1: 1}, {True: 1})
