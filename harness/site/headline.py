"""Each result's MLPerf headline metric, as MLPerf reports it for its scenario, and its facts."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.analysis.groups import Group
from harness.results.published import PublishedResult
from harness.results.records import RunResult

NS_PER_MS = 1e6


@dataclass(frozen=True, kw_only=True)
class Headline:
    """A scenario's headline metric for one result: median over its runs, in display units."""

    label: str  # e.g. "early-stopping p90 latency"
    unit: str  # "ms" or "samples/s"
    higher_is_better: bool
    value: float | None
    cov: float | None  # over the runs; None for a single value

    def text(self) -> str:
        """The value with its unit, or "n/a"."""
        if self.value is None:
            return "n/a"
        spec = ",.1f" if self.unit == "samples/s" else ",.3f"
        return f"{format(self.value, spec)} {self.unit}"


@dataclass(frozen=True, kw_only=True)
class Rule:
    """How to read a scenario's headline metric from a run, and what it is called."""

    label: str
    unit: str
    higher_is_better: bool
    read: Callable[[RunResult], float | None]


def _ns(value: int | None) -> float | None:
    return None if value is None else value / NS_PER_MS


def _server_qps(r: RunResult) -> float | None:
    return r.server.scheduled_samples_per_second if r.server is not None else None


def _early_p90(r: RunResult) -> float | None:
    return _ns(r.latency_ns.early_stopping_p90 or r.latency_ns.p90)


def _early_p99(r: RunResult) -> float | None:
    return _ns(r.latency_ns.early_stopping_p99 or r.latency_ns.p99)


# SingleStream and MultiStream: LoadGen's early-stopping estimate (the percentile itself where
# LoadGen logged none); Offline: samples/s; Server: the scheduled rate, valid at the bound.
RULES: dict[str, Rule] = {
    "SingleStream": Rule(
        label="early-stopping p90 latency", unit="ms", higher_is_better=False, read=_early_p90
    ),
    "MultiStream": Rule(
        label="early-stopping p99 latency", unit="ms", higher_is_better=False, read=_early_p99
    ),
    "Offline": Rule(
        label="throughput",
        unit="samples/s",
        higher_is_better=True,
        read=lambda r: r.samples_per_second,
    ),
    "Server": Rule(
        label="scheduled rate at the latency bound",
        unit="samples/s",
        higher_is_better=True,
        read=_server_qps,
    ),
}


def group_headline(group: Group) -> Headline:
    """The median of the scenario's headline metric over the group's results."""
    scenario = group.results[0].scenario if group.results else "Offline"
    rule = RULES[scenario]
    values = [v for r in group.results if (v := rule.read(r)) is not None]
    return Headline(
        label=rule.label,
        unit=rule.unit,
        higher_is_better=rule.higher_is_better,
        value=statistics.median(values) if values else None,
        cov=_cov(values),
    )


def published_headline(record: PublishedResult) -> Headline:
    """The metric the published result states, latencies in ms."""
    metric = record.metric
    latency = metric.unit == "ns"
    return Headline(
        label=metric.label,
        unit="ms" if latency else metric.unit,
        higher_is_better=not latency,
        value=metric.value / NS_PER_MS if latency else metric.value,
        cov=None,
    )


def _cov(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def device(r: RunResult) -> str:
    """What ran it: the GPUs, else the CPU model with its usable CPUs."""
    hw = r.hardware
    if hw.gpus:
        names = dict.fromkeys(hw.gpus)
        return " + ".join(f"{hw.gpus.count(n)} x {n}" if hw.gpus.count(n) > 1 else n for n in names)
    cpus = f" ({hw.usable_cpus} CPUs)" if hw.usable_cpus else ""
    return f"{hw.cpu_model or 'unknown CPU'}{cpus}"


def published_device(record: PublishedResult) -> str:
    """The submitter's accelerator, else its processor, as its system description states."""
    s = record.system
    part, count = (
        (s.accelerator, s.accelerators_per_node)
        if s.accelerator and s.accelerator.strip().lower() not in ("", "n/a", "none")
        else (s.processor, s.processors_per_node)
    )
    if not part:
        return s.name or s.id
    return f"{count} x {part}" if count and count not in ("1", "") else part
