"""The models of the parameter-archive suite, written with onnx.helper.

Each builder returns `(model, inputs)`: an ONNX model whose weights are initializers (drawn
from a seeded NumPy generator, so every run builds the same bytes) and one set of inputs.
They are small versions of what users deploy: an MLP, a CNN, a ResNet (basic blocks with batch
normalisation and a strided projection), a transformer encoder layer (layer norm, multi-head
attention, GELU feed-forward) and a GPT decode step (embedding lookup, attention over a KV cache
that the step extends, logits).
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Graph:
    """Collects nodes and initializers; names are made unique by a counter."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def weight(self, base: str, shape, scale: float = None) -> str:
        if scale is None:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
            scale = 1.0 / math.sqrt(max(fan_in, 1))
        name = self.name(base)
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def positive(self, base: str, shape) -> str:
        name = self.name(base)
        value = (0.5 + self.rng.random(shape)).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def const(self, base: str, value: np.ndarray) -> str:
        name = self.name(base)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs, outputs: int = 1, **attrs):
        names = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def model(self, name: str, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model

    def output(self, value: str, name: str) -> str:
        self.nodes.append(helper.make_node("Identity", [value], [name]))
        return name


def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def mlp():
    g = Graph(1)
    h = g.op("Gemm", ["x", g.weight("w1", [64, 128]), g.weight("b1", [128], 0.1)])
    h = g.op("Relu", [h])
    h = g.op("Gemm", [h, g.weight("w2", [128, 10]), g.weight("b2", [10], 0.1)])
    g.output(g.op("Softmax", [h], axis=-1), "y")
    x = np.random.default_rng(101).standard_normal([8, 64]).astype(np.float32)
    return (g.model("mlp", [tensor("x", TensorProto.FLOAT, [8, 64])],
                    [tensor("y", TensorProto.FLOAT, [8, 10])]), [x])


def conv(g, x, cin, cout, k, stride=1):
    return g.op("Conv", [x, g.weight("conv", [cout, cin, k, k])], kernel_shape=[k, k],
                strides=[stride, stride], pads=[k // 2] * 4)


def batch_norm(g, x, channels):
    return g.op("BatchNormalization", [x, g.positive("bn_scale", [channels]),
                                       g.weight("bn_bias", [channels], 0.1),
                                       g.weight("bn_mean", [channels], 0.1),
                                       g.positive("bn_var", [channels])])


def cnn():
    g = Graph(2)
    h = g.op("Relu", [g.op("Add", [conv(g, "x", 3, 16, 3),
                                   g.weight("b", [16, 1, 1], 0.1)])])
    h = g.op("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = g.op("Relu", [conv(g, h, 16, 32, 3)])
    h = g.op("Flatten", [g.op("GlobalAveragePool", [h])])
    g.output(g.op("Gemm", [h, g.weight("fc", [32, 10]), g.weight("fc_b", [10], 0.1)]), "y")
    x = np.random.default_rng(102).standard_normal([2, 3, 32, 32]).astype(np.float32)
    return (g.model("cnn", [tensor("x", TensorProto.FLOAT, [2, 3, 32, 32])],
                    [tensor("y", TensorProto.FLOAT, [2, 10])]), [x])


def basic_block(g, x, cin, cout, stride):
    h = g.op("Relu", [batch_norm(g, conv(g, x, cin, cout, 3, stride), cout)])
    h = batch_norm(g, conv(g, h, cout, cout, 3), cout)
    skip = x if stride == 1 and cin == cout else batch_norm(g, conv(g, x, cin, cout, 1, stride),
                                                             cout)
    return g.op("Relu", [g.op("Add", [h, skip])])


def resnet():
    g = Graph(3)
    h = g.op("Relu", [batch_norm(g, conv(g, "x", 3, 16, 3), 16)])
    h = basic_block(g, h, 16, 16, 1)
    h = basic_block(g, h, 16, 32, 2)
    h = basic_block(g, h, 32, 32, 1)
    h = g.op("Flatten", [g.op("GlobalAveragePool", [h])])
    g.output(g.op("Gemm", [h, g.weight("fc", [32, 10]), g.weight("fc_b", [10], 0.1)]), "y")
    x = np.random.default_rng(103).standard_normal([1, 3, 32, 32]).astype(np.float32)
    return (g.model("resnet", [tensor("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                    [tensor("y", TensorProto.FLOAT, [1, 10])]), [x])


D_MODEL, HEADS = 64, 4
D_HEAD = D_MODEL // HEADS


def layer_norm(g, x):
    return g.op("LayerNormalization", [x, g.positive("ln_g", [D_MODEL]),
                                       g.weight("ln_b", [D_MODEL], 0.1)], axis=-1)


def linear(g, x, cin, cout):
    return g.op("Add", [g.op("MatMul", [x, g.weight("w", [cin, cout])]),
                        g.weight("b", [cout], 0.1)])


def heads(g, x, tokens):
    """[1, tokens, D_MODEL] -> [1, HEADS, tokens, D_HEAD]."""
    shape = g.const("shape", np.array([1, tokens, HEADS, D_HEAD], np.int64))
    return g.op("Transpose", [g.op("Reshape", [x, shape])], perm=[0, 2, 1, 3])


def merge_heads(g, x, tokens):
    shape = g.const("shape", np.array([1, tokens, D_MODEL], np.int64))
    return g.op("Reshape", [g.op("Transpose", [x], perm=[0, 2, 1, 3]), shape])


def attention(g, q, k, v):
    """q [1,H,Tq,Dh], k/v [1,H,Tk,Dh] -> [1,H,Tq,Dh]."""
    scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scale = g.const("scale", np.array(1.0 / math.sqrt(D_HEAD), np.float32))
    probs = g.op("Softmax", [g.op("Mul", [scores, scale])], axis=-1)
    return g.op("MatMul", [probs, v])


def gelu(g, x):
    half = g.const("half", np.array(0.5, np.float32))
    one = g.const("one", np.array(1.0, np.float32))
    root2 = g.const("root2", np.array(math.sqrt(2.0), np.float32))
    erf = g.op("Erf", [g.op("Div", [x, root2])])
    return g.op("Mul", [g.op("Mul", [x, half]), g.op("Add", [erf, one])])


def transformer():
    tokens = 16
    g = Graph(4)
    h = layer_norm(g, "x")
    q, k, v = (heads(g, linear(g, h, D_MODEL, D_MODEL), tokens) for _ in range(3))
    a = linear(g, merge_heads(g, attention(g, q, k, v), tokens), D_MODEL, D_MODEL)
    h = g.op("Add", ["x", a])
    f = linear(g, gelu(g, linear(g, layer_norm(g, h), D_MODEL, 4 * D_MODEL)), 4 * D_MODEL,
               D_MODEL)
    g.output(g.op("Add", [h, f]), "y")
    x = np.random.default_rng(104).standard_normal([1, tokens, D_MODEL]).astype(np.float32)
    return (g.model("transformer", [tensor("x", TensorProto.FLOAT, [1, tokens, D_MODEL])],
                    [tensor("y", TensorProto.FLOAT, [1, tokens, D_MODEL])]), [x])


def gpt_decode():
    past, vocab = 7, 256
    g = Graph(5)
    table = g.weight("embedding", [vocab, D_MODEL], 1.0)
    x = g.op("Gather", [table, "token"], axis=0)  # [1, 1, D_MODEL]
    h = layer_norm(g, x)
    q, k, v = (heads(g, linear(g, h, D_MODEL, D_MODEL), 1) for _ in range(3))
    keys = g.output(g.op("Concat", ["past_k", k], axis=2), "k")
    values = g.output(g.op("Concat", ["past_v", v], axis=2), "v")
    a = linear(g, merge_heads(g, attention(g, q, keys, values), 1), D_MODEL, D_MODEL)
    h = g.op("Add", [x, a])
    g.output(g.op("MatMul", [layer_norm(g, h), g.weight("lm_head", [D_MODEL, vocab])]),
             "logits")
    rng = np.random.default_rng(105)
    inputs = [np.array([[42]], np.int64),
              rng.standard_normal([1, HEADS, past, D_HEAD]).astype(np.float32),
              rng.standard_normal([1, HEADS, past, D_HEAD]).astype(np.float32)]
    cache = [1, HEADS, past, D_HEAD]
    grown = [1, HEADS, past + 1, D_HEAD]
    return (g.model("gpt_decode",
                    [tensor("token", TensorProto.INT64, [1, 1]),
                     tensor("past_k", TensorProto.FLOAT, cache),
                     tensor("past_v", TensorProto.FLOAT, cache)],
                    [tensor("k", TensorProto.FLOAT, grown), tensor("v", TensorProto.FLOAT, grown),
                     tensor("logits", TensorProto.FLOAT, [1, 1, vocab])]), inputs)


MODELS = {
    "mlp": mlp,
    "cnn": cnn,
    "resnet": resnet,
    "transformer": transformer,
    "gpt_decode": gpt_decode,
}
