"""Repeated trials and batch sweeps: each run in a fresh process, grouped in one directory."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from harness.analysis.spread import metric_spreads
from harness.analysis.sweep import failed_sweep, run_sweep, sweep_batches
from harness.analysis.trials import trial_stats
from harness.analysis.trust import group_trust, plausibility_of
from harness.analysis.values import headline, metric_values
from harness.compliance.summary import group_compliance
from harness.compliance.verify import render_verdict
from harness.config import DEFAULT_TRIALS
from harness.errors import HarnessError, RunError
from harness.execution import pipeline
from harness.execution.pipeline import Launcher, WorkerError, run_compliance, run_new
from harness.files import INCOMPLETE_FILE, create_run_dir, mark_complete, mark_incomplete
from harness.records.group import Group
from harness.records.job import ComplianceTest
from harness.records.layout import SWEEP_FILE, TRIALS_FILE
from harness.records.request import RunRequest
from harness.records.result import RunResult
from harness.records.sweep import SweepOutcome, SweepPoint
from harness.records.trials import TrialStats
from harness.records.trust import Trust, TrustFacts
from harness.report.summary import render_summary
from harness.report.text import brief_trials, render_group, run_line
from harness.results.groupfile import (
    SweepFile,
    SweepFilePoint,
    TrialsFile,
    read_trials,
    write_sweep,
    write_trials,
)
from harness.results.groups import load_group
from harness.results.runfile import load_result
from harness.stopping import also_marked, stop_cause

_OOM_MARKERS = (
    "failed to allocate memory",
    "bad_alloc",
    "out of memory",
    "cuda_error_out_of_memory",
    "cudaerrormemoryallocation",
    "hipErrorOutOfMemory".lower(),
    "unable to allocate",  # numpy's MemoryError: "Unable to allocate 3.1 GiB for an array ..."
    "memoryerror",
    "killed by signal 9",  # the kernel's OOM killer (a container's 137 reads as signal 9)
)


@dataclass(frozen=True, kw_only=True)
class Campaign:
    """One request measured as trials (or a sweep's points), and where their directories go."""

    request: RunRequest
    out_root: Path
    launch: Launcher | None = None  # None: a worker process per test (pipeline.launch_worker)
    compliance: tuple[ComplianceTest, ...] = ()  # run after each run, in its directory


def trials_count(campaign: Campaign, requested: int | None) -> int:
    """Trials asked for on the command line, in the scenario, or by the profile's default."""
    if requested is not None:
        return requested
    if campaign.request.scenario.trials is not None:
        return campaign.request.scenario.trials
    return DEFAULT_TRIALS[campaign.request.profile]


def run_trials(
    campaign: Campaign,
    trials: int,
    *,
    root: Path | None = None,
    batch_size: int | None = None,
    stream: IO[str] | None = None,
    brief: bool = False,
    said: set[str] | None = None,
) -> Path:
    """Run `trials` fresh processes; one trial writes a plain run directory, more a group.

    To `stream`: each run's summary and the trials' spread; `brief` (a sweep's point), one
    line per run and one for the trials. `said`: the warnings the command printed so far,
    shared by its campaigns so that a warning repeated word for word is printed once.
    """
    request = campaign.request
    batch = batch_size or request.scenario.batch_size
    out = _Out(stream, brief, set() if said is None else said)
    if trials == 1 and root is None:
        return _child(campaign, campaign.out_root, None, batch, out)
    group = root or create_run_dir(
        campaign.out_root, model=request.model_name, scenario=f"{request.scenario.scenario}-trials"
    )
    mark_incomplete(group, "trials started; no result yet")
    runs: list[str] = []
    try:
        for count in range(1, trials + 1):
            run_dir = _child(campaign, group, f"trial-{count}", batch, out)
            runs.append(run_dir.name)
    except (HarnessError, KeyboardInterrupt) as exc:
        _trials_failed(request, group, runs, trials, batch, exc)
        if root is None and {p.name for p in group.iterdir()} <= {INCOMPLETE_FILE}:
            shutil.rmtree(group)  # nothing ran: leave no empty group behind
        if isinstance(exc, KeyboardInterrupt):  # a stop names each directory it marked
            raise also_marked(exc, group) from None
        raise
    trials_file = _trials_file(request, group, runs, trials, batch)
    write_trials(group / TRIALS_FILE, trials_file)
    mark_complete(group)
    if stream is not None:
        if brief:
            stream.write(brief_trials(batch, trials_file) + "\n")
        else:  # the group as `show` prints it
            loaded = load_group(group)
            text = render_group(loaded, str(group), trust=_trust(loaded), said=out.said)
            stream.write(text + "\n")
    return group


def _trials_file(
    request: RunRequest,
    group: Path,
    runs: Sequence[str],
    trials: int,
    batch: int,
    failure: str | None = None,
) -> TrialsFile:
    """trials.json of the runs (names in `group`) that finished; with `failure`, a partial one."""
    results = [load_result(group / name) for name in runs]
    judged = headline(request.scenario.scenario, results)  # MLPerf's metric, as every output shows
    values = _values(results, judged.key)
    stats = trial_stats(
        values, requested=trials, higher_is_better=judged.higher_is_better, shown=judged
    )
    return TrialsFile(
        scenario_name=request.scenario.name,
        scenario=request.scenario.scenario,
        batch_size=batch,
        profile=request.profile,
        requested=trials,
        runs=tuple(runs),
        metric=judged.key,
        stats=stats,
        complete=failure is None,
        failure=failure,
        spreads=metric_spreads(results, requested=trials),
    )


def _trials_failed(
    request: RunRequest,
    group: Path,
    runs: Sequence[str],
    trials: int,
    batch: int,
    exc: HarnessError | KeyboardInterrupt,
) -> None:
    """Mark a group a trial failed in, keeping the trials that finished in its trials.json."""
    cause, code = failure_cause(exc)
    failure = f"trial-{len(runs) + 1} {cause}"
    mark_incomplete(group, failure, code)
    if runs:  # stats need a finished trial; the runs that failed say why in their INCOMPLETE
        partial = _trials_file(request, group, runs, trials, batch, failure)
        write_trials(group / TRIALS_FILE, partial)


def failure_cause(exc: HarnessError | KeyboardInterrupt) -> tuple[str, int]:
    """What INCOMPLETE says of a group a run failed in, and the exit code."""
    if isinstance(exc, KeyboardInterrupt):  # with the phase it stopped in, when recorded
        return stop_cause(exc)
    if isinstance(exc, WorkerError):
        return f"failed: {exc.cause}", exc.exit_code
    return f"failed: {exc}", exc.exit_code


def run_batch_sweep(
    campaign: Campaign,
    trials: int,
    *,
    batches: Sequence[int] | None = None,
    stream: IO[str] | None = None,
) -> Path:
    """Offline throughput at growing batch sizes until it saturates or memory runs out.

    To `stream`: a line per run and per batch size, then the sweep as `show` prints it.
    """
    request = campaign.request
    if request.scenario.scenario != "Offline":
        raise RunError(f"{request.scenario_path}: sweeps need an Offline scenario (batching)")
    requested = list(batches or sweep_batches())
    sweep = create_run_dir(campaign.out_root, model=request.model_name, scenario="Offline-sweep")
    mark_incomplete(sweep, "sweep started; no result yet")
    dirs: dict[int, str] = {}
    done: list[SweepPoint] = []
    started: list[int] = []

    def measure(batch: int) -> TrialStats:
        started.append(batch)
        point = sweep / f"bs-{batch}"
        point.mkdir()
        run_trials(campaign, trials, root=point, batch_size=batch, stream=stream, brief=True)
        dirs[batch] = point.name
        stats = read_trials(point / TRIALS_FILE).stats
        done.append(SweepPoint(batch_size=batch, stats=stats))
        return stats

    try:
        outcome = run_sweep(measure, batches=requested, is_oom=is_out_of_memory)
    except (HarnessError, KeyboardInterrupt) as exc:  # not out of memory: keep what finished
        cause, code = failure_cause(exc)
        failed_at = started[-1] if started else 0
        mark_incomplete(sweep, f"bs-{failed_at} {cause}", code)
        partial = failed_sweep(done, failed_at, cause, requested)
        _finish_sweep(request, sweep, partial, dirs, stream, failure=cause)
        if isinstance(exc, KeyboardInterrupt):  # a stop names each directory it marked
            raise also_marked(exc, sweep) from None
        raise
    _finish_sweep(request, sweep, outcome, dirs, stream)
    mark_complete(sweep)
    return sweep


def _finish_sweep(
    request: RunRequest,
    sweep: Path,
    outcome: SweepOutcome,
    dirs: dict[int, str],
    stream: IO[str] | None,
    failure: str | None = None,
) -> None:
    """Write sweep.json and print its table with every warning of its points, once each."""
    points = tuple(
        SweepFilePoint(batch_size=p.batch_size, dir=dirs[p.batch_size], samples_per_second=p.stats)
        for p in outcome.points
    )
    sweep_file = SweepFile(
        scenario_name=request.scenario.name,
        profile=request.profile,
        points=points,
        saturation_batch=outcome.saturation_batch,
        best_batch=outcome.best_batch,
        stopped=outcome.stopped,
        limit=outcome.limit,
        complete=failure is None,
        failure=failure,
        requested_batches=outcome.requested,
        skipped=outcome.skipped,
        skip_reason=outcome.skip_reason,
        saturation=outcome.verdict,
    )
    write_sweep(sweep / SWEEP_FILE, sweep_file)
    if stream is not None:
        loaded = load_group(sweep)
        stream.write(render_group(loaded, str(sweep), sweep_file, _trust(loaded)) + "\n")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether a failed run ran out of memory (onnxruntime's allocation errors, the OOM killer)."""
    text = getattr(exc, "cause", str(exc)).lower()
    return any(marker in text for marker in _OOM_MARKERS) or "killed by signal 9" in text


@dataclass(frozen=True)
class _Out:
    """Where runs report, and whether briefly (a line a run) or in full."""

    stream: IO[str] | None
    brief: bool = False
    said: set[str] = field(default_factory=set)  # warnings printed so far: each once


def _child(campaign: Campaign, out: Path, name: str | None, batch: int, report: _Out) -> Path:
    """One run directory under `out`, measured by worker processes; its summary reported."""
    request = campaign.request
    if batch != request.scenario.batch_size:
        request = _with_batch(request, batch)
    launch = campaign.launch or pipeline.launch_worker
    run_dir = run_new(request, out, name, launch=launch, progress=sys.stderr)
    if report.stream is not None:
        result = load_result(run_dir)
        if report.brief:
            text = run_line(result, run_dir)
        else:
            text = render_summary(result, str(run_dir), said=report.said)
            report.said.update(result.warnings)
        report.stream.write(text + ("\n" if report.brief else "\n\n"))
    for test in campaign.compliance:
        verdict = run_compliance(request, run_dir, test, launch=launch, progress=sys.stderr)
        if report.stream is not None:
            report.stream.write(render_verdict(verdict) + "\n\n")
    return run_dir


def _with_batch(request: RunRequest, batch: int) -> RunRequest:
    try:
        scenario = dataclasses.replace(request.scenario, batch_size=batch)
    except ValueError as exc:
        raise RunError(f"{request.scenario_path}: batch size {batch}: {exc}") from None
    return dataclasses.replace(request, scenario=scenario)


def _values(results: Sequence[RunResult], metric: str) -> list[float]:
    values = metric_values(results, metric)  # a run without the value is left out
    if not values:
        names = ", ".join(r.run_id for r in results)
        raise HarnessError(f"no run has a value of {metric} ({names})")
    return values


def _trust(group: Group) -> Trust:
    """The group's trust as `show` prints it (harness.inspect.trust): the facts a campaign has."""
    facts = TrustFacts(
        compliance=group_compliance(group),
        plausibility=tuple(plausibility_of(r) for r in group.results),
    )
    return group_trust(group, facts)
