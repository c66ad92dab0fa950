#!/usr/bin/env bash
# Build and run the pactum C/C++ conformance suite against one libtvm_ffi.so.
#
# usage: run_c_suite.sh LIBDIR [OUTDIR]
#
#   LIBDIR  directory holding the libtvm_ffi.so under test (the official
#           wheel's tvm_ffi/lib, or pactum's target/debug)
#   OUTDIR  where <name>.out files are written (default: /tmp/pactum-c-suite/out)
#
# Headers always come from the official wheel (tvm-ffi-config --includedir).
# Environment knobs:
#   TVM_FFI_CONFIG  path to tvm-ffi-config (default: <repo>/.venv/bin/tvm-ffi-config, then PATH)
#   BUILD_DIR       where binaries and stderr logs go (default: a fresh temp dir, removed
#                   at exit unless KEEP_BUILD=1 or a program failed)
#   VALGRIND=1      run every program under valgrind memcheck (--error-exitcode=1)
#   STRICT_SINGLE_LIB=1  fail (instead of warning) when a program maps a second
#                   libtvm_ffi.so from outside LIBDIR (e.g. one dlopen'ed by the library)
#   CC / CXX        compilers (default gcc / g++)
#
# Compare two libraries by running the script twice and diffing the OUTDIRs:
#   run_c_suite.sh /path/official/lib /tmp/a && run_c_suite.sh target/debug /tmp/b && diff -r /tmp/a /tmp/b
set -u -o pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 LIBDIR [OUTDIR]" >&2
  exit 2
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
LIBDIR="$(cd "$1" 2>/dev/null && pwd)" || { echo "error: LIBDIR '$1' not found" >&2; exit 2; }
OUTDIR="${2:-/tmp/pactum-c-suite/out}"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"

if [ ! -e "$LIBDIR/libtvm_ffi.so" ]; then
  echo "error: $LIBDIR/libtvm_ffi.so does not exist" >&2
  exit 2
fi

CONFIG="${TVM_FFI_CONFIG:-}"
if [ -z "$CONFIG" ]; then
  if [ -x "$REPO/.venv/bin/tvm-ffi-config" ]; then
    CONFIG="$REPO/.venv/bin/tvm-ffi-config"
  else
    CONFIG="$(command -v tvm-ffi-config || true)"
  fi
fi
if [ -z "$CONFIG" ]; then
  echo "error: tvm-ffi-config not found (set TVM_FFI_CONFIG)" >&2
  exit 2
fi
INCDIR="$("$CONFIG" --includedir)" || { echo "error: $CONFIG --includedir failed" >&2; exit 2; }

mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
rm -f "$OUTDIR"/*.out

if [ -n "${BUILD_DIR:-}" ]; then
  BUILD="$BUILD_DIR"
  mkdir -p "$BUILD"
  KEEP=1
else
  BUILD="$(mktemp -d "${TMPDIR:-/tmp}/pactum-c-suite.XXXXXX")"
  KEEP="${KEEP_BUILD:-0}"
fi
BUILD="$(cd "$BUILD" && pwd)"

# Programs run with a clean loader environment so that only the rpath decides
# which libtvm_ffi.so is used.
unset LD_LIBRARY_PATH LD_PRELOAD

CFLAGS_COMMON=(-std=c11 -O1 -g -Wall -Wextra -Werror -pthread -I"$INCDIR")
CXXFLAGS_COMMON=(-std=c++17 -O1 -g -Wall -Wextra -Werror -pthread -I"$INCDIR")
LINK_EXE=(-L"$LIBDIR" -Wl,--no-as-needed -ltvm_ffi -Wl,-rpath,"$LIBDIR" -pthread)
LINK_MOD=(-shared -fPIC -fvisibility=hidden -L"$LIBDIR" -Wl,--no-as-needed -ltvm_ffi)

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

compile() { # label, command...
  local label="$1"
  shift
  if ! "$@" >"$BUILD/$label.build.log" 2>&1; then
    fail "compile $label"
    cat "$BUILD/$label.build.log" >&2
    return 1
  fi
  return 0
}

echo "== pactum C suite: LIBDIR=$LIBDIR OUTDIR=$OUTDIR BUILD=$BUILD"

# ----------------------------------------------------------------- modules
compile sample_module "$CC" "${CFLAGS_COMMON[@]}" "${LINK_MOD[@]}" \
  "$HERE/c/modules/sample_module.c" -o "$BUILD/sample_module.so"
compile add_one_cpu "$CC" "${CFLAGS_COMMON[@]}" "${LINK_MOD[@]}" \
  "$HERE/c/stable_abi/add_one_cpu.c" -o "$BUILD/add_one_cpu.so"

# ---------------------------------------------------------------- programs
# each entry: output-name|binary|arguments...
PROGRAMS=()
for src in "$HERE"/c/conformance/*.c; do
  name="$(basename "$src" .c)"
  if compile "$name" "$CC" "${CFLAGS_COMMON[@]}" "$src" -o "$BUILD/$name" "${LINK_EXE[@]}"; then
    case "$name" in
      module) PROGRAMS+=("$name|$BUILD/$name|$BUILD/sample_module.so") ;;
      *) PROGRAMS+=("$name|$BUILD/$name") ;;
    esac
  fi
done

if compile stable_abi_load "$CC" "${CFLAGS_COMMON[@]}" -fvisibility=hidden \
  "$HERE/c/stable_abi/load.c" -o "$BUILD/stable_abi_load" "${LINK_EXE[@]}"; then
  PROGRAMS+=("stable_abi_load|$BUILD/stable_abi_load|$BUILD/add_one_cpu.so")
fi

nm -D --defined-only "$LIBDIR/libtvm_ffi.so" | awk '{print $NF}' | sort -u >"$BUILD/lib.defined"
for src in "$HERE"/cpp/*.cc; do
  name="cpp_$(basename "$src" .cc)"
  if compile "$name" "$CXX" "${CXXFLAGS_COMMON[@]}" "$src" -o "$BUILD/$name" "${LINK_EXE[@]}"; then
    # These programs use the C API and the header-only C++ classes: they must
    # not import any non-C symbol that libtvm_ffi.so defines (tests/cxx_abi
    # covers the library's C++ symbols).
    nm -D --undefined-only "$BUILD/$name" | awk '{print $NF}' | sed 's/@.*//' | sort -u \
      >"$BUILD/$name.undefined"
    bad="$(comm -12 "$BUILD/lib.defined" "$BUILD/$name.undefined" | grep -v '^TVMFFI' || true)"
    if [ -n "$bad" ]; then
      fail "$name imports non-C symbols that libtvm_ffi.so defines: $bad"
    fi
    PROGRAMS+=("$name|$BUILD/$name")
  fi
done

# --------------------------------------------------------------------- run
for entry in "${PROGRAMS[@]}"; do
  IFS='|' read -r -a parts <<<"$entry"
  name="${parts[0]}"
  exe="${parts[1]}"
  args=("${parts[@]:2}")

  # make sure the loader picks the library under test
  resolved="$(LD_TRACE_LOADED_OBJECTS=1 "$exe" 2>/dev/null | awk '/libtvm_ffi\.so/ {print $3; exit}')"
  resolved_dir="$(cd "$(dirname "$resolved")" 2>/dev/null && pwd || echo "?")"
  if [ "$resolved_dir" != "$LIBDIR" ]; then
    fail "$name resolves libtvm_ffi.so to '$resolved', not $LIBDIR"
    continue
  fi

  runner=()
  if [ "${VALGRIND:-0}" = "1" ]; then
    runner=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
      --show-leak-kinds=definite --track-origins=yes --quiet)
    timeout 600 "${runner[@]}" "$exe" "${args[@]}" >"$OUTDIR/$name.out" 2>"$BUILD/$name.stderr"
    rc=$?
  else
    # record every object the loader opens, to spot a second libtvm_ffi.so
    rm -f "$BUILD/$name.lddebug".*
    LD_DEBUG=files LD_DEBUG_OUTPUT="$BUILD/$name.lddebug" \
      timeout 300 "$exe" "${args[@]}" >"$OUTDIR/$name.out" 2>"$BUILD/$name.stderr"
    rc=$?
    others="$(cat "$BUILD/$name.lddebug".* 2>/dev/null | grep -o 'opening file=[^ ]*libtvm_ffi[^ ]*\.so' |
      sed 's/^opening file=//' | while read -r f; do
        d="$(cd "$(dirname "$f")" 2>/dev/null && pwd)"
        [ "$d" = "$LIBDIR" ] || echo "$f"
      done | sort -u)"
    if [ -n "$others" ]; then
      if [ "${STRICT_SINGLE_LIB:-0}" = "1" ]; then
        fail "$name also loaded: $others"
      else
        echo "warn $name also loaded another libtvm_ffi: $others" >&2
      fi
    fi
  fi
  if [ $rc -ne 0 ]; then
    fail "$name exited with $rc (stderr: $BUILD/$name.stderr)"
    tail -n 40 "$BUILD/$name.stderr" >&2
    grep UNEXPECTED "$OUTDIR/$name.out" >&2 || true
    KEEP=1
  else
    echo "ok   $name ($(wc -l <"$OUTDIR/$name.out") lines)"
  fi
done

if [ "$KEEP" != "1" ]; then
  rm -rf "$BUILD"
fi

if [ $failures -ne 0 ]; then
  echo "== $failures failure(s)" >&2
  exit 1
fi
echo "== all programs passed; outputs in $OUTDIR"
exit 0
