"""Runs this suite on the library named by PACTUM_PY_LIB ("official" or "pactum").

The driver (../python_official.rs) runs it twice: once on the wheel as installed, and once on a
copy of the wheel whose tvm_ffi/lib/libtvm_ffi.so is pactum's (put first on PYTHONPATH). Tests
marked ``pactum_xfail(reason)`` are expected to fail on pactum's library only (strictly: a pass
there fails the run, so the list of differences stays true); ``pactum_crash(reason)`` marks the
few that crash the process there, skipped on pactum's library only. On the official library
every test must pass, which proves the test.
"""

import os

import pytest

LIB = os.environ.get("PACTUM_PY_LIB", "official")


def loaded_libtvm_ffi():
    """The path of the libtvm_ffi.so mapped into this process (/proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if line.rstrip().endswith("/libtvm_ffi.so")}
    assert len(paths) == 1, f"expected one libtvm_ffi.so mapped, found {sorted(paths)}"
    return paths.pop()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "pactum_xfail(reason): expected to fail on pactum's libtvm_ffi.so only"
    )
    config.addinivalue_line(
        "markers", "pactum_crash(reason): crashes the process on pactum's libtvm_ffi.so (skipped there)"
    )


def pytest_collection_modifyitems(config, items):
    if LIB != "pactum":
        return
    for item in items:
        crash = item.get_closest_marker("pactum_crash")
        if crash is not None:
            item.add_marker(pytest.mark.skip(reason=f"pactum crashes: {crash.kwargs.get('reason', '')}"))
        marker = item.get_closest_marker("pactum_xfail")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.xfail(reason=f"pactum: {reason}", strict=True))


def pytest_report_header(config):
    import tvm_ffi

    return f"PACTUM_PY_LIB={LIB}; tvm_ffi {tvm_ffi.__version__} from {tvm_ffi.__file__}; libtvm_ffi.so: {loaded_libtvm_ffi()}"
