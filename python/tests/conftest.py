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


MLIR_SOURCES = REPO / "crates" / "pactum-mlir" / "tests" / "mlir"


@pytest.fixture(scope="session")
def mlir_libs(tmp_path_factory) -> pathlib.Path:
    """The MLIR test modules (crates/pactum-mlir/tests/mlir/*.mlir) lowered to shared libraries
    by their build.sh with Debian's MLIR 22 tools (`apt-get install mlir-22-tools llvm-22`;
    scripts/test.sh installs them). `PACTUM_MLIR_LIBS` names a folder to build into and reuse
    (build.sh is incremental); otherwise a fresh temporary one. Skips when the tools are
    missing."""
    import os
    import subprocess

    out = pathlib.Path(os.environ.get("PACTUM_MLIR_LIBS") or tmp_path_factory.mktemp("mlir"))
    build = subprocess.run(
        ["bash", str(MLIR_SOURCES / "build.sh"), str(out)], capture_output=True, text=True
    )
    if build.returncode == 2:  # build.sh: a required tool is missing
        pytest.skip(f"the MLIR 22 tools are missing (apt-get install mlir-22-tools llvm-22): {build.stderr.strip()}")
    assert build.returncode == 0, f"building the MLIR test libraries failed:\n{build.stdout}{build.stderr}"
    return out
