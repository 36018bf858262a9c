"""Server's capacity search: the highest arrival rate LoadGen calls VALID, in few runs.

Every LoadGen performance run counts: each rate the search tries and each confirming run.
Two phases, each a bracket between the highest rate that passed and the lowest that failed:

- the search: short runs (the scenario's length), each judged as a confirmation will be
  (step_passes): its p99 within the bound, and no larger a share of its queries over the bound
  than early stopping allows a confirmation. It starts near the queueing ceiling
  (START_SHARE), steps by STEP up or down until a rate passes and one fails, then bisects the
  bracket geometrically until its ends are within SEARCH_PRECISION (SEARCH_RUNS at most);
- the confirmation: full runs (long enough for early stopping, judged near p99.6), each
  judged by LoadGen's verdict. The first runs at CONFIRM_MARGIN of the rate found; an INVALID
  one with no VALID yet is followed by a lower rate the caller derives from how far it
  missed (harness.analysis.earlystop); once a VALID rate lies below a failed one, it bisects
  between them while the two differ by more than CONFIRM_PRECISION and the runs so far, the
  search's included, are under RUN_BUDGET. CONFIRMS caps the confirmations in any case.

The peak is the highest rate a confirmation found VALID; none: no confirmed peak.

Why not LoadGen's FindPeakPerformance bisection: it stops when its bounds differ by
10^-d QPS (server_find_peak_qps_decimals_of_precision, d >= 0: never coarser than 1 QPS),
an absolute precision, so its run count grows with the rate: a bracket 41 % wide at
180 QPS takes 6 bisections to 1 QPS; one at ResNet-50's 12 QPS takes 7 to LoadGen's
default 0.1 QPS. A ratio bisection's count depends only on the precision asked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from harness.analysis.earlystop import allowed_overs, queries_for_share

# The search starts at 0.7 of the queueing ceiling at batch 1's measured cost: CPU SUTs
# without a batching gain land between 0.5x and 1.0x of it (ResNet-50 here: the reference
# harness 0.51x, the issue asks 0.6x), and 0.7 is that range's geometric middle, one STEP
# from either end.
START_SHARE = 0.7
# Up or down by 1.3x until bracketed: two steps span the 0.5-1.0x range (1.3^2 = 1.69), and a
# bracket 30 % wide bisects to SEARCH_PRECISION in 2 runs.
STEP = 1.3
# The search stops when its bracket is within 8 %: finer is wasted, since a short run's p99
# is itself uncertain by a few % and the confirmation refines it with the full verdict.
SEARCH_PRECISION = 0.08
SEARCH_RUNS = 5  # bracketing (2-3) + bisections (2): the rest of RUN_BUDGET confirms
# The first confirmation runs 5 % under the rate found: the full run is judged near p99.6
# (early stopping at CONFIRM_SHARE's length), whose rate lies 1-3 % under p99's on a steep
# latency curve (M/D/1 at rho ~0.9), and the short runs' p99 scatters by a few %.
CONFIRM_MARGIN = 0.95
# Bisect the confirmations' bracket until within 2 %: the peak is then within 2 % of the
# highest rate that passes, well inside the 5 % the search promises.
CONFIRM_PRECISION = 0.02
RUN_BUDGET = 8  # every run, the search's and the confirmations': the search's promise
CONFIRMS = 5  # confirmations at most, even with no VALID yet (the pipeline's old bound)
# Each confirmation runs enough queries for early stopping to allow CONFIRM_SHARE of the
# nominal 1 % over the bound (1,453 at p99: judged near p99.6; 500 allow none: p99.8).
CONFIRM_SHARE = 0.4


@functools.cache
def confirm_queries() -> int:
    """The fewest queries a confirming run needs (1,453 at p99)."""
    return queries_for_share(CONFIRM_SHARE)


@functools.cache
def confirm_over_share() -> float:
    """The share of its queries a confirming run may have over the bound (6 of 1,453: 0.41 %)."""
    queries = confirm_queries()
    return allowed_overs(queries) / queries


def step_passes(within_bound: bool, overs: int | None, queries: int | None) -> bool:
    """A search step's verdict: as a confirmation would judge the same tail.

    LoadGen judges a short run by its p99 alone (``within_bound``), but a confirmation is
    held near its p99.6 by early stopping, so a rate whose short run passes at p99 often fails
    to confirm: on ResNet-50 here (issue #28) the short runs passed up to 12.2 QPS and the
    confirmations first held at 8.3-8.4, which spent the run budget stepping down. A step also
    passes only with no larger a share over the bound than a confirmation may have; a log
    without the counts is judged by its p99 alone.
    """
    if not within_bound:
        return False
    if overs is None or not queries:
        return True
    return overs <= confirm_over_share() * queries


@dataclass(frozen=True, kw_only=True)
class Tried:
    """One run of the search: its rate and whether it passed (the bound; or VALID)."""

    rate_qps: float
    passed: bool


@dataclass(frozen=True, kw_only=True)
class Bracket:
    """The highest rate that passed and the lowest that failed; None: none yet."""

    low_qps: float | None = None
    high_qps: float | None = None

    def add(self, rate_qps: float, passed: bool) -> Bracket:
        """The bracket with one more judged rate."""
        if passed:
            low = rate_qps if self.low_qps is None else max(self.low_qps, rate_qps)
            return Bracket(low_qps=low, high_qps=self.high_qps)
        high = rate_qps if self.high_qps is None else min(self.high_qps, rate_qps)
        return Bracket(low_qps=self.low_qps, high_qps=high)

    def narrow(self, precision: float) -> bool:
        """Both ends known and within ``precision`` of each other (or crossed)."""
        if self.low_qps is None or self.high_qps is None:
            return False
        return self.high_qps <= self.low_qps * (1 + precision)

    def middle_qps(self) -> float:
        """The geometric middle: the bracket's ratio halves, whatever the rate's scale."""
        if self.low_qps is None or self.high_qps is None:
            raise ValueError("a bracket needs both ends to have a middle")
        return math.sqrt(self.low_qps * self.high_qps)


@dataclass(frozen=True, kw_only=True)
class SearchOutcome:
    """The search's bracket: found_qps passed (None: none did), failed_qps the lowest failure."""

    found_qps: float | None
    failed_qps: float | None
    tried: tuple[Tried, ...]


def start_qps(ceiling_qps: float) -> float:
    """Where the search starts: START_SHARE of the queueing ceiling (0.1 QPS at least)."""
    return round(max(ceiling_qps * START_SHARE, 0.1), 3)


def search(start: float, passes: Callable[[float], bool]) -> SearchOutcome:
    """Bracket the highest rate whose short run ``passes``, from ``start``, SEARCH_RUNS at most."""
    if not start > 0:
        raise ValueError(f"the search starts at a rate > 0, got {start}")
    bracket, tried = Bracket(), list[Tried]()
    rate: float | None = start
    while rate is not None and len(tried) < SEARCH_RUNS:
        passed = passes(rate)
        tried.append(Tried(rate_qps=rate, passed=passed))
        bracket = bracket.add(rate, passed)
        rate = _next_search_rate(bracket)
    return SearchOutcome(found_qps=bracket.low_qps, failed_qps=bracket.high_qps, tried=tuple(tried))


def _next_search_rate(bracket: Bracket) -> float | None:
    if bracket.low_qps is None:
        assert bracket.high_qps is not None  # one run has been judged
        return bracket.high_qps / STEP
    if bracket.high_qps is None:
        return bracket.low_qps * STEP
    return None if bracket.narrow(SEARCH_PRECISION) else bracket.middle_qps()


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A confirming run's verdict; ``lower_qps``: where to go next if it was INVALID."""

    valid: bool
    lower_qps: float


@dataclass(frozen=True, kw_only=True)
class ConfirmOutcome:
    """The highest rate confirmed VALID (None: none was) and every confirmation, in order."""

    peak_qps: float | None
    tried: tuple[Tried, ...]


def confirm(
    found_qps: float,
    failed_qps: float | None,
    runs_before: int,
    run: Callable[[float], Verdict],
) -> ConfirmOutcome:
    """Confirm the search's rate with full runs, then bisect up toward ``failed_qps``.

    ``runs_before``: the runs the search took (they count toward RUN_BUDGET); ``failed_qps``:
    the lowest rate the search saw fail (an upper end for the bisection; None: none failed).
    """
    bracket = Bracket(high_qps=failed_qps)
    tried: list[Tried] = []
    rate = found_qps * CONFIRM_MARGIN
    while True:
        verdict = run(rate)
        tried.append(Tried(rate_qps=rate, passed=verdict.valid))
        bracket = bracket.add(rate, verdict.valid)
        if len(tried) >= CONFIRMS:
            break
        if bracket.low_qps is None:  # nothing VALID yet: lower, by how far this one missed
            rate = min(verdict.lower_qps, rate * 0.99)
            continue
        if runs_before + len(tried) >= RUN_BUDGET or bracket.high_qps is None:
            break
        if bracket.narrow(CONFIRM_PRECISION):
            break
        rate = bracket.middle_qps()
    return ConfirmOutcome(peak_qps=bracket.low_qps, tried=tuple(tried))
