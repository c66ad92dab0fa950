"""What the client programs (tvm_smoke.py, jax_smoke.py, xgrammar_smoke.py) share: each program
is a function run once, reported as one OK or FAIL line and counted; the library the process
mapped is checked against PACTUM_EXPECT_LIB, so a run cannot pass on the wrong library.

    from client_harness import program, require_expected_library, finish
"""

import os
import sys
import traceback

results = []


def program(name):
    """Runs the decorated function now, as the program `name`; a failure is printed and
    counted, never raised (every program runs)."""

    def run(fn):
        try:
            fn()
            results.append((name, None))
            print(f"OK   {name}", flush=True)
        except Exception as error:  # every failure is reported, then counted
            last = (str(error).strip().splitlines() or [""])[-1]
            results.append((name, error))
            print(f"FAIL {name}: {type(error).__name__}: {last[:400]}", flush=True)
            if os.environ.get("TVM_SMOKE_TRACEBACK"):
                traceback.print_exc()
        return fn

    return run


def mapped_library():
    """Every libtvm_ffi.so this process has mapped."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if line.rstrip().endswith("libtvm_ffi.so")}
    return sorted(paths)


def require_expected_library():
    """Exits with status 2 when PACTUM_EXPECT_LIB is set and is not the one library mapped."""
    expected = os.environ.get("PACTUM_EXPECT_LIB")
    if expected and mapped_library() != [os.path.realpath(expected)]:
        print(f"wrong library mapped: {mapped_library()}, expected {expected}")
        sys.exit(2)


def finish():
    """Prints the count and exits: 1 when any program failed."""
    failed = [name for name, error in results if error is not None]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)
