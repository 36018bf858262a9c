"""Server's peak search in a worker: the harness's own ratio bisection over short LoadGen runs.

Each rate harness.analysis.capsearch asks for is one LoadGen performance run of the
scenario's (short) length in RUN/peak-search/step-N/, judged as LoadGen's FindPeakPerformance
judges a step: its p99 against the bound (result_perf_constraints_met). Unlike
FindPeakPerformance, whose bisection stops at an absolute 10^-d QPS (never coarser than
1 QPS, so its run count grows with the rate), this one stops at a ratio: SEARCH_RUNS at most.
The confirmations (harness.execution.confirming) then judge by LoadGen's full verdict.
"""

from __future__ import annotations

import dataclasses
from typing import IO

from harness.analysis import capsearch
from harness.analysis.queueing import ceiling_qps
from harness.execution.runner import _loadgen_test, _prepare, _warmed
from harness.handoff import PeakSearch
from harness.loadgen.conf import server_latency_bound_ns
from harness.loadgen.plan import write_test_confs
from harness.records.job import Job
from harness.records.layout import DETAIL_LOG, STEP_PREFIX
from harness.records.loadgen_log import parse_detail_log
from harness.records.request import Expectation
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
        policy.costs_ms, bound_ms, scenario.server.workers
    )
    steps: list[str] = []

    def passes(rate_qps: float) -> bool:
        directory = job.run_dir / f"{STEP_PREFIX}{len(steps) + 1}"
        directory.mkdir()
        server = dataclasses.replace(scenario.server, target_qps=round(rate_qps, 3))
        at_rate = dataclasses.replace(scenario, server=server)
        plan = write_test_confs(
            directory,
            scenario=at_rate,
            profile=job.request.profile,
            model_key=job.request.loadgen_key,
            pins=job.request.pins,
            expected=Expectation(latency_ns=warmup.min_latency_ns, samples_per_second=rate_qps),
            total_samples=ready.source.total_count,
            mode="performance",
        )
        step = dataclasses.replace(
            job,
            run_dir=directory,
            request=dataclasses.replace(job.request, scenario=at_rate),
        )
        _loadgen_test(step, ready, executor, plan, None, None)
        within = parse_detail_log(directory / DETAIL_LOG).get("result_perf_constraints_met")
        steps.append(f"{rate_qps:.3f} QPS: {'within' if within is True else 'over'} the bound")
        if progress is not None:
            progress.write(f"  peak search: {steps[-1]}\n")
        return within is True

    if progress is not None:
        progress.write(f"  Server peak search from {start:g} QPS (bound {bound_ms:g} ms)\n")
    outcome = capsearch.search(start, passes)
    return PeakSearch(
        found_qps=outcome.found_qps or 0.0,
        start_qps=start,
        steps=steps,
        max_wait_ms=policy.max_wait_ms,
        runs=len(outcome.tried),
        failed_qps=outcome.failed_qps,
    )
