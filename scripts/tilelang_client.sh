#!/usr/bin/env bash
# tilelang 0.1.15 (a tile-level kernel DSL with its own build of TVM) on the official library
# and on pactum's: crates/pactum-capi/tests/tvm_clients/tilelang_smoke.py (kernels built for
# target `c` and run: an elementwise add, a tiled matmul, an output tilelang allocates;
# checked with NumPy; and its C++ enum looked up by name).
#
#   scripts/tilelang_client.sh [VENV]     (default VENV: /tmp/pactum-tilelang-venv)
#
# tilelang pins apache-tvm-ffi<0.1.13, so this venv has pip's choice, 0.1.12, not the
# repository's pin: "the official library" here is 0.1.12's, and pactum's library (built for
# 0.1.15.post2's ABI) runs a client of the older ABI. Not part of scripts/test.sh: tilelang
# imports PyPI's PyTorch (at import, even for CPU kernels), which brings CUDA (measured: a
# 5.7 GB venv, 0.36 GB without torch and its nvidia-* and triton wheels; about 10.5 minutes to
# install on the shared 2-core build machine, 10 of them for PyTorch) — over the 2 GB and 3
# minutes a step of CI's test command may take. The runs themselves take under a minute. Builds pactum's libtvm_ffi.so (debug) into $CARGO_TARGET_DIR
# (default: target/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-/tmp/pactum-tilelang-venv}"
# shellcheck source=scripts/both_libraries.sh
. "$root/scripts/both_libraries.sh"
prepare_older_client_venv "$venv" tilelang==0.1.15

status=0
on_both_libraries "$venv" "$root/crates/pactum-capi/tests/tvm_clients/tilelang_smoke.py"
exit $status
