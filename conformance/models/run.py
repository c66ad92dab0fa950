#!/usr/bin/env python3
"""Models deployed with their weights in parameter archives, run by IREE and by pactum.

Each model of models.py (MLP, CNN, ResNet, transformer encoder layer, GPT decode step) is
written as ONNX with seeded weights, imported by the pinned `iree-import-onnx
--externalize-params` (which moves every weight into an `.irpa` archive, scope `model`, and
leaves `#stream.parameter.named` references in the program), and compiled by the pinned
`iree-compile`. The archive is also written as `.safetensors` and `.gguf` (archives.py).

For every (model, backend, archive format), the native `iree-run-module` and `pactum run` get
the same argument list (`--module --function --parameters=model=FILE --input=@x.npy`):
  - printed results: pactum's stdout must be IREE's, text for text;
  - `--output=@out.npy` results: byte-identical `.npy` files.
IREE's results must also match onnx's reference evaluator (rtol 1e-3, atol 1e-4), so that a
wrong model cannot pass by being equally wrong in both.

From Python, `pactum.iree.load(vmfb, parameters={"model": FILE})` and `iree.runtime` (its
`ParameterIndex` and `io_parameters` module) are called with the same inputs: the arrays must be
identical.

The Vulkan column (on by default since issue 25; `--backends vulkan` for it alone): every
model compiled with `--iree-hal-target-device=vulkan` and run with `--device=vulkan` by both
tools, and through `iree.runtime.Config("vulkan")` and `pactum.iree.load(..., device="vulkan")`.
Without a Vulkan driver the run stops and says so (`--backends llvm-cpu,vmvx` for the CPU
columns alone).

Usage: run.py [--pactum PATH] [--models REGEX] [--backends NAME,...] [--jobs N] [--cache DIR]
  (no --backends: llvm-cpu and vulkan for every model and vmvx for three; `--backends vulkan`
  for the Vulkan column alone)
Exit status 1 when any run differs; every run is listed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import archives  # noqa: E402
import models  # noqa: E402

BACKENDS = {
    "llvm-cpu": ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic"],
    "vmvx": ["--iree-hal-target-backends=vmvx"],
    "vulkan": ["--iree-hal-target-device=vulkan"],
}
# The device each backend's modules run on, where it is not the tools' default (local-task).
DEVICES = {"vulkan": "vulkan"}
# Backends compiled apart from build()'s records (compile_separately), for every model: run by
# default, or when named with --backends.
SEPARATE_BACKENDS = ("vulkan",)
# vmvx runs the slower models for long; these three cover it (matmul, attention, embedding).
VMVX_MODELS = {"mlp", "transformer", "gpt_decode"}
FORMATS = ("irpa", "safetensors", "gguf")
SCOPE = "model"
TIMEOUT_S = 300


def die(message: str) -> None:
    sys.exit(f"models: error: {message}")


def run_module_tool() -> str:
    import iree._runtime_libs as libs  # the native tool, not the venv's Python wrapper

    return str(pathlib.Path(libs.__file__).parent / "iree-run-module")


def require_vulkan_driver() -> None:
    """Exits, saying why, when the Vulkan column is asked for and no Vulkan device is there."""
    listed = subprocess.run([run_module_tool(), "--list_devices"], capture_output=True,
                            text=True).stdout
    if "vulkan://" not in listed:
        die("--backends vulkan, but NO VULKAN DRIVER: iree-run-module --list_devices shows no "
            "vulkan:// device. Install one (Debian: apt-get install mesa-vulkan-drivers "
            "libvulkan1, which gives lavapipe).")


def fingerprint(compile_tool: str) -> str:
    version = subprocess.run([compile_tool, "--version"], capture_output=True, text=True,
                             check=True).stdout
    source = "".join((HERE / f).read_text() for f in ("models.py", "archives.py", "run.py"))
    return hashlib.sha256((version + source).encode()).hexdigest()[:16]


def build(name: str, cache: pathlib.Path, key: str) -> dict:
    """Writes the model, its inputs, onnx's reference outputs, the archives and the compiled
    modules into cache/name (reused when the key matches)."""
    import numpy as np
    import onnx
    from iree.compiler.tools import binaries
    from onnx.reference import ReferenceEvaluator

    folder = cache / name
    record_file = folder / "build.json"
    if record_file.exists():
        record = json.loads(record_file.read_text())
        if record.get("key") == key:
            return record
    folder.mkdir(parents=True, exist_ok=True)
    model, inputs = models.MODELS[name]()
    onnx.save(model, folder / "model.onnx")
    feeds = {i.name: v for i, v in zip(model.graph.input, inputs)}
    expected = ReferenceEvaluator(model).run(None, feeds)
    for k, value in enumerate(inputs):
        np.save(folder / f"input_{k}.npy", value)
    for k, value in enumerate(expected):
        np.save(folder / f"expected_{k}.npy", value)
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx",
                    str(folder / "model.onnx"), "-o", str(folder / "model.mlir"),
                    "--externalize-params", "--num-elements-threshold=32",
                    f"--params-scope={SCOPE}", "--save-params-to", str(folder / "params.irpa")],
                   check=True, capture_output=True)
    entries = archives.irpa_entries(folder / "params.irpa")
    archives.write_safetensors(folder / "params.safetensors", entries)
    archives.write_gguf(folder / "params.gguf", entries)
    compile_tool = binaries.find_tool("iree-compile")
    backends = ["llvm-cpu"] + (["vmvx"] if name in VMVX_MODELS else [])
    for backend in backends:
        subprocess.run([compile_tool, *BACKENDS[backend], str(folder / "model.mlir"), "-o",
                        str(folder / f"{backend}.vmfb")], check=True, capture_output=True)
    record = {"key": key, "name": name, "inputs": len(inputs), "outputs": len(expected),
              "backends": backends, "parameters": len(entries),
              "parameter_bytes": sum(len(d) for _, d in entries)}
    record_file.write_text(json.dumps(record, indent=1))
    return record


def compile_separately(record: dict, backend: str, cache: pathlib.Path, key: str) -> None:
    """Compiles cache/NAME/BACKEND.vmfb for a backend of SEPARATE_BACKENDS unless the same
    key compiled it before (build() compiles the CPU backends only, so that its records and
    cache keys stay as they were)."""
    from iree.compiler.tools import binaries

    folder = cache / record["name"]
    module, stamp = folder / f"{backend}.vmfb", folder / f"{backend}.key"
    if module.exists() and stamp.exists() and stamp.read_text() == key:
        return
    subprocess.run([binaries.find_tool("iree-compile"), *BACKENDS[backend],
                    str(folder / "model.mlir"), "-o", str(module)], check=True, capture_output=True)
    stamp.write_text(key)


def run(cmd):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              errors="replace")
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT_S} s"


def compare(record, backend: str, fmt: str, cache: pathlib.Path, iree: str, pactum: str):
    """Problems of one (model, backend, format) run; [] when pactum is IREE."""
    import numpy as np

    name = record["name"]
    folder = cache / name
    args = [f"--module={folder / f'{backend}.vmfb'}", f"--function={name}",
            f"--parameters={SCOPE}={folder / f'params.{fmt}'}"]
    if backend in DEVICES:
        args.append(f"--device={DEVICES[backend]}")
    args += [f"--input=@{folder / f'input_{k}.npy'}" for k in range(record["inputs"])]
    problems = []
    iree_rc, iree_out, iree_err = run([iree, *args])
    ours_rc, ours_out, ours_err = run([pactum, "run", *args])
    if iree_rc != 0:
        return [f"iree-run-module failed ({iree_rc}): {iree_err.strip()[-300:]}"]
    if ours_rc != 0:
        return [f"pactum run failed ({ours_rc}): {ours_err.strip()[-300:]}"]
    if ours_out != iree_out:
        problems.append(f"printed results differ:\n  IREE:   {iree_out[:300]!r}\n"
                        f"  pactum: {ours_out[:300]!r}")
    with tempfile.TemporaryDirectory(prefix=f"models-{name}-") as tmp:
        tmp = pathlib.Path(tmp)
        outputs = {}
        for tool, cmd in (("iree", [iree]), ("pactum", [pactum, "run"])):
            files = [tmp / f"{tool}_{k}.npy" for k in range(record["outputs"])]
            rc, _, err = run([*cmd, *args, *[f"--output=@{f}" for f in files]])
            if rc != 0:
                return problems + [f"{tool} with --output failed ({rc}): {err.strip()[-300:]}"]
            outputs[tool] = files
        for k, (theirs, ours) in enumerate(zip(outputs["iree"], outputs["pactum"])):
            if theirs.read_bytes() != ours.read_bytes():
                problems.append(f"result {k}: the .npy files differ")
            expected = np.load(folder / f"expected_{k}.npy")
            actual = np.load(theirs)
            if actual.shape != expected.shape or not np.allclose(actual, expected, rtol=1e-3,
                                                                 atol=1e-4):
                problems.append(f"result {k}: IREE differs from onnx's reference (max abs "
                                f"diff {np.max(np.abs(actual - expected)) if actual.shape == expected.shape else 'shape'})")
    return problems


def as_list(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def host_copy(array):
    """An iree.runtime DeviceArray of a GPU device as a NumPy array, copied through a
    host-visible staging buffer. `DeviceArray.to_host()` cannot be used there: on the vulkan
    driver it imports the NumPy array's memory, which lavapipe refuses unless 4096-aligned
    (minImportedHostPointerAlignment)."""
    import iree.runtime as rt
    import numpy as np

    view, device = array._buffer_view, array._device  # no public accessors
    source = view.get_buffer()
    staging = device.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=source.byte_length())
    semaphore = device.create_semaphore(0)
    device.queue_copy(source, staging, wait_semaphores=rt.HalFence.create_at(semaphore, 0),
                      signal_semaphores=rt.HalFence.create_at(semaphore, 1))
    rt.HalFence.create_at(semaphore, 1).wait()
    dtype = rt.HalElementType.map_to_dtype(view.element_type)
    return np.array(staging.map().asarray(view.shape, dtype))


def compare_python(record, backend: str, fmt: str, cache: pathlib.Path):
    """Problems of the same run through pactum's and IREE's Python packages."""
    import iree.runtime as rt
    import numpy as np
    import pactum

    name = record["name"]
    folder = cache / name
    module, params = folder / f"{backend}.vmfb", folder / f"params.{fmt}"
    inputs = [np.load(folder / f"input_{k}.npy") for k in range(record["inputs"])]
    device = DEVICES.get(backend, "local-task")
    config = rt.Config(device)
    index = rt.ParameterIndex()
    index.load(str(params))
    bound = rt.load_vm_modules(
        rt.create_io_parameters_module(config.vm_instance, index.create_provider(scope=SCOPE)),
        rt.VmModule.mmap(config.vm_instance, str(module)), config=config)
    theirs = [host_copy(r) if backend in DEVICES else np.asarray(r.to_host())
              for r in as_list(bound[-1][name](*inputs))]
    try:
        loaded = pactum.iree.load(module, parameters={SCOPE: params},
                                  **({"device": device} if backend in DEVICES else {}))
        ours = [np.asarray(r) for r in as_list(loaded[name](*inputs))]
    except Exception as error:  # noqa: BLE001 - reported as the run's problem
        return [f"pactum.iree: {type(error).__name__}: {error}"[:400]]
    if len(ours) != len(theirs):
        return [f"pactum.iree returned {len(ours)} results, iree.runtime {len(theirs)}"]
    return [f"python result {k}: {a.dtype}{a.shape} vs IREE {b.dtype}{b.shape}, values differ"
            for k, (a, b) in enumerate(zip(ours, theirs))
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pactum", default=str(ROOT / "target/debug/pactum"))
    parser.add_argument("--models", default=".*", help="regex of model names")
    parser.add_argument("--backends", help="comma-separated backends (default: llvm-cpu, "
                        "vmvx and vulkan)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cache", default=str(ROOT / "target/conformance/models"))
    args = parser.parse_args()
    chosen = args.backends.split(",") if args.backends else None
    unknown = [b for b in chosen or [] if b not in BACKENDS]
    if unknown:
        die(f"unknown backend {unknown[0]!r} (backends: {', '.join(BACKENDS)})")
    separate = [b for b in SEPARATE_BACKENDS if chosen is None or b in chosen]
    if "vulkan" in separate:
        require_vulkan_driver()
    pactum = pathlib.Path(args.pactum)
    if not os.access(pactum, os.X_OK):
        die(f"{pactum} is missing: build it with `cargo build -p pactum-cli`")
    from iree.compiler.tools import binaries

    cache = pathlib.Path(args.cache)
    key = fingerprint(binaries.find_tool("iree-compile"))
    names = [n for n in models.MODELS if re.search(args.models, n)]
    if not names:
        die(f"no model matches {args.models!r} (models: {', '.join(models.MODELS)})")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        records = list(pool.map(lambda n: build(n, cache, key), names))
        list(pool.map(lambda rb: compile_separately(*rb, cache, key),
                      [(r, b) for r in records for b in separate]))
        jobs = [(r, b, f) for r in records
                for b in [b for b in r["backends"] if chosen is None or b in chosen] + separate
                for f in FORMATS]
        results = list(pool.map(
            lambda job: (job, compare(*job, cache, run_module_tool(), str(pactum))), jobs))
    # In this process, one run at a time (both runtimes have their own thread pools).
    results = [(job, problems + compare_python(*job, cache)) for job, problems in results]
    failed = 0
    for (record, backend, fmt), problems in results:
        where = f"{record['name']} {backend} {fmt}"
        if problems:
            failed += 1
            print(f"DIFFERS {where}")
            for problem in problems:
                print(f"    {problem}")
        else:
            print(f"same    {where} ({record['parameters']} parameters, "
                  f"{record['parameter_bytes']} bytes)")
    print(f"models: {len(results) - failed}/{len(results)} runs give IREE's results "
          f"({len(records)} models, formats {', '.join(FORMATS)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
