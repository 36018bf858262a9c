"""LoadGen's early-stopping rule for a latency percentile, and what it asks of a run's length.

A Server run is VALID only when LoadGen is 99 % confident, from the queries it ran, that the
share over the latency bound is within 1 - percentile: with ``overs`` queries over the bound
out of ``n``, the binomial chance of seeing at most ``overs`` when the true share is exactly
1 - percentile must be at most 1 - confidence. So a short run allows almost nothing over the
bound: 459 queries are needed with none over (LoadGen: "at least 460"), 662 with one, and a
500-query run is judged near its p99.8, not its p99. ``allowed_overs`` says how many a run of
``n`` queries may have; ``queries_for_share`` how long a run must be for its allowance to
reach a share of the nominal 1 %, which is how the Server confirmation is sized.

Checked against LoadGen's own logs: "would need to process at least 662 total queries" for
one query over at p99 (tests/unit/test_earlystop.py).
"""

from __future__ import annotations

import math

CONFIDENCE = 0.99  # LoadGen's, for every scenario's early stopping
PERCENTILE = 0.99  # Server's target_latency_percentile in mlperf.conf


def _log_binom_cdf(overs: int, n: int, share: float) -> float:
    """The log of P(X <= overs) for X ~ Binomial(n, share), summed in log space (n up to ~1e7)."""
    log_p, log_q = math.log(share), math.log1p(-share)
    terms = [
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * log_p
        + (n - k) * log_q
        for k in range(min(overs, n) + 1)
    ]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def min_passing_queries(
    overs: int, *, percentile: float = PERCENTILE, confidence: float = CONFIDENCE
) -> int:
    """The fewest queries with which ``overs`` over the bound still pass early stopping."""
    if overs < 0 or not 0 < percentile < 1 or not 0 < confidence < 1:
        raise ValueError(f"overs {overs}, percentile {percentile}, confidence {confidence}")
    limit = math.log1p(-confidence)
    share = 1 - percentile
    low, high = overs + 1, max(overs + 2, 64)
    while _log_binom_cdf(overs, high, share) > limit:  # grow until it passes
        low, high = high, high * 2
    while low < high:  # the first n that passes
        middle = (low + high) // 2
        if _log_binom_cdf(overs, middle, share) <= limit:
            high = middle
        else:
            low = middle + 1
    return low


def allowed_overs(
    queries: int, *, percentile: float = PERCENTILE, confidence: float = CONFIDENCE
) -> int:
    """How many of ``queries`` may be over the bound with early stopping met; -1: none may."""
    overs = -1
    while min_passing_queries(overs + 1, percentile=percentile, confidence=confidence) <= queries:
        overs += 1
    return overs


def queries_for_share(share: float, *, percentile: float = PERCENTILE) -> int:
    """The fewest queries whose early-stopping allowance is ``share`` of 1 - ``percentile``.

    share 0.5 at p99: a run that may have 0.5 % of its queries over the bound, i.e. one judged
    at about its p99.5 rather than the p99.8 a 500-query run is held to.
    """
    if not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1), got {share}")
    overs = 0
    while True:
        needed = min_passing_queries(overs, percentile=percentile)
        if overs >= share * (1 - percentile) * needed:
            return needed
        overs += 1


def confirm_step(overs: int | None, queries: int) -> float:
    """The share of an INVALID confirming run's rate the next one runs at.

    By how far the run missed: a few over the bound (up to 2 % of its queries: the tail sits
    near the bound) steps 10 % down; up to 5 %, 20 %; more (the queue ran away, as when the
    search's short runs never reached steady state), 30 %. A queue's tail shrinks steeply
    with its load, so these steps are coarse on purpose; no count (None): 10 %.
    """
    if overs is None or queries <= 0:
        return 0.9
    share = overs / queries
    return 0.9 if share <= 0.02 else 0.8 if share <= 0.05 else 0.7


RAN_AWAY = 0.95  # a run that completed under this share of its scheduled rate: the queue grew


def generative_confirm_rate(
    target_qps: float, scheduled_qps: float | None, completed_qps: float | None
) -> float:
    """The next confirming rate after an INVALID generative Server run.

    The batcher's counts that ``confirm_step`` weighs do not exist for a generative SUT, so
    it steps 10 % down; but when the run completed fewer queries per second than it was
    scheduled (the queue grew all run: the search's short runs never reached steady state,
    and stepping down 10 % at a time would take several more runs to get under), the next
    runs at 90 % of the rate the SUT actually completed.
    """
    step = target_qps * confirm_step(None, 0)
    if scheduled_qps and completed_qps and completed_qps < RAN_AWAY * scheduled_qps:
        return min(step, completed_qps * confirm_step(None, 0))
    return step
