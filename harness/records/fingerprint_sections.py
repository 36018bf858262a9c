"""The fingerprint's typed sections: CPU, memory, OS, container, software, harness and GPUs.

Collectors (harness/fingerprint) return these records; `to_dict` writes their JSON with the
keys in field order, as result.json holds them. `from_dict` reads a section back leniently:
a key that is absent or of another kind reads as None (as "unknown"), because a fingerprint
is the machine as one harness version saw it, and readers only show it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.strictjson import Json, JsonObject

Section = Mapping[str, Json]


def to_json(value: object) -> Json:
    """The JSON of a record (keys in field order), a tuple, a mapping or a scalar."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_json(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"fingerprint record: {type(value).__name__} is no JSON value")


def section_json(record: object) -> JsonObject:
    """A section record's JSON object."""
    data = to_json(record)
    if not isinstance(data, dict):
        raise TypeError(f"fingerprint record: {type(record).__name__} is no section")
    return data


@dataclass(frozen=True, kw_only=True)
class NumaNode:
    """A NUMA node and its CPUs as the kernel lists them ("0-15,32-47")."""

    node: int
    cpulist: str


@dataclass(frozen=True, kw_only=True)
class CpuInfo:
    """Everything about the CPUs that can change a benchmark's result (the "cpu" section)."""

    model: str | None = None
    vendor: str | None = None
    sockets: int | None = None
    cores: int | None = None
    threads: int | None = None
    threads_per_core: int | None = None
    online_cpulist: str | None = None
    online_cpus: int | None = None
    isolated_cpulist: str | None = None
    isolated_cpus: int | None = None
    affinity_cpus: int | None = None
    cgroup_version: int | None = None
    cgroup_cpu_quota: float | None = None
    usable_cpus: int | None = None
    isa: tuple[str, ...] | None = None
    cache_kib: Mapping[str, int] | None = None
    current_mhz: float | None = None
    max_mhz: int | None = None
    scaling_max_mhz: int | None = None
    scaling_driver: str | None = None
    governor: str | None = None
    turbo: bool | None = None
    turbo_control: str | None = None
    smt_control: str | None = None
    smt_active: bool | None = None
    numa_nodes: tuple[NumaNode, ...] | None = None

    @classmethod
    def from_dict(cls, data: Section) -> CpuInfo:
        """The section read back; see the module's note on leniency."""
        nodes = data.get("numa_nodes")
        return cls(
            model=_str(data, "model"),
            vendor=_str(data, "vendor"),
            sockets=_int(data, "sockets"),
            cores=_int(data, "cores"),
            threads=_int(data, "threads"),
            threads_per_core=_int(data, "threads_per_core"),
            online_cpulist=_str(data, "online_cpulist"),
            online_cpus=_int(data, "online_cpus"),
            isolated_cpulist=_str(data, "isolated_cpulist"),
            isolated_cpus=_int(data, "isolated_cpus"),
            affinity_cpus=_int(data, "affinity_cpus"),
            cgroup_version=_int(data, "cgroup_version"),
            cgroup_cpu_quota=_number(data, "cgroup_cpu_quota"),
            usable_cpus=_int(data, "usable_cpus"),
            isa=_texts(data.get("isa")),
            cache_kib=_sizes(data.get("cache_kib")),
            current_mhz=_number(data, "current_mhz"),
            max_mhz=_int(data, "max_mhz"),
            scaling_max_mhz=_int(data, "scaling_max_mhz"),
            scaling_driver=_str(data, "scaling_driver"),
            governor=_str(data, "governor"),
            turbo=_bool(data, "turbo"),
            turbo_control=_str(data, "turbo_control"),
            smt_control=_str(data, "smt_control"),
            smt_active=_bool(data, "smt_active"),
            numa_nodes=None
            if not isinstance(nodes, list)
            else tuple(_numa_node(n) for n in nodes if isinstance(n, dict)),
        )


@dataclass(frozen=True, kw_only=True)
class MemoryInfo:
    """Memory size, swap and the cgroup limit, in bytes (the "memory" section)."""

    total_bytes: int | None = None
    available_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_free_bytes: int | None = None
    swap_used_bytes: int | None = None
    cgroup_limit_bytes: int | None = None

    @classmethod
    def from_dict(cls, data: Section) -> MemoryInfo:
        """The section read back; see the module's note on leniency."""
        return cls(**{f.name: _int(data, f.name) for f in dataclasses.fields(cls)})


@dataclass(frozen=True, kw_only=True)
class OsInfo:
    """Kernel release, OS name, C library version and architecture (the "os" section)."""

    kernel: str | None = None
    release: str | None = None
    glibc: str | None = None
    arch: str | None = None

    @classmethod
    def from_dict(cls, data: Section) -> OsInfo:
        """The section read back; see the module's note on leniency."""
        return cls(**{f.name: _str(data, f.name) for f in dataclasses.fields(cls)})


@dataclass(frozen=True, kw_only=True)
class ContainerInfo:
    """Whether the run was in a container, the evidence, and the harness image it names."""

    detected: bool | None = None
    runtime: str | None = None
    evidence: tuple[str, ...] = ()
    ignored_evidence: tuple[str, ...] = ()
    image_id: str | None = None
    image_tag: str | None = None

    @classmethod
    def from_dict(cls, data: Section) -> ContainerInfo:
        """The section read back; see the module's note on leniency."""
        return cls(
            detected=_bool(data, "detected"),
            runtime=_str(data, "runtime"),
            evidence=_texts(data.get("evidence")) or (),
            ignored_evidence=_texts(data.get("ignored_evidence")) or (),
            image_id=_str(data, "image_id"),
            image_tag=_str(data, "image_tag"),
        )


@dataclass(frozen=True, kw_only=True)
class PythonInfo:
    """The interpreter: "CPython" and "3.11.7"."""

    implementation: str | None = None
    version: str | None = None


@dataclass(frozen=True, kw_only=True)
class SoftwareInfo:
    """The interpreter, package versions (None: not installed) and onnxruntime's providers."""

    python: PythonInfo = field(default_factory=PythonInfo)
    packages: Mapping[str, str | None] = field(default_factory=dict)
    providers: tuple[str, ...] | None = None

    @classmethod
    def from_dict(cls, data: Section) -> SoftwareInfo:
        """The section read back; see the module's note on leniency."""
        python = _object(data, "python")
        packages = _object(data, "packages")
        return cls(
            python=PythonInfo(
                implementation=_str(python, "implementation"), version=_str(python, "version")
            ),
            packages={name: _str(packages, name) for name in packages},
            providers=_texts(data.get("providers")),
        )


@dataclass(frozen=True, kw_only=True)
class HarnessInfo:
    """The harness version and its git commit, with the dirty flag (None: unknown)."""

    version: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None

    @classmethod
    def from_dict(cls, data: Section) -> HarnessInfo:
        """The section read back; see the module's note on leniency."""
        return cls(
            version=_str(data, "version"),
            git_commit=_str(data, "git_commit"),
            git_dirty=_bool(data, "git_dirty"),
        )


@dataclass(frozen=True, kw_only=True)
class GpuProcess:
    """A process the driver lists on a GPU."""

    pid: int | None
    name: str | None


@dataclass(frozen=True, kw_only=True)
class GpuInfo:
    """The facts of one GPU that the harness itself reads, from a telemetry inventory.

    The inventory's JSON (Fingerprint.gpus) keeps every key a vendor adapter wrote; this
    record is the part the preflight checks and the renderers use.
    """

    index: int | None = None
    name: str | None = None
    vendor: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    memory_total_mib: float | None = None
    power_limit_w: float | None = None
    clock_sm_max_mhz: float | None = None
    persistence_mode: bool | None = None
    throttle_reasons_active: tuple[str, ...] = ()
    processes: tuple[GpuProcess, ...] = ()

    @classmethod
    def from_dict(cls, data: Section) -> GpuInfo:
        """One GPU's inventory read back; see the module's note on leniency."""
        processes = data.get("processes")
        return cls(
            index=_int(data, "index"),
            name=_str(data, "name"),
            vendor=_str(data, "vendor"),
            driver_version=_str(data, "driver_version"),
            cuda_driver_version=_str(data, "cuda_driver_version"),
            memory_total_mib=_number(data, "memory_total_mib"),
            power_limit_w=_number(data, "power_limit_w"),
            clock_sm_max_mhz=_number(data, "clock_sm_max_mhz"),
            persistence_mode=_bool(data, "persistence_mode"),
            throttle_reasons_active=_texts(data.get("throttle_reasons_active")) or (),
            processes=tuple(_process(p) for p in processes) if isinstance(processes, list) else (),
        )


# --- lenient reading: a value of another kind reads as None ---


def _str(data: Section, key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _int(data: Section, key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(data: Section, key: str) -> float | None:
    """A number as written: an int stays an int, so it prints as it was read."""
    value = data.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _bool(data: Section, key: str) -> bool | None:
    value = data.get(key)
    return value if isinstance(value, bool) else None


def _sizes(value: Json) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def _texts(value: Json) -> tuple[str, ...] | None:
    return tuple(str(item) for item in value) if isinstance(value, list) else None


def _object(data: Section, key: str) -> Section:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _numa_node(data: Section) -> NumaNode:
    node, cpulist = data.get("node"), data.get("cpulist")
    return NumaNode(node=node if isinstance(node, int) else -1, cpulist=str(cpulist))


def _process(entry: Json) -> GpuProcess:
    if not isinstance(entry, dict):
        return GpuProcess(pid=None, name=str(entry))
    return GpuProcess(pid=_int(entry, "pid"), name=_str(entry, "name"))
