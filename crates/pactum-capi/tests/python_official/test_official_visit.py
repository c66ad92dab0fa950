"""Structural visiting and mutation through the official package, on both libraries.

structural_walk / structural_visit / structural_map / structural_mutate, the StructuralVisitor
and StructuralMutator methods their callbacks use, VisitInterrupt, the VisitErrorContext an
error collects on its way out, and ffi.VisitErrorContext.FindAccessPaths. Expected values are
what the official library returns.
"""

from typing import Any

import pytest
import tvm_ffi
import tvm_ffi.testing  # noqa: F401  (registers testing.make_visit_region_graph)
from tvm_ffi import (
    DefRegionKind,
    VisitInterrupt,
    WalkResult,
    structural_map,
    structural_mutate,
    structural_visit,
    structural_walk,
)
from tvm_ffi.dataclasses import field, py_class


@py_class("visit_tests.Node")
class Node(tvm_ffi.Object):
    name: str
    kids: Any = None
    n: int = 0
    other: Any = None


@py_class("visit_tests.Var", structural_eq="var")
class Var(tvm_ffi.Object):
    name: str
    ty: Any = None


@py_class("visit_tests.Let")
class Let(tvm_ffi.Object):
    var: Var = field(structural_eq="def-simple")
    value: Any = None
    body: Any = None
    note: Any = field(default=None, structural_eq="ignore")


@py_class("visit_tests.Fn")
class Fn(tvm_ffi.Object):
    params: Any = field(structural_eq="def-pattern")
    body: Any = None


@py_class("visit_tests.Dag", structural_eq="dag")
class Dag(tvm_ffi.Object):
    x: Any = None


def make_tree():
    return Node("a", [Node("b", [Node("c", None, 1)]), Node("d", {"x": Node("e", None, 2)})], 7)


def show(x):
    if isinstance(x, Node):
        return f"{x.name}{x.n}({show(x.kids)})"
    if isinstance(x, Var):
        return f"{x.name}:{show(x.ty)}"
    if isinstance(x, Let):
        return f"let {show(x.var)}={show(x.value)} in {show(x.body)} [{show(x.note)}]"
    if isinstance(x, Fn):
        return f"fn({show(x.params)}) {show(x.body)}"
    if isinstance(x, Dag):
        return f"dag({show(x.x)})"
    if isinstance(x, (tvm_ffi.Array, tvm_ffi.List)):
        return "[" + ",".join(show(v) for v in x) + "]"
    if isinstance(x, (tvm_ffi.Map, tvm_ffi.Dict)):
        return "{" + ",".join(f"{k}:{show(v)}" for k, v in x.items()) + "}"
    return repr(x)


def context_names(error):
    context = error.__tvm_ffi_error__.extra_context
    assert context.prev_error_context is None
    return [getattr(x, "name", type(x).__name__) for x in context.reverse_visit_pattern]


# ---------------------------------------------------------------------------------------------
# structural_walk
# ---------------------------------------------------------------------------------------------


def test_walk_orders_over_containers():
    root = tvm_ffi.convert([1, [2, "s"], {"k": 3}, None, 4.5])
    seen = []
    assert structural_walk(root, lambda v: seen.append(v)) is None
    assert [str(v) for v in seen] == ["1", "2", "s", '(2, "s")', "3", '{"k": 3}', "4.5",
                                      '(1, (2, "s"), {"k": 3}, None, 4.5)']
    seen = []
    structural_walk(root, lambda v: seen.append(v), order="pre")
    assert [str(v) for v in seen] == ['(1, (2, "s"), {"k": 3}, None, 4.5)', "1", '(2, "s")',
                                      "2", "s", '{"k": 3}', "3", "4.5"]


def test_walk_objects_skip_and_interrupt():
    tree = make_tree()
    out = []
    structural_walk(tree, (Node, lambda n: out.append(n.name)), order="pre")
    assert out == ["a", "b", "c", "d", "e"]
    out = []
    structural_walk(tree, (Node, lambda n: out.append(n.name)))
    assert out == ["c", "b", "e", "d", "a"]
    for skip in (WalkResult.SKIP, True):
        out = []
        structural_walk(
            tree,
            (Node, lambda n, skip=skip: (out.append(n.name), skip if n.name == "b" else None)[1]),
            order="pre",
        )
        assert out == ["a", "b", "d", "e"]
    # Any other integer advances.
    out = []
    structural_walk(tree, (Node, lambda n: (out.append(n.name), 5)[1]), order="pre")
    assert out == ["a", "b", "c", "d", "e"]
    result = structural_walk(
        tree, (Node, lambda n: VisitInterrupt(n.name) if n.name == "c" else None), order="pre"
    )
    assert isinstance(result, VisitInterrupt) and result.value == "c"


def test_walk_dispatch_by_type_in_order():
    out = []
    structural_walk(
        make_tree(),
        [
            (int, lambda v: out.append(("int", v))),
            (str, lambda v: out.append(("str", v))),
            (object, lambda v: out.append(("any", type(v).__name__))),
        ],
    )
    assert out == [("str", "a"), ("str", "b"), ("str", "c"), ("int", 1), ("any", "Node"),
                   ("any", "Array"), ("int", 0), ("any", "Node"), ("str", "d"), ("str", "e"),
                   ("int", 2), ("any", "Node"), ("any", "Map"), ("int", 0), ("any", "Node"),
                   ("any", "Array"), ("int", 7), ("any", "Node")]


def test_walk_def_regions_and_cxx_hook():
    make = tvm_ffi.get_global_func("testing.make_visit_region_graph")

    def label(v):
        return v if isinstance(v, int) else type(v).__name__

    expected = {
        (False, "post"): [(1, 2), (2, 1), (3, 0), ("TestVisitRegions", 0)],
        (False, "pre"): [("TestVisitRegions", 0), (1, 2), (2, 1), (3, 0)],
        # The C++ __s_visit__ hook of TestVisitHook runs through the visitor's vtable.
        (True, "post"): [(1, 2), (2, 1), (3, 2), ("TestVisitRegions", 2), (4, 0),
                         ("TestVisitHook", 0)],
        (True, "pre"): [("TestVisitHook", 0), ("TestVisitRegions", 2), (1, 2), (2, 1), (3, 2),
                        (4, 0)],
    }
    for (hook, order), want in expected.items():
        out = []
        structural_walk(
            make(hook),
            with_def_region_kind=lambda v, k: out.append((label(v), int(k))),
            order=order,
        )
        assert out == want, (hook, order)


def test_walk_var_regions():
    x = Var("x", Var("T"))
    y = Var("y")
    prog = Let(x, 1, Let(y, x, [x, y, "s"]), note=x)
    seen = []
    structural_walk(
        prog, with_def_region_kind=(Var, lambda v, k: seen.append((v.name, k.name))), order="pre"
    )
    # A simple definition's own fields are uses; the ignored field is not visited.
    assert seen == [("x", "DEF_SIMPLE"), ("T", "NONE"), ("y", "DEF_SIMPLE"), ("x", "NONE"),
                    ("T", "NONE"), ("x", "NONE"), ("T", "NONE"), ("y", "NONE")]


def test_walk_errors():
    tree = make_tree()
    with pytest.raises(TypeError) as info:
        structural_walk(tree, (Node, lambda n: "bad"), order="pre")
    assert str(info.value) == (
        "CallExpected: result type mismatch, expected WalkResult, but got ffi.SmallStr"
    )
    assert context_names(info.value) == ["a"]

    def raiser(n):
        if n.name == "e":
            raise ValueError("boom at e")

    with pytest.raises(ValueError, match="boom at e") as info:
        structural_walk(tree, (Node, raiser))
    assert context_names(info.value) == ["e", "Map", "d", "Array", "a"]


# ---------------------------------------------------------------------------------------------
# structural_visit and the visitor
# ---------------------------------------------------------------------------------------------


def test_visit_callbacks_own_descent():
    tree = make_tree()
    out = []

    def on_node(n, vis):
        assert isinstance(vis, tvm_ffi.StructuralVisitor)
        out.append((n.name, int(vis.def_region_kind())))
        if n.name == "a":
            return vis.visit(n.kids[1])
        if n.name == "d":
            return vis.with_def_region_kind(DefRegionKind.DEF_SIMPLE, lambda: vis.default_visit(n))
        return None

    assert structural_visit(tree, (Node, on_node)) is None
    assert out == [("a", 0), ("d", 0), ("e", 2)]

    out = []

    def stop(n, vis):
        out.append(n.name)
        return VisitInterrupt(123) if n.name == "e" else vis.default_visit(n)

    assert structural_visit(tree, (Node, stop)).value == 123
    assert out == ["a", "b", "c", "d", "e"]

    # Inside a pattern region, entering another kind changes nothing.
    def nested(n, vis):
        kind = vis.with_def_region_kind(
            1, lambda: vis.with_def_region_kind(2, lambda: vis.def_region_kind())
        )
        return VisitInterrupt(kind)

    assert structural_visit(tree, (Node, nested)).value == 1


def test_visit_default_and_errors():
    root = tvm_ffi.convert([1, [2, "s"], {"k": 3}, None, 4.5])
    seen = []

    def catch_all(v, vis):
        seen.append(str(v))
        return vis.default_visit(v)

    assert structural_visit(root, catch_all) is None
    assert seen == ['(1, (2, "s"), {"k": 3}, None, 4.5)', "1", '(2, "s")', "2", "s",
                    '{"k": 3}', "3", "4.5"]
    for bad, key in ((5, "int"), (True, "bool"), ("x", "ffi.SmallStr"), (0, "int")):
        with pytest.raises(TypeError) as info:
            structural_visit(root, lambda v, vis, bad=bad: bad)
        assert str(info.value) == (
            "CallExpected: result type mismatch, expected Optional<ffi.VisitInterrupt>, "
            f"but got {key}"
        )
    with pytest.raises(RuntimeError, match="division by zero") as info:
        structural_visit(make_tree(), (Node, lambda n, vis: 1 / 0 if n.name == "a" else None))
    assert context_names(info.value) == ["a"]


def test_visit_interrupt_object():
    interrupt = VisitInterrupt()
    assert interrupt.value is None
    assert repr(interrupt) == "ffi.VisitInterrupt(value=None)"
    node = make_tree().kids[0]
    assert repr(VisitInterrupt(node)) == (
        'ffi.VisitInterrupt(value=visit_tests.Node(name="b", kids=(visit_tests.Node(name="c", '
        "kids=None, n=1, other=None),), n=0, other=None))"
    )
    assert VisitInterrupt([1, 2]).value[1] == 2


def test_visit_argument_errors():
    with pytest.raises(TypeError) as info:
        tvm_ffi.get_global_func("ffi.StructuralVisitorVisit")(1, 2)
    assert str(info.value) == (
        "Mismatched type on argument #0 when calling: `ffi.StructuralVisitorVisit(0: "
        "ffi.StructuralVisitor, 1: AnyView) -> Optional<ffi.VisitInterrupt>`. Expected "
        "`ffi.StructuralVisitor` but got `int`"
    )
    walk = tvm_ffi.get_global_func("ffi.StructuralWalk")
    mutate = tvm_ffi.get_global_func("ffi.StructuralMutate")
    prefix = (
        "Mismatched type on argument #1 when calling: `ffi.StructuralWalk(0: AnyView, 1: "
        "Array<Tuple<int, ffi.Function>>, 2: Array<Tuple<int, ffi.Function>>, 3: int) -> "
        "Optional<ffi.VisitInterrupt>`. Expected `Array<Tuple<int, ffi.Function>>` but got "
    )
    for bad, got in (
        (5, "`int`"),
        ([1], "`Array[index 0: int]`"),
        ([(1, 2)], "`Array[index 0: Array[index 1: int]]`"),
        ([(1, lambda: 0, 3)], "`Array[index 0: Array[size=3]]`"),
        ([("a", lambda: 0)], "`Array[index 0: Array[index 0: ffi.SmallStr]]`"),
    ):
        with pytest.raises(TypeError) as info:
            walk(1, bad, [], 0)
        assert str(info.value) == prefix + got
    with pytest.raises(TypeError) as info:
        mutate(1, [(1, 2)])
    assert str(info.value).endswith(
        "Expected `Array<Tuple<int, ffi.Function, bool>>` but got `Array[index 0: Array[size=2]]`"
    )


# ---------------------------------------------------------------------------------------------
# VisitErrorContext.FindAccessPaths
# ---------------------------------------------------------------------------------------------


def steps(path):
    out = []
    while path.step is not None:
        out.append((path.depth, path.step.kind, path.step.key))
        path = path.parent
    return out[::-1]


def test_find_access_paths():
    find = tvm_ffi.get_global_func("ffi.VisitErrorContext.FindAccessPaths")
    c = Node("c")
    chain = Node("a", Node("b", c), other=Node("x", c))

    def raiser(n):
        if n.name == "c":
            raise ValueError("boom at c")

    with pytest.raises(ValueError) as info:
        structural_walk(chain, (Node, raiser))
    context = info.value.__tvm_ffi_error__.extra_context
    assert [x.name for x in context.reverse_visit_pattern] == ["c", "b", "a"]
    paths = find(chain, context, False)
    assert isinstance(paths, tvm_ffi.Array)
    assert [steps(p) for p in paths] == [[(1, 0, "kids"), (2, 0, "kids")]]
    assert [steps(p) for p in find(chain, context, True)] == [
        [(1, 0, "kids"), (2, 0, "kids")],
        [(1, 0, "other"), (2, 0, "kids")],
    ]
    for root in (chain.kids, c):
        for prefix in (False, True):
            assert list(find(root, context, prefix)) == []
    # A container on the chain is never matched: no full path is found, and a prefix match
    # reports the leaves below the matched root.
    tree = make_tree()

    def raise_at_e(n):
        if n.name == "e":
            raise ValueError("x")

    with pytest.raises(ValueError) as info:
        structural_walk(tree, (Node, raise_at_e))
    context = info.value.__tvm_ffi_error__.extra_context
    assert list(find(tree, context, False)) == []
    assert [steps(p) for p in find(tree, context, True)] == [
        [(1, 0, "kids"), (2, 1, 0), (3, 0, "kids"), (4, 1, 0)],
        [(1, 0, "kids"), (2, 1, 1), (3, 0, "kids"), (4, 2, "x")],
    ]
    with pytest.raises(TypeError, match="Expected `ffi.VisitErrorContext` but got `visit_tests.Node`"):
        find(tree, tree, False)


# ---------------------------------------------------------------------------------------------
# structural_map / structural_mutate
# ---------------------------------------------------------------------------------------------


def test_map_orders_and_copies():
    tree = make_tree()
    order = []

    def bump(n):
        order.append(n.name)
        return Node(n.name.upper(), n.kids, n.n + 1)

    result = structural_map(tree, (Node, bump))
    assert show(result) == "A8([B1([C2(None)]),D1({x:E3(None)})])"
    assert order == ["c", "b", "e", "d", "a"]
    assert show(tree) == "a7([b0([c1(None)]),d0({x:e2(None)})])"
    order = []
    assert show(structural_map(tree, (Node, bump), order="pre")) == (
        "A8([B1([C2(None)]),D1({x:E3(None)})])"
    )
    assert order == ["a", "b", "c", "d", "e"]
    assert show(structural_map(tree, (int, lambda v: v * 10))) == (
        "a70([b0([c10(None)]),d0({x:e20(None)})])"
    )
    assert show(structural_map(tree, (str, lambda s: s + "!"))) == (
        "a!7([b!0([c!1(None)]),d!0({x:e!2(None)})])"
    )
    assert structural_map(tree, (Node, lambda n: n)).same_as(tree)
    with pytest.raises(ValueError, match="Unknown structural map order: 'mid'"):
        structural_map(tree, order="mid")


def test_map_containers():
    arr = tvm_ffi.convert([1, 2, [3, 4]])
    result = structural_map(arr, (int, lambda v: v + 1))
    assert type(result) is tvm_ffi.Array and show(result) == "[2,3,[4,5]]"
    assert show(arr) == "[1,2,[3,4]]"
    assert structural_map(arr, (str, lambda s: s)).same_as(arr)
    lst = tvm_ffi.List([1, 2, tvm_ffi.List([3])])
    result = structural_map(lst, (int, lambda v: v + 1))
    assert type(result) is tvm_ffi.List and show(result) == "[2,3,[4]]"
    assert show(lst) == "[1,2,[3]]" and not result.same_as(lst)
    d = tvm_ffi.Dict({"a": 1, "b": 2})
    result = structural_map(d, (int, lambda v: v + 1))
    assert type(result) is tvm_ffi.Dict and show(result) == "{a:2,b:3}" and show(d) == "{a:1,b:2}"
    m = tvm_ffi.Map({"a": 1, "b": [2]})
    result = structural_map(m, (int, lambda v: v + 1))
    assert type(result) is tvm_ffi.Map and show(result) == "{a:2,b:[3]}"
    assert show(m) == "{a:1,b:[2]}"


def test_map_regions_and_errors():
    make = tvm_ffi.get_global_func("testing.make_visit_region_graph")
    kinds = []
    result = structural_map(
        make(False),
        with_def_region_kind=(int, lambda v, k: (kinds.append((v, int(k))), v * 100)[1]),
    )
    assert kinds == [(1, 2), (2, 1), (3, 0)]
    assert (result.simple, result.pattern, result.ordinary) == (100, 200, 300)
    tree = make_tree()

    def raiser(v):
        if v == 2:
            raise ValueError("bad two")
        return v

    with pytest.raises(ValueError, match="bad two") as info:
        structural_map(tree, (int, raiser))
    assert context_names(info.value) == ["e", "Map", "d", "Array", "a"]
    with pytest.raises(RuntimeError, match="division by zero") as info:
        structural_map(tree, (Node, lambda n: 1 / 0 if n.name == "e" else n), order="pre")
    assert context_names(info.value) == ["e", "Map", "d", "Array", "a"]


def test_mutate_callbacks_and_inplace_mode():
    tree = make_tree()

    def mut(n, m):
        assert isinstance(m, tvm_ffi.StructuralMutator)
        if n.name == "a":
            return Node("A", m.mutate(n.kids), n.n)
        return Node(n.name + "'", n.kids, n.n)

    assert show(structural_mutate(tree, (Node, mut))) == "A7([b'0([c1(None)]),d'0({x:e2(None)})])"
    assert show(structural_mutate(tree, [(int, lambda v, m: v + 100)])) == (
        "a107([b100([c101(None)]),d100({x:e102(None)})])"
    )
    assert show(
        structural_mutate(tree, lambda v, m: m.default_mutate(v) if not isinstance(v, int) else -v)
    ) == "a-7([b0([c-1(None)]),d0({x:e-2(None)})])"

    def record(modes):
        return (tvm_ffi.List, lambda v, m, mode: (modes.append(int(mode)), m.default_mutate(v))[1])

    modes = []
    moved = tvm_ffi.List([1, 2, tvm_ffi.List([3])])
    assert show(structural_mutate(moved._move(), record(modes))) == "[1,2,[3]]"
    assert modes == [1, 0]
    modes = []
    kept = tvm_ffi.List([1, 2, tvm_ffi.List([3])])
    assert show(structural_mutate(kept, record(modes))) == "[1,2,[3]]"
    assert modes == [0, 0]
    with pytest.raises(TypeError, match="must accept \\(value, mutator\\)"):
        structural_mutate(tree, (Node, lambda n, m, a, b: n))


def test_map_variables_and_dag_nodes():
    x = Var("x", Var("T"))
    y = Var("y")
    prog = Let(x, 1, Let(y, x, [x, y, "s"]), note=x)

    def rename(v, k):
        return Var(v.name + ("_def" if k != DefRegionKind.NONE else "_use"), v.ty)

    assert show(structural_map(prog, with_def_region_kind=(Var, rename))) == (
        "let x_def:T_use:None=1 in let y_def:None=x_use:T_use:None in "
        "[x_use:T_use:None,y_use:None,'s'] [None] [x:T:None]"
    )
    assert show(
        structural_map(prog, (Var, lambda v: Var(v.name + "'", v.ty) if v.ty is None else v),
                       order="pre")
    ) == "let x:T':None=1 in let y':None=x:T':None in [x:T':None,y':None,'s'] [None] [x:T:None]"
    # A definition rewritten by its descent is reused at each use.
    result = structural_map(prog, (Var, lambda v: Var("U") if v.name == "T" else v))
    assert show(result) == (
        "let x:U:None=1 in let y:None=x:U:None in [x:U:None,y:None,'s'] [None] [x:T:None]"
    )
    assert result.body.body[0].same_as(result.var) and not result.var.same_as(x)
    fn = Fn([x, y], [x, y, Var("z")])
    result = structural_map(fn, (Var, lambda v: Var("U") if v.name == "T" else v))
    assert show(result) == "fn([x:U:None,y:None]) [x:U:None,y:None,z:None]"
    assert result.body[0].same_as(result.params[0]) and result.body[1].same_as(y)
    # A DAG node is mutated once and shared.
    d = Dag(1)
    seen = []
    result = structural_map([d, d, Dag(d)], (int, lambda v: (seen.append(v), v + 1)[1]))
    assert show(result) == "[dag(2),dag(2),dag(dag(2))]" and seen == [1]
    assert result[0].same_as(result[1]) and result[2].x.same_as(result[0])


def test_mutator_methods():
    x = Var("x")
    prog = Let(x, 1, Let(Var("y"), x, [x, "s"]))

    def rebind(v, m):
        new_var = Var(v.var.name.upper())
        m.var_remap_set(v.var, new_var)
        return Let(new_var, m.mutate(v.value), m.mutate(v.body), v.note)

    assert show(structural_mutate(prog, (Let, rebind))) == (
        "let X:None=1 in let Y:None=X:None in [X:None,'s'] [None] [None]"
    )
    log = []

    def probe(v, m):
        log.append(m.var_remap_get(v.var))
        m.var_remap_set(v.var, 5)
        log.append(m.var_remap_get(v.var))
        m.var_remap_set(v.var, 6)
        log.append(m.var_remap_get(v.var))
        for call in (lambda: m.var_remap_get(3), lambda: m.var_remap_set(3, 1)):
            with pytest.raises(TypeError, match="^Variable-remap key must be an object-backed value$"):
                call()
        log.append(int(m.def_region_kind()))
        log.append(m.with_def_region_kind(2, lambda: int(m.def_region_kind())))
        log.append(m.with_def_region_kind(1, lambda: m.with_def_region_kind(2, m.def_region_kind)))
        return v

    assert structural_mutate(prog, (Let, probe)).same_as(prog)
    assert log == [None, 5, 6, 0, 2, 1]


@py_class("visit_tests.Hooked")
class Hooked(tvm_ffi.Object):
    a: Any = None
    b: Any = None

    @staticmethod
    def __s_visit__(visitor, value):
        return visitor.visit(value.b)

    @staticmethod
    def __s_mutate__(mutator, value):
        return Hooked(value.a, mutator.mutate(value.b))


def test_python_hooks_and_edge_results():
    hooked = Hooked(1, [2, 3])
    out = []
    assert structural_walk(hooked, (int, lambda v: out.append(v))) is None
    assert out == [2, 3]
    mapped = structural_map(hooked, (int, lambda v: v * 10))
    assert mapped.a == 1 and list(mapped.b) == [20, 30]
    # A walk result is read as a 32-bit tag: 2**32 + 1 is the skip tag.
    for result, want in ((2**32 + 1, ["(1, (2,))"]), (-(2**31), ["(1, (2,))", "1", "(2,)", "2"])):
        out = []
        structural_walk([1, [2]], lambda v, r=result: (out.append(str(v)), r)[1], order="pre")
        assert out == want
    with pytest.raises(TypeError, match="expected WalkResult, but got float"):
        structural_walk([1], lambda v: 1.0, order="pre")
    with pytest.raises(RuntimeError) as info:
        structural_map([1, 2], (int, lambda v: 1 / 0))
    assert repr(info.value.__tvm_ffi_error__.extra_context) == (
        "ffi.VisitErrorContext(reverse_visit_pattern=[(1, 2)], prev_error_context=None)"
    )
    assert structural_map(5, (int, lambda v: v + 1)) == 6
    assert structural_map(None, (int, lambda v: v + 1)) is None
    assert structural_walk(None, lambda v: pytest.fail("None is not visited")) is None
    assert structural_map("abc", (str, lambda v: v + "!")) == "abc!"
    assert structural_mutate("abc", lambda v, m: m.default_mutate(v)) == "abc"
    assert structural_mutate(None, lambda v, m: 7) == 7
    assert structural_map(None, lambda v: 7) == 7
    assert structural_map(None, lambda v: 7, order="pre") == 7


def test_map_cxx_objects():
    pair = tvm_ffi.testing.TestIntPair(1, 2)
    result = structural_map(pair, (int, lambda v: v + 10))
    assert type(result) is tvm_ffi.testing.TestIntPair
    assert (result.a, result.b, pair.a, pair.b) == (11, 12, 1, 2)
    out = []
    structural_walk(pair, lambda v: out.append(str(v)))
    assert out == ["1", "2", "testing.TestIntPair(a=1, b=2)"]
    value = tvm_ffi.testing.TestNonCopyable(1)
    with pytest.raises(TypeError, match="^__ffi_shallow_copy__ must be an ffi.Function$") as info:
        structural_map(value, (int, lambda v: v + 1))
    assert info.value.__tvm_ffi_error__.extra_context.reverse_visit_pattern[0].same_as(value)
