"""FLOP counting: hand-computed small graphs, the zoo's reference models and batch scaling."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from harness.analysis.flops import FlopCount, count_flops, flops_per_sample
from harness.errors import ModelError
from harness.models.zoo import build_bert_base, build_resnet50, build_tiny

RESNET50_TORCHVISION_MACS = 4.09e9
IMAGE_DIMS = {"height": 224, "width": 224}


def _model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, Sequence[int | str]],
    weights: dict[str, Sequence[int]] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """One-graph model whose outputs are the last node's; weights are zero initializers."""
    inits = [
        numpy_helper.from_array(np.zeros(shape, np.float32), name)
        for name, shape in (weights or {}).items()
    ]
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in nodes[-1].output],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _node(op: str, inputs: Sequence[str], output: str = "y", **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), [output], **attrs)


def _count(model: onnx.ModelProto, **dims: int) -> FlopCount:
    return count_flops(model, dims=dims)


def test_grouped_strided_padded_conv() -> None:
    # x [1, 4, 8, 8], w [6, 2, 3, 3], group 2, stride 2, pad 1 -> y [1, 6, 4, 4];
    # each output: (4 / 2) * 3 * 3 = 18 MACs.
    conv = _node("Conv", ["x", "w"], group=2, strides=[2, 2], pads=[1, 1, 1, 1])
    count = _count(_model([conv], {"x": [1, 4, 8, 8]}, {"w": [6, 2, 3, 3]}))
    assert count.macs == 1 * 6 * 4 * 4 * 18 == 1728
    assert count.flops == 3456
    assert dict(count.by_op) == {"Conv": (1728, 3456)}
    assert count.unknown_ops == ()


def test_conv_transpose_counts_each_input_element_times_kernel() -> None:
    # x [1, 4, 5, 5], w [4, 2, 3, 3], group 2 -> C_out 4; stride 2 -> y [1, 4, 11, 11].
    node = _node("ConvTranspose", ["x", "w"], group=2, strides=[2, 2])
    count = _count(_model([node], {"x": [1, 4, 5, 5]}, {"w": [4, 2, 3, 3]}))
    assert count.macs == 4 * 5 * 5 * (2 * 3 * 3) == 1800
    assert count.flops == 3600


def test_batched_broadcasting_matmul() -> None:
    # [2, 1, 5, 3] @ [4, 3, 7] -> [2, 4, 5, 7], K = 3.
    model = _model([_node("MatMul", ["a", "b"])], {"a": [2, 1, 5, 3], "b": [4, 3, 7]})
    assert _count(model).macs == 2 * 4 * 5 * 7 * 3 == 840


def test_vector_matrix_matmul() -> None:
    model = _model([_node("MatMul", ["a", "b"])], {"a": [3], "b": [3, 7]})
    assert _count(model).macs == 21


@pytest.mark.parametrize(
    ("trans_a", "a_shape", "trans_b", "b_shape"),
    [(0, [5, 3], 0, [3, 4]), (1, [3, 5], 1, [4, 3]), (1, [3, 5], 0, [3, 4])],
)
def test_gemm_transposes(
    trans_a: int, a_shape: list[int], trans_b: int, b_shape: list[int]
) -> None:
    # M = 5, K = 3, N = 4 whichever operand is transposed; the bias C adds nothing.
    node = _node("Gemm", ["a", "b", "c"], transA=trans_a, transB=trans_b, alpha=2.0)
    model = _model([node], {"a": a_shape}, {"b": b_shape, "c": [4]})
    count = _count(model)
    assert (count.macs, count.flops) == (60, 120)


def test_attention_pattern() -> None:
    # q [1, 2, 4, 8] @ kT [1, 2, 8, 6] -> scores [1, 2, 4, 6] (48 scores x 8 MACs),
    # softmax 5 FLOPs per score, probs @ v [1, 2, 6, 8] -> [1, 2, 4, 8] (64 outputs x 6 MACs).
    nodes = [
        _node("MatMul", ["q", "kt"], "scores"),
        _node("Softmax", ["scores"], "probs", axis=-1),
        _node("MatMul", ["probs", "v"]),
    ]
    inputs = {"q": [1, 2, 4, 8], "kt": [1, 2, 8, 6], "v": [1, 2, 6, 8]}
    count = _count(_model(nodes, inputs))
    assert count.by_op["MatMul"] == (384 + 384, 2 * 768)
    assert count.by_op["Softmax"] == (0, 5 * 48)
    assert (count.macs, count.flops) == (768, 1536 + 240)


def test_fused_attention_op_matches_the_pattern() -> None:
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"])
    inputs = {"q": [1, 2, 4, 8], "k": [1, 2, 6, 8], "v": [1, 2, 6, 8]}
    count = _count(_model([node], inputs, opset=23))
    assert (count.macs, count.flops) == (768, 1536 + 240)


def test_fused_attention_op_3d_with_grouped_kv_heads() -> None:
    # 4 query heads of 8 over 2 kv heads: 1 x 4 heads x 5 queries x 6 keys x (8 + 8) MACs.
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=4, kv_num_heads=2)
    inputs = {"q": [1, 5, 32], "k": [1, 6, 16], "v": [1, 6, 16]}
    count = _count(_model([node], inputs, opset=23))
    assert count.macs == 4 * 5 * 6 * 16 == 1920
    assert count.flops == 2 * 1920 + 5 * 4 * 5 * 6


def test_layer_normalization_with_and_without_bias() -> None:
    with_bias = _node("LayerNormalization", ["x", "g", "b"], axis=-1)
    no_bias = _node("LayerNormalization", ["x", "g"], axis=-1)
    weights = {"g": [4], "b": [4]}
    assert _count(_model([with_bias], {"x": [2, 3, 4]}, weights)).flops == 24 * 7
    assert _count(_model([no_bias], {"x": [2, 3, 4]}, {"g": [4]})).flops == 24 * 6


def test_batch_normalization_is_a_scale_and_shift() -> None:
    node = _node("BatchNormalization", ["x", "s", "b", "m", "v"])
    weights = {name: [3] for name in "sbmv"}
    count = _count(_model([node], {"x": [1, 3, 4, 4]}, weights))
    assert (count.macs, count.flops) == (0, 48 * 2)


def test_elementwise_ops_cost_one_flop_per_output_element() -> None:
    nodes = [_node("Add", ["a", "b"], "s"), _node("Relu", ["s"])]
    count = _count(_model(nodes, {"a": [2, 3], "b": [3]}))
    assert dict(count.by_op) == {"Add": (0, 6), "Relu": (0, 6)}
    assert any("1 FLOP per output element" in note for note in count.approximations)


def test_pooling_and_data_movement() -> None:
    nodes = [
        _node("MaxPool", ["x"], "p", kernel_shape=[2, 2], strides=[2, 2]),
        _node("Flatten", ["p"], "f"),
        _node("ReduceSum", ["f"], keepdims=0),
    ]
    count = _count(_model(nodes, {"x": [1, 2, 4, 4]}))
    assert count.by_op["MaxPool"] == (0, 8 * 4)
    assert count.by_op["Flatten"] == (0, 0)
    assert count.by_op["ReduceSum"] == (0, 8)


def test_unknown_ops_are_listed_not_guessed() -> None:
    nodes = [helper.make_node("Mystery", ["x"], ["m"], domain="com.example"), _node("Relu", ["m"])]
    model = _model(nodes, {"x": [2, 2]})
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    count = _count(model)
    assert count.unknown_ops == ("Relu (no inferred shape)", "com.example::Mystery")
    assert (count.macs, count.flops) == (0, 0)


def test_symbolic_dims_fixed_on_a_copy() -> None:
    model = build_tiny()
    count = count_flops(model, dims={"batch": 2})
    assert count.by_op["Conv"][0] == 2 * count_flops(model, dims={"batch": 1}).by_op["Conv"][0]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_missing_and_unknown_dims_are_errors() -> None:
    with pytest.raises(ModelError, match="dim 'batch' is symbolic"):
        count_flops(build_tiny(), dims={})
    with pytest.raises(ModelError, match="bacth name no symbolic input dim"):
        count_flops(build_tiny(), dims={"batch": 1, "bacth": 1})


def test_counts_from_a_file_with_external_weights(tmp_path: Path) -> None:
    model = build_tiny()
    path = tmp_path / "tiny.onnx"
    onnx.save(model, str(path), save_as_external_data=True, size_threshold=0)
    assert count_flops(path, dims={"batch": 1}) == count_flops(model, dims={"batch": 1})


def test_unreadable_file_is_a_model_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\xff\x00 not a protobuf")
    with pytest.raises(ModelError, match="cannot read the model"):
        count_flops(path, dims={})


def test_flops_per_sample_divides_by_the_batch() -> None:
    count = FlopCount(macs=4, flops=12, by_op={}, approximations=(), unknown_ops=())
    assert flops_per_sample(count, 4) == 3.0
    with pytest.raises(ValueError, match="positive"):
        flops_per_sample(count, 0)


# --- reference models -------------------------------------------------------------------


@pytest.fixture(scope="module")
def resnet50() -> onnx.ModelProto:
    return build_resnet50()


@pytest.fixture(scope="module")
def bert_base() -> onnx.ModelProto:
    return build_bert_base()


def test_resnet50_matches_torchvision(resnet50: onnx.ModelProto) -> None:
    count = count_flops(resnet50, dims={"batch": 1, **IMAGE_DIMS})
    # Conv MACs of ResNet-50 v1.5 plus a 2048 x 1001 classifier (the MLPerf file's classes).
    assert count.macs == 4_087_136_256 + 2048 * 1001
    assert count.macs == pytest.approx(RESNET50_TORCHVISION_MACS, rel=0.02)
    assert count.unknown_ops == ()


def test_bert_base_matches_its_layer_shapes(bert_base: onnx.ModelProto) -> None:
    seq, hidden, inter, layers = 128, 768, 3072, 12
    per_layer = 4 * seq * hidden * hidden + 2 * seq * seq * hidden + 2 * seq * hidden * inter
    expected = layers * per_layer + seq * hidden * 2
    count = count_flops(bert_base, dims={"batch": 1, "seq_len": seq})
    assert count.macs == pytest.approx(expected, rel=0.02)
    assert count.macs == pytest.approx(11.2e9, rel=0.02)
    assert count.unknown_ops == ()


def test_batch_scaling(resnet50: onnx.ModelProto, bert_base: onnx.ModelProto) -> None:
    for model, dims in ((resnet50, IMAGE_DIMS), (bert_base, {"seq_len": 128})):
        one = count_flops(model, dims={"batch": 1, **dims})
        four = count_flops(model, dims={"batch": 4, **dims})
        assert (four.macs, four.flops) == (4 * one.macs, 4 * one.flops)
        assert flops_per_sample(four, 4) == flops_per_sample(one, 1) == one.flops
