"""One metric over repeated trials: its statistics, and a reported metric's spread as shown."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TrialStats:
    """One metric over repeated trials: centre, spread and why it may not be trustworthy.

    Computed by harness.analysis.trials.trial_stats; written into trials.json and sweep.json
    through the records' codec (harness.records.codec).
    """

    values: tuple[float, ...]
    requested: int
    higher_is_better: bool
    median: float
    best: float
    mean: float
    stdev: float
    cov: float
    warnings: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class MetricSpread:
    """One reported metric over a group's trials: how it is shown, and its spread.

    `stats` keep the stored unit (`metric`'s, e.g. ns); their warnings give values as shown:
    shown value = stored value * `scale`, in `unit`.
    """

    metric: str  # the metric's key in the catalogue (harness.records.metrics), e.g. latency_ns.p99
    name: str  # its label there, as a report shows it, e.g. "p99 latency"
    unit: str  # its shown unit there, e.g. "ms"
    scale: float
    stats: TrialStats

    @property
    def flag(self) -> str | None:
        """The metric's warnings in one line, led by its shown name; None when it has none."""
        if not self.stats.warnings:
            return None
        return f"{self.name}: {'; '.join(self.stats.warnings)}"
