"""The machine a result ran on, once per fingerprint, in human units."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.fingerprint import Fingerprint


def machine_label(fp: Fingerprint) -> str:
    """The machine in a few words: CPU and its usable CPUs, and any GPUs."""
    cpu = fp.section("cpu")
    text = f"{cpu.get('model') or 'unknown CPU'}"
    if cpu.get("usable_cpus"):
        text += f" ({cpu['usable_cpus']} CPUs)"
    gpus = [str(g.get("name")) for g in fp.gpus if g.get("name")]
    return text + (f", {', '.join(gpus)}" if gpus else "")


def machine_rows(fp: Fingerprint) -> list[tuple[str, str]]:
    """(part, description) rows: what was read, in GiB/MHz/KiB, nulls left out."""
    cpu, memory = fp.section("cpu"), fp.section("memory")
    rows = [
        ("CPU", _cpu(cpu)),
        ("usable CPUs", _usable_cpus(cpu)),
        ("clock", _clock(cpu)),
        ("ISA", ", ".join(cpu.get("isa") or []) or ""),
        ("caches", _caches(cpu.get("cache_kib") or {})),
        ("memory", _memory(memory)),
        ("OS", _os(fp.section("os"))),
        ("container", _container(fp.section("container"))),
        *((f"GPU {g.get('index', i)}", _gpu(g)) for i, g in enumerate(fp.gpus)),
        ("software", _software(fp.section("software"))),
        ("providers", ", ".join(fp.section("software").get("providers") or [])),
        ("environment", " ".join(f"{k}={v}" for k, v in fp.section("env").items()) or "none set"),
        ("harness", _harness_version(fp.section("harness"))),
        ("not read", _not_read(fp)),
    ]
    return [(part, text) for part, text in rows if text]


def _cpu(cpu: Mapping[str, Any]) -> str:
    parts = [f"{cpu.get('model') or 'unknown model'} ({cpu.get('vendor') or 'unknown vendor'})"]
    for key, noun in (("sockets", "socket"), ("cores", "core"), ("threads", "thread")):
        if isinstance(cpu.get(key), int):
            parts.append(f"{cpu[key]} {noun}{'s' * (cpu[key] != 1)}")
    if cpu.get("smt_active") is not None:
        parts.append(f"SMT {'on' if cpu['smt_active'] else 'off'}")
    return ", ".join(parts)


def _usable_cpus(cpu: Mapping[str, Any]) -> str:
    if cpu.get("usable_cpus") is None:
        return ""
    text = f"{cpu['usable_cpus']}"
    if cpu.get("online_cpulist"):
        text += f" (online {cpu['online_cpulist']})"
    if cpu.get("cgroup_cpu_quota") is not None:
        text += f", cgroup quota {cpu['cgroup_cpu_quota']:g} CPUs"
    if cpu.get("isolated_cpulist"):
        text += f", isolated {cpu['isolated_cpulist']}"
    return text


def _clock(cpu: Mapping[str, Any]) -> str:
    parts = [
        f"{_mhz(cpu[key])} {what}"
        for key, what in (("current_mhz", "now"), ("max_mhz", "max"), ("scaling_max_mhz", "cap"))
        if cpu.get(key) is not None
    ]
    parts += [f"{what} {cpu[key]}" for key, what in CLOCK_SETTINGS if cpu.get(key) is not None]
    return ", ".join(parts)


CLOCK_SETTINGS = (("scaling_driver", "driver"), ("governor", "governor"), ("turbo", "turbo"))


def _caches(caches: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {_kib(size)}" for name, size in caches.items() if size is not None)


def _memory(memory: Mapping[str, Any]) -> str:
    total, available = memory.get("total_bytes"), memory.get("available_bytes")
    parts = [f"{_gib(total)} total" if total is not None else ""]
    parts += [f"{_gib(available)} available" if available is not None else ""]
    text = ", ".join(p for p in parts if p)
    swap = memory.get("swap_total_bytes")
    if swap == 0:
        text += "; no swap"
    elif swap is not None:
        text += f"; swap {_gib(swap)} ({_gib(memory.get('swap_used_bytes') or 0)} used)"
    if memory.get("cgroup_limit_bytes") is not None:
        text += f"; cgroup limit {_gib(memory['cgroup_limit_bytes'])}"
    return text


def _container(container: Mapping[str, Any]) -> str:
    if not container:
        return ""
    if not container.get("detected"):
        return "none detected"
    parts = [container.get("runtime") or "a container", container.get("image_tag")]
    return ", ".join(str(p) for p in parts if p)


def _gpu(gpu: Mapping[str, Any]) -> str:
    parts = []
    if gpu.get("memory_total_mib") is not None:
        parts.append(_gib(gpu["memory_total_mib"] * 2**20))
    if gpu.get("power_limit_w") is not None:
        parts.append(f"power limit {gpu['power_limit_w']:,.0f} W")
    if gpu.get("clock_sm_max_mhz") is not None:
        parts.append(f"max SM clock {_mhz(gpu['clock_sm_max_mhz'])}")
    if gpu.get("driver_version"):
        parts.append(f"driver {gpu['driver_version']}")
    if gpu.get("cuda_driver_version"):
        parts.append(f"CUDA {gpu['cuda_driver_version']}")
    return f"{gpu.get('name') or 'unknown GPU'}: {', '.join(parts) or 'no details read'}"


def _software(software: Mapping[str, Any]) -> str:
    python = software.get("python") or {}
    parts = [f"Python {python.get('version')}"] if python.get("version") else []
    packages = software.get("packages") or {}
    parts += [f"{name} {version}" for name, version in packages.items() if version]
    return ", ".join(parts)


def _harness_version(harness: Mapping[str, Any]) -> str:
    if not harness:
        return ""
    text = f"{harness.get('version')}"
    if harness.get("git_commit"):
        text += f", commit {str(harness['git_commit'])[:12]}"
        text += " with uncommitted changes" if harness.get("git_dirty") else ""
    return text


def _not_read(fp: Fingerprint) -> str:
    causes: dict[str, list[str]] = {}
    for missing in fp.missing:
        cause = missing.reason.rpartition(": ")[2] or missing.reason
        causes.setdefault(cause, []).append(missing.field)
    count = len(fp.missing)
    if not count:
        return ""
    grouped = "; ".join(f"{cause} ({', '.join(fields)})" for cause, fields in causes.items())
    return f"{count} field{'s' * (count != 1)}: {grouped}"


def _os(system: Mapping[str, Any]) -> str:
    leads = (("release", ""), ("kernel", "kernel "), ("arch", ""), ("glibc", "glibc "))
    return ", ".join(f"{lead}{system[key]}" for key, lead in leads if system.get(key))


def _gib(value_bytes: float) -> str:
    return f"{value_bytes / 2**30:,.1f} GiB"


def _kib(value_kib: float) -> str:
    return f"{value_kib / 1024:g} MiB" if value_kib >= 1024 else f"{value_kib:g} KiB"


def _mhz(value: float) -> str:
    return f"{value:,.0f} MHz"
