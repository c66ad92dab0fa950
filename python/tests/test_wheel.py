"""A wheel built from python/ installs into a fresh virtual environment and imports (slow:
builds the native library; set PACTUM_SKIP_WHEEL_TEST=1 to skip)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import venv

import pytest

from conftest import REPO, vmfb


@pytest.mark.skipif(os.environ.get("PACTUM_SKIP_WHEEL_TEST") == "1", reason="PACTUM_SKIP_WHEEL_TEST=1")
def test_wheel_builds_and_installs_in_a_fresh_venv(tmp_path: pathlib.Path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO / "python")],
        check=True,
    )
    (wheel,) = wheels.glob("pactum-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True)
    script = (
        "import pactum, tvm_ffi\n"
        f"m = tvm_ffi.load_module({vmfb('vm_direct.vmfb')!r})\n"
        "assert m['frob_or_double'](21) == 42\n"
        f"assert pactum.iree.load({vmfb('multi_export_llvm_cpu.vmfb')!r}).add(7, 35) == 42\n"
        "print('ok')\n"
    )
    out = subprocess.run([str(python), "-c", script], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "ok"
