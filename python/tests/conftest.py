"""Shared fixtures: the .vmfb files of crates/pactum-iree/tests/fixtures/vmfb."""

from __future__ import annotations

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
VMFB = REPO / "crates" / "pactum-iree" / "tests" / "fixtures" / "vmfb"


@pytest.fixture(scope="session")
def vmfb_dir() -> pathlib.Path:
    assert VMFB.is_dir(), f"missing fixtures folder {VMFB}"
    return VMFB


def vmfb(name: str) -> str:
    """The path of fixture `name` as a string."""
    path = VMFB / name
    assert path.is_file(), f"missing fixture {path}"
    return str(path)
