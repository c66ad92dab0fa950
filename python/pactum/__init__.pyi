import tvm_ffi

from . import iree as iree

__version__: str
native_library: tvm_ffi.Module
