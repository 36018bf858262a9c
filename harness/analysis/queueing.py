"""How fast any one-at-a-time server can go under a latency bound: the queueing ceiling.

Server's Poisson arrivals queue behind each other. A server that runs one query at a time
with a fixed cost D per query is MLPerf's M/D/1 queue: at utilisation rho its waiting time
has a long exponential tail (bursts), so its p99 latency reaches a bound long before rho
reaches 1. With D = 52 ms and a 200 ms bound at p99 that happens near 8.5 queries/s,
rho ~ 0.44: no SUT without a batching gain holds the bound at 0.7x its back-to-back rate.

``ceiling_qps`` finds that rate by simulating the queue (Lindley's recursion over seeded
Poisson arrivals) and bisecting on the rate. It answers "how close is the SUT to what
queueing allows with its measured batch-1 cost", separating the SUT's overheads from the
physics of the hardware. It is an upper bound for a server whose per-query cost never drops
below ``cost_ms`` and never batches profitably; a batching gain (a GPU) can beat it.
LoadGen's early stopping asks more of short runs than a plain p99 (a few hundred queries
allow almost none over the bound), so a short confirmed run lands below it.

Written by hand: a closed form for M/D/1 percentiles exists (Erlang's series) but is
numerically delicate at the tail, and no maintained library ships it; a seeded simulation
of 20,000 arrivals is exact enough (its p99 moves < 2 % between seeds) and short.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

ARRIVALS = 20_000  # simulated queries per rate: p99 from ~200 tail samples
BISECTIONS = 30  # rate resolution: (upper bound) / 2**30, far below a query per hour


def sojourn_quantile_ms(
    rate_qps: float,
    cost_ms: float,
    *,
    quantile: float = 0.99,
    arrivals: int = ARRIVALS,
    servers: int = 1,
) -> float:
    """The ``quantile`` of wait + service in a FIFO queue of ``servers``, Poisson at ``rate_qps``.

    ``servers`` > 1 is M/D/c: each query starts on the first server to come free.
    """
    if rate_qps <= 0 or cost_ms <= 0 or servers < 1:
        raise ValueError(
            f"rate, cost and servers must be > 0, got {rate_qps} QPS, {cost_ms} ms, {servers}"
        )
    gaps_ms = np.random.default_rng(0).exponential(1000.0 / rate_qps, arrivals)
    if servers > 1:
        return _many_servers_quantile_ms(gaps_ms, cost_ms, quantile, servers)
    # Lindley: the next query waits for what is left of this one's wait + service.
    slack_ms = cost_ms - gaps_ms[1:]
    waits_ms = np.empty(arrivals)
    waits_ms[0] = 0.0
    wait = 0.0
    for n, slack in enumerate(slack_ms.tolist(), start=1):
        wait = max(0.0, wait + slack)
        waits_ms[n] = wait
    return float(np.quantile(waits_ms, quantile)) + cost_ms


def _many_servers_quantile_ms(
    gaps_ms: np.ndarray, cost_ms: float, quantile: float, servers: int
) -> float:
    """M/D/c by direct simulation: FIFO, each arrival on the server that frees first."""
    free_at = [0.0] * servers  # a min-heap of when each server is next free
    arrival, waits_ms = 0.0, np.empty(len(gaps_ms))
    for n, gap in enumerate(gaps_ms.tolist()):
        arrival += gap if n else 0.0
        start = max(arrival, heapq.heappop(free_at))
        heapq.heappush(free_at, start + cost_ms)
        waits_ms[n] = start - arrival
    return float(np.quantile(waits_ms, quantile)) + cost_ms


def ceiling_qps(
    cost_ms: float, bound_ms: float, *, quantile: float = 0.99, servers: int = 1
) -> float:
    """The highest Poisson rate whose ``quantile`` latency stays within ``bound_ms``.

    ``servers``: that many one-at-a-time workers, each at ``cost_ms`` a query (M/D/c).
    0.0 when one query alone (``cost_ms``) already exceeds the bound.
    """
    if cost_ms > bound_ms:
        return 0.0
    low, high = 0.0, 1000.0 * servers / cost_ms  # at c/cost the queue is unstable
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        if middle > 0 and (
            sojourn_quantile_ms(middle, cost_ms, quantile=quantile, servers=servers) <= bound_ms
        ):
            low = middle
        else:
            high = middle
    return math.floor(low * 1000) / 1000


def service_times_ms(issue_ns: np.ndarray, complete_ns: np.ndarray, servers: int) -> np.ndarray:
    """Each query's service time, from its issue and completion stamps alone.

    For a FIFO SUT of ``servers`` one-at-a-time workers (a Server run whose batches were all
    of one query): taken in issue order, a query starts when it is issued or when the first
    worker comes free, whichever is later, and its service is its completion minus that start.
    """
    if servers < 1 or len(issue_ns) != len(complete_ns):
        raise ValueError(f"{len(issue_ns)} issues, {len(complete_ns)} completions, {servers}")
    order = np.argsort(issue_ns, kind="stable")
    free_at = [0] * servers
    service = np.empty(len(order))
    for n, (issued, done) in enumerate(
        zip(issue_ns[order].tolist(), complete_ns[order].tolist(), strict=True)
    ):
        start = max(issued, heapq.heappop(free_at))
        heapq.heappush(free_at, done)
        service[n] = (done - start) / 1e6
    return service


def _overs(service_ms: np.ndarray, gaps_ms: np.ndarray, servers: int, bound_ms: float) -> int:
    """Queries over the bound when these arrivals meet these services, FIFO on ``servers``."""
    free_at = [0.0] * servers
    arrival, overs = 0.0, 0
    for gap, cost in zip(gaps_ms.tolist(), service_ms.tolist(), strict=True):
        arrival += gap
        start = max(arrival, heapq.heappop(free_at))
        heapq.heappush(free_at, start + cost)
        overs += start + cost - arrival > bound_ms
    return overs


def early_stopping_capacity_qps(
    service_ms: np.ndarray,
    bound_ms: float,
    *,
    servers: int,
    allowed_overs: int,
    runs: int = 64,
) -> float:
    """The highest Poisson rate at which these service times, in their own order, pass.

    What an ideal dispatcher (FIFO, no overhead) on ``servers`` workers could confirm with the
    services a run measured: the rate at which at least half of ``runs`` seeded Poisson runs
    of that many queries have at most ``allowed_overs`` over ``bound_ms`` (LoadGen's early
    stopping at that length). The services keep their order, each run starting at a seeded
    offset, so slow spells of a shared machine stay together as they happened; drawn at
    random they would spread into a tail i.i.d. queueing shrugs off. A confirmed peak near
    this capacity loses nothing to the harness; one far under a capacity well under the M/D/c
    ceiling loses it to the machine's own service times.
    """
    if len(service_ms) == 0 or servers < 1 or allowed_overs < 0:
        raise ValueError(f"{len(service_ms)} services, {servers} servers, {allowed_overs} overs")
    rng = np.random.default_rng(0)
    unit_gaps = rng.exponential(1.0, (runs, len(service_ms)))
    offsets = rng.integers(0, len(service_ms), runs)
    orders = [np.roll(service_ms, -int(offset)) for offset in offsets]
    low, high = 0.0, 1000.0 * servers / float(np.median(service_ms))
    for _ in range(20):  # 2**-20 of the upper bound
        middle = (low + high) / 2
        gaps = unit_gaps * (1000.0 / middle) if middle > 0 else unit_gaps
        passed = sum(
            _overs(order, gaps[n], servers, bound_ms) <= allowed_overs
            for n, order in enumerate(orders)
        )
        low, high = (middle, high) if middle > 0 and 2 * passed >= runs else (low, middle)
    return math.floor(low * 1000) / 1000
