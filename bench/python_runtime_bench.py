"""The official `tvm_ffi` Python package on two runtimes: its own libtvm_ffi.so against
pactum's drop-in one (issue 15).

A process can hold only one libtvm_ffi.so, so each measurement is a child process running one
library; the driver starts REPEAT rounds of one child per library, taking turns at going first,
and pairs each round's two children for the ratio.

usage (driver; bench/run_python_runtime_bench.sh sets everything up):
    python bench/python_runtime_bench.py drive OFFICIAL_LIB PACTUM_DIR C_MODULE [NUMBER] [REPEAT]
  OFFICIAL_LIB  the installed package's tvm_ffi/lib/libtvm_ffi.so
  PACTUM_DIR    a copy of the package (tvm_ffi/ and its .dist-info) whose
                tvm_ffi/lib/libtvm_ffi.so is pactum's; put first on PYTHONPATH for its children
  C_MODULE      bench/c/bench_module.c built against the headers, linked with -ltvm_ffi
usage (child, one library; prints one JSON object of ns per call, the best of INNER_REPEAT
timings of NUMBER calls):
    python bench/python_runtime_bench.py child EXPECT_LIB C_MODULE NUMBER
usage (instructions per case under valgrind's callgrind, repeatable where time is not; per
library and case, a child running the case NUMBER times minus one running it NUMBER/5 times;
FILTER keeps the cases whose label contains it):
    python bench/python_runtime_bench.py count OFFICIAL_LIB PACTUM_DIR C_MODULE [NUMBER] [FILTER]
Prints a Markdown table: median ns per call per library and the median of per-round ratios.
"""
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import timeit

# (label, statement, share of NUMBER). Statements, not lambdas: timeit runs only the statement.
CASES = [
    ("nop() (C module)", "nop()", 1),
    ("nop_i3(1, 2, 3) (C module)", "nop_i3(1, 2, 3)", 1),
    ("nop_tensor(numpy array) (C module)", "nop_tensor(array)", 1),
    ("nop_tensor(tvm_ffi.Tensor) (C module)", "nop_tensor(tensor)", 1),
    ("Python callback through FFI: cb()", "cb()", 1),
    ("Python callback through FFI: cb(1, 2, 3)", "cb3(1, 2, 3)", 1),
    ("string round trip through a Python callback: echo(str)", "echo(text)", 1),
    ("get_global_func(\"ffi.Array\")", "get_global_func('ffi.Array')", 1),
    ("builtin global, string round trip: ffi.String(str)", "ffi_string(text)", 1),
    ("convert([1, 2, 3]) (ffi.Array)", "convert(items)", 1),
    ("convert({\"a\": 1}) (ffi.Map)", "convert(mapping)", 1),
    ("arr[0]", "arr[0]", 1),
    ("len(arr)", "len(arr)", 1),
    ("map[\"a\"]", "tmap['a']", 1),
    ("from_dlpack(numpy array)", "from_dlpack(array)", 1),
    ("error raised in C, caught in Python", "try:\n nop_i3()\nexcept TypeError:\n pass", 10),
    ("error raised in a Python callback, caught in Python",
     "try:\n raiser()\nexcept ValueError:\n pass", 10),
]


# Timings per case in each child; the child reports the fastest.
INNER_REPEAT = 3


def mapped_libraries() -> set:
    """Every libtvm_ffi.so mapped into this process, as real paths."""
    with open("/proc/self/maps") as maps:
        paths = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
    return {os.path.realpath(p) for p in paths if os.path.basename(p) == "libtvm_ffi.so"}


def check_library(expect: str, when: str) -> None:
    mapped = mapped_libraries()
    if mapped != {os.path.realpath(expect)}:
        sys.exit(f"FATAL ({when}): expected only {expect} mapped, found {sorted(mapped) or 'none'}")


def setup(expect: str, c_module_path: str) -> dict:
    """The globals every case statement runs with, after checking which library is loaded."""
    import numpy as np
    import tvm_ffi

    check_library(expect, "after import tvm_ffi")
    module = tvm_ffi.load_module(c_module_path)
    # The module links libtvm_ffi.so by SONAME: it must have resolved the one already loaded.
    check_library(expect, "after loading the C module")

    def raise_value_error():
        raise ValueError("raised in a Python callback")

    array = np.zeros(16, dtype="float32")
    env = {
        "nop": module["nop"],
        "nop_i3": module["nop_i3"],
        "nop_tensor": module["nop_tensor"],
        "array": array,
        "tensor": tvm_ffi.from_dlpack(array),
        "cb": tvm_ffi.convert(lambda: None),
        "cb3": tvm_ffi.convert(lambda a, b, c: None),
        "echo": tvm_ffi.convert(lambda x: x),
        "text": "a string longer than the small-string limit",
        "get_global_func": tvm_ffi.get_global_func,
        "ffi_string": tvm_ffi.get_global_func("ffi.String"),
        "convert": tvm_ffi.convert,
        "items": [1, 2, 3],
        "mapping": {"a": 1},
        "arr": tvm_ffi.convert([1, 2, 3]),
        "tmap": tvm_ffi.convert({"a": 1}),
        "from_dlpack": tvm_ffi.from_dlpack,
        "raiser": tvm_ffi.convert(raise_value_error),
    }
    assert env["echo"](env["text"]) == env["text"] and env["ffi_string"](env["text"]) == env["text"]
    assert env["arr"][0] == 1 and len(env["arr"]) == 3 and env["tmap"]["a"] == 1
    return env


def child(expect: str, c_module_path: str, number: int) -> None:
    env = setup(expect, c_module_path)
    # Per case: a short warm-up, then the timed runs.
    result = {}
    for label, statement, share in CASES:
        n = max(number // share, 1)
        timeit.timeit(statement, globals=env, number=max(n // 20, 1))
        # The best of a few timings: other processes on a shared machine only ever add time.
        best = min(timeit.repeat(statement, globals=env, number=n, repeat=INNER_REPEAT))
        result[label] = best / n * 1e9
    check_library(expect, "after timing")
    print(json.dumps(result))


def loop(expect: str, c_module_path: str, index: int, count: int) -> None:
    """Case `index` run `count` times, untimed: what `count` measures under callgrind."""
    env = setup(expect, c_module_path)
    # No cycle collection during the loop: its runs land at random and cost thousands of
    # instructions each, whichever library is loaded.
    gc.collect()
    gc.disable()
    statement = CASES[index][1]
    body = "\n".join("    " + line for line in statement.splitlines())
    exec(compile(f"for _ in range({count}):\n{body}", "<case>", "exec"), env)
    check_library(expect, "after the loop")


def child_env(pythonpath: str) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    # NumPy's OpenBLAS threads spin after import: on a small machine they steal the timed core.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    # One string-hash seed for every child: dict probe sequences (and so the interpreter's
    # instruction counts) otherwise change from process to process.
    env.setdefault("PYTHONHASHSEED", "0")
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def run_child(lib: str, pythonpath: str, c_module: str, number: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "child", lib, c_module, str(number)],
                         env=child_env(pythonpath), check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def drive(official_lib: str, pactum_dir: str, c_module: str, number: int, repeat: int) -> None:
    pactum_lib = os.path.join(pactum_dir, "tvm_ffi", "lib", "libtvm_ffi.so")
    runs = {"official": [], "pactum": []}
    children = [("official", official_lib, ""), ("pactum", pactum_lib, pactum_dir)]
    for i in range(repeat):
        # Take turns at going first, so drift in machine load hits both alike.
        for name, lib, path in children if i % 2 == 0 else reversed(children):
            runs[name].append(run_child(lib, path, c_module, number))
        print(f"round {i + 1}/{repeat} done", file=sys.stderr)
    print(f"Python (official apache-tvm-ffi package) on each libtvm_ffi.so: best of "
          f"{INNER_REPEAT} x {number} calls per case (errors: {number // 10}) in each child, "
          f"{repeat} rounds of one child per library, alternating; ns per call")
    print()
    print("| case | official lib | pactum lib | pactum / official (median of per-round ratios) "
          "| per-round ratios, min–max |")
    print("|---|---|---|---|---|")
    for label, _, _ in CASES:
        official = [r[label] for r in runs["official"]]
        pactum = [r[label] for r in runs["pactum"]]
        ratios = [p / o for p, o in zip(pactum, official)]
        print(f"| {label} | {statistics.median(official):.1f} | {statistics.median(pactum):.1f} "
              f"| {statistics.median(ratios):.3f} | {min(ratios):.2f}–{max(ratios):.2f} |")


def instructions(lib: str, pythonpath: str, c_module: str, index: int, count: int) -> int:
    """Instructions callgrind counts for a whole `loop` child."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", sys.executable,
             __file__, "loop", lib, c_module, str(index), str(count)],
            env=child_env(pythonpath), check=True, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def count(official_lib: str, pactum_dir: str, c_module: str, number: int, only: str) -> None:
    pactum_lib = os.path.join(pactum_dir, "tvm_ffi", "lib", "libtvm_ffi.so")
    libs = [("official", official_lib, ""), ("pactum", pactum_lib, pactum_dir)]
    print(f"Instructions per case (callgrind: a child running the case {number} times minus one "
          f"running it {number // 5} times, errors a tenth of that, so start-up and one-time "
          "costs cancel; the Python interpreter and the loop included, cycle collection off)")
    print()
    print("| case | official lib | pactum lib | pactum / official |")
    print("|---|---|---|---|")
    for index, (label, _, share) in enumerate(CASES):
        if only not in label:
            continue
        n = max(number // share, 5)
        per = {name: (instructions(lib, path, c_module, index, n)
                      - instructions(lib, path, c_module, index, n // 5)) / (n - n // 5)
               for name, lib, path in libs}
        print(f"| {label} | {per['official']:.0f} | {per['pactum']:.0f} "
              f"| {per['pactum'] / per['official']:.3f} |", flush=True)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "loop":
        loop(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "count":
        args = sys.argv[2:]
        count(args[0], args[1], args[2], int(args[3]) if len(args) > 3 else 5000,
              args[4] if len(args) > 4 else "")
    elif mode == "drive":
        args = sys.argv[2:]
        drive(args[0], args[1], args[2], int(args[3]) if len(args) > 3 else 100_000,
              int(args[4]) if len(args) > 4 else 7)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
