"""4-bit blockwise MatMul weights (harness.runtime.nbits) run by onnxruntime's MatMulNBits.

Real onnxruntime sessions over real converted graphs. The Q4_1 case is SmolLM2's: its
weights came from a GGUF Q4_1 file (32 weights a block along K, ``d * q + m``), so a
4-bit block quantizer with the block's own minimum reproduces them exactly, where
onnxruntime's own quantizer (uint4 zero points) moves them by several percent.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.runtime.convert import to_int4
from harness.runtime.nbits import dequantize, quantize_blockwise, to_matmul_nbits

K, N, BLOCK = 576, 192, 32


def q4_1_grid(rng: np.random.Generator) -> np.ndarray:
    """A (K, N) weight on GGUF Q4_1's grid: per block of 32 along K, ``d * code + m``.

    As llama.cpp's quantizer makes them, each block's minimum is code 0 and its maximum 15.
    """
    codes = rng.integers(0, 16, size=(N, K)).astype(np.float32)
    codes[:, 0::BLOCK], codes[:, 1::BLOCK] = 0, 15
    d = np.repeat(rng.uniform(0.01, 0.05, size=(N, K // BLOCK)), BLOCK, axis=1)
    m = np.repeat(rng.uniform(-0.3, 0.1, size=(N, K // BLOCK)), BLOCK, axis=1)
    return np.ascontiguousarray((codes * d + m).T, dtype=np.float32)


def matmul_model(weight: np.ndarray) -> onnx.ModelProto:
    k, n = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "s", n])],
        [numpy_helper.from_array(weight, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, {"x": x})[0]
    return out


def relative_error(y: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(y - exact).max() / np.abs(exact).max())


def test_a_q4_1_weight_is_reproduced_exactly_by_blocks_along_k() -> None:
    weight = q4_1_grid(np.random.default_rng(0))
    q = quantize_blockwise(weight, block_size=BLOCK, symmetric=False)
    assert q.packed.shape == (N, K // BLOCK, BLOCK // 2)
    np.testing.assert_allclose(dequantize(q), weight, atol=1e-6)
    # blocks along N instead (the transposed weight) do not fit the grid: the axis matters
    across = quantize_blockwise(np.ascontiguousarray(weight.T), block_size=BLOCK, symmetric=False)
    assert np.abs(dequantize(across).T - weight).max() > 1e-2


def test_the_graph_runs_the_q4_1_weight_exactly_and_onnxruntimes_quantizer_does_not() -> None:
    pytest.importorskip("onnx_ir", reason="onnx-ir is not installed (llm extra: INT4)")
    rng = np.random.default_rng(1)
    weight = q4_1_grid(rng)
    x = rng.standard_normal((2, 5, K)).astype(np.float32)
    exact = x @ weight
    ours = to_int4(matmul_model(weight), block_size=BLOCK, symmetric=False, zero_points="float")
    nbits = [n for n in ours.graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) == 1 and len(nbits[0].input) == 3  # no zero points: the fast kernel
    assert "w" not in {i.name for i in ours.graph.initializer}  # the FP32 weight is gone
    assert relative_error(run(ours, x), exact) < 1e-5
    theirs = to_int4(matmul_model(weight), block_size=BLOCK, symmetric=False, zero_points="uint4")
    assert relative_error(run(theirs, x), exact) > 1e-2


def test_symmetric_blocks_round_to_within_half_a_step() -> None:
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((K, N)).astype(np.float32)
    q = quantize_blockwise(weight, block_size=BLOCK, symmetric=True)
    assert q.zero_points is None
    step = np.repeat(q.scales.reshape(N, K // BLOCK), BLOCK, axis=1).T
    assert np.all(np.abs(dequantize(q) - weight) <= step / 2 + 1e-6)
    model = to_matmul_nbits(matmul_model(weight), block_size=BLOCK, symmetric=True)
    x = rng.standard_normal((1, 3, K)).astype(np.float32)
    np.testing.assert_allclose(run(model, x), x @ dequantize(q), rtol=1e-4, atol=1e-4)


def test_a_k_that_is_no_multiple_of_the_block_is_padded() -> None:
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((40, 8)).astype(np.float32)
    q = quantize_blockwise(weight, block_size=BLOCK, symmetric=False)
    assert dequantize(q).shape == (40, 8)
    model = to_matmul_nbits(matmul_model(weight), block_size=BLOCK, symmetric=False)
    x = rng.standard_normal((1, 2, 40)).astype(np.float32)
    np.testing.assert_allclose(run(model, x), x @ dequantize(q), rtol=1e-4, atol=1e-4)


def test_activation_matmuls_and_a_computed_weight_stay_float32() -> None:
    rng = np.random.default_rng(4)
    table = rng.standard_normal((16, 64)).astype(np.float32)  # a tied head: B = table^T
    graph = helper.make_graph(
        [
            helper.make_node("Transpose", ["table"], ["head"], perm=[1, 0]),
            helper.make_node("MatMul", ["x", "head"], ["logits"]),
            helper.make_node("MatMul", ["x", "xt"], ["scores"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64]),
            helper.make_tensor_value_info("xt", TensorProto.FLOAT, [64, 2]),
        ],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 16]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 2]),
        ],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    out = to_matmul_nbits(model, block_size=BLOCK, symmetric=False)
    assert [n.op_type for n in out.graph.node] == ["Transpose", "MatMul", "MatMul"]
    assert [i.name for i in out.graph.initializer] == ["table"]
