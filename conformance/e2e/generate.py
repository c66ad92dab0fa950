#!/usr/bin/env python3
"""Writes pactum's end-to-end test programs: MLIR test functions in the style of IREE's
`tests/e2e` suites (each function builds its inputs, runs one op, and asserts the result with
the `check` dialect), for the input dialects IREE's suites use: StableHLO, TOSA and
linalg/tensor/math (plus sub-byte and f8 types).

The programs are ours, generated: inputs come from a seeded NumPy generator and every
expected value is computed here by NumPy (ml_dtypes for bf16 and f8), never typed by hand.
The compiled modules run through pactum (`pactum test`) and through IREE's runtime
(`iree.runtime` with a Python `check` module), and `run.py` compares the two per function.

Usage: generate.py OUT_DIR   (writes OUT_DIR/<suite>/<family>.mlir and OUT_DIR/cases.json)
"""

import json
import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

SEED = 20261128

# MLIR element type of each NumPy dtype the suites use (integers are signless in MLIR).
MLIR_TYPES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
    np.dtype(ml_dtypes.float8_e5m2): "f8E5M2",
    np.dtype(ml_dtypes.float8_e4m3fnuz): "f8E4M3FNUZ",
    np.dtype(ml_dtypes.float8_e5m2fnuz): "f8E5M2FNUZ",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.bool_): "i1",
}


class Value:
    """A tensor value of a test program: its NumPy contents and MLIR element type."""

    def __init__(self, array, element=None):
        self.array = np.asarray(array)
        self.element = element or MLIR_TYPES[self.array.dtype]

    @property
    def type(self):
        dims = "".join(f"{d}x" for d in self.array.shape)
        return f"tensor<{dims}{self.element}>"


def literal(value):
    """A `dense<...>` attribute holding exactly the value's contents."""
    flat = value.array.reshape(-1)
    if value.element == "i1":
        items = ["true" if x else "false" for x in flat]
    elif value.array.dtype.kind in "iu":
        items = [str(int(x)) for x in flat]
    else:
        # repr of the exact double of each element: parses back to the same narrow value.
        items = [repr(float(x)) for x in flat]

    def nest(items, shape):
        if not shape:
            return items[0]
        step = len(items) // shape[0] if shape[0] else 0
        return "[" + ", ".join(nest(items[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"

    return f"dense<{nest(items, list(value.array.shape))}> : {value.type}"


class Case:
    """One test function: inputs, the op's MLIR text, and NumPy's expected result."""

    def __init__(self, name, inputs, body, expected, tolerance=None):
        self.name = name
        self.inputs = inputs
        self.body = body
        self.expected = expected
        self.tolerance = tolerance

    def mlir(self):
        lines = [f"func.func @{self.name}() {{"]
        for i, value in enumerate(self.inputs):
            lines.append(f"  %in{i} = util.unfoldable_constant {literal(value)}")
        names = [f"%in{i}" for i in range(len(self.inputs))]
        types = [v.type for v in self.inputs]
        body = self.body(names, types, self.expected.type)
        lines += ["  " + line for line in body.strip().splitlines()]
        if self.tolerance is None:
            lines.append(f"  check.expect_eq_const(%r, {literal(self.expected)}) : {self.expected.type}")
        else:
            atol, rtol = self.tolerance
            lines.append(
                f'  "check.expect_almost_eq_const"(%r) <{{atol = {atol:e} : f32, rtol = {rtol:e} : f32, '
                f"value = {literal(self.expected)}}}> : ({self.expected.type}) -> ()"
            )
        lines += ["  return", "}"]
        return "\n".join(lines)


rng = np.random.default_rng(SEED)


def floats(shape, low=-4.0, high=4.0, dtype=np.float32):
    return rng.uniform(low, high, size=shape).astype(dtype)


def ints(shape, low=-100, high=100, dtype=np.int32):
    return rng.integers(low, high, size=shape, endpoint=True).astype(dtype)


def nonzero_ints(shape, low=-20, high=20, dtype=np.int32):
    values = ints(shape, low, high, dtype)
    values[values == 0] = 3
    return values


def close(kind):
    """Tolerances (atol, rtol): exact arithmetic, transcendental functions, accumulations."""
    return {"exact": (1e-6, 0.0), "math": (1e-4, 1e-4), "sum": (1e-4, 1e-5), "f16": (1e-2, 1e-2)}[kind]


def trunc_div(a, b):
    """C integer division (rounds toward zero), as StableHLO and arith.divsi define it."""
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


def trunc_rem(a, b):
    return (a - trunc_div(a, b) * b).astype(a.dtype)


def clz32(values):
    out = np.zeros(values.shape, np.int32)
    for i, v in np.ndenumerate(values.astype(np.uint32)):
        out[i] = 32 - int(v).bit_length()
    return out


def popcount32(values):
    out = np.zeros(values.shape, np.int32)
    for i, v in np.ndenumerate(values.astype(np.uint32)):
        out[i] = bin(int(v)).count("1")
    return out


def unary(op, a, result, tolerance):
    return Value(a), (lambda n, t, r: f"%r = {op} {n[0]} : {t[0]}"), Value(result), tolerance


# ---------------------------------------------------------------------------------------------
# StableHLO (compiled with --iree-input-type=stablehlo)


def stablehlo_cases():
    families = {}

    def binary_generic(op):
        return lambda n, t, r: f'%r = "stablehlo.{op}"({n[0]}, {n[1]}) : ({t[0]}, {t[1]}) -> {r}'

    def unary_generic(op):
        return lambda n, t, r: f'%r = "stablehlo.{op}"({n[0]}) : ({t[0]}) -> {r}'

    cases = []
    a, b = floats((2, 3)), floats((2, 3))
    pos = floats((2, 3), 0.25, 4.0)
    for op, fn, tol in [
        ("add", np.add, "exact"), ("subtract", np.subtract, "exact"), ("multiply", np.multiply, "exact"),
        ("divide", np.divide, "exact"), ("maximum", np.maximum, "exact"), ("minimum", np.minimum, "exact"),
        ("atan2", np.arctan2, "math"), ("remainder", np.fmod, "math"),
    ]:
        cases.append(Case(f"{op}_f32", [Value(a), Value(b)], binary_generic(op),
                          Value(fn(a, b).astype(np.float32)), close(tol)))
    cases.append(Case("power_f32", [Value(pos), Value(b)], binary_generic("power"),
                      Value(np.power(pos, b).astype(np.float32)), close("math")))
    x, y = ints((2, 3)), nonzero_ints((2, 3))
    shift = ints((2, 3), 0, 31)
    for op, fn in [
        ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", trunc_div),
        ("remainder", trunc_rem), ("maximum", np.maximum), ("minimum", np.minimum), ("and", np.bitwise_and),
        ("or", np.bitwise_or), ("xor", np.bitwise_xor),
    ]:
        cases.append(Case(f"{op}_i32", [Value(x), Value(y)], binary_generic(op), Value(fn(x, y).astype(np.int32))))
    cases.append(Case("shift_left_i32", [Value(x), Value(shift)], binary_generic("shift_left"),
                      Value((x.astype(np.int64) << shift).astype(np.int64).astype(np.uint32).view(np.int32))))
    cases.append(Case("shift_right_arithmetic_i32", [Value(x), Value(shift)], binary_generic("shift_right_arithmetic"),
                      Value((x >> shift).astype(np.int32))))
    cases.append(Case("shift_right_logical_i32", [Value(x), Value(shift)], binary_generic("shift_right_logical"),
                      Value((x.view(np.uint32) >> shift.astype(np.uint32)).view(np.int32))))
    families["elementwise_binary"] = cases

    cases = []
    u = floats((2, 4))
    for op, fn, arg, tol in [
        ("abs", np.abs, u, "exact"), ("negate", np.negative, u, "exact"), ("exponential", np.exp, u, "math"),
        ("log", np.log, pos, "math"), ("tanh", np.tanh, u, "math"), ("sqrt", np.sqrt, pos, "math"),
        ("rsqrt", lambda v: 1 / np.sqrt(v), pos, "math"), ("floor", np.floor, u, "exact"),
        ("ceil", np.ceil, u, "exact"), ("round_nearest_even", np.rint, u, "exact"),
        ("sine", np.sin, u, "math"), ("cosine", np.cos, u, "math"),
        ("logistic", lambda v: 1 / (1 + np.exp(-v)), u, "math"), ("sign", np.sign, u, "exact"),
        ("exponential_minus_one", np.expm1, u, "math"), ("log_plus_one", np.log1p, pos, "math"),
        ("cbrt", np.cbrt, u, "math"),
    ]:
        cases.append(Case(f"{op}_f32", [Value(arg)], unary_generic(op), Value(fn(arg).astype(np.float32)), close(tol)))
    half = (u / 2).astype(np.float16)
    cases.append(Case("exponential_f16", [Value(half)], unary_generic("exponential"),
                      Value(np.exp(half.astype(np.float32)).astype(np.float16)), close("f16")))
    brain = u.astype(ml_dtypes.bfloat16)
    cases.append(Case("tanh_bf16", [Value(brain)], unary_generic("tanh"),
                      Value(np.tanh(brain.astype(np.float32)).astype(ml_dtypes.bfloat16)), close("f16")))
    iu = ints((2, 4), -1000, 1000)
    for op, fn in [("abs", np.abs), ("negate", np.negative), ("not", np.invert), ("sign", np.sign),
                   ("popcnt", popcount32), ("count_leading_zeros", clz32)]:
        cases.append(Case(f"{op}_i32", [Value(iu)], unary_generic(op), Value(fn(iu).astype(np.int32))))
    families["elementwise_unary"] = cases

    cases = []
    for direction, fn in [("EQ", np.equal), ("NE", np.not_equal), ("LT", np.less), ("LE", np.less_equal),
                          ("GT", np.greater), ("GE", np.greater_equal)]:
        xs, ys = ints((6,), -3, 3), ints((6,), -3, 3)
        cases.append(Case(
            f"compare_{direction.lower()}_i32", [Value(xs), Value(ys)],
            lambda n, t, r, d=direction: (
                f"%c = stablehlo.compare {d}, {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> tensor<6xi1>\n"
                f'%r = "stablehlo.convert"(%c) : (tensor<6xi1>) -> {r}'),
            Value(fn(xs, ys).astype(np.int32))))
        fa, fb = floats((6,)), floats((6,))
        fb[:2] = fa[:2]
        cases.append(Case(
            f"compare_{direction.lower()}_f32", [Value(fa), Value(fb)],
            lambda n, t, r, d=direction: (
                f"%c = stablehlo.compare {d}, {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> tensor<6xi1>\n"
                f'%r = "stablehlo.convert"(%c) : (tensor<6xi1>) -> {r}'),
            Value(fn(fa, fb).astype(np.int32))))
    pa, pb = floats((6,)), floats((6,))
    cases.append(Case(
        "select_f32", [Value(pa), Value(pb)],
        lambda n, t, r: (
            f"%c = stablehlo.compare GT, {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> tensor<6xi1>\n"
            f'%r = "stablehlo.select"(%c, {n[0]}, {n[1]}) : (tensor<6xi1>, {t[0]}, {t[1]}) -> {r}'),
        Value(np.where(pa > pb, pa, pb)), close("exact")))
    lo, hi = np.float32(-1.0), np.float32(1.5)
    cases.append(Case(
        "clamp_f32", [Value(np.array(lo)), Value(pa), Value(np.array(hi))],
        lambda n, t, r: f'%r = "stablehlo.clamp"({n[0]}, {n[1]}, {n[2]}) : ({t[0]}, {t[1]}, {t[2]}) -> {r}',
        Value(np.clip(pa, lo, hi)), close("exact")))
    families["compare_select"] = cases

    cases = []

    def convert(n, t, r):
        return f'%r = "stablehlo.convert"({n[0]}) : ({t[0]}) -> {r}'

    cf = floats((8,), -100.0, 100.0)
    ci = ints((8,), -300, 300)
    cases.append(Case("convert_f32_to_i32", [Value(cf)], convert, Value(cf.astype(np.int32))))
    cases.append(Case("convert_i32_to_f32", [Value(ci)], convert, Value(ci.astype(np.float32)), close("exact")))
    cases.append(Case("convert_i32_to_i8", [Value(ci)], convert, Value(ci.astype(np.int8))))
    cases.append(Case("convert_i8_to_i32", [Value(ci.astype(np.int8))], convert, Value(ci.astype(np.int8).astype(np.int32))))
    cases.append(Case("convert_f32_to_f16", [Value(cf)], convert, Value(cf.astype(np.float16)), close("exact")))
    cases.append(Case("convert_f16_to_f32", [Value(cf.astype(np.float16))], convert,
                      Value(cf.astype(np.float16).astype(np.float32)), close("exact")))
    cases.append(Case("convert_f32_to_bf16", [Value(cf)], convert, Value(cf.astype(ml_dtypes.bfloat16)), close("exact")))
    cases.append(Case("convert_bf16_to_f32", [Value(cf.astype(ml_dtypes.bfloat16))], convert,
                      Value(cf.astype(ml_dtypes.bfloat16).astype(np.float32)), close("exact")))
    families["convert"] = cases

    cases = []
    ma, mb = floats((3, 4)), floats((4, 5))
    cases.append(Case(
        "dot_f32", [Value(ma), Value(mb)],
        lambda n, t, r: f'%r = "stablehlo.dot"({n[0]}, {n[1]}) : ({t[0]}, {t[1]}) -> {r}',
        Value(ma @ mb), close("sum")))
    ba, bb = floats((2, 3, 4)), floats((2, 4, 2))
    cases.append(Case(
        "dot_general_batch_f32", [Value(ba), Value(bb)],
        lambda n, t, r: (
            f"%r = stablehlo.dot_general {n[0]}, {n[1]}, batching_dims = [0] x [0], "
            f"contracting_dims = [2] x [1] : ({t[0]}, {t[1]}) -> {r}"),
        Value(np.matmul(ba, bb)), close("sum")))
    ia, ib = ints((3, 4), -128, 127, np.int8), ints((4, 2), -128, 127, np.int8)
    cases.append(Case(
        "dot_general_i8_i32", [Value(ia), Value(ib)],
        lambda n, t, r: (
            f"%r = stablehlo.dot_general {n[0]}, {n[1]}, contracting_dims = [1] x [0] : ({t[0]}, {t[1]}) -> {r}"),
        Value(ia.astype(np.int32) @ ib.astype(np.int32))))
    families["dot"] = cases

    cases = []
    ra = floats((3, 4))
    for kind, combine, init, fn, tol in [
        ("sum", "stablehlo.add", "0.0", lambda v: v.sum(axis=1), "sum"),
        ("max", "stablehlo.maximum", "0xFF800000", lambda v: v.max(axis=1), "exact"),
    ]:
        cases.append(Case(
            f"reduce_{kind}_f32", [Value(ra)],
            lambda n, t, r, combine=combine, init=init: (
                f"%init = stablehlo.constant dense<{init}> : tensor<f32>\n"
                f'%r = "stablehlo.reduce"({n[0]}, %init) ({{\n'
                f"^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
                f'  %s = "{combine}"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n'
                f'  "stablehlo.return"(%s) : (tensor<f32>) -> ()\n'
                f"}}) {{dimensions = array<i64: 1>}} : ({t[0]}, tensor<f32>) -> {r}"),
            Value(fn(ra).astype(np.float32)), close(tol)))
    ri = ints((3, 4))
    cases.append(Case(
        "reduce_sum_i32", [Value(ri)],
        lambda n, t, r: (
            "%init = stablehlo.constant dense<0> : tensor<i32>\n"
            f'%r = "stablehlo.reduce"({n[0]}, %init) ({{\n'
            "^bb0(%x: tensor<i32>, %y: tensor<i32>):\n"
            '  %s = "stablehlo.add"(%x, %y) : (tensor<i32>, tensor<i32>) -> tensor<i32>\n'
            '  "stablehlo.return"(%s) : (tensor<i32>) -> ()\n'
            f"}}) {{dimensions = array<i64: 0>}} : ({t[0]}, tensor<i32>) -> {r}"),
        Value(ri.sum(axis=0).astype(np.int32))))
    families["reduce"] = cases

    cases = []
    sa = floats((2, 3))
    cases.append(Case("transpose_f32", [Value(sa)],
                      lambda n, t, r: f"%r = stablehlo.transpose {n[0]}, dims = [1, 0] : ({t[0]}) -> {r}",
                      Value(sa.T.copy()), close("exact")))
    cases.append(Case("reshape_f32", [Value(sa)],
                      lambda n, t, r: f'%r = "stablehlo.reshape"({n[0]}) : ({t[0]}) -> {r}',
                      Value(sa.reshape(3, 2)), close("exact")))
    cases.append(Case("broadcast_in_dim_f32", [Value(sa[0])],
                      lambda n, t, r: f"%r = stablehlo.broadcast_in_dim {n[0]}, dims = [1] : ({t[0]}) -> {r}",
                      Value(np.broadcast_to(sa[0], (4, 3)).copy()), close("exact")))
    sb = floats((2, 2))
    cases.append(Case("concatenate_f32", [Value(sa), Value(sb)],
                      lambda n, t, r: f"%r = stablehlo.concatenate {n[0]}, {n[1]}, dim = 1 : ({t[0]}, {t[1]}) -> {r}",
                      Value(np.concatenate([sa, sb], axis=1)), close("exact")))
    big = floats((4, 5))
    cases.append(Case("slice_f32", [Value(big)],
                      lambda n, t, r: f"%r = stablehlo.slice {n[0]} [1:4:2, 0:5:2] : ({t[0]}) -> {r}",
                      Value(big[1:4:2, 0:5:2].copy()), close("exact")))
    cases.append(Case("reverse_f32", [Value(big)],
                      lambda n, t, r: f"%r = stablehlo.reverse {n[0]}, dims = [1] : {t[0]}",
                      Value(big[:, ::-1].copy()), close("exact")))
    padded = np.pad(sa, ((1, 0), (2, 1)), constant_values=np.float32(0.5))
    cases.append(Case("pad_f32", [Value(sa)],
                      lambda n, t, r: (
                          "%p = stablehlo.constant dense<0.5> : tensor<f32>\n"
                          f"%r = stablehlo.pad {n[0]}, %p, low = [1, 2], high = [0, 1], interior = [0, 0]"
                          f" : ({t[0]}, tensor<f32>) -> {r}"),
                      Value(padded), close("exact")))
    base = ints((2, 4))
    cases.append(Case("iota_plus_i32", [Value(base)],
                      lambda n, t, r: (
                          f"%i = stablehlo.iota dim = 1 : {t[0]}\n"
                          f'%r = "stablehlo.add"({n[0]}, %i) : ({t[0]}, {t[0]}) -> {r}'),
                      Value(base + np.arange(4, dtype=np.int32)[None, :])))
    start = np.array(1, np.int32)
    cases.append(Case("dynamic_slice_f32", [Value(big), Value(start)],
                      lambda n, t, r: (
                          "%z = stablehlo.constant dense<0> : tensor<i32>\n"
                          f"%r = stablehlo.dynamic_slice {n[0]}, {n[1]}, %z, sizes = [2, 3]"
                          f" : ({t[0]}, {t[1]}, tensor<i32>) -> {r}"),
                      Value(big[1:3, 0:3].copy()), close("exact")))
    update = floats((2, 2))
    updated = big.copy()
    updated[1:3, 2:4] = update
    cases.append(Case("dynamic_update_slice_f32", [Value(big), Value(update), Value(start), Value(np.ones_like(big))],
                      lambda n, t, r: (
                          "%c2 = stablehlo.constant dense<2> : tensor<i32>\n"
                          f'%d = "stablehlo.multiply"({n[0]}, {n[3]}) : ({t[0]}, {t[3]}) -> {t[0]}\n'
                          f"%r = stablehlo.dynamic_update_slice %d, {n[1]}, {n[2]}, %c2"
                          f" : ({t[0]}, {t[1]}, {t[2]}, tensor<i32>) -> {r}"),
                      Value(updated), close("exact")))
    families["shape"] = cases

    cases = []
    image, kernel = floats((1, 5, 5, 2)), floats((3, 3, 2, 4))
    conv = np.zeros((1, 3, 3, 4), np.float32)
    for i in range(3):
        for j in range(3):
            conv[0, i, j] = np.einsum("hwc,hwco->o", image[0, i:i + 3, j:j + 3], kernel)
    cases.append(Case(
        "convolution_nhwc_f32", [Value(image), Value(kernel)],
        lambda n, t, r: (
            f"%r = stablehlo.convolution({n[0]}, {n[1]}) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
            " window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]}"
            " {batch_group_count = 1 : i64, feature_group_count = 1 : i64}"
            f" : ({t[0]}, {t[1]}) -> {r}"),
        Value(conv), close("sum")))
    pool_in = floats((1, 4, 4, 1))
    pooled = pool_in.reshape(1, 2, 2, 2, 2, 1).max(axis=(2, 4))
    cases.append(Case(
        "reduce_window_max_f32", [Value(pool_in)],
        lambda n, t, r: (
            "%init = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
            f'%r = "stablehlo.reduce_window"({n[0]}, %init) ({{\n'
            "^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
            '  %m = "stablehlo.maximum"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n'
            '  "stablehlo.return"(%m) : (tensor<f32>) -> ()\n'
            "}) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}"
            f" : ({t[0]}, tensor<f32>) -> {r}"),
        Value(pooled), close("exact")))
    families["convolution_pooling"] = cases

    cases = []
    keys = floats((8,))
    cases.append(Case(
        "sort_f32", [Value(keys)],
        lambda n, t, r: (
            f'%r = "stablehlo.sort"({n[0]}) ({{\n'
            "^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
            "  %lt = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
            '  "stablehlo.return"(%lt) : (tensor<i1>) -> ()\n'
            f"}}) {{dimension = 0 : i64, is_stable = false}} : ({t[0]}) -> {r}"),
        Value(np.sort(keys)), close("exact")))
    limit = np.array(10, np.int32)
    cases.append(Case(
        "while_sum_i32", [Value(limit)],
        lambda n, t, r: (
            "%zero = stablehlo.constant dense<0> : tensor<i32>\n"
            "%one = stablehlo.constant dense<1> : tensor<i32>\n"
            f"%w:2 = stablehlo.while(%i = %zero, %acc = %zero) : tensor<i32>, tensor<i32>\n"
            " cond {\n"
            f"  %c = stablehlo.compare LT, %i, {n[0]} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
            "  stablehlo.return %c : tensor<i1>\n"
            " } do {\n"
            "  %n = stablehlo.add %i, %one : tensor<i32>\n"
            "  %a = stablehlo.add %acc, %i : tensor<i32>\n"
            "  stablehlo.return %n, %a : tensor<i32>, tensor<i32>\n"
            " }\n"
            "%r = stablehlo.add %w#1, %zero : tensor<i32>"),
        Value(np.array(sum(range(10)), np.int32))))
    families["sort_control_flow"] = cases
    return families


# ---------------------------------------------------------------------------------------------
# TOSA (compiled with --iree-input-type=tosa)


def tosa_cases():
    families = {}
    a, b = floats((2, 3)), floats((2, 3))
    pos = floats((2, 3), 0.25, 4.0)
    x, y = ints((2, 3)), ints((2, 3))
    shift = ints((2, 3), 0, 31)

    def binary(op):
        return lambda n, t, r: f"%r = tosa.{op} {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> {r}"

    def unary_op(op):
        return lambda n, t, r: f"%r = tosa.{op} {n[0]} : ({t[0]}) -> {r}"

    cases = []
    for op, fn in [("add", np.add), ("sub", np.subtract), ("maximum", np.maximum), ("minimum", np.minimum)]:
        cases.append(Case(f"{op}_f32", [Value(a), Value(b)], binary(op), Value(fn(a, b)), close("exact")))
        cases.append(Case(f"{op}_i32", [Value(x), Value(y)], binary(op), Value(fn(x, y).astype(np.int32))))
    cases.append(Case("pow_f32", [Value(pos), Value(b)], binary("pow"), Value(np.power(pos, b)), close("math")))
    for op, fn in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)]:
        cases.append(Case(f"{op}_i32", [Value(x), Value(y)], binary(op), Value(fn(x, y).astype(np.int32))))
    cases.append(Case("logical_left_shift_i32", [Value(x), Value(shift)], binary("logical_left_shift"),
                      Value((x.astype(np.int64) << shift).astype(np.uint32).view(np.int32))))
    cases.append(Case("logical_right_shift_i32", [Value(x), Value(shift)], binary("logical_right_shift"),
                      Value((x.view(np.uint32) >> shift.astype(np.uint32)).view(np.int32))))
    cases.append(Case(
        "arithmetic_right_shift_i32", [Value(x), Value(shift)],
        lambda n, t, r: f'%r = "tosa.arithmetic_right_shift"({n[0]}, {n[1]}) <{{round = false}}> : ({t[0]}, {t[1]}) -> {r}',
        Value((x >> shift).astype(np.int32))))
    cases.append(Case(
        "mul_f32", [Value(a), Value(b)],
        lambda n, t, r: (
            '%s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>\n'
            f"%r = tosa.mul {n[0]}, {n[1]}, %s : ({t[0]}, {t[1]}, tensor<1xi8>) -> {r}"),
        Value(a * b), close("exact")))
    cases.append(Case(
        "mul_i32", [Value(x), Value(y)],
        lambda n, t, r: (
            '%s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>\n'
            f"%r = tosa.mul {n[0]}, {n[1]}, %s : ({t[0]}, {t[1]}, tensor<1xi8>) -> {r}"),
        Value((x * y).astype(np.int32))))
    families["elementwise_binary"] = cases

    cases = []
    u = floats((2, 4))
    for op, fn, arg, tol in [
        ("abs", np.abs, u, "exact"), ("exp", np.exp, u, "math"), ("log", np.log, pos, "math"),
        ("tanh", np.tanh, u, "math"), ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), u, "math"),
        ("reciprocal", lambda v: 1 / v, pos, "math"), ("rsqrt", lambda v: 1 / np.sqrt(v), pos, "math"),
        ("floor", np.floor, u, "exact"), ("ceil", np.ceil, u, "exact"), ("sin", np.sin, u, "math"),
        ("cos", np.cos, u, "math"),
    ]:
        cases.append(Case(f"{op}_f32", [Value(arg)], unary_op(op), Value(fn(arg).astype(np.float32)), close(tol)))
    iu = ints((2, 4), -1000, 1000)
    cases.append(Case("abs_i32", [Value(iu)], unary_op("abs"), Value(np.abs(iu))))
    cases.append(Case("bitwise_not_i32", [Value(iu)], unary_op("bitwise_not"), Value(np.invert(iu))))
    cases.append(Case("clz_i32", [Value(iu)], unary_op("clz"), Value(clz32(iu))))
    cases.append(Case(
        "clamp_f32", [Value(u)],
        lambda n, t, r: f'%r = "tosa.clamp"({n[0]}) <{{min_val = -1.0 : f32, max_val = 1.5 : f32}}> : ({t[0]}) -> {r}',
        Value(np.clip(u, -1.0, 1.5)), close("exact")))
    cases.append(Case(
        "clamp_i8", [Value(iu.astype(np.int8))],
        lambda n, t, r: f'%r = "tosa.clamp"({n[0]}) <{{min_val = -10 : i8, max_val = 20 : i8}}> : ({t[0]}) -> {r}',
        Value(np.clip(iu.astype(np.int8), -10, 20).astype(np.int8))))
    cases.append(Case("cast_f32_to_i32", [Value(u * 10)], unary_op("cast"),
                      Value(np.rint(u * 10).astype(np.int32))))
    cases.append(Case("cast_i32_to_f32", [Value(iu)], unary_op("cast"), Value(iu.astype(np.float32)), close("exact")))
    cases.append(Case("cast_f32_to_f16", [Value(u)], unary_op("cast"), Value(u.astype(np.float16)), close("exact")))
    families["elementwise_unary"] = cases

    cases = []
    ca, cb = ints((6,), -3, 3), ints((6,), -3, 3)
    for op, fn in [("equal", np.equal), ("greater", np.greater), ("greater_equal", np.greater_equal)]:
        cases.append(Case(
            f"{op}_i32", [Value(ca), Value(cb)],
            lambda n, t, r, op=op: (
                f"%c = tosa.{op} {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> tensor<6xi1>\n"
                f"%r = tosa.cast %c : (tensor<6xi1>) -> {r}"),
            Value(fn(ca, cb).astype(np.int32))))
    fa, fb = floats((6,)), floats((6,))
    cases.append(Case(
        "select_f32", [Value(fa), Value(fb)],
        lambda n, t, r: (
            f"%c = tosa.greater {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> tensor<6xi1>\n"
            f"%r = tosa.select %c, {n[0]}, {n[1]} : (tensor<6xi1>, {t[0]}, {t[1]}) -> {r}"),
        Value(np.where(fa > fb, fa, fb)), close("exact")))
    families["compare_select"] = cases

    cases = []
    ra = floats((3, 4))
    for op, fn, tol in [("reduce_sum", lambda v: v.sum(axis=1, keepdims=True), "sum"),
                        ("reduce_max", lambda v: v.max(axis=1, keepdims=True), "exact"),
                        ("reduce_min", lambda v: v.min(axis=1, keepdims=True), "exact"),
                        ("reduce_product", lambda v: v.prod(axis=1, keepdims=True), "math")]:
        cases.append(Case(f"{op}_f32", [Value(ra)],
                          lambda n, t, r, op=op: f'%r = "tosa.{op}"({n[0]}) <{{axis = 1 : i32}}> : ({t[0]}) -> {r}',
                          Value(fn(ra).astype(np.float32)), close(tol)))
    ri = ints((3, 4))
    cases.append(Case("reduce_sum_i32", [Value(ri)],
                      lambda n, t, r: f'%r = "tosa.reduce_sum"({n[0]}) <{{axis = 0 : i32}}> : ({t[0]}) -> {r}',
                      Value(ri.sum(axis=0, keepdims=True).astype(np.int32))))
    cases.append(Case("argmax_f32", [Value(ra)],
                      lambda n, t, r: f'%r = "tosa.argmax"({n[0]}) <{{axis = 1 : i32}}> : ({t[0]}) -> {r}',
                      Value(ra.argmax(axis=1).astype(np.int32))))
    families["reduce"] = cases

    cases = []
    ma, mb = floats((1, 3, 4)), floats((1, 4, 5))
    cases.append(Case(
        "matmul_f32", [Value(ma), Value(mb)],
        lambda n, t, r: (
            '%za = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>\n'
            f"%r = tosa.matmul {n[0]}, {n[1]}, %za, %za : ({t[0]}, {t[1]}, tensor<1xf32>, tensor<1xf32>) -> {r}"),
        Value(np.matmul(ma, mb)), close("sum")))
    ia, ib = ints((1, 3, 4), -128, 127, np.int8), ints((1, 4, 2), -128, 127, np.int8)
    cases.append(Case(
        "matmul_i8_i32", [Value(ia), Value(ib)],
        lambda n, t, r: (
            '%za = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>\n'
            f"%r = tosa.matmul {n[0]}, {n[1]}, %za, %za : ({t[0]}, {t[1]}, tensor<1xi8>, tensor<1xi8>) -> {r}"),
        Value(np.matmul(ia.astype(np.int32), ib.astype(np.int32)))))
    pool_in = floats((1, 4, 4, 1))
    cases.append(Case(
        "max_pool2d_f32", [Value(pool_in)],
        lambda n, t, r: (
            f'%r = "tosa.max_pool2d"({n[0]}) <{{kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, '
            f"pad = array<i64: 0, 0, 0, 0>}}> : ({t[0]}) -> {r}"),
        Value(pool_in.reshape(1, 2, 2, 2, 2, 1).max(axis=(2, 4))), close("exact")))
    families["matmul_pooling"] = cases

    cases = []
    sa = floats((2, 3))
    cases.append(Case(
        "transpose_f32", [Value(sa)],
        lambda n, t, r: f'%r = "tosa.transpose"({n[0]}) <{{perms = array<i32: 1, 0>}}> : ({t[0]}) -> {r}',
        Value(sa.T.copy()), close("exact")))
    cases.append(Case(
        "reshape_f32", [Value(sa)],
        lambda n, t, r: (
            '%s = "tosa.const_shape"() <{values = dense<[3, 2]> : tensor<2xindex>}> : () -> !tosa.shape<2>\n'
            f"%r = tosa.reshape {n[0]}, %s : ({t[0]}, !tosa.shape<2>) -> {r}"),
        Value(sa.reshape(3, 2)), close("exact")))
    sb = floats((2, 2))
    cases.append(Case(
        "concat_f32", [Value(sa), Value(sb)],
        lambda n, t, r: f'%r = "tosa.concat"({n[0]}, {n[1]}) <{{axis = 1 : i32}}> : ({t[0]}, {t[1]}) -> {r}',
        Value(np.concatenate([sa, sb], axis=1)), close("exact")))
    cases.append(Case(
        "reverse_f32", [Value(sa)],
        lambda n, t, r: f'%r = "tosa.reverse"({n[0]}) <{{axis = 1 : i32}}> : ({t[0]}) -> {r}',
        Value(sa[:, ::-1].copy()), close("exact")))
    cases.append(Case(
        "tile_f32", [Value(sa)],
        lambda n, t, r: (
            '%m = "tosa.const_shape"() <{values = dense<[2, 1]> : tensor<2xindex>}> : () -> !tosa.shape<2>\n'
            f"%r = tosa.tile {n[0]}, %m : ({t[0]}, !tosa.shape<2>) -> {r}"),
        Value(np.tile(sa, (2, 1))), close("exact")))
    big = floats((4, 5))
    cases.append(Case(
        "slice_f32", [Value(big)],
        lambda n, t, r: (
            '%start = "tosa.const_shape"() <{values = dense<[1, 2]> : tensor<2xindex>}> : () -> !tosa.shape<2>\n'
            '%size = "tosa.const_shape"() <{values = dense<[2, 3]> : tensor<2xindex>}> : () -> !tosa.shape<2>\n'
            f"%r = tosa.slice {n[0]}, %start, %size : ({t[0]}, !tosa.shape<2>, !tosa.shape<2>) -> {r}"),
        Value(big[1:3, 2:5].copy()), close("exact")))
    cases.append(Case(
        "pad_f32", [Value(sa)],
        lambda n, t, r: (
            '%p = "tosa.const_shape"() <{values = dense<[1, 0, 2, 1]> : tensor<4xindex>}> : () -> !tosa.shape<4>\n'
            '%v = "tosa.const"() <{values = dense<0.5> : tensor<1xf32>}> : () -> tensor<1xf32>\n'
            f"%r = tosa.pad {n[0]}, %p, %v : ({t[0]}, !tosa.shape<4>, tensor<1xf32>) -> {r}"),
        Value(np.pad(sa, ((1, 0), (2, 1)), constant_values=np.float32(0.5))), close("exact")))
    table_in = ints((8,), -128, 127, np.int8)
    table = ints((256,), -128, 127, np.int8)
    cases.append(Case(
        "table_i8", [Value(table_in), Value(table)],
        lambda n, t, r: f"%r = tosa.table {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> {r}",
        Value(table[table_in.astype(np.int32) + 128])))
    values = floats((1, 5, 2))
    indices = np.array([[4, 0, 2]], np.int32)
    cases.append(Case(
        "gather_f32", [Value(values), Value(indices)],
        lambda n, t, r: f"%r = tosa.gather {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> {r}",
        Value(values[:, indices[0], :]), close("exact")))
    families["shape"] = cases
    return families


# ---------------------------------------------------------------------------------------------
# linalg, tensor and math (IREE's default input)


def linalg_elementwise(op, n, t, r, elements):
    """A `linalg.generic` applying `op` (a format string over the block arguments {0}, {1}, ...)
    elementwise to the inputs `n` (types `t`, element types `elements`), producing `r`."""
    if isinstance(elements, str):
        elements = [elements]
    arity = len(elements)
    result_element = r[r.rindex("x") + 1:-1] if "x" in r else r[len("tensor<"):-1]
    args = ", ".join(f"%a{i}: {e}" for i, e in enumerate(elements)) + f", %out: {result_element}"
    rank = r.count("x")
    dims = ", ".join(f"d{i}" for i in range(rank))
    maps = ", ".join([f"affine_map<({dims}) -> ({dims})>"] * (arity + 1))
    iterators = ", ".join(['"parallel"'] * rank)
    return (
        f"%e = tensor.empty() : {r}\n"
        f"%r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}}"
        f" ins({', '.join(n[:arity])} : {', '.join(t[:arity])}) outs(%e : {r}) {{\n"
        f"^bb0({args}):\n"
        f"  %v = {op.format(*[f'%a{i}' for i in range(arity)])}\n"
        f"  linalg.yield %v : {result_element}\n"
        f"}} -> {r}"
    )


def linalg_cases():
    families = {}
    u = floats((2, 4))
    pos = floats((2, 4), 0.25, 4.0)
    cases = []
    for op, fn, arg, tol in [
        ("math.exp {0} : f32", np.exp, u, "math"), ("math.log {0} : f32", np.log, pos, "math"),
        ("math.tanh {0} : f32", np.tanh, u, "math"), ("math.sqrt {0} : f32", np.sqrt, pos, "math"),
        ("math.rsqrt {0} : f32", lambda v: 1 / np.sqrt(v), pos, "math"),
        ("math.absf {0} : f32", np.abs, u, "exact"), ("math.floor {0} : f32", np.floor, u, "exact"),
        ("math.ceil {0} : f32", np.ceil, u, "exact"), ("math.roundeven {0} : f32", np.rint, u, "exact"),
        ("math.round {0} : f32", lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5), u, "exact"),
        ("math.sin {0} : f32", np.sin, u, "math"), ("math.cos {0} : f32", np.cos, u, "math"),
        ("math.expm1 {0} : f32", np.expm1, u, "math"), ("math.log1p {0} : f32", np.log1p, pos, "math"),
        ("math.log2 {0} : f32", np.log2, pos, "math"), ("math.exp2 {0} : f32", np.exp2, u, "math"),
        ("math.atan {0} : f32", np.arctan, u, "math"), ("math.cbrt {0} : f32", np.cbrt, pos, "math"),
        ("math.erf {0} : f32", np.vectorize(math.erf), u, "math"),
    ]:
        name = op.split()[0].split(".")[1]
        cases.append(Case(f"{name}_f32", [Value(arg)],
                          lambda n, t, r, op=op: linalg_elementwise(op, n, t, r, "f32"),
                          Value(fn(arg).astype(np.float32)), close(tol)))
    for op, fn, tol in [
        ("math.powf {0}, {1} : f32", np.power, "math"), ("math.atan2 {0}, {1} : f32", np.arctan2, "math"),
        ("arith.remf {0}, {1} : f32", np.fmod, "math"), ("arith.maximumf {0}, {1} : f32", np.maximum, "exact"),
        ("arith.minimumf {0}, {1} : f32", np.minimum, "exact"), ("math.copysign {0}, {1} : f32", np.copysign, "exact"),
    ]:
        lhs = pos if "powf" in op else u
        rhs = floats((2, 4))
        name = op.split()[0].split(".")[1]
        cases.append(Case(f"{name}_f32", [Value(lhs), Value(rhs)],
                          lambda n, t, r, op=op: linalg_elementwise(op, n, t, r, ["f32", "f32"]),
                          Value(fn(lhs, rhs).astype(np.float32)), close(tol)))
    exps = ints((2, 4), -3, 3)
    base = floats((2, 4), 0.5, 2.0)
    cases.append(Case("fpowi_f32", [Value(base), Value(exps)],
                      lambda n, t, r: linalg_elementwise("math.fpowi {0}, {1} : f32, i32", n, t, r, ["f32", "i32"]),
                      Value(np.power(base.astype(np.float64), exps).astype(np.float32)), close("math")))
    iu, iv = ints((2, 4), -1000, 1000), nonzero_ints((2, 4))
    for op, fn in [("arith.divsi {0}, {1} : i32", trunc_div), ("arith.remsi {0}, {1} : i32", trunc_rem),
                   ("arith.floordivsi {0}, {1} : i32", np.floor_divide), ("arith.maxsi {0}, {1} : i32", np.maximum),
                   ("arith.muli {0}, {1} : i32", np.multiply)]:
        name = op.split()[0].split(".")[1]
        rhs = iv
        cases.append(Case(f"{name}_i32", [Value(iu), Value(rhs)],
                          lambda n, t, r, op=op: linalg_elementwise(op, n, t, r, ["i32", "i32"]),
                          Value(fn(iu, rhs).astype(np.int32))))
    half = (u / 2).astype(np.float16)
    cases.append(Case("exp_f16", [Value(half)],
                      lambda n, t, r: linalg_elementwise("math.exp {0} : f16", n, t, r, "f16"),
                      Value(np.exp(half.astype(np.float32)).astype(np.float16)), close("f16")))
    families["math"] = cases

    cases = []
    ma, mb = floats((3, 4)), floats((4, 5))
    cases.append(Case(
        "matmul_f32", [Value(ma), Value(mb)],
        lambda n, t, r: (
            "%z = arith.constant 0.0 : f32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : f32) outs(%e : {r}) -> {r}\n"
            f"%r = linalg.matmul ins({n[0]}, {n[1]} : {t[0]}, {t[1]}) outs(%f : {r}) -> {r}"),
        Value(ma @ mb), close("sum")))
    big_a, big_b = floats((17, 33)), floats((33, 9))
    cases.append(Case(
        "matmul_odd_f32", [Value(big_a), Value(big_b)],
        lambda n, t, r: (
            "%z = arith.constant 0.0 : f32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : f32) outs(%e : {r}) -> {r}\n"
            f"%r = linalg.matmul ins({n[0]}, {n[1]} : {t[0]}, {t[1]}) outs(%f : {r}) -> {r}"),
        Value(big_a @ big_b), (1e-3, 1e-4)))
    ia, ib = ints((5, 8), -128, 127, np.int8), ints((8, 3), -128, 127, np.int8)
    cases.append(Case(
        "matmul_i8_i32", [Value(ia), Value(ib)],
        lambda n, t, r: (
            "%z = arith.constant 0 : i32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : i32) outs(%e : {r}) -> {r}\n"
            f"%r = linalg.matmul ins({n[0]}, {n[1]} : {t[0]}, {t[1]}) outs(%f : {r}) -> {r}"),
        Value(ia.astype(np.int32) @ ib.astype(np.int32))))
    ba, bb = floats((2, 3, 4)), floats((2, 4, 2))
    cases.append(Case(
        "batch_matmul_f32", [Value(ba), Value(bb)],
        lambda n, t, r: (
            "%z = arith.constant 0.0 : f32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : f32) outs(%e : {r}) -> {r}\n"
            f"%r = linalg.batch_matmul ins({n[0]}, {n[1]} : {t[0]}, {t[1]}) outs(%f : {r}) -> {r}"),
        Value(np.matmul(ba, bb)), close("sum")))
    image, kernel = floats((1, 5, 5, 2)), floats((3, 3, 2, 4))
    conv = np.zeros((1, 3, 3, 4), np.float32)
    for i in range(3):
        for j in range(3):
            conv[0, i, j] = np.einsum("hwc,hwco->o", image[0, i:i + 3, j:j + 3], kernel)
    cases.append(Case(
        "conv_2d_nhwc_hwcf_f32", [Value(image), Value(kernel)],
        lambda n, t, r: (
            "%z = arith.constant 0.0 : f32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : f32) outs(%e : {r}) -> {r}\n"
            "%r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}"
            f" ins({n[0]}, {n[1]} : {t[0]}, {t[1]}) outs(%f : {r}) -> {r}"),
        Value(conv), close("sum")))
    pool_in = floats((1, 4, 4, 1))
    cases.append(Case(
        "pooling_nhwc_sum_f32", [Value(pool_in)],
        lambda n, t, r: (
            "%z = arith.constant 0.0 : f32\n"
            "%w = tensor.empty() : tensor<2x2xf32>\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : f32) outs(%e : {r}) -> {r}\n"
            "%r = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}"
            f" ins({n[0]}, %w : {t[0]}, tensor<2x2xf32>) outs(%f : {r}) -> {r}"),
        Value(pool_in.reshape(1, 2, 2, 2, 2, 1).sum(axis=(2, 4))), close("sum")))
    ra = floats((3, 4))
    cases.append(Case(
        "reduce_sum_f32", [Value(ra)],
        lambda n, t, r: (
            "%z = arith.constant 0.0 : f32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%z : f32) outs(%e : {r}) -> {r}\n"
            f"%r = linalg.reduce ins({n[0]} : {t[0]}) outs(%f : {r}) dimensions = [1]\n"
            "  (%x: f32, %acc: f32) {\n"
            "    %s = arith.addf %x, %acc : f32\n"
            "    linalg.yield %s : f32\n"
            "  }"),
        Value(ra.sum(axis=1).astype(np.float32)), close("sum")))
    cases.append(Case(
        "transpose_f32", [Value(ra)],
        lambda n, t, r: (
            f"%e = tensor.empty() : {r}\n"
            f"%r = linalg.transpose ins({n[0]} : {t[0]}) outs(%e : {r}) permutation = [1, 0]"),
        Value(ra.T.copy()), close("exact")))
    families["linalg_ops"] = cases

    cases = []
    big = floats((4, 5))
    cases.append(Case(
        "extract_slice_f32", [Value(big)],
        lambda n, t, r: f"%r = tensor.extract_slice {n[0]}[1, 1] [2, 2] [1, 2] : {t[0]} to {r}",
        Value(big[1:3, 1:5:2].copy()), close("exact")))
    patch = floats((2, 2))
    inserted = big.copy()
    inserted[2:4, 1:3] = patch
    # The destination is a computed tensor, not a constant: iree-compile 3.13 updates an
    # unfoldable constant in place, writing into the module's read-only data (iree.runtime
    # crashes on an mmapped module, and later tests sharing the constant see the change).
    cases.append(Case(
        "insert_slice_f32", [Value(patch), Value(big), Value(np.ones_like(big))],
        lambda n, t, r: (
            f"%d = arith.mulf {n[1]}, {n[2]} : {t[1]}\n"
            f"%r = tensor.insert_slice {n[0]} into %d[2, 1] [2, 2] [1, 1] : {t[0]} into {t[1]}"),
        Value(inserted), close("exact")))
    cases.append(Case(
        "pad_f32", [Value(patch)],
        lambda n, t, r: (
            "%p = arith.constant 0.5 : f32\n"
            f"%r = tensor.pad {n[0]} low[1, 0] high[0, 2] {{\n"
            "^bb0(%i: index, %j: index):\n"
            "  tensor.yield %p : f32\n"
            f"}} : {t[0]} to {r}"),
        Value(np.pad(patch, ((1, 0), (0, 2)), constant_values=np.float32(0.5))), close("exact")))
    cases.append(Case(
        "concat_f32", [Value(patch), Value(big[:2])],
        lambda n, t, r: f"%r = tensor.concat dim(1) {n[0]}, {n[1]} : ({t[0]}, {t[1]}) -> {r}",
        Value(np.concatenate([patch, big[:2]], axis=1)), close("exact")))
    cases.append(Case(
        "collapse_expand_shape_f32", [Value(big)],
        lambda n, t, r: (
            f"%c = tensor.collapse_shape {n[0]} [[0, 1]] : {t[0]} into tensor<20xf32>\n"
            f"%r = tensor.expand_shape %c [[0, 1]] output_shape [5, 4] : tensor<20xf32> into {r}"),
        Value(big.reshape(5, 4)), close("exact")))
    dyn = floats((6,))
    cases.append(Case(
        "dynamic_shape_f32", [Value(dyn)],
        lambda n, t, r: (
            f"%d = flow.tensor.dynamic_constant {literal(Value(dyn))} -> tensor<?xf32>\n"
            "%c0 = arith.constant 0 : index\n"
            "%n = tensor.dim %d, %c0 : tensor<?xf32>\n"
            "%e = tensor.empty(%n) : tensor<?xf32>\n"
            "%m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],"
            ' iterator_types = ["parallel"]} ins(%d : tensor<?xf32>) outs(%e : tensor<?xf32>) {\n'
            "^bb0(%a: f32, %o: f32):\n"
            "  %v = arith.addf %a, %a : f32\n"
            "  linalg.yield %v : f32\n"
            "} -> tensor<?xf32>\n"
            f"%r = tensor.cast %m : tensor<?xf32> to {r}"),
        Value(dyn + dyn), close("exact")))
    families["tensor_ops"] = cases

    cases = []
    keys = floats((8,))
    cases.append(Case(
        "sort_f32", [Value(keys)],
        lambda n, t, r: (
            f"%r = iree_linalg_ext.sort dimension(0) outs({n[0]} : {t[0]}) {{\n"
            "^bb0(%x: f32, %y: f32):\n"
            "  %lt = arith.cmpf olt, %x, %y : f32\n"
            "  iree_linalg_ext.yield %lt : i1\n"
            f"}} -> {r}"),
        Value(np.sort(keys)), close("exact")))
    scan_in = ints((6,), -10, 10)
    cases.append(Case(
        "scan_i32", [Value(scan_in)],
        lambda n, t, r: (
            "%z = arith.constant dense<0> : tensor<i32>\n"
            "%c0 = arith.constant 0 : i32\n"
            f"%e = tensor.empty() : {r}\n"
            f"%f = linalg.fill ins(%c0 : i32) outs(%e : {r}) -> {r}\n"
            f"%s:2 = iree_linalg_ext.scan dimension(0) inclusive(true) ins({n[0]} : {t[0]})"
            f" outs(%f, %z : {r}, tensor<i32>) {{\n"
            "^bb0(%a: i32, %b: i32):\n"
            "  %v = arith.addi %a, %b : i32\n"
            "  iree_linalg_ext.yield %v : i32\n"
            f"}} -> {r}, tensor<i32>\n"
            f"%r = util.optimization_barrier %s#0 : {r}"),
        Value(np.cumsum(scan_in).astype(np.int32))))
    families["linalg_ext_ops"] = cases
    # Products just below the smallest normal f32 (exact value within half a subnormal step of
    # it). IREE's local devices run dispatches with the FPU's flush (x86 FTZ/DAZ), which flushes a
    # result that is below the smallest normal before rounding to 24 bits, even when rounding to
    # a subnormal would round it up to the smallest normal (the first two); flushing each rounded
    # result in software keeps those. The third rounds to the smallest normal either way.
    bits = lambda *words: np.array(words, dtype=np.uint32).view(np.float32)
    lhs, rhs = bits(0x008005A9, 0x008005AA, 0x00800001, 0x00400000), bits(0x3F7FF4AE, 0x3F7FF4AC, 0x3F7FFFFE, 0x3F000000)
    families["subnormals"] = [
        Case("mulf_below_smallest_normal_f32", [Value(lhs), Value(rhs)],
             lambda n, t, r: linalg_elementwise("arith.mulf {0}, {1} : f32", n, t, r, ["f32", "f32"]),
             Value(bits(0, 0, 0x00800000, 0))),
    ]
    return families


# ---------------------------------------------------------------------------------------------
# Sub-byte and 8-bit float types (IREE's subbyte_types and f8 coverage)


def narrow_cases():
    families = {}
    cases = []
    i4 = ints((8,), -8, 7, np.int8)
    cases.append(Case(
        "extsi_i4_to_i32", [Value(i4, "i4")],
        lambda n, t, r: linalg_elementwise("arith.extsi {0} : i4 to i32", n, t, r, "i4"),
        Value(i4.astype(np.int32))))
    cases.append(Case(
        "extui_i4_to_i32", [Value(i4, "i4")],
        lambda n, t, r: linalg_elementwise("arith.extui {0} : i4 to i32", n, t, r, "i4"),
        Value((i4.astype(np.int32) & 0xF))))
    wide = ints((8,), -1000, 1000)
    cases.append(Case(
        "trunci_i32_to_i4", [Value(wide)],
        lambda n, t, r: linalg_elementwise("arith.trunci {0} : i32 to i4", n, t, r, "i32"),
        Value((((wide & 0xF) ^ 8) - 8).astype(np.int8), "i4")))
    a4, b4 = ints((8,), -8, 7, np.int8), ints((8,), -8, 7, np.int8)
    cases.append(Case(
        "addi_i4", [Value(a4, "i4"), Value(b4, "i4")],
        lambda n, t, r: linalg_elementwise("arith.addi {0}, {1} : i4", n, t, r, ["i4", "i4"]),
        Value(((((a4 + b4) & 0xF) ^ 8) - 8).astype(np.int8), "i4")))
    i2 = ints((8,), -2, 1, np.int8)
    cases.append(Case(
        "extsi_i2_to_i32", [Value(i2, "i2")],
        lambda n, t, r: linalg_elementwise("arith.extsi {0} : i2 to i32", n, t, r, "i2"),
        Value(i2.astype(np.int32))))
    bits = rng.integers(0, 1, size=8, endpoint=True).astype(np.bool_)
    cases.append(Case(
        "extui_i1_to_i32", [Value(bits)],
        lambda n, t, r: linalg_elementwise("arith.extui {0} : i1 to i32", n, t, r, "i1"),
        Value(bits.astype(np.int32))))
    xs, ys = ints((8,), -3, 3), ints((8,), -3, 3)
    cases.append(Case(
        "cmpi_to_i1", [Value(xs), Value(ys)],
        lambda n, t, r: linalg_elementwise("arith.cmpi slt, {0}, {1} : i32", n, t, r, ["i32", "i32"]),
        Value(xs < ys)))
    families["subbyte"] = cases

    cases = []
    wide_f = floats((8,), -8.0, 8.0)
    for dtype in [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz]:
        element = MLIR_TYPES[np.dtype(dtype)]
        narrow = wide_f.astype(dtype)
        cases.append(Case(
            f"truncf_f32_to_{element}", [Value(wide_f)],
            lambda n, t, r, element=element: linalg_elementwise(f"arith.truncf {{0}} : f32 to {element}", n, t, r, "f32"),
            Value(narrow), close("exact")))
        cases.append(Case(
            f"extf_{element}_to_f32", [Value(narrow)],
            lambda n, t, r, element=element: linalg_elementwise(f"arith.extf {{0}} : {element} to f32", n, t, r, element),
            Value(narrow.astype(np.float32)), close("exact")))
    bf = wide_f.astype(ml_dtypes.bfloat16)
    cases.append(Case(
        "addf_bf16", [Value(bf), Value(bf)],
        lambda n, t, r: linalg_elementwise("arith.addf {0}, {1} : bf16", n, t, r, ["bf16", "bf16"]),
        Value((bf.astype(np.float32) * 2).astype(ml_dtypes.bfloat16)), close("exact")))
    families["float8_bf16"] = cases
    return families


# Cases the pinned iree-compile (3.13) cannot lower for vmvx: generated into a separate
# `<family>_llvm_cpu_only.mlir` compiled for llvm-cpu alone (IREE's suites split files the same way).
VMVX_CANNOT = {
    ("stablehlo", "sign_f32"): "math.copysign is not lowered to the VM",
    ("stablehlo", "cbrt_f32"): "math.cbrt is not lowered to the VM",
    ("stablehlo", "popcnt_i32"): "math.ctpop is not lowered to the VM",
    ("linalg", "copysign_f32"): "math.copysign is not lowered to the VM",
    ("stablehlo", "convert_f32_to_f16"): "arith.truncf to f16 is not lowered to the VM",
    ("stablehlo", "convert_f16_to_f32"): "f16 is not lowered to the VM",
    ("stablehlo", "exponential_f16"): "f16 is not lowered to the VM",
    ("stablehlo", "tanh_bf16"): "bf16 arithmetic is not lowered to the VM",
    ("tosa", "cast_f32_to_f16"): "arith.truncf to f16 is not lowered to the VM",
    ("linalg", "cbrt_f32"): "math.cbrt is not lowered to the VM",
    ("linalg", "exp_f16"): "f16 is not lowered to the VM",
    ("linalg", "fpowi_f32"): "math.fpowi is not lowered to the VM",
    ("narrow_types", "addf_bf16"): "bf16 arithmetic is not lowered to the VM",
}

SUITES = {
    "stablehlo": ("stablehlo", stablehlo_cases),
    "tosa": ("tosa", tosa_cases),
    "linalg": (None, linalg_cases),
    "narrow_types": (None, narrow_cases),
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    index = []
    for suite, (input_type, build) in SUITES.items():
        for family, cases in build().items():
            everywhere = [c for c in cases if (suite, c.name) not in VMVX_CANNOT]
            llvm_only = [c for c in cases if (suite, c.name) in VMVX_CANNOT]
            for file_cases, name, backends in [
                (everywhere, family, ["llvm-cpu", "vmvx", "vmvx-ukernels"]),
                (llvm_only, f"{family}_llvm_cpu_only", ["llvm-cpu"]),
            ]:
                if not file_cases:
                    continue
                path = out / suite / f"{name}.mlir"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(
                    f"// Generated by conformance/e2e/generate.py (seed {SEED}); expected values from NumPy.\n\n"
                    + "\n\n".join(case.mlir() for case in file_cases) + "\n")
                index.append({"suite": suite, "family": family, "source": str(path.relative_to(out)),
                              "input_type": input_type, "backends": backends,
                              "functions": [c.name for c in file_cases]})
    # IREE's suites hold deliberately failing tests too (failure.mlir): the same programs with
    # one expected element changed, so both runtimes must report a failure at that index.
    perturbed = []
    for case in linalg_cases()["linalg_ops"] + narrow_cases()["subbyte"]:
        expected = case.expected.array.copy()
        index_of_change = expected.size // 2
        flat = expected.reshape(-1)
        flat[index_of_change] = (not flat[index_of_change]) if expected.dtype == np.bool_ else flat[index_of_change] + 1
        if case.expected.element == "i4":
            flat[index_of_change] = ((int(flat[index_of_change]) & 0xF) ^ 8) - 8
        perturbed.append(Case(f"{case.name}_must_fail", case.inputs, case.body,
                              Value(expected, case.expected.element), case.tolerance))
    path = out / "failures" / "perturbed.mlir"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"// Generated by conformance/e2e/generate.py (seed {SEED}): every function must fail.\n\n"
                    + "\n\n".join(case.mlir() for case in perturbed) + "\n")
    index.append({"suite": "failures", "family": "perturbed", "source": "failures/perturbed.mlir",
                  "input_type": None, "backends": ["llvm-cpu", "vmvx", "vmvx-ukernels"],
                  "functions": [c.name for c in perturbed], "must_fail": True})
    (out / "cases.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"{sum(len(e['functions']) for e in index)} test functions in {len(index)} files under {out}")


if __name__ == "__main__":
    main()
