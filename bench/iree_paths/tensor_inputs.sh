#!/usr/bin/env bash
# bench/iree_paths: the tensor-input cases of issue 23 against the native IREE 3.13 tools, in
# the same run: mlp_args.mlir (an MLP whose 1.7 MB of weights are arguments) and axpy.mlir
# (a*x+y over 16M floats, x and y 64 MiB .npy files), compiled for llvm-cpu (host CPU).
#
#   bench/iree_paths/tensor_inputs.sh [PACTUM_BINARY] [RUNS]
#
# In process: `pactum bench` against `iree-benchmark-module` (the same flags), each printing
# Google Benchmark's median of 5 repetitions, alternated 3 times. Whole process: `pactum run`
# against `iree-run-module` with the inputs as `--input=@file.npy`, alternated (paired.py:
# medians of paired ratios). Both devices. The machine is shared: read the spread.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pactum=$(realpath "${1:-$root/target/release/pactum}")
runs=${2:-15}
tools=$(echo "$root"/.venv/lib/python3.*/site-packages/iree/_runtime_libs)
work=$(mktemp -d /tmp/pactum-tensor-inputs.XXXXXX)
trap 'rm -rf "$work"' EXIT
for case in mlp_args axpy; do
  "$root/.venv/bin/iree-compile" --iree-hal-target-device=local \
    --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host \
    "$root/bench/iree_paths/$case.mlir" -o "$work/$case.vmfb"
done
"$root/.venv/bin/python" - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(0)
for name, shape in [("x", (1, 784)), ("w1", (784, 512)), ("b1", (512,)), ("w2", (512, 512)),
                    ("b2", (512,)), ("w3", (512, 10)), ("b3", (10,))]:
    np.save(f"{d}/{name}.npy", (r.standard_normal(shape) * 0.05).astype(np.float32))
np.save(f"{d}/ax.npy", r.standard_normal(16777216).astype(np.float32))
np.save(f"{d}/ay.npy", r.standard_normal(16777216).astype(np.float32))
PY
mlp="--module=mlp_args.vmfb --function=mlp --input=@x.npy --input=@w1.npy --input=@b1.npy --input=@w2.npy --input=@b2.npy --input=@w3.npy --input=@b3.npy"
axpy="--module=axpy.vmfb --function=axpy --input=f32=2 --input=@ax.npy --input=@ay.npy"
median_of() { grep "_median" | awk '{print $2, $3}'; }
cd "$work"
for device in local-sync local-task; do
  for case in mlp axpy; do
    args=${!case}
    echo "== in process: $case on $device (median of 5 repetitions, 3 alternations)"
    for _ in 1 2 3; do
      printf '  iree   %s\n' "$("$tools/iree-benchmark-module" --device=$device $args --benchmark_repetitions=5 --benchmark_min_time=0.5s 2>/dev/null | median_of | head -1)"
      printf '  pactum %s\n' "$("$pactum" bench --device=$device $args --benchmark_repetitions=5 --benchmark_min_time=0.5s 2>/dev/null | median_of | head -1)"
    done
    echo "== whole process: $case on $device"
    python3 "$root/bench/iree_paths/paired.py" --runs "$runs" --cwd "$work" \
      --cmd iree "$tools/iree-run-module --device=$device $args" \
      --cmd pactum "$pactum run --device=$device $args"
  done
done
