"""Memory size, swap and the cgroup memory limit, from /proc/meminfo and the cgroup tree."""

from __future__ import annotations

from harness.fingerprint.cgroup import cgroup_limit, proc_dir, read_memory_limit
from harness.fingerprint.probe import Probe
from harness.records.fingerprint_sections import MemoryInfo

MEMINFO_FIELDS = {
    "total_bytes": "MemTotal",
    "available_bytes": "MemAvailable",
    "swap_total_bytes": "SwapTotal",
    "swap_free_bytes": "SwapFree",
}


def parse_meminfo(text: str) -> dict[str, int]:
    """Bytes of each /proc/meminfo entry (the file says kB and means KiB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        number, _, unit = rest.strip().partition(" ")
        if number.isdigit():
            values[key] = int(number) * (1024 if unit == "kB" else 1)
    return values


def collect_memory(probe: Probe, *, pid: int | None = None) -> MemoryInfo:
    """Total and available memory, swap size and use, and the cgroup memory limit."""
    text = probe.text("proc/meminfo", "memory.meminfo")
    info = parse_meminfo(text or "")
    read: dict[str, int | None] = {}
    for field, key in MEMINFO_FIELDS.items():
        read[field] = info.get(key)
        if text is not None and key not in info:
            probe.note(f"memory.{field}", f"no '{key}' in /proc/meminfo")
    total, free = read["swap_total_bytes"], read["swap_free_bytes"]
    _, limit = cgroup_limit(
        probe, proc_dir(pid), "memory", "memory.cgroup_limit_bytes", read_memory_limit
    )
    return MemoryInfo(
        total_bytes=read["total_bytes"],
        available_bytes=read["available_bytes"],
        swap_total_bytes=total,
        swap_free_bytes=free,
        swap_used_bytes=None if total is None or free is None else total - free,
        cgroup_limit_bytes=None if limit is None else int(limit),
    )
