"""The zoo's CNN generators (ResNet-50, MobileNet-v2, tiny) and the null model."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

import numpy as np
import onnx
from onnx import TensorProto

from harness.models.zoo_graph import GENERATOR_VERSIONS, Graph, value_info
from harness.models.zoo_init import INITS, INPUT, Init, Moments, relu_moments
from harness.models.zoo_reference import centring_bias, tiny_pooled_mean

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
# The tiny CNN's convs: (input channels, output channels), all 3x3.
_TINY_CONVS: Final = ((3, 32), (32, 64), (64, 64), (64, 64))
# Version 2's tiny CNN has no BatchNorm: each conv after a ReLU restores unit variance.
# Four layers deep, it needs no shift (zoo_init.ACT_SHIFT): unshifted, INT8 keeps more answers.
TINY_GAIN: Final = 1.0 / math.sqrt(relu_moments(INPUT).var)
# ResNet-50 stages: (bottleneck width, number of blocks, stride of the first block).
_RESNET50_STAGES: Final = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))


def _conv(
    g: Graph,
    init: Init,
    x: str,
    name: str,
    cin: int,
    cout: int,
    k: int,
    *,
    stride: int = 1,
    group: int = 1,
    bias: bool = False,
    gain: float = 1.0,
) -> str:
    """Conv with 'same' padding for odd kernels; its weights as the generator version draws them.

    ``gain`` scales version 2's unit-norm filters (version 1's are He-normal).
    """
    inputs = [x, init.conv_weight(g, f"{name}.weight", (cout, cin // group, k, k), gain)]
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


def _batch_norm(
    g: Graph, init: Init, x: str, name: str, channels: int, conv_in: Moments, act: bool
) -> str:
    """BatchNormalization with the statistics the generator version sets (see zoo_init)."""
    stats = init.batch_norm(g, name, channels, conv_in, act)
    return g.op("BatchNormalization", [x, *stats], epsilon=1e-5)


def _act(g: Graph, x: str, act: str) -> str:
    if act == "relu":
        return g.op("Relu", [x])
    if act == "relu6":
        return g.op("Clip", [x, g.const(0.0, np.float32), g.const(6.0, np.float32)])
    return x


def _conv_bn(
    g: Graph,
    init: Init,
    x: str,
    m_in: Moments,
    name: str,
    cin: int,
    cout: int,
    k: int,
    *,
    stride: int = 1,
    group: int = 1,
    act: str = "",
) -> tuple[str, Moments]:
    """Conv + BatchNorm (+ activation); tracks the activations' moments ``m``."""
    y = _conv(g, init, x, name, cin, cout, k, stride=stride, group=group)
    y = _batch_norm(g, init, y, f"{name}.bn", cout, m_in, bool(act))
    return _act(g, y, act), init.after(bool(act))


def _head(
    g: Graph,
    init: Init,
    x: str,
    name: str,
    n_in: int,
    n_out: int,
    std: float,
    out: str,
    centre: Callable[[np.ndarray], np.ndarray] | None = None,
) -> str:
    """Global average pool, flatten and a fully-connected Gemm layer.

    ``centre`` gives the bias from the weight (else zeros).
    """
    flat = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w = init.dense_weight(g, f"{name}.weight", (n_out, n_in), std)
    bias = np.zeros(n_out, np.float32) if centre is None else centre(g.array(w))
    b = g.init(f"{name}.bias", bias)
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
    g = Graph(seed)
    g.op("Identity", ["input"], out="output")
    return g.model(
        "null",
        seed,
        GENERATOR_VERSIONS["null"],
        [value_info("input", TensorProto.FLOAT, ["batch", NULL_WIDTH])],
        [value_info("output", TensorProto.FLOAT, ["batch", NULL_WIDTH])],
    )


def build_tiny(seed: int = 0, *, generator: int = GENERATOR_VERSIONS["tiny"]) -> onnx.ModelProto:
    """Builds a small CNN for fast tests: ``input`` [batch, 3, 32, 32] -> ``logits`` [batch, 10].

    Args:
        seed: Seed for the synthetic weights.
        generator: Generator version (zoo_init): 1 as before #25, 2 input-dependent.

    Returns:
        The model: 3x3 convs of 32/64/64/64 channels (ReLU), a 2x2 max-pool after the
        second and third, global average pool and a 64->10 Gemm (~32M MACs per image).
    """
    g, init = Graph(seed), INITS[generator]
    x = "input"
    for i, (cin, cout) in enumerate(_TINY_CONVS):
        gain = TINY_GAIN if i else 1.0  # version 2: ReLU outputs' variance restored
        x = g.op("Relu", [_conv(g, init, x, f"conv{i}", cin, cout, 3, bias=True, gain=gain)])
        if i in (1, 2):
            x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    centre = None
    if generator >= 2:  # no BatchNorm: the logits are centred on the measured pooled mean

        def centre(weight: np.ndarray) -> np.ndarray:
            convs = [
                (g.array(f"conv{i}.weight").astype(np.float64), g.array(f"conv{i}.bias"))
                for i in range(len(_TINY_CONVS))
            ]
            mean = tiny_pooled_mean(convs, seed)
            return centring_bias(weight.astype(np.float64), mean)

    _head(g, init, x, "fc", 64, 10, 1.0 / math.sqrt(64), "logits", centre)
    return g.model(
        "tiny",
        seed,
        generator,
        [value_info("input", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [value_info("logits", TensorProto.FLOAT, ["batch", 10])],
    )


def _image_input(name: str) -> onnx.ValueInfoProto:
    return value_info(name, TensorProto.FLOAT, ["batch", 3, "height", "width"])


def build_mobilenet_v2(
    seed: int = 0, *, generator: int = GENERATOR_VERSIONS["mobilenet_v2"]
) -> onnx.ModelProto:
    """Builds MobileNet-v2 1.0: ``input`` [batch, 3, height, width] -> ``output`` [batch, 1000].

    Args:
        seed: Seed for the synthetic weights.
        generator: Generator version (zoo_init): 1 as before #25, 2 input-dependent.

    Returns:
        The model: inverted residuals with ReLU6 (Clip) and depthwise (grouped) convs.
    """
    g, init = Graph(seed), INITS[generator]
    x, m = _conv_bn(g, init, "input", INPUT, "features.0", 3, 32, 3, stride=2, act="relu6")
    cin, idx = 32, 1
    for t, c, n, s in _MBV2_BLOCKS:
        for j in range(n):
            stride, hidden, p = (s if j == 0 else 1), cin * t, f"features.{idx}"
            h, hm = x, m
            if t != 1:
                h, hm = _conv_bn(g, init, h, hm, f"{p}.expand", cin, hidden, 1, act="relu6")
            h, hm = _conv_bn(
                g,
                init,
                h,
                hm,
                f"{p}.dw",
                hidden,
                hidden,
                3,
                stride=stride,
                group=hidden,
                act="relu6",
            )
            h, hm = _conv_bn(g, init, h, hm, f"{p}.project", hidden, c, 1)
            if stride == 1 and cin == c:
                x, m = g.op("Add", [x, h]), init.add(m, hm, relu=False)
            else:
                x, m = h, hm
            cin, idx = c, idx + 1
    x, m = _conv_bn(g, init, x, m, f"features.{idx}", cin, 1280, 1, act="relu6")
    _head(g, init, x, "classifier", 1280, 1000, 0.01, "output")
    return g.model(
        "mobilenet_v2",
        seed,
        generator,
        [_image_input("input")],
        [value_info("output", TensorProto.FLOAT, ["batch", 1000])],
    )


def _bottleneck(
    g: Graph, init: Init, x: str, m: Moments, name: str, cin: int, width: int, stride: int
) -> tuple[str, Moments]:
    """ResNet v1.5 bottleneck (stride on the 3x3 conv) with a projection shortcut if needed."""
    cout = width * 4
    h, hm = _conv_bn(g, init, x, m, f"{name}.conv1", cin, width, 1, act="relu")
    h, hm = _conv_bn(g, init, h, hm, f"{name}.conv2", width, width, 3, stride=stride, act="relu")
    h, hm = _conv_bn(g, init, h, hm, f"{name}.conv3", width, cout, 1)
    projected = stride != 1 or cin != cout
    if projected:
        x, m = _conv_bn(g, init, x, m, f"{name}.downsample", cin, cout, 1, stride=stride)
    m_out = init.add(m, hm, relu=True, projected=projected)
    return g.op("Relu", [g.op("Add", [x, h])]), m_out


def build_resnet50(
    seed: int = 0, *, generator: int = GENERATOR_VERSIONS["resnet50"]
) -> onnx.ModelProto:
    """Builds ResNet-50 v1.5 with 1001 classes (class 0 = background), as the MLPerf file.

    Args:
        seed: Seed for the synthetic weights.
        generator: Generator version (zoo_init): 1 as before #25, 2 input-dependent.

    Returns:
        The model: ``input_tensor:0`` [batch, 3, height, width] (NCHW) -> ``ArgMax:0``
        (int64 [batch]) and ``softmax_tensor:0`` (float32 [batch, 1001]).
    """
    g, init = Graph(seed), INITS[generator]
    x, m = _conv_bn(g, init, "input_tensor:0", INPUT, "conv1", 3, 64, 7, stride=2, act="relu")
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    m = init.pooled()
    cin = 64
    for stage, (width, blocks, stride) in enumerate(_RESNET50_STAGES, start=1):
        for b in range(blocks):
            name = f"layer{stage}.{b}"
            x, m = _bottleneck(g, init, x, m, name, cin, width, stride if b == 0 else 1)
            cin = width * 4
    logits = _head(g, init, x, "fc", cin, 1001, 0.01, "")
    g.op("Softmax", [logits], out="softmax_tensor:0", axis=1)
    g.op("ArgMax", [logits], out="ArgMax:0", axis=1, keepdims=0)
    return g.model(
        "resnet50",
        seed,
        generator,
        [_image_input("input_tensor:0")],
        [
            value_info("ArgMax:0", TensorProto.INT64, ["batch"]),
            value_info("softmax_tensor:0", TensorProto.FLOAT, ["batch", 1001]),
        ],
    )
