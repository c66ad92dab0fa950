"""The Vulkan corpus: which function of which source runs on which inputs.

Each case names a source in cases/, a function of it, its inputs and, where it needs them, the
extra compile flags and a parameter archive. Inputs are generated from a fixed seed (the same
arrays on every machine) and written as `.npy` files, scalars as text, so that IREE's
`iree-run-module` and `pactum run` get the same argument list.

An input is (dtype, shape) for an array (`shape` a tuple) or (dtype, value) for a scalar
argument (`value` a number).
"""

from __future__ import annotations

ASYNC = ["--iree-execution-model=async-external"]

# The weights of parameters.mlir, stored in an archive under scope `model`: name -> (dtype,
# shape). The values come from the same seeded generator as the inputs.
PARAMETERS = {"w": ("float32", (8, 4)), "b": ("float32", (4,))}
PARAMETER_SCOPE = "model"

CASES = [
    # source, function, inputs, flags, parameters
    ("elementwise", "add_mul", [("float32", (4, 8)), ("float32", (4, 8))], [], False),
    ("elementwise", "exp_tanh", [("float32", (37,))], [], False),
    ("elementwise", "int_ops", [("int32", (16,)), ("int32", (16,))], [], False),
    ("elementwise", "scalar_operand", [("float32", (5,)), ("float32", 2.5)], [], False),
    ("reductions", "sum_rows", [("float32", (8, 33))], [], False),
    ("reductions", "max_cols", [("float32", (8, 33))], [], False),
    ("reductions", "sum_all_i32", [("int32", (1000,))], [], False),
    ("matmul", "matmul", [("float32", (64, 32)), ("float32", (32, 48))], [], False),
    ("matmul", "matmul_i32", [("int32", (7, 5)), ("int32", (5, 3))], [], False),
    ("matmul", "batch_matmul", [("float32", (3, 16, 8)), ("float32", (3, 8, 24))], [], False),
    ("convolution", "conv2d", [("float32", (1, 10, 10, 3)), ("float32", (3, 3, 3, 8))], [], False),
    ("convolution", "conv2d_strided", [("float32", (2, 9, 9, 4)), ("float32", (3, 3, 4, 6))], [],
     False),
    ("convolution", "depthwise", [("float32", (1, 6, 6, 4)), ("float32", (3, 3, 4))], [], False),
    ("attention", "attention",
     [("float32", (16, 32)), ("float32", (24, 32)), ("float32", (24, 32))], [], False),
    ("dynamic", "add_dynamic", [("float32", (13,)), ("float32", (13,))], [], False),
    ("dynamic", "matmul_dynamic", [("float32", (5, 7)), ("float32", (7, 3))], [], False),
    ("dynamic", "sum_dynamic", [("float32", (9, 4))], [], False),
    ("barriers", "mlp",
     [("float32", (8, 16)), ("float32", (16, 32)), ("float32", (32,)), ("float32", (32, 4))], [],
     False),
    ("transfers", "splat_i8", [("int8", -3)], [], False),
    ("transfers", "splat_i16", [("int16", 700)], [], False),
    ("transfers", "splat_f32", [("float32", 1.5)], [], False),
    ("transfers", "concat", [("float32", (3, 4)), ("float32", (2, 4))], [], False),
    ("transfers", "slice_i8", [("int8", (11,))], [], False),
    ("async", "async_add", [("float32", (6,)), ("float32", (6,))], ASYNC, False),
    ("async", "async_matmul", [("float32", (4, 8)), ("float32", (8, 4))], ASYNC, False),
    ("parameters", "linear", [("float32", (2, 8))], [], True),
    ("constants", "baked_linear", [("float32", (4, 64))], [], False),
    ("constants", "baked_offsets", [("int32", (300,))], [], False),
]


def random_array(rng, dtype: str, shape: tuple):
    """Values every runtime prints the same way: small integers, or floats on a 1/64 grid
    (exact in f32) in [-2, 2)."""
    if dtype.startswith("int"):
        return rng.integers(-20, 20, size=shape).astype(dtype)
    return (rng.integers(-128, 128, size=shape) / 64.0).astype(dtype)
