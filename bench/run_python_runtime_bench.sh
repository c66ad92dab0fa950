#!/usr/bin/env bash
# The official tvm_ffi Python package on its own libtvm_ffi.so against pactum's (release
# build): call overhead and runtime-heavy operations, one child process per library and round,
# alternating (issue 15).
#
# usage: bench/run_python_runtime_bench.sh [NUMBER=100000] [REPEAT=7]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONFIG="${PACTUM_TVM_FFI_CONFIG:-$PWD/.venv/bin/tvm-ffi-config}"
PYTHON="${PACTUM_PYTHON:-$PWD/.venv/bin/python}"
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -q -p pactum-capi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# The installed wheel: the package dir and its .dist-info (the package finds its library
# through the RECORD, relative to the .dist-info it imports).
{ read -r PACKAGE; read -r DIST_INFO; } < <(env -u PYTHONPATH "$PYTHON" -c \
  'import importlib.util as u, importlib.metadata as m
print(list(u.find_spec("tvm_ffi").submodule_search_locations)[0])
print(m.distribution("apache-tvm-ffi")._path)')
OFFICIAL_LIB="$PACKAGE/lib/libtvm_ffi.so"
mkdir "$WORK/pactum"
cp -r "$PACKAGE" "$WORK/pactum/tvm_ffi"
cp -r "$DIST_INFO" "$WORK/pactum/"
cp "$TARGET/release/libtvm_ffi.so" "$WORK/pactum/tvm_ffi/lib/libtvm_ffi.so"
# One C module for both: it needs libtvm_ffi.so by SONAME, and is loaded after `import tvm_ffi`,
# so it binds to whichever library the process already has (each child checks /proc/self/maps).
gcc -O2 -std=c11 -shared -fPIC -fvisibility=hidden bench/c/bench_module.c -I"$("$CONFIG" --includedir)" \
  -L"$("$CONFIG" --libdir)" -ltvm_ffi -o "$WORK/bench_module.so"
if [ "${PACTUM_BENCH_MODE:-drive}" = count ]; then  # bench/count_python_runtime_instructions.sh
  env -u PYTHONPATH "$PYTHON" bench/python_runtime_bench.py count "$OFFICIAL_LIB" "$WORK/pactum" \
    "$WORK/bench_module.so" "$1" "${2:-}"
  exit
fi
env -u PYTHONPATH "$PYTHON" bench/python_runtime_bench.py drive "$OFFICIAL_LIB" "$WORK/pactum" \
  "$WORK/bench_module.so" "${1:-100000}" "${2:-7}"
