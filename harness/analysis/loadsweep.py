"""A load sweep judged: its next rate, where to stop, its knee; pure, records in and out."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from harness.records.capacity import Goodput
from harness.records.loadsweep import LoadPoint, TokenPoint
from harness.records.result import RunResult

# Fractions of the capacity search's rate an automatic sweep runs at: well under it,
# where latency is the model's own, up to past it, where the queue grows.
AUTO_FRACTIONS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25)
# Points in a row over the bound after which higher rates only queue longer.
STOP_AFTER_OVER = 2
# A generative rate whose completed rate fell under this share of the offered one did not keep
# up: its queue grew all run, whatever a short run's percentiles say.
KEPT_UP_SHARE = 0.9


def auto_rates(peak_qps: float) -> tuple[float, ...]:
    """The rates of `--server-rates auto`, from the peak LoadGen found (3 significant digits)."""
    return tuple(float(f"{peak_qps * f:.3g}") for f in AUTO_FRACTIONS)


def _median(values: Sequence[float | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def load_point(
    target_qps: float,
    directory: str,
    results: Sequence[RunResult],
    goodputs: Sequence[Goodput | None] = (),
) -> LoadPoint:
    """A rate's point from its trials' results: medians, and how many were VALID.

    A generative model's point also has its token figures (`token_point`); `goodputs` are
    its trials' goodput from their stamps, where the run had limits and stamps.
    """
    median = _median
    return LoadPoint(
        target_qps=target_qps,
        dir=directory,
        trials=len(results),
        valid_trials=sum(1 for r in results if r.valid),
        completed_qps=median([r.samples_per_second for r in results]),
        p50_ns=median([r.latency_ns.p50 for r in results]),
        p90_ns=median([r.latency_ns.p90 for r in results]),
        p99_ns=median([r.latency_ns.p99 for r in results]),
        tokens=token_point(results, goodputs),
    )


def token_point(
    results: Sequence[RunResult], goodputs: Sequence[Goodput | None]
) -> TokenPoint | None:
    """The trials' token figures, medians of each; None when no trial was generative."""
    generated = [r.generation for r in results if r.generation is not None]
    if not generated:
        return None

    def pick(kind: str, rank: str) -> float | None:
        found = [getattr(g, kind) for g in generated]
        return _median([None if f is None else getattr(f, rank) for f in found])

    good = [g for g in goodputs if g is not None]
    return TokenPoint(
        tokens_per_second=_median([g.tokens_per_second for g in generated]),
        ttft_p50_ns=pick("ttft_ns", "p50"),
        ttft_p90_ns=pick("ttft_ns", "p90"),
        ttft_p99_ns=pick("ttft_ns", "p99"),
        tpot_p50_ns=pick("tpot_ns", "p50"),
        tpot_p90_ns=pick("tpot_ns", "p90"),
        tpot_p99_ns=pick("tpot_ns", "p99"),
        goodput_qps=_median([g.goodput_qps for g in good]),
        queue_p99_ns=_median(
            [None if g.queue_delay_ns is None else g.queue_delay_ns[1] for g in good]
        ),
    )


def queue_grew(point: LoadPoint) -> bool:
    """A generative rate the SUT did not keep up with: completed under KEPT_UP_SHARE of it."""
    done = point.completed_qps
    return point.tokens is not None and done is not None and done < KEPT_UP_SHARE * point.target_qps


def holds(point: LoadPoint) -> bool:
    """Every trial met the bound (a generative model's: both limits) and the queue kept up."""
    return point.valid and not queue_grew(point)


def over_in_a_row(points: Sequence[LoadPoint]) -> bool:
    """Whether the last STOP_AFTER_OVER points all broke the bound: stop, higher rates queue."""
    last = points[-STOP_AFTER_OVER:]
    return len(last) == STOP_AFTER_OVER and not any(holds(p) for p in last)


def knee_qps(points: Sequence[LoadPoint]) -> float | None:
    """The highest rate that held (`holds`); None when none did."""
    return max((p.target_qps for p in points if holds(p)), default=None)


def parse_rates(text: str) -> tuple[float, ...] | None:
    """`--server-rates`: "auto" (None: from the peak search) or increasing rates, "2,4,8.5".

    Raises:
        ValueError: naming the value that is not a positive finite number, or the order.
    """
    if text.strip() == "auto":
        return None
    rates: list[float] = []
    for word in text.split(","):
        try:
            rate = float(word)
        except ValueError:
            raise ValueError(f"{word.strip()!r} is not a number") from None
        if not 0 < rate <= 1e7:
            raise ValueError(f"{word.strip()!r} is not a rate in (0, 1e7] queries/s")
        rates.append(rate)
    if rates != sorted(set(rates)):
        raise ValueError("rates must increase, each once")
    return tuple(rates)
