#!/usr/bin/env bash
# Runs the official-package suite (crates/pactum-capi/tests/python_official) on one library,
# for quick iteration; `cargo test -p pactum-capi --test all python_official::` runs it on both.
#   scripts/official_suite.sh [official|pactum] [pytest args...]
# Builds pactum's libtvm_ffi.so (debug) into $CARGO_TARGET_DIR (default: target/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="${1:-pactum}"
shift || true
python="$root/.venv/bin/python"
suite="$root/crates/pactum-capi/tests/python_official"
package="$("$python" -c 'import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))')"
if [ "$lib" = official ]; then
  cd "$suite"
  PACTUM_PY_LIB=official PACTUM_EXPECT_LIB="$package/lib/libtvm_ffi.so" PYTHONDONTWRITEBYTECODE=1 \
    exec "$python" -m pytest -q -rxXs -p no:cacheprovider "$suite" "$@"
fi
cargo build -q -p pactum-capi --manifest-path "$root/Cargo.toml"
target="${CARGO_TARGET_DIR:-$root/target}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r "$package" "$scratch/tvm_ffi"
cp -r "$package"/../apache_tvm_ffi-*.dist-info "$scratch/"
cp "$target/debug/libtvm_ffi.so" "$scratch/tvm_ffi/lib/libtvm_ffi.so"
cd "$suite"
PACTUM_PY_LIB=pactum PACTUM_EXPECT_LIB="$scratch/tvm_ffi/lib/libtvm_ffi.so" PYTHONPATH="$scratch" \
  PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -rxXs -p no:cacheprovider "$suite" "$@"
