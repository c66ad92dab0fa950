#!/usr/bin/env bash
# A CPU subset of apache-tvm's own Python tests (issue 24, item 3), run with pytest on the
# official libtvm_ffi.so and on pactum's: prints per-library counts (passed / failed / skipped /
# errors) and every test whose outcome differs between the two. Exit status 1 when any differs.
#
#   scripts/tvm_test_subset.sh [VENV]     (default VENV: /tmp/pactum-tvm-venv)
#
# Too long for CI (about 10 minutes per library on 2 cores): run by hand, counts go in the note
# (docs/TESTING.md). The venv is the one scripts/tvm_clients.sh installs (apache-tvm pinned
# there), plus pytest from scripts/requirements-peer.txt. pactum's library is swapped in as
# scripts/tvm_clients.sh does: a copy of the tvm_ffi package put first on PYTHONPATH, so the
# venv stays official. pactum's library: $PACTUM_LIB, else the debug build in
# $CARGO_TARGET_DIR (default: target/), built here.
#
# The tests are not in the apache-tvm wheel and PyPI has no sdist of 0.27.0.post1, so they come
# from a git repository of apache/tvm at run time, unpacked into a scratch directory (never
# committed):
#   TVM_TESTS_SRC  a local git directory or a URL (default https://github.com/apache/tvm.git)
#   TVM_TESTS_REV  the revision (default v0.27.0, the release the pinned wheel is a post of)
# Tests written for a different revision than the wheel fail alike on both libraries; only the
# differences between the libraries are the verdict.
#
# TVM_TESTS_OUT: a directory that keeps each library's pytest log and outcome file (default: a
# scratch directory); with TVM_TESTS_RESUME=1 a run continues the outcome files found there, and
# TVM_TESTS_LIBRARIES="official" (or "pactum") runs one library only (two such runs can share
# TVM_TESTS_OUT, in parallel; the last one compares).
# The subset (TVM_TESTS_SUBSET overrides, paths under tests/python): the minimal all-platform
# tests, runtime, ir, te, tirx-base, arith, target, the Relax VM and tvm.relax.frontend.nn tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-/tmp/pactum-tvm-venv}"
python_bin="${PYTHON:-python3}"
src="${TVM_TESTS_SRC:-https://github.com/apache/tvm.git}"
rev="${TVM_TESTS_REV:-v0.27.0}"
subset="${TVM_TESTS_SUBSET:-all-platform-minimal-test runtime ir te tirx-base arith target
  relax/test_vm_*.py relax/test_frontend_nn_*.py}"

if [ ! -x "$venv/bin/python" ]; then
  "$python_bin" -m venv "$venv"
fi
"$venv/bin/pip" install -q apache-tvm==0.27.0.post1 \
  "$(grep '^apache-tvm-ffi==' "$root/scripts/requirements-peer.txt")" \
  "$(grep '^numpy==' "$root/scripts/requirements-peer.txt")" \
  "$(grep '^pytest==' "$root/scripts/requirements-peer.txt")"

if [ -z "${PACTUM_LIB:-}" ]; then
  export PACTUM_TVM_FFI_CONFIG="${PACTUM_TVM_FFI_CONFIG:-$venv/bin/tvm-ffi-config}"
  cargo build -q -p pactum-capi --manifest-path "$root/Cargo.toml"
  PACTUM_LIB="${CARGO_TARGET_DIR:-$root/target}/debug/libtvm_ffi.so"
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# The wheel names the commit it was built from (an abbreviated hash, e.g. g7b5acb32b): the
# revision whose tests fit it best.
wheel_commit="$("$venv/bin/python" -c 'import tvm._version as v; print(v.commit_id)' 2>/dev/null || true)"
echo "== apache/tvm tests/python at $rev from $src (the apache-tvm wheel: commit ${wheel_commit:-unknown})"
if [ -d "$src" ]; then
  git --git-dir="$(git -C "$src" rev-parse --absolute-git-dir)" archive "$rev" tests/python |
    tar -x -C "$scratch"
else
  git init -q "$scratch/repo"
  git -C "$scratch/repo" fetch -q --depth 1 "$src" "$rev"
  git -C "$scratch/repo" archive FETCH_HEAD tests/python | tar -x -C "$scratch"
  rm -rf "$scratch/repo"
fi

package="$("$venv/bin/python" -c 'import os, tvm_ffi; print(os.path.dirname(tvm_ffi.__file__))')"
mkdir "$scratch/swapped"
cp -r "$package" "$scratch/swapped/tvm_ffi"
cp -r "$package"/../apache_tvm_ffi-*.dist-info "$scratch/swapped/"
cp "$PACTUM_LIB" "$scratch/swapped/tvm_ffi/lib/libtvm_ffi.so"

# shellcheck disable=SC2086  # the subset is a list of globs
targets=$(cd "$scratch/tests/python" && ls -d $subset 2>/dev/null || true)
if [ -z "$targets" ]; then
  echo "no test of the subset exists at $rev" >&2
  exit 2
fi
plugin_dir="$root/scripts/tvm_test_subset"
out="${TVM_TESTS_OUT:-$scratch}"
mkdir -p "$out"
run_tests() { # NAME EXPECTED_LIB [PYTHONPATH]
  local name="$1" expected="$2" path="${3:+$3:}$plugin_dir" outcomes="$out/$1.outcomes"
  echo "== $name libtvm_ffi.so"
  # The library the process maps is checked first, so a broken swap cannot pass for a result.
  PYTHONPATH="$path" "$venv/bin/python" - "$expected" <<'EOF'
import os, sys
import tvm  # noqa: F401  (loads libtvm_ffi.so through tvm_ffi)
with open("/proc/self/maps") as maps:
    mapped = sorted({l.split()[-1] for l in maps if l.rstrip().endswith("libtvm_ffi.so")})
if mapped != [os.path.realpath(sys.argv[1])]:
    sys.exit(f"wrong library mapped: {mapped}, expected {sys.argv[1]}")
EOF
  if [ "${TVM_TESTS_RESUME:-0}" != 1 ]; then
    : >"$outcomes"
    rm -f "$outcomes.collected"
  fi
  # A test that kills the process (both libraries segfault in several) is recorded as crashed;
  # pytest then finishes that test's file on its own, then runs the files still not done (one
  # collection of the rest per crashing file, not per crash).
  local attempt rc crashed files="$targets" remaining
  for attempt in $(seq 1 100); do
    rc=0
    # shellcheck disable=SC2086
    (cd "$scratch/tests/python" && PYTHONPATH="$path" PYTHONDONTWRITEBYTECODE=1 \
      PACTUM_OUTCOMES="$outcomes" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
      -p pactum_outcomes --continue-on-collection-errors $files \
      >>"$out/$name.log" 2>&1) || rc=$?
    # pytest's own exit codes are 0-5; anything else is a death by signal.
    if [ "$rc" -gt 5 ]; then
      crashed="$(grep -P '\tstarted\t' "$outcomes" | tail -n 1 | cut -f1)"
      printf '%s\tcrashed\tthe process died (status %s) in this test\n' "$crashed" "$rc" >>"$outcomes"
      echo "   pytest died (status $rc) in $crashed; running the tests not yet done"
    fi
    remaining="$("$venv/bin/python" "$plugin_dir/pactum_outcomes.py" --files-not-done "$outcomes")"
    if [ "$rc" -gt 5 ] && grep -qxF "${crashed%%::*}" <<<"$remaining"; then
      files="${crashed%%::*}"
      continue
    fi
    if [ -z "$remaining" ] || [ "$files" = "$remaining" ]; then break; fi
    files="$remaining"
  done
}
case " ${TVM_TESTS_LIBRARIES:-official pactum} " in *" official "*)
  run_tests official "$package/lib/libtvm_ffi.so" ;;
esac
case " ${TVM_TESTS_LIBRARIES:-official pactum} " in *" pactum "*)
  run_tests pactum "$scratch/swapped/tvm_ffi/lib/libtvm_ffi.so" "$scratch/swapped" ;;
esac

if [ -f "$out/official.outcomes" ] && [ -f "$out/pactum.outcomes" ]; then
  "$venv/bin/python" "$plugin_dir/compare.py" "$out/official.outcomes" "$out/pactum.outcomes"
fi
