"""The one renderer of a fingerprint: a report's machine rows and `harness fingerprint`'s text.

Both views show the same facts in the same words (human units: GiB, MHz, KiB/MiB). The
report's table leaves out what was not read and sums it up in "not read"; the text shows
every topic ("unknown" where nothing was read), the clues behind the container verdict, the
NUMA nodes, and each field that could not be read with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.records.fingerprint import Fingerprint
from harness.records.fingerprint_sections import (
    ContainerInfo,
    CpuInfo,
    GpuInfo,
    HarnessInfo,
    MemoryInfo,
    OsInfo,
    SoftwareInfo,
)

UNKNOWN = "unknown"
LABEL_WIDTH = 12  # the text's label column


def machine_label(fp: Fingerprint) -> str:
    """The machine in a few words: CPU and its usable CPUs, and any GPUs."""
    cpu = fp.cpu
    text = f"{cpu.model or 'unknown CPU'}"
    if cpu.usable_cpus:
        text += f" ({cpu.usable_cpus} CPUs)"
    gpus = [gpu.name for gpu in fp.gpu_info if gpu.name]
    return text + (f", {', '.join(gpus)}" if gpus else "")


def machine_rows(fp: Fingerprint) -> list[tuple[str, str]]:
    """(part, description) rows of a report's table: what was read, nulls left out."""
    rows = [*_rows(fp, detail=False), ("not read", _not_read(fp))]
    return [(part, text) for part, text in rows if text]


def format_fingerprint(fp: Fingerprint) -> str:
    """Aligned `label  value` lines, one topic each, ending with what could not be read."""
    rows = [("fingerprint", _headline(fp))]
    rows += [(part.lower(), text or UNKNOWN) for part, text in _rows(fp, detail=True)]
    rows += [
        ("missing" if i == 0 else "", f"{m.field}: {m.reason}") for i, m in enumerate(fp.missing)
    ]
    return "\n".join(f"{label:<{LABEL_WIDTH}} {value}".rstrip() for label, value in rows) + "\n"


def _rows(fp: Fingerprint, *, detail: bool) -> list[tuple[str, str]]:
    """The topics in order; `detail` adds the text's NUMA nodes and container clues."""
    cpu = fp.cpu
    gpus = [(f"GPU {_index(g, i)}", _gpu(g)) for i, g in enumerate(fp.gpu_info)]
    return [
        ("CPU", _cpu(cpu)),
        ("usable CPUs", _usable_cpus(cpu)),
        ("clock", _clock(cpu)),
        ("ISA", _isa(cpu, detail=detail)),
        ("caches", _caches(cpu.cache_kib or {})),
        *([("NUMA", _numa(cpu))] if detail else []),
        ("memory", _memory(fp.memory)),
        ("OS", _os(fp.os)),
        ("container", _container(fp.container, detail=detail)),
        *(gpus or ([("GPUs", "none")] if detail else [])),
        ("software", _software(fp.software)),
        ("providers", ", ".join(fp.software.providers or ())),
        ("environment", " ".join(f"{k}={v}" for k, v in fp.env.items()) or "none set"),
        ("harness", _harness_version(fp.harness)),
    ]


def _headline(fp: Fingerprint) -> str:
    if fp.complete:
        return f"{fp.fingerprint_id} (complete)"
    count = len(fp.missing)
    return f"{fp.fingerprint_id} (incomplete: {count} field{'s' * (count != 1)} missing)"


def _cpu(cpu: CpuInfo) -> str:
    parts = [f"{cpu.model or 'unknown model'} ({cpu.vendor or 'unknown vendor'})"]
    for count, noun in ((cpu.sockets, "socket"), (cpu.cores, "core"), (cpu.threads, "thread")):
        if count is not None:
            parts.append(f"{count} {noun}{'s' * (count != 1)}")
    if cpu.smt_active is not None:
        parts.append(f"SMT {_on(cpu.smt_active)}")
    return ", ".join(parts)


def _usable_cpus(cpu: CpuInfo) -> str:
    if cpu.usable_cpus is None:
        return ""
    text = f"{cpu.usable_cpus}"
    if cpu.online_cpulist:
        text += f" (online {cpu.online_cpulist})"
    if cpu.affinity_cpus is not None and cpu.affinity_cpus != cpu.online_cpus:
        text += f", affinity {cpu.affinity_cpus} CPUs"
    if cpu.cgroup_cpu_quota is not None:
        text += f", cgroup quota {cpu.cgroup_cpu_quota:g} CPUs"
    if cpu.isolated_cpulist:
        text += f", isolated {cpu.isolated_cpulist}"
    return text


def _clock(cpu: CpuInfo) -> str:
    clocks = ((cpu.current_mhz, "now"), (cpu.max_mhz, "max"), (cpu.scaling_max_mhz, "cap"))
    turbo = None if cpu.turbo is None else _on(cpu.turbo)
    settings = (("driver", cpu.scaling_driver), ("governor", cpu.governor), ("turbo", turbo))
    parts = [f"{_mhz(mhz)} {what}" for mhz, what in clocks if mhz is not None]
    parts += [f"{what} {value}" for what, value in settings if value is not None]
    return ", ".join(parts)


def _isa(cpu: CpuInfo, *, detail: bool) -> str:
    if cpu.isa == () and detail:
        return "none of interest"
    return ", ".join(cpu.isa or ())


def _caches(caches: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {_kib(size)}" for name, size in caches.items())


def _numa(cpu: CpuInfo) -> str:
    nodes = cpu.numa_nodes
    return "" if nodes is None else ", ".join(f"node{n.node} {n.cpulist}" for n in nodes)


def _memory(memory: MemoryInfo) -> str:
    total, available = memory.total_bytes, memory.available_bytes
    parts = [f"{_gib(total)} total" if total is not None else ""]
    parts += [f"{_gib(available)} available" if available is not None else ""]
    text = ", ".join(p for p in parts if p)
    swap = memory.swap_total_bytes
    if swap == 0:
        text += "; no swap"
    elif swap is not None:
        text += f"; swap {_gib(swap)} ({_gib(memory.swap_used_bytes or 0)} used)"
    if memory.cgroup_limit_bytes is not None:
        text += f"; cgroup limit {_gib(memory.cgroup_limit_bytes)}"
    return text


def _os(system: OsInfo) -> str:
    leads = (
        ("", system.release),
        ("kernel ", system.kernel),
        ("", system.arch),
        ("glibc ", system.glibc),
    )
    return ", ".join(f"{lead}{value}" for lead, value in leads if value)


def _container(container: ContainerInfo, *, detail: bool) -> str:
    if container.detected is None:
        return ""
    if not container.detected:
        text, clues = "none detected", container.ignored_evidence
    else:
        parts = [container.runtime or "a container", container.image_tag or container.image_id]
        text, clues = ", ".join(p for p in parts if p), container.evidence
    return f"{text} ({'; '.join(clues)})" if detail and clues else text


def _index(gpu: GpuInfo, position: int) -> int:
    return position if gpu.index is None else gpu.index


def _gpu(gpu: GpuInfo) -> str:
    parts = []
    if gpu.memory_total_mib is not None:
        parts.append(_gib(gpu.memory_total_mib * 2**20))
    if gpu.power_limit_w is not None:
        parts.append(f"power limit {gpu.power_limit_w:,.0f} W")
    if gpu.clock_sm_max_mhz is not None:
        parts.append(f"max SM clock {_mhz(gpu.clock_sm_max_mhz)}")
    if gpu.driver_version:
        parts.append(f"driver {gpu.driver_version}")
    if gpu.cuda_driver_version:
        parts.append(f"CUDA {gpu.cuda_driver_version}")
    return f"{gpu.name or 'unknown GPU'}: {', '.join(parts) or 'no details read'}"


def _software(software: SoftwareInfo) -> str:
    version = software.python.version
    parts = [f"Python {version}"] if version else []
    parts += [f"{name} {found}" for name, found in software.packages.items() if found]
    return ", ".join(parts)


def _harness_version(harness: HarnessInfo) -> str:
    if harness == HarnessInfo():
        return ""
    text = f"{harness.version}"
    if not harness.git_commit:
        return f"{text}, git commit unknown"
    text += f", commit {harness.git_commit[:12]}"
    if harness.git_dirty is None:
        return f"{text}, uncommitted changes unknown"
    return text + (" with uncommitted changes" if harness.git_dirty else "")


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


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _gib(value_bytes: float) -> str:
    return f"{value_bytes / 2**30:,.1f} GiB"


def _kib(value_kib: float) -> str:
    return f"{value_kib / 1024:g} MiB" if value_kib >= 1024 else f"{value_kib:g} KiB"


def _mhz(value: float) -> str:
    return f"{value:,.0f} MHz"
