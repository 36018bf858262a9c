"""The zoo generators' versions: which synthetic weights a job ran, stated in its job.json.

A generator's version is bumped whenever its output (and so the model's sha256) changes;
every older version stays buildable, so a recorded job finds its model again. A job file
that names no version predates versioning (#25) and ran version 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# Each generator's current version. Version 1 of the CNNs answered one class for every
# input; version 2 (harness.models.zoo_init) depends on its input.
GENERATOR_VERSIONS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "tiny": 2,
        "mobilenet_v2": 2,
        "resnet50": 2,
        "bert_base": 1,
        "null": 1,
        # real weights, not a generator: its graph's version (zoo_efficientnet.GENERATOR_VERSION)
        "efficientnet-lite0": 1,
    }
)
# Every version each generator can build.
KNOWN_GENERATORS: Final[Mapping[str, tuple[int, ...]]] = MappingProxyType(
    {name: tuple(range(1, newest + 1)) for name, newest in GENERATOR_VERSIONS.items()}
)
# What a job file without a generator version ran: the generators before versioning.
UNRECORDED_GENERATOR: Final = 1
