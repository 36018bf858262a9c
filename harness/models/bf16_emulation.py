"""A BF16 model made runnable on onnxruntime's CPU provider, with its BF16 rounding kept.

onnxruntime's CPU provider has no BF16 kernels, so `harness run --precision bf16` refuses the
CPU. To still measure what BF16 does to a model's outputs on a machine without a GPU, this
rewrites the model that the harness's BF16 recipe produced: every BF16 tensor becomes a
float32 tensor holding exactly the BF16 value. BF16 weights are widened (exact); each op that
computed in BF16 computes in float32 and its output is rounded to BF16 (round to nearest even,
a Cast to BF16 and back); the recipe's own Casts to BF16 round the same way. What differs from
a GPU running the BF16 model is only the arithmetic inside an op (float32 here, as BF16
kernels accumulate), never which values are stored in BF16. Its speed means nothing.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_SUFFIX: Final = "/bf16-emulated"


def emulate_bf16(model: onnx.ModelProto) -> onnx.ModelProto:
    """The BF16 ``model`` with float32 tensors and BF16 rounding wherever it stored BF16.

    Raises:
        ValueError: If the model holds no BF16 tensor (nothing to emulate).
    """
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {
        v.name: v.type.tensor_type.elem_type
        for v in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output)
    }
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    widened = _widen_initializers(graph)
    nodes: list[onnx.NodeProto] = []
    rounded = 0
    for node in graph.node:
        _widen_attributes(node)
        bf16_outputs = [o for o in node.output if types.get(o) == TensorProto.BFLOAT16]
        for output in bf16_outputs:
            index = list(node.output).index(output)
            node.output[index] = output + _SUFFIX
        nodes.append(node)
        for output in bf16_outputs:
            nodes += _round_trip(output + _SUFFIX, output, from_bf16=_is_cast_to_bf16(node))
            rounded += 1
    if not rounded and not widened:
        raise ValueError("the model holds no BF16 tensor: not a BF16 model")
    del graph.node[:]
    graph.node.extend(nodes)
    for value in (*graph.value_info, *graph.input, *graph.output):
        if value.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            value.type.tensor_type.elem_type = TensorProto.FLOAT
    return out


def _is_cast_to_bf16(node: onnx.NodeProto) -> bool:
    return node.op_type == "Cast" and any(
        a.name == "to" and a.i == TensorProto.BFLOAT16 for a in node.attribute
    )


def _round_trip(source: str, target: str, *, from_bf16: bool) -> list[onnx.NodeProto]:
    """Nodes that give ``target`` (float32) the BF16-rounded value of ``source``."""
    widen = helper.make_node(
        "Cast", [source + "/bf16" if not from_bf16 else source], [target], to=TensorProto.FLOAT
    )
    if from_bf16:  # the recipe's own Cast to BF16 already rounded
        return [widen]
    narrow = helper.make_node("Cast", [source], [source + "/bf16"], to=TensorProto.BFLOAT16)
    return [narrow, widen]


def _widen_initializers(graph: onnx.GraphProto) -> int:
    count = 0
    for init in graph.initializer:
        if init.data_type == TensorProto.BFLOAT16:
            init.CopyFrom(_widened(init))
            count += 1
    return count


def _widen_attributes(node: onnx.NodeProto) -> None:
    for attr in node.attribute:
        if attr.type == attr.TENSOR and attr.t.data_type == TensorProto.BFLOAT16:
            attr.t.CopyFrom(_widened(attr.t))


def _widened(tensor: onnx.TensorProto) -> onnx.TensorProto:
    """A BF16 tensor as float32 holding the same values (exact: BF16 is float32's top half)."""
    values = np.asarray(numpy_helper.to_array(tensor)).astype(np.float32)
    return numpy_helper.from_array(values, tensor.name)
