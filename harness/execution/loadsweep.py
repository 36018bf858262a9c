"""A load sweep: Server's latency against the arrival rate, each rate run as trials.

`harness sweep SCENARIO --server-rates 2,4,8` (or `auto`) runs a Server scenario at each
rate in turn, each in fresh worker processes as trials (harness.execution.campaign), and
writes load.json: per rate the completed rate and the p50/p90/p99 latencies (medians over
the trials) and how many trials met the bound, then the knee, the highest rate that met it.
`auto` first runs LoadGen's FindPeakPerformance (the Server flow with no target_qps) and
sweeps fractions of the rate it found (analysis.loadsweep.AUTO_FRACTIONS). After two rates
in a row over the bound the sweep stops: higher rates only queue longer.

Server's arrival rate, not a concurrency, is the swept load: LoadGen's Server issues Poisson
arrivals whatever the system's state (an open loop, as users arrive), while a concurrency
sweep closes the loop and hides queueing, the thing a buyer's latency limit is about.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from harness.analysis.loadsweep import auto_rates, knee_qps, load_point, over_in_a_row
from harness.errors import HarnessError, RunError
from harness.execution.campaign import Campaign, failure_cause, run_trials
from harness.files import create_run_dir, mark_complete, mark_incomplete
from harness.handoff import read_peak
from harness.records.layout import LOAD_FILE, PEAK_SEARCH_DIR, TRIALS_FILE
from harness.records.loadsweep import LoadPoint, LoadStop, LoadSweep
from harness.records.request import RunRequest
from harness.report.loadtext import render_load
from harness.results.groupfile import read_trials
from harness.results.loadfile import write_load
from harness.results.runfile import load_result
from harness.stopping import also_marked

PEAK_POINT = "peak"  # the sweep's directory of the peak search `auto` runs first


def run_load_sweep(
    campaign: Campaign,
    trials: int,
    *,
    rates: Sequence[float] | None,
    stream: IO[str] | None = None,
) -> Path:
    """Run each rate (None: `auto`, from a peak search) as trials; the sweep's directory."""
    request = campaign.request
    if request.scenario.scenario != "Server":
        raise RunError(
            f"{request.scenario_path}: --server-rates needs a Server scenario "
            f"(this one is {request.scenario.scenario}); use --batches for Offline"
        )
    sweep = create_run_dir(campaign.out_root, model=request.model_name, scenario="Server-load")
    mark_incomplete(sweep, "load sweep started; no result yet")
    peak: float | None = None
    points: list[LoadPoint] = []
    requested: tuple[float, ...] = tuple(rates or ())
    bound: int | None = None
    try:
        if rates is None:
            peak, bound = _peak(campaign, sweep / PEAK_POINT, stream)
            requested = auto_rates(peak)
        stopped: LoadStop = "rates"
        for rate in requested:
            point, point_bound = _point(campaign, sweep, rate, trials, stream)
            points.append(point)
            bound = bound or point_bound
            if over_in_a_row(points):
                stopped = "over_bound"
                break
    except (HarnessError, KeyboardInterrupt) as exc:
        cause, code = failure_cause(exc)
        mark_incomplete(sweep, f"load sweep: {cause}", code)
        failed = _record(request, bound, requested, points, "error", peak, failure=cause)
        write_load(sweep / LOAD_FILE, failed)
        if isinstance(exc, KeyboardInterrupt):
            raise also_marked(exc, sweep) from None
        raise
    done = _record(request, bound, requested, points, stopped, peak)
    write_load(sweep / LOAD_FILE, done)
    mark_complete(sweep)
    if stream is not None:
        stream.write(render_load(done, str(sweep)) + "\n")
    return sweep


def _with_rate(request: RunRequest, rate: float | None) -> RunRequest:
    server = dataclasses.replace(request.scenario.server, target_qps=rate)
    return dataclasses.replace(
        request, scenario=dataclasses.replace(request.scenario, server=server)
    )


def _peak(campaign: Campaign, root: Path, stream: IO[str] | None) -> tuple[float, int | None]:
    """LoadGen's FindPeakPerformance rate (the Server flow with no target) and the bound."""
    found = dataclasses.replace(campaign, request=_with_rate(campaign.request, None))
    root.mkdir()
    run_trials(found, 1, root=root, stream=stream, brief=True)
    run_dir = root / read_trials(root / TRIALS_FILE).runs[0]
    result = load_result(run_dir)
    bound = None if result.server is None else result.server.latency_bound_ns
    return read_peak(run_dir / PEAK_SEARCH_DIR).found_qps, bound


def _point(
    campaign: Campaign, sweep: Path, rate: float, trials: int, stream: IO[str] | None
) -> tuple[LoadPoint, int | None]:
    """One rate as trials in `qps-<rate>/`: its point and the latency bound it was held to."""
    at_rate = dataclasses.replace(campaign, request=_with_rate(campaign.request, rate))
    name = f"qps-{rate:g}"
    root = sweep / name
    root.mkdir()
    run_trials(at_rate, trials, root=root, stream=stream, brief=True)
    runs = read_trials(root / TRIALS_FILE).runs
    results = [load_result(root / run) for run in runs]
    servers = [r.server for r in results if r.server is not None]
    bound = servers[0].latency_bound_ns if servers else None
    return load_point(rate, name, results), bound


def _record(
    request: RunRequest,
    bound: int | None,
    requested: tuple[float, ...],
    points: list[LoadPoint],
    stopped: LoadStop,
    peak: float | None,
    failure: str | None = None,
) -> LoadSweep:
    return LoadSweep(
        scenario_name=request.scenario.name,
        profile=request.profile,
        latency_bound_ns=bound,
        requested_qps=requested,
        points=tuple(points),
        knee_qps=knee_qps(points),
        stopped=stopped,
        peak_qps=peak,
        complete=failure is None,
        failure=failure,
    )
