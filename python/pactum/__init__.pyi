import tvm_ffi

from . import iree as iree
from . import mlir as mlir
from . import sig as sig

__version__: str
native_library: tvm_ffi.Module
