#!/usr/bin/env python3
"""bench/iree_paths: the GPT decode step of conformance/models (embedding lookup, attention over
a KV cache the step extends, logits), built as the model suite builds it: ONNX with seeded
weights, imported by the pinned `iree-import-onnx --externalize-params` (weights in an `.irpa`,
scope `model`) and compiled for llvm-cpu (or, with `--vulkan`, for the Vulkan device). Its many small dispatches make per-dispatch,
per-barrier and per-call overhead dominate.

Usage: decode.py OUT_DIR [--vulkan]
Writes OUT_DIR/gpt_decode.vmfb, OUT_DIR/params.irpa and OUT_DIR/input_{0,1,2}.npy, then prints
the flags that `pactum bench` and the native `iree-benchmark-module` both take, e.g.

    target/release/pactum bench $(python3 bench/iree_paths/decode.py /tmp/decode) \
        --device=local-task --benchmark_repetitions=3
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "conformance" / "models"))

import models  # noqa: E402

FUNCTION = "gpt_decode"


def main() -> int:
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--vulkan"]):
        sys.exit("usage: decode.py OUT_DIR [--vulkan]")
    target = (["--iree-hal-target-device=vulkan"] if sys.argv[2:] else
              ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic"])
    import numpy as np
    import onnx
    from iree.compiler.tools import binaries

    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    model, inputs = models.MODELS[FUNCTION]()
    onnx.save(model, out / "model.onnx")
    for k, value in enumerate(inputs):
        np.save(out / f"input_{k}.npy", value)
    subprocess.run([sys.executable, "-m", "iree.compiler.tools.import_onnx",
                    str(out / "model.onnx"), "-o", str(out / "model.mlir"),
                    "--externalize-params", "--num-elements-threshold=32",
                    "--params-scope=model", "--save-params-to", str(out / "params.irpa")],
                   check=True)
    subprocess.run([binaries.find_tool("iree-compile"), *target, str(out / "model.mlir"), "-o",
                    str(out / f"{FUNCTION}.vmfb")], check=True)
    flags = [f"--module={out / f'{FUNCTION}.vmfb'}", f"--function={FUNCTION}",
             f"--parameters=model={out / 'params.irpa'}"]
    flags += [f"--input=@{out / f'input_{k}.npy'}" for k in range(len(inputs))]
    print(" ".join(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
