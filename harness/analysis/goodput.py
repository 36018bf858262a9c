"""Goodput: the queries that met both token-latency limits, per second, from the SUT's stamps.

LoadGen judges a generative Server run by its p99 TTFT and TPOT; goodput (as serving
benchmarks define it) counts the queries that met both limits, so a rate whose p99 fails by a
hair still shows how much useful work it did. The stamps are the SUT's own monotonic clock
(token_times.npz), not LoadGen's, so they include the queries LoadGen counts and no others.
"""

from __future__ import annotations

import numpy as np

from harness.records.capacity import Goodput


def goodput(
    *,
    issue_ns: np.ndarray,
    first_ns: np.ndarray,
    end_ns: np.ndarray,
    tokens: np.ndarray,
    ttft_limit_ns: int,
    tpot_limit_ns: int,
    start_ns: np.ndarray | None = None,
) -> Goodput | None:
    """The queries meeting both limits, and per second over the run's span; None for no queries."""
    if len(issue_ns) == 0:
        return None
    issue = issue_ns.astype(np.int64)
    ttft = first_ns.astype(np.int64) - issue
    steps = np.maximum(tokens.astype(np.int64) - 1, 1)
    tpot = (end_ns.astype(np.int64) - first_ns.astype(np.int64)) / steps
    good = int(np.count_nonzero((ttft <= ttft_limit_ns) & (tpot <= tpot_limit_ns)))
    span_s = float(end_ns.max() - issue.min()) / 1e9
    delay = None
    if start_ns is not None and len(start_ns) == len(issue):
        waits = np.sort(start_ns.astype(np.int64) - issue)
        rank = max(int(np.ceil(0.99 * len(waits))) - 1, 0)  # nearest rank
        delay = (int(waits[(len(waits) - 1) // 2]), int(waits[rank]), int(waits[-1]))
    return Goodput(
        queries=len(issue),
        good=good,
        span_s=round(span_s, 6),
        goodput_qps=round(good / span_s, 6) if span_s > 0 else 0.0,
        queue_delay_ns=delay,
    )
