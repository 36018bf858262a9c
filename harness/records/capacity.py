"""A generative Server capacity search's record: the peak rate and goodput at each rate tried."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Goodput:
    """One run's queries against both token limits, from the SUT's own stamps (token_times.npz).

    A query is good when its time to first token (issue to first token) is within the TTFT
    limit and its time per output token ((end - first) / (tokens - 1)) within the TPOT limit.
    ``goodput_qps`` is the good queries over the span from the first issue to the last answer.
    ``queue_delay_ns``: p50 / p99 / max of issue to the start of generation (None in files
    written before the SUT stamped starts).
    """

    queries: int
    good: int
    span_s: float
    goodput_qps: float
    queue_delay_ns: tuple[int, int, int] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RateTried:
    """A confirming run (or the final run) of the search: its rate, LoadGen's verdict, goodput.

    ``energy_per_token_mj`` and ``tokens_per_joule``: per power source, over the run's
    measured window (its result's telemetry); ``energy_not_measured`` says why there are none.
    """

    directory: str  # relative to the run directory: "." for the final run, "confirm-N"
    target_qps: float
    valid: bool
    tokens_per_second: float | None
    ttft_p99_ns: int | None
    tpot_p99_ns: int | None
    goodput: Goodput | None
    energy_per_token_mj: Mapping[str, float] = field(default_factory=dict)
    tokens_per_joule: Mapping[str, float] = field(default_factory=dict)
    energy_not_measured: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchStep:
    """One rate the capacity search tried: a short LoadGen run of its own, with goodput.

    ``directory``: relative to the run directory (peak-search/step-N); ``rate_qps``: the
    target rate LoadGen ran it at; ``within``: LoadGen's judgement of its p99 TTFT and TPOT
    against the limits (result_perf_constraints_met; None where it logged none);
    ``queries``: those the SUT stamped, whose goodput ``goodput`` is (None: no stamps).
    """

    directory: str
    rate_qps: float
    within: bool | None
    queries: int
    goodput: Goodput | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    """What the search found: the highest confirmed VALID rate, or none (``peak`` is None).

    ``search_qps`` is the highest rate the peak search's short runs held (harness.analysis.
    capsearch), ``search_steps`` its own line per rate, ``search_runs`` its LoadGen runs (None
    in older peak.json files); ``tried`` every confirming run in order, the final one last.
    Only a run LoadGen called VALID is ever the peak. ``searched``: each rate the search ran,
    with goodput (empty where it left no step-N/ directories, as LoadGen's FindPeakPerformance
    searches before it did not).
    """

    search_qps: float | None
    search_steps: tuple[str, ...]
    tried: tuple[RateTried, ...]
    peak: RateTried | None
    searched: tuple[SearchStep, ...] = ()
    search_runs: int | None = None
