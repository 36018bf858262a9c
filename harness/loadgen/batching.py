"""Server's batching policy, derived from the latency bound and the measured batch costs.

Nothing here is tuned per machine: the costs come from warming each compiled batch, the bound
from mlperf.conf or the scenario. A query may find its worker busy with one batch, be held for
more queries, and then run in its own batch, so a batch size is usable when two of its runs fit
in the bound with room for Poisson bursts (BOUND_SHARE of it); the largest batch is the usable
one cheapest per sample (a bigger batch that costs more per sample only lowers capacity), and
the hold is what is left of the share after two batches, at most one batch's cost. Where
batching buys under MIN_GAIN per sample (as on small CPUs), a worker never holds a query:
batches still form from what is queued when it is busy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

BOUND_SHARE = 0.8  # of the latency bound, for one batch ahead, the hold and one's own batch
MIN_GAIN = 1.1  # per-sample speed-up of the largest usable batch over batch 1 worth a hold
TIE = 1.05  # per-sample costs within 5 % count as equal (warm-up medians are noisy)


@dataclass(frozen=True, kw_only=True)
class BatchPolicy:
    """What the batcher does and why: its largest batch, its hold, from which costs."""

    max_batch: int
    max_wait_ms: float
    costs_ms: dict[int, float]  # median warm-up latency of each compiled batch
    how: str
    workers: int = 1  # the workers it feeds, each running its own batches


def compiled_batches(batch_size: int) -> list[int]:
    """The batches to compile: powers of two below ``batch_size``, and itself."""
    sizes, size = [], 1
    while size < batch_size:
        sizes.append(size)
        size *= 2
    return [*sizes, batch_size]


def derive_policy(
    costs_ns: Mapping[int, float], bound_ns: int, max_wait_ms: float | None
) -> BatchPolicy:
    """The policy for measured ``costs_ns`` (per compiled batch) under ``bound_ns``.

    ``max_wait_ms`` from the scenario wins over the derived hold; the largest batch is always
    derived. Callers refuse the run first when even batch 1 exceeds the bound.
    """
    costs_ms = {size: cost / 1e6 for size, cost in sorted(costs_ns.items())}
    budget_ms = bound_ns / 1e6 * BOUND_SHARE
    smallest = min(costs_ms)
    usable = [size for size, cost in costs_ms.items() if 2 * cost <= budget_ms] or [smallest]
    per_sample = {size: costs_ms[size] / size for size in usable}
    best = min(per_sample.values())
    # The cheapest per sample (the larger among near-equals): gathering more only costs more.
    largest = max(size for size in usable if per_sample[size] <= best * TIE)
    gain = per_sample[smallest] / per_sample[largest]
    costs = ", ".join(f"{size}: {cost:.2f} ms" for size, cost in costs_ms.items())
    sizing = (
        f"largest batch {largest}: the cheapest per sample among those whose two runs fit in "
        f"{BOUND_SHARE:.0%} of the {bound_ns / 1e6:g} ms bound (measured batch costs {costs})"
    )
    if max_wait_ms is not None:
        return BatchPolicy(
            max_batch=largest,
            max_wait_ms=max_wait_ms,
            costs_ms=costs_ms,
            how=(
                f"{sizing}; hold {max_wait_ms:g} ms from the scenario's server.max_wait_ms (or "
                "the peak search's hold, which its confirming runs keep)"
            ),
        )
    if largest == smallest or gain < MIN_GAIN:
        return BatchPolicy(
            max_batch=largest,
            max_wait_ms=0.0,
            costs_ms=costs_ms,
            how=(
                f"{sizing}; hold 0 ms: batch {largest} is {gain:.2f}x faster per sample than "
                f"batch {smallest}, under {MIN_GAIN}x, so no query waits for company"
            ),
        )
    hold_ms = min(costs_ms[largest], max(0.0, budget_ms - 2 * costs_ms[largest]))
    return BatchPolicy(
        max_batch=largest,
        max_wait_ms=math.floor(hold_ms * 1000) / 1000,  # never above the cap by rounding
        costs_ms=costs_ms,
        how=(
            f"{sizing}; hold {hold_ms:.2f} ms: what is left of that share after two batches, "
            f"at most one batch's cost (batch {largest} is {gain:.2f}x faster per sample)"
        ),
    )
