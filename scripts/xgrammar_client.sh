#!/usr/bin/env bash
# xgrammar 0.2.8 (grammar-constrained decoding, a client of libtvm_ffi.so's C ABI) on the
# official library and on pactum's: crates/pactum-capi/tests/tvm_clients/xgrammar_smoke.py (a
# JSON schema and an EBNF grammar compiled, the matcher run over token sequences, the
# next-token bitmask applied to logits).
#
#   scripts/xgrammar_client.sh [VENV]     (default VENV: /tmp/pactum-xgrammar-venv)
#
# Not part of scripts/test.sh: xgrammar imports PyTorch, and PyPI's Linux PyTorch wheels bring
# CUDA (measured: a 5.6 GB venv, torch 1.2 GB + nvidia 3.0 GB + triton 1.0 GB, about 9 minutes
# to install) — too much for CI's disk. Builds pactum's libtvm_ffi.so (debug) into
# $CARGO_TARGET_DIR (default: target/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-/tmp/pactum-xgrammar-venv}"
# shellcheck source=scripts/both_libraries.sh
. "$root/scripts/both_libraries.sh"
prepare_client_venv "$venv" xgrammar==0.2.8

status=0
on_both_libraries "$venv" "$root/crates/pactum-capi/tests/tvm_clients/xgrammar_smoke.py"
exit $status
