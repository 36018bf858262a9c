"""CPU identity and topology: /proc/cpuinfo, online and isolated CPUs, caches and NUMA nodes."""

from __future__ import annotations

from typing import Any

from harness.fingerprint.cgroup import collect_cpu_limits
from harness.fingerprint.cpufreq import SYSCPU, collect_cpufreq
from harness.fingerprint.probe import Probe, format_cpulist, size_kib

# The ISA extensions onnxruntime's CPU kernels dispatch on, in the order the issue lists them.
ISA_FLAGS = (
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)
CACHE_SUFFIX = {"Data": "d", "Instruction": "i", "Unified": ""}


def collect_cpu(probe: Probe, *, pid: int | None = None) -> dict[str, Any]:
    """Everything about the CPUs that can change a benchmark's result."""
    blocks = parse_cpuinfo(probe.text("proc/cpuinfo", "cpu.cpuinfo") or "")
    online = probe.cpulist(f"{SYSCPU}/online", "cpu.online_cpus")
    isolated = probe.cpulist(f"{SYSCPU}/isolated", "cpu.isolated_cpus", "kernel too old?")
    data: dict[str, Any] = {
        **_identity(probe, blocks),
        **_topology(probe, blocks),
        "online_cpulist": _cpulist_text(online),
        "online_cpus": None if online is None else len(online),
        "isolated_cpulist": _cpulist_text(isolated),
        "isolated_cpus": None if isolated is None else len(isolated),
    }
    data.update(collect_cpu_limits(probe, pid=pid, online=data["online_cpus"]))
    data["isa"] = _isa(probe, blocks)
    data["cache_kib"] = _caches(probe)
    data["current_mhz"] = _current_mhz(probe, blocks)
    data.update(collect_cpufreq(probe))
    data["numa_nodes"] = _numa_nodes(probe)
    return data


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """One `key: value` mapping per processor block of /proc/cpuinfo."""
    blocks = []
    for chunk in text.split("\n\n"):
        entry = {}
        for line in chunk.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                entry[key.strip()] = value.strip()
        if "processor" in entry:
            blocks.append(entry)
    return blocks


def _identity(probe: Probe, blocks: list[dict[str, str]]) -> dict[str, Any]:
    first = blocks[0] if blocks else {}
    values = {"model": first.get("model name"), "vendor": first.get("vendor_id")}
    for field, key in (("model", "model name"), ("vendor", "vendor_id")):
        if blocks and values[field] is None:
            probe.note(f"cpu.{field}", f"no '{key}' in /proc/cpuinfo")
    return values


def _topology(probe: Probe, blocks: list[dict[str, str]]) -> dict[str, Any]:
    threads = len(blocks) or None
    if blocks and all("physical id" in b and "core id" in b for b in blocks):
        sockets: int | None = len({b["physical id"] for b in blocks})
        cores: int | None = len({(b["physical id"], b["core id"]) for b in blocks})
    else:
        sockets = cores = None
        if blocks:
            for field in ("sockets", "cores"):
                probe.note(f"cpu.{field}", "no 'physical id'/'core id' in /proc/cpuinfo")
    per_core = threads // cores if threads and cores else None
    return {"sockets": sockets, "cores": cores, "threads": threads, "threads_per_core": per_core}


def _isa(probe: Probe, blocks: list[dict[str, str]]) -> list[str] | None:
    if not blocks:
        return None
    flags = blocks[0].get("flags", blocks[0].get("Features"))
    if flags is None:
        probe.note("cpu.isa", "no 'flags' in /proc/cpuinfo")
        return None
    present = set(flags.split())
    return [flag for flag in ISA_FLAGS if flag in present]


def _current_mhz(probe: Probe, blocks: list[dict[str, str]]) -> float | None:
    if not blocks:
        return None
    try:
        return float(blocks[0]["cpu MHz"])
    except (KeyError, ValueError):
        probe.note("cpu.current_mhz", "no 'cpu MHz' in /proc/cpuinfo")
        return None


def _caches(probe: Probe) -> dict[str, int] | None:
    caches: dict[str, int] = {}
    for index in sorted(probe.path(f"{SYSCPU}/cpu0/cache").glob("index[0-9]*")):
        rel = probe.relative(index)
        level, kind, size = (probe.optional(f"{rel}/{name}") for name in ("level", "type", "size"))
        if level is None or kind not in CACHE_SUFFIX or not size:
            continue
        try:
            caches[f"L{level}{CACHE_SUFFIX[kind]}"] = size_kib(size)
        except ValueError:
            probe.note("cpu.cache_kib", f"/{rel}/size: cannot parse {size!r}")
    if not caches:
        probe.note("cpu.cache_kib", f"/{SYSCPU}/cpu0/cache not present")
        return None
    return dict(sorted(caches.items()))


def _numa_nodes(probe: Probe) -> list[dict[str, Any]] | None:
    nodes = []
    base = "sys/devices/system/node"
    for path in probe.path(base).glob("node[0-9]*"):
        cpus = probe.optional(f"{base}/{path.name}/cpulist")
        if cpus is not None:
            nodes.append({"node": int(path.name[4:]), "cpulist": cpus})
    if not nodes:
        probe.note("cpu.numa_nodes", f"/{base} not present: kernel without NUMA support?")
        return None
    return sorted(nodes, key=lambda node: int(node["node"]))


def _cpulist_text(cpus: list[int] | None) -> str | None:
    return None if cpus is None else format_cpulist(cpus)
