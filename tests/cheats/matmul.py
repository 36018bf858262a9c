"""A small ONNX classifier whose answer depends on its input: seeded MatMuls over 64 tokens.

Input x [N, 64, 256] float32; three MatMul+Tanh layers of 256x256 (seeded; Tanh keeps the
activations zero-mean, so the pooled features differ per input: 44 classes over 64 random
inputs), a mean over the tokens and a 256x100 MatMul: logits [N, 100]. About 25 MFLOP per
sample, so that at batch 1 a cache answering in microseconds needs far more FLOP/s than the
CPU has.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOKENS, WIDTH, CLASSES, LAYERS = 64, 256, 100, 3


def write_matmul_model(path: Path, seed: int = 25) -> Path:
    """Write the model to ``path`` (deterministic for a seed) and return it."""
    rng = np.random.default_rng(seed)
    nodes, inits, last = [], [], "x"
    for layer in range(LAYERS):
        weight = (rng.standard_normal((WIDTH, WIDTH)) * np.sqrt(1.0 / WIDTH)).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"w{layer}"))
        nodes.append(helper.make_node("MatMul", [last, f"w{layer}"], [f"m{layer}"]))
        nodes.append(helper.make_node("Tanh", [f"m{layer}"], [f"r{layer}"]))
        last = f"r{layer}"
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axes"))
    nodes.append(helper.make_node("ReduceMean", [last, "axes"], ["pooled"], keepdims=0))
    head = (rng.standard_normal((WIDTH, CLASSES)) / np.sqrt(WIDTH)).astype(np.float32)
    inits.append(numpy_helper.from_array(head, "head"))
    nodes.append(helper.make_node("MatMul", ["pooled", "head"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "input_dependent_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", TOKENS, WIDTH])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path
