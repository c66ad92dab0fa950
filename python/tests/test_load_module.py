"""`import pactum` registers the .vmfb loader in the official tvm_ffi runtime."""

from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi

import pactum
from conftest import vmfb


def test_import_registers_the_loader_and_the_module_bridge():
    assert tvm_ffi.get_global_func("ffi.Module.load_from_file.vmfb") is not None
    assert tvm_ffi.get_global_func("pactum.Module.from_functions") is not None
    # import twice: idempotent
    pactum.native_library["pactum_init"]()


def test_tvm_ffi_load_module_of_a_vmfb_is_an_ffi_module():
    module = tvm_ffi.load_module(vmfb("vm_direct.vmfb"))
    assert isinstance(module, tvm_ffi.Module)
    assert module.kind == "vmfb"
    assert module["frob_or_double"](21) == 42
    assert module.frob_or_double(21) == 42
    assert module.implements_function("frob_or_double")
    assert not module.implements_function("no_such_export")
    with pytest.raises(AttributeError):
        module["no_such_export"]


def test_tvm_ffi_load_module_scalars_and_tensors():
    module = tvm_ffi.load_module(vmfb("multi_export_llvm_cpu.vmfb"))
    assert module["add"](7, 35) == 42
    assert module["twice_i64"](4294967296) == 8589934592
    out = module["add_vec"](
        np.array([1, 2, 3, 4], np.float32), np.array([10, 20, 30, 40], np.float32)
    )
    np.testing.assert_array_equal(np.from_dlpack(out), np.array([11, 22, 33, 44], np.float32))


def test_a_missing_file_is_an_error_naming_it():
    with pytest.raises(Exception, match="nope.vmfb"):
        tvm_ffi.load_module("/nonexistent/nope.vmfb")
