"""README.md's "Deploying a model", from Python: the compiled MLP with its weights in an
.irpa archive, loaded by pactum three ways, each result compared with iree-run-module's.

    python run.py OUT_DIR   (after deploy.sh made OUT_DIR/mlp.vmfb, mlp.irpa, input.npy, iree.npy)
"""

import pathlib
import sys

import numpy as np

import pactum


def main(out: pathlib.Path) -> None:
    x = np.load(out / "input.npy")
    expected = np.load(out / "iree.npy")  # what iree-run-module wrote

    # 1. The archive by path, as iree-run-module's --parameters=model=mlp.irpa.
    model = pactum.iree.load(out / "mlp.vmfb", parameters={"model": str(out / "mlp.irpa")})
    by_path = model.mlp(x)

    # 2. The archive read into an index first (iree.runtime.ParameterIndex's load()).
    archive = pactum.iree.ParameterIndex()
    archive.load(out / "mlp.irpa")
    by_index = pactum.iree.load(out / "mlp.vmfb", parameters={"model": archive}).mlp(x)

    # 3. Weights from memory: the same entries added as NumPy buffers, no archive needed.
    in_memory = pactum.iree.ParameterIndex()
    for key, entry in archive.items():
        in_memory.add_buffer(key, np.frombuffer(entry.file_view, np.uint8).copy())
    from_memory = pactum.iree.load(out / "mlp.vmfb", parameters={"model": in_memory}).mlp(x)

    for how, y in [("path", by_path), ("index", by_index), ("memory", from_memory)]:
        if not np.array_equal(y, expected):
            raise SystemExit(f"parameters by {how}: pactum's result differs from iree-run-module's:\n{y}\n{expected}")
    np.save(out / "python.npy", by_path)
    print(f"python: mlp{x.shape} -> {by_path.shape}, equal to iree-run-module's (archive by path, index, memory)")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
