"""pactum: IREE ``.vmfb`` modules and MLIR-compiled functions in the official ``apache-tvm-ffi``
runtime.

Importing this package loads pactum's native library (Rust, built by maturin from
``crates/pactum-python``) into the ``tvm_ffi`` runtime and registers the ``.vmfb`` loader, so
that both of these work::

    import pactum, tvm_ffi
    module = tvm_ffi.load_module("model.vmfb")     # a tvm_ffi.Module of kind "vmfb"
    model = pactum.iree.load("model.vmfb")         # exports as Python callables

See :mod:`pactum.iree`; :mod:`pactum.mlir` calls functions of MLIR-compiled shared libraries
with NumPy arrays; :mod:`pactum.sig` reads, checks and converts IREE function signatures (what
``pactum sig`` does).
"""

from __future__ import annotations

import pathlib

import tvm_ffi

__all__ = ["iree", "mlir", "sig", "native_library", "__version__"]
__version__ = "0.1.0"


def _native_path() -> pathlib.Path:
    here = pathlib.Path(__file__).resolve().parent
    candidates = sorted(here.glob("_native*.so"))
    if not candidates:
        raise ImportError(
            f"pactum's native library (_native*.so) is missing from {here}; "
            "install the package with `pip install ./python` rather than importing the source tree"
        )
    return candidates[0]


#: The native library, a ``tvm_ffi.Module`` (kept alive for the life of the process).
native_library = tvm_ffi.load_module(str(_native_path()))
native_library["pactum_init"]()

from . import iree, mlir, sig  # noqa: E402  (need the globals registered above)
