"""Multiply-accumulates and FLOPs per inference, counted per operator from an ONNX graph.

Written here rather than taken from a library: onnx-tool 1.0.1 (the maintained ONNX
profiler on PyPI) counts BatchNormalization, ReLU and the other elementwise ops as MACs, so
its ResNet-50 v1.5 total is 4.45 G, 9 % above the 4.09 G convention (torchvision, fvcore)
that the issue checks against, and it is not a dependency of this project. The counter
below needs only ``onnx``: it fixes the symbolic input dims, runs onnx shape inference (with
data propagation, so Reshape targets resolve) on a weight-free copy of the graph and applies
one cost rule per operator type.

Conventions: MACs are counted for contraction ops only (Conv, ConvTranspose, MatMul, Gemm,
their integer/QLinear forms and the fused Attention op); their FLOPs are 2 x MACs. Every
other op adds FLOPs by the rule written next to it in ``_RULES``; each rule that applied is
listed in :attr:`FlopCount.approximations`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

import onnx
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from onnx import helper

from harness.errors import ModelError

Shape = tuple[int, ...]
Shapes = Mapping[str, Shape | None]
Cost = tuple[int, int]  # (macs, flops)
CostFn = Callable[[onnx.NodeProto, Shapes], Cost | None]

# Initializers kept with their values in the shape-only copy: small integer tensors are the
# shape operands (Reshape targets, Slice bounds) that data propagation needs; weights are
# replaced by typed graph inputs, so counting never copies them.
_KEEP_ELEM_TYPES: Final = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})
_KEEP_MAX_ELEMENTS: Final = 4096


@dataclass(frozen=True, kw_only=True)
class FlopCount:
    """Work for one inference at the dims it was counted for.

    Attributes:
        macs: Multiply-accumulates of the contraction ops.
        flops: Floating-point (or integer, for quantized ops) operations, 2 per MAC plus
            the other ops' rules.
        by_op: Op type (``domain::Op`` outside the default domain) -> (macs, flops).
        approximations: What was approximated or ignored, one sentence each.
        unknown_ops: Op types counted as 0 because no rule covers them, and
            ``Op (no inferred shape)`` where shape inference gave no static shape.
    """

    macs: int
    flops: int
    by_op: Mapping[str, tuple[int, int]]
    approximations: tuple[str, ...]
    unknown_ops: tuple[str, ...]


def count_flops(model: onnx.ModelProto | Path, *, dims: Mapping[str, int]) -> FlopCount:
    """Counts MACs and FLOPs of one inference with every symbolic input dim fixed.

    Args:
        model: The model, or a path to it (external weight files are not read: only shapes
            are needed).
        dims: A value for each symbolic input dim, e.g. ``{"batch": 1, "seq_len": 128}``.

    Returns:
        The counts for the whole batch; see :func:`flops_per_sample`.

    Raises:
        ModelError: If the file is unreadable, a symbolic dim has no value, a value names
            no symbolic dim, or shape inference fails.
    """
    proto = _load(model) if isinstance(model, Path) else model
    inferred = _infer(_shape_only_copy(proto, dims))
    shapes = _shapes(inferred.graph)
    totals: dict[str, list[int]] = {}
    notes: set[str] = set()
    unknown: set[str] = set()
    for node in inferred.graph.node:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        rule = _RULES.get(key)
        if rule is None:
            unknown.add(key)
            continue
        cost = rule.cost(node, shapes)
        if cost is None:
            unknown.add(f"{key} (no inferred shape)")
            continue
        entry = totals.setdefault(key, [0, 0])
        entry[0], entry[1] = entry[0] + cost[0], entry[1] + cost[1]
        notes.update(rule.notes)
    by_op = MappingProxyType({op: (m, f) for op, (m, f) in sorted(totals.items())})
    return FlopCount(
        macs=sum(m for m, _ in by_op.values()),
        flops=sum(f for _, f in by_op.values()),
        by_op=by_op,
        approximations=tuple(sorted(notes)),
        unknown_ops=tuple(sorted(unknown)),
    )


def flops_per_sample(count: FlopCount, batch_size: int) -> float:
    """FLOPs of one sample from a count made at ``batch_size``.

    Raises:
        ValueError: If ``batch_size`` is not positive.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return count.flops / batch_size


def _load(path: Path) -> onnx.ModelProto:
    try:
        return onnx.load(str(path), load_external_data=False)
    except (OSError, DecodeError, ValueError, RuntimeError) as exc:
        raise ModelError(
            f"{path}: cannot read the model to count FLOPs ({type(exc).__name__})"
        ) from None


def _shape_only_copy(model: onnx.ModelProto, dims: Mapping[str, int]) -> onnx.ModelProto:
    """The graph with fixed input dims and weights replaced by typed inputs (no data)."""
    lite = onnx.ModelProto(ir_version=model.ir_version)
    lite.opset_import.extend(model.opset_import)
    lite.functions.extend(model.functions)
    graph, source = lite.graph, model.graph
    graph.name = source.name
    graph.node.extend(source.node)
    declared = {value.name for value in source.input}
    for init in source.initializer:
        if _is_shape_operand(init):
            graph.initializer.append(init)
        elif init.name not in declared:
            graph.input.append(
                helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    graph.input.extend(source.input)
    graph.output.extend(source.output)
    graph.value_info.extend(source.value_info)
    _fix_dims(graph, dims, model.graph.name or "model")
    return lite


def _is_shape_operand(init: onnx.TensorProto) -> bool:
    external = init.data_location == onnx.TensorProto.EXTERNAL
    size = math.prod(init.dims)
    return not external and init.data_type in _KEEP_ELEM_TYPES and size <= _KEEP_MAX_ELEMENTS


def _fix_dims(graph: onnx.GraphProto, dims: Mapping[str, int], name: str) -> None:
    used: set[str] = set()
    for value in graph.input:
        for dim in value.type.tensor_type.shape.dim:
            if not dim.dim_param:
                continue
            if dim.dim_param not in dims:
                raise ModelError(
                    f"{name}: input '{value.name}' dim '{dim.dim_param}' is symbolic; "
                    "give it a value to count FLOPs"
                )
            used.add(dim.dim_param)
            dim.dim_value = dims[dim.dim_param]
    unused = sorted(set(dims) - used)
    if unused:
        known = ", ".join(sorted(used)) or "none"
        raise ModelError(
            f"{name}: dims {', '.join(unused)} name no symbolic input dim (its dims: {known})"
        )
    for value in (*graph.output, *graph.value_info):
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param in dims:
                dim.dim_value = dims[dim.dim_param]


def _infer(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"shape inference failed while counting FLOPs: {first}") from None


def _shapes(graph: onnx.GraphProto) -> dict[str, Shape | None]:
    """Static shape of every tensor; None where any dim is unknown (a known one wins)."""
    shapes: dict[str, Shape | None] = {init.name: tuple(init.dims) for init in graph.initializer}
    for value in (*graph.input, *graph.value_info, *graph.output):
        tensor = value.type.tensor_type
        dims = tensor.shape.dim if tensor.HasField("shape") else None
        static = None if dims is None or not all(d.HasField("dim_value") for d in dims) else dims
        if static is not None:
            shapes[value.name] = tuple(d.dim_value for d in static)
        else:
            shapes.setdefault(value.name, None)
    return shapes


# --- cost rules -------------------------------------------------------------------------


def _shape(
    node: onnx.NodeProto, shapes: Shapes, index: int, *, output: bool = False
) -> Shape | None:
    names = node.output if output else node.input
    if index >= len(names) or not names[index]:
        return None
    return shapes.get(names[index])


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    for attribute in node.attribute:
        if attribute.name == name:
            return int(helper.get_attribute_value(attribute))
    return default


def _macs(macs: int) -> Cost:
    return macs, 2 * macs


def _conv(weight: int) -> CostFn:
    """Each output element takes (C_in / group) x prod(kernel) MACs: prod(W.shape[1:])."""

    def cost(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
        out, w = _shape(node, shapes, 0, output=True), _shape(node, shapes, weight)
        return None if out is None or w is None else _macs(math.prod(out) * math.prod(w[1:]))

    return cost


def _conv_transpose(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    """Each input element scatters into (C_out / group) x prod(kernel) outputs."""
    x, w = _shape(node, shapes, 0), _shape(node, shapes, 1)
    return None if x is None or w is None else _macs(math.prod(x) * math.prod(w[1:]))


def _matmul(a_index: int) -> CostFn:
    """Each (broadcast) output element is a dot product over A's last axis."""

    def cost(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
        out, a = _shape(node, shapes, 0, output=True), _shape(node, shapes, a_index)
        return None if out is None or not a else _macs(math.prod(out) * a[-1])

    return cost


def _gemm(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    out, a = _shape(node, shapes, 0, output=True), _shape(node, shapes, 0)
    if out is None or a is None or len(a) != 2:
        return None
    return _macs(math.prod(out) * a[0 if _attr(node, "transA", 0) else 1])


def _attention(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    """ai.onnx Attention (opset 23): QK^T and PV matmuls plus a softmax per score."""
    q, k, v = (_shape(node, shapes, i) for i in range(3))
    if q is None or k is None or v is None or len(q) not in (3, 4):
        return None
    past = _shape(node, shapes, 4)
    if len(q) == 4:
        batch, heads, s_q, d_qk = q
        s_kv, d_v = k[2], v[3]
    else:
        heads = _attr(node, "q_num_heads", 0)
        kv_heads = _attr(node, "kv_num_heads", 0)
        if heads <= 0 or kv_heads <= 0:
            return None
        batch, s_q, d_qk = q[0], q[1], q[2] // heads
        s_kv, d_v = k[1], v[2] // kv_heads
    s_kv += past[2] if past else 0
    scores = batch * heads * s_q * s_kv
    macs = scores * (d_qk + d_v)
    return macs, 2 * macs + SOFTMAX_FLOPS * scores


def _per_output(flops: int) -> CostFn:
    def cost(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
        out = _shape(node, shapes, 0, output=True)
        return None if out is None else (0, flops * math.prod(out))

    return cost


def _per_input(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    x = _shape(node, shapes, 0)
    return None if x is None else (0, math.prod(x))


def _pool(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    out = _shape(node, shapes, 0, output=True)
    kernel = next((list(a.ints) for a in node.attribute if a.name == "kernel_shape"), None)
    return None if out is None or kernel is None else (0, math.prod(out) * math.prod(kernel))


def _layer_norm(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    has_bias = len(node.input) > 2 and bool(node.input[2])
    return _per_output(LAYER_NORM_FLOPS + int(has_bias))(node, shapes)


def _free(node: onnx.NodeProto, shapes: Shapes) -> Cost | None:
    return 0, 0


SOFTMAX_FLOPS: Final = 5  # max, subtract, exp, sum, divide per element
LAYER_NORM_FLOPS: Final = 6  # mean, subtract, square, variance sum, normalise, scale (+ bias)


@dataclass(frozen=True)
class _Rule:
    cost: CostFn
    notes: tuple[str, ...]


_MAC_NOTE: Final = (
    "FLOPs = 2 x MACs for Conv, ConvTranspose, MatMul, Gemm and Attention; bias adds and "
    "Gemm's alpha/beta scaling are not counted; zero padding counts as MACs"
)
_QUANT_NOTE: Final = "integer ops (ConvInteger, QLinear*, MatMulInteger) count 2 ops per MAC"
_CONV_T_NOTE: Final = "ConvTranspose counts every input element x kernel, incl. cropped outputs"
_ELEMENTWISE_NOTE: Final = (
    "elementwise ops counted as 1 FLOP per output element (transcendentals and comparisons too)"
)
_SOFTMAX_NOTE: Final = f"Softmax/LogSoftmax counted as {SOFTMAX_FLOPS} FLOPs per element"
_NORM_NOTE: Final = (
    "BatchNormalization counted as 2 FLOPs per element (inference scale and shift); "
    f"Layer/Group/InstanceNormalization as {LAYER_NORM_FLOPS + 1}, RMSNormalization as 4"
)
_REDUCE_NOTE: Final = (
    "pooling counted as kernel-size FLOPs per output element; global pooling, reductions "
    "and ArgMax/ArgMin as 1 FLOP per input element"
)
_ATTENTION_NOTE: Final = (
    f"Attention adds {SOFTMAX_FLOPS} FLOPs per score for its softmax; mask and scale not counted"
)
_MOVE_NOTE: Final = "data-movement ops (Reshape, Transpose, Gather, Concat, ...) counted as 0"

_ELEMENTWISE: Final = (
    "Abs Acos Acosh Add And Asin Asinh Atan Atanh BitShift Ceil Celu Clip Cos Cosh "
    "DequantizeLinear Div Elu Equal Erf Exp Floor Gelu Greater GreaterOrEqual HardSigmoid "
    "HardSwish IsInf IsNaN LeakyRelu Less LessOrEqual Log Max Mean Min Mish Mod Mul Neg Not Or "
    "PRelu Pow QuantizeLinear Reciprocal Relu Resize Round Selu Sigmoid Sign Sin Sinh Softplus "
    "Softsign Sqrt Sub Sum Tan Tanh ThresholdedRelu Where Xor"
)
_REDUCTIONS: Final = (
    "ArgMax ArgMin GlobalAveragePool GlobalLpPool GlobalMaxPool ReduceL1 ReduceL2 "
    "ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum "
    "ReduceSumSquare"
)
_DATA_MOVEMENT: Final = (
    "Cast CastLike Concat Constant ConstantOfShape DepthToSpace Dropout Expand EyeLike "
    "Flatten Gather GatherElements GatherND Identity NonZero OneHot Pad Range Reshape "
    "ScatterElements ScatterND Shape Size Slice SpaceToDepth Split Squeeze Tile Transpose "
    "Trilu Unsqueeze"
)


def _table() -> dict[str, _Rule]:
    rules = {
        "Conv": _Rule(_conv(1), (_MAC_NOTE,)),
        "ConvTranspose": _Rule(_conv_transpose, (_MAC_NOTE, _CONV_T_NOTE)),
        "MatMul": _Rule(_matmul(0), (_MAC_NOTE,)),
        "Gemm": _Rule(_gemm, (_MAC_NOTE,)),
        "Attention": _Rule(_attention, (_MAC_NOTE, _ATTENTION_NOTE)),
        "ConvInteger": _Rule(_conv(1), (_QUANT_NOTE,)),
        "QLinearConv": _Rule(_conv(3), (_QUANT_NOTE,)),
        "MatMulInteger": _Rule(_matmul(0), (_QUANT_NOTE,)),
        "QLinearMatMul": _Rule(_matmul(0), (_QUANT_NOTE,)),
        "Softmax": _Rule(_per_output(SOFTMAX_FLOPS), (_SOFTMAX_NOTE,)),
        "LogSoftmax": _Rule(_per_output(SOFTMAX_FLOPS), (_SOFTMAX_NOTE,)),
        "BatchNormalization": _Rule(_per_output(2), (_NORM_NOTE,)),
        "LayerNormalization": _Rule(_layer_norm, (_NORM_NOTE,)),
        "GroupNormalization": _Rule(_per_output(LAYER_NORM_FLOPS + 1), (_NORM_NOTE,)),
        "InstanceNormalization": _Rule(_per_output(LAYER_NORM_FLOPS + 1), (_NORM_NOTE,)),
        "RMSNormalization": _Rule(_per_output(4), (_NORM_NOTE,)),
        "MaxPool": _Rule(_pool, (_REDUCE_NOTE,)),
        "AveragePool": _Rule(_pool, (_REDUCE_NOTE,)),
        "LpPool": _Rule(_pool, (_REDUCE_NOTE,)),
    }
    rules.update(_group(_ELEMENTWISE.split(), _Rule(_per_output(1), (_ELEMENTWISE_NOTE,))))
    rules.update(_group(_REDUCTIONS.split(), _Rule(_per_input, (_REDUCE_NOTE,))))
    rules.update(_group(_DATA_MOVEMENT.split(), _Rule(_free, (_MOVE_NOTE,))))
    return rules


def _group(names: Iterable[str], rule: _Rule) -> dict[str, _Rule]:
    return dict.fromkeys(names, rule)


_RULES: Final[Mapping[str, _Rule]] = MappingProxyType(_table())
