"""IREE bytecode modules (``.vmfb``) run by pactum, from Python.

``load(source)`` returns an :class:`IreeModule` whose exports are attributes and items::

    import numpy as np, pactum
    m = pactum.iree.load("tensors.vmfb")
    out = m.dict_summary(np.array([1, 2, 4], np.float32), repeat=3)
    # {'total': array(7., dtype=float32), 'count': 3, 'repeated': [3, 3, 3]}

Each export accepts what ``iree.runtime`` accepts for the same ``iree.abi`` signature: dicts,
lists, tuples, keyword arguments, NumPy arrays and array-likes (converted to the declared
dtype, as IREE does), Python and NumPy scalars. A NumPy array (or DLPack tensor) of another
dtype than declared is refused unless the module is loaded with ``allow_casts=True``
(iree.runtime converts NumPy arrays silently). Results are NumPy arrays, dicts, lists, tuples
and Python scalars, shaped as the signature says. A refused argument is a ``TypeError`` or
``ValueError`` whose message names its path (``args[0]["bias"]``, ``kwargs["x"]``).

:func:`load` also takes the module's bytes, the device (``local-task`` with an optional worker
count, ``local-sync``, or ``vulkan`` for modules compiled for Vulkan), modules to link before it, parameter archives by scope, and a
callback for what the program traces::

    m = pactum.iree.load(open("main.vmfb", "rb").read(), device="local-sync",
                         modules=["lib.vmfb"], parameters={"model": "weights.irpa"},
                         trace=lambda key, arrays: print(key, arrays))

``m.f.submit(...)`` starts a call on pactum's call threads and returns a
``concurrent.futures.Future`` at once; :func:`benchmark` times repeated calls::

    future = m.predict.submit(x)              # the caller goes on; future.result() waits
    print(pactum.iree.benchmark(m.predict, x, repetitions=100).median)

The module is a ``tvm_ffi.Module`` of kind ``vmfb`` underneath (:attr:`IreeModule.ffi_module`),
made by the global ``pactum.iree.load_module``; ``tvm_ffi.load_module(path)`` (the loader
``import pactum`` registers) gives the same functions with the default options and without the
Python-side conversions.
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import statistics
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tvm_ffi

__all__ = [
    "IreeModule",
    "Export",
    "Signature",
    "BenchmarkResult",
    "DEVICES",
    "load",
    "benchmark",
    "inspect",
    "signature",
    "NativeModule",
    "ParameterIndex",
    "ParameterIndexEntry",
]

PathLike = Union[str, "os.PathLike[str]"]

#: iree.abi element types -> NumPy dtypes (what IREE's Python runtime maps them to).
_DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
    "si8": np.int8,
    "si16": np.int16,
    "si32": np.int32,
    "si64": np.int64,
}


def inspect(source: Any) -> Dict[str, Any]:
    """The data of ``pactum inspect --json FILE`` for a ``.vmfb`` given by its path or its
    bytes: name, version, imports, exports (each with its calling convention, reflection
    attributes and decoded signature), functions, rodata segments and more, as a dict."""
    if isinstance(source, (str, os.PathLike)):
        text = tvm_ffi.get_global_func("pactum.iree.inspect")(os.fspath(source))
    else:
        text = tvm_ffi.get_global_func("pactum.iree.inspect_source")(_module_bytes(source, "source"))
    return json.loads(str(text))


@dataclass(frozen=True)
class Signature:
    """How an export is called, decoded from its reflection attributes.

    ``text`` is pactum's rendering, e.g. ``(ndarray<f32, 1>, repeat: i32) -> (dict{...})``;
    ``iree_abi`` the decoded ``iree.abi`` JSON (``None`` when the export has none);
    ``declaration`` the ``iree.abi.declaration`` text; ``cconv`` the VM calling convention.
    """

    name: str
    text: Optional[str]
    declaration: Optional[str] = None
    iree_abi: Optional[Dict[str, Any]] = None
    cconv: Optional[str] = None
    keywords: Tuple[str, ...] = field(default=())
    result_count: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.name}{self.text or '(...)'}"

    @classmethod
    def _from_export(cls, export: Dict[str, Any]) -> "Signature":
        decoded = export.get("decoded") or {}
        abi_text = decoded.get("iree_abi")
        abi = json.loads(abi_text) if abi_text else None
        keywords = tuple(
            a[1]
            for a in (abi or {}).get("a", [])
            if isinstance(a, list) and a and a[0] == "named"
        )
        return cls(
            name=export["name"],
            text=decoded.get("signature"),
            declaration=decoded.get("declaration"),
            iree_abi=abi,
            cconv=export.get("cconv"),
            keywords=keywords,
            result_count=len(abi["r"]) if abi and "r" in abi else (
                len((export.get("types") or {}).get("results") or []) if export.get("types") else None
            ),
        )


def _split_top(text: str) -> List[str]:
    """Splits `a, b<c, d>, e` at its top-level commas."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<[({":
            depth += 1
        elif ch in ">])}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        items.append(text[start:].strip())
    return items


def _descs_from_text(text: Optional[str]) -> List[Any]:
    """Argument descriptors (iree.abi form) of the top-level tensors of a signature text such as
    ``(ndarray<f32, [4]>, i32) -> (...)``, for exports with a declaration but no iree.abi."""
    if not text or not text.startswith("("):
        return []
    params = text[1 : text.find(") -> (")] if ") -> (" in text else text[1:-1]
    descs: List[Any] = []
    for item in _split_top(params):
        if item.startswith("ndarray<"):
            descs.append(["ndarray", item[len("ndarray<") :].split(",")[0].rstrip(">").strip()])
        else:
            descs.append(item)
    return descs


def _cast_refused(path: str, array: np.ndarray, dtype: np.dtype, abi_type: str) -> TypeError:
    return TypeError(
        f"{path}: expected an array of {dtype} ({abi_type}), got a NumPy array of {array.dtype}; "
        "pass allow_casts=True to pactum.iree.load to convert it (as iree.runtime does)"
    )


def _convert(value: Any, desc: Any, path: str = "argument", allow_casts: bool = True) -> Any:
    """Prepares `value` for an argument of iree.abi type `desc` the way iree.runtime does
    (array-likes to arrays of the declared dtype, NumPy scalars to Python scalars). A NumPy
    array of another dtype than declared is converted only when `allow_casts` (else a
    ``TypeError`` naming `path` and both dtypes, as for DLPack tensors). Values it cannot
    prepare are passed unchanged, for pactum to refuse with the argument's path."""
    if isinstance(value, np.generic) and not isinstance(desc, list):
        return value.item()
    if not isinstance(desc, list) or not desc:
        return value
    kind = desc[0]
    if kind == "ndarray":
        if isinstance(value, tvm_ffi.Tensor) or value is None:
            return value
        dtype = _DTYPES.get(desc[1])
        try:
            array = np.asarray(value)
        except Exception:
            return value
        if array.dtype == object or dtype is None:
            # Any element type (a declaration's `!hal.buffer_view`): the array as it is, a
            # read-only one as a copy (see below).
            if isinstance(value, np.ndarray) and array.dtype != object and not value.flags.writeable:
                return value.copy()
            return value
        if array.dtype != dtype:
            if isinstance(value, np.ndarray) and not allow_casts:
                raise _cast_refused(path, value, np.dtype(dtype), desc[1])
            array = array.astype(dtype)
        array = np.ascontiguousarray(array) if array.ndim else array
        # pactum hands a 64-byte aligned array to the program in place (as IREE's import of a
        # host allocation), and DLPack cannot mark memory read-only (NumPy refuses to export
        # it): a read-only array goes as a copy, so the program can never write it.
        return array if array.flags.writeable else array.copy()
    if kind == "named" and len(desc) == 3:
        return _convert(value, desc[2], path, allow_casts)
    if kind == "sdict" and isinstance(value, dict):
        fields = {f[0]: f[1] for f in desc[1:] if isinstance(f, list) and len(f) == 2}
        return {
            k: _convert(v, fields[k], f'{path}["{k}"]', allow_casts) if k in fields else v
            for k, v in value.items()
        }
    if kind in ("slist", "stuple") and isinstance(value, (list, tuple)):
        items = desc[1:]
        if len(items) != len(value):
            return value
        return type(value)(
            _convert(v, d, f"{path}[{i}]", allow_casts) for i, (v, d) in enumerate(zip(value, items))
        )
    if kind == "py_homogeneous_list" and isinstance(value, (list, tuple)) and len(desc) == 2:
        return type(value)(_convert(v, desc[1], f"{path}[{i}]", allow_casts) for i, v in enumerate(value))
    return value


_PLAIN = frozenset([int, float, bool, str, bytes, type(None)])


def _narrow_type_array(tensor: Any) -> Any:
    """A NumPy array (a copy) of a tensor whose element type DLPack-to-NumPy refuses: bfloat16,
    the float8 formats and int4/uint4, as the ``ml_dtypes`` types NumPy users have (pactum
    keeps sub-byte integers one element a byte, as ``ml_dtypes`` does)."""
    import ctypes

    name = str(tensor.dtype)
    try:
        import ml_dtypes
    except ImportError as error:
        raise TypeError(f"a {name} result needs the ml_dtypes package (pip install ml_dtypes)") from error
    dtype = getattr(ml_dtypes, name, None)
    if dtype is None:
        raise TypeError(f"a {name} result has no NumPy form (neither NumPy nor ml_dtypes has {name})")
    dtype = np.dtype(dtype)
    if not tensor.is_contiguous():
        raise TypeError(f"a {name} result that is not contiguous has no NumPy form")
    shape = tuple(tensor.shape)
    count = int(np.prod(shape, dtype=np.int64))
    raw = ctypes.string_at(tensor.data_ptr(), count * dtype.itemsize) if count else b""
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _tensor_to_numpy(tensor: Any) -> Any:
    """A result tensor as NumPy: shared memory through DLPack, or a copy for the types DLPack
    cannot give NumPy (:func:`_narrow_type_array`)."""
    try:
        return np.from_dlpack(tensor)
    except (BufferError, RuntimeError):  # bfloat16: BufferError; float8: RuntimeError
        return _narrow_type_array(tensor)


def to_python(value: Any) -> Any:
    """Converts a result of a vmfb export to plain Python: tensors to NumPy arrays (sharing
    memory; a copy for bfloat16, float8 and int4, as ml_dtypes types), maps to dicts, arrays to lists; scalars and strings as they are."""
    kind = type(value)
    if kind in _PLAIN:  # the common case, without isinstance on tvm_ffi's ABC-based containers
        return value
    if kind is tvm_ffi.Tensor or isinstance(value, tvm_ffi.Tensor):
        return _tensor_to_numpy(value)
    if isinstance(value, tvm_ffi.Map):
        return {str(k): to_python(v) for k, v in value.items()}
    if isinstance(value, tvm_ffi.Array):
        return [to_python(v) for v in value]
    return value


_MAP_GET = tvm_ffi.get_global_func("ffi.MapGetItem")
_TENSOR = tvm_ffi.Tensor
_KWARGS = tvm_ffi.core.KWARGS
_ARRAY_GET = tvm_ffi.get_global_func("ffi.ArrayGetItem")
_ARRAY_SIZE = tvm_ffi.get_global_func("ffi.ArraySize")


def _scalar_arg(value: Any) -> Any:
    return value if type(value) in _PLAIN else value.item() if isinstance(value, np.generic) else value


def _arg_converter(desc: Any, path: str, allow_casts: bool) -> Any:
    """A function preparing one argument of iree.abi type `desc` (what :func:`_convert` does,
    decided once per export instead of on every call), naming the argument `path` in its
    errors; ``None`` where nothing is to be done but turn NumPy scalars into Python ones."""
    if not isinstance(desc, list) or not desc:
        return None
    kind = desc[0]
    if kind == "named" and len(desc) == 3:
        return _arg_converter(desc[2], path, allow_casts)
    if kind == "ndarray" and len(desc) > 1 and desc[1] in _DTYPES:
        dtype = np.dtype(_DTYPES[desc[1]])

        def array(value: Any) -> Any:
            # A writable C-contiguous NumPy array of the declared dtype passes as it is (~0.1
            # µs instead of ~0.6 µs through _convert).
            flags = value.flags if type(value) is np.ndarray else None
            if flags is not None and value.dtype == dtype and flags.c_contiguous and flags.writeable:
                return value
            return _convert(value, desc, path, allow_casts)
        return array
    if kind == "sdict" and all(isinstance(f, list) and len(f) == 2 for f in desc[1:]):
        fields = {
            f[0]: _arg_converter(f[1], f'{path}["{f[0]}"]', allow_casts) or _scalar_arg for f in desc[1:]
        }

        def record(value: Any) -> Any:
            if type(value) is not dict or len(value) != len(fields):
                return _convert(value, desc, path, allow_casts)
            out = {}
            for k, v in value.items():
                convert = fields.get(k)
                if convert is None:  # an unknown key: pactum refuses it with its path
                    return _convert(value, desc, path, allow_casts)
                out[k] = convert(v)
            return out
        return record
    return lambda value: _convert(value, desc, path, allow_casts)


def _result_builder(desc: Any) -> Any:
    """A function turning a result of iree.abi type `desc` into Python, reading containers by
    their known keys and positions (``ffi.MapGetItem``/``ffi.ArrayGetItem``, ~0.2 µs each)
    rather than iterating ``tvm_ffi.Map``/``Array`` from Python (~1.5 µs per element). Values
    that are not what `desc` says go through the generic :func:`to_python`."""
    if not isinstance(desc, list) or not desc:
        return to_python
    kind = desc[0]
    if kind == "ndarray":
        def tensor(value: Any) -> Any:
            if not isinstance(value, tvm_ffi.Tensor):
                return to_python(value)
            # np.from_dlpack inline: this is the benchmarked small-call path.
            try:
                return np.from_dlpack(value)
            except (BufferError, RuntimeError):
                return _narrow_type_array(value)
        return tensor
    if kind == "sdict" and all(isinstance(f, list) and len(f) == 2 for f in desc[1:]):
        fields = [(f[0], _result_builder(f[1])) for f in desc[1:]]

        def record(value: Any) -> Any:
            # pactum builds a record result from the signature, with exactly its keys: no
            # size check (~0.25 µs); a missing key falls back to the generic reader.
            if not isinstance(value, tvm_ffi.Map):
                return to_python(value)
            out = {}
            try:
                for k, build in fields:
                    item = _MAP_GET(value, k)
                    # Plain values are what every builder returns them as; tensors inline.
                    kind = type(item)
                    if kind in _PLAIN:
                        out[k] = item
                    elif kind is _TENSOR:
                        try:
                            out[k] = np.from_dlpack(item)
                        except (BufferError, RuntimeError):
                            out[k] = _narrow_type_array(item)
                    else:
                        out[k] = build(item)
            except (KeyError, IndexError):
                return to_python(value)
            return out
        return record
    if kind in ("slist", "stuple"):
        items = [_result_builder(d) for d in desc[1:]]
        container = tuple if kind == "stuple" else list

        def sequence(value: Any) -> Any:
            if not isinstance(value, tvm_ffi.Array) or _ARRAY_SIZE(value) != len(items):
                return to_python(value)
            return container(build(_ARRAY_GET(value, i)) for i, build in enumerate(items))
        return sequence
    if kind == "py_homogeneous_list" and len(desc) == 2:
        build = _result_builder(desc[1])

        def homogeneous(value: Any) -> Any:
            if not isinstance(value, tvm_ffi.Array):
                return to_python(value)
            return [build(_ARRAY_GET(value, i)) for i in range(_ARRAY_SIZE(value))]
        return homogeneous
    return to_python


class Export:
    """One exported function of an :class:`IreeModule`, callable like a Python function
    (positional and keyword arguments as its signature declares).

    What each argument needs (dtype casts, nested dicts and lists) and how each result is read
    back are worked out once, from the signature, when the export is first looked up."""

    def __init__(self, function: tvm_ffi.Function, signature: Signature, allow_casts: bool = False) -> None:
        self._function = function
        self.signature = signature
        #: Whether NumPy arrays of another dtype than declared are converted (else refused).
        self.allow_casts = allow_casts
        self.__name__ = signature.name
        abi = signature.iree_abi or {}
        args = abi.get("a", [])
        positional = [a for a in args if not (isinstance(a, list) and a and a[0] == "named")]
        if not abi:
            positional = _descs_from_text(signature.text)
        self._args = positional
        self._converters = [_arg_converter(d, f"args[{i}]", allow_casts) for i, d in enumerate(positional)]
        #: One preparing function per positional argument (NumPy scalars to Python ones where
        #: nothing else is to be done).
        self._preparers = [c or _scalar_arg for c in self._converters]
        #: No argument needs preparing beyond NumPy scalars (a call with Python scalars only
        #: goes straight to the function).
        self._plain_args = not any(self._converters)
        self._keywords = {
            a[1]: _arg_converter(a[2], f'kwargs["{a[1]}"]', allow_casts)
            for a in args
            if isinstance(a, list) and a and a[0] == "named"
        }
        results = abi.get("r")
        count = signature.result_count
        self._tuple = count is not None and count != 1
        if results is not None and len(results) == 1:
            self._build = _result_builder(results[0])
        elif results is not None and len(results) > 1:
            builders = [_result_builder(d) for d in results]

            def several(value: Any) -> Any:
                if not isinstance(value, tvm_ffi.Array) or _ARRAY_SIZE(value) != len(builders):
                    return to_python(value)
                return [build(_ARRAY_GET(value, i)) for i, build in enumerate(builders)]
            self._build = several
        else:
            self._build = to_python
        self.__doc__ = f"{signature}\n\nAn export of an IREE module, run by pactum."

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        converters = self._converters
        if self._plain_args and not kwargs and _PLAIN.issuperset(map(type, args)):
            # Python scalars only, nothing to prepare (e.g. add(3, 4)).
            result = self._build(self._function(*args))
            return tuple(result) if self._tuple and isinstance(result, list) else result
        packed = [convert(a) for convert, a in zip(self._preparers, args)]
        if len(args) > len(converters):
            packed += [_scalar_arg(a) for a in args[len(converters):]]
        if kwargs:
            packed.append(_KWARGS)
            keywords = self._keywords
            for name, value in kwargs.items():
                convert = keywords.get(name)
                packed += (name, convert(value) if convert is not None else _scalar_arg(value))
        result = self._build(self._function(*packed))
        if self._tuple and isinstance(result, list):
            return tuple(result)
        return result

    def submit(self, *args: Any, **kwargs: Any) -> Future:
        """Starts ``self(*args, **kwargs)`` on pactum's call threads and returns at once: a
        ``concurrent.futures.Future`` whose result is what the call returns (or whose
        exception is what it raises). Several submitted calls run at the same time; an async
        export (coarse-fences model) runs with the fences pactum makes for it, as a direct
        call does. The arguments are read when the call runs: do not change them before."""
        return _call_threads().submit(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<pactum.iree.Export {self.signature}>"


_CALL_THREADS: Optional[ThreadPoolExecutor] = None
_CALL_THREADS_LOCK = threading.Lock()


def _call_threads() -> ThreadPoolExecutor:
    """The threads :meth:`Export.submit` runs calls on, made on first use. pactum's calls
    release the GIL, so they run in parallel with each other and with the caller."""
    global _CALL_THREADS
    with _CALL_THREADS_LOCK:
        if _CALL_THREADS is None:
            _CALL_THREADS = ThreadPoolExecutor(
                max_workers=max(4, os.cpu_count() or 1), thread_name_prefix="pactum-iree-call"
            )
        return _CALL_THREADS


#: The devices :func:`load` knows: IREE's ``local-task`` (a worker pool runs the dispatches),
#: ``local-sync`` (the calling thread runs everything) and ``vulkan`` (the Vulkan loader's
#: first device; ``vulkan://N`` its N-th), for modules compiled with
#: ``--iree-hal-target-device=vulkan``.
DEVICES = ("local-task", "local-sync", "vulkan")


def _known_device(device: Any) -> bool:
    return isinstance(device, str) and (
        device in DEVICES or (device.startswith("vulkan://") and device[len("vulkan://"):].isdigit())
    )

_LOAD_MODULE = tvm_ffi.get_global_func("pactum.iree.load_module")
_INSPECT_SOURCE = tvm_ffi.get_global_func("pactum.iree.inspect_source")


class _ImmutableBytes:
    """Memory nothing in Python can write (a ``bytes`` object, a read-only mapping), shown to
    NumPy as a writable array interface that keeps its owner alive, so that DLPack (which
    refuses read-only arrays) hands it to pactum without a copy. pactum only reads it."""

    def __init__(self, owner: Any, address: int, length: int) -> None:
        self.owner = owner
        self.__array_interface__ = {
            "data": (address, False),
            "shape": (length,),
            "typestr": "|u1",
            "version": 3,
        }


def _is_immutable(view: memoryview) -> bool:
    """Whether no Python code can write the memory of `view`: bytes, read-only mappings, and
    read-only NumPy arrays over them."""
    if not view.readonly:
        return False
    owner = view.obj
    while isinstance(owner, (np.ndarray, memoryview)):
        if isinstance(owner, np.ndarray):
            if owner.flags.writeable:
                return False
            owner = owner.base
        else:
            if not owner.readonly:
                return False
            owner = owner.obj
    return isinstance(owner, (bytes, mmap.mmap))


def _module_bytes(source: Any, what: str) -> Any:
    """A bytes-like module source as what ``pactum.iree.load_module`` reads: a tensor of its
    bytes, in place when nothing can write them (``bytes``, read-only mappings), else over a
    copy (pactum verifies a module once, when it is loaded, so its bytes must not change)."""
    try:
        view = memoryview(source)
    except TypeError:
        raise TypeError(
            f"{what}: expected a path or a bytes-like object (bytes, bytearray, memoryview, "
            f"a NumPy array), got {type(source).__name__}"
        ) from None
    if not (view.c_contiguous and _is_immutable(view)):
        view = memoryview(view.tobytes())
    if view.nbytes == 0:
        return b""
    flat = np.frombuffer(view, dtype=np.uint8, count=view.nbytes)
    address = flat.__array_interface__["data"][0]
    return tvm_ffi.from_dlpack(np.asarray(_ImmutableBytes(view, address, view.nbytes)))


def _is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def _existing_file(path: Any) -> str:
    """`path` as a str, or the ``FileNotFoundError``/``IsADirectoryError`` iree.runtime raises."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    return path


def _linked_module(module: Any, index: int) -> Any:
    what = f"modules[{index}]"
    native = getattr(module, "_pactum_native_module", None)
    if native is not None:
        return native()
    if _is_path(module):
        return _existing_file(module)
    return _module_bytes(module, what)


def _parameter_scopes(parameters: Any) -> List[List[Any]]:
    if not hasattr(parameters, "items"):
        raise TypeError(
            f"parameters: expected a dict of scope -> archive (path or pactum.iree.ParameterIndex), "
            f"got {type(parameters).__name__}"
        )
    pairs = []
    for scope, archive in parameters.items():
        if not isinstance(scope, str):
            raise TypeError(f"parameters: a scope must be a str, got {type(scope).__name__}")
        index = getattr(archive, "_pactum_parameter_index", None)
        if index is not None:
            pairs.append([scope, index()])
        elif _is_path(archive):
            pairs.append([scope, _existing_file(archive)])
        else:
            raise TypeError(
                f"parameters[{scope!r}]: expected a path or a pactum.iree.ParameterIndex, "
                f"got {type(archive).__name__}"
            )
    return pairs


def _trace_sink(trace: Callable[[str, List[Any]], Any]) -> Callable[[str, Any], None]:
    """The callback pactum calls for ``hal.buffer_view.trace``: `trace` with the key and the
    traced tensors as NumPy arrays (each a copy, the caller's to keep)."""

    def sink(key: Any, tensors: Any) -> None:
        trace(str(key), [None if t is None else _tensor_to_numpy(t) for t in tensors])

    return sink


def _load_error(error: Exception, name: str, files: Sequence[Any]) -> Optional[Exception]:
    """`error` with its message naming the module's file, or ``None`` when it names one of
    the `files` of the load already (pactum's loader names the file a message is about, the
    loaded module's or a linked one's: no second name is put before it)."""
    message = str(error)
    if any(isinstance(f, str) and f in message for f in (name, *files)):
        return None
    return type(error)(f"{name}: {message}")


class IreeModule:
    """A loaded ``.vmfb``: exports as attributes (``m.predict``) and items (``m["predict"]``).

    ``dir(m)`` lists the exports, ``help(m.predict)`` shows its signature, ``len(m)``,
    ``iter(m)`` and ``name in m`` work on the export names. Made by :func:`load`, whose
    arguments it takes.
    """

    def __init__(
        self,
        source: Any,
        *,
        device: str = "local-task",
        threads: Optional[int] = None,
        modules: Sequence[Any] = (),
        parameters: Optional[Mapping[str, Any]] = None,
        trace: Optional[Callable[[str, List[Any]], Any]] = None,
        allow_casts: bool = False,
    ) -> None:
        if not _known_device(device):
            raise ValueError(
                f"device: unknown device {device!r} (expected one of: {', '.join(DEVICES)}, vulkan://N)"
            )
        if threads is not None:
            if isinstance(threads, bool) or not isinstance(threads, int):
                raise TypeError(f"threads: expected an int or None, got {type(threads).__name__}")
            if device != "local-task":
                raise ValueError(
                    f"threads: the {device} device runs everything on the calling thread; "
                    "threads applies to local-task only"
                )
            if not 1 <= threads <= 255:
                raise ValueError(f"threads: {threads} worker threads: expected 1 to 255")
        if trace is not None and not callable(trace):
            raise TypeError(f"trace: expected a callable (key, tensors), got {type(trace).__name__}")
        if isinstance(modules, (str, bytes, os.PathLike)):
            raise TypeError("modules: expected a list of modules, got a single one (wrap it in a list)")
        options: Dict[str, Any] = {"device": device, "allow_casts": bool(allow_casts)}
        if threads is not None:
            options["threads"] = threads
        linked = [_linked_module(m, i) for i, m in enumerate(modules)]
        if linked:
            options["modules"] = linked
        if parameters is not None:
            options["parameters"] = _parameter_scopes(parameters)
        if trace is not None:
            options["trace"] = _trace_sink(trace)
        #: The file the module came from (``None`` when loaded from bytes).
        self.path: Optional[str] = None
        if _is_path(source):
            self.path = _existing_file(source)
            loaded = self.path
            name = self.path
        else:
            loaded = _module_bytes(source, "source")
            name = "<module bytes>"
        #: The device the module runs on (``local-task``, ``local-sync``, ``vulkan``...).
        self.device = device
        #: Whether NumPy arrays of another dtype than an export declares are converted.
        self.allow_casts = allow_casts
        try:
            #: The underlying ``tvm_ffi.Module`` (kind ``vmfb``).
            self.ffi_module = _LOAD_MODULE(loaded, options)
            info = json.loads(str(_INSPECT_SOURCE(loaded)))
        except (ValueError, RuntimeError, TypeError) as error:
            # A corrupt or foreign file: the same exception, naming the file.
            named = _load_error(error, name, linked)
            if named is None:
                raise
            raise named from error
        #: The module's name (``@name`` in the bytecode).
        self.name: str = info.get("name", "")
        self._signatures = {
            e["name"]: Signature._from_export(e)
            for e in info.get("exports", [])
            if not e["name"].startswith("__")
        }
        self._exports: Dict[str, Export] = {}

    @property
    def exports(self) -> Tuple[str, ...]:
        """The names of the exports (internal ones such as ``__init`` left out)."""
        return tuple(self._signatures)

    def __getitem__(self, name: str) -> Export:
        export = self._exports.get(name)
        if export is None:
            if name not in self._signatures:
                where = self.path or f"module @{self.name}"
                raise KeyError(f"{where} has no export {name!r} (it has {list(self._signatures)})")
            export = Export(self.ffi_module[name], self._signatures[name], self.allow_casts)
            self._exports[name] = export
        return export

    def __getattr__(self, name: str) -> Export:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(str(e.args[0])) from None

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._signatures))

    def __contains__(self, name: object) -> bool:
        return name in self._signatures

    def __iter__(self) -> Iterator[str]:
        return iter(self._signatures)

    def __len__(self) -> int:
        return len(self._signatures)

    def __repr__(self) -> str:
        lines = [f"<pactum.iree.IreeModule @{self.name} from {self.path or 'bytes'} on {self.device}:"]
        lines += [f"  {s}" for s in self._signatures.values()]
        return "\n".join(lines) + ">"


def load(
    source: Any,
    *,
    device: str = "local-task",
    threads: Optional[int] = None,
    modules: Sequence[Any] = (),
    parameters: Optional[Mapping[str, Any]] = None,
    trace: Optional[Callable[[str, List[Any]], Any]] = None,
    allow_casts: bool = False,
) -> IreeModule:
    """Loads a ``.vmfb`` module; its exports are attributes and items of the result.

    `source` is a path or a bytes-like object (``bytes``, ``bytearray``, ``memoryview``,
    ``mmap``, a NumPy array of bytes). ``bytes`` and read-only mappings are read in place (the
    module keeps them alive); memory Python can write is copied first, since pactum verifies a
    module once, when it is loaded.

    - `device`: ``"local-task"`` (ELF dispatches on a worker pool: the process-wide one, or
      one of `threads` workers) or ``"local-sync"`` (everything on the calling thread), as
      IREE's drivers of those names; or ``"vulkan"`` / ``"vulkan://N"`` (the Vulkan loader's
      first / N-th device, for modules compiled with ``--iree-hal-target-device=vulkan``;
      results come back as host arrays);
    - `modules`: modules registered before this one in its context, in order, whose exports
      it imports (iree-run-module's repeated ``--module``): paths, bytes-like objects, or
      native modules (objects with a ``_pactum_native_module()`` method);
    - `parameters`: ``{scope: archive}``, each archive a path (``.irpa``, ``.safetensors``,
      ``.gguf``) or a :class:`ParameterIndex` (an object with ``_pactum_parameter_index()``),
      for the ``io_parameters`` imports of modules compiled with external weights
      (``--parameters=SCOPE=FILE``);
    - `trace`: called as ``trace(key, [arrays])`` for each ``hal.buffer_view.trace`` the
      program runs (``flow.tensor.trace``, ``--iree-flow-trace-dispatch-tensors``), as
      ``iree.runtime.HalModuleDebugSink``'s callback; an exception it raises fails the call;
    - `allow_casts`: convert NumPy arrays and DLPack tensors of another dtype than an export
      declares (iree.runtime converts NumPy arrays always) instead of refusing them with a
      ``TypeError`` naming the argument's path and both dtypes.

    A missing file (module or archive) is a ``FileNotFoundError``; a bad device a
    ``ValueError`` naming the choices; a file that is not a valid module a ``ValueError`` (or
    ``RuntimeError``) whose message names the file."""
    return IreeModule(
        source,
        device=device,
        threads=threads,
        modules=modules,
        parameters=parameters,
        trace=trace,
        allow_casts=allow_casts,
    )


@dataclass(frozen=True)
class BenchmarkResult:
    """What :func:`benchmark` measured: the wall time of each timed call, in seconds."""

    times: List[float]
    warmup: int

    @property
    def repetitions(self) -> int:
        """The number of timed calls."""
        return len(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def stddev(self) -> float:
        """The sample standard deviation (0 for a single call)."""
        return statistics.stdev(self.times) if len(self.times) > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    def __str__(self) -> str:
        us = 1e6
        return (
            f"{self.repetitions} calls: mean {self.mean * us:.2f} us, median {self.median * us:.2f} us, "
            f"stddev {self.stddev * us:.2f} us, min {self.min * us:.2f} us, max {self.max * us:.2f} us"
        )


def benchmark(function: Callable[..., Any], *args: Any, repetitions: int = 10, warmup: int = 1, **kwargs: Any) -> BenchmarkResult:
    """Calls ``function(*args, **kwargs)`` `warmup` times untimed, then `repetitions` times,
    each timed alone (``time.perf_counter``, arguments and result conversion included, as a
    Python caller sees it), like iree-benchmark-module's per-iteration times. An exception of
    the function propagates."""
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ValueError(f"repetitions: expected an int >= 1, got {repetitions!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup: expected an int >= 0, got {warmup!r}")
    for _ in range(warmup):
        function(*args, **kwargs)
    clock = time.perf_counter
    times = []
    for _ in range(repetitions):
        start = clock()
        function(*args, **kwargs)
        times.append(clock() - start)
    return BenchmarkResult(times=times, warmup=warmup)


def signature(fn: Export) -> Signature:
    """The :class:`Signature` of an export (``signature(m.predict)``)."""
    if not isinstance(fn, Export):
        raise TypeError(f"signature() takes an export of a pactum.iree module, not {type(fn).__name__}")
    return fn.signature

from .iree_native import NativeModule, ParameterIndex, ParameterIndexEntry  # noqa: E402,F401  (python/pactum/iree_native.py)
