"""Server's peak search in a worker: the harness's own ratio bisection over short LoadGen runs.

Each rate harness.analysis.capsearch asks for is one LoadGen performance run of the
scenario's (short) length in RUN/peak-search/step-N/, judged as LoadGen's FindPeakPerformance
judges a step, its p99 against the bound (result_perf_constraints_met), and also as a
confirmation will judge it: no larger a share over the bound than early stopping allows a
confirming run (capsearch.step_passes; 0.41 %, where p99 allows 1 %). Unlike
FindPeakPerformance, whose bisection stops at an absolute 10^-d QPS (never coarser than
1 QPS, so its run count grows with the rate), this one stops at a ratio: SEARCH_RUNS at most.
The confirmations (harness.execution.confirming) then judge by LoadGen's full verdict.
"""

from __future__ import annotations

from typing import IO

from harness.analysis import capsearch
from harness.analysis.queueing import ceiling_qps
from harness.execution.runner import _loadgen_test, _prepare, _warmed
from harness.execution.searchstep import SearchSteps
from harness.handoff import PeakSearch
from harness.loadgen.conf import server_latency_bound_ns
from harness.records.job import Job
from harness.stopping import Phases


def search_start_qps(costs_ms: dict[int, float], bound_ms: float, workers: int) -> float:
    """Where the peak search starts: capsearch.START_SHARE of the queueing ceiling.

    The ceiling is what M/D/c queueing allows the workers at batch 1's measured cost
    (harness.analysis.queueing): a SUT without a batching gain lands at 0.5-1.0x of it.
    """
    ceiling = ceiling_qps(costs_ms[min(costs_ms)], bound_ms, servers=workers)
    return capsearch.start_qps(ceiling)


def run_peak_search(job: Job, *, phases: Phases, progress: IO[str] | None = None) -> PeakSearch:
    """Server with no target_qps: bracket the highest rate whose short run meets the bound.

    It starts at search_start_qps, or at the job's target_qps where the pipeline re-runs it
    lower. A search where no rate met the bound leaves found_qps 0 (the pipeline tries lower).
    """
    ready = _prepare(job, progress, phases)
    executor, warmup, _ = _warmed(job, ready, phases)
    policy = ready.policy
    assert policy is not None  # _prepare derives it for every Server job
    scenario = job.request.scenario
    bound_ms = server_latency_bound_ns(scenario, job.request.loadgen_key) / 1e6
    start = scenario.server.target_qps or search_start_qps(
        policy.costs_ms, bound_ms, policy.workers
    )
    passes = SearchSteps(
        job,
        lambda step, plan: _loadgen_test(step, ready, executor, plan, None, None),
        latency_ns=warmup.min_latency_ns,
        total_samples=ready.source.total_count,
        judged="the bound",
        name="peak search",
        progress=progress,
        as_confirmed=True,
    )
    if progress is not None:
        progress.write(f"  Server peak search from {start:g} QPS (bound {bound_ms:g} ms)\n")
    outcome = capsearch.search(start, passes)
    return PeakSearch(
        found_qps=outcome.found_qps or 0.0,
        start_qps=start,
        steps=passes.steps,
        max_wait_ms=policy.max_wait_ms,
        runs=len(outcome.tried),
        failed_qps=outcome.failed_qps,
    )
