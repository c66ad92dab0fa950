"""The Vulkan corpus harness itself: it passes a runtime that is IREE and catches one that is not.

A stand-in for `pactum` that forwards to the native iree-run-module (IREE's Vulkan driver) must
give no problem; one that prints other values, writes other `.npy` bytes or fails must be caught;
IREE's Vulkan results that differ from its llvm-cpu ones must be caught. Needs a Vulkan driver
(lavapipe): without one the first test fails and says so.
"""

from __future__ import annotations

import pathlib
import stat
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import cases as corpus  # noqa: E402
import run  # noqa: E402

CHOSEN = {("elementwise", "add_mul"), ("transfers", "splat_i8")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    iree = run.run_module_tool()
    assert run.vulkan_devices(iree), "no Vulkan driver: install mesa-vulkan-drivers (lavapipe)"
    cache = tmp_path_factory.mktemp("vulkan")
    compiler = run.compile_tool()
    version = run.run([compiler, "--version"])[1]
    arguments = run.write_inputs(cache)
    modules = {}
    for source in {s for s, _ in CHOSEN}:
        for target in run.TARGETS:
            modules[(source, target)] = run.compile_source(compiler, version, cache, source, [], target)
            assert modules[(source, target)][1] is None, modules[(source, target)][1]
    chosen = [c for c in corpus.CASES if (c[0], c[1]) in CHOSEN]
    return chosen, modules, arguments, cache, iree


# `pactum call --device vulkan --out DIR [--parameters=P] MODULE FUNCTION ARGS...` done by
# iree-run-module: each result written as DIR/result_<i>.npy.
CALL = r"""
shift; shift; shift; shift; out=$1; shift
extra=""; case "$1" in --parameters=*) extra=$1; shift;; esac
module=$1; function=$2; shift; shift
set -- --device=vulkan --module="$module" --function="$function" $extra \
  $(for a in "$@"; do printf ' --input=%s' "$a"; done)
mkdir -p "$out"
count=$("$IREE" "$@" | grep -c '^result\[')
outputs=""; k=0; while [ $k -lt $count ]; do outputs="$outputs --output=@$out/result_$k.npy"; k=$((k+1)); done
exec "$IREE" "$@" $outputs >/dev/null
"""


def stand_in(folder: pathlib.Path, body: str, call: str = CALL) -> str:
    """An executable taking `run ARGS...` as pactum does and running `body` with ARGS, and
    taking `call ...` and running `call`."""
    path = folder / "stand_in.sh"
    path.write_text(f"#!/bin/sh\nIREE='{run.run_module_tool()}'\n"
                    f"if [ \"$1\" = call ]; then\n{call}\nfi\nshift\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def run_chosen(built, pactum):
    chosen, modules, arguments, cache, iree = built
    return [run.run_case(case, modules, arguments, cache, iree, pactum) for case in chosen]


def test_a_runtime_that_is_iree_passes(built, tmp_path):
    records = run_chosen(built, stand_in(tmp_path, 'exec "$IREE" "$@"'))
    assert [(r["iree"], r["pactum"]) for r in records] == [(None, None)] * len(records)


def test_other_printed_values_are_caught(built, tmp_path):
    body = '"$IREE" "$@" | sed "s/=/= 1 +/"'
    records = run_chosen(built, stand_in(tmp_path, body))
    assert [r["pactum"] for r in records] == ["differs"] * len(records)


def test_other_npy_bytes_are_caught(built, tmp_path):
    # Prints IREE's text but writes zeroed .npy files when asked for --output.
    body = ('"$IREE" "$@" || exit 1\n'
            'for a in "$@"; do case "$a" in --output=@*) f="${a#--output=@}";'
            ' python3 -c "import sys; d=bytearray(open(sys.argv[1],\'rb\').read());'
            ' d[-1]^=1; open(sys.argv[1],\'wb\').write(d)" "$f";; esac; done')
    records = run_chosen(built, stand_in(tmp_path, body))
    assert [r["pactum"] for r in records] == ["differs"] * len(records)
    assert all(".npy files" in r["detail"] for r in records)


def test_other_call_results_are_caught(built, tmp_path):
    # `pactum run` is IREE, `pactum call` writes a result of another shape.
    call = ('shift; shift; shift; shift; mkdir -p "$1"\n'
            'python3 -c "import sys; sys.exit(0)"\n'
            'cp "$(dirname "$0")/other.npy" "$1/result_0.npy"; exit 0')
    import numpy as np

    np.save(tmp_path / "other.npy", np.zeros((2,), np.float32))
    records = run_chosen(built, stand_in(tmp_path, 'exec "$IREE" "$@"', call))
    assert [r["pactum"] for r in records] == ["differs"] * len(records)
    assert all("pactum call result 0" in r["detail"] for r in records)


def test_validation_messages_fail_pactum_and_leave_the_results_compared(built, tmp_path,
                                                                          monkeypatch):
    # A runtime that is IREE but whose Vulkan calls the validation layer reports.
    monkeypatch.setattr(run, "VALIDATION_ENV", {"PACTUM_TEST_UNUSED": "1"})
    monkeypatch.setattr(run, "VALIDATION_MESSAGES", {})
    body = ('echo "VUID-vkCmdDispatch-None-02699(ERROR / SPEC): Validation Error: made up"\n'
            'echo "    Objects: 1"\nexec "$IREE" "$@"')
    records = run_chosen(built, stand_in(tmp_path, body))
    assert [r["pactum"] for r in records] == ["differs"] * len(records)
    assert all("validation layer" in r["detail"] and "made up" in r["detail"] for r in records)
    assert all(tool != "iree" for _, tool in run.VALIDATION_MESSAGES)


def test_a_failing_runtime_is_an_error(built, tmp_path):
    records = run_chosen(built, stand_in(tmp_path, 'echo "unknown device" >&2; exit 1'))
    assert [r["pactum"] for r in records] == ["error"] * len(records)
    assert all("unknown device" in r["detail"] for r in records)


def test_vulkan_results_unlike_the_cpu_are_caught(tmp_path):
    import numpy as np

    gpu, cpu = tmp_path / "gpu.npy", tmp_path / "cpu.npy"
    np.save(cpu, np.array([1.0, 2.0, 3.0], np.float32))
    np.save(gpu, np.array([1.0, 2.0, 3.0], np.float32))
    assert run.check_against_cpu([gpu], [cpu]) == []
    np.save(gpu, np.array([1.0, 2.0, 3.01], np.float32))
    assert "differs from IREE llvm-cpu" in run.check_against_cpu([gpu], [cpu])[0]
    np.save(gpu, np.array([1, 2, 3], np.int32))
    assert "int32" in run.check_against_cpu([gpu], [cpu])[0]
