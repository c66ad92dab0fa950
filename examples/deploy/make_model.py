"""Writes the example model of README.md's "Deploying a model": a small MLP classifier in
ONNX (two Gemm layers with a ReLU between them, weights as initializers), an input batch, and
the output NumPy computes for it.

    python make_model.py OUT_DIR   ->  OUT_DIR/mlp.onnx, OUT_DIR/input.npy, OUT_DIR/expected.npy
"""

import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH, FEATURES, HIDDEN, CLASSES = 4, 16, 32, 10


def main(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(22)
    w1 = rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) * 0.25
    b1 = rng.standard_normal(HIDDEN).astype(np.float32) * 0.1
    w2 = rng.standard_normal((HIDDEN, CLASSES)).astype(np.float32) * 0.25
    b2 = rng.standard_normal(CLASSES).astype(np.float32) * 0.1
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, FEATURES])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [BATCH, CLASSES])],
        initializer=[
            numpy_helper.from_array(w1, "w1"),
            numpy_helper.from_array(b1, "b1"),
            numpy_helper.from_array(w2, "w2"),
            numpy_helper.from_array(b2, "b2"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, out / "mlp.onnx")
    x = rng.standard_normal((BATCH, FEATURES)).astype(np.float32)
    np.save(out / "input.npy", x)
    np.save(out / "expected.npy", np.maximum(x @ w1 + b1, 0) @ w2 + b2)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
