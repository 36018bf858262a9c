"""The environment fingerprint: its JSON, typed sections, the comparability id and what was missing.

The JSON is kept as written (a result.json of any fingerprint version reads and writes back
byte for byte); the typed sections (harness.records.fingerprint_sections) are read from it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from harness.errors import ResultError
from harness.records.fingerprint_sections import (
    ContainerInfo,
    CpuInfo,
    GpuInfo,
    HarnessInfo,
    MemoryInfo,
    OsInfo,
    SoftwareInfo,
    section_json,
    to_json,
)
from harness.strictjson import Json, JsonObject

# Bump when the collected fields or the id's inputs change: ids of different versions differ.
FINGERPRINT_VERSION = 1
SECTIONS = ("cpu", "memory", "os", "container", "software", "env", "gpus", "harness")
# Fields that must match for two results to be comparable; volatile ones (load, free memory,
# current clock, git dirty flag) are left out so the id is stable between runs.
CPU_ID_KEYS = (
    "model",
    "vendor",
    "sockets",
    "cores",
    "threads",
    "usable_cpus",
    "isa",
    "governor",
    "turbo",
    "smt_active",
)
# Named as harness/telemetry's inventories name them. Left out: uuid, index and PCI bus (two
# identical GPUs are comparable), current PCIe link (drops at idle) and live state.
GPU_ID_KEYS = (
    "vendor",
    "name",
    "driver_version",
    "cuda_driver_version",
    "rocm_version",
    "memory_total_mib",
    "power_limit_w",
    "power_limit_enforced_w",
    "clock_sm_max_mhz",
    "clock_mem_max_mhz",
    "clock_sm_default_mhz",
    "clock_mem_default_mhz",
    "ecc_enabled",
    "mig_mode",
    "compute_partition",
    "memory_partition",
    "pcie_gen_max",
    "pcie_width_max",
)


@dataclass(frozen=True, kw_only=True)
class Missing:
    """A fingerprint field that could not be read, and why."""

    field: str
    reason: str

    def to_dict(self) -> JsonObject:
        """JSON form: {"field": ..., "reason": ...}."""
        return {"field": self.field, "reason": self.reason}


@dataclass(frozen=True, kw_only=True)
class Sections:
    """What the collectors return, section by section; `gpus` are telemetry's inventories."""

    cpu: CpuInfo
    memory: MemoryInfo
    os: OsInfo
    container: ContainerInfo
    software: SoftwareInfo
    env: Mapping[str, str]
    gpus: tuple[JsonObject, ...]
    harness: HarnessInfo

    def to_dict(self) -> JsonObject:
        """The sections' JSON, keyed and ordered as SECTIONS."""
        return {
            "cpu": section_json(self.cpu),
            "memory": section_json(self.memory),
            "os": section_json(self.os),
            "container": section_json(self.container),
            "software": section_json(self.software),
            "env": to_json(self.env),
            "gpus": to_json(self.gpus),
            "harness": section_json(self.harness),
        }


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """The machine and software a result was measured on: its JSON, and typed sections of it."""

    data: Mapping[str, Json]

    @property
    def fingerprint_id(self) -> str:
        """16 hex digits that are equal exactly when the comparability fields are."""
        return str(self.data["fingerprint_id"])

    @property
    def complete(self) -> bool:
        """Whether every field could be read."""
        return bool(self.data["complete"])

    @property
    def missing(self) -> list[Missing]:
        """The fields that could not be read, and why."""
        listed = self.data.get("missing")
        return [
            Missing(field=str(m.get("field")), reason=str(m.get("reason")))
            for m in (listed if isinstance(listed, list) else [])
            if isinstance(m, dict)
        ]

    @cached_property
    def cpu(self) -> CpuInfo:
        """The "cpu" section, typed."""
        return CpuInfo.from_dict(self._object("cpu"))

    @cached_property
    def memory(self) -> MemoryInfo:
        """The "memory" section, typed."""
        return MemoryInfo.from_dict(self._object("memory"))

    @cached_property
    def os(self) -> OsInfo:
        """The "os" section, typed."""
        return OsInfo.from_dict(self._object("os"))

    @cached_property
    def container(self) -> ContainerInfo:
        """The "container" section, typed."""
        return ContainerInfo.from_dict(self._object("container"))

    @cached_property
    def software(self) -> SoftwareInfo:
        """The "software" section, typed."""
        return SoftwareInfo.from_dict(self._object("software"))

    @cached_property
    def env(self) -> dict[str, str]:
        """The recorded performance variables, by name."""
        return {str(k): str(v) for k, v in self._object("env").items()}

    @cached_property
    def harness(self) -> HarnessInfo:
        """The "harness" section, typed."""
        return HarnessInfo.from_dict(self._object("harness"))

    @cached_property
    def gpu_info(self) -> tuple[GpuInfo, ...]:
        """The facts the harness reads of each GPU, in inventory order."""
        gpus = self.data.get("gpus")
        listed = gpus if isinstance(gpus, list) else []
        return tuple(GpuInfo.from_dict(gpu) for gpu in listed if isinstance(gpu, dict))

    def section(self, name: str) -> Mapping[str, Any]:
        """One mapping section ("cpu", "memory", …) as JSON; empty when absent.

        For readers of keys the typed sections leave out; the rest read `cpu`, `memory`, ….
        """
        return self._object(name)

    @property
    def gpus(self) -> list[Mapping[str, Any]]:
        """Each GPU's inventory as telemetry's adapter wrote it (every key); see `gpu_info`."""
        gpus = self.data.get("gpus")
        return [gpu for gpu in gpus if isinstance(gpu, dict)] if isinstance(gpus, list) else []

    def to_dict(self) -> JsonObject:
        """A deep copy of the data, for result.json."""
        return copy.deepcopy(dict(self.data))

    @classmethod
    def from_dict(cls, data: Mapping[str, Json]) -> Fingerprint:
        """A fingerprint read back from result.json."""
        kinds = {"fingerprint_id": str, "complete": bool, "missing": list}
        wrong = [key for key, kind in kinds.items() if not isinstance(data.get(key), kind)]
        if wrong:
            raise ResultError(
                f"fingerprint: {', '.join(wrong)} absent or malformed; not a beyond-tops result"
            )
        return cls(data=copy.deepcopy(dict(data)))

    def _object(self, name: str) -> Mapping[str, Json]:
        value = self.data.get(name)
        return value if isinstance(value, Mapping) else {}


def build_fingerprint(sections: Sections, missing: Sequence[Missing]) -> Fingerprint:
    """Assemble a fingerprint from collected sections, computing its id and completeness."""
    return fingerprint_of(sections.to_dict(), missing)


def fingerprint_of(sections: Mapping[str, Json], missing: Sequence[Missing]) -> Fingerprint:
    """A fingerprint of sections given as JSON (as a result.json holds them), with its id."""
    data: JsonObject = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "fingerprint_id": "",
        "complete": not missing,
        "missing": [m.to_dict() for m in missing],
    }
    data.update({name: copy.deepcopy(sections[name]) for name in SECTIONS})
    data["fingerprint_id"] = fingerprint_id_of(data)
    return Fingerprint(data=data)


def comparability_fields(data: Mapping[str, Json]) -> JsonObject:
    """The fields that must match for two results to be comparable (the id's input)."""
    cpu, memory, os_, software, container = (
        _object(data, name) for name in ("cpu", "memory", "os", "software", "container")
    )
    gpus = data.get("gpus")
    return {
        "fingerprint_version": data.get("fingerprint_version"),
        "cpu": {key: cpu.get(key) for key in CPU_ID_KEYS},
        "memory": {"total_bytes": memory.get("total_bytes")},
        "os": {"kernel": os_.get("kernel")},
        "software": {key: software.get(key) for key in ("python", "packages", "providers")},
        "gpus": [
            {key: gpu[key] for key in GPU_ID_KEYS if key in gpu}
            for gpu in (gpus if isinstance(gpus, list) else [])
            if isinstance(gpu, dict)
        ],
        "container": {"image_id": container.get("image_id")},
    }


def fingerprint_id_of(data: Mapping[str, Json]) -> str:
    """The first 16 hex digits of the SHA-256 of the canonical JSON of the comparability fields."""
    canonical = json.dumps(comparability_fields(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def compare_fingerprints(a: Fingerprint, b: Fingerprint) -> list[str]:
    """One line per comparability field that differs ("cpu.governor: 'a' != 'b'")."""
    left = _flatten(comparability_fields(a.data))
    right = _flatten(comparability_fields(b.data))
    return [
        f"{key}: {left.get(key)!r} != {right.get(key)!r}"
        for key in sorted(set(left) | set(right))
        if left.get(key) != right.get(key)
    ]


def _flatten(value: Json, prefix: str = "") -> dict[str, Json]:
    if isinstance(value, dict):
        items = [(f"{prefix}{k}", v) for k, v in value.items()]
    elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        items = [(f"{prefix}{i}", v) for i, v in enumerate(value)]
    else:
        return {prefix.rstrip("."): value}
    flat: dict[str, Json] = {}
    for key, item in items:
        flat.update(_flatten(item, f"{key}."))
    return flat


def _object(data: Mapping[str, Json], name: str) -> Mapping[str, Json]:
    value = data.get(name)
    return value if isinstance(value, dict) else {}
