"""pactum.iree: load, exports as attributes and items, kwargs, inspect, signature, errors."""

from __future__ import annotations

import numpy as np
import pytest

import pactum
from conftest import vmfb


def test_load_exports_as_attributes_and_items():
    m = pactum.iree.load(vmfb("multi_export_llvm_cpu.vmfb"))
    assert m.add(7, 35) == 42
    assert m["add"](7, 35) == 42
    assert "add" in m and "add" in dir(m) and "add" in m.exports
    assert len(m) == len(list(m))
    with pytest.raises(AttributeError, match="no export"):
        m.nope
    with pytest.raises(KeyError):
        m["nope"]
    np.testing.assert_array_equal(m.add_vec([1, 2, 3, 4], [10, 20, 30, 40]), [11, 22, 33, 44])
    assert "add" in repr(m)


def test_mlp_predict_with_a_numpy_array():
    m = pactum.iree.load(vmfb("mlp_llvm_cpu.vmfb"))
    out = m.predict(np.zeros((4, 16), np.float32))
    assert isinstance(out, np.ndarray) and out.shape == (4, 10) and out.dtype == np.float32
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_kwargs_dicts_and_lists():
    m = pactum.iree.load(vmfb("vmvx_tensors.vmfb"))
    out = m.dict_summary(np.array([1, 2, 4], np.float32), repeat=np.int32(3))
    assert out["count"] == 3 and out["repeated"] == [3, 3, 3]
    assert float(out["total"]) == 7.0
    rows = m.split_rows(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert isinstance(rows, list) and len(rows) == 2
    np.testing.assert_array_equal(rows[1], [3, 4, 5])
    total, mean, cumsum, n = m.stats(np.ones(3, np.float32))
    assert n == 3


def test_errors_name_the_argument_path():
    m = pactum.iree.load(vmfb("abi_structs_vmvx.vmfb"))
    bias = np.ones(4, np.float32)
    with pytest.raises(Exception, match=r'args\[0\]: missing key "n"'):
        m.dict_in({"bias": bias}, scale=bias)
    with pytest.raises(Exception, match=r"kwargs\[\"x\"\]"):
        m.pair_out(x=np.ones(5, np.float32), k=5)


def test_inspect_and_signature():
    info = pactum.iree.inspect(vmfb("vmvx_tensors.vmfb"))
    assert info["name"] == "vmvx_tensors"
    names = [e["name"] for e in info["exports"]]
    assert "dict_summary" in names
    m = pactum.iree.load(vmfb("vmvx_tensors.vmfb"))
    sig = pactum.iree.signature(m.dict_summary)
    assert sig.keywords == ("repeat",)
    assert "repeat: i32" in str(sig)
    assert "repeat: i32" in m.dict_summary.__doc__
    with pytest.raises(TypeError):
        pactum.iree.signature(len)
