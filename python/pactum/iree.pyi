import os
from concurrent.futures import Future
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import tvm_ffi

PathLike = Union[str, os.PathLike[str]]
#: A module or archive source: a path or a bytes-like object.
Source = Union[PathLike, bytes, bytearray, memoryview, Any]
TraceCallback = Callable[[str, List[Any]], Any]

DEVICES: Tuple[str, ...]

class Signature:
    name: str
    text: Optional[str]
    declaration: Optional[str]
    iree_abi: Optional[Dict[str, Any]]
    cconv: Optional[str]
    keywords: Tuple[str, ...]
    result_count: Optional[int]

class Export:
    signature: Signature
    allow_casts: bool
    __name__: str
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]: ...

class IreeModule:
    path: Optional[str]
    name: str
    device: str
    allow_casts: bool
    ffi_module: tvm_ffi.Module
    def __init__(
        self,
        source: Source,
        *,
        device: str = ...,
        threads: Optional[int] = ...,
        modules: Sequence[Any] = ...,
        parameters: Optional[Mapping[str, Any]] = ...,
        trace: Optional[TraceCallback] = ...,
        allow_casts: bool = ...,
    ) -> None: ...
    @property
    def exports(self) -> Tuple[str, ...]: ...
    def __getitem__(self, name: str) -> Export: ...
    def __getattr__(self, name: str) -> Export: ...
    def __contains__(self, name: object) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __dir__(self) -> List[str]: ...

class BenchmarkResult:
    times: List[float]
    warmup: int
    @property
    def repetitions(self) -> int: ...
    @property
    def mean(self) -> float: ...
    @property
    def median(self) -> float: ...
    @property
    def stddev(self) -> float: ...
    @property
    def min(self) -> float: ...
    @property
    def max(self) -> float: ...

def load(
    source: Source,
    *,
    device: str = "local-task",
    threads: Optional[int] = None,
    modules: Sequence[Any] = (),
    parameters: Optional[Mapping[str, Any]] = None,
    trace: Optional[TraceCallback] = None,
    allow_casts: bool = False,
) -> IreeModule: ...
def benchmark(
    function: Callable[..., Any], *args: Any, repetitions: int = 10, warmup: int = 1, **kwargs: Any
) -> BenchmarkResult: ...
def inspect(source: Source) -> Dict[str, Any]: ...
def signature(fn: Export) -> Signature: ...
def to_python(value: Any) -> Any: ...

from .iree_native import NativeModule as NativeModule, ParameterIndex as ParameterIndex, ParameterIndexEntry as ParameterIndexEntry
