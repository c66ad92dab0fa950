"""README.md's "Deploying a model" runs as written: examples/deploy/deploy.sh takes an ONNX
MLP through iree-import-onnx (weights to an .irpa archive) and iree-compile, then runs it with
iree-run-module and with pactum from the CLI, Rust and Python, and fails unless each pactum
result equals iree-run-module's (and `pactum run` prints the same text)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = REPO / "examples" / "deploy" / "deploy.sh"


def _pactum_cli() -> pathlib.Path:
    cli = pathlib.Path(os.environ.get("PACTUM", REPO / "target" / "debug" / "pactum"))
    if not cli.is_file():
        subprocess.run(["cargo", "build", "-q", "-p", "pactum-cli"], cwd=REPO, check=True)
    return cli


def test_the_deploy_example_matches_iree_run_module(tmp_path):
    cli = _pactum_cli()
    run = subprocess.run(
        ["bash", str(DEPLOY), str(tmp_path)],
        env={**os.environ, "PYTHON": sys.executable, "PACTUM": str(cli)},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"deploy.sh failed:\n{run.stdout}\n{run.stderr}"
    assert "CLI, Rust and Python results equal iree-run-module's" in run.stdout
