"""tilelang 0.1.15 programs (a tile-level kernel DSL: its bundled TVM compiler, built against
apache-tvm-ffi 0.1.12, lowers kernels through libtvm_ffi.so), run on whichever libtvm_ffi.so the
installed tvm_ffi package loads.

Run by scripts/tilelang_client.sh (scripts/both_libraries.sh) on the official library and on
pactum's, in a venv where pip resolved tilelang's own pin (apache-tvm-ffi 0.1.12). Kernels are
built for target `c` (tilelang's C code generator, compiled by the system's C compiler, run
through its Cython wrapper) and checked with NumPy. Prints one line per program (OK or FAIL
with the error) and a count; exits 1 when any program fails, 2 when the library mapped is not
the one in PACTUM_EXPECT_LIB.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_harness import finish, program, require_expected_library  # noqa: E402


@program("import tilelang")
def import_tilelang():
    import tilelang  # noqa: F401


require_expected_library()

import numpy as np  # noqa: E402
import tilelang  # noqa: E402
import tilelang.cpu.language as T  # noqa: E402  (the CPU dialect: T.Kernel is a loop nest)
import torch  # noqa: E402

# Every kernel is compiled afresh: a cached kernel would not exercise the compiler.
tilelang.disable_cache()
RNG = np.random.default_rng(24)


def elementwise_add(n, block):
    @T.prim_func
    def add(
        A: T.Tensor((n,), "float32"),
        B: T.Tensor((n,), "float32"),
        C: T.Tensor((n,), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, block)) as bx:
            for i in T.serial(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


def tiled_matmul(m, n, k, block_m, block_n, block_k):
    @T.prim_func
    def matmul(
        A: T.Tensor((m, k), "float32"),
        B: T.Tensor((k, n), "float32"),
        C: T.Tensor((m, n), "float32"),
    ):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m)) as (bx, by):
            A_local = T.alloc_local((block_m, block_k), "float32")
            B_local = T.alloc_local((block_k, block_n), "float32")
            C_local = T.alloc_local((block_m, block_n), "float32")
            for i, j in T.grid(block_m, block_n):
                C_local[i, j] = 0
            for ko in T.serial(k // block_k):
                for i, kk in T.grid(block_m, block_k):
                    A_local[i, kk] = A[by * block_m + i, ko * block_k + kk]
                for kk, j in T.grid(block_k, block_n):
                    B_local[kk, j] = B[ko * block_k + kk, bx * block_n + j]
                for i, j, kk in T.grid(block_m, block_n, block_k):
                    C_local[i, j] += A_local[i, kk] * B_local[kk, j]
            for i, j in T.grid(block_m, block_n):
                C[by * block_m + i, bx * block_n + j] = C_local[i, j]

    return matmul


def run_kernel(kernel, *arrays):
    """Calls a compiled kernel on NumPy arrays (through torch CPU tensors, which tilelang's
    wrapper takes) and returns the arrays afterwards."""
    tensors = [torch.from_numpy(array) for array in arrays]
    kernel(*tensors)
    return [tensor.numpy() for tensor in tensors]


@program("lower an elementwise add for target c: the generated C source")
def lower_add():
    artifact = tilelang.lower(elementwise_add(256, 64), target="c")
    source = artifact.kernel_source
    assert source and "float" in source, f"no C source: {source!r}"


@program("an elementwise add built for target c and run, checked with NumPy")
def run_add():
    kernel = tilelang.compile(elementwise_add(1024, 128), target="c", execution_backend="cython")
    a = RNG.standard_normal(1024, dtype=np.float32)
    b = RNG.standard_normal(1024, dtype=np.float32)
    c = np.zeros(1024, dtype=np.float32)
    _, _, c = run_kernel(kernel, a, b, c)
    np.testing.assert_array_equal(c, a + b)


@program("a tiled matmul built for target c and run, checked with NumPy")
def run_matmul():
    m, n, k = 64, 48, 32
    kernel = tilelang.compile(
        tiled_matmul(m, n, k, 16, 16, 8), target="c", execution_backend="cython"
    )
    a = RNG.standard_normal((m, k), dtype=np.float32)
    b = RNG.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), dtype=np.float32)
    _, _, c = run_kernel(kernel, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@program("a kernel's output allocated by tilelang (out_idx), checked with NumPy")
def run_out_idx():
    kernel = tilelang.compile(
        elementwise_add(512, 64), out_idx=[2], target="c", execution_backend="cython"
    )
    a = RNG.standard_normal(512, dtype=np.float32)
    b = RNG.standard_normal(512, dtype=np.float32)
    c = kernel(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_array_equal(c.numpy(), a + b)


@program("tilelang's C++ enum (tl.SwizzleMode, registered by its library) looked up by name")
def enum_by_name():
    from tilelang.layout import SwizzleMode

    found = SwizzleMode.get("SWIZZLE_64B")
    assert found.same_as(SwizzleMode.SWIZZLE_64B), found
    assert repr(found) == "tl.SwizzleMode.SWIZZLE_64B", repr(found)
    # Reading a variant's fields (`_value`, `_name`), iterating or counting the variants works
    # only on 0.1.12's library: 0.1.15 renamed ffi.Enum's fields (`_int_index`, `_str_index`),
    # and pactum's library, like the official 0.1.15.post2 one, has the new names
    # (docs/CONFORMANCE.md).


finish()
