"""Each result's MLPerf headline metric, as MLPerf reports it for its scenario, and its facts."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.values import headline, metric_values, published_value_of
from harness.errors import ResultError
from harness.records.genmetrics import GENERATIVE_SCENARIOS, generative_metrics
from harness.records.group import Group
from harness.records.metrics import Metric, round_headline, scenario_metrics
from harness.records.published import PublishedResult
from harness.records.result import RunResult


@dataclass(frozen=True, kw_only=True)
class Headline:
    """A scenario's headline metric for one result: median over its runs, in display units."""

    key: str  # the catalogue's key (harness.records.metrics)
    label: str  # e.g. "early-stopping p90 latency"
    unit: str  # "ms" or "samples/s"
    higher_is_better: bool
    value: float | None
    cov: float | None  # over the runs; None for a single value
    spec: str = ",.3f"  # the shown value's format

    def text(self) -> str:
        """The value with its unit, or "n/a"."""
        if self.value is None:
            return "n/a"
        return f"{format(self.value, self.spec)} {self.unit}"


def headline_of(metric: Metric, values: Sequence[float] = ()) -> Headline:
    """The metric's headline over stored values: their median and CoV, in shown units."""
    shown = [metric.shown(v) for v in values]
    return Headline(
        key=metric.key,
        label=metric.label,
        unit=metric.unit,
        higher_is_better=metric.higher_is_better,
        value=statistics.median(shown) if shown else None,
        cov=_cov(shown),
        spec=metric.spec,
    )


def group_headline(group: Group, metric: Metric | None = None) -> Headline:
    """The median of `metric` (the scenario's headline for the group) over its results."""
    scenario = group.results[0].scenario if group.results else "Offline"
    chosen = metric or headline(scenario, group.results)
    return headline_of(chosen, metric_values(group.results, chosen))


def published_metric(record: PublishedResult) -> Metric:
    """MLPerf's headline in the record's round: Server's scheduled rate up to v4.0.

    An LLM's (a record with a generation block) is tokens/s. The scenario's fallback where
    the record lacks it; a round not like 4.1 reads as today's.
    """
    if record.generation is not None and record.scenario in GENERATIVE_SCENARIOS:
        return generative_metrics(record.scenario).headline  # an LLM's: tokens/s
    found = scenario_metrics(record.scenario)
    try:
        chosen = round_headline(record.scenario, record.mlperf_version)
    except ResultError:
        chosen = found.headline
    if found.fallback is not None and published_value_of(record, chosen) is None:
        return found.fallback
    return chosen


def published_headline(record: PublishedResult, metric: Metric | None = None) -> Headline:
    """`metric` (the scenario's headline for the record) as the published result states it."""
    chosen = metric or published_metric(record)
    value = published_value_of(record, chosen)
    return headline_of(chosen, [] if value is None else [value])


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
