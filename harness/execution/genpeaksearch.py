"""Generative Server's peak search in a worker: the capacity search's rules on token latencies.

The same search as CNN Server's (harness.execution.peaksearch, harness.analysis.capsearch):
each rate it asks for is one short generative LoadGen performance run (the scenario's length)
in RUN/peak-search/step-N/, judged as LoadGen's FindPeakPerformance judges a step: its p99
TTFT and p99 TPOT against their limits (result_perf_constraints_met). Each step leaves the
SUT's own stamps (token_times.npz) beside LoadGen's logs, so goodput at every rate tried
comes from them (harness.results.capacity). SEARCH_RUNS runs at most, where LoadGen's
FindPeakPerformance took 15 on llm-tiny (its bisection stops at an absolute 10^-d QPS).
"""

from __future__ import annotations

from typing import IO

from harness.analysis import capsearch
from harness.execution.genrunner import _prepare, _timed, _warm_up, _write_token_times
from harness.execution.searchstep import SearchSteps
from harness.handoff import PeakSearch
from harness.records.job import Job
from harness.stopping import Phases


def generative_start_qps(median_latency_ns: float) -> float:
    """Where the search starts: capsearch.START_SHARE of the back-to-back rate.

    The back-to-back rate of whole generations (the warm-up's median) is the generative
    queueing estimate of the ceiling: queries interleaved a token at a time share one CPU, so
    a SUT lands near it (llm-tiny's confirmed peaks here: 0.93-1.03x of it), and a short run
    passes a little above it (up to 1.4x). From 0.7x, capsearch.STEP's steps bracket that in
    3-4 runs; LoadGen's FindPeakPerformance started at 0.5x and doubled.
    """
    if not median_latency_ns > 0:
        raise ValueError(f"a generation takes > 0 ns, got {median_latency_ns}")
    return capsearch.start_qps(1e9 / median_latency_ns)


def run_generative_peak_search(
    job: Job, *, phases: Phases, progress: IO[str] | None = None
) -> PeakSearch:
    """Generative Server with no target_qps: bracket the highest rate whose short run holds.

    It starts at generative_start_qps, or at the job's target_qps where the pipeline re-runs
    it lower. A search where no rate held both limits leaves found_qps 0 (the pipeline tries
    lower). No telemetry: the search's runs are short, and the confirmations measure energy.
    """
    ready = _prepare(job, progress, phases)
    scenario = job.request.scenario
    phases.enter("warmup")
    warmup = _warm_up(ready, scenario)
    start = scenario.server.target_qps or generative_start_qps(warmup.median_latency_ns)
    phases.enter("loadgen")
    passes = SearchSteps(
        job,
        # each rate's stamps beside its logs: its goodput
        lambda step, plan: _write_token_times(
            step.run_dir, _timed(step, ready, plan, None, progress)[0]
        ),
        latency_ns=warmup.median_latency_ns,
        total_samples=ready.prompts.count,
        judged="the limits",
        name="generative peak search",
        progress=progress,
    )
    if progress is not None:
        progress.write(f"  generative peak search from {start:g} QPS (p99 TTFT and TPOT)\n")
    outcome = capsearch.search(start, passes)
    return PeakSearch(
        found_qps=outcome.found_qps or 0.0,
        start_qps=start,
        steps=passes.steps,
        runs=len(outcome.tried),
        failed_qps=outcome.failed_qps,
    )
