#!/usr/bin/env bash
# C++ clients of libtvm_ffi.so on the official library and on pactum's:
# - apache-tvm 0.27 (the TVM compiler), crates/pactum-capi/tests/tvm_clients/tvm_smoke.py:
#   import, TE vector add and matmul built for llvm and run, export_library + load_module,
#   Relax nn models on the VM (also compiled to native code, exported and loaded), a TIR
#   call_packed from JIT code; and tvm-ffi-orcjit 0.1.3 (a C object file and a C++ object file
#   with typed exports, loaded and called);
# - jax-tvm-ffi 0.1.3 (with jax 0.10.2 on CPU), jax_smoke.py: a C++ kernel of a loaded module
#   and a Python function as JAX FFI targets under jax.jit.
#
#   scripts/tvm_clients.sh [VENV]     (default VENV: /tmp/pactum-tvm-venv)
#
# scripts/test.sh runs it with VENV=.venv-tvm (gitignored), where it installs the clients once:
# apache-tvm about 350 MB, jax + jaxlib + scipy about 500 MB (a 150 MB download). xgrammar,
# which needs PyTorch (with CUDA, several GB from PyPI), runs from scripts/xgrammar_client.sh.
# Builds pactum's libtvm_ffi.so (debug) into $CARGO_TARGET_DIR (default: target/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-/tmp/pactum-tvm-venv}"
# shellcheck source=scripts/both_libraries.sh
. "$root/scripts/both_libraries.sh"
prepare_client_venv "$venv" apache-tvm==0.27.0.post1 apache-tvm-ffi-orcjit==0.1.3 \
  jax-tvm-ffi==0.1.3 jax==0.10.2 jaxlib==0.10.2

status=0
clients="$root/crates/pactum-capi/tests/tvm_clients"
on_both_libraries "$venv" "$clients/tvm_smoke.py"
on_both_libraries "$venv" "$clients/jax_smoke.py"
exit $status
