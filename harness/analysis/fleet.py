"""Fleet analysis: the runs a merge compares, and the nodes of one group that are not alike."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from harness.records.fingerprint import Fingerprint

UNKNOWN: Final = "unknown"
NOT_RECORDED: Final = "not recorded"
# A node's fingerprint memory differs by a few MiB from its twin's (firmware reservations).
MEMORY_TOLERANCE: Final = 0.01


class _Absent(enum.Enum):
    """A fact the fingerprint does not carry at all (as opposed to one reported missing)."""

    ABSENT = enum.auto()


ABSENT: Final = _Absent.ABSENT


@dataclass(frozen=True, kw_only=True)
class NodeRun:
    """One fleet task's result for one configuration, as the merge sees it."""

    task: int  # the fleet task's index
    node: str  # the node it ran on
    hw: str  # cpu | nvidia | rocm
    partition: str | None  # Slurm partition or Kubernetes namespace; None when unknown
    config: str  # what ran, the comparison key: e.g. "tiny fp32 SingleStream batch 1"
    metric: str  # the headline metric as shown, e.g. "p90 latency (ms)", "samples/s"
    higher_is_better: bool
    value: float | None  # median over the task's trials; None when it produced no result
    spread_cov: float | None  # the trials' coefficient of variation; None with one trial
    fingerprint: Mapping[str, Any]  # the run's fingerprint mapping ({} when unknown)


@dataclass(frozen=True, kw_only=True)
class Difference:
    """Nodes of one (partition, hw) group that differ in one fingerprint fact."""

    group: str  # e.g. "debug / cpu"
    fact: str  # human label, e.g. "CPU model", "GPU driver", "CPU max clock (MHz)"
    values: Mapping[str, str]  # node -> value as shown (every node of the group)


def show_value(value: Any) -> str:
    """A fingerprint value as a table shows it: None "unknown", booleans on/off, lists joined."""
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return " ".join(show_value(item) for item in value) or "none"
    return str(value)


def _show_gib(value: Any) -> str:
    return UNKNOWN if value is None else f"{value / 2**30:.1f}"


def _show_recorded(value: Any) -> str:
    return "recorded" if value else NOT_RECORDED


@dataclass(frozen=True, kw_only=True)
class Fact:
    """One fingerprint fact that helps define a machine's speed, compared across a group."""

    label: str
    path: str  # where it is: "cpu.model"; "gpus.<key>" for every GPU's key
    read: Callable[[Fingerprint], Any]  # the raw value, None when reported missing, or ABSENT
    show: Callable[[Any], str] = show_value
    tolerance: float = 0.0  # relative spread of numbers under which they count as equal


def _at(path: str) -> Callable[[Fingerprint], Any]:
    def read(fp: Fingerprint) -> Any:
        value: Any = fp.data
        for part in path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                return ABSENT
            value = value[part]
        return value

    return read


def _every_gpu(key: str) -> Callable[[Fingerprint], Any]:
    """One value for all GPUs of a node when they agree, else each GPU's value in order."""

    def read(fp: Fingerprint) -> Any:
        values = [gpu[key] for gpu in fp.gpus if key in gpu]
        if not values:
            return ABSENT
        if all(value == values[0] for value in values):
            return values[0]
        return ", ".join(show_value(value) for value in values)

    return read


def _gpu_count(fp: Fingerprint) -> Any:
    return len(fp.gpus) if "gpus" in fp.data else ABSENT


def _fact(label: str, path: str) -> Fact:
    return Fact(label=label, path=path, read=_at(path))


def _gpu_fact(label: str, key: str) -> Fact:
    return Fact(label=label, path=f"gpus.{key}", read=_every_gpu(key))


# Compared in this order. Left out: facts that always differ (hostname, current clock, free
# memory, fingerprint_id, timestamps, PCI bus ids, GPU uuids), the CPU vendor (the model says
# it) and performance variables (CUDA_VISIBLE_DEVICES legitimately differs between tasks).
FACTS: Final[tuple[Fact, ...]] = (
    Fact(label="fingerprint", path="", read=lambda fp: bool(fp.data), show=_show_recorded),
    _fact("CPU model", "cpu.model"),
    _fact("CPU sockets", "cpu.sockets"),
    _fact("CPU cores", "cpu.cores"),
    _fact("CPU threads", "cpu.threads"),
    _fact("usable CPUs", "cpu.usable_cpus"),
    _fact("SMT", "cpu.smt_active"),
    _fact("ISA flags", "cpu.isa"),
    Fact(
        label="memory (GiB)",
        path="memory.total_bytes",
        read=_at("memory.total_bytes"),
        show=_show_gib,
        tolerance=MEMORY_TOLERANCE,
    ),
    _fact("CPU max clock (MHz)", "cpu.max_mhz"),
    _fact("CPU scaling max clock (MHz)", "cpu.scaling_max_mhz"),
    _fact("CPU governor", "cpu.governor"),
    _fact("turbo", "cpu.turbo"),
    Fact(label="GPU count", path="gpus", read=_gpu_count),
    _gpu_fact("GPU model", "name"),
    _gpu_fact("GPU memory (MiB)", "memory_total_mib"),
    _gpu_fact("GPU driver", "driver_version"),
    _gpu_fact("CUDA driver", "cuda_driver_version"),
    _gpu_fact("ROCm", "rocm_version"),
    _gpu_fact("GPU max SM clock (MHz)", "clock_sm_max_mhz"),
    _gpu_fact("GPU max memory clock (MHz)", "clock_mem_max_mhz"),
    _gpu_fact("GPU default SM clock (MHz)", "clock_sm_default_mhz"),
    _gpu_fact("GPU default memory clock (MHz)", "clock_mem_default_mhz"),
    _gpu_fact("GPU power limit (W)", "power_limit_w"),
    _gpu_fact("GPU enforced power limit (W)", "power_limit_enforced_w"),
    _gpu_fact("GPU ECC", "ecc_enabled"),
    _gpu_fact("GPU MIG mode", "mig_mode"),
    _gpu_fact("GPU compute partition", "compute_partition"),
    _gpu_fact("GPU memory partition", "memory_partition"),
    _gpu_fact("GPU max PCIe generation", "pcie_gen_max"),
    _gpu_fact("GPU max PCIe width", "pcie_width_max"),
    _fact("kernel", "os.kernel"),
    _fact("Python", "software.python.version"),
    _fact("onnxruntime", "software.packages.onnxruntime"),
    _fact("LoadGen", "software.packages.mlcommons-loadgen"),
    _fact("numpy", "software.packages.numpy"),
    _fact("onnxruntime providers", "software.providers"),
    _fact("container image", "container.image_id"),
)


def heterogeneity(runs: Sequence[NodeRun]) -> list[Difference]:
    """The facts in which the nodes of each (partition, hw) group differ, by group then fact.

    Every run of a node counts: a node whose own runs disagree (a clock changed between
    tasks) is a finding as well, its values shown as "a | b" in task order. A fact reported
    missing (null) differs only from nodes that know it, and shows as "unknown"; a fact a
    node's fingerprint does not carry at all shows as "not recorded" and differs from nothing.
    Memory totals within MEMORY_TOLERANCE of each other count as equal. Facts come in the
    order of FACTS; groups sorted by their label; nodes in natural order ("n2" before "n10").
    """
    differences = []
    for group, nodes in _groups(runs):
        for fact in FACTS:
            readings = {node: [fact.read(fp) for fp in fps] for node, fps in nodes.items()}
            if _differs(fact, readings):
                values = {node: _shown(fact, raw) for node, raw in readings.items()}
                differences.append(Difference(group=group, fact=fact.label, values=values))
    return differences


def _groups(runs: Sequence[NodeRun]) -> list[tuple[str, dict[str, list[Fingerprint]]]]:
    """Each group's label and its nodes' fingerprints (nodes naturally sorted, runs by task)."""
    grouped: dict[str, dict[str, list[Fingerprint]]] = {}
    for run in sorted(runs, key=lambda r: r.task):
        partition = "(unknown)" if run.partition is None else run.partition
        nodes = grouped.setdefault(f"{partition} / {run.hw}", {})
        nodes.setdefault(run.node, []).append(Fingerprint(data=run.fingerprint))
    return [
        (label, {node: grouped[label][node] for node in sorted(grouped[label], key=natural_key)})
        for label in sorted(grouped)
    ]


def natural_key(text: str) -> list[tuple[int, str]]:
    """Sort key that orders digit runs by number: node2 before node10."""
    parts = (part for part in re.split(r"(\d+)", text) if part)
    return [(1, f"{int(part):020d}") if part.isdigit() else (0, part) for part in parts]


def _differs(fact: Fact, readings: Mapping[str, list[Any]]) -> bool:
    values = [value for raw in readings.values() for value in raw if value is not ABSENT]
    known = [value for value in values if value is not None]
    if not known:
        return False
    if len(known) < len(values):
        return True
    if fact.tolerance and all(isinstance(v, (int, float)) for v in known):
        return bool(max(known) - min(known) >= fact.tolerance * max(known))
    return len({fact.show(value) for value in known}) > 1


def _shown(fact: Fact, raw: list[Any]) -> str:
    shown = [fact.show(value) for value in raw if value is not ABSENT]
    return " | ".join(dict.fromkeys(shown)) or NOT_RECORDED


def describe_difference(d: Difference) -> str:
    """One line: the group, the fact and the nodes sharing each value, in node order.

    e.g. "debug / cpu: CPU model differs: node1, node2 'AMD EPYC 7763'; node3 'AMD EPYC 7543'".
    """
    nodes_by_value: dict[str, list[str]] = {}
    for node, value in d.values.items():
        nodes_by_value.setdefault(value, []).append(node)
    parts = [f"{', '.join(nodes)} '{value}'" for value, nodes in nodes_by_value.items()]
    return f"{d.group}: {d.fact} differs: {'; '.join(parts)}"
