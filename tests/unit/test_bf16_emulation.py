"""harness.models.bf16_emulation: a BF16 model run on the CPU rounds exactly where BF16 stores."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from harness.models.bf16_emulation import emulate_bf16
from harness.models.precision import bf16_tensor


def _round_bf16(values: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    top = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return top.view(np.float32)


def _bf16_model(weights: np.ndarray) -> onnx.ModelProto:
    """float x -> Cast(bf16) -> Mul(bf16 w) -> Relu (bf16) -> Cast(float) -> y."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16),
            helper.make_node("Mul", ["xb", "w"], ["m"]),
            helper.make_node("Relu", ["m"], ["r"]),
            helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT),
        ],
        "bf16",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [bf16_tensor("w", weights)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_emulated_model_rounds_every_bf16_tensor() -> None:
    weights = np.array([1.001, -2.7183, 3.14159, 0.3333], np.float32)
    x = np.array([1.2345, 2.5, -0.7777, 100.01], np.float32)
    emulated = emulate_bf16(_bf16_model(weights))
    onnx.checker.check_model(emulated, full_check=True)
    assert all(i.data_type == TensorProto.FLOAT for i in emulated.graph.initializer)
    session = ort.InferenceSession(emulated.SerializeToString(), providers=["CPUExecutionProvider"])
    [y] = session.run(None, {"x": x})
    expected = _round_bf16(np.maximum(_round_bf16(_round_bf16(x) * _round_bf16(weights)), 0))
    np.testing.assert_array_equal(y, expected)
    assert not np.array_equal(y, np.maximum(x * weights, 0))  # the rounding is there


def test_a_model_without_bf16_is_refused() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "fp32",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(ValueError, match="not a BF16 model"):
        emulate_bf16(model)
