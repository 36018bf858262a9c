"""CPU time taken by work other than this harness, sampled from /proc/stat over a short window."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.fingerprint.cgroup import proc_dir
from harness.fingerprint.probe import Probe

SAMPLE_WINDOW_S = 0.5
Sleep = Callable[[float], None]


@dataclass(frozen=True, kw_only=True)
class CpuTicks:
    """The aggregate line of /proc/stat, in clock ticks (USER_HZ) summed over all CPUs."""

    busy: int  # user, nice, system, irq, softirq (guest time is inside user)
    total: int  # busy, idle, iowait and steal
    cpus: int  # the per-CPU lines: the CPUs the counters add up


@dataclass(frozen=True, kw_only=True)
class ProcTicks:
    """A /proc/<pid>/stat line: its parent, and its CPU ticks and those of its reaped children."""

    ppid: int
    own: int  # utime + stime
    children: int  # cutime + cstime


def other_busy_cpus(
    probe: Probe,
    pid: int | None = None,
    *,
    window_s: float = SAMPLE_WINDOW_S,
    sleep: Sleep = time.sleep,
) -> float | None:
    """The CPUs, on average over `window_s`, busy with work outside the harness's process tree.

    The busy ticks of all CPUs during the window, less those of the harness's process tree.
    Not the load average: it decays over a minute, so each trial would count the trial before
    it as "other work". `pid` is the harness's process (default: this one). None if /proc/stat
    cannot be read or its counters did not advance.
    """
    before, own_before = cpu_ticks(probe), tree_ticks(probe, pid)
    sleep(window_s)
    after, own_after = cpu_ticks(probe), tree_ticks(probe, pid)
    if before is None or after is None or after.total <= before.total or after.cpus < 1:
        return None
    ticks_per_cpu = (after.total - before.total) / after.cpus
    other = (after.busy - before.busy) - (own_after - own_before)
    return max(other, 0) / ticks_per_cpu


def cpu_ticks(probe: Probe) -> CpuTicks | None:
    """The aggregate CPU counters of /proc/stat, or None if unreadable."""
    lines = [line.split() for line in (probe.optional("proc/stat") or "").splitlines()]
    aggregate = next((fields for fields in lines if fields and fields[0] == "cpu"), None)
    if aggregate is None:
        return None
    try:
        counts = [int(value) for value in aggregate[1:9]]
    except ValueError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (counts + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    cpus = sum(1 for fields in lines if fields and fields[0][3:].isdigit())
    return CpuTicks(busy=busy, total=busy + idle + iowait + steal, cpus=cpus)


def tree_ticks(probe: Probe, pid: int | None = None) -> int:
    """CPU ticks of the process, its descendants (with their reaped children) and its ancestors.

    An ancestor's reaped children are left out: a make that has just reaped the previous trial
    would otherwise hide all of that trial's work in the window. Unreadable: 0.
    """
    table = process_table(probe)
    me = pid if pid is not None else _pid_of(probe.optional(f"{proc_dir(pid)}/stat"))
    if me is None or me not in table:
        return 0
    tree = {me, *_descendants(table, me)}
    ticks = sum(table[p].own + table[p].children for p in tree)
    parent = table[me].ppid
    while parent > 1 and parent in table and parent not in tree:
        tree.add(parent)
        ticks += table[parent].own
        parent = table[parent].ppid
    return ticks


def process_table(probe: Probe) -> dict[int, ProcTicks]:
    """Every process /proc shows, by PID (those gone while read are left out)."""
    try:
        entries = [entry.name for entry in probe.path("proc").iterdir() if entry.name.isdigit()]
    except OSError:
        return {}
    table = {}
    for name in entries:
        parsed = parse_proc_stat(probe.optional(f"proc/{name}/stat") or "")
        if parsed is not None:
            table[int(name)] = parsed
    return table


def parse_proc_stat(text: str) -> ProcTicks | None:
    """The parent and CPU ticks of a /proc/<pid>/stat line, None if it is not one."""
    # The command name, in parentheses, may itself hold spaces and parentheses.
    fields = text.rpartition(")")[2].split()
    try:
        ppid, utime, stime, cutime, cstime = (int(fields[i]) for i in (1, 11, 12, 13, 14))
    except (IndexError, ValueError):
        return None
    return ProcTicks(ppid=ppid, own=utime + stime, children=cutime + cstime)


def _pid_of(stat: str | None) -> int | None:
    first = (stat or "").split(" ", 1)[0]
    return int(first) if first.isdigit() else None


def _descendants(table: Mapping[int, ProcTicks], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, entry in table.items():
        children.setdefault(entry.ppid, []).append(pid)
    found: set[int] = set()
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), []):
            if child != root and child not in found:
                found.add(child)
                queue.append(child)
    return found
