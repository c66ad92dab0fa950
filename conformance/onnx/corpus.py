#!/usr/bin/env python3
"""ONNX's node tests through IREE's runtime and through pactum, compared.

Every case comes from the pinned `onnx` package's own case code (the 1.23 wheel ships no test
data): `onnx.backend.test.case.node.collect_testcases()` runs each operator's `export*`
functions, which build a one-node model with its inputs and expected outputs. Each case is
imported by the pinned `iree-import-onnx` and compiled by the pinned `iree-compile` for llvm-cpu
(every case) and vmvx (a deterministic third, `vmvx_selected`), into a cache folder. Each
compiled case then runs through IREE's `iree-run-module` and through `pactum call`, and both
results are compared with onnx's expected outputs by onnx's own rule (`outputs_match`).

Nothing is skipped silently: a case IREE cannot import, compile or run, or whose values have no
`.npy` form, is counted in an "IREE cannot" class. Outcomes per (case, backend):

    both-right        IREE and pactum match onnx's expected outputs
    pactum-wrong      IREE is right, pactum fails (error text) or gives other values
    iree-wrong        IREE runs but its result does not match onnx's
    iree-cannot       no .npy form, import, compile or run failure (class says which)

Usage (see docs/CONFORMANCE.md):
    corpus.py [--slice] [--cases REGEX] [--jobs N] [--memcheck] [--json FILE]

`--slice` runs the cases of slice.txt and asserts them against known_differences.txt: every
case IREE gets right, pactum gets right, except the listed ones, and a listed case must still
fail with its listed cause (a fixed case fails the run, so the list follows the fixes).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import hashlib
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SLICE_FILE = HERE / "slice.txt"
KNOWN_FILE = HERE / "known_differences.txt"
DEFAULT_CACHE = ROOT / "target" / "onnx-conformance"
PINNED = {"onnx": "1.23.2", "iree-base-compiler": "3.13.0", "iree-base-runtime": "3.13.0"}
BACKENDS = ("llvm-cpu", "vmvx")
COMPILE_FLAGS = {
    "llvm-cpu": ["--iree-hal-target-backends=llvm-cpu"],
    "vmvx": ["--iree-hal-target-backends=vmvx"],
}
RUN_TIMEOUT_S = 120
MEMCHECK_TIMEOUT_S = 600
BUILD_TIMEOUT_S = 300

# Causes of pactum failures, recognised in its error text (first match wins). A cause names a
# class of difference; the known-differences file lists cases by these names.
PACTUM_CAUSES = [
    ("unsigned-int-refused", r"expected i\d+ \(0x10\w+\) but have ui\d+ \(0x12\w+\)"),
    ("numpy-bool-as-i1", r"\(0x13000008\) but have i1 \(0x10000001\)"),
    ("hal-import-missing", r"required import \"hal\.[\w.]+\" is not exported"),
    ("vmvx-import-missing", r"required import \"vmvx\.[\w.]+\" is not exported"),
    ("vm-opcode-unknown", r"unknown opcode"),
]


def die(message: str) -> None:
    sys.exit(f"onnx-conformance: error: {message}")


# ------------------------------------------------------------------------------ tools
class Tools:
    """The pinned peers this suite runs, checked before anything else (no silent skips)."""

    def __init__(self, pactum: pathlib.Path):
        wrong = []
        for package, version in PINNED.items():
            try:
                have = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                have = None
            if have != version:
                wrong.append(f"{package}=={version} (installed: {have or 'none'})")
        if wrong:
            die("the ONNX conformance suite needs the pinned peers in this Python "
                f"({sys.executable}): " + ", ".join(wrong) +
                "; scripts/test.sh installs them from scripts/requirements-peer.txt")
        from iree.compiler.tools import binaries

        self.compile = binaries.find_tool("iree-compile")
        from iree.compiler.tools.import_onnx import __main__ as import_onnx

        self.import_onnx = import_onnx
        self.import_lock = threading.Lock()
        run_module = os.environ.get("PACTUM_IREE_RUN_MODULE")
        if run_module is None:
            import iree._runtime_libs as libs  # the native tool, not the Python wrapper

            run_module = str(pathlib.Path(libs.__file__).parent / "iree-run-module")
        self.run_module = run_module
        self.pactum = str(pactum)
        for tool in (self.compile, self.run_module, self.pactum):
            if not os.access(tool, os.X_OK):
                die(f"{tool} is not an executable")
        version = subprocess.run([self.compile, "--version"], capture_output=True, text=True,
                                 check=True).stdout
        self.fingerprint = hashlib.sha256(
            (version + json.dumps(PINNED) + json.dumps(COMPILE_FLAGS)).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------ cases
def collect_cases() -> dict:
    """onnx's node test cases by name, built by onnx's own case code (seeded as onnx seeds it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_cases

        cases = node_cases.collect_testcases()
    out = {}
    for case in cases:
        if case.name in out:
            die(f"two onnx cases named {case.name}")
        out[case.name] = case
    return out


def op_type(case) -> str:
    """The operator a case tests: its node's op type; an expanded case (a function body of
    several nodes) is named after the operator of its case name (`test_<op>_..._expanded`)."""
    ops = sorted({n.op_type for n in case.model.graph.node})
    if len(ops) == 1:
        return ops[0]
    base = case.name.removeprefix("test_").split("_expanded")[0]
    return f"expanded:{base.split('_')[0]}"


def vmvx_selected(name: str) -> bool:
    """A deterministic third of the cases also compiles for vmvx (by a hash of the name)."""
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 == 0


def backends_of(name: str) -> list:
    return ["llvm-cpu", "vmvx"] if vmvx_selected(name) else ["llvm-cpu"]


def npy_form(value):
    """The array a value is written as in .npy, or None when .npy cannot hold it (sequences,
    optionals, strings, and element types NumPy has no native dtype for)."""
    import numpy as np
    import onnx

    if isinstance(value, onnx.TensorProto):
        from onnx import numpy_helper

        value = numpy_helper.to_array(value)
    if isinstance(value, np.generic):  # NumPy scalars (`np.float32(2)`) are 0-d tensors
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        return None
    if value.dtype.kind not in "biuf" or value.dtype.isbuiltin != 1:
        return None
    return value


# ------------------------------------------------------------------------------ build
def import_model(tools: Tools, folder: pathlib.Path):
    """`iree-import-onnx model.onnx -o model.mlir`, run in this process (the tool's own entry
    point with the same arguments; a Python start per case would cost more than the import).
    MLIR's Python bindings are not meant for concurrent use, hence the lock. Returns None or
    the error."""
    args = tools.import_onnx.parse_arguments(
        [str(folder / "model.onnx"), "-o", str(folder / "model.mlir")])
    with tools.import_lock:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tools.import_onnx.main(args)
        except Exception as e:  # noqa: BLE001 - every import failure is a counted class
            text = " ".join(str(e).split())
            return f"{type(e).__name__}: {text}"[:300] or type(e).__name__
    return None


def run_tool(cmd, timeout, cwd=None):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              errors="replace")
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"


def first_error_line(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"error", line, re.I):
            return line.strip()[:300]
    lines = [l for l in text.splitlines() if l.strip()]
    return (lines[-1].strip() if lines else "(no output)")[:300]


def build_case(case, tools: Tools, cache: pathlib.Path) -> dict:
    """Writes the case's model, inputs and expected outputs, imports and compiles it (cached by
    a hash of the model, the data and the tools). Returns the build record."""
    import numpy as np

    folder = cache / case.name
    model_bytes = case.model.SerializeToString()
    inputs, outputs = case.data_sets[0]
    data_hash = hashlib.sha256(model_bytes)
    for value in list(inputs) + list(outputs):
        arr = npy_form(value)
        data_hash.update(b"-" if arr is None else arr.tobytes() + str(arr.dtype).encode()
                         + str(arr.shape).encode())
    key = f"{tools.fingerprint}-{data_hash.hexdigest()[:16]}"
    record_file = folder / "build.json"
    if record_file.exists():
        try:
            record = json.loads(record_file.read_text())
            if record.get("key") == key:
                return record
        except json.JSONDecodeError:
            pass
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    record = {"key": key, "name": case.name, "op": op_type(case), "backends": {},
              "inputs": len(inputs), "outputs": len(outputs), "rtol": case.rtol,
              "atol": case.atol}
    unsupported = [f"input {i}" for i, v in enumerate(inputs) if npy_form(v) is None]
    unsupported += [f"output {i}" for i, v in enumerate(outputs) if npy_form(v) is None]
    if unsupported:
        record["cannot"] = ("no-npy-form", "no .npy form for " + ", ".join(unsupported))
    else:
        for i, v in enumerate(inputs):
            np.save(folder / f"input_{i}.npy", npy_form(v))
        for i, v in enumerate(outputs):
            np.save(folder / f"expected_{i}.npy", npy_form(v))
        (folder / "model.onnx").write_bytes(model_bytes)
        problem = import_model(tools, folder)
        if problem:
            record["cannot"] = ("import-failed", problem)
        else:
            for backend in backends_of(case.name):
                rc, _, err = run_tool([tools.compile, *COMPILE_FLAGS[backend], "model.mlir",
                                       "-o", f"{backend}.vmfb"], BUILD_TIMEOUT_S, cwd=folder)
                record["backends"][backend] = (
                    {"ok": True} if rc == 0 else
                    {"ok": False, "cannot": ("compile-failed", first_error_line(err))})
    record_file.write_text(json.dumps(record, indent=1))
    return record


# ------------------------------------------------------------------------------ compare
def outputs_match(expected, actual, rtol: float, atol: float):
    """onnx's backend-test rule (onnx.backend.test.runner.Runner.assert_similar_outputs):
    equal shape, equal dtype, then numpy's assert_allclose(rtol, atol) (NaN equals NaN); bool
    and integer results therefore compare exactly. Integers of the same width but another
    signedness are compared by their bits (IREE's integers are signless). Returns None or
    what differs."""
    import numpy as np

    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if (actual.dtype != expected.dtype and actual.dtype.kind in "iu" and expected.dtype.kind in "iu"
            and actual.dtype.itemsize == expected.dtype.itemsize):
        # IREE's integers are signless (iN): iree-run-module writes them as signed, and a
        # uint16 result comes back as int16 with the same bits.
        actual = actual.view(expected.dtype)
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    try:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    except AssertionError as e:
        lines = [l for l in str(e).splitlines() if l.strip()]
        return " ".join(lines[1:4])[:300]
    return None


def compare_outputs(folder: pathlib.Path, out_dir: pathlib.Path, names, record):
    import numpy as np

    for i, name in enumerate(names):
        path = out_dir / name
        if not path.exists():
            return f"output {i} not written ({name})"
        try:
            actual = np.load(path)
        except Exception as e:  # noqa: BLE001 - any unreadable result is a difference
            return f"output {i} unreadable: {e}"
        problem = outputs_match(np.load(folder / f"expected_{i}.npy"), actual,
                                record["rtol"], record["atol"])
        if problem:
            return f"output {i}: {problem}"
    return None


def memcheck_class(valgrind_text: str):
    """(outcome, class) of a run valgrind reported errors in. Errors whose innermost frame is
    code without symbols called by the llvm-cpu dispatch (`library::Call::run`), or whose stack
    valgrind lost inside such code (no frame with a name), are the compiled module's own: invalid reads there are reads outside its bindings (IREE's compiled code is
    wrong, whatever values it gets); uses of uninitialised values there (vector lanes the code
    loads but does not use, as far as valgrind can tell) are noted, not judged. Any other error
    is pactum's, except one: when the compiled code read outside its bindings or used
    uninitialised values, its results carry those bytes, and valgrind reports them where
    pactum writes the results to a file (`Syscall param write(buf)`); those are the compiled
    code's too."""
    own = written = outside = undefined = 0
    for error in re.split(r"==\d+== (?=\S)", valgrind_text):
        if not re.match(r"(Invalid|Conditional|Use of uninitialised|Syscall param)", error):
            continue
        frames = re.findall(r"(?:at|by) 0x[0-9A-F]+: (.*)", error)
        # Called from the dispatch, or a stack valgrind could not unwind past the innermost
        # frame at all (every frame `???`: it lost its way inside code without symbols, which
        # in pactum's process is only the loaded dispatch code; pactum's own frames and the
        # system libraries' always have names).
        compiled = frames and frames[0].startswith("???") and (
            (len(frames) > 1 and "executable::library::Call::run" in frames[1])
            or all(f.startswith("???") for f in frames))
        if not compiled:
            if error.startswith("Syscall param write(buf) points to uninitialised"):
                written += 1
            else:
                own += 1
        elif error.startswith("Invalid"):
            outside += 1
        else:
            undefined += 1
    if own or (written and not (outside or undefined)):
        return ("pactum-wrong", "memcheck")
    if outside:
        return ("iree-wrong", "compiled-code-reads-outside-bindings")
    return ("memcheck-clean", "compiled-code-uses-uninitialised-values")


def outputs_identical(first: pathlib.Path, second: pathlib.Path, count: int):
    """None when two runs' outputs are bit-identical, else what differs."""
    import numpy as np

    for i in range(count):
        a, b = np.load(first / f"iree_{i}.npy"), np.load(second / f"iree_{i}.npy")
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            return f"output {i}: {a.ravel()[:8]} then {b.ravel()[:8]}"
    return None


def pactum_cause(text: str) -> str:
    for cause, pattern in PACTUM_CAUSES:
        if re.search(pattern, text):
            return cause
    return "other"


def error_text(stderr: str) -> str:
    """The line of a tool's stderr that says what went wrong: IREE's status line
    (`file.c:12: INVALID_ARGUMENT; ...`), else the first line naming an error, else the last."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in lines:
        if re.search(r":\d+: [A-Z_]{4,}; ", line):
            return line[:400]
    for line in lines:
        if line.startswith("Error:") or "error" in line.lower():
            return line[:400]
    return (lines[-1] if lines else "(no error text)")[:400]


def run_case(record, backend: str, tools: Tools, cache: pathlib.Path) -> dict:
    """Runs one compiled case through iree-run-module and pactum; classifies the outcome."""
    name = record["name"]
    result = {"case": name, "backend": backend, "op": record["op"]}
    if "cannot" in record:
        result["outcome"], result["class"] = "iree-cannot", record["cannot"][0]
        result["detail"] = record["cannot"][1]
        return result
    built = record["backends"][backend]
    if not built["ok"]:
        result["outcome"], result["class"] = "iree-cannot", built["cannot"][0]
        result["detail"] = built["cannot"][1]
        return result
    folder = cache / name
    module = folder / f"{backend}.vmfb"
    inputs = [folder / f"input_{i}.npy" for i in range(record["inputs"])]
    with tempfile.TemporaryDirectory(prefix=f"onnx-{backend}-") as tmp:
        tmp = pathlib.Path(tmp)
        iree_cmd = [tools.run_module, f"--module={module}", f"--function={name}"]
        iree_cmd += [f"--input=@{p}" for p in inputs]
        iree_cmd += [f"--output=@{tmp / f'iree_{i}.npy'}" for i in range(record["outputs"])]
        rc, _, err = run_tool(iree_cmd, RUN_TIMEOUT_S)
        if rc != 0:
            result["outcome"], result["class"] = "iree-cannot", "run-failed"
            result["detail"] = error_text(err)
            return result
        problem = compare_outputs(folder, tmp, [f"iree_{i}.npy" for i in range(record["outputs"])],
                                  record)
        if problem:
            result.update(outcome="iree-wrong", detail=problem)
            result["class"] = "iree-wrong"
            return result
        # Twice more, with a longer output path (which moves the heap), on the default device
        # and on local-task: compiled code that reads memory outside its bindings gives other
        # values (IREE right by chance is not right).
        for n, device in enumerate(([], ["--device=local-task"])):
            again = tmp / (f"again{n}" + "x" * 100)
            again.mkdir()
            rc, _, err = run_tool([*iree_cmd[:len(iree_cmd) - record["outputs"]], *device,
                                   *[f"--output=@{again / f'iree_{i}.npy'}"
                                     for i in range(record["outputs"])]], RUN_TIMEOUT_S)
            unstable = error_text(err) if rc != 0 else outputs_identical(tmp, again,
                                                                         record["outputs"])
            if unstable:
                result["outcome"], result["class"] = "iree-wrong", "iree-unstable"
                result["detail"] = (f"run again ({' '.join(device) or 'default device'}, longer "
                                    f"output path): {unstable}")
                return result
        out = tmp / "pactum"
        pactum_cmd = [tools.pactum, "call", str(module), name, *[f"@{p}" for p in inputs],
                      "--out", str(out)]
        rc, _, err = run_tool(pactum_cmd, RUN_TIMEOUT_S)
        if rc != 0:
            text = error_text(err)
            result["outcome"], result["class"] = "pactum-wrong", pactum_cause(text)
            result["detail"] = text
            if rc is None:
                result["class"], result["detail"] = "timeout", f"timed out after {RUN_TIMEOUT_S} s"
            elif rc < 0:
                result["class"], result["detail"] = "crash", f"killed by signal {-rc}"
            return result
        problem = compare_outputs(folder, out,
                                  [f"result_{i}.npy" for i in range(record["outputs"])], record)
        if problem:
            result.update(outcome="pactum-wrong", detail=problem)
            result["class"] = "wrong-values"
            return result
    result["outcome"], result["class"] = "both-right", "both-right"
    return result


def memcheck_case(record, backend: str, tools: Tools, cache: pathlib.Path) -> dict:
    """Runs one compiled case through `pactum call` under valgrind's memcheck (on local-sync:
    valgrind serialises threads anyway). Outcomes: `memcheck-clean`; `pactum-wrong` class
    `memcheck` (an error in pactum's code); `iree-wrong` class
    `compiled-code-reads-outside-bindings` (the compiled dispatch's own reads)."""
    name = record["name"]
    result = {"case": name, "backend": backend, "op": record["op"]}
    if "cannot" in record or not record["backends"][backend]["ok"]:
        result["outcome"], result["class"] = "iree-cannot", "not-built"
        return result
    folder = cache / name
    with tempfile.TemporaryDirectory(prefix=f"onnx-memcheck-{backend}-") as tmp:
        cmd = ["valgrind", "--quiet", "--error-exitcode=99", "--errors-for-leak-kinds=none",
               "--track-origins=yes", tools.pactum, "call", str(folder / f"{backend}.vmfb"),
               name, *[f"@{folder / f'input_{i}.npy'}" for i in range(record["inputs"])],
               "--out", tmp, "--device", "local-sync"]
        rc, _, err = run_tool(cmd, MEMCHECK_TIMEOUT_S)
    if rc == 99:
        result["outcome"], result["class"] = memcheck_class(err)
        lines = [l.split("== ", 1)[-1] for l in err.splitlines() if "==" in l]
        first = next((i for i, l in enumerate(lines)
                      if re.search(r"(uninitialised|Invalid|depends)", l)), None)
        result["detail"] = (error_text(err) if first is None else " | ".join(
            [lines[first]] + [l.strip() for l in lines[first + 1:first + 12]
                              if re.search(r"Address|Call::run|at 0x", l)][:3]))[:400]
    else:
        # pactum's own failures (an error, other values) are the plain run's to report.
        result["outcome"], result["class"] = "memcheck-clean", "memcheck-clean"
        if rc is None:
            result["outcome"], result["class"], result["detail"] = "pactum-wrong", "memcheck", err
    return result


# ------------------------------------------------------------------------------ lists
def read_list(path: pathlib.Path) -> list:
    """Lines of a list file without comments: each a list of whitespace-separated fields."""
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if text:
            rows.append((n, text.split()))
    return rows


def read_slice() -> list:
    """(case, backend, memcheck) per line `CASE BACKEND [memcheck]`."""
    out = []
    for n, fields in read_list(SLICE_FILE):
        if (len(fields) not in (2, 3) or fields[1] not in BACKENDS
                or fields[2:] not in ([], ["memcheck"])):
            die(f"{SLICE_FILE.name}:{n}: expected `CASE BACKEND [memcheck]`, "
                f"got {' '.join(fields)}")
        out.append((fields[0], fields[1], fields[2:] == ["memcheck"]))
    return out


def read_known() -> dict:
    out = {}
    for n, fields in read_list(KNOWN_FILE):
        if len(fields) != 3 or fields[1] not in BACKENDS:
            die(f"{KNOWN_FILE.name}:{n}: expected `CASE BACKEND CAUSE`, got {' '.join(fields)}")
        if (fields[0], fields[1]) in out:
            die(f"{KNOWN_FILE.name}:{n}: {fields[0]} {fields[1]} listed twice")
        out[(fields[0], fields[1])] = fields[2]
    return out


# ------------------------------------------------------------------------------ main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slice", action="store_true",
                        help="run slice.txt and assert it against known_differences.txt")
    parser.add_argument("--cases", metavar="REGEX", help="only cases whose name matches")
    parser.add_argument("--backend", choices=BACKENDS, help="only this backend")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", type=pathlib.Path, default=DEFAULT_CACHE,
                        help=f"compiled cases (default {DEFAULT_CACHE.relative_to(ROOT)})")
    parser.add_argument("--pactum", type=pathlib.Path, default=ROOT / "target/debug/pactum")
    parser.add_argument("--memcheck", action="store_true",
                        help="also run pactum under valgrind memcheck (slow): an error in "
                             "pactum is the class `memcheck`")
    parser.add_argument("--memcheck-cases", metavar="REGEX",
                        help="run these cases (also) under valgrind memcheck")
    parser.add_argument("--json", type=pathlib.Path, help="write every outcome to this file")
    parser.add_argument("--list", action="store_true", help="print one line per outcome")
    args = parser.parse_args()

    started = time.monotonic()
    tools = Tools(args.pactum)
    if (args.memcheck or args.memcheck_cases) and shutil.which("valgrind") is None:
        die("--memcheck needs valgrind (apt-get install valgrind)")
    cases = collect_cases()
    print(f"==> {len(cases)} onnx {PINNED['onnx']} node cases "
          f"({time.monotonic() - started:.0f} s to build them)", flush=True)
    slice_memcheck = []
    if args.slice:
        listed = read_slice()
        if not listed:
            die(f"{SLICE_FILE.name} lists no cases")
        wanted = [(c, b) for c, b, _ in listed]
        slice_memcheck = [(c, b) for c, b, m in listed if m]
        if slice_memcheck and shutil.which("valgrind") is None:
            die(f"{SLICE_FILE.name} memchecks cases: it needs valgrind (apt-get install valgrind)")
        missing = [c for c, _ in wanted if c not in cases]
        if missing:
            die(f"{SLICE_FILE.name} names cases onnx does not have: {', '.join(missing)}")
        bad = [f"{c} {b}" for c, b in wanted if b not in backends_of(c)]
        if bad:
            die(f"{SLICE_FILE.name}: not compiled for that backend: {', '.join(bad)}")
        known = read_known()
    else:
        wanted = [(c, b) for c in sorted(cases) for b in backends_of(c)]
        if args.cases:
            wanted = [(c, b) for c, b in wanted if re.search(args.cases, c)]
        known = read_known() if KNOWN_FILE.exists() else {}
    if args.backend:
        wanted = [(c, b) for c, b in wanted if b == args.backend]
    names = sorted({c for c, _ in wanted})

    args.cache.mkdir(parents=True, exist_ok=True)
    records = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(build_case, cases[n], tools, args.cache): n for n in names}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name = futures[future]
            records[name] = dict(future.result(), op=op_type(cases[name]))
            if done % 100 == 0:
                print(f"    built {done}/{len(names)} ({time.monotonic() - started:.0f} s)",
                      flush=True)
    print(f"==> {len(names)} cases imported and compiled "
          f"({time.monotonic() - started:.0f} s so far)", flush=True)

    memcheck_re = re.compile(args.memcheck_cases) if args.memcheck_cases else None
    jobs = [(c, b, False) for c, b in wanted]
    jobs += [(c, b, True) for c, b in wanted
             if args.memcheck or (memcheck_re and memcheck_re.search(c))]
    jobs += [(c, b, True) for c, b in slice_memcheck if not args.memcheck]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(memcheck_case if m else run_case, records[c], b, tools, args.cache)
                   for c, b, m in jobs]
        for future, (_, _, m) in zip(futures, jobs):
            result = future.result()
            result["memcheck"] = m
            results.append(result)
    # valgrind's verdict that the compiled code reads outside its bindings decides the plain
    # run's class: whatever values either runtime got there were read by chance.
    out_of_bounds = {(r["case"], r["backend"]): r for r in results
                     if r["memcheck"] and r["class"] == "compiled-code-reads-outside-bindings"}
    for r in results:
        found = out_of_bounds.get((r["case"], r["backend"]))
        if found and not r["memcheck"]:
            r["outcome"], r["class"] = found["outcome"], found["class"]
            r["detail"] = f"valgrind: {found['detail']}"

    report(results)
    if args.list:
        for r in results:
            print(f"    {r['outcome']:12} {r['class']:22} {r['backend']:8} {r['case']}"
                  + (" [memcheck]" if r["memcheck"] else "") + f"  {r.get('detail', '')}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    status = 0
    if args.slice:
        status = check_slice(results, known)
    print(f"==> {time.monotonic() - started:.0f} s in all")
    return status


def report(results) -> None:
    by_backend = collections.defaultdict(list)
    for r in results:
        by_backend[(r["backend"], r["memcheck"])].append(r)
    for (backend, memcheck), rs in sorted(by_backend.items()):
        outcomes = collections.Counter(r["outcome"] for r in rs)
        if memcheck:
            counts = collections.Counter(r["class"] for r in rs)
            print(f"==> onnx node cases, {backend}, pactum under valgrind: {len(rs)} cases: "
                  + ", ".join(f"{c} {n}" for c, n in sorted(counts.items())))
            for r in rs:
                if r["class"] not in ("memcheck-clean", "not-built"):
                    print(f"      {r['class']:22} {r['case']}: {r.get('detail', '')[:150]}")
            continue
        iree_right = outcomes["both-right"] + outcomes["pactum-wrong"]
        label = backend + (" under valgrind" if memcheck else "")
        print(f"==> onnx node cases, {label}: {len(rs)} cases; IREE right {iree_right}, "
              f"pactum right {outcomes['both-right']} of those; pactum wrong "
              f"{outcomes['pactum-wrong']}; IREE wrong {outcomes['iree-wrong']}; "
              f"IREE cannot {outcomes['iree-cannot']}")
        classes = collections.Counter((r["outcome"], r["class"]) for r in rs
                                      if r["outcome"] != "both-right")
        for (outcome, cls), count in sorted(classes.items()):
            example = next(r for r in rs if r["outcome"] == outcome and r["class"] == cls)
            print(f"      {outcome:12} {cls:22} {count:5}   e.g. {example['case']}: "
                  f"{example.get('detail', '')[:150]}")


def check_slice(results, known: dict) -> int:
    """Every case IREE gets right, pactum gets right, except the known differences, which must
    still fail with their listed cause."""
    problems = []
    seen = set()
    for r in results:
        key = (r["case"], r["backend"])
        if r["memcheck"]:
            if r["outcome"] == "pactum-wrong" and r["class"] == "memcheck":
                problems.append(f"{r['case']} {r['backend']}: valgrind: {r['detail']}")
            continue
        seen.add(key)
        cause = known.get(key)
        if r["outcome"] == "pactum-wrong":
            if cause is None:
                problems.append(f"{r['case']} {r['backend']}: pactum {r['class']}: {r['detail']}")
            elif cause != r["class"]:
                problems.append(f"{r['case']} {r['backend']}: listed as {cause} in "
                                f"{KNOWN_FILE.name}, now fails as {r['class']}: {r['detail']}")
        elif cause is not None:
            problems.append(f"{r['case']} {r['backend']}: listed as {cause} in "
                            f"{KNOWN_FILE.name} but now {r['outcome']}: remove its line")
    stale = sorted(k for k in known if k not in seen)
    for case, backend in stale:
        problems.append(f"{case} {backend}: listed in {KNOWN_FILE.name} but not in "
                        f"{SLICE_FILE.name}")
    classes = collections.Counter(r["class"] for r in results if not r["memcheck"])
    print(f"==> slice: {len(seen)} case runs, classes {dict(sorted(classes.items()))}")
    if problems:
        print("==> onnx conformance slice FAILED:", file=sys.stderr)
        for p in problems:
            print(f"    {p}", file=sys.stderr)
        return 1
    print("==> onnx conformance slice passed (every case IREE gets right, pactum gets right, "
          f"except the {len(known)} listed in {KNOWN_FILE.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
