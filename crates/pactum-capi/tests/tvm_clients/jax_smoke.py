"""jax-tvm-ffi 0.1.3 programs (tvm-ffi functions as JAX FFI targets, under jax.jit on CPU), run
on whichever libtvm_ffi.so the installed tvm_ffi package loads.

Run by scripts/tvm_clients.sh (scripts/both_libraries.sh) on the official library and on
pactum's. Prints one line per program (OK or FAIL with the error) and a count; exits 1 when
any program fails, 2 when the library mapped is not the one in PACTUM_EXPECT_LIB.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_harness import finish, program, require_expected_library  # noqa: E402


@program("import jax_tvm_ffi (loads its extension with tvm_ffi.load_module)")
def import_jax_tvm_ffi():
    import jax_tvm_ffi  # noqa: F401


require_expected_library()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax_tvm_ffi  # noqa: E402
import tvm_ffi  # noqa: E402
import tvm_ffi.libinfo  # noqa: E402

scratch = tempfile.TemporaryDirectory()


@program("a C++ kernel (typed export, loaded module) as a JAX FFI target under jax.jit")
def cxx_kernel():
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_kernels.cc")
    library = os.path.join(scratch.name, "jax_kernels.so")
    subprocess.run(
        [os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-shared", "-fPIC",
         f"-I{tvm_ffi.libinfo.find_include_path()}", source, "-o", library],
        check=True,
    )
    module = tvm_ffi.load_module(library)
    jax_tvm_ffi.register_ffi_target(
        "pactum.add_scaled", module.add_scaled, ["args", "attrs.scale", "rets"], platform="cpu"
    )

    @jax.jit
    def add_scaled(x, y):
        result = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.ffi.ffi_call("pactum.add_scaled", result)(x, y, scale=np.float64(2.0))

    x = jnp.arange(8, dtype=jnp.float32)
    y = jnp.ones(8, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(add_scaled(x, y)), np.arange(8) + 2.0)
    # A second call with new values runs the compiled program again.
    np.testing.assert_array_equal(np.asarray(add_scaled(x * 3, y)), np.arange(8) * 3 + 2.0)
    # Composed with JAX's own operations in one jitted function.
    total = jax.jit(lambda x, y: jnp.sum(add_scaled(x, y) * 2))(x, y)
    assert float(total) == float(np.sum((np.arange(8) + 2.0) * 2)), total


@program("a Python function (a tvm-ffi global) as a JAX FFI target under jax.jit")
def python_function():
    @tvm_ffi.register_global_func("pactum.jax_smoke.negate", override=True)
    def negate(a, out):
        np.from_dlpack(out)[...] = -np.from_dlpack(a)

    jax_tvm_ffi.register_ffi_target(
        "pactum.negate",
        tvm_ffi.get_global_func("pactum.jax_smoke.negate"),
        platform="cpu",
        pass_owned_tensor=True,
    )
    negate_jit = jax.jit(
        lambda a: jax.ffi.ffi_call("pactum.negate", jax.ShapeDtypeStruct(a.shape, a.dtype))(a)
    )
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(negate_jit(x)), -np.arange(6).reshape(2, 3))
    assert jax_tvm_ffi.registered_count() == 2, jax_tvm_ffi.registered_count()


finish()
