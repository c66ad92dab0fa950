#!/usr/bin/env bash
# Issue 23's benchmark: pactum against the native iree-run-module and iree-benchmark-module
# of the pinned iree-base-runtime wheel on every path (VM loops, vmvx models, weights as
# arguments, many small dispatches, a 16M-element op), whole process and in process,
# local-sync and local-task; alternated, medians of paired ratios (bench/iree_paths/run.py).
#
# usage: bench/run_iree_paths.sh [run.py flags, e.g. --runs 5 --cases vm_loop,vm_spin
#        --pactum before=OLD/pactum --pactum after=target/release/pactum --markdown FILE]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build -q --release -p pactum-cli
exec .venv/bin/python bench/iree_paths/run.py "$@"
