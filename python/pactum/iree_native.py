"""Modules written in Python, and parameter indexes built in memory, for ``pactum.iree.load``.

:class:`NativeModule` is a VM module whose functions are Python callables, what
``iree.runtime.PyModuleInterface`` makes for IREE: a ``.vmfb`` compiled with imports such as
``func.func private @host.add(i32, i32) -> i32`` calls them when the module is loaded with
``pactum.iree.load(path, modules=[host])``::

    host = pactum.iree.NativeModule("host")
    host.export("add", "0ii_i", lambda a, b: a + b)

    @host.function("0rf_r")
    def scale(x, factor):              # x: a NumPy array (a !hal.buffer_view)
        return x * factor              # arrays come back as new buffer views

    m = pactum.iree.load("uses_host.vmfb", modules=[host])

Each function has an IREE calling convention (``0`` + argument kinds + ``_`` + result kinds:
``i``/``I`` for i32/i64, ``f``/``F`` for f32/f64, ``r`` for a reference, ``v`` for none,
``C…D`` for a variadic span of tuples). Arguments arrive as Python ints and floats, NumPy
arrays for ``!hal.buffer_view`` (a copy), ``bytes`` for ``!vm.buffer``, lists for ``!vm.list``
and variadic spans, ``None`` for a null reference, and an opaque ``pactum.iree.VmRef`` for any
other reference (pass it back as a result or to another call). A function returns ``None``
when it has no results, its one result, or a tuple of its results; arrays (and anything
NumPy takes) become buffer views, ``bytes`` ``!vm.buffer``s, lists ``!vm.list``s. An exception
it raises fails the call that reached it, with a message naming ``module.function`` and the
exception.

:class:`ParameterIndex` holds named parameters, as ``iree.runtime.ParameterIndex`` does, for
``pactum.iree.load(path, parameters={"model": index})``.
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tvm_ffi

__all__ = ["NativeModule", "ParameterIndex", "ParameterIndexEntry"]

_NATIVE_MODULE = tvm_ffi.get_global_func("pactum.iree.native_module")
_NATIVE_MODULE_INVOKE = tvm_ffi.get_global_func("pactum.iree.native_module_invoke")
_TENSOR = tvm_ffi.Tensor


def _result_kinds(cconv: str) -> str:
    """The result kinds of a calling convention (``"0ii_i"`` -> ``"i"``; ``v`` dropped)."""
    if not isinstance(cconv, str) or not cconv.startswith("0"):
        raise ValueError(f"calling convention {cconv!r}: must start with '0' (version 0)")
    _, _, results = cconv.partition("_")
    return results.replace("v", "")


def _to_python(value: Any) -> Any:
    """An FFI argument as the Python value a native function receives."""
    if isinstance(value, _TENSOR):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, ValueError):
            return value  # element types NumPy lacks (bfloat16) stay tensors
    if isinstance(value, tvm_ffi.Array):
        return [_to_python(item) for item in value]
    return value


def _tensor_of(value: Any) -> Any:
    array = np.ascontiguousarray(value)
    if array.dtype == object:
        raise TypeError(f"cannot pass {type(value).__name__} as a tensor")
    if not array.flags.writeable:
        array = array.copy()  # NumPy does not export read-only arrays through DLPack
    return tvm_ffi.from_dlpack(array)


def _reference(value: Any) -> Any:
    """A Python result for an ``r`` result: kept for None, tensors, bytes and FFI objects."""
    if value is None or isinstance(value, (bytes, _TENSOR, tvm_ffi.Object)):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return [_list_item(item) for item in value]
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "__array__") or hasattr(value, "__dlpack__"):
        return _tensor_of(value)  # a NumPy scalar: a 0-d tensor
    raise TypeError(
        f"a reference result must be None, an array, bytes, a list or a VmRef, got {type(value).__name__}"
    )


def _list_item(value: Any) -> Any:
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    return _reference(value)


def _scalar(value: Any, kind: str) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if kind in "iI" and isinstance(value, float):
        raise TypeError(f"an integer result ({kind}) cannot be the float {value!r}")
    return value


def _invoke_arg(value: Any) -> Any:
    """An argument of :meth:`NativeModule.invoke`: numbers (NumPy scalars too) as numbers,
    anything else as a reference."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, np.generic) and np.ndim(value) == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_invoke_arg(v) for v in value]
    return _reference(value)


def _serve(function: Callable[..., Any], results: str) -> Callable[..., Any]:
    """``function`` as the FFI function the Rust module calls: Python values in, a list of
    results out."""

    def served(*args: Any) -> List[Any]:
        returned = function(*(_to_python(a) for a in args))
        if not results:
            if returned is not None:
                raise TypeError(f"the function has no results but returned {type(returned).__name__}")
            return []
        if len(results) == 1:
            returned = (returned,)
        elif not isinstance(returned, (tuple, list)) or len(returned) != len(results):
            raise TypeError(f"the function must return a tuple of {len(results)} results")
        return [
            _reference(value) if kind == "r" else _scalar(value, kind)
            for kind, value in zip(results, returned)
        ]

    return served


class NativeModule:
    """A VM module named ``name`` whose functions are Python callables (see the module docs).

    ``ctor``, as for ``iree.runtime.PyModuleInterface``, makes a state object each time the
    module is handed to a load (``ctor(self)``); the exported callables are then called with
    it first, so methods of a class can be exported unbound (``Host.add``). Without ``ctor``
    they are called with the call's arguments alone.
    """

    def __init__(self, name: str, ctor: Optional[Callable[["NativeModule"], Any]] = None) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"native module name {name!r}: must be a non-empty str without '.'")
        self.name = name
        self._ctor = ctor
        self._functions: Dict[str, Tuple[str, Callable[..., Any]]] = {}

    def export(self, name: str, cconv: str, callable: Callable[..., Any]) -> None:
        """Adds function ``name`` with calling convention ``cconv``, served by ``callable``
        (``iree.runtime.PyModuleInterface.export``'s arguments)."""
        if name in self._functions:
            raise ValueError(f"native function {self.name}.{name} is defined twice")
        if not builtins.callable(callable):
            raise TypeError(f"native function {self.name}.{name}: {callable!r} is not callable")
        _result_kinds(cconv)
        self._functions[name] = (cconv, callable)

    def function(self, cconv: str, *, name: Optional[str] = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator exporting the decorated callable under its own name (or ``name``)."""

        def decorate(callable: Callable[..., Any]) -> Callable[..., Any]:
            self.export(name or callable.__name__, cconv, callable)
            return callable

        return decorate

    @property
    def functions(self) -> Dict[str, str]:
        """Each function's calling convention, in the order exported."""
        return {name: cconv for name, (cconv, _) in self._functions.items()}

    def _pactum_native_module(self) -> Any:
        """The ``pactum.iree.NativeModule`` FFI object a load registers (a fresh state from
        ``ctor`` each time)."""
        state = self._ctor(self) if self._ctor is not None else None
        entries = []
        for name, (cconv, callable) in self._functions.items():
            target = callable
            if self._ctor is not None:
                target = (lambda f: lambda *args: f(state, *args))(callable)
            entries.append([name, cconv, _serve(target, _result_kinds(cconv))])
        return _NATIVE_MODULE(self.name, entries)

    def invoke(self, function: str, *args: Any) -> Any:
        """Calls ``function`` through the VM's conversions, as an importing module would:
        arguments are converted by its calling convention (arrays to buffer views, bytes to
        ``!vm.buffer``, lists of tuples for a variadic span), and its results come back as a
        caller of the module sees them (arrays, bytes, lists, Python scalars): ``None``, the one
        result, or a tuple. For trying a module without a ``.vmfb`` that imports it."""
        converted = [_invoke_arg(a) for a in args]
        results = [_to_python(r) for r in _NATIVE_MODULE_INVOKE(self._pactum_native_module(), function, converted)]
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    def __repr__(self) -> str:
        return f"NativeModule({self.name!r}, functions={self.functions})"


_INDEX_NEW = tvm_ffi.get_global_func("pactum.iree.parameter_index")
_INDEX_ADD_BUFFER = tvm_ffi.get_global_func("pactum.iree.parameter_index_add_buffer")
_INDEX_ADD_SPLAT = tvm_ffi.get_global_func("pactum.iree.parameter_index_add_splat")
_INDEX_LOAD = tvm_ffi.get_global_func("pactum.iree.parameter_index_load")
_INDEX_ITEMS = tvm_ffi.get_global_func("pactum.iree.parameter_index_items")
_INDEX_DATA = tvm_ffi.get_global_func("pactum.iree.parameter_index_data")

Metadata = Optional[Union[bytes, str]]


class ParameterIndexEntry:
    """One entry of a :class:`ParameterIndex` (``iree.runtime.ParameterIndexEntry``'s
    properties: ``key``, ``length``, ``metadata``, ``is_splat``, ``splat_pattern``,
    ``is_file`` (stored bytes, from a buffer or an archive) and ``file_view``)."""

    def __init__(self, index: "ParameterIndex", key: str, metadata: bytes, length: int, pattern: Optional[bytes]) -> None:
        self._index = index
        self.key = key
        self.metadata = metadata
        self.length = length
        self._pattern = pattern

    @property
    def is_splat(self) -> bool:
        return self._pattern is not None

    @property
    def is_file(self) -> bool:
        return self._pattern is None

    @property
    def splat_pattern(self) -> bytes:
        if self._pattern is None:
            raise ValueError(f"parameter {self.key!r} is not a splat")
        return self._pattern

    @property
    def file_view(self) -> memoryview:
        """The entry's bytes (a copy), for an entry with stored bytes."""
        return memoryview(bytes(_INDEX_DATA(self._index._index, self.key)))

    def __repr__(self) -> str:
        kind = f"splat {self._pattern!r}" if self._pattern is not None else "data"
        return f"<ParameterIndexEntry {self.key!r} {kind} length={self.length}>"


class ParameterIndex:
    """Named parameters for a load (``parameters={"model": index}``), as
    ``iree.runtime.ParameterIndex`` holds them: buffers added in memory, splats, and the
    entries of archives read with :meth:`load`. A key added again replaces the earlier entry.
    """

    def __init__(self) -> None:
        self._index = _INDEX_NEW()

    def add_buffer(self, key: str, buffer: Any, *, metadata: Metadata = None) -> None:
        """Adds ``buffer``'s bytes as parameter ``key``. A NumPy array (C-contiguous, writable)
        or another writable buffer (``bytearray``, ``memoryview``) is held, not copied, so it
        must not be modified while the index or a module loaded with it is alive; ``bytes``
        and read-only buffers are copied once."""
        if isinstance(buffer, bytes):
            data: Any = buffer
        else:
            array = buffer if isinstance(buffer, np.ndarray) else np.frombuffer(memoryview(buffer), dtype=np.uint8)
            if not array.flags.c_contiguous:
                raise ValueError(f"parameter {key!r}: the buffer must be C-contiguous")
            if array.flags.writeable:
                data = tvm_ffi.from_dlpack(array.reshape(-1).view(np.uint8))
            else:
                data = array.tobytes()
        _INDEX_ADD_BUFFER(self._index, key, data, metadata)

    def add_splat(self, key: str, pattern: Any, total_length: int, *, metadata: Metadata = None) -> None:
        """Adds parameter ``key``: ``total_length`` bytes of ``pattern`` repeated. ``pattern``
        is bytes or a NumPy scalar/array of 1, 2, 4, 8 or 16 bytes
        (``np.float32(1.0)``)."""
        if not isinstance(pattern, (bytes, bytearray, memoryview)):
            pattern = np.asarray(pattern).tobytes()
        _INDEX_ADD_SPLAT(self._index, key, bytes(pattern), int(total_length), metadata)

    def load(self, file_path: Union[str, "os.PathLike[str]"], format: Optional[str] = None) -> None:
        """Adds every entry of the archive at ``file_path`` (``.irpa``, ``.safetensors`` or
        ``.gguf``, told apart by their contents; ``format`` is accepted for
        ``iree.runtime``'s signature and not needed). A missing file is a
        ``FileNotFoundError``."""
        path = os.fspath(file_path)
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        _INDEX_LOAD(self._index, path)

    def _entries(self) -> List[ParameterIndexEntry]:
        return [
            ParameterIndexEntry(self, str(key), bytes(metadata), int(length), None if pattern is None else bytes(pattern))
            for key, metadata, length, pattern in _INDEX_ITEMS(self._index)
        ]

    def items(self) -> List[Tuple[str, ParameterIndexEntry]]:
        """``(key, entry)`` pairs, in the order added."""
        return [(entry.key, entry) for entry in self._entries()]

    def keys(self) -> List[str]:
        """The keys, in the order added."""
        return [entry.key for entry in self._entries()]

    def __len__(self) -> int:
        return len(_INDEX_ITEMS(self._index))

    def __getitem__(self, i: int) -> ParameterIndexEntry:
        return self._entries()[i]

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def create_archive_file(self, file_path: Union[str, "os.PathLike[str]"]) -> "ParameterIndex":
        """Writes the entries to an ``.irpa`` archive at ``file_path`` and returns an index
        over it (``iree.runtime.ParameterIndex.create_archive_file``)."""
        write = tvm_ffi.get_global_func("pactum.iree.parameter_index_write_irpa", allow_missing=True)
        if write is None:
            raise NotImplementedError("this build of pactum cannot write .irpa archives")
        path = os.fspath(file_path)
        write(self._index, path)
        archive = ParameterIndex()
        archive.load(path)
        return archive

    def _pactum_parameter_index(self) -> Any:
        """The ``pactum.iree.ParameterIndex`` FFI object a load reads."""
        return self._index

    def __repr__(self) -> str:
        return f"<ParameterIndex of {len(self)} entries>"
