"""The batch-size sweep: its driver, where throughput saturates, and why it stopped (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from harness.errors import ConfigError
from harness.records.metrics import number, percent
from harness.records.sweep import (
    SaturationVerdict,
    StopReason,
    SweepLimit,
    SweepOutcome,
    SweepPoint,
)
from harness.records.trials import TrialStats


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


def saturation_verdict(
    points: Sequence[SweepPoint], *, fraction: float = 0.95
) -> SaturationVerdict:
    """The saturation batch of the medians, bounded by what the trials' ranges allow.

    With ranges instead of medians, the earliest possible saturation point is the smallest
    batch whose best trial reaches `fraction` of the highest worst trial; the latest, the
    smallest batch whose worst trial reaches `fraction` of the highest best trial.
    """
    batch = saturation_batch(points, fraction=fraction)
    if batch is None:
        why = "no batch size measured a positive throughput" if points else "nothing finished"
        return SaturationVerdict(batch=None, earliest=None, latest=None, certain=False, caveat=why)
    best_low = max(min(p.stats.values) for p in points)
    best_high = max(max(p.stats.values) for p in points)
    earliest = min(p.batch_size for p in points if max(p.stats.values) >= fraction * best_low)
    latest = min(
        (p.batch_size for p in points if min(p.stats.values) >= fraction * best_high),
        default=None,
    )
    caveat = _saturation_caveat(points, batch, (earliest, latest), fraction)
    return SaturationVerdict(
        batch=batch, earliest=earliest, latest=latest, certain=caveat is None, caveat=caveat
    )


def _saturation_caveat(
    points: Sequence[SweepPoint], batch: int, bounds: tuple[int, int | None], fraction: float
) -> str | None:
    earliest, latest = bounds
    single = [p.batch_size for p in points if len(p.stats.values) < 2]
    if earliest == batch == latest and not single:
        return None
    parts: list[str] = []
    if not earliest == batch == latest:
        last = points[-1].batch_size
        upto = f"batch {latest}" if latest is not None else f"beyond batch {last} (the last run)"
        parts.append(f"the trials' ranges put it anywhere from batch {earliest} to {upto}")
        parts += _doubts(points, batch, fraction)
    if single:
        parts.append(f"batch {_sizes(single)} ran one trial, so its spread is unknown")
    return f"saturation at batch {batch} is uncertain: {'; '.join(parts)}"


def _doubts(points: Sequence[SweepPoint], batch: int, fraction: float) -> list[str]:
    """The points whose trials leave the saturation point in doubt, and how."""
    (chosen,) = [p for p in points if p.batch_size == batch]
    best_low = max(min(p.stats.values) for p in points)
    best_high = max(max(p.stats.values) for p in points)
    doubts = [
        f"batch {p.batch_size}'s trials ({_span(p)}) reach {fraction * 100:g} % of the best"
        for p in points
        if p.batch_size < batch and max(p.stats.values) >= fraction * best_low
    ]
    if min(chosen.stats.values) < fraction * best_high:
        top = next(p for p in points if max(p.stats.values) == best_high)
        if top is chosen:
            doubts.append(f"batch {batch}'s own trials span {_span(chosen)}")
        else:
            how = "overlap" if min(top.stats.values) <= max(chosen.stats.values) else "lie above"
            doubts.append(
                f"batch {top.batch_size}'s trials ({_span(top)}) {how} batch {batch}'s "
                f"({_range(chosen)})"
            )
    return doubts


def _range(point: SweepPoint) -> str:
    return f"{number(min(point.stats.values))}-{number(max(point.stats.values))}"


def _span(point: SweepPoint) -> str:
    return f"{_range(point)} samples/s, CoV {percent(point.stats.cov)}"


def _sizes(batches: Sequence[int]) -> str:
    return ", ".join(str(b) for b in batches)


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
    points so far; any other exception propagates. The outcome names the requested batch
    sizes it did not reach, and why.
    """
    requested = tuple(batches)
    points: list[SweepPoint] = []
    for batch in requested:
        try:
            stats = measure(batch)
        except Exception as exc:
            if not is_oom(exc):
                raise
            limit = SweepLimit(batch_size=batch, error=_line(exc))
            return _outcome(points, requested, "out_of_memory", limit)
        points.append(SweepPoint(batch_size=batch, stats=stats))
        if plateaued(points, min_gain=min_gain, steps=steps):
            why = _plateau_reason(points[-steps:], min_gain)
            return _outcome(points, requested, "plateau", None, why)
    return _outcome(points, requested, "max_batch", None)


def failed_sweep(
    points: Sequence[SweepPoint], batch: int, error: str, requested: Sequence[int] = ()
) -> SweepOutcome:
    """A sweep that a point stopped, not for memory: the points before it, and the error."""
    limit = SweepLimit(batch_size=batch, error=error)
    return _outcome(list(points), tuple(requested), "error", limit)


def _plateau_reason(last: Sequence[SweepPoint], min_gain: float) -> str:
    sizes = " and ".join(str(p.batch_size) for p in last)
    return (
        f"throughput had plateaued: batch {sizes} did not beat the best median before "
        f"{'them' if len(last) > 1 else 'it'} by {min_gain * 100:g} %"
    )


def _outcome(
    points: list[SweepPoint],
    requested: tuple[int, ...],
    stopped: StopReason,
    limit: SweepLimit | None,
    plateau: str | None = None,
) -> SweepOutcome:
    last = limit.batch_size if limit is not None else (points[-1].batch_size if points else None)
    skipped = requested[requested.index(last) + 1 :] if last in requested else ()
    return SweepOutcome(
        points=tuple(points),
        saturation_batch=saturation_batch(points),
        best_batch=best_batch(points),
        stopped=stopped,
        limit=limit,
        requested=requested,
        skipped=skipped,
        skip_reason=_skip_reason(stopped, limit, plateau) if skipped else None,
        verdict=saturation_verdict(points),
    )


def _skip_reason(stopped: StopReason, limit: SweepLimit | None, plateau: str | None) -> str:
    if limit is None:
        return plateau or f"the sweep stopped ({stopped})"
    if stopped == "out_of_memory":
        return f"batch {limit.batch_size} ran out of memory"
    return f"batch {limit.batch_size} failed: {limit.error}"


def _line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
