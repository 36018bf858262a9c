"""CPU identity and topology: /proc/cpuinfo, online and isolated CPUs, caches and NUMA nodes."""

from __future__ import annotations

from dataclasses import dataclass

from harness.fingerprint.cgroup import collect_cpu_limits
from harness.fingerprint.cpufreq import SYSCPU, collect_cpufreq
from harness.fingerprint.probe import Probe, format_cpulist, size_kib
from harness.records.fingerprint_sections import CpuInfo, NumaNode

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


@dataclass(frozen=True, kw_only=True)
class _Topology:
    sockets: int | None
    cores: int | None
    threads: int | None
    threads_per_core: int | None


def collect_cpu(probe: Probe, *, pid: int | None = None) -> CpuInfo:
    """Everything about the CPUs that can change a benchmark's result."""
    blocks = parse_cpuinfo(probe.text("proc/cpuinfo", "cpu.cpuinfo") or "")
    online = probe.cpulist(f"{SYSCPU}/online", "cpu.online_cpus")
    isolated = probe.cpulist(f"{SYSCPU}/isolated", "cpu.isolated_cpus", "kernel too old?")
    model, vendor = _identity(probe, blocks)
    topology = _topology(probe, blocks)
    online_cpus = None if online is None else len(online)
    limits = collect_cpu_limits(probe, pid=pid, online=online_cpus)
    isa, caches = _isa(probe, blocks), _caches(probe)
    current_mhz = _current_mhz(probe, blocks)
    freq = collect_cpufreq(probe)
    return CpuInfo(
        model=model,
        vendor=vendor,
        sockets=topology.sockets,
        cores=topology.cores,
        threads=topology.threads,
        threads_per_core=topology.threads_per_core,
        online_cpulist=_cpulist_text(online),
        online_cpus=online_cpus,
        isolated_cpulist=_cpulist_text(isolated),
        isolated_cpus=None if isolated is None else len(isolated),
        affinity_cpus=limits.affinity_cpus,
        cgroup_version=limits.cgroup_version,
        cgroup_cpu_quota=limits.cgroup_cpu_quota,
        usable_cpus=limits.usable_cpus,
        isa=isa,
        cache_kib=caches,
        current_mhz=current_mhz,
        max_mhz=freq.max_mhz,
        scaling_max_mhz=freq.scaling_max_mhz,
        scaling_driver=freq.scaling_driver,
        governor=freq.governor,
        turbo=freq.turbo,
        turbo_control=freq.turbo_control,
        smt_control=freq.smt_control,
        smt_active=freq.smt_active,
        numa_nodes=_numa_nodes(probe),
    )


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


def _identity(probe: Probe, blocks: list[dict[str, str]]) -> tuple[str | None, str | None]:
    """The CPU's model name and vendor, from the first processor block."""
    first = blocks[0] if blocks else {}
    values = {"model": first.get("model name"), "vendor": first.get("vendor_id")}
    for field, key in (("model", "model name"), ("vendor", "vendor_id")):
        if blocks and values[field] is None:
            probe.note(f"cpu.{field}", f"no '{key}' in /proc/cpuinfo")
    return values["model"], values["vendor"]


def _topology(probe: Probe, blocks: list[dict[str, str]]) -> _Topology:
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
    return _Topology(sockets=sockets, cores=cores, threads=threads, threads_per_core=per_core)


def _isa(probe: Probe, blocks: list[dict[str, str]]) -> tuple[str, ...] | None:
    if not blocks:
        return None
    flags = blocks[0].get("flags", blocks[0].get("Features"))
    if flags is None:
        probe.note("cpu.isa", "no 'flags' in /proc/cpuinfo")
        return None
    present = set(flags.split())
    return tuple(flag for flag in ISA_FLAGS if flag in present)


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


def _numa_nodes(probe: Probe) -> tuple[NumaNode, ...] | None:
    nodes = []
    base = "sys/devices/system/node"
    for path in probe.path(base).glob("node[0-9]*"):
        cpus = probe.optional(f"{base}/{path.name}/cpulist")
        if cpus is not None:
            nodes.append(NumaNode(node=int(path.name[4:]), cpulist=cpus))
    if not nodes:
        probe.note("cpu.numa_nodes", f"/{base} not present: kernel without NUMA support?")
        return None
    return tuple(sorted(nodes, key=lambda node: node.node))


def _cpulist_text(cpus: list[int] | None) -> str | None:
    return None if cpus is None else format_cpulist(cpus)
