"""Statistics over repeated trials: centre, spread and the warnings that say why to doubt them."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import ResultError
from harness.records.metrics import Metric, number, percent


@dataclass(frozen=True, kw_only=True)
class TrialStats:
    """One metric over repeated trials: centre, spread and why it may not be trustworthy."""

    values: tuple[float, ...]
    requested: int
    higher_is_better: bool
    median: float
    best: float
    mean: float
    stdev: float
    cov: float
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, for trials.json and sweep.json."""
        return {
            "values": list(self.values),
            "requested": self.requested,
            "higher_is_better": self.higher_is_better,
            "median": self.median,
            "best": self.best,
            "mean": self.mean,
            "stdev": self.stdev,
            "cov": self.cov,
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialStats:
        """Read back what to_dict wrote; ResultError when a key is absent or malformed."""
        try:
            return cls(
                values=tuple(float(v) for v in data["values"]),
                requested=int(data["requested"]),
                higher_is_better=bool(data["higher_is_better"]),
                median=float(data["median"]),
                best=float(data["best"]),
                mean=float(data["mean"]),
                stdev=float(data["stdev"]),
                cov=float(data["cov"]),
                warnings=tuple(str(w) for w in data["warnings"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultError(f"trial statistics malformed ({type(exc).__name__}: {exc})") from None


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


def trial_stats(
    values: Sequence[float],
    *,
    requested: int,
    higher_is_better: bool,
    shown: Metric | None = None,
    cov_limit: float = 0.05,
    outlier_limit: float = 0.5,
) -> TrialStats:
    """Median, best, mean, sample stdev and CoV of the trials, with a warning per doubt.

    Warnings: CoV at or above `cov_limit`; each value more than `outlier_limit` (relative)
    off the median; fewer values than `requested`. CoV is stdev / |mean|, 0.0 for one value
    or a zero mean. The warnings give values as `shown` (a catalogue row: unit and scale),
    bare numbers without it; the statistics keep the stored unit. Raises ValueError for no
    values (a caller bug: nothing was measured).
    """
    if not values:
        raise ValueError("trial_stats needs at least one value")
    vals = tuple(float(v) for v in values)
    mean = statistics.fmean(vals)
    stdev = statistics.stdev(vals) if len(vals) > 1 else 0.0
    cov = stdev / abs(mean) if mean != 0 else 0.0
    median = statistics.median(vals)
    warnings = [
        *_cov_warning(vals, (mean, stdev, cov), cov_limit, shown),
        *_outlier_warnings(vals, median, outlier_limit, shown),
    ]
    if len(vals) < requested:
        warnings.append(
            f"only {len(vals)} of {requested} requested trials produced a value; "
            "the statistics rest on fewer trials than asked"
        )
    return TrialStats(
        values=vals,
        requested=requested,
        higher_is_better=higher_is_better,
        median=median,
        best=max(vals) if higher_is_better else min(vals),
        mean=mean,
        stdev=stdev,
        cov=cov,
        warnings=tuple(warnings),
    )


def _cov_warning(
    vals: tuple[float, ...], moments: tuple[float, float, float], limit: float, shown: Metric | None
) -> list[str]:
    mean, stdev, cov = moments
    if len(vals) < 2 or cov < limit:
        return []
    return [
        f"spread too large to trust: CoV {percent(cov)} >= {limit * 100:g} % over "
        f"{len(vals)} trials (mean {_text(shown, mean)}, stdev {_text(shown, stdev)})"
    ]


def _outlier_warnings(
    vals: tuple[float, ...], median: float, limit: float, shown: Metric | None
) -> list[str]:
    if median == 0:
        return []
    return [
        f"trial {i} is an outlier: {_text(shown, v)} is "
        f"{percent(abs(v - median) / abs(median))} off the median {_text(shown, median)} "
        f"(limit {limit * 100:g} %)"
        for i, v in enumerate(vals, start=1)
        if abs(v - median) / abs(median) > limit
    ]


def _text(shown: Metric | None, value: float) -> str:
    return number(value) if shown is None else shown.text(value)
