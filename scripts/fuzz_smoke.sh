#!/usr/bin/env bash
# Fuzz smoke test: builds every libFuzzer target in fuzz/ (one `cargo fuzz build`: release,
# address sanitizer) and runs each for a few seconds from its seed corpus, so that a target
# that no longer builds, or a crash its seeds or short mutation runs reach, fails CI.
#
# Usage: scripts/fuzz_smoke.sh [SECONDS]   (default 10 seconds per target)
#
# Each run starts from a copy of fuzz/corpus/<target>/ (written by fuzz/seed_corpora.sh) in
# a temporary directory, so CI never grows the corpora. A crash (any non-zero libFuzzer exit:
# panic, sanitizer report, leak, timeout, out of memory) fails the script, names the target,
# shows the end of its log and leaves the reproducer in fuzz/artifacts/<target>/.
#
# Environment: PACTUM_FUZZ_JOBS (default: number of CPUs) targets run at once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-10}"
say() { printf '\n==> %s\n' "$*"; }

if ! cargo fuzz --version >/dev/null 2>&1; then
  say "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

say "seed corpora"
fuzz/seed_corpora.sh

# There is no nightly toolchain: RUSTC_BOOTSTRAP lets stable rustc take cargo-fuzz's -Z flags.
export RUSTC_BOOTSTRAP=1
targets=()
while IFS= read -r target; do
  [ -n "$target" ] && targets+=("$target")
done < <(cd fuzz && cargo fuzz list)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz smoke: no targets listed in fuzz/Cargo.toml" >&2
  exit 1
fi

say "cargo fuzz build (${#targets[@]} targets)"
(cd fuzz && cargo fuzz build --target-dir ../target/fuzz)
host="$(rustc -vV | sed -n 's/^host: //p')"
bin_dir="target/fuzz/$host/release"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Runs one target; its log goes to $work/<target>.log and its exit status to .rc.
run_target() {
  local target="$1"
  mkdir -p "$work/$target" "fuzz/artifacts/$target"
  if [ -d "fuzz/corpus/$target" ]; then
    cp -R "fuzz/corpus/$target/." "$work/$target/"
  fi
  local rc=0
  "$bin_dir/$target" "$work/$target" -max_total_time="$seconds" -timeout=60 \
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$target/" \
    >"$work/$target.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$target.rc"
}

say "fuzz runs (${seconds}s per target)"
jobs_max="${PACTUM_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
wait

failed=()
for target in "${targets[@]}"; do
  log="$work/$target.log"
  rc="$(cat "$work/$target.rc" 2>/dev/null || echo missing)"
  # A run that crashes early may print no statistics: report "?" then.
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  cov="$( (grep -a -o 'cov: [0-9]*' "$log" || true) | tail -n 1 | cut -d' ' -f2)"
  corpus="$( (grep -a -o 'corp: [0-9]*' "$log" || true) | tail -n 1 | cut -d' ' -f2)"
  status=ok
  [ "$rc" = 0 ] || status="FAILED (exit $rc)"
  printf '%-20s %-16s %10s runs  cov %6s  corpus %6s\n' \
    "$target" "$status" "${runs:-?}" "${cov:-?}" "${corpus:-?}"
  [ "$rc" = 0 ] || failed+=("$target")
done

if [ ${#failed[@]} -gt 0 ]; then
  for target in "${failed[@]}"; do
    log="$work/$target.log"
    printf '\n==> fuzz target %s crashed:\n' "$target" >&2
    # The first report (panic message or sanitizer error), then the end of the log.
    grep -a -m 1 -A 4 -E 'panicked at|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)' \
      "$log" >&2 || true
    echo "..." >&2
    tail -n 12 "$log" >&2
    artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
    if [ -n "$artifact" ]; then
      echo "reproduce: (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir ../target/fuzz $target ../$artifact)" >&2
    fi
  done
  echo "fuzz smoke: crash in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz smoke: ${#targets[@]} targets ran ${seconds}s each without a crash"
