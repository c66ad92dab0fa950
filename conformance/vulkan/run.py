#!/usr/bin/env python3
"""The Vulkan corpus: MLIR programs compiled for Vulkan, run by IREE and by pactum, compared.

The sources in cases/ (elementwise, reductions, matmul, convolution, attention, dynamic shapes,
dependent dispatches with barriers, fills and copies, async exports with fences, parameters,
baked-in constants)
are compiled by the pinned `iree-compile --iree-hal-target-device=vulkan` (async.mlir with
`--iree-execution-model=async-external`). Each case of cases.py is run with the same argument
list (`--device=vulkan --module --function --input=@x.npy [--parameters=model=FILE]`) by:
  - the native `iree-run-module` (IREE's Vulkan driver), and
  - `pactum run` (pactum's Vulkan device),
and compared: pactum's printed results must be IREE's, text for text, and its
`--output=@out.npy` files byte for byte IREE's. Then `pactum call --device vulkan MODULE
FUNCTION @x.npy ... --out DIR` must write IREE's arrays.

So that a case cannot pass by both runtimes being wrong on the same driver, the sources are
also compiled for llvm-cpu and IREE's Vulkan results must match IREE's local-task results (exact
for integers, rtol 1e-5/atol 1e-6 for floats).

No Vulkan driver (no `vulkan://` device in `iree-run-module --list_devices`) is an error, said
loudly: the run fails, it does not skip. On Debian, `apt-get install mesa-vulkan-drivers
libvulkan1` gives lavapipe.

Usage: run.py [--pactum PATH] [--cases REGEX] [--iree-only] [--jobs N] [--cache DIR]
              [--validation-layers DIR] [--memory MODE]
  --iree-only: run and check IREE's side only (the corpus itself; no pactum needed).
  --validation-layers DIR: run both tools' Vulkan calls under Khronos' validation layer
    (DIR holds VkLayer_khronos_validation.json; Debian: vulkan-validationlayers); a message
    on pactum's run fails its case, one on IREE's is listed.
  --memory MODE: run pactum's device in memory mode MODE (`PACTUM_VULKAN_MEMORY`: default,
    device-local-only: device-local memory treated as not host-visible, every buffer reached
    through staging copies; non-coherent: mapped memory flushed and invalidated), so lavapipe
    takes the paths a discrete GPU needs. IREE's runs are the same in every mode.
Prints one line per case and the counts (cases, IREE runs, equal, differ, pactum errors);
exit status 1 unless every case runs under IREE and pactum gives IREE's results.
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

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import cases as corpus  # noqa: E402

TIMEOUT_S = 300
SEED = 25  # issue 25
TARGETS = {
    "vulkan": ["--iree-hal-target-device=vulkan"],
    "llvm-cpu": ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                 "--iree-llvmcpu-target-cpu=generic"],
}


def die(message: str) -> None:
    sys.exit(f"vulkan corpus: error: {message}")


def run_module_tool() -> str:
    import iree._runtime_libs as libs  # the native tool, not the venv's Python wrapper

    return str(pathlib.Path(libs.__file__).parent / "iree-run-module")


def compile_tool() -> str:
    from iree.compiler.tools import binaries

    return binaries.find_tool("iree-compile")


def vulkan_devices(iree: str) -> list:
    """The `vulkan://` devices IREE's driver finds (none without a Vulkan driver)."""
    proc = subprocess.run([iree, "--list_devices"], capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    return [line.strip() for line in proc.stdout.splitlines() if line.strip().startswith("vulkan://")]


# With --validation-layers: the environment that puts Khronos' validation layer under both
# tools' Vulkan calls, and the messages it printed, per (case, tool).
VALIDATION_ENV = None
VALIDATION_MESSAGES = {}


def run(cmd, cwd=None, check_validation=None):
    """(exit status, stdout, stderr) of `cmd`. `check_validation=(case, tool)` runs it under the
    validation layer (when --validation-layers is given) and files the layer's messages (lines
    naming a `VUID-`) under that key; they are taken out of stdout, so the printed results are
    still compared."""
    env = None
    if check_validation and VALIDATION_ENV:
        env = {**os.environ, **VALIDATION_ENV}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              errors="replace", cwd=cwd, env=env)
        if env is not None:
            # A message is a line naming a VUID and the indented lines after it (the objects).
            out_lines, messages, in_message = [], [], False
            for line in proc.stdout.splitlines(keepends=True):
                if "VUID-" in line:
                    messages.append(line)
                    in_message = True
                elif not (in_message and line[:1].isspace()):
                    out_lines.append(line)
                    in_message = False
            messages += [line for line in proc.stderr.splitlines() if "VUID-" in line]
            if messages:
                VALIDATION_MESSAGES.setdefault(check_validation, []).extend(messages)
            return proc.returncode, "".join(out_lines), proc.stderr
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT_S} s"
    except OSError as error:
        return None, "", f"cannot run {cmd[0]}: {error}"


def compile_source(compiler: str, version: str, cache: pathlib.Path, source: str, flags: list,
                   target: str):
    """cache/SOURCE.TARGET.vmfb, compiled unless the same compiler compiled the same source with
    the same flags before. Returns (path, None) or (None, error)."""
    text = (HERE / "cases" / f"{source}.mlir").read_bytes()
    all_flags = TARGETS[target] + flags
    key = hashlib.sha256(text + "\0".join(all_flags + [version]).encode()).hexdigest()
    module = cache / f"{source}.{target}.vmfb"
    stamp = module.with_suffix(".key")
    if module.exists() and stamp.exists() and stamp.read_text() == key:
        return module, None
    rc, _, err = run([compiler, *all_flags, str(HERE / "cases" / f"{source}.mlir"), "-o",
                      str(module)])
    if rc != 0:
        errors = [line for line in err.splitlines() if "error:" in line]
        return None, f"iree-compile ({target}) failed: {(errors[0] if errors else err)[-400:]}"
    stamp.write_text(key)
    return module, None


def write_inputs(cache: pathlib.Path) -> dict:
    """{(source, function): [--input=... arguments]}, the arrays written under cache/inputs, and
    the parameter archive cache/parameters.irpa."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    folder = cache / "inputs"
    folder.mkdir(parents=True, exist_ok=True)
    arguments = {}
    for source, function, inputs, _, _ in corpus.CASES:
        args = []
        for k, (dtype, spec) in enumerate(inputs):
            if isinstance(spec, tuple):
                path = folder / f"{source}.{function}.{k}.npy"
                np.save(path, corpus.random_array(rng, dtype, spec))
                args.append(f"--input=@{path}")
            else:
                args.append(f"--input={spec}")
        arguments[(source, function)] = args
    write_parameters(rng, cache / "parameters.irpa")
    return arguments


def write_parameters(rng, path: pathlib.Path) -> None:
    import iree.runtime as rt

    index = rt.ParameterIndex()
    for name, (dtype, shape) in corpus.PARAMETERS.items():
        index.add_buffer(name, corpus.random_array(rng, dtype, shape).tobytes())
    index.create_archive_file(str(path))


def common_args(module: pathlib.Path, function: str, inputs: list, parameters: bool,
                cache: pathlib.Path) -> list:
    args = [f"--module={module}", f"--function={function}", *inputs]
    if parameters:
        args.append(f"--parameters={corpus.PARAMETER_SCOPE}={cache / 'parameters.irpa'}")
    return args


def output_files(folder: pathlib.Path, tag: str, count: int) -> list:
    return [folder / f"{tag}.out{k}.npy" for k in range(count)]


def result_count(printed: str) -> int:
    return len(re.findall(r"^result\[\d+\]", printed, flags=re.M))


def check_against_cpu(vulkan_files: list, cpu_files: list) -> list:
    """Problems of IREE's Vulkan results against IREE's llvm-cpu ones."""
    import numpy as np

    problems = []
    for k, (gpu, cpu) in enumerate(zip(vulkan_files, cpu_files)):
        a, b = np.load(gpu), np.load(cpu)
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append(f"result {k}: IREE vulkan gives {a.dtype}{a.shape}, llvm-cpu "
                            f"{b.dtype}{b.shape}")
        elif a.dtype.kind == "f":
            if not np.allclose(a, b, rtol=1e-5, atol=1e-6):
                problems.append(f"result {k}: IREE vulkan differs from IREE llvm-cpu (max abs "
                                f"diff {np.max(np.abs(a - b))})")
        elif not np.array_equal(a, b):
            problems.append(f"result {k}: IREE vulkan differs from IREE llvm-cpu")
    return problems


def run_case(case, modules: dict, arguments: dict, cache: pathlib.Path, iree: str,
             pactum: str | None) -> dict:
    """One case through IREE (vulkan and the llvm-cpu reference) and pactum. Returns a record
    with `iree` (None when IREE ran it and agrees with llvm-cpu, else why not) and `pactum`
    (None when equal, else `error` or `differs` and why)."""
    source, function, inputs, flags, parameters = case
    record = {"case": f"{source}::{function}", "iree": None, "pactum": None, "detail": ""}
    gpu_module, error = modules[(source, "vulkan")]
    cpu_module, cpu_error = modules[(source, "llvm-cpu")]
    if error or cpu_error:
        record["iree"] = error or cpu_error
        return record
    folder = cache / "outputs"
    folder.mkdir(exist_ok=True)
    tag = f"{source}.{function}"
    args = common_args(gpu_module, function, arguments[(source, function)], parameters, cache)
    rc, iree_out, iree_err = run([iree, "--device=vulkan", *args],
                                 check_validation=(record["case"], "iree"))
    if rc != 0:
        record["iree"] = f"iree-run-module --device=vulkan failed ({rc}): {iree_err.strip()[-400:]}"
        return record
    count = result_count(iree_out)
    gpu_files = output_files(folder, f"{tag}.iree-vulkan", count)
    cpu_files = output_files(folder, f"{tag}.iree-cpu", count)
    cpu_args = common_args(cpu_module, function, arguments[(source, function)], parameters, cache)
    for device, call_args, files in (("vulkan", args, gpu_files),
                                     ("local-task", cpu_args, cpu_files)):
        rc, _, err = run([iree, f"--device={device}", *call_args,
                          *[f"--output=@{f}" for f in files]])
        if rc != 0:
            record["iree"] = (f"iree-run-module --device={device} --output failed ({rc}): "
                              f"{err.strip()[-400:]}")
            return record
    problems = check_against_cpu(gpu_files, cpu_files)
    if problems:
        record["iree"] = "; ".join(problems)
        return record
    record["printed"] = iree_out
    if pactum is None:
        return record
    rc, ours_out, ours_err = run([pactum, "run", "--device=vulkan", *args],
                                 check_validation=(record["case"], "pactum"))
    if rc != 0:
        record["pactum"] = "error"
        record["detail"] = f"pactum run failed ({rc}): {ours_err.strip()[-400:]}"
        return record
    messages = VALIDATION_MESSAGES.get((record["case"], "pactum"))
    if messages:
        record["pactum"] = "differs"
        record["detail"] = f"the validation layer reported pactum's Vulkan calls: {messages[0].strip()[:300]}"
        return record
    if ours_out != iree_out:
        record["pactum"] = "differs"
        record["detail"] = (f"printed results differ:\n      IREE:   {iree_out[:300]!r}\n"
                            f"      pactum: {ours_out[:300]!r}")
        return record
    our_files = output_files(folder, f"{tag}.pactum", count)
    rc, _, err = run([pactum, "run", "--device=vulkan", *args,
                      *[f"--output=@{f}" for f in our_files]])
    if rc != 0:
        record["pactum"] = "error"
        record["detail"] = f"pactum run with --output failed ({rc}): {err.strip()[-400:]}"
        return record
    different = [k for k, (theirs, ours) in enumerate(zip(gpu_files, our_files))
                 if not ours.exists() or theirs.read_bytes() != ours.read_bytes()]
    if different:
        record["pactum"] = "differs"
        record["detail"] = f"the .npy files of results {different} differ"
        return record
    problem = compare_call(pactum, gpu_module, function, arguments[(source, function)],
                           parameters, cache, folder / f"{tag}.call", gpu_files)
    if problem:
        record["pactum"], record["detail"] = problem
    return record


def compare_call(pactum: str, module: pathlib.Path, function: str, inputs: list,
                 parameters: bool, cache: pathlib.Path, out: pathlib.Path, expected: list):
    """`pactum call --device vulkan MODULE FUNCTION ARGS --out DIR` (the same inputs as
    arguments: `@x.npy` and plain numbers): its `result_<i>.npy` files must hold IREE's
    arrays (dtype, shape and bytes). None, or ("error" | "differs", why)."""
    import numpy as np

    values = [i.removeprefix("--input=") for i in inputs]
    flags = ["--device", "vulkan", "--out", str(out)]
    if parameters:
        flags.append(f"--parameters={corpus.PARAMETER_SCOPE}={cache / 'parameters.irpa'}")
    rc, _, err = run([pactum, "call", *flags, str(module), function, *values])
    if rc != 0:
        return "error", f"pactum call failed ({rc}): {err.strip()[-400:]}"
    for k, theirs in enumerate(expected):
        ours = out / f"result_{k}.npy"
        if not ours.exists():
            return "differs", f"pactum call wrote no {ours.name}"
        a, b = np.load(ours), np.load(theirs)
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            return "differs", (f"pactum call result {k}: {a.dtype}{a.shape} differs from IREE's "
                               f"{b.dtype}{b.shape}")
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pactum", default=str(ROOT / "target/debug/pactum"))
    parser.add_argument("--cases", default=".*", help="regex of SOURCE::FUNCTION names")
    parser.add_argument("--iree-only", action="store_true",
                        help="check IREE's side only (no pactum runs)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cache", default=str(ROOT / "target/conformance/vulkan"))
    parser.add_argument("--validation-layers", metavar="DIR",
                        help="a folder of Vulkan layer manifests holding Khronos' validation "
                        "layer (VkLayer_khronos_validation.json): run both tools' first "
                        "--device=vulkan run of each case under it; a message on pactum's run "
                        "fails the case, one on IREE's is listed")
    parser.add_argument("--memory", default="default",
                        choices=["default", "device-local-only", "non-coherent"],
                        help="pactum's Vulkan memory mode (PACTUM_VULKAN_MEMORY)")
    args = parser.parse_args()
    # Only pactum reads it; every tool the corpus runs inherits it.
    os.environ["PACTUM_VULKAN_MEMORY"] = args.memory
    if args.validation_layers:
        manifest = pathlib.Path(args.validation_layers) / "VkLayer_khronos_validation.json"
        if not manifest.is_file():
            die(f"--validation-layers: {manifest} is missing")
        global VALIDATION_ENV
        VALIDATION_ENV = {"VK_LAYER_PATH": str(manifest.parent),
                          "VK_INSTANCE_LAYERS": "VK_LAYER_KHRONOS_validation"}

    pactum = None
    if not args.iree_only:
        pactum = str(pathlib.Path(args.pactum))
        if not os.access(pactum, os.X_OK):
            die(f"{pactum} is missing: build it with `cargo build -p pactum-cli`")
    iree = run_module_tool()
    devices = vulkan_devices(iree)
    if not devices:
        die("NO VULKAN DRIVER: iree-run-module --list_devices shows no vulkan:// device, so "
            "nothing of the Vulkan corpus can run. Install one (Debian: apt-get install "
            "mesa-vulkan-drivers libvulkan1, which gives lavapipe); this run does not skip.")
    selected = [c for c in corpus.CASES if re.search(args.cases, f"{c[0]}::{c[1]}")]
    if not selected:
        die(f"no case matches {args.cases!r}")
    cache = pathlib.Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    compiler = compile_tool()
    version = run([compiler, "--version"])[1]
    arguments = write_inputs(cache)
    builds = sorted({(c[0], tuple(c[3]), target) for c in selected for target in TARGETS})
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        compiled = list(pool.map(
            lambda b: compile_source(compiler, version, cache, b[0], list(b[1]), b[2]), builds))
        modules = {(source, target): result for (source, _, target), result in zip(builds, compiled)}
        records = list(pool.map(
            lambda case: run_case(case, modules, arguments, cache, iree, pactum), selected))

    print(f"vulkan devices: {', '.join(devices)}")
    for record in records:
        for tool in ("iree", "pactum"):
            messages = VALIDATION_MESSAGES.get((record["case"], tool), [])
            if messages:
                print(f"VALIDATION {record['case']} ({tool}, {len(messages)} messages): "
                      f"{messages[0].strip()[:300]}")
    for record in records:
        if record["iree"]:
            print(f"IREE FAILS {record['case']}: {record['iree']}")
        elif record["pactum"] == "error":
            print(f"ERROR   {record['case']}: {record['detail']}")
        elif record["pactum"] == "differs":
            print(f"DIFFERS {record['case']}: {record['detail']}")
        else:
            print(f"{'iree ok' if pactum is None else 'same   '} {record['case']}")
    iree_ok = sum(1 for r in records if not r["iree"])
    counts = {"cases": len(records), "iree_ok": iree_ok}
    if pactum is not None:
        ran = [r for r in records if not r["iree"]]
        counts.update(equal=sum(1 for r in ran if r["pactum"] is None),
                      differ=sum(1 for r in ran if r["pactum"] == "differs"),
                      pactum_errors=sum(1 for r in ran if r["pactum"] == "error"))
        print(f"vulkan corpus ({args.memory} memory): {counts['cases']} cases, {iree_ok} run "
              f"under IREE, {counts['equal']} equal, {counts['differ']} differ, "
              f"{counts['pactum_errors']} pactum errors")
        failed = iree_ok != len(records) or counts["equal"] != iree_ok
    else:
        print(f"vulkan corpus: {counts['cases']} cases, {iree_ok} run under IREE and match "
              f"IREE's llvm-cpu results (pactum not run: --iree-only)")
        failed = iree_ok != len(records)
    name = "counts.json" if args.memory == "default" else f"counts-{args.memory}.json"
    (cache / name).write_text(json.dumps(counts, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
