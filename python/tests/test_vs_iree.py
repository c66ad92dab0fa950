"""Every structured call compared with iree.runtime (iree-base-runtime 3.13.0) on the same
module and inputs, refusals included (the cases of crates/pactum-iree/tests/all/structured_vs_iree.rs,
now through pactum.iree's Python-side conversions, which accept what IREE accepts)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pactum
from conftest import vmfb

ireert = pytest.importorskip("iree.runtime")

ABI = "abi_structs_vmvx.vmfb"
TENSORS = "vmvx_tensors.vmfb"
f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
BIAS, SCALE = f32(1, 2, 3, 4), f32(0.5, -2, 1e-3, 3.25)

CASES = [
    # (label, module, function, args, kwargs, path pactum's error names when both refuse)
    ("record order", ABI, "dict_in", [{"bias": BIAS, "n": 3}], {"scale": SCALE}, None),
    ("reversed order", ABI, "dict_in", [{"n": -7, "bias": BIAS}], {"scale": SCALE}, None),
    ("bool as i32", ABI, "dict_in", [{"bias": BIAS, "n": True}], {"scale": SCALE}, None),
    ("numpy scalar", ABI, "dict_in", [{"bias": BIAS, "n": np.int64(3)}], {"scale": SCALE}, None),
    ("int64 tensor cast", ABI, "dict_in", [{"bias": np.array([1, -2, 3, 1 << 30]), "n": 3}], {"scale": SCALE}, None),
    ("float64 tensor cast", ABI, "dict_in", [{"bias": np.array([0.1, 1e3, -2.5, 1e-3]), "n": 3}], {"scale": SCALE}, None),
    ("list for a tensor", ABI, "dict_in", [{"bias": [1.0, 2.0, 3.0, 4.0], "n": 3}], {"scale": SCALE}, None),
    ("missing key", ABI, "dict_in", [{"bias": BIAS}], {"scale": SCALE}, 'args[0]: missing key "n"'),
    ("extra key", ABI, "dict_in", [{"bias": BIAS, "n": 3, "z": 1}], {"scale": SCALE}, 'unexpected key "z"'),
    ("wrong length", ABI, "dict_in", [{"bias": f32(1, 2, 3), "n": 3}], {"scale": SCALE}, 'args[0]["bias"]'),
    ("None for a tensor", ABI, "dict_in", [{"bias": None, "n": 3}], {"scale": SCALE}, 'args[0]["bias"]'),
    ("i32 overflow", ABI, "dict_in", [{"bias": BIAS, "n": 1 << 40}], {"scale": SCALE}, 'args[0]["n"]'),
    ("wrong keyword", ABI, "dict_in", [{"bias": BIAS, "n": 3}], {"scal": SCALE}, "`scal`"),
    ("missing keyword", ABI, "dict_in", [{"bias": BIAS, "n": 3}], {}, "`scale`"),
    ("keyword positionally", ABI, "dict_in", [{"bias": BIAS, "n": 3}, SCALE], {}, "positional"),
    ("n=3", ABI, "range_list", [3], {}, None),
    ("n=0", ABI, "range_list", [0], {}, None),
    ("no argument", ABI, "range_list", [], {}, "argument 0"),
    ("keywords", ABI, "pair_out", [], {"x": BIAS, "k": 5}, None),
    ("keywords reversed", ABI, "pair_out", [], {"k": -9, "x": SCALE}, None),
    ("x wrong shape", ABI, "pair_out", [], {"x": np.ones(5, np.float32), "k": 5}, 'kwargs["x"]'),
    ("2x3", TENSORS, "split_rows", [np.arange(6, dtype=np.float32).reshape(2, 3)], {}, None),
    ("3x2", TENSORS, "split_rows", [np.ones((3, 2), np.float32)], {}, "args[0]"),
    ("int32 rows cast", TENSORS, "split_rows", [np.arange(6, dtype=np.int32).reshape(2, 3)], {}, None),
    ("3 elements", TENSORS, "dict_summary", [f32(1, 2, 4)], {"repeat": 3}, None),
    ("empty", TENSORS, "dict_summary", [f32()], {"repeat": 0}, None),
    ("repeat positionally", TENSORS, "dict_summary", [f32(1, 1, 1), 3], {}, "positional"),
    ("rank 2", TENSORS, "dict_summary", [np.ones((1, 2), np.float32)], {"repeat": 1}, "args[0]"),
]

_iree_modules: dict = {}


def _iree(name):
    if name not in _iree_modules:
        _iree_modules[name] = ireert.load_vm_flatbuffer_file(vmfb(name), driver="local-sync")
    return _iree_modules[name]


def _plain(value):
    if isinstance(value, ireert.DeviceArray):
        value = value.to_host()
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.name, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


@pytest.mark.parametrize("label,module,function,args,kwargs,names", CASES, ids=[c[0] for c in CASES])
def test_same_as_iree(label, module, function, args, kwargs, names):
    try:
        expected = ("ok", _plain(getattr(_iree(module), function)(*args, **kwargs)))
    except Exception as e:
        expected = ("error", type(e).__name__)
    # iree.runtime converts NumPy arrays of another dtype silently; pactum does when asked.
    m = pactum.iree.load(vmfb(module), allow_casts=True)
    try:
        actual = ("ok", _plain(m[function](*args, **kwargs)))
    except Exception as e:
        actual = ("error", str(e))
    if expected[0] == "ok":
        assert actual == expected
    else:
        assert actual[0] == "error", f"IREE refused ({expected[1]}), pactum returned {actual[1]!r}"
        assert names and names in actual[1], f"pactum's error {actual[1]!r} does not name {names!r}"


CAST_CASES = [c for c in CASES if c[0].endswith("tensor cast") or c[0].endswith("rows cast")]


@pytest.mark.parametrize("label,module,function,args,kwargs,names", CAST_CASES, ids=[c[0] for c in CAST_CASES])
def test_numpy_dtype_casts_are_refused_unless_allowed(label, module, function, args, kwargs, names):
    """Where iree.runtime converts a NumPy array of another dtype silently, pactum refuses it
    by default (as it refuses a DLPack tensor of another dtype): a TypeError naming the
    argument's path and both dtypes. With allow_casts=True it converts, as IREE does (the
    cases of test_same_as_iree)."""
    m = pactum.iree.load(vmfb(module))
    with pytest.raises(TypeError) as refused:
        m[function](*args, **kwargs)
    message = str(refused.value)
    array = args[0]["bias"] if isinstance(args[0], dict) else args[0]
    path = 'args[0]["bias"]' if isinstance(args[0], dict) else "args[0]"
    assert message.startswith(f"{path}: "), message
    assert str(array.dtype) in message and "float32" in message, message
    assert "allow_casts=True" in message


def test_float8_results_as_iree():
    """A float8 result comes back as the ml_dtypes array iree.runtime returns, bit for bit
    (NumPy's DLPack import refuses the type, so pactum copies it)."""
    x = np.array([1, -2.5, 0.3, 1000, 1e-9, -0.0, np.nan, -np.inf], np.float32)
    ours = pactum.iree.load(vmfb("element_types_vmvx.vmfb")).to_f8e4m3fn(x[:4])
    theirs = _iree("element_types_vmvx.vmfb").to_f8e4m3fn(x[:4]).to_host()
    assert ours.dtype == theirs.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert ours.shape == theirs.shape == (4,)
    assert ours.tobytes() == theirs.tobytes()


def test_missing_and_corrupt_files_fail_as_in_iree(tmp_path):
    """A missing file is a FileNotFoundError and a corrupt one a ValueError, in both runtimes;
    pactum's message names the file."""
    missing = tmp_path / "missing.vmfb"
    with pytest.raises(FileNotFoundError):
        ireert.load_vm_flatbuffer_file(str(missing), driver="local-sync")
    with pytest.raises(FileNotFoundError) as ours:
        pactum.iree.load(missing)
    assert ours.value.filename == str(missing)

    corrupt = tmp_path / "corrupt.vmfb"
    whole = open(vmfb("vm_scalars.vmfb"), "rb").read()
    corrupt.write_bytes(whole[:2000])
    with pytest.raises(ValueError):
        ireert.load_vm_flatbuffer_file(str(corrupt), driver="local-sync")
    with pytest.raises(ValueError) as ours:
        pactum.iree.load(corrupt)
    assert str(ours.value).startswith(f"{corrupt}: "), ours.value
