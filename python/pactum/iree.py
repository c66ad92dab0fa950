"""IREE bytecode modules (``.vmfb``) run by pactum, from Python.

``load(path)`` returns an :class:`IreeModule` whose exports are attributes and items::

    import numpy as np, pactum
    m = pactum.iree.load("tensors.vmfb")
    out = m.dict_summary(np.array([1, 2, 4], np.float32), repeat=3)
    # {'total': array(7., dtype=float32), 'count': 3, 'repeated': [3, 3, 3]}

Each export accepts what ``iree.runtime`` accepts for the same ``iree.abi`` signature: dicts,
lists, tuples, keyword arguments, NumPy arrays and array-likes (converted to the declared
dtype, as IREE does), Python and NumPy scalars. Results are NumPy arrays, dicts, lists, tuples
and Python scalars, shaped as the signature says. A refused argument is a ``TypeError`` or
``ValueError`` whose message names its path (``args[0]["bias"]``, ``kwargs["x"]``).

The module is a ``tvm_ffi.Module`` of kind ``vmfb`` underneath (:attr:`IreeModule.ffi_module`),
made by the loader ``import pactum`` registers, so ``tvm_ffi.load_module(path)`` gives the same
functions without the Python-side conversions.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import tvm_ffi

__all__ = ["IreeModule", "Export", "Signature", "load", "inspect", "signature"]

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


def inspect(path: PathLike) -> Dict[str, Any]:
    """The data of ``pactum inspect --json path`` for a ``.vmfb``: name, version, imports,
    exports (each with its calling convention, reflection attributes and decoded signature),
    functions, rodata segments and more, as a dict."""
    text = tvm_ffi.get_global_func("pactum.iree.inspect")(os.fspath(path))
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


def _convert(value: Any, desc: Any) -> Any:
    """Prepares `value` for an argument of iree.abi type `desc` the way iree.runtime does
    (array-likes to arrays of the declared dtype, NumPy scalars to Python scalars). Values it
    cannot prepare are passed unchanged, for pactum to refuse with the argument's path."""
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
            return value
        if array.dtype != dtype:
            array = array.astype(dtype)
        return np.ascontiguousarray(array) if array.ndim else array
    if kind == "named" and len(desc) == 3:
        return _convert(value, desc[2])
    if kind == "sdict" and isinstance(value, dict):
        fields = {f[0]: f[1] for f in desc[1:] if isinstance(f, list) and len(f) == 2}
        return {k: _convert(v, fields[k]) if k in fields else v for k, v in value.items()}
    if kind in ("slist", "stuple") and isinstance(value, (list, tuple)):
        items = desc[1:]
        if len(items) != len(value):
            return value
        return type(value)(_convert(v, d) for v, d in zip(value, items))
    if kind == "py_homogeneous_list" and isinstance(value, (list, tuple)) and len(desc) == 2:
        return type(value)(_convert(v, desc[1]) for v in value)
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


def _arg_converter(desc: Any) -> Any:
    """A function preparing one argument of iree.abi type `desc` (what :func:`_convert` does,
    decided once per export instead of on every call); ``None`` where nothing is to be done
    but turn NumPy scalars into Python ones."""
    if not isinstance(desc, list) or not desc:
        return None
    kind = desc[0]
    if kind == "named" and len(desc) == 3:
        return _arg_converter(desc[2])
    if kind == "ndarray" and len(desc) > 1 and desc[1] in _DTYPES:
        dtype = np.dtype(_DTYPES[desc[1]])

        def array(value: Any) -> Any:
            # A C-contiguous NumPy array of the declared dtype passes as it is (~0.1 µs
            # instead of ~0.6 µs through _convert).
            if type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous:
                return value
            return _convert(value, desc)
        return array
    if kind == "sdict" and all(isinstance(f, list) and len(f) == 2 for f in desc[1:]):
        fields = {f[0]: _arg_converter(f[1]) or _scalar_arg for f in desc[1:]}

        def record(value: Any) -> Any:
            if type(value) is not dict or len(value) != len(fields):
                return _convert(value, desc)
            out = {}
            for k, v in value.items():
                convert = fields.get(k)
                if convert is None:  # an unknown key: pactum refuses it with its path
                    return _convert(value, desc)
                out[k] = convert(v)
            return out
        return record
    return lambda value: _convert(value, desc)


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

    def __init__(self, function: tvm_ffi.Function, signature: Signature) -> None:
        self._function = function
        self.signature = signature
        self.__name__ = signature.name
        abi = signature.iree_abi or {}
        args = abi.get("a", [])
        positional = [a for a in args if not (isinstance(a, list) and a and a[0] == "named")]
        if not abi:
            positional = _descs_from_text(signature.text)
        self._args = positional
        self._converters = [_arg_converter(d) for d in positional]
        #: One preparing function per positional argument (NumPy scalars to Python ones where
        #: nothing else is to be done).
        self._preparers = [c or _scalar_arg for c in self._converters]
        #: No argument needs preparing beyond NumPy scalars (a call with Python scalars only
        #: goes straight to the function).
        self._plain_args = not any(self._converters)
        self._keywords = {
            a[1]: _arg_converter(a[2]) for a in args if isinstance(a, list) and a and a[0] == "named"
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

    def __repr__(self) -> str:
        return f"<pactum.iree.Export {self.signature}>"


class IreeModule:
    """A loaded ``.vmfb``: exports as attributes (``m.predict``) and items (``m["predict"]``).

    ``dir(m)`` lists the exports, ``help(m.predict)`` shows its signature, ``len(m)``,
    ``iter(m)`` and ``name in m`` work on the export names.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        # What Python users expect of a file that is not there (iree.runtime raises the same),
        # rather than the loader's ValueError.
        if not os.path.exists(self.path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.path)
        if os.path.isdir(self.path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.path)
        try:
            #: The underlying ``tvm_ffi.Module`` (kind ``vmfb``).
            self.ffi_module = tvm_ffi.load_module(self.path)
            info = inspect(self.path)
        except (ValueError, RuntimeError, TypeError) as error:
            # A corrupt or foreign file: the same exception, naming the file first.
            message = str(error)
            if not message.startswith(self.path):
                message = f"{self.path}: {message}"
            raise type(error)(message) from error
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
                raise KeyError(f"{self.path} has no export {name!r} (it has {list(self._signatures)})")
            export = Export(self.ffi_module[name], self._signatures[name])
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
        lines = [f"<pactum.iree.IreeModule @{self.name} from {self.path}:"]
        lines += [f"  {s}" for s in self._signatures.values()]
        return "\n".join(lines) + ">"


def load(path: PathLike) -> IreeModule:
    """Loads the ``.vmfb`` at `path`; its exports are attributes and items of the result.
    A missing file is a ``FileNotFoundError``; a file that is not a valid module a
    ``ValueError`` (or ``RuntimeError``) whose message starts with its path."""
    return IreeModule(path)


def signature(fn: Export) -> Signature:
    """The :class:`Signature` of an export (``signature(m.predict)``)."""
    if not isinstance(fn, Export):
        raise TypeError(f"signature() takes an export of a pactum.iree module, not {type(fn).__name__}")
    return fn.signature

from .iree_native import NativeModule, ParameterIndex, ParameterIndexEntry  # noqa: E402,F401  (python/pactum/iree_native.py)
