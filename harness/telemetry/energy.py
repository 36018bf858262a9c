"""Energy math as pure functions over tuples: integration, counter deltas, throttle shares."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

NS_PER_S = 1_000_000_000
# No single source draws more: a full rack is tens of kW. A larger reading is a fault.
MAX_SOURCE_W = 100_000.0


def plausible_w(watts: float) -> bool:
    """Whether a power reading is finite and within 0..MAX_SOURCE_W."""
    return math.isfinite(watts) and 0 <= watts <= MAX_SOURCE_W


def trapezoid_j(points: Sequence[tuple[int, float]]) -> float:
    """Energy (J) under (t_ns, power_w) points, time-ordered, by the trapezoid rule."""
    total = 0.0
    for (t0, p0), (t1, p1) in itertools.pairwise(points):
        total += (p0 + p1) / 2 * (t1 - t0) / NS_PER_S
    return total


def window_energy_j(
    points: Sequence[tuple[int, float]], start_ns: int, end_ns: int
) -> float | None:
    """Energy (J) over [start, end] from the points inside it; None without any.

    The first and last values are held out to the window's edges, so a window sampled at
    a constant power P for D seconds integrates to exactly P * D.
    """
    inside = [(t, p) for t, p in points if start_ns <= t <= end_ns]
    if not inside:
        return None
    edged = [(start_ns, inside[0][1]), *inside, (end_ns, inside[-1][1])]
    return trapezoid_j(edged)


def counter_delta(start: float, end: float, max_range: float | None) -> float | None:
    """Increase of a counter that wraps to zero after max_range; None if it went back unwrapped.

    At most one wrap between the two reads is assumed: read often enough for that to hold.
    """
    if end >= start:
        return end - start
    if max_range is None:
        return None
    return end + max_range - start


def hold_spans(times: Sequence[int], start_ns: int, end_ns: int) -> list[tuple[int, int]]:
    """The [begin, end) span each sample stands for, clipped to the window.

    A sample holds from its time (the first one: from the window's start) to the next
    sample's time (the last one: to the window's end).
    """
    spans: list[tuple[int, int]] = []
    for i, t in enumerate(times):
        begin = start_ns if i == 0 else max(t, start_ns)
        finish = end_ns if i == len(times) - 1 else min(times[i + 1], end_ns)
        spans.append((begin, max(begin, finish)))
    return spans


def throttle_shares(
    points: Sequence[tuple[int, tuple[str, ...] | None]], start_ns: int, end_ns: int
) -> dict[str, float] | None:
    """Time-weighted share of the window each reason was active; None when never reported.

    A reading holds until the next one (zero-order hold); unreported readings are skipped,
    so the last reported state stands in for them.
    """
    known = [(t, r) for t, r in points if r is not None and start_ns <= t <= end_ns]
    if not known or end_ns <= start_ns:
        return None
    active_ns: dict[str, int] = {}
    spans = hold_spans([t for t, _ in known], start_ns, end_ns)
    for (_, reasons), (begin, finish) in zip(known, spans, strict=True):
        for reason in reasons or ():
            active_ns[reason] = active_ns.get(reason, 0) + finish - begin
    window = end_ns - start_ns
    return {reason: active_ns[reason] / window for reason in sorted(active_ns)}


def average_power_w(energy_j: float, duration_ns: int) -> float | None:
    """Mean power over a duration; None for an empty duration."""
    if duration_ns <= 0:
        return None
    return energy_j * NS_PER_S / duration_ns


def sample_rate_hz(times: Sequence[int]) -> float | None:
    """Achieved sampling rate: intervals per second between the first and last sample."""
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return (len(times) - 1) * NS_PER_S / (times[-1] - times[0])


def counter_power_mismatch(
    delta_mj: float,
    duration_ns: int,
    power_w: float,
    *,
    rel_tol: float = 0.25,
    abs_tol_w: float = 5.0,
) -> str | None:
    """Why an energy counter cannot be trusted, or None when it agrees with measured power.

    The counter's mean power over the window must lie within rel_tol of the power readings
    taken meanwhile (or within abs_tol_w, for idle GPUs drawing little).
    """
    if duration_ns <= 0:
        return "validation window has no duration"
    if delta_mj <= 0:
        return f"energy counter did not advance in {duration_ns / NS_PER_S:.3g} s"
    counter_w = delta_mj / 1000 * NS_PER_S / duration_ns
    if abs(counter_w - power_w) <= max(rel_tol * power_w, abs_tol_w):
        return None
    return (
        f"energy counter says {counter_w:.1f} W but power readings say {power_w:.1f} W "
        f"over {duration_ns / NS_PER_S:.3g} s"
    )
