#!/usr/bin/env bash
# README.md's "Deploying a model", end to end: an ONNX model -> iree-import-onnx (weights
# externalized to an .irpa archive) -> iree-compile -> run by iree-run-module, then by pactum
# from the CLI, Rust and Python, each compared with iree-run-module's result.
#
#   examples/deploy/deploy.sh OUT_DIR
#
# Uses the pinned IREE tools and onnx in the repository's .venv (scripts/test.sh makes it;
# PYTHON overrides the interpreter, whose bin/ holds the tools) and the pactum CLI at
# target/debug/pactum (PACTUM overrides; `cargo build -p pactum-cli`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: deploy.sh OUT_DIR}
mkdir -p "$out"
py=${PYTHON:-$repo/.venv/bin/python}
bin=$(dirname "$py")
pactum=${PACTUM:-$repo/target/debug/pactum}

# 1. The model: a small ONNX MLP, an input batch, NumPy's output for it.
"$py" "$here/make_model.py" "$out"

# 2. Import with the weights as named parameters of scope "model", saved to an archive.
"$bin/iree-import-onnx" "$out/mlp.onnx" --externalize-params --num-elements-threshold=1 \
  --params-scope=model --save-params-to="$out/mlp.irpa" -o "$out/mlp.mlir"

# 3. Compile: the module holds code only; it loads its weights from scope "model".
"$bin/iree-compile" "$out/mlp.mlir" --iree-hal-target-backends=llvm-cpu \
  --iree-llvmcpu-target-cpu=generic -o "$out/mlp.vmfb"

# 4. IREE's runner: the reference.
run_args=(--module="$out/mlp.vmfb" --parameters=model="$out/mlp.irpa" --device=local-task
  --function=mlp --input=@"$out/input.npy")
"$bin/iree-run-module" "${run_args[@]}" > "$out/iree.txt"
"$bin/iree-run-module" "${run_args[@]}" --output=@"$out/iree.npy" > /dev/null

# 5. pactum's CLI takes the same flags and prints the same text.
"$pactum" run "${run_args[@]}" > "$out/pactum.txt"
diff -u "$out/iree.txt" "$out/pactum.txt"
"$pactum" run "${run_args[@]}" --output=@"$out/cli.npy" > /dev/null
echo "cli: pactum run prints what iree-run-module prints"

# 6. Rust (examples/deploy/src/main.rs): IreeModule::builder().parameters("model", ...).
cargo run -q --manifest-path "$repo/Cargo.toml" -p pactum-example-deploy -- \
  "$out/mlp.vmfb" "$out/mlp.irpa" mlp "$out/input.npy" "$out/rust.npy"

# 7. Python (examples/deploy/run.py): pactum.iree.load(..., parameters={"model": ...}).
"$py" "$here/run.py" "$out"

# Every pactum result equals iree-run-module's, which is NumPy's up to rounding.
"$py" - "$out" <<'PY'
import pathlib, sys
import numpy as np
out = pathlib.Path(sys.argv[1])
iree = np.load(out / "iree.npy")
for name in ["cli", "rust", "python"]:
    assert np.array_equal(np.load(out / f"{name}.npy"), iree), f"{name}.npy differs from iree-run-module's"
assert np.allclose(iree, np.load(out / "expected.npy"), atol=1e-5), "iree-run-module differs from NumPy"
print("deploy: CLI, Rust and Python results equal iree-run-module's")
PY
