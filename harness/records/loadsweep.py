"""A load sweep's records: Server's latency against the arrival rate, and where it bends.

Each point is one arrival rate (LoadGen's Server scenario: Poisson arrivals at target_qps)
run as trials; its latencies and completed rate are the trials' medians. The knee is the
highest rate whose every trial met the latency bound (LoadGen's VALID); above it latency
grows without bound, since the queue no longer drains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LoadStop = Literal["rates", "over_bound", "error"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenPoint:
    """A generative rate's token figures: medians over its trials.

    TTFT and TPOT percentiles are LoadGen's (its detail log); ``tokens_per_second`` its
    "Completed tokens per second"; ``goodput_qps`` the queries that met both limits per
    second and ``queue_p99_ns`` the p99 wait from issue to the start of generation, both from
    the SUT's own stamps (token_times.npz; harness.analysis.goodput).
    """

    tokens_per_second: float | None
    ttft_p50_ns: float | None
    ttft_p90_ns: float | None
    ttft_p99_ns: float | None
    tpot_p50_ns: float | None
    tpot_p90_ns: float | None
    tpot_p99_ns: float | None
    goodput_qps: float | None
    queue_p99_ns: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadPoint:
    """One arrival rate: its trials' directory, medians of what they measured, verdicts."""

    target_qps: float
    dir: str
    trials: int
    valid_trials: int  # of `trials`, those LoadGen judged VALID (every bound met)
    completed_qps: float | None  # median completed samples/s over the trials
    p50_ns: float | None
    p90_ns: float | None
    p99_ns: float | None
    tokens: TokenPoint | None = None  # a generative model's: None for the others

    @property
    def valid(self) -> bool:
        """Every trial met the bound."""
        return self.trials > 0 and self.valid_trials == self.trials


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadSweep:
    """Rates tried in order, the bound, the knee, and why the sweep stopped.

    `peak_qps` is the capacity search's result when the rates were derived from it
    (`--server-rates auto`), None when they were given. A generative model's sweep has its
    p99 TTFT and TPOT limits (`ttft_limit_ns`, `tpot_limit_ns`): LoadGen's VALID is both met.
    """

    scenario_name: str
    profile: str
    latency_bound_ns: int | None
    requested_qps: tuple[float, ...]
    points: tuple[LoadPoint, ...]
    knee_qps: float | None  # the highest rate that held (analysis.loadsweep.holds), or None
    stopped: LoadStop
    peak_qps: float | None = None
    complete: bool = True
    failure: str | None = None
    ttft_limit_ns: int | None = None
    tpot_limit_ns: int | None = None
    interactive: bool = False  # MLPerf's Interactive: Server under <model>-interactive

    @property
    def mode(self) -> str:
        """The scenario as MLPerf names it: Interactive or Server."""
        return "Interactive" if self.interactive else "Server"
