"""The environment fingerprint: collected sections, a comparability id and what was missing."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.fingerprint.cpu import collect_cpu
from harness.fingerprint.memory import collect_memory
from harness.fingerprint.probe import Missing, Probe
from harness.fingerprint.provenance import collect_harness
from harness.fingerprint.software import collect_env, collect_software
from harness.fingerprint.system import collect_container, collect_os

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
class Fingerprint:
    """The machine and software a result was measured on, as JSON-ready data."""

    data: Mapping[str, Any]

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
        return [Missing(field=m["field"], reason=m["reason"]) for m in self.data["missing"]]

    def section(self, name: str) -> Mapping[str, Any]:
        """One mapping section ("cpu", "memory", …); empty when absent."""
        value = self.data.get(name)
        return value if isinstance(value, Mapping) else {}

    @property
    def gpus(self) -> list[Mapping[str, Any]]:
        """The per-GPU mappings passed in from the telemetry adapters."""
        return [gpu for gpu in self.data.get("gpus", []) if isinstance(gpu, Mapping)]

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the data, for result.json."""
        return copy.deepcopy(dict(self.data))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fingerprint:
        """A fingerprint read back from result.json."""
        kinds = {"fingerprint_id": str, "complete": bool, "missing": list}
        wrong = [key for key, kind in kinds.items() if not isinstance(data.get(key), kind)]
        if wrong:
            raise ResultError(
                f"fingerprint: {', '.join(wrong)} absent or malformed; not a beyond-tops result"
            )
        return cls(data=copy.deepcopy(dict(data)))


def collect_fingerprint(
    *,
    root: Path = Path("/"),
    environ: Mapping[str, str] | None = None,
    gpus: Sequence[Mapping[str, Any]] = (),
    gpu_missing: Sequence[tuple[str, str]] = (),
    repo_dir: Path | None = None,
    pid: int | None = None,
) -> Fingerprint:
    """Collect the fingerprint of the machine under `root` (and of this interpreter)."""
    probe = Probe(root)
    env = os.environ if environ is None else environ
    sections = {
        "cpu": collect_cpu(probe, pid=pid),
        "memory": collect_memory(probe, pid=pid),
        "os": collect_os(probe),
        "container": collect_container(probe, env, pid=pid),
        "software": collect_software(probe),
        "env": collect_env(env),
        "gpus": [_json_ready(gpu) for gpu in gpus],
        "harness": collect_harness(probe, repo_dir),
    }
    for field, reason in gpu_missing:
        probe.note(field if field.startswith("gpu") else f"gpus.{field}", reason)
    return build_fingerprint(sections, probe.missing)


def build_fingerprint(sections: Mapping[str, Any], missing: Sequence[Missing]) -> Fingerprint:
    """Assemble a fingerprint from collected sections, computing its id and completeness."""
    data: dict[str, Any] = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "fingerprint_id": "",
        "complete": not missing,
        "missing": [m.to_dict() for m in missing],
    }
    data.update({name: copy.deepcopy(sections[name]) for name in SECTIONS})
    data["fingerprint_id"] = fingerprint_id_of(data)
    return Fingerprint(data=data)


def comparability_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that must match for two results to be comparable (the id's input)."""
    cpu, memory, os_, software, container = (
        _mapping(data, name) for name in ("cpu", "memory", "os", "software", "container")
    )
    return {
        "fingerprint_version": data.get("fingerprint_version"),
        "cpu": {key: cpu.get(key) for key in CPU_ID_KEYS},
        "memory": {"total_bytes": memory.get("total_bytes")},
        "os": {"kernel": os_.get("kernel")},
        "software": {key: software.get(key) for key in ("python", "packages", "providers")},
        "gpus": [
            {key: gpu[key] for key in GPU_ID_KEYS if key in gpu}
            for gpu in data.get("gpus", [])
            if isinstance(gpu, Mapping)
        ],
        "container": {"image_id": container.get("image_id")},
    }


def fingerprint_id_of(data: Mapping[str, Any]) -> str:
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


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        items = [(f"{prefix}{k}", v) for k, v in value.items()]
    elif isinstance(value, list) and any(isinstance(v, (Mapping, list)) for v in value):
        items = [(f"{prefix}{i}", v) for i, v in enumerate(value)]
    else:
        return {prefix.rstrip("."): value}
    flat: dict[str, Any] = {}
    for key, item in items:
        flat.update(_flatten(item, f"{key}."))
    return flat


def _mapping(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name)
    return value if isinstance(value, Mapping) else {}


def _json_ready(gpu: Mapping[str, Any]) -> dict[str, Any]:
    """A plain-JSON copy of a telemetry adapter's GPU mapping (odd values become strings)."""
    result: dict[str, Any] = json.loads(json.dumps(dict(gpu), default=str))
    return result
