"""A process's cgroup (v1 or v2) CPU quota and memory limit, and the CPUs it may really use."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

from harness.fingerprint.probe import Probe, parse_cpulist

# cgroup v1 reports "no limit" as PAGE_COUNTER_MAX pages (about 2**63 bytes); anything this
# large is no limit in practice.
UNLIMITED_BYTES = 2**60
V1_MOUNTS = {
    "cpu": ("cpu", "cpu,cpuacct", "cpuacct,cpu"),
    "memory": ("memory",),
}
Reader = Callable[[Probe, str, int], "float | None"]


def proc_dir(pid: int | None) -> str:
    """The /proc directory of the process: `proc/self` or `proc/<pid>`."""
    return "proc/self" if pid is None else f"proc/{pid}"


def cgroup_dirs(probe: Probe, proc: str, controller: str) -> tuple[int, list[str]] | None:
    """The cgroup version and the existing directories of the process's cgroup, leaf first."""
    text = probe.optional(f"{proc}/cgroup")
    if text is None:
        return None
    if probe.exists("sys/fs/cgroup/cgroup.controllers"):
        return 2, _existing(probe, ("sys/fs/cgroup",), _cgroup_path(text, controller=None))
    bases = tuple(f"sys/fs/cgroup/{name}" for name in V1_MOUNTS[controller])
    return 1, _existing(probe, bases, _cgroup_path(text, controller=controller))


def _cgroup_path(text: str, *, controller: str | None) -> str:
    """The path in /proc/<pid>/cgroup for a v1 controller, or the v2 ("0::") path."""
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        names = controllers.split(",")
        if (controller is None and hierarchy == "0" and not controllers) or controller in names:
            return path
    return "/"


def _existing(probe: Probe, bases: tuple[str, ...], path: str) -> list[str]:
    """The cgroup directory and its ancestors that exist under the first mounted base.

    Inside a container the cgroup's own path is usually not visible (the container's cgroup is
    mounted as the root), so ancestors that do not exist are skipped.
    """
    parts = [part for part in path.split("/") if part]
    for base in bases:
        if probe.path(base).is_dir():
            candidates = ["/".join([base, *parts[:depth]]) for depth in range(len(parts), -1, -1)]
            return [rel for rel in candidates if probe.path(rel).is_dir()]
    return []


def cgroup_limit(
    probe: Probe, proc: str, controller: str, field: str, reader: Reader
) -> tuple[int | None, float | None]:
    """The cgroup version and the tightest limit along the cgroup path (None: no limit)."""
    found = cgroup_dirs(probe, proc, controller)
    if found is None:
        probe.note(field, f"/{proc}/cgroup not present")
        return None, None
    version, dirs = found
    if not dirs:
        probe.note(field, f"no cgroup {controller} controller mounted under /sys/fs/cgroup")
        return version, None
    limits = [limit for d in dirs if (limit := reader(probe, d, version)) is not None]
    return version, min(limits, default=None)


def read_cpu_quota(probe: Probe, cgroup_dir: str, version: int) -> float | None:
    """CPUs of a cgroup's CFS quota (1.5 = 150 ms per 100 ms), or None when unlimited."""
    if version == 2:
        text = probe.optional(f"{cgroup_dir}/cpu.max") or "max"
        quota, _, period = text.partition(" ")
    else:
        quota = probe.optional(f"{cgroup_dir}/cpu.cfs_quota_us") or "-1"
        period = probe.optional(f"{cgroup_dir}/cpu.cfs_period_us") or "100000"
    if quota in ("max", "-1"):
        return None
    try:
        return int(quota) / int(period or "100000")
    except ValueError:
        probe.note("cpu.cgroup_cpu_quota", f"/{cgroup_dir}: cannot parse quota {quota!r}")
        return None


def read_memory_limit(probe: Probe, cgroup_dir: str, version: int) -> float | None:
    """Bytes of a cgroup's memory limit, or None when unlimited."""
    name = "memory.max" if version == 2 else "memory.limit_in_bytes"
    text = probe.optional(f"{cgroup_dir}/{name}")
    if text is None or text == "max":
        return None
    try:
        limit = int(text)
    except ValueError:
        probe.note("memory.cgroup_limit_bytes", f"/{cgroup_dir}/{name}: cannot parse {text!r}")
        return None
    return None if limit >= UNLIMITED_BYTES else float(limit)


def affinity_cpus(probe: Probe, pid: int | None) -> int | None:
    """CPUs the process may run on: sched_getaffinity on this machine, else Cpus_allowed_list."""
    if probe.is_live:
        getaffinity = getattr(os, "sched_getaffinity", None)
        if getaffinity is None:
            probe.note("cpu.affinity_cpus", "sched_getaffinity is not available on this OS")
            return None
        try:
            return len(getaffinity(pid or 0))
        except OSError as exc:
            probe.note("cpu.affinity_cpus", f"sched_getaffinity({pid or 0}): {exc.strerror}")
            return None
    proc = proc_dir(pid)
    status = probe.text(f"{proc}/status", "cpu.affinity_cpus")
    for line in (status or "").splitlines():
        key, _, value = line.partition(":")
        if key == "Cpus_allowed_list":
            try:
                return len(parse_cpulist(value))
            except ValueError:
                break
    if status is not None:
        probe.note("cpu.affinity_cpus", f"/{proc}/status has no valid Cpus_allowed_list")
    return None


@dataclass(frozen=True, kw_only=True)
class CpuLimits:
    """The CPUs a process may use: its affinity, its cgroup's quota and the usable count."""

    affinity_cpus: int | None
    cgroup_version: int | None
    cgroup_cpu_quota: float | None
    usable_cpus: int | None


def collect_cpu_limits(probe: Probe, *, pid: int | None, online: int | None) -> CpuLimits:
    """Affinity, cgroup CPU quota and the usable CPU count (not `os.cpu_count()`)."""
    affinity = affinity_cpus(probe, pid)
    version, quota = cgroup_limit(
        probe, proc_dir(pid), "cpu", "cpu.cgroup_cpu_quota", read_cpu_quota
    )
    bounds = [n for n in (affinity, online) if n is not None]
    if quota is not None:
        bounds.append(max(1, math.ceil(quota)))
    if not bounds:
        probe.note("cpu.usable_cpus", "neither affinity, online CPUs nor a cgroup quota readable")
    return CpuLimits(
        affinity_cpus=affinity,
        cgroup_version=version,
        cgroup_cpu_quota=quota,
        usable_cpus=min(bounds) if bounds else None,
    )
