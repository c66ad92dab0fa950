#!/usr/bin/env bash
# Runs every pactum test on a fresh machine: installs what the tests need (C/C++ compilers,
# Debian's MLIR 22 and LLVM 22 tools, valgrind, the Vulkan loader and lavapipe, the pinned peer
# packages in .venv), then format
# and lint checks, the Rust tests (which run the C/C++ conformance suite against the official
# libtvm_ffi.so and pactum's, and lower and call the MLIR test modules), the Python package,
# the ONNX conformance slice (conformance/onnx/), and the docs.
#
# Environment: PACTUM_SKIP_LINT=1 skips fmt/clippy/doc (for quick local runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf '\n==> %s\n' "$*"; }

say "system tools"
missing=()
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3 python3-venv)
# MLIR 22 lowers the memref tests (crates/pactum-mlir/tests/mlir); Debian's default llc is too old.
mlir_bin="${PACTUM_MLIR_BIN:-/usr/lib/llvm-22/bin}"
[ -x "$mlir_bin/mlir-opt" ] && [ -x "$mlir_bin/mlir-translate" ] || missing+=(mlir-22-tools)
[ -x "$mlir_bin/llc" ] || missing+=(llvm-22)
# valgrind memchecks pactum on a few ONNX conformance cases (conformance/onnx/).
command -v valgrind >/dev/null || missing+=(valgrind)
# The Vulkan device's tests run on lavapipe (Mesa's CPU Vulkan driver) through the loader.
{ /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null || true; } | grep -q 'libvulkan\.so\.1' \
  || missing+=(libvulkan1)
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || missing+=(mesa-vulkan-drivers)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

say "peer packages (.venv, pinned in scripts/requirements-peer.txt)"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-peer.txt
.venv/bin/python -c 'import tvm_ffi, numpy; print("apache-tvm-ffi", tvm_ffi.__version__, "| numpy", numpy.__version__)'
.venv/bin/python -c 'from importlib.metadata import version as v; print("onnx", v("onnx"), "| iree-base-compiler", v("iree-base-compiler"))'
export PACTUM_TVM_FFI_CONFIG="$PWD/.venv/bin/tvm-ffi-config"
say "the official apache-tvm-ffi test suite (pinned sdist, .peer/tvm-ffi-tests)"
scripts/fetch_peer_tests.sh

if [ "${PACTUM_SKIP_LINT:-0}" != 1 ]; then
  say "cargo fmt --check"
  cargo fmt --all -- --check
  say "cargo clippy -D warnings"
  cargo clippy --workspace --all-targets --quiet -- -D warnings
  say "no import rings inside any crate (scripts/import_rings.py)"
  for src in crates/*/src examples/*/src; do
    python3 scripts/import_rings.py "$src" >/dev/null || python3 scripts/import_rings.py "$src"
  done
fi

say "pactum-iree builds by parts (features), and its codecs alone pull in no VM, HAL or ELF reader"
for features in "" structured vm hal check llvm-cpu module vulkan; do
  cargo clippy -q -p pactum-iree --no-default-features --features "$features" -- -D warnings
done
cargo clippy -q -p pactum-capi --no-default-features -- -D warnings
codec_deps="$(cargo tree -q -p pactum-iree --no-default-features -e normal --prefix none)"
if grep -E '^(object|pactum-sys|pactum) ' <<<"$codec_deps"; then
  echo "pactum-iree without features depends on the crates above" >&2
  exit 1
fi

say "cargo test"
cargo test --workspace

say "end-to-end conformance (conformance/e2e/run.py): generated StableHLO, TOSA and linalg test programs, compiled by the pinned iree-compile for llvm-cpu, vmvx, vmvx with microkernels and vulkan (lavapipe); pactum test against IREE's runtime, function by function"
cargo build -q -p pactum-cli
.venv/bin/python conformance/e2e/run.py

say "a module library carries no runtime (nm of examples/kernels built on its own)"
# `cargo test` above built the example with its tests' features (pactum's runtime included);
# built alone, as a user builds a module library, it must hold none of pactum-runtime's code.
cargo build -q -p pactum-example-kernels
if nm -C --defined-only target/debug/libpactum_example_kernels.so | grep -q 'pactum_runtime::'; then
  echo "target/debug/libpactum_example_kernels.so defines pactum_runtime symbols:" >&2
  nm -C --defined-only target/debug/libpactum_example_kernels.so | grep 'pactum_runtime::' | head >&2
  exit 1
fi

say "python package (python/): pip install ./python into .venv, then its pytest suite"
# setuptools-rust builds crates/pactum-python (release) in this workspace's target directory.
.venv/bin/python -m pip install -q --disable-pip-version-check ./python
.venv/bin/python -m pytest -q python/tests

say "C++ clients of libtvm_ffi.so: apache-tvm 0.27 (TE, TIR, Relax), tvm-ffi-orcjit 0.1.3 and jax-tvm-ffi 0.1.3, on the official library and on pactum's (scripts/tvm_clients.sh, peers pinned there, in .venv-tvm)"
scripts/tvm_clients.sh "$PWD/.venv-tvm"

say "models with parameter archives (conformance/models/): ONNX MLP, CNN, ResNet, transformer and GPT decode step, weights in .irpa/.safetensors/.gguf, on llvm-cpu, vmvx and vulkan (lavapipe); pactum run vs iree-run-module and pactum.iree vs iree.runtime"
cargo build -q -p pactum-cli
.venv/bin/python -m pytest -q conformance/models
.venv/bin/python conformance/models/run.py --jobs "$(nproc)"

say "Vulkan (conformance/vulkan/): 28 cases (elementwise, reductions, matmul, convolution, attention, dynamic shapes, barriers, fills and copies, async fences, parameters, baked constants) compiled for vulkan; pactum run/call --device vulkan vs iree-run-module --device=vulkan on lavapipe"
.venv/bin/python -m pytest -q conformance/vulkan
.venv/bin/python conformance/vulkan/run.py --jobs "$(nproc)"
# Again with pactum's device forced through the paths a discrete GPU needs (lavapipe's one
# memory type is device-local, host-visible and coherent): staging buffers, then flushes.
.venv/bin/python conformance/vulkan/run.py --jobs "$(nproc)" --memory device-local-only
.venv/bin/python conformance/vulkan/run.py --jobs "$(nproc)" --memory non-coherent

say "ONNX conformance slice: onnx's node tests, compiled by iree-compile, run by iree-run-module and pactum"
# A deterministic slice of the corpus (conformance/onnx/slice.txt; the whole corpus is
# `conformance/onnx/corpus.py` without --slice, docs/CONFORMANCE.md). Compiled cases are cached
# in target/onnx-conformance. Fails when pactum differs from IREE outside
# conformance/onnx/known_differences.txt, or a listed difference is gone.
cargo build -q -p pactum-cli
.venv/bin/python -m pytest -q conformance/onnx
.venv/bin/python conformance/onnx/corpus.py --slice --jobs "$(nproc)"

if [ "${PACTUM_SKIP_LINT:-0}" != 1 ]; then
  say "cargo doc"
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
fi

if [ "${PACTUM_SKIP_FUZZ:-0}" != 1 ]; then
  say "fuzz smoke (every target, short runs)"
  scripts/fuzz_smoke.sh "${PACTUM_FUZZ_SECONDS:-10}"
fi

say "all tests passed"
