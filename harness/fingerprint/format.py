"""Human-readable text of a fingerprint, for `harness fingerprint`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.fingerprint.fingerprint import Fingerprint

UNKNOWN = "unknown"
GPU_DETAILS = (
    ("driver_version", "driver", ""),
    ("memory_total_mib", "memory", " MiB"),
    ("power_limit_w", "power limit", " W"),
    ("clock_sm_max_mhz", "max SM clock", " MHz"),
)


def format_fingerprint(fp: Fingerprint) -> str:
    """Aligned `label  value` lines, one topic each, ending with what could not be read."""
    rows = [
        ("fingerprint", _headline(fp)),
        *_cpu_rows(fp.section("cpu")),
        ("memory", _memory(fp.section("memory"))),
        ("os", _os(fp.section("os"))),
        ("container", _container(fp.section("container"))),
        *_software_rows(fp.section("software")),
        ("env", " ".join(f"{k}={v}" for k, v in fp.section("env").items()) or "none set"),
        *_gpu_rows(fp),
        ("harness", _harness(fp.section("harness"))),
    ]
    rows.extend(
        ("missing" if i == 0 else "", f"{m.field}: {m.reason}") for i, m in enumerate(fp.missing)
    )
    return "\n".join(f"{label:<12} {value}".rstrip() for label, value in rows) + "\n"


def _v(value: Any, unit: str = "") -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value}{unit}"


def _headline(fp: Fingerprint) -> str:
    if fp.complete:
        return f"{fp.fingerprint_id} (complete)"
    count = len(fp.missing)
    return f"{fp.fingerprint_id} (incomplete: {count} field{'s' * (count != 1)} missing)"


def _cpu_rows(cpu: Mapping[str, Any]) -> list[tuple[str, str]]:
    caches = cpu.get("cache_kib") or {}
    nodes = cpu.get("numa_nodes")
    return [
        ("cpu", f"{_v(cpu.get('model'))} ({_v(cpu.get('vendor'))})"),
        ("topology", _topology(cpu)),
        ("usable cpus", _usable(cpu)),
        ("isa", " ".join(cpu.get("isa") or []) or "none of interest"),
        ("caches", ", ".join(f"{k} {v} KiB" for k, v in caches.items()) or UNKNOWN),
        ("frequency", _frequency(cpu)),
        ("numa", UNKNOWN if nodes is None else ", ".join(_node(n) for n in nodes)),
    ]


def _usable(cpu: Mapping[str, Any]) -> str:
    quota = cpu.get("cgroup_cpu_quota")
    return (
        f"{_v(cpu.get('usable_cpus'))} (online {_v(cpu.get('online_cpulist'))}, "
        f"affinity {_v(cpu.get('affinity_cpus'))}, "
        f"cgroup quota {'none' if quota is None else f'{quota:g}'}, "
        f"isolated {cpu.get('isolated_cpulist') or 'none'})"
    )


def _frequency(cpu: Mapping[str, Any]) -> str:
    return (
        f"max {_v(cpu.get('max_mhz'), ' MHz')}, driver {_v(cpu.get('scaling_driver'))}, "
        f"governor {_v(cpu.get('governor'))}, turbo {_v(cpu.get('turbo'))}"
    )


def _node(node: Mapping[str, Any]) -> str:
    return f"node{node['node']} {node['cpulist']}"


def _topology(cpu: Mapping[str, Any]) -> str:
    return (
        f"{_v(cpu.get('sockets'))} socket(s), {_v(cpu.get('cores'))} cores, "
        f"{_v(cpu.get('threads'))} threads, SMT {_v(cpu.get('smt_control'))}"
    )


def _gib(value: Any) -> str:
    return UNKNOWN if value is None else f"{value / 2**30:.1f} GiB"


def _memory(memory: Mapping[str, Any]) -> str:
    limit = memory.get("cgroup_limit_bytes")
    swap = memory.get("swap_total_bytes")
    swap_text = (
        "no swap"
        if swap == 0
        else f"swap {_gib(swap)} ({_gib(memory.get('swap_used_bytes'))} used)"
    )
    return (
        f"{_gib(memory.get('total_bytes'))}, {swap_text}, "
        f"cgroup limit {'none' if limit is None else _gib(limit)}"
    )


def _os(os_: Mapping[str, Any]) -> str:
    return (
        f"{_v(os_.get('release'))}, kernel {_v(os_.get('kernel'))}, "
        f"glibc {_v(os_.get('glibc'))}, {_v(os_.get('arch'))}"
    )


def _container(container: Mapping[str, Any]) -> str:
    if not container.get("detected"):
        ignored = "; ".join(container.get("ignored_evidence") or [])
        return f"no ({ignored})" if ignored else "no"
    image = container.get("image_tag") or container.get("image_id") or "image unknown"
    evidence = "; ".join(container.get("evidence") or [])
    return f"yes, {_v(container.get('runtime'))}, {image} ({evidence})"


def _software_rows(software: Mapping[str, Any]) -> list[tuple[str, str]]:
    python = software.get("python") or {}
    packages = software.get("packages") or {}
    return [
        ("python", f"{_v(python.get('implementation'))} {_v(python.get('version'))}"),
        ("packages", ", ".join(f"{k} {_v(v)}" for k, v in packages.items())),
        ("providers", ", ".join(software.get("providers") or []) or UNKNOWN),
    ]


def _gpu_rows(fp: Fingerprint) -> list[tuple[str, str]]:
    rows = []
    for position, gpu in enumerate(fp.gpus):
        details = [
            f"{label} {gpu[key]}{unit}"
            for key, label, unit in GPU_DETAILS
            if gpu.get(key) is not None
        ]
        name = gpu.get("name") or UNKNOWN
        rows.append((f"gpu{gpu.get('index', position)}", ", ".join([str(name), *details])))
    return rows or [("gpus", "none")]


def _harness(info: Mapping[str, Any]) -> str:
    commit = info.get("git_commit")
    if commit is None:
        return f"{_v(info.get('version'))} (git commit unknown)"
    dirty = {True: " (dirty)", False: "", None: " (dirty: unknown)"}[info.get("git_dirty")]
    return f"{_v(info.get('version'))} at {commit[:12]}{dirty}"
