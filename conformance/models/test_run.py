"""The models harness itself: it passes a runtime that is IREE and catches one that is not.

A stand-in for `pactum` that forwards to the native iree-run-module must give no problem; one
that prints other values, writes other `.npy` bytes or fails must be caught.
"""

from __future__ import annotations

import pathlib
import stat
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import run  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from iree.compiler.tools import binaries

    cache = tmp_path_factory.mktemp("models")
    record = run.build("mlp", cache, run.fingerprint(binaries.find_tool("iree-compile")))
    return record, cache


def stand_in(folder: pathlib.Path, body: str) -> str:
    """An executable taking `run ARGS...` as pactum does and running `body` with ARGS."""
    path = folder / "stand_in.sh"
    path.write_text(f"#!/bin/sh\nshift\nIREE='{run.run_module_tool()}'\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_a_runtime_that_is_iree_passes(built, tmp_path):
    record, cache = built
    pactum = stand_in(tmp_path, 'exec "$IREE" "$@"')
    assert run.compare(record, "llvm-cpu", "irpa", cache, run.run_module_tool(), pactum) == []


def test_other_printed_values_are_caught(built, tmp_path):
    record, cache = built
    pactum = stand_in(tmp_path, '"$IREE" "$@" | sed "s/0\\./1./"')
    problems = run.compare(record, "llvm-cpu", "irpa", cache, run.run_module_tool(), pactum)
    assert any("printed results differ" in p for p in problems), problems


def test_other_output_bytes_are_caught(built, tmp_path):
    record, cache = built
    # Writes the model's input array as its result.
    body = ('for a in "$@"; do case "$a" in --output=@*) cp "' +
            str(cache / "mlp" / "input_0.npy") + '" "${a#--output=@}";; esac; done\n'
            'for a in "$@"; do case "$a" in --output=*) exit 0;; esac; done\n'
            'exec "$IREE" "$@"')
    pactum = stand_in(tmp_path, body)
    problems = run.compare(record, "llvm-cpu", "irpa", cache, run.run_module_tool(), pactum)
    assert any("the .npy files differ" in p for p in problems), problems


def test_a_failing_runtime_is_caught(built, tmp_path):
    record, cache = built
    pactum = stand_in(tmp_path, 'echo "no such parameter" >&2; exit 3')
    problems = run.compare(record, "llvm-cpu", "irpa", cache, run.run_module_tool(), pactum)
    assert problems and "pactum run failed (3)" in problems[0], problems
