#!/usr/bin/env bash
# apache-tvm 0.27 (the TVM compiler, a C++ client of libtvm_ffi.so) on the official library and
# on pactum's: crates/pactum-capi/tests/tvm_clients/tvm_smoke.py (import, TE vector add and
# matmul built for llvm and run, export_library + load_module, Relax nn models on the VM (also
# compiled to native code, exported and loaded), a TIR
# call_packed from JIT code) and tvm-ffi-orcjit 0.1.3 (a C object file loaded and called).
#
#   scripts/tvm_clients.sh [VENV]     (default VENV: /tmp/pactum-tvm-venv)
#
# scripts/test.sh runs it with VENV=.venv-tvm (gitignored), where it installs apache-tvm (about
# 350 MB) once. pactum's library is swapped into a copy of the tvm_ffi
# package put first on PYTHONPATH (as scripts/official_suite.sh does), so the venv stays
# official. Builds pactum's libtvm_ffi.so (debug) into $CARGO_TARGET_DIR (default: target/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-/tmp/pactum-tvm-venv}"
python_bin="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python_bin" -m venv "$venv"
fi
"$venv/bin/pip" install -q apache-tvm==0.27.0.post1 apache-tvm-ffi-orcjit==0.1.3 \
  "$(grep '^apache-tvm-ffi==' "$root/scripts/requirements-peer.txt")" \
  "$(grep '^numpy==' "$root/scripts/requirements-peer.txt")"
export PACTUM_TVM_FFI_CONFIG="${PACTUM_TVM_FFI_CONFIG:-$venv/bin/tvm-ffi-config}"
cargo build -q -p pactum-capi --manifest-path "$root/Cargo.toml"
target="${CARGO_TARGET_DIR:-$root/target}"
smoke="$root/crates/pactum-capi/tests/tvm_clients/tvm_smoke.py"
package="$("$venv/bin/python" -c 'import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))')"

status=0
echo "== official libtvm_ffi.so"
PACTUM_EXPECT_LIB="$package/lib/libtvm_ffi.so" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" "$smoke" || status=1

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r "$package" "$scratch/tvm_ffi"
cp -r "$package"/../apache_tvm_ffi-*.dist-info "$scratch/"
cp "$target/debug/libtvm_ffi.so" "$scratch/tvm_ffi/lib/libtvm_ffi.so"
echo "== pactum's libtvm_ffi.so"
PACTUM_EXPECT_LIB="$scratch/tvm_ffi/lib/libtvm_ffi.so" PYTHONPATH="$scratch" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" "$smoke" || status=1
exit $status
