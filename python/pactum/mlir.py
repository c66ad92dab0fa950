"""Functions of MLIR-compiled shared libraries, called from Python with NumPy arrays.

A library lowered by MLIR (``mlir-opt`` ... ``--convert-func-to-llvm``, ``mlir-translate``,
``llc``, ``cc -shared``) exports each ``func.func`` under the memref calling convention, and
``_mlir_ciface_<name>`` wrappers for functions marked ``llvm.emit_c_interface``. Nothing in the
library says what a function takes, so you give its declaration::

    import numpy as np, pactum
    lib = pactum.mlir.load("libkernels.so")
    add_one = lib.function("func.func @add_one(%a: memref<?xf32>, %b: memref<?xf32>)")
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    add_one(x, y)                 # writes y in place; returns None
    alloc = lib.function("func.func @alloc_2d(%m: index, %n: index) -> memref<?x?xi32>")
    a = alloc(3, 4)               # a NumPy array over MLIR's malloc'ed buffer

Arguments: a memref takes a NumPy array, or anything ``tvm_ffi`` takes as a tensor (DLPack:
``tvm_ffi.Tensor``, a ``torch`` CPU tensor), with no copy: the function reads and writes the
array's own memory. Each array is checked against the memref type (dtype, rank, static extents,
alignment, layout) and a mismatch is a ``TypeError``/``ValueError`` naming the argument. An
array whose layout the type cannot describe (a transposed or strided view for an identity-layout
memref) is refused, or passed as a compact copy that is copied back after the call with
``layout_mismatch="copy"``. Scalars take Python ``int``/``float``/``bool`` (range-checked).

Results: ``None`` for none, the value for one, a tuple for several. A memref result is a NumPy
array that owns MLIR's allocation: the buffer is ``free``'d when the last array viewing it
goes. A result that views an argument keeps that argument alive; one that views the library's
constants keeps the library loaded. ``bf16`` memrefs (NumPy has no ``bfloat16``) come back as
``tvm_ffi.Tensor``; :func:`bitcast` views NumPy ``uint16`` bits as ``bfloat16`` for arguments.

Like ``ctypes`` and ``tvm_ffi.load_module``, this trusts the library and the declaration:
pactum checks every value against the declaration, but cannot check the declaration against
the machine code.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Tuple, Union

import numpy as np
import tvm_ffi

__all__ = ["MlirLibrary", "MlirFunction", "load", "bitcast"]

PathLike = Union[str, "os.PathLike[str]"]

_LAYOUT_MISMATCH = {"raise": False, "copy": True}


def _to_python(value: Any, is_memref: bool) -> Any:
    if is_memref and isinstance(value, tvm_ffi.Tensor):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, RuntimeError):
            return value  # an element type NumPy lacks (bf16)
    return value


class MlirFunction:
    """One function of an :class:`MlirLibrary`, callable with NumPy arrays and numbers.

    ``name`` is the function's symbol name, ``signature`` its MLIR function type
    (``(memref<?xf32>, f32) -> f32``), ``ffi_function`` the underlying ``tvm_ffi.Function``
    (which returns ``tvm_ffi.Tensor`` and ``tvm_ffi.Array`` results as they are).
    """

    __slots__ = ("name", "signature", "result_types", "ffi_function", "_memref_results", "__weakref__")

    def __init__(self, name: str, function: tvm_ffi.Function, signature: str, result_types: Tuple[str, ...]) -> None:
        self.name = name
        self.signature = signature
        self.result_types = result_types
        self.ffi_function = function
        self._memref_results = tuple(t.startswith("memref<") for t in result_types)

    def __call__(self, *args: Any) -> Any:
        return self.ffi_function(*args)

    def __repr__(self) -> str:
        return f"<pactum.mlir.MlirFunction @{self.name} : {self.signature}>"


class _OneMemRef(MlirFunction):
    __slots__ = ()

    def __call__(self, *args: Any) -> Any:
        return _to_python(self.ffi_function(*args), True)


class _Several(MlirFunction):
    __slots__ = ()

    def __call__(self, *args: Any) -> Any:
        values = self.ffi_function(*args)
        return tuple(_to_python(v, m) for v, m in zip(values, self._memref_results))


class _PackedScalars(MlirFunction):
    """Several scalar results, packed by the native side into one ``bytes`` (8-byte ``f64`` or
    ``i64`` each, one byte for ``i1``): one ``struct.unpack`` instead of reading a
    ``tvm_ffi.Array`` element by element (about 0.5 µs each)."""

    __slots__ = ("_unpack",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        codes = "".join(_STRUCT_CODES.get(t, "q") for t in self.result_types)
        self._unpack = struct.Struct("<" + codes).unpack

    def __call__(self, *args: Any) -> Any:
        return self._unpack(self.ffi_function(*args))


_STRUCT_CODES = {"i1": "?", "si1": "?", "ui1": "?", "f16": "d", "bf16": "d", "f32": "d", "f64": "d"}


class MlirLibrary:
    """A loaded MLIR-compiled shared library (``dlopen`` with ``RTLD_NOW``). Get functions
    with :meth:`function`; the library stays loaded while any of them, or any array they
    returned that views its memory, lives."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self._lookup = tvm_ffi.get_global_func("pactum.mlir.open")(self.path)

    def function(self, declaration: str, *, layout_mismatch: str = "raise") -> MlirFunction:
        """The function a ``func.func`` declaration names, called with that signature, e.g.
        ``lib.function("func.func @f(%a: memref<?xf32>) -> f32")`` (attributes, argument
        attributes and a trailing ``{`` are accepted, so a line of the source works).

        ``layout_mismatch``: ``"raise"`` (default) refuses an array whose layout the memref
        type cannot describe; ``"copy"`` passes a compact copy and copies it back after the
        call. Raises ``ValueError`` for a declaration that does not parse, ``AttributeError``
        when the library has no such function."""
        if layout_mismatch not in _LAYOUT_MISMATCH:
            raise ValueError(f"layout_mismatch must be 'raise' or 'copy', not {layout_mismatch!r}")
        function, name, signature, results, packed = self._lookup(
            declaration, _LAYOUT_MISMATCH[layout_mismatch]
        )
        result_types = tuple(str(r) for r in results)
        if packed:
            kind = _PackedScalars
        elif len(result_types) > 1:
            kind = _Several
        elif result_types and result_types[0].startswith("memref<"):
            kind = _OneMemRef
        else:
            # No result to convert: the tvm_ffi.Function itself is the class's __call__ (it
            # has no __get__, so Python calls it without `self`), sparing a Python frame
            # (~150 ns) per call. One small class per function.
            kind = type("MlirFunction", (MlirFunction,), {"__slots__": (), "__call__": function})
        return kind(str(name), function, str(signature), result_types)

    def __repr__(self) -> str:
        return f"<pactum.mlir.MlirLibrary {self.path}>"


def load(path: PathLike) -> MlirLibrary:
    """Loads the MLIR-compiled shared library at `path` (its initialisers run now; a missing
    dependency is an error here rather than mid-call)."""
    return MlirLibrary(path)


def bitcast(x: Any, dtype: str) -> tvm_ffi.Tensor:
    """A view of tensor `x`'s memory (a NumPy array or any DLPack tensor) as element type
    `dtype` of the same size, e.g. ``bitcast(np_uint16_bits, "bfloat16")``; no copy."""
    return tvm_ffi.get_global_func("pactum.tensor.bitcast")(x, dtype)
