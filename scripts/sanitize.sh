#!/usr/bin/env bash
# Memory-error, leak and data-race checks for pactum, beyond the tests of scripts/test.sh.
#
#   scripts/sanitize.sh                 every part below
#   scripts/sanitize.sh asan            AddressSanitizer + LeakSanitizer: the pactum crate's unit and
#                                       integration tests (MLIR calls, 8-thread stress), the C/C++
#                                       conformance suite against both libtvm_ffi.so, the kernels'
#                                       C and Rust hosts, the CLI tests
#   scripts/sanitize.sh tsan            ThreadSanitizer, std rebuilt with it (-Zbuild-std): the
#                                       8-thread tests (tests/all stress.rs: objects, errors, the
#                                       global registry, module loading, calls; MLIR calls)
#   scripts/sanitize.sh helgrind        valgrind helgrind on the 8-thread object test (no rebuild;
#                                       a second opinion, see "Why helgrind too" below)
#   scripts/sanitize.sh valgrind        valgrind memcheck: the kernels' Python host (CPython cannot
#                                       load ASan code), and the Rust tests that call code ASan does
#                                       not instrument (MLIR-compiled libraries, C test modules)
#
# Several part names may be given. Installs what it needs like scripts/test.sh (compilers, MLIR 22,
# valgrind, the pinned peers in .venv). Prints one line per suite and exits non-zero if any test
# failed or any tool reported anything that is not suppressed below with a reason.
#
# Builds: target/asan (ASan), target/tsan (TSan, with its own instrumented std), target/valgrind
# (plain debug build for valgrind; not target/debug, so concurrent `cargo test` runs do not
# invalidate it). Logs, reports, suppression files and compiler wrappers: target/sanitize. All
# builds use line-tables-only debug info and no incremental cache.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
HOST_TRIPLE=x86_64-unknown-linux-gnu
WORK="$ROOT/target/sanitize"

say() { printf '\n==> %s\n' "$*"; }

parts=()
for arg in "${@:-all}"; do
  case "$arg" in
    all) parts+=(asan tsan helgrind valgrind) ;;
    asan | tsan | helgrind | valgrind) parts+=("$arg") ;;
    -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown part '$arg' (asan, tsan, helgrind, valgrind, all)" >&2; exit 2 ;;
  esac
done

# ------------------------------------------------------------------------------------ setup
say "system tools"
missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v g++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3 python3-venv)
command -v valgrind >/dev/null || missing+=(valgrind)
mlir_bin="${PACTUM_MLIR_BIN:-/usr/lib/llvm-22/bin}"
[ -x "$mlir_bin/mlir-opt" ] && [ -x "$mlir_bin/mlir-translate" ] || missing+=(mlir-22-tools)
# llvm-22 also brings llvm-symbolizer, which ASan uses for readable stacks.
[ -x "$mlir_bin/llc" ] && [ -x "$mlir_bin/llvm-symbolizer" ] || missing+=(llvm-22)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
libasan="$(gcc -print-file-name=libasan.so)"
if [ "$libasan" = libasan.so ]; then
  echo "gcc has no libasan (install libasan8 / gcc's sanitizer runtime)" >&2
  exit 1
fi

say "peer packages (.venv, pinned in scripts/requirements-peer.txt)"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-peer.txt
export PACTUM_TVM_FFI_CONFIG="$ROOT/.venv/bin/tvm-ffi-config"

mkdir -p "$WORK/bin" "$WORK/logs" "$WORK/reports"

# One line per suite, printed again at the end.
SUMMARY=()
FAILED=0
record() { # part suite status tests errors leaks suppressed seconds [note]
  local line
  line="$(printf '%-8s %-34s %-4s %5s tests  %3s errors  %3s leaks/races  %4s suppressed  %5ss' \
    "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8")"
  [ -n "${9:-}" ] && line+="  ($9)"
  SUMMARY+=("$line")
  echo "$line"
  [ "$3" = ok ] || FAILED=1
}

# Sum of "N passed" / "N failed" over every libtest summary in a log.
count_tests() { # log -> "passed failed"
  awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i;
       if ($(i+1) ~ /^failed;/) f += $i } } END { printf "%d %d\n", p, f }' "$1"
}

# package/target=executable for each test target in a `cargo test --no-run --message-format=json`
# log (every crate's integration tests are one target named `all`, so the package tells them apart).
test_executables() { # json log
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        # Package ID spec: <source>#<name>@<version>, or <source>#<version> when the name is
        # the last path segment of the source.
        source, _, fragment = m["package_id"].partition("#")
        package = fragment.split("@")[0] if "@" in fragment else source.rstrip("/").split("/")[-1]
        print(package + "/" + m["target"]["name"] + "=" + m["executable"])' "$1"
}
find_bin() { # package/target, package/target=executable... -> executable
  local name="$1" b
  shift
  for b in "$@"; do [ "${b%%=*}" = "$name" ] && { echo "${b#*=}"; return; }; done
  echo "no test binary for $name" >&2
  return 1
}

# ------------------------------------------------------------------------------------- ASan
#
# Rust: -Zsanitizer=address through RUSTC_BOOTSTRAP=1 (no nightly here). The explicit --target
# keeps build scripts and proc macros uninstrumented. Only pactum's code and its dependencies are
# instrumented: std is precompiled without ASan, but every allocation (std's, C's, C++'s) goes
# through the ASan runtime's malloc/free/new/delete, so heap misuse of memory pactum touches and
# every leak are still seen.
#
# -Clink-arg=-Wl,--export-dynamic: rustc links the ASan runtime statically into executables only,
# and exports none of it. Instrumented shared libraries loaded at run time (the kernels library
# that rust_host and `pactum call` load, pactum's libtvm_ffi.so) reference __asan_* symbols, which
# must then resolve against the executable.
#
# C and C++: the conformance programs and the kernels' C host are compiled with gcc
# -fsanitize=address (wrappers below, passed as CC/CXX, which the tests honour). Their libasan.so
# also serves pactum's instrumented libtvm_ffi.so (same ASan ABI, v8). Shared C test modules are
# not instrumented: they are loaded into Rust test processes whose ASan runtime is static, where a
# second (gcc) runtime cannot be loaded. Both runs of the conformance suite and of the C host (the
# official library and pactum's) are sanitized.
asan_wrappers() {
  local tool
  for tool in gcc g++; do
    cat >"$WORK/bin/asan-$tool" <<EOF
#!/bin/sh
# $tool with AddressSanitizer for executables; shared modules stay uninstrumented (see sanitize.sh).
case " \$* " in *" -shared "*) exec $tool "\$@" ;; esac
exec $tool -fsanitize=address -fno-omit-frame-pointer "\$@"
EOF
    chmod +x "$WORK/bin/asan-$tool"
  done
}

# LeakSanitizer suppressions for the kernels suite, one file so each entry keeps its reason.
#
# 1. The official runtime dlclose()s a module library when its last Module reference goes, which
#    the C host's official-runtime build does at exit. The kernels library is Rust with pactum
#    inside; the heap blocks that only its statics point to (pactum's runtime binding, a leaked
#    Box<TVMFFICApi> of 400 B and its path; the export table's lazily rendered signature texts)
#    become unreachable once its pages are unmapped: 1067 bytes in 4 blocks, the same every run.
#    They are process-lifetime caches, not lost memory while the library is loaded: the same
#    program linked against pactum's libtvm_ffi.so (which never unloads libraries) runs through
#    this suite with no suppression and leaks nothing. The allocation stacks of these blocks are
#    unsymbolizable (their module is gone), so the entry matches the official library's frames
#    below them; malloc_context_size=100 keeps those frames in the stored stacks. The official
#    library is loaded only by that one program of the suite. (What this leaves open: a
#    pactum-built library leaks these caches each time a runtime unloads it.)
lsan_kernels_supp() {
  cat >"$WORK/lsan-kernels.supp" <<'EOF'
# Written by scripts/sanitize.sh, which documents each entry.
leak:/site-packages/tvm_ffi/lib/libtvm_ffi.so
EOF
}

# Counts ASan/LSan reports of one suite: "errors leaks suppressed_allocations".
asan_counts() { # report dir
  local dir="$1" errors=0 leaks=0 suppressed=0 f
  for f in "$dir"/asan.*; do
    [ -e "$f" ] || continue
    grep -q 'ERROR: AddressSanitizer' "$f" && errors=$((errors + 1))
    grep -q 'ERROR: LeakSanitizer' "$f" && leaks=$((leaks + $(grep -c '^\(Direct\|Indirect\) leak' "$f")))
    # "Suppressions used:" table rows: count bytes template
    suppressed=$((suppressed + $(awk '/^Suppressions used:/ { s = 1; next }
      s && $1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }' "$f")))
  done
  echo "$errors $leaks $suppressed"
}

run_asan() {
  say "AddressSanitizer + LeakSanitizer (target/asan)"
  asan_wrappers
  lsan_kernels_supp
  local flags="-Zsanitizer=address -Cforce-frame-pointers=yes -Clink-arg=-Wl,--export-dynamic"
  local cargo_env=(env RUSTC_BOOTSTRAP=1 CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
    RUSTFLAGS="$flags" RUSTDOCFLAGS="$flags")
  local common=(--target "$HOST_TRIPLE" --target-dir target/asan)
  local start=$SECONDS
  if ! "${cargo_env[@]}" cargo test --no-run "${common[@]}" -p pactum -p pactum-core -p pactum-runtime \
    -p pactum-capi -p pactum-example-kernels -p pactum-cli --lib --bins --tests >"$WORK/logs/asan-build.log" 2>&1; then
    tail -n 40 "$WORK/logs/asan-build.log"
    record asan build FAIL - - - - $((SECONDS - start))
    return
  fi
  echo "built in $((SECONDS - start))s"

  # suite name | extra environment | cargo test selection
  local suites=(
    # RUST_MIN_STACK: ASan's redzones make debug frames about 1.5x larger, and the signature
    # parsers' depth-limit tests (nesting to MAX_DEPTH = 256) then overflow the 2 MiB test-thread
    # stack (iree_abi_vectors deep_nesting_... needs 2-3 MiB under ASan, 1.5-2 MiB without).
    # LD_PRELOAD libstdc++: official_host loads the official C++ library with dlopen; the
    # static ASan runtime resolves its __cxa_throw interceptor at start-up, and without libstdc++
    # loaded by then the first C++ exception aborts ("CHECK failed ... real___cxa_throw").
    "pactum (unit, integration, MLIR)|RUST_MIN_STACK=8388608 LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6)|-p pactum --lib --tests"
    # The core's and the runtime's unit tests (maps, JSON, structural walks, recursive globals).
    "pactum-core, pactum-runtime (unit)||-p pactum-core -p pactum-runtime --lib"
    "pactum-capi (C/C++ suite, 2 libs)||-p pactum-capi --lib --tests"
    # python_host is the valgrind part's: CPython cannot load an ASan-instrumented library.
    "kernels (C host 2 libs, Rust host)|LSAN_OPTIONS=suppressions=$WORK/lsan-kernels.supp:print_suppressions=1|-p pactum-example-kernels --lib --test all -- --skip python_host::"
    "pactum-cli||-p pactum-cli --lib --bins --tests"
  )
  local entry name extra selection dir log t0 rc counts
  for entry in "${suites[@]}"; do
    IFS='|' read -r name extra selection <<<"$entry"
    dir="$WORK/reports/asan-${name%% *}"
    log="$WORK/logs/asan-${name%% *}.log"
    rm -rf "$dir"; mkdir -p "$dir"
    say "asan: $name"
    t0=$SECONDS
    rc=0
    # PACTUM_SANITIZER tells tests that measure wall-clock time that they run instrumented
    # (ASan makes debug code about 2x slower).
    # shellcheck disable=SC2086 # $extra and $selection are word lists
    env $extra PACTUM_SANITIZER=address \
      ASAN_OPTIONS="detect_leaks=1:log_path=$dir/asan:malloc_context_size=100:detect_stack_use_after_return=1:alloc_dealloc_mismatch=1:check_initialization_order=1:strict_init_order=1:halt_on_error=1" \
      ASAN_SYMBOLIZER_PATH="$mlir_bin/llvm-symbolizer" \
      CC="$WORK/bin/asan-gcc" CXX="$WORK/bin/asan-g++" \
      "${cargo_env[@]}" cargo test "${common[@]}" --no-fail-fast $selection >"$log" 2>&1 || rc=$?
    read -r passed failed <<<"$(count_tests "$log")"
    read -r errors leaks suppressed <<<"$(asan_counts "$dir")"
    for f in "$dir"/asan.*; do
      [ -e "$f" ] && grep -q 'ERROR:' "$f" && { echo "--- $f"; head -n 60 "$f"; }
    done
    local status=ok
    { [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$leaks" -ne 0 ]; } && status=FAIL
    [ "$rc" -ne 0 ] && grep -E '^(error|test .* FAILED|failures:)' "$log" | head -n 20 || true
    record asan "$name" "$status" "$passed" "$errors" "$leaks" "$suppressed" $((SECONDS - t0)) \
      "$( [ "$failed" -ne 0 ] && echo "$failed failed, " )log: ${log#"$ROOT"/}"
  done
}

# ------------------------------------------------------------------------- ThreadSanitizer
#
# std is rebuilt with -Zsanitizer=thread (cargo -Zbuild-std, from the rust-src component), so
# TSan sees every synchronising operation: std's Mutex, RwLock, Once/OnceLock, channels, Arc,
# Barrier, thread spawn and join, as well as pactum's own atomics (reference counts). Unlike
# helgrind, nothing needs classifying: any report is a finding. -Zbuild-std needs the explicit
# --target, which also keeps build scripts and proc macros uninstrumented; every crate of the
# test binaries is built with the same sanitizer, so no -Cunsafe-allow-abi-mismatch is needed.
#
# The runs: tests/all's stress tests (8 threads on objects, the error slot, the global registry,
# Module::load of a C test module, and calls), in parallel with each other, and mlir_calls'
# calls_from_eight_threads. Code that is not Rust is not instrumented: the C test module that
# stress.rs builds and loads, pactum's in-memory libtvm_ffi forwarder, and the MLIR-compiled
# libraries. TSan does not see their loads and stores, so a race inside them (or between them
# and pactum) would go unreported; it does see their malloc/free (intercepted) and all the
# synchronisation around the calls, which is pactum's. That is acceptable here: none of them
# synchronises on its own or keeps shared state that threads write (the MLIR kernels write only
# the buffers each call passes them; the C module reads the `__tvm_ffi__library_ctx` variable
# that pactum stores atomically), and memcheck (valgrind part) checks their memory accesses.
#
# Suppressions: none. Nothing pactum runs here needs one; an entry would be added to
# tsan.supp below with its reason, and the suppressed count is printed per suite.
tsan_supp() {
  cat >"$WORK/tsan.supp" <<'EOF'
# Written by scripts/sanitize.sh, which documents each entry (none so far).
EOF
}

# Counts TSan reports of one run: "fatal warnings suppressed".
tsan_counts() { # report dir
  local dir="$1" fatal=0 warnings=0 suppressed=0 f
  for f in "$dir"/tsan.*; do
    [ -e "$f" ] || continue
    fatal=$((fatal + $(grep -c 'FATAL: ThreadSanitizer\|ERROR: ThreadSanitizer' "$f" || true)))
    warnings=$((warnings + $(grep -c '^WARNING: ThreadSanitizer' "$f" || true)))
    # "ThreadSanitizer: Matched N suppressions" rows: hits type:template
    suppressed=$((suppressed + $(awk '/^ThreadSanitizer: Matched/ { s = 1; next }
      s && $1 ~ /^[0-9]+$/ { n += $1 } END { print n + 0 }' "$f")))
  done
  echo "$fatal $warnings $suppressed"
}

run_tsan() {
  say "ThreadSanitizer (target/tsan, std rebuilt with -Zbuild-std)"
  if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
    rustup component add rust-src
  fi
  tsan_supp
  local flags="-Zsanitizer=thread -Cforce-frame-pointers=yes"
  local json="$WORK/logs/tsan-build.json" start=$SECONDS
  if ! env RUSTC_BOOTSTRAP=1 CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only \
    RUSTFLAGS="$flags" cargo test --no-run -Zbuild-std --target "$HOST_TRIPLE" \
    --target-dir target/tsan -p pactum -p pactum-mlir --test all \
    --message-format=json >"$json" 2>"$WORK/logs/tsan-build.log"; then
    tail -n 40 "$WORK/logs/tsan-build.log"
    record tsan build FAIL - - - - $((SECONDS - start))
    return
  fi
  echo "built in $((SECONDS - start))s"
  local bins
  mapfile -t bins < <(test_executables "$json")
  # test binary | filter | suite name
  local runs=(
    "pactum/all|stress::|tests/all stress.rs (5 tests)"
    "pactum-mlir/all|mlir_calls::calls_from_eight_threads --exact|mlir_calls calls_from_eight_threads"
  )
  local entry bin filter name dir log t0 rc fatal warnings suppressed passed failed f
  for entry in "${runs[@]}"; do
    IFS='|' read -r bin filter name <<<"$entry"
    dir="$WORK/reports/tsan-${bin%%/*}"
    log="$WORK/logs/tsan-${bin%%/*}.log"
    rm -rf "$dir"; mkdir -p "$dir"
    say "tsan: $name"
    t0=$SECONDS
    rc=0
    # halt_on_error=0: every report of the run is written (one file per process under $dir);
    # the process then exits 66 if there was any. PACTUM_SANITIZER: see the ASan part.
    # shellcheck disable=SC2086 # $filter is a word list
    PACTUM_SANITIZER=thread \
      TSAN_OPTIONS="halt_on_error=0:exitcode=66:log_path=$dir/tsan:second_deadlock_stack=1:suppressions=$WORK/tsan.supp:print_suppressions=1:external_symbolizer_path=$mlir_bin/llvm-symbolizer" \
      "$(find_bin "$bin" "${bins[@]}")" $filter >"$log" 2>&1 || rc=$?
    read -r passed failed <<<"$(count_tests "$log")"
    read -r fatal warnings suppressed <<<"$(tsan_counts "$dir")"
    for f in "$dir"/tsan.*; do
      [ -e "$f" ] && grep -q 'ThreadSanitizer' "$f" && { echo "--- $f"; grep -E '^(WARNING|SUMMARY|FATAL|ERROR)' "$f" | head -n 40; }
    done
    local status=ok
    { [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ] || [ "$fatal" -ne 0 ] || [ "$warnings" -ne 0 ]; } && status=FAIL
    [ "$rc" -ne 0 ] && grep -E '^(error|test .* FAILED|failures:)' "$log" | head -n 20 || true
    record tsan "$name" "$status" "$passed" "$fatal" "$warnings" "$suppressed" $((SECONDS - t0)) \
      "$( [ "$rc" -ne 0 ] && echo "exit $rc, " )reports: ${dir#"$ROOT"/}"
  done
}

# ------------------------------------------------------------------- plain build for valgrind
VG_BINS=()
build_plain() { # packages... (their `all` test binaries)
  local log="$WORK/logs/valgrind-build.log" json="$WORK/logs/valgrind-build.json"
  local sel=() p
  for p in "$@"; do sel+=(-p "$p"); done
  if ! CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only cargo test --no-run \
    --target-dir target/valgrind "${sel[@]}" --test all \
    --message-format=json >"$json" 2>"$log"; then
    tail -n 40 "$log"
    return 1
  fi
  mapfile -t VG_BINS < <(test_executables "$json")
}
vg_bin() { # package/target -> executable
  find_bin "$1" "${VG_BINS[@]}"
}

# --------------------------------------------------------------------------------- helgrind
#
# Why helgrind too: the tsan part is the race check. Helgrind is a second opinion that needs no
# rebuilt std and looks at the uninstrumented binary, but it only understands pthread
# primitives, while Rust's std synchronises through atomics and futexes (Mutex, RwLock,
# Once/OnceLock, channels, Barrier, Arc, thread parking and scoped thread joins). It runs only
# the object test of stress.rs (objects created, cloned, sent and dropped by 8 threads, calls of
# one shared function, the error slot), whose hand-overs the rules below can tell apart. The
# other stress tests synchronise through std's locks and barriers on pactum's own data (the
# registry, module tables, objects handed to other threads), which helgrind cannot see, so
# their reports could not be told from real races; TSan covers them. Every report is
# classified from helgrind's XML (both conflicting accesses and the allocation of the raced
# memory), and only these are suppressed:
#
# 1. std/libc internals. Both accesses lie in std's own synchronisation code or the test
#    harness (std::sync::mpmc channels, std::thread and std::sys: spawning, parking, thread_info,
#    Once/OnceLock, alloc::sync::Arc, libtest's output capture), reached through generic helpers
#    (core::ptr, core::sync::atomic, alloc::raw_vec/boxed/vec, libc memmove/malloc); or the raced
#    memory is a block std allocated for itself (a channel's slot block or counter); or one access
#    is std's OnceLock/Once storing the value that the other reads once the OnceLock is complete
#    (pactum's lazily initialised statics: the runtime binding, type indices, the C++ allocator).
#    These are std's implementation synchronised by atomics helgrind does not model; a write made
#    by an initialising closure itself (pactum code) is not covered.
# 2. Hand-over through std::sync::mpsc of the stress test's objects. stress.rs sends each
#    Obj<Tracked> to the next thread over a channel; the receiver reads, drops and frees it.
#    The channel's release/acquire atomics order those accesses after the object's creation, but
#    helgrind sees no edge and reports the object's header and payload (and, with block reuse,
#    sometimes names a previous occupant of the same address as the other access). Only blocks
#    allocated as ObjectBox<all::stress::Tracked>, accessed by a thread other than the one that
#    allocated them, are covered: races on any other pactum object (functions, lists, errors,
#    strings, registries, MLIR descriptors) are still reported.
#
# Anything else (a race with at least one access in pactum or test code on memory pactum or the
# test owns, or any other helgrind error) fails the suite and is printed.
helgrind_classify() { # xml -> prints the verdict, last line "races suppressed"
  python3 - "$1" <<'EOF'
import collections, re, sys, xml.etree.ElementTree as ET

HELPER = re.compile(r'library/(core/src/|alloc/src/(raw_vec|boxed|vec|alloc|slice|collections|string|fmt)'
                    r'|std/src/(alloc|sys/alloc))')
STD = [
    ('std::sync::mpmc', re.compile(r'library/std/src/sync/mpmc/')),
    ('std::thread/std::sys', re.compile(r'library/std/src/(thread/|sys/|rt\.rs)')),
    ('Once/OnceLock', re.compile(r'library/std/src/sync/(once|once_lock|lazy_lock|poison/once)')),
    ('alloc::sync::Arc', re.compile(r'library/alloc/src/sync\.rs')),
    ('test harness', re.compile(r'library/(test/|std/src/io/stdio\.rs|std/src/panicking\.rs)')),
]

def frames(stack):
    out = []
    for f in stack.findall('frame'):
        path = '/'.join(x for x in (f.findtext('dir'), f.findtext('file')) if x)
        out.append((f.findtext('fn') or '?', path or (f.findtext('obj') or '?'), f.findtext('line') or ''))
    return out

SYSTEM = re.compile(r'(^|/)(libc\.so|ld-linux|vgpreload_|libgcc_s|libpthread)|^\?$|(^|/)(libc-|nptl/|sysdeps/|string/|malloc/)')

# Allocation stacks also skip Arc::new/Rc::new: an Arc that pactum makes holds pactum's data.
ALLOC_WRAPPER = re.compile(r'library/alloc/src/(sync|rc)\.rs')

def owner(fr, allocation=False):
    """('std', area) when the first frame that is neither a generic helper nor libc is in std's
    internals; ('user', frame) when it is anything else (pactum, the tests, C code)."""
    for fn, path, line in fr:
        if HELPER.search(path) or SYSTEM.search(path) or (allocation and ALLOC_WRAPPER.search(path)):
            continue  # generic helpers (core::ptr, atomics, Box, Vec), libc, helgrind's preload
        for area, rx in STD:
            if rx.search(path):
                return 'std', area
        return 'user', f'{fn} ({path.split("/work/main/")[-1]}:{line})'
    return 'std', 'helpers/libc only'

root = ET.parse(sys.argv[1]).getroot()
suppressed = collections.Counter()
findings = []
for error in root.findall('error'):
    kind = error.findtext('kind')
    # Tag each stack by what precedes it: the access, the conflicting access, the allocation.
    access = conflict = alloc = None
    accessor = alloc_thread = None
    m = re.search(r'by thread #(\d+)', error.findtext('xwhat/text') or '')
    accessor = m and m.group(1)
    last = None
    for child in error:
        if child.tag == 'stack':
            fr = frames(child)
            if access is None:
                access = fr
            elif last == 'xauxwhat':
                conflict = fr
            elif last == 'alloc':
                alloc = fr
        elif child.tag == 'xauxwhat':
            last = 'xauxwhat'
        elif child.tag == 'auxwhat':
            text = child.text or ''
            if 'alloc\'d' in text and 'block of size' in text:
                last = 'alloc'
            m = re.search(r'Block was alloc\'d by thread #(\d+)', text)
            if m:
                alloc_thread = m.group(1)
    if kind != 'Race' or access is None:
        findings.append((kind, error.findtext('what') or error.findtext('xwhat/text'), access or []))
        continue
    a = owner(access)
    b = owner(conflict) if conflict else a
    if alloc is not None and any('ObjectBox<all::stress::Tracked>' in fn for fn, _, _ in alloc) \
            and alloc_thread and accessor and alloc_thread != accessor:
        suppressed['(2) Obj<Tracked> handed over through std::sync::mpsc'] += 1
        continue
    block_owner = owner(alloc, allocation=True) if alloc is not None else None
    if block_owner and block_owner[0] == 'std' and block_owner[1] != 'helpers/libc only':
        suppressed[f'(1) a block std allocated for itself ({block_owner[1]})'] += 1
        continue
    if a[0] == 'std' and b[0] == 'std':
        suppressed[f'(1) std internals: {a[1]} / {b[1]}'] += 1
        continue
    if ('std', 'Once/OnceLock') in (a, b):
        suppressed['(1) a OnceLock value stored by std\'s Once, read after completion'] += 1
        continue
    findings.append((kind, error.findtext('xwhat/text'), access, conflict))

for reason, count in sorted(suppressed.items()):
    print(f'  suppressed {count:4d}  {reason}')
for finding in findings:
    print('  FINDING', finding[0], finding[1])
    for label, fr in zip(('access', 'conflicting access'), finding[2:]):
        if fr:
            print(f'    {label}:')
            for fn, path, line in fr[:12]:
                print(f'      {fn}  {path.split("/work/main/")[-1]}:{line}')
print(len(findings), sum(suppressed.values()))
EOF
}

run_helgrind() {
  say "helgrind: data races in the 8-thread object test (target/valgrind)"
  local start=$SECONDS
  if ! build_plain pactum pactum-mlir pactum-example-kernels; then
    record helgrind build FAIL - - - - $((SECONDS - start))
    return
  fi
  # package/test binary | filter | suite name
  local runs=(
    "pactum/all|stress::eight_threads_share_objects_and_functions --exact|stress.rs objects (8 threads)"
    "pactum-mlir/all|mlir_calls::calls_from_eight_threads --exact|mlir_calls calls_from_eight_threads"
  )
  local entry bin filter name xml log t0 rc verdict races suppressed
  for entry in "${runs[@]}"; do
    IFS='|' read -r bin filter name <<<"$entry"
    xml="$WORK/reports/helgrind-${bin%%/*}.xml"
    log="$WORK/logs/helgrind-${bin%%/*}.log"
    say "helgrind: $name"
    t0=$SECONDS
    rc=0
    # --ignore-thread-creation: thread start-up (TLS set-up inside glibc and std) is not checked.
    # --nocapture: libtest's output capture is a std-internal channel per test thread.
    # shellcheck disable=SC2086 # $filter is a word list
    valgrind --tool=helgrind --ignore-thread-creation=yes --history-level=full --num-callers=40 \
      --xml=yes --xml-file="$xml" "$(vg_bin "$bin")" --test-threads=1 --nocapture $filter \
      >"$log" 2>&1 || rc=$?
    verdict="$(helgrind_classify "$xml")"
    sed '$d' <<<"$verdict"
    read -r races suppressed <<<"$(tail -n 1 <<<"$verdict")"
    read -r passed failed <<<"$(count_tests "$log")"
    local status=ok
    { [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ] || [ "$races" -ne 0 ]; } && status=FAIL
    record helgrind "$name" "$status" "$passed" - "$races" "$suppressed" $((SECONDS - t0)) \
      "xml: ${xml#"$ROOT"/}"
  done
}

# ------------------------------------------------------------------------- valgrind memcheck
#
# The Python host (examples/kernels/tests/all/python_host.rs, pytest on the official runtime) runs
# CPython, which cannot load the ASan build of the kernels library. It runs here under memcheck
# with PYTHONMALLOC=malloc (so every Python object is a malloc block memcheck tracks), through a
# PACTUM_PYTHON wrapper. Only pactum-built code is judged: an error or leak counts when any frame
# of any of its stacks (the error, the origin of an uninitialised value, the allocation of a
# leaked block) lies in the kernels library, another library built under target/valgrind, or
# pactum's sources. The rest is outside pactum and suppressed; what a clean run shows there:
#  - uninitialised values from CPython 3.11's _PyLong_New (int digits left unset and read by
#    maybe_small_long/Py_INCREF, by the json module and by NumPy's setitem), every origin in
#    libpython;
#  - glibc's dynamic loader reading past a string end in is_dst/strncmp while expanding $ORIGIN
#    rpaths of extension modules (a word-sized read valgrind flags);
#  - blocks CPython allocates for NumPy's _multiarray_umath at import (PyTuple_Pack) and never
#    frees (definitely and indirectly lost, 30 records, 5 KB).
# "Possibly lost" blocks are not listed for the Python process: CPython's and the official
# library's objects alive at interpreter exit, 18 000 records.
# Definitely and indirectly lost blocks and every error count. In the Rust tests below, "possibly
# lost" blocks are counted but do not fail the run (process-lifetime state: the global registry,
# the test harness's threads).
#
# The same memcheck judges, with no suppression at all, the Rust tests that call code ASan does
# not instrument: tests/all/mlir_calls.rs (MLIR-compiled libraries reading and writing the buffers
# pactum describes to them) and tests/all (C test modules built by the tests).
memcheck_classify() { # xml... -> prints the verdict, last line "errors leaks suppressed"
  python3 - "$ROOT" "$@" <<'EOF'
import collections, sys, xml.etree.ElementTree as ET

root_dir, files = sys.argv[1], sys.argv[2:]
PACTUM = ('libpactum_example_kernels', '/target/valgrind/', root_dir + '/crates/', root_dir + '/examples/')

def is_pactum(frame):
    where = ' '.join(x for x in (frame.findtext('obj'), frame.findtext('dir')) if x)
    return any(key in where for key in PACTUM)

errors = leaks = 0
possible = 0
suppressed = collections.Counter()
for path in files:
    for e in ET.parse(path).getroot().findall('error'):
        kind = e.findtext('kind')
        ours = any(is_pactum(f) for s in e.findall('stack') for f in s.findall('frame'))
        top = next((f.findtext('obj') or '?' for f in e.find('stack').findall('frame')
                    if 'vgpreload' not in (f.findtext('obj') or '')), '?').split('/')[-1]
        text = e.findtext('xwhat/text') or e.findtext('what') or ''
        if not ours:
            suppressed[f'{kind} in {top}'] += 1
            continue
        if kind == 'Leak_PossiblyLost':
            possible += 1
            print('  possibly lost (not failing):', text)
            continue
        if kind.startswith('Leak_'):
            leaks += 1
        else:
            errors += 1
        print('  FINDING', kind, text)
        for f in e.find('stack').findall('frame')[:14]:
            print('     ', f.findtext('fn') or '?', (f.findtext('file') or f.findtext('obj') or ''),
                  f.findtext('line') or '')
for reason, count in sorted(suppressed.items()):
    print(f'  outside pactum {count:6d}  {reason}')
print(errors, leaks, sum(suppressed.values()))
EOF
}

run_valgrind() {
  say "valgrind memcheck (target/valgrind)"
  local start=$SECONDS
  if ! build_plain pactum pactum-mlir pactum-example-kernels; then
    record valgrind build FAIL - - - - $((SECONDS - start))
    return
  fi
  local memcheck=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect --track-origins=yes --num-callers=40 --xml=yes)
  # CPython leaves ~18 000 "possibly lost" records at exit (330 MB of XML): not listed for it.
  local python_memcheck=("${memcheck[@]/--show-leak-kinds=definite,indirect,possible/--show-leak-kinds=definite,indirect}")
  local dir="$WORK/reports/valgrind"
  rm -rf "$dir"; mkdir -p "$dir"

  # Python host: the wrapper runs the peer Python under memcheck, one XML file per process.
  cat >"$WORK/bin/python-memcheck" <<EOF
#!/bin/sh
# The peer Python under valgrind memcheck (scripts/sanitize.sh).
exec ${python_memcheck[*]} --xml-file=$dir/python.%p.xml "$ROOT/.venv/bin/python" "\$@"
EOF
  chmod +x "$WORK/bin/python-memcheck"
  local log="$WORK/logs/valgrind-python_host.log" t0=$SECONDS rc=0
  say "valgrind: kernels Python host (pytest on the official runtime)"
  PACTUM_SANITIZER=valgrind PYTHONMALLOC=malloc PACTUM_PYTHON="$WORK/bin/python-memcheck" \
    "$(vg_bin pactum-example-kernels/all)" python_host:: --nocapture >"$log" 2>&1 || rc=$?
  local verdict errors leaks suppressed passed failed status
  verdict="$(memcheck_classify "$dir"/python.*.xml)"
  sed '$d' <<<"$verdict"
  read -r errors leaks suppressed <<<"$(tail -n 1 <<<"$verdict")"
  read -r passed failed <<<"$(count_tests "$log")"
  status=ok
  { [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ] || [ "$errors" -ne 0 ] || [ "$leaks" -ne 0 ]; } && status=FAIL
  record valgrind "kernels Python host (pytest)" "$status" "$passed" "$errors" "$leaks" "$suppressed" \
    $((SECONDS - t0)) "suppressed = reports outside pactum"

  local bin name binary filter
  for bin in mlir_calls all; do
    # The test binary and the selection of its tests. pactum's `hostile` module is left to the
    # ASan part: it runs no code that ASan does not instrument.
    case "$bin" in
      mlir_calls) name="pactum mlir_calls (MLIR code)" binary=pactum-mlir/all filter=(mlir_calls::) ;;
      all) name="pactum tests/all (C modules)" binary=pactum/all filter=(--skip hostile::) ;;
    esac
    say "valgrind: $name"
    log="$WORK/logs/valgrind-$bin.log"; t0=$SECONDS; rc=0
    PACTUM_SANITIZER=valgrind "${memcheck[@]}" --xml-file="$dir/$bin.xml" "$(vg_bin "$binary")" \
      "${filter[@]}" --test-threads=1 >"$log" 2>&1 || rc=$?
    verdict="$(python3 - "$dir/$bin.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
errors = leaks = possible = 0
for e in ET.parse(sys.argv[1]).getroot().findall('error'):
    kind = e.findtext('kind')
    if kind == 'Leak_PossiblyLost':
        possible += 1
        continue
    if kind.startswith('Leak_'):
        leaks += 1
    else:
        errors += 1
    print('  FINDING', kind, e.findtext('xwhat/text') or e.findtext('what'))
    for f in e.find('stack').findall('frame')[:14]:
        print('     ', f.findtext('fn') or '?', f.findtext('file') or f.findtext('obj') or '', f.findtext('line') or '')
print(f'  possibly lost (process-lifetime state, not failing): {possible} records')
print(errors, leaks)
EOF
)"
    sed '$d' <<<"$verdict"
    read -r errors leaks <<<"$(tail -n 1 <<<"$verdict")"
    read -r passed failed <<<"$(count_tests "$log")"
    status=ok
    { [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ] || [ "$errors" -ne 0 ] || [ "$leaks" -ne 0 ]; } && status=FAIL
    record valgrind "$name" "$status" "$passed" "$errors" "$leaks" 0 $((SECONDS - t0))
  done
}

# -------------------------------------------------------------------------------------- run
for part in "${parts[@]}"; do
  "run_$part"
done

say "summary"
printf '%s\n' "${SUMMARY[@]}"
if [ "$FAILED" -ne 0 ]; then
  echo "sanitize: FAILED (logs and reports in ${WORK#"$ROOT"/})"
  exit 1
fi
echo "sanitize: all clean"
