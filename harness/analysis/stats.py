"""Statistics over repeated trials, batch-sweep control and Welch's t-test (pure)."""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.errors import ConfigError, DependencyError, ResultError

StopReason = Literal["plateau", "out_of_memory", "max_batch", "error"]
SCIPY_MISSING = (
    "Welch's t-test needs scipy; install the report extra: pip install 'beyond-tops[report]'"
)


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


def trial_stats(
    values: Sequence[float],
    *,
    requested: int,
    higher_is_better: bool,
    cov_limit: float = 0.05,
    outlier_limit: float = 0.5,
) -> TrialStats:
    """Median, best, mean, sample stdev and CoV of the trials, with a warning per doubt.

    Warnings: CoV at or above `cov_limit`; each value more than `outlier_limit` (relative)
    off the median; fewer values than `requested`. CoV is stdev / |mean|, 0.0 for one value
    or a zero mean. Raises ValueError for no values (a caller bug: nothing was measured).
    """
    if not values:
        raise ValueError("trial_stats needs at least one value")
    vals = tuple(float(v) for v in values)
    mean = statistics.fmean(vals)
    stdev = statistics.stdev(vals) if len(vals) > 1 else 0.0
    cov = stdev / abs(mean) if mean != 0 else 0.0
    median = statistics.median(vals)
    warnings = [
        *_cov_warning(vals, mean, stdev, cov, cov_limit),
        *_outlier_warnings(vals, median, outlier_limit),
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


def number(value: float) -> str:
    """Stable text for a measured number: 2 decimals below 1000, whole numbers above."""
    return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"


def percent(fraction: float) -> str:
    """A fraction as a percentage with one decimal ("7.3 %")."""
    return f"{fraction * 100:.1f} %"


def _cov_warning(
    vals: tuple[float, ...], mean: float, stdev: float, cov: float, limit: float
) -> list[str]:
    if len(vals) < 2 or cov < limit:
        return []
    return [
        f"spread too large to trust: CoV {percent(cov)} >= {limit * 100:g} % over "
        f"{len(vals)} trials (mean {number(mean)}, stdev {number(stdev)})"
    ]


def _outlier_warnings(vals: tuple[float, ...], median: float, limit: float) -> list[str]:
    if median == 0:
        return []
    return [
        f"trial {i} is an outlier: {number(v)} is {percent(abs(v - median) / abs(median))} "
        f"off the median {number(median)} (limit {limit * 100:g} %)"
        for i, v in enumerate(vals, start=1)
        if abs(v - median) / abs(median) > limit
    ]


@dataclass(frozen=True, kw_only=True)
class SweepPoint:
    """One batch size of a sweep and its throughput (samples/s) over trials."""

    batch_size: int
    stats: TrialStats


@dataclass(frozen=True, kw_only=True)
class SweepLimit:
    """The batch size that ran out of memory, and the error's first line."""

    batch_size: int
    error: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, for sweep.json."""
        return {"batch_size": self.batch_size, "error": self.error}


@dataclass(frozen=True, kw_only=True)
class SweepOutcome:
    """What a sweep measured and why it stopped."""

    points: tuple[SweepPoint, ...]
    saturation_batch: int | None
    best_batch: int | None
    stopped: StopReason
    limit: SweepLimit | None


def sweep_batches(start: int = 1, factor: int = 2, max_batch: int = 1024) -> Iterator[int]:
    """Batch sizes start, start*factor, start*factor**2, … up to max_batch.

    max_batch itself comes only when it lies on that sequence.
    """
    if start < 1 or factor < 2 or max_batch < start:
        raise ConfigError(
            f"sweep: need start >= 1, factor >= 2 and max_batch >= start "
            f"(got start {start}, factor {factor}, max_batch {max_batch})"
        )
    batch = start
    while batch <= max_batch:
        yield batch
        batch *= factor


def _rises(value: float, best_before: float, min_gain: float) -> bool:
    if best_before <= 0:
        return value > best_before
    return (value - best_before) / best_before >= min_gain


def plateaued(points: Sequence[SweepPoint], *, min_gain: float = 0.03, steps: int = 2) -> bool:
    """Whether throughput has stopped rising.

    A point "rises" when its median throughput beats the best median of every earlier point
    by at least `min_gain` (relative). The sweep has plateaued when each of the last `steps`
    points failed to rise. So one dip, or one small step, followed by a point that beats the
    best so far by >= 3 % does not stop it; two non-rising points in a row do.
    """
    if len(points) <= steps:
        return False
    medians = [p.stats.median for p in points]
    for i in range(len(medians) - steps, len(medians)):
        if _rises(medians[i], max(medians[:i]), min_gain):
            return False
    return True


def best_batch(points: Sequence[SweepPoint]) -> int | None:
    """The batch size with the highest median throughput (the smaller one on a tie)."""
    if not points:
        return None
    best = max(p.stats.median for p in points)
    return min(p.batch_size for p in points if p.stats.median == best)


def saturation_batch(points: Sequence[SweepPoint], *, fraction: float = 0.95) -> int | None:
    """The smallest batch size whose median reaches `fraction` of the best median.

    None when there are no points or no positive throughput.
    """
    best = max((p.stats.median for p in points), default=0.0)
    if best <= 0:
        return None
    return min(p.batch_size for p in points if p.stats.median >= fraction * best)


def run_sweep(
    measure: Callable[[int], TrialStats],
    *,
    batches: Iterable[int],
    is_oom: Callable[[BaseException], bool],
    min_gain: float = 0.03,
    steps: int = 2,
) -> SweepOutcome:
    """Measure each batch size in turn until throughput plateaus, memory runs out or batches end.

    An exception for which is_oom() is true becomes the limit and ends the sweep with the
    points so far; any other exception propagates.
    """
    points: list[SweepPoint] = []
    for batch in batches:
        try:
            stats = measure(batch)
        except Exception as exc:
            if not is_oom(exc):
                raise
            return _outcome(points, "out_of_memory", SweepLimit(batch_size=batch, error=_line(exc)))
        points.append(SweepPoint(batch_size=batch, stats=stats))
        if plateaued(points, min_gain=min_gain, steps=steps):
            return _outcome(points, "plateau", None)
    return _outcome(points, "max_batch", None)


def failed_sweep(points: Sequence[SweepPoint], batch: int, error: str) -> SweepOutcome:
    """A sweep that a point stopped, not for memory: the points before it, and the error."""
    return _outcome(list(points), "error", SweepLimit(batch_size=batch, error=error))


def _outcome(
    points: list[SweepPoint], stopped: StopReason, limit: SweepLimit | None
) -> SweepOutcome:
    return SweepOutcome(
        points=tuple(points),
        saturation_batch=saturation_batch(points),
        best_batch=best_batch(points),
        stopped=stopped,
        limit=limit,
    )


def _line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Welch's t statistic and two-sided p-value (scipy.stats.ttest_ind, equal_var=False).

    Needs two values per side (ValueError otherwise). When neither side varies, t is 0 and
    p is 1 for equal means, t is ±inf and p is 0 otherwise (scipy would return nan).
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least two values on each side")
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0:
        diff = statistics.fmean(a) - statistics.fmean(b)
        return (0.0, 1.0) if diff == 0 else (math.copysign(math.inf, diff), 0.0)
    try:
        from scipy import stats as scipy_stats  # type: ignore[import-untyped]
    except ImportError:
        raise DependencyError(SCIPY_MISSING) from None
    with warnings.catch_warnings():
        # scipy warns when one side's values are all equal; its result is still exact.
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        result = scipy_stats.ttest_ind(list(a), list(b), equal_var=False)
    return float(result.statistic), float(result.pvalue)


def significant(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05) -> bool | None:
    """Whether the means differ at level alpha; None with fewer than two values on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    return welch_t_test(a, b)[1] < alpha
