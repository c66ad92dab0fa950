"""pytest plugin for run_upstream.py: fails the session unless the process mapped exactly the
libtvm_ffi.so named by PACTUM_EXPECT_LIB (the official one, or pactum's in the package copy)."""

import os


def pytest_sessionstart(session):
    import tvm_ffi  # noqa: F401  (loads the library)

    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if line.rstrip().endswith("/libtvm_ffi.so")}
    expected = os.path.realpath(os.environ["PACTUM_EXPECT_LIB"])
    if {os.path.realpath(p) for p in paths} != {expected}:
        raise RuntimeError(f"expected only {expected} mapped, found {sorted(paths)}")
