# Sourced by the client scripts (tvm_clients.sh, xgrammar_client.sh, tilelang_client.sh), after
# they set `root`.
#
#   prepare_client_venv VENV PACKAGE...  -> makes VENV when missing, installs the packages with the
#                                           pinned apache-tvm-ffi and NumPy, builds pactum's library
#   prepare_older_client_venv VENV PACKAGE...
#                                        -> the same, but pip resolves the packages' own
#                                           apache-tvm-ffi pin (an older release: a client of the
#                                           older ABI); pactum's library is still built from the
#                                           pinned release's headers (the repository's .venv)
#
# and runs a Python program
# with a venv's interpreter on the official libtvm_ffi.so (the venv's tvm_ffi package) and on
# pactum's (a copy of that package, put first on PYTHONPATH, with pactum's library swapped in,
# as scripts/official_suite.sh does), so the venv itself stays official.
#
#   on_both_libraries VENV PROGRAM.py     -> sets status=1 when the program fails on either
#
# Expects pactum's debug library built in ${CARGO_TARGET_DIR:-$root/target}; the programs check
# the library they mapped against PACTUM_EXPECT_LIB.
on_both_libraries() {
  local venv="$1" program="$2"
  local target="${CARGO_TARGET_DIR:-$root/target}"
  local package scratch
  package="$("$venv/bin/python" -c 'import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))')"
  echo "== $(basename "$program") on the official libtvm_ffi.so"
  PACTUM_EXPECT_LIB="$package/lib/libtvm_ffi.so" PYTHONDONTWRITEBYTECODE=1 \
    "$venv/bin/python" "$program" || status=1
  scratch="$(mktemp -d)"
  cp -r "$package" "$scratch/tvm_ffi"
  cp -r "$package"/../apache_tvm_ffi-*.dist-info "$scratch/"
  cp "$target/debug/libtvm_ffi.so" "$scratch/tvm_ffi/lib/libtvm_ffi.so"
  echo "== $(basename "$program") on pactum's libtvm_ffi.so"
  PACTUM_EXPECT_LIB="$scratch/tvm_ffi/lib/libtvm_ffi.so" PYTHONPATH="$scratch" \
    PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "$program" || status=1
  rm -rf "$scratch"
}

prepare_client_venv() {
  local venv="$1"
  shift
  if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
  fi
  "$venv/bin/pip" install -q "$@" \
    "$(grep '^apache-tvm-ffi==' "$root/scripts/requirements-peer.txt")" \
    "$(grep '^numpy==' "$root/scripts/requirements-peer.txt")"
  export PACTUM_TVM_FFI_CONFIG="${PACTUM_TVM_FFI_CONFIG:-$venv/bin/tvm-ffi-config}"
  cargo build -q -p pactum-capi --manifest-path "$root/Cargo.toml"
}

prepare_older_client_venv() {
  local venv="$1"
  shift
  if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
  fi
  "$venv/bin/pip" install -q "$@"
  # Not the venv's tvm-ffi-config: its headers are the older release's.
  export PACTUM_TVM_FFI_CONFIG="${PACTUM_TVM_FFI_CONFIG:-$root/.venv/bin/tvm-ffi-config}"
  cargo build -q -p pactum-capi --manifest-path "$root/Cargo.toml"
}
