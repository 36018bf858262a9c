"""A load sweep: Server's latency against the arrival rate, each rate run as trials.

`harness sweep SCENARIO --server-rates 2,4,8` (or `auto`) runs a Server scenario at each
rate in turn, each in fresh worker processes as trials (harness.execution.campaign), and
writes load.json: per rate the completed rate and the p50/p90/p99 latencies (medians over
the trials) and how many trials met the bound, then the knee, the highest rate that met it.
`auto` first runs the capacity search (the Server flow with no target_qps) and
sweeps fractions of the rate it found (analysis.loadsweep.AUTO_FRACTIONS). After two rates
in a row over the bound the sweep stops: higher rates only queue longer.

A generative model's Server (or Interactive) scenario sweeps the same way: LoadGen's VALID is
then both p99 limits (TTFT, TPOT) met, and each point also holds the token figures, with
goodput and the queueing delay from each trial's token_times.npz (harness.analysis.goodput).

Server's arrival rate, not a concurrency, is the swept load: LoadGen's Server issues Poisson
arrivals whatever the system's state (an open loop, as users arrive), while a concurrency
sweep closes the loop and hides queueing, the thing a buyer's latency limit is about.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.analysis.goodput import goodput
from harness.analysis.loadsweep import auto_rates, knee_qps, load_point, over_in_a_row
from harness.errors import HarnessError, RunError
from harness.execution.campaign import Campaign, failure_cause, run_trials
from harness.files import create_run_dir, mark_complete, mark_incomplete
from harness.handoff import read_peak
from harness.records.capacity import Goodput
from harness.records.layout import LOAD_FILE, PEAK_SEARCH_DIR, TOKEN_TIMES_FILE, TRIALS_FILE
from harness.records.loadsweep import LoadPoint, LoadStop, LoadSweep
from harness.records.request import RunRequest
from harness.records.result import RunResult
from harness.report.loadtext import render_load
from harness.results.groupfile import read_trials
from harness.results.loadfile import write_load
from harness.results.runfile import load_result
from harness.stopping import also_marked
from harness.telemetry.tokentimes import read_token_times

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
    held = _Held()
    try:
        if rates is None:
            peak, held = _peak(campaign, sweep / PEAK_POINT, stream)
            requested = auto_rates(peak)
        stopped: LoadStop = "rates"
        for rate in requested:
            point, point_held = _point(campaign, sweep, rate, trials, stream)
            points.append(point)
            held = held.or_else(point_held)
            if over_in_a_row(points):
                stopped = "over_bound"
                break
    except (HarnessError, KeyboardInterrupt) as exc:
        cause, code = failure_cause(exc)
        mark_incomplete(sweep, f"load sweep: {cause}", code)
        failed = _record(request, held, requested, points, "error", peak, failure=cause)
        write_load(sweep / LOAD_FILE, failed)
        if isinstance(exc, KeyboardInterrupt):
            raise also_marked(exc, sweep) from None
        raise
    done = _record(request, held, requested, points, stopped, peak)
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


def _peak(campaign: Campaign, root: Path, stream: IO[str] | None) -> tuple[float, _Held]:
    """The capacity search's rate (the Server flow with no target) and the limits."""
    found = dataclasses.replace(campaign, request=_with_rate(campaign.request, None))
    root.mkdir()
    run_trials(found, 1, root=root, stream=stream, brief=True)
    run_dir = root / read_trials(root / TRIALS_FILE).runs[0]
    return read_peak(run_dir / PEAK_SEARCH_DIR).found_qps, _held([load_result(run_dir)])


def _point(
    campaign: Campaign, sweep: Path, rate: float, trials: int, stream: IO[str] | None
) -> tuple[LoadPoint, _Held]:
    """One rate as trials in `qps-<rate>/`: its point and the limits it was held to."""
    at_rate = dataclasses.replace(campaign, request=_with_rate(campaign.request, rate))
    name = f"qps-{rate:g}"
    root = sweep / name
    root.mkdir()
    run_trials(at_rate, trials, root=root, stream=stream, brief=True)
    runs = read_trials(root / TRIALS_FILE).runs
    results = [load_result(root / run) for run in runs]
    goodputs = [_goodput(root / run, r) for run, r in zip(runs, results, strict=True)]
    return load_point(rate, name, results, goodputs), _held(results)


@dataclass(frozen=True, slots=True)
class _Held:
    """What a rate's runs were held to: Server's latency bound, a generative model's limits."""

    bound_ns: int | None = None
    ttft_limit_ns: int | None = None
    tpot_limit_ns: int | None = None

    def or_else(self, other: _Held) -> _Held:
        """Each limit known here, else the other's."""
        return _Held(
            self.bound_ns or other.bound_ns,
            self.ttft_limit_ns or other.ttft_limit_ns,
            self.tpot_limit_ns or other.tpot_limit_ns,
        )


def _held(results: Sequence[RunResult]) -> _Held:
    servers = [r.server for r in results if r.server is not None]
    gens = [r.generation for r in results if r.generation is not None]
    return _Held(
        servers[0].latency_bound_ns if servers else None,
        gens[0].ttft_limit_ns if gens else None,
        gens[0].tpot_limit_ns if gens else None,
    )


def _goodput(run_dir: Path, result: RunResult) -> Goodput | None:
    """A generative trial's goodput against its own limits, from its stamps; None otherwise."""
    gen = result.generation
    path = run_dir / TOKEN_TIMES_FILE
    if gen is None or gen.ttft_limit_ns is None or gen.tpot_limit_ns is None:
        return None
    if not path.is_file():
        return None
    times = read_token_times(path)
    return goodput(
        issue_ns=times.issue_ns,
        first_ns=times.first_ns,
        end_ns=times.end_ns,
        tokens=times.tokens,
        start_ns=times.start_ns,
        ttft_limit_ns=gen.ttft_limit_ns,
        tpot_limit_ns=gen.tpot_limit_ns,
    )


def _record(
    request: RunRequest,
    held: _Held,
    requested: tuple[float, ...],
    points: list[LoadPoint],
    stopped: LoadStop,
    peak: float | None,
    failure: str | None = None,
) -> LoadSweep:
    generation = request.scenario.generation
    return LoadSweep(
        scenario_name=request.scenario.name,
        profile=request.profile,
        latency_bound_ns=held.bound_ns,
        requested_qps=requested,
        points=tuple(points),
        knee_qps=knee_qps(points),
        stopped=stopped,
        peak_qps=peak,
        complete=failure is None,
        failure=failure,
        ttft_limit_ns=held.ttft_limit_ns,
        tpot_limit_ns=held.tpot_limit_ns,
        interactive=generation is not None and generation.interactive,
    )
