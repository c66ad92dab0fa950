import os
from typing import Any, Literal, Tuple, Union

import tvm_ffi

PathLike = Union[str, os.PathLike[str]]

class MlirFunction:
    name: str
    signature: str
    result_types: Tuple[str, ...]
    ffi_function: tvm_ffi.Function
    def __call__(self, *args: Any) -> Any: ...

class MlirLibrary:
    path: str
    def __init__(self, path: PathLike) -> None: ...
    def function(
        self, declaration: str, *, layout_mismatch: Literal["raise", "copy"] = "raise"
    ) -> MlirFunction: ...

def load(path: PathLike) -> MlirLibrary: ...
def bitcast(x: Any, dtype: str) -> tvm_ffi.Tensor: ...
