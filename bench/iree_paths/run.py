"""pactum against IREE's own native tools on every path of issue 23, in the same run.

Each case is a module compiled at bench time by the pinned `iree-compile` (nothing compiled is
committed), with seeded inputs written as `.npy` files. Two modes:

- whole process: `pactum run` against the native `iree-run-module`, wall time of the process
  (start-up, module load, reading the `.npy` inputs, the call, printing the results);
- in process: `pactum bench` against the native `iree-benchmark-module`, the per-iteration
  wall time each tool reports (`real_time` of its JSON report; inputs are read once).

The native tools are those of the pinned runtime wheel (`iree/_runtime_libs/`): the venv's
`bin/iree-run-module` is a Python wrapper that adds a Python start-up to every run. Every pair
of runs is alternated (pactum first in odd rounds, IREE first in even rounds) and the result is
the median of the paired ratios pactum / IREE, never a minimum, with the quartiles of the
ratios as the spread. Every run must succeed: a failing tool stops the bench.

Several pactum builds can be timed in one run (`--pactum before=OLD --pactum after=NEW`, e.g.
a worktree at the base commit against the current tree): every round runs IREE and each build
once, in an order that rotates each round; each build gets its paired ratio to IREE and, after
the first build, its paired ratio to the first build.

Vulkan (issue 25): `--devices vulkan` times the `vk_*` cases, models compiled with
`--iree-hal-target-device=vulkan` and run on the `vulkan` device by both tools (lavapipe where
no GPU is present; dispatch and submission overhead dominate there). The CPU cases run on the
CPU devices only and the `vk_*` cases on `vulkan` only; the default `--devices` is the CPU's.

usage: .venv/bin/python bench/iree_paths/run.py [--runs N] [--cases a,b] [--devices ...]
       [--modes whole,inproc] [--min-time S] [--pactum NAME=PATH ...] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

BACKENDS = {
    "vmvx": ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx"],
    "llvm-cpu": [
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        "--iree-llvmcpu-target-cpu=host",
    ],
    "vulkan": ["--iree-hal-target-device=vulkan"],
    # Sources written in the VM dialect (no HAL, no dispatch).
    "vm": ["--compile-mode=vm"],
}
CPU_DEVICES = ("local-sync", "local-task")


@dataclass
class Case:
    """One benchmark: a module, its function and its inputs."""

    name: str
    what: str
    module: Path = None
    function: str = ""
    inputs: list = field(default_factory=list)
    flags: list = field(default_factory=list)
    # The devices it runs on: its module is compiled either for the CPU or for Vulkan.
    devices: tuple = CPU_DEVICES


def native_tools() -> Path:
    """The folder of the pinned runtime wheel's native tools."""
    import iree._runtime_libs as libs

    folder = Path(libs.__file__).resolve().parent
    for tool in ("iree-run-module", "iree-benchmark-module"):
        if not (folder / tool).is_file():
            sys.exit(f"error: {folder / tool} is missing (is iree-base-runtime installed?)")
    return folder


def compile_mlir(source: Path, backend: str, out: Path, compiler: Path) -> Path:
    subprocess.run(
        [str(compiler), *BACKENDS[backend], str(source), "-o", str(out)], check=True
    )
    return out


SIGNATURE = re.compile(r"func\.func\s+@(\w+)\s*\((.*?)\)\s*->", re.S)
ARGUMENT = re.compile(r"%\w+\s*:\s*tensor<([^>]*)>")


def first_function(text: str):
    """The first function's name and its tensor argument types (`64x784xf32`, ...)."""
    match = SIGNATURE.search(text)
    if not match:
        raise ValueError("no func.func with tensor arguments")
    return match.group(1), ARGUMENT.findall(match.group(2))


def shape_and_dtype(spec: str):
    *dims, element = spec.split("x")
    dtype = {"f32": np.float32, "i32": np.int32, "i64": np.int64, "f16": np.float16}[element]
    return [int(d) for d in dims], dtype, element


def seeded(spec: str, seed: int) -> np.ndarray:
    shape, dtype, _ = shape_and_dtype(spec)
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.floating):
        # Small weights keep deep models' activations finite.
        return (rng.standard_normal(shape) * 0.05).astype(dtype)
    return rng.integers(0, 7, size=shape).astype(dtype)


def dense_literal(array: np.ndarray, spec: str) -> str:
    return f'dense<"0x{array.tobytes().hex().upper()}"> : tensor<{spec}>'


def with_baked_weights(text: str):
    """The module text plus a function `NAME_baked(x)` whose other arguments are constants."""
    name, specs = first_function(text)
    data, weights = specs[0], specs[1:]
    result = re.search(r"func\.func\s+@" + name + r"\s*\(.*?\)\s*->\s*(tensor<[^>]*>)", text, re.S)
    lines = [f"func.func @{name}_baked(%x: tensor<{data}>) -> {result.group(1)} {{"]
    operands = ["%x"]
    types = [f"tensor<{data}>"]
    for k, spec in enumerate(weights):
        lines.append(f"  %w{k} = arith.constant {dense_literal(seeded(spec, 100 + k), spec)}")
        operands.append(f"%w{k}")
        types.append(f"tensor<{spec}>")
    lines.append(
        f"  %r = func.call @{name}({', '.join(operands)}) : ({', '.join(types)}) -> "
        f"{result.group(1)}"
    )
    lines.append(f"  return %r : {result.group(1)}")
    lines.append("}")
    return text + "\n" + "\n".join(lines) + "\n", name, specs


def npy_inputs(specs, folder: Path, stem: str):
    paths = []
    for k, spec in enumerate(specs):
        path = folder / f"{stem}_{k}.npy"
        if not path.exists():
            np.save(path, seeded(spec, k))
        paths.append(f"@{path}")
    return paths


def build_cases(work: Path, compiler: Path, wanted, devices):
    cases = []
    if "vulkan" in devices:
        cases += build_vulkan_cases(work, compiler, wanted)
    if not any(d in CPU_DEVICES for d in devices):
        return cases

    def want(name):
        return not wanted or any(w in name for w in wanted)

    # VM loops: no dispatch, the interpreter alone.
    loops = {
        "vm_loop_i64": ("loop_i64", ["10000000"], "i64 sum loop, 10M trips"),
        "vm_loop_f32": ("loop_f32", ["10000000", "1.5"], "f32 loop, 10M trips"),
    }
    for name, (stem, inputs, what) in loops.items():
        if want(name):
            module = compile_mlir(HERE / f"{stem}.mlir", "vmvx", work / f"{stem}.vmfb", compiler)
            cases.append(Case(name, what, module, stem, inputs))
    # Calls, branches and list traffic in VM code: the committed fixture's spin(1M).
    if want("vm_spin"):
        scalars = ROOT / "crates/pactum-iree/tests/fixtures/vmfb/vm_scalars.vmfb"
        cases.append(Case("vm_spin", "vm_scalars.spin, 1M trips", scalars, "spin", ["1000000"]))
    # Calls between VM functions and list accesses, in VM-dialect sources.
    vm_sources = {
        "vm_calls": ("vm_calls", "call_leaf", ["1000000"], "1M calls of a small function"),
        "vm_lists": ("vm_lists", "list_loop", ["1000000"], "list get and set, 1M trips"),
    }
    for name, (stem, function, inputs, what) in vm_sources.items():
        if want(name):
            module = compile_mlir(HERE / f"{stem}.mlir", "vm", work / f"{stem}.vmfb", compiler)
            cases.append(Case(name, what, module, function, inputs))
    # Start-up alone: the i64 loop with one trip (whole process: load, call, print, exit).
    if want("startup"):
        module = compile_mlir(HERE / "loop_i64.mlir", "vmvx", work / "startup.vmfb", compiler)
        cases.append(Case("startup", "loop_i64(1): start-up, load, one call", module, "loop_i64", ["1"]))

    # Models with their weights as arguments, and the same models with the weights baked in.
    models = [
        ("vmvx_matmul", "vmvx_matmul.mlir", "vmvx", "matmul + bias + relu"),
        ("vmvx_mlp", "vmvx_mlp.mlir", "vmvx", "MLP 784-512-512-10"),
        ("vmvx_cnn", "vmvx_cnn.mlir", "vmvx", "CNN, two 3x3 convs"),
        ("cpu_mlp", "mlp_args.mlir", "llvm-cpu", "MLP 784-512-512-10"),
    ]
    for name, source, backend, what in models:
        if not (want(name + "_args") or want(name + "_baked")):
            continue
        text, function, specs = with_baked_weights((HERE / source).read_text())
        baked_source = work / f"{name}.mlir"
        baked_source.write_text(text)
        module = compile_mlir(baked_source, backend, work / f"{name}.vmfb", compiler)
        inputs = npy_inputs(specs, work, name)
        if want(name + "_args"):
            cases.append(Case(name + "_args", what + ", weights as arguments", module, function, inputs))
        if want(name + "_baked"):
            cases.append(Case(name + "_baked", what + ", weights baked in", module, function + "_baked", inputs[:1]))

    # Many small dispatches: a GPT decode step with a KV cache (bench/iree_paths/decode.py
    # builds it from conformance/models) and a chain of unfusable small ops.
    if want("decode"):
        # decode.py prints the flags both tools take (no spaces inside one).
        printed = subprocess.run(
            [sys.executable, str(HERE / "decode.py"), str(work / "decode")],
            check=True, stdout=subprocess.PIPE, text=True,
        ).stdout.split()
        cases.append(decode_case("decode", printed, CPU_DEVICES))
    if want("many_dispatches"):
        text = (HERE / "many_dispatches.mlir").read_text()
        function, specs = first_function(text)
        module = compile_mlir(HERE / "many_dispatches.mlir", "llvm-cpu", work / "many.vmfb", compiler)
        cases.append(Case("many_dispatches", "chain of small unfusable ops", module, function,
                          npy_inputs(specs, work, "many")))

    # A memory-bound elementwise op over 16M floats, inputs from .npy files.
    if want("axpy_16m"):
        text = (HERE / "axpy.mlir").read_text()
        function, specs = first_function(text)
        module = compile_mlir(HERE / "axpy.mlir", "llvm-cpu", work / "axpy.vmfb", compiler)
        cases.append(Case("axpy_16m", "a*x+y over 16M f32 from .npy", module, function,
                          npy_inputs(specs, work, "axpy")))
    return cases


def decode_case(name: str, printed: list, devices: tuple) -> Case:
    """The decode step's case from the flags decode.py printed."""
    case = Case(name, "GPT decode step, KV cache, weights from an .irpa", devices=devices)
    for flag in printed:
        key, _, value = flag.partition("=")
        if key == "--module":
            case.module = Path(value)
        elif key == "--function":
            case.function = value
        elif key == "--input":
            case.inputs.append(value)
        else:
            case.flags.append(flag)
    return case


def build_vulkan_cases(work: Path, compiler: Path, wanted):
    """The `vk_*` cases: some of the CPU cases' models and the decode step, compiled for
    Vulkan."""
    cases = []

    def want(name):
        return not wanted or any(w in name for w in wanted)

    models = [
        ("vk_matmul", "vmvx_matmul.mlir", "matmul + bias + relu"),
        ("vk_mlp", "mlp_args.mlir", "MLP 784-512-512-10"),
        ("vk_cnn", "vmvx_cnn.mlir", "CNN, two 3x3 convs"),
    ]
    for name, source, what in models:
        if not (want(name + "_args") or want(name + "_baked")):
            continue
        text, function, specs = with_baked_weights((HERE / source).read_text())
        baked_source = work / f"{name}.mlir"
        baked_source.write_text(text)
        module = compile_mlir(baked_source, "vulkan", work / f"{name}.vmfb", compiler)
        inputs = npy_inputs(specs, work, name)
        if want(name + "_args"):
            cases.append(Case(name + "_args", what + ", weights as arguments", module, function,
                              inputs, devices=("vulkan",)))
        if want(name + "_baked"):
            cases.append(Case(name + "_baked", what + ", weights baked in", module,
                              function + "_baked", inputs[:1], devices=("vulkan",)))
    if want("vk_decode"):
        printed = subprocess.run(
            [sys.executable, str(HERE / "decode.py"), str(work / "vk_decode"), "--vulkan"],
            check=True, stdout=subprocess.PIPE, text=True,
        ).stdout.split()
        cases.append(decode_case("vk_decode", printed, ("vulkan",)))
    if want("vk_many_dispatches"):
        text = (HERE / "many_dispatches.mlir").read_text()
        function, specs = first_function(text)
        module = compile_mlir(HERE / "many_dispatches.mlir", "vulkan", work / "vk_many.vmfb", compiler)
        cases.append(Case("vk_many_dispatches", "chain of small unfusable ops", module, function,
                          npy_inputs(specs, work, "vk_many"), devices=("vulkan",)))
    return cases


def whole_process(tool: list, case: Case, device: str) -> float:
    command = [*tool, f"--module={case.module}", f"--function={case.function}",
               f"--device={device}", *case.flags, *(f"--input={i}" for i in case.inputs)]
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed ({done.returncode}):\n{done.stderr.decode()}")
    return elapsed


UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def in_process(tool: list, case: Case, device: str, min_time: float) -> float:
    command = [*tool, f"--module={case.module}", f"--function={case.function}",
               f"--device={device}", *case.flags, *(f"--input={i}" for i in case.inputs),
               f"--benchmark_min_time={min_time}s", "--benchmark_format=json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    report = json.loads(done.stdout)
    rows = [b for b in report["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if not rows:
        sys.exit(f"error: no benchmark rows from {' '.join(command)}")
    row = rows[0]
    return row["real_time"] * UNITS[row.get("time_unit", "ns")]


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def show(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def pactum_builds(specs):
    """`NAME=PATH` pairs (or one bare PATH, named `pactum`), checked to exist."""
    builds = {}
    for spec in specs or [str(ROOT / "target/release/pactum")]:
        name, _, path = spec.rpartition("=")
        name = name or "pactum"
        if not Path(path).is_file():
            sys.exit(f"error: {path} is missing: cargo build --release -p pactum-cli")
        if name in builds or name == "iree":
            sys.exit(f"error: build name {name!r} given twice (or reserved)")
        builds[name] = Path(path)
    return builds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cases", default="", help="comma-separated substrings of case names")
    parser.add_argument("--devices", default="local-sync,local-task")
    parser.add_argument("--modes", default="inproc,whole")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per in-process run")
    parser.add_argument("--pactum", action="append",
                        help="NAME=PATH of a pactum binary, repeatable (default: target/release/pactum)")
    parser.add_argument("--compile", default=str(ROOT / ".venv/bin/iree-compile"))
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()

    tools = native_tools()
    builds = pactum_builds(args.pactum)
    first = next(iter(builds))
    wanted = [w for w in args.cases.split(",") if w]
    devices = args.devices.split(",")
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory(prefix="pactum-iree-paths-") as folder:
        work = Path(folder)
        cases = build_cases(work, Path(args.compile), wanted, devices)
        if not cases:
            sys.exit(f"error: no case matches {args.cases!r}")
        load_before = os.getloadavg()
        results = []
        for case in cases:
            for device in [d for d in devices if d in case.devices]:
                for mode in modes:
                    def measure(which):
                        if mode == "whole":
                            tool = [str(tools / "iree-run-module")] if which == "iree" else [str(builds[which]), "run"]
                            return whole_process(tool, case, device)
                        tool = [str(tools / "iree-benchmark-module")] if which == "iree" else [str(builds[which]), "bench"]
                        return in_process(tool, case, device, args.min_time)

                    order = [*builds, "iree"]
                    # One uncounted warm-up round: page cache, CPU frequency.
                    for which in order:
                        measure(which)
                    times = {which: [] for which in order}
                    for run in range(args.runs):
                        # Rotate the order so that no tool always runs after the same one.
                        shift = run % len(order)
                        for which in order[shift:] + order[:shift]:
                            times[which].append(measure(which))
                    for name in builds:
                        ratios = [p / i for p, i in zip(times[name], times["iree"])]
                        low, high = quartiles(ratios)
                        to_first = None
                        if name != first:
                            to_first = statistics.median(
                                [p / f for p, f in zip(times[name], times[first])])
                        row = (case.name, case.what, device, mode, name, statistics.median(times[name]),
                               statistics.median(times["iree"]), statistics.median(ratios), low, high,
                               to_first)
                        results.append(row)
                        extra = f"  {name}/{first} {to_first:.2f}" if to_first is not None else ""
                        print(f"{case.name:22} {device:10} {mode:6} {name:>8} {show(row[5]):>9}  "
                              f"IREE {show(row[6]):>9}  ratio {row[7]:.2f} ({low:.2f}-{high:.2f}){extra}",
                              flush=True)
        load_after = os.getloadavg()

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    several = len(builds) > 1
    header = "| case | device | mode | " + ("build | " if several else "") + "pactum | IREE | " \
        "pactum / IREE (median of paired ratios) | quartiles |" + (f" / {first} |" if several else "")
    lines = [
        f"{args.runs} alternated rounds per row; {os.cpu_count()} cores ({cpu}); load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after.",
        "",
        header,
        "|" + "---|" * header.count(" | ") + "---|",
    ]
    for name, what, device, mode, build, p, i, r, low, high, to_first in results:
        mode_name = "in process" if mode == "inproc" else "whole process"
        line = f"| `{name}` ({what}) | {device} | {mode_name} | " + (f"{build} | " if several else "")
        line += f"{show(p)} | {show(i)} | **{r:.2f}** | {low:.2f}–{high:.2f} |"
        if several:
            line += f" {to_first:.2f} |" if to_first is not None else " |"
        lines.append(line)
    table = "\n".join(lines)
    print()
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    above = [r for r in results if r[7] > 1.0]
    print(f"\n{len(results) - len(above)} of {len(results)} rows at or under 1.0x IREE's time")


if __name__ == "__main__":
    main()
