"""Seeded, architecture-exact ONNX generators (synthetic weights) for the benchmark model zoo."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET: Final = 17
IR_VERSION: Final = 8
PRODUCER: Final = "beyond-tops"

_VERSIONS: Final[Mapping[str, int]] = MappingProxyType(
    {"tiny": 1, "mobilenet_v2": 1, "resnet50": 1, "bert_base": 1, "null": 1}
)
# MobileNet-v2 inverted-residual settings: (expansion t, out channels c, repeats n, stride s).
_MBV2_BLOCKS: Final = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
# Features per sample of the null model: small, so copying it costs next to nothing.
NULL_WIDTH: Final = 16
# ResNet-50 stages: (bottleneck width, number of blocks, stride of the first block).
_RESNET50_STAGES: Final = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))

Dims = Sequence[int | str]


class _Graph:
    """Accumulates nodes and seeded initializers with unique names, then emits a model."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._consts: dict[tuple[str, tuple[int, ...], bytes], str] = {}

    def init(self, name: str, array: npt.NDArray[Any]) -> str:
        """Adds an initializer under a name that must be new; returns the name."""
        if name in self._names:
            raise ValueError(f"duplicate tensor name {name!r}")
        self._names.add(name)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def normal(self, name: str, shape: tuple[int, ...], std: float) -> str:
        """Adds a float32 N(0, std^2) initializer drawn from the seeded generator."""
        return self.init(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std))

    def uniform(self, name: str, size: int, low: float, high: float) -> str:
        """Adds a float32 vector drawn uniformly from [low, high)."""
        return self.init(name, self.rng.uniform(low, high, size).astype(np.float32))

    def const(self, values: float | Sequence[float], dtype: type[np.generic]) -> str:
        """Returns a shared constant initializer holding ``values`` as ``dtype``."""
        arr = np.asarray(values, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(f"const_{len(self._consts)}", arr)
        return self._consts[key]

    def ops(
        self,
        op_type: str,
        inputs: Sequence[str],
        n_out: int,
        outs: Sequence[str] = (),
        **attrs: Any,
    ) -> list[str]:
        """Appends a node with ``n_out`` outputs (auto-named unless ``outs``); returns them."""
        name = f"{op_type}_{len(self.nodes)}"
        outputs = list(outs) or [f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs

    def op(self, op_type: str, inputs: Sequence[str], out: str = "", **attrs: Any) -> str:
        """Appends a single-output node and returns its output name."""
        return self.ops(op_type, inputs, 1, [out] if out else (), **attrs)[0]

    def model(
        self,
        name: str,
        seed: int,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
    ) -> onnx.ModelProto:
        """Wraps the accumulated graph into a model with the zoo's opset, IR and metadata."""
        version = _VERSIONS[name]
        graph = helper.make_graph(self.nodes, name, list(inputs), list(outputs), self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name=PRODUCER,
            producer_version=str(version),
            doc_string=(
                f"Seeded synthetic-weight generator output for {name} (seed={seed}, "
                f"generator_version={version}): the exact architecture with random "
                "weights, not trained weights; accuracy is meaningless."
            ),
        )
        meta = {"zoo.model": name, "zoo.seed": str(seed), "zoo.generator_version": str(version)}
        helper.set_model_props(model, meta)
        return model


def _value(name: str, elem_type: int, dims: Dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, list(dims))


def _conv(
    g: _Graph,
    x: str,
    name: str,
    cin: int,
    cout: int,
    k: int,
    *,
    stride: int = 1,
    group: int = 1,
    bias: bool = False,
) -> str:
    """He-normal (fan-in, ReLU gain) Conv with 'same' padding for odd kernels."""
    fan_in = cin // group * k * k
    inputs = [x, g.normal(f"{name}.weight", (cout, cin // group, k, k), math.sqrt(2.0 / fan_in))]
    if bias:
        inputs.append(g.init(f"{name}.bias", np.zeros(cout, np.float32)))
    return g.op(
        "Conv",
        inputs,
        kernel_shape=[k, k],
        strides=[stride, stride],
        pads=[k // 2] * 4,
        group=group,
    )


def _batch_norm(g: _Graph, x: str, name: str, channels: int, expected_var: float) -> str:
    """BatchNormalization with plausible seeded statistics.

    The running variance is centred on the variance the He-initialised conv is expected to
    produce (as if calibrated), so each BN output is roughly unit-variance and residual
    streams grow linearly rather than doubling per block.
    """
    gamma = g.uniform(f"{name}.weight", channels, 0.9, 1.1)
    beta = g.normal(f"{name}.bias", (channels,), 0.02)
    mean = g.normal(f"{name}.running_mean", (channels,), 0.02)
    var = g.uniform(f"{name}.running_var", channels, 0.8 * expected_var, 1.2 * expected_var)
    return g.op("BatchNormalization", [x, gamma, beta, mean, var], epsilon=1e-5)


def _act(g: _Graph, x: str, act: str) -> str:
    if act == "relu":
        return g.op("Relu", [x])
    if act == "relu6":
        return g.op("Clip", [x, g.const(0.0, np.float32), g.const(6.0, np.float32)])
    return x


def _conv_bn(
    g: _Graph,
    x: str,
    m_in: float,
    name: str,
    cin: int,
    cout: int,
    k: int,
    *,
    stride: int = 1,
    group: int = 1,
    act: str = "",
) -> tuple[str, float]:
    """Conv + BatchNorm (+ activation); tracks the activations' second moment ``m``."""
    y = _conv(g, x, name, cin, cout, k, stride=stride, group=group)
    y = _batch_norm(g, y, f"{name}.bn", cout, 2.0 * m_in)
    return _act(g, y, act), (0.5 if act else 1.0)


def _head(g: _Graph, x: str, name: str, n_in: int, n_out: int, std: float, out: str) -> str:
    """Global average pool, flatten and a fully-connected Gemm layer."""
    flat = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w = g.normal(f"{name}.weight", (n_out, n_in), std)
    b = g.init(f"{name}.bias", np.zeros(n_out, np.float32))
    return g.op("Gemm", [flat, w, b], out=out, transB=1)


def build_null(seed: int = 0) -> onnx.ModelProto:
    """Builds the null model: ``input`` [batch, 16] -> ``output`` [batch, 16], one Identity.

    It does next to no work, so a run of it measures the cost of the path around inference
    (the harness, LoadGen, onnxruntime's call overhead) rather than the model.

    Args:
        seed: Recorded in the metadata only; the model has no weights.

    Returns:
        The model: a single Identity node on a small float32 input.
    """
    g = _Graph(seed)
    g.op("Identity", ["input"], out="output")
    return g.model(
        "null",
        seed,
        [_value("input", TensorProto.FLOAT, ["batch", NULL_WIDTH])],
        [_value("output", TensorProto.FLOAT, ["batch", NULL_WIDTH])],
    )


def build_tiny(seed: int = 0) -> onnx.ModelProto:
    """Builds a small CNN for fast tests: ``input`` [batch, 3, 32, 32] -> ``logits`` [batch, 10].

    Args:
        seed: Seed for the synthetic weights.

    Returns:
        The model: 3x3 convs of 32/64/64/64 channels (ReLU), a 2x2 max-pool after the
        second and third, global average pool and a 64->10 Gemm (~32M MACs per image).
    """
    g = _Graph(seed)
    x = "input"
    for i, (cin, cout) in enumerate(((3, 32), (32, 64), (64, 64), (64, 64))):
        x = g.op("Relu", [_conv(g, x, f"conv{i}", cin, cout, 3, bias=True)])
        if i in (1, 2):
            x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    _head(g, x, "fc", 64, 10, 1.0 / math.sqrt(64), "logits")
    return g.model(
        "tiny",
        seed,
        [_value("input", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [_value("logits", TensorProto.FLOAT, ["batch", 10])],
    )


def _image_input(name: str) -> onnx.ValueInfoProto:
    return _value(name, TensorProto.FLOAT, ["batch", 3, "height", "width"])


def build_mobilenet_v2(seed: int = 0) -> onnx.ModelProto:
    """Builds MobileNet-v2 1.0: ``input`` [batch, 3, height, width] -> ``output`` [batch, 1000].

    Args:
        seed: Seed for the synthetic weights.

    Returns:
        The model: inverted residuals with ReLU6 (Clip) and depthwise (grouped) convs.
    """
    g = _Graph(seed)
    x, m = _conv_bn(g, "input", 1.0, "features.0", 3, 32, 3, stride=2, act="relu6")
    cin, idx = 32, 1
    for t, c, n, s in _MBV2_BLOCKS:
        for j in range(n):
            stride, hidden, p = (s if j == 0 else 1), cin * t, f"features.{idx}"
            h, hm = x, m
            if t != 1:
                h, hm = _conv_bn(g, h, hm, f"{p}.expand", cin, hidden, 1, act="relu6")
            h, hm = _conv_bn(
                g, h, hm, f"{p}.dw", hidden, hidden, 3, stride=stride, group=hidden, act="relu6"
            )
            h, hm = _conv_bn(g, h, hm, f"{p}.project", hidden, c, 1)
            if stride == 1 and cin == c:
                x, m = g.op("Add", [x, h]), m + hm
            else:
                x, m = h, hm
            cin, idx = c, idx + 1
    x, m = _conv_bn(g, x, m, f"features.{idx}", cin, 1280, 1, act="relu6")
    _head(g, x, "classifier", 1280, 1000, 0.01, "output")
    return g.model(
        "mobilenet_v2",
        seed,
        [_image_input("input")],
        [_value("output", TensorProto.FLOAT, ["batch", 1000])],
    )


def _bottleneck(
    g: _Graph, x: str, m: float, name: str, cin: int, width: int, stride: int
) -> tuple[str, float]:
    """ResNet v1.5 bottleneck (stride on the 3x3 conv) with a projection shortcut if needed."""
    cout = width * 4
    h, hm = _conv_bn(g, x, m, f"{name}.conv1", cin, width, 1, act="relu")
    h, hm = _conv_bn(g, h, hm, f"{name}.conv2", width, width, 3, stride=stride, act="relu")
    h, hm = _conv_bn(g, h, hm, f"{name}.conv3", width, cout, 1)
    # Second moment after add + ReLU: a normalised shortcut gives ~1; an identity
    # (post-ReLU, mostly positive) shortcut keeps its own plus the branch's, barely clipped.
    if stride != 1 or cin != cout:
        x, _ = _conv_bn(g, x, m, f"{name}.downsample", cin, cout, 1, stride=stride)
        m_out = 1.0
    else:
        m_out = m + hm
    return g.op("Relu", [g.op("Add", [x, h])]), m_out


def build_resnet50(seed: int = 0) -> onnx.ModelProto:
    """Builds ResNet-50 v1.5 with 1001 classes (class 0 = background), as the MLPerf file.

    Args:
        seed: Seed for the synthetic weights.

    Returns:
        The model: ``input_tensor:0`` [batch, 3, height, width] (NCHW) -> ``ArgMax:0``
        (int64 [batch]) and ``softmax_tensor:0`` (float32 [batch, 1001]).
    """
    g = _Graph(seed)
    x, m = _conv_bn(g, "input_tensor:0", 1.0, "conv1", 3, 64, 7, stride=2, act="relu")
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    m = 2.0  # the max of 3x3 ReLU outputs has a larger second moment than each one
    cin = 64
    for stage, (width, blocks, stride) in enumerate(_RESNET50_STAGES, start=1):
        for b in range(blocks):
            name = f"layer{stage}.{b}"
            x, m = _bottleneck(g, x, m, name, cin, width, stride if b == 0 else 1)
            cin = width * 4
    logits = _head(g, x, "fc", cin, 1001, 0.01, "")
    g.op("Softmax", [logits], out="softmax_tensor:0", axis=1)
    g.op("ArgMax", [logits], out="ArgMax:0", axis=1, keepdims=0)
    return g.model(
        "resnet50",
        seed,
        [_image_input("input_tensor:0")],
        [
            _value("ArgMax:0", TensorProto.INT64, ["batch"]),
            _value("softmax_tensor:0", TensorProto.FLOAT, ["batch", 1001]),
        ],
    )


def _dense(g: _Graph, x: str, name: str, n_in: int, n_out: int) -> str:
    """MatMul + bias Add with BERT's N(0, 0.02) weights and zero bias."""
    w = g.normal(f"{name}.weight", (n_in, n_out), 0.02)
    return g.op(
        "Add", [g.op("MatMul", [x, w]), g.init(f"{name}.bias", np.zeros(n_out, np.float32))]
    )


def _layer_norm(g: _Graph, x: str, name: str, hidden: int) -> str:
    gamma = g.init(f"{name}.weight", np.ones(hidden, np.float32))
    beta = g.init(f"{name}.bias", np.zeros(hidden, np.float32))
    return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-12)


def _gelu(g: _Graph, x: str) -> str:
    """Exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), from standard opset-17 ops."""
    erf = g.op("Erf", [g.op("Mul", [x, g.const(1.0 / math.sqrt(2.0), np.float32)])])
    inner = g.op("Mul", [x, g.op("Add", [erf, g.const(1.0, np.float32)])])
    return g.op("Mul", [inner, g.const(0.5, np.float32)])


def _split_heads(g: _Graph, x: str, heads: int, head_dim: int, perm: Sequence[int]) -> str:
    """Reshapes [B, S, H] to [B, S, heads, head_dim] and transposes by ``perm``."""
    shaped = g.op("Reshape", [x, g.const([0, 0, heads, head_dim], np.int64)])
    return g.op("Transpose", [shaped], perm=list(perm))


def _bert_layer(
    g: _Graph, x: str, mask: str, name: str, hidden: int, heads: int, intermediate: int
) -> str:
    """One post-LN transformer encoder layer (self-attention, then GELU feed-forward)."""
    head_dim = hidden // heads
    q, k, v = (  # q, v: [B, heads, S, head_dim]; k: [B, heads, head_dim, S]
        _split_heads(g, _dense(g, x, f"{name}.attention.{p}", hidden, hidden), heads, head_dim, t)
        for p, t in (("query", (0, 2, 1, 3)), ("key", (0, 2, 3, 1)), ("value", (0, 2, 1, 3)))
    )
    scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const(1.0 / math.sqrt(head_dim), np.float32)])
    probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const([0, 0, hidden], np.int64)])
    attn = _dense(g, ctx, f"{name}.attention.output", hidden, hidden)
    x = _layer_norm(g, g.op("Add", [attn, x]), f"{name}.attention.LayerNorm", hidden)
    ffn = _gelu(g, _dense(g, x, f"{name}.intermediate", hidden, intermediate))
    ffn = _dense(g, ffn, f"{name}.output", intermediate, hidden)
    return _layer_norm(g, g.op("Add", [ffn, x]), f"{name}.output.LayerNorm", hidden)


def _bert_embeddings(g: _Graph, hidden: int, vocab_size: int, max_positions: int) -> str:
    """Word + position (sliced to the runtime seq_len) + token-type embeddings, LayerNorm."""
    word = g.normal("embeddings.word_embeddings.weight", (vocab_size, hidden), 0.02)
    pos = g.normal("embeddings.position_embeddings.weight", (max_positions, hidden), 0.02)
    types = g.normal("embeddings.token_type_embeddings.weight", (2, hidden), 0.02)
    seq_len = g.op("Shape", ["input_ids"], start=1, end=2)
    zero = g.const([0], np.int64)
    positions = g.op("Slice", [pos, zero, seq_len, zero])
    x = g.op("Add", [g.op("Gather", [word, "input_ids"]), positions])
    x = g.op("Add", [x, g.op("Gather", [types, "token_type_ids"])])
    return _layer_norm(g, x, "embeddings.LayerNorm", hidden)


def build_bert_base(
    seed: int = 0,
    *,
    num_layers: int = 12,
    hidden: int = 768,
    num_heads: int = 12,
    intermediate: int = 3072,
    vocab_size: int = 30522,
    max_positions: int = 512,
) -> onnx.ModelProto:
    """Builds a BERT encoder with a SQuAD span head, as the MLPerf BERT model.

    Args:
        seed: Seed for the synthetic weights.
        num_layers: Number of encoder layers.
        hidden: Hidden size.
        num_heads: Attention heads; must divide ``hidden``.
        intermediate: Feed-forward inner size.
        vocab_size: Word-piece vocabulary size.
        max_positions: Longest supported sequence (rows of the position table).

    Returns:
        The model: int64 ``input_ids``, ``attention_mask``, ``token_type_ids`` [batch, seq_len]
        -> float32 ``output_start_logits`` and ``output_end_logits`` [batch, seq_len].

    Raises:
        ValueError: If ``num_heads`` does not divide ``hidden``.
    """
    if num_heads <= 0 or hidden % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide hidden={hidden}")
    g = _Graph(seed)
    x = _bert_embeddings(g, hidden, vocab_size, max_positions)
    keep = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op(
        "Mul", [g.op("Sub", [g.const(1.0, np.float32), keep]), g.const(-10000.0, np.float32)]
    )
    mask = g.op("Unsqueeze", [mask, g.const([1, 2], np.int64)])  # [batch, 1, 1, seq_len]
    for i in range(num_layers):
        x = _bert_layer(g, x, mask, f"encoder.layer.{i}", hidden, num_heads, intermediate)
    logits = _dense(g, x, "qa_outputs", hidden, 2)
    halves = g.ops("Split", [logits], 2, axis=-1)
    last = g.const([-1], np.int64)
    for half, out in zip(halves, ("output_start_logits", "output_end_logits"), strict=True):
        g.op("Squeeze", [half, last], out=out)
    seq_dims = ["batch", "seq_len"]
    return g.model(
        "bert_base",
        seed,
        [
            _value(n, TensorProto.INT64, seq_dims)
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [
            _value(n, TensorProto.FLOAT, seq_dims)
            for n in ("output_start_logits", "output_end_logits")
        ],
    )


@dataclass(frozen=True)
class ZooModel:
    """A zoo entry: how to build a model and the values of its non-batch symbolic dims.

    Attributes:
        name: Registry key.
        builder: Builds the model from a seed.
        description: One line for listings.
        generator_version: Bumped whenever the builder's output changes.
        default_dims: Default values of the non-batch symbolic input dims.
    """

    name: str
    builder: Callable[[int], onnx.ModelProto]
    description: str
    generator_version: int
    default_dims: Mapping[str, int]


_Entry = tuple[str, Callable[[int], onnx.ModelProto], str, Mapping[str, int]]
_IMAGE_DIMS: Final = {"height": 224, "width": 224}
_ENTRIES: Final[tuple[_Entry, ...]] = (
    ("tiny", build_tiny, "Small 4-conv CNN, 32x32 input, 10 classes", {}),
    ("mobilenet_v2", build_mobilenet_v2, "MobileNet-v2 1.0, 1000 classes (3.5M)", _IMAGE_DIMS),
    ("resnet50", build_resnet50, "ResNet-50 v1.5, 1001 classes as MLPerf (25.6M)", _IMAGE_DIMS),
    ("bert_base", build_bert_base, "BERT-base SQuAD model as MLPerf (109M)", {"seq_len": 384}),
    ("null", build_null, "Null model: one Identity on [batch, 16] (harness overhead)", {}),
)
ZOO: Final[Mapping[str, ZooModel]] = MappingProxyType(
    {
        name: ZooModel(name, builder, description, _VERSIONS[name], MappingProxyType(dict(dims)))
        for name, builder, description, dims in _ENTRIES
    }
)
