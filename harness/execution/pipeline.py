"""One run directory, test by test: each LoadGen test in a worker process of its own.

LoadGen keeps its settings per process and flags a second settings load as invalid for
submission, so the accuracy test, the performance test, a re-run and each compliance test get
a fresh worker. The parent speaks to workers through files only: it writes job.json, the
worker leaves result.json, accuracy/accuracy.json, compliance/TEST0x/outcome.json, retry.json
or INCOMPLETE. Their output is for people.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

from harness.analysis import capsearch
from harness.compliance.swap import SWAP_TEST, SwapVerdict, read_swap_verdict
from harness.compliance.verify import Verdict, verify
from harness.errors import STOP_SIGNALS, Interrupted, ResultError, RunError, stop_signal
from harness.execution.confirming import confirm_peak, set_aside
from harness.files import create_run_dir, mark_complete, mark_incomplete, read_incomplete
from harness.handoff import PeakSearch, read_peak, read_retry
from harness.models.modelfile import job_model_path
from harness.records.job import ComplianceTest, Job, LoadGenTest, write_job
from harness.records.layout import (
    ACCURACY_DIR,
    ACCURACY_LOG,
    ATTEMPT_FILES,
    COMPLIANCE_DIR,
    FIRST_ATTEMPT,
    JOB_FILE,
    PEAK_FILE,
    PEAK_SEARCH_DIR,
    RESULT_FILE,
    USER_CONF,
)
from harness.records.request import RunRequest
from harness.results.capacity import capacity_lines, capacity_of
from harness.stopping import HeldStops, Phases, mark_stopped, pause_from_env, worker_stop
from harness.text import printable

# A search whose start misses the bound reruns from SEARCH_DROP of it (SEARCHES at most).
SEARCHES = 3
SEARCH_DROP = 0.25

Launcher = Callable[[Path], int]  # runs a job file to its end; returns the exit code


class WorkerError(RunError):
    """A worker ended without its outcome; carries the recorded cause and its exit code."""

    def __init__(self, message: str, cause: str, exit_code: int) -> None:
        super().__init__(message)
        self.cause = cause
        self.exit_code = exit_code  # the worker's own code: 4 for a missing device, ...


def launch_worker(job_path: Path) -> int:
    """Run `python -m harness.execution.worker JOB` with this terminal; returns its exit code.

    The worker gets a process group of its own, so a Ctrl-C reaches it exactly once, from
    here, whether it was typed at the terminal or sent to this process alone; so does the
    SIGTERM or SIGHUP this process got (the CLI raises them as Interrupted). Stop signals are
    held while it starts: one that comes meanwhile is raised once `child` exists, and the
    worker, started with them held, takes it in its own handlers.
    """
    command = [sys.executable, "-m", "harness.execution.worker", str(job_path)]
    with HeldStops() as held, subprocess.Popen(command, process_group=0) as child:
        try:
            held.release()
            return child.wait()
        except KeyboardInterrupt as exc:
            # the worker stops LoadGen and marks its directory with the signal's name
            child.send_signal(stop_signal(exc))
            child.wait()
            raise


def new_run_dir(request: RunRequest, out_root: Path, name: str | None = None) -> Path:
    """A fresh run directory for `request` under `out_root` (named, or stamped)."""
    return create_run_dir(
        out_root, model=request.model_name, scenario=request.scenario.scenario, name=name
    )


def run_new(
    request: RunRequest,
    out_root: Path,
    name: str | None = None,
    *,
    launch: Launcher = launch_worker,
    progress: IO[str] | None = None,
) -> Path:
    """A new run directory under `out_root` (named, or stamped), filled by run_one.

    A stop signal while the directory is made waits until it is marked INCOMPLETE, so a
    stop at any moment leaves a directory that says why, or none.
    """
    pause_from_env(os.environ)  # a malformed test hook is refused before anything is made
    with HeldStops() as held:
        run_dir = new_run_dir(request, out_root, name)
        return run_one(request, run_dir, launch=launch, progress=progress, held=held)


def run_one(
    request: RunRequest,
    run_dir: Path,
    *,
    launch: Launcher = launch_worker,
    progress: IO[str] | None = None,
    held: HeldStops | None = None,
) -> Path:
    """Fill `run_dir`: the accuracy test, then the performance test, re-run once if asked.

    A stop at any moment marks `run_dir` with its cause and phase; `held`, the stop signals
    the caller held since it made `run_dir`, are released once it is marked.
    """
    where = Phases("accuracy", pause=pause_from_env(os.environ))
    try:
        mark_incomplete(run_dir, "run started; no result yet")
        if held is not None:
            held.release()  # a stop that came while the directory was made is raised here
        if progress is not None:
            named = "" if request.label is None else f"{printable(request.label)} · "
            progress.write(
                f"== {named}{request.scenario.name} ({request.scenario.scenario}, "
                f"{request.profile} profile, HW={request.hw})\n"
            )
        _tests(request, run_dir, launch, where)
        capacity = capacity_of(run_dir) if request.scenario.generation is not None else None
        if capacity is not None and progress is not None:
            progress.write("\n".join(capacity_lines(capacity)) + "\n")
    except KeyboardInterrupt as exc:
        raise mark_stopped(run_dir, exc, where) from None
    except WorkerError as exc:
        _discard_if_unmeasured(run_dir)
        if run_dir.exists():
            raise
        # Nothing was measured, so nothing is kept: the worker's cause alone names the culprit.
        raise WorkerError(exc.cause, exc.cause, exc.exit_code) from None
    if not (run_dir / RESULT_FILE).is_file():
        cause = "the performance test left no result"
        mark_incomplete(run_dir, cause, RunError.exit_code)
        raise WorkerError(f"{run_dir}: run failed: {cause}", cause, RunError.exit_code)
    return run_dir


def _tests(request: RunRequest, run_dir: Path, launch: Launcher, where: Phases) -> None:
    _launch(_job(request, run_dir / ACCURACY_DIR, "accuracy"), run_dir, launch, where)
    job = _job(request, run_dir, "performance")
    if request.scenario.scenario != "Server" or request.scenario.server.target_qps is not None:
        _measure(job, run_dir, launch, where)
        return
    search = _peak_search(request, run_dir, launch, where)
    expected = [job.expected]  # after a re-run, the next confirmations are sized as it was

    def launch_at(rate_qps: float) -> None:
        # With the search's hold, each in its own process.
        sized = dataclasses.replace(job, expected=expected[-1])
        ran = _measure(
            _at_rate(sized, rate_qps, hold_ms=search.max_wait_ms), run_dir, launch, where
        )
        expected.append(ran.expected)

    confirm_peak(run_dir, search, launch_at)


def _measure(job: Job, run_dir: Path, launch: Launcher, where: Phases) -> Job:
    """The performance test, re-run once if LoadGen asks (the first time only); the job run."""
    _launch(job, run_dir, launch, where)
    retry = read_retry(run_dir)
    if retry is None or (run_dir / FIRST_ATTEMPT).exists():
        return job
    set_aside(run_dir, run_dir / FIRST_ATTEMPT, ATTEMPT_FILES)
    job = dataclasses.replace(job, expected=retry, attempt=2, previous_attempt=FIRST_ATTEMPT)
    _launch(job, run_dir, launch, where)
    return job


def _at_rate(job: Job, qps: float, *, confirming: bool = True, hold_ms: float | None = None) -> Job:
    """The job at a rate and hold (if unset); a quick confirmation gets early stopping's queries."""
    scenario = job.request.scenario
    server = dataclasses.replace(scenario.server, target_qps=round(max(qps, 0.1), 3))
    if server.max_wait_ms is None and hold_ms is not None:
        server = dataclasses.replace(server, max_wait_ms=hold_ms)
    quick = scenario.quick
    # Server's confirming runs after a peak search get early stopping's length (harness.
    # analysis.capsearch picks their rates and sizes them; harness.execution.confirming keeps
    # their files); the search's runs keep the scenario's.
    queries = capsearch.confirm_queries()  # at p99, as mlperf.conf judges Server
    if confirming and quick.min_query_count < queries:
        quick = dataclasses.replace(quick, min_query_count=queries)
    scenario = dataclasses.replace(scenario, server=server, quick=quick)
    return dataclasses.replace(job, request=dataclasses.replace(job.request, scenario=scenario))


def _peak_search(request: RunRequest, run_dir: Path, launch: Launcher, where: Phases) -> PeakSearch:
    """Server's peak search in RUN/peak-search/; what it found (found_qps > 0).

    A search whose start misses the bound (a SUT whose per-query overhead rivals its cost,
    a loaded machine) is kept in peak-search-N/ and re-run lower, SEARCHES times at most.
    """
    job = _job(request, run_dir / PEAK_SEARCH_DIR, "find_peak")
    for attempt in range(1, SEARCHES + 1):
        _launch(job, run_dir, launch, where)
        try:
            search = read_peak(job.run_dir)
        except ResultError as exc:
            cause = f"the peak search left no rate ({exc})"
            break
        if search.found_qps > 0:
            return search
        cause = (
            f"{job.run_dir / PEAK_FILE}: the peak search found no valid rate, even from "
            f"{search.start_qps:g} QPS (see its logs); set server.target_qps to a rate this "
            "system carries"
        )
        if attempt < SEARCHES:
            job.run_dir.rename(run_dir / f"{PEAK_SEARCH_DIR}-{attempt}")
            job = _at_rate(job, search.start_qps * SEARCH_DROP, confirming=False)
    mark_incomplete(run_dir, f"failed: {cause}", RunError.exit_code)
    raise WorkerError(f"{run_dir}: run failed: {cause}", cause, RunError.exit_code)


def run_compliance(
    request: RunRequest,
    run_dir: Path,
    test: ComplianceTest,
    *,
    launch: Launcher = launch_worker,
    progress: IO[str] | None = None,
) -> Verdict:
    """Run `test` for the measured run in `run_dir` in a worker of its own, then verify it.

    The test gets a fresh directory, RUN/compliance/TEST0x/ (an earlier one is moved aside to
    TEST0x-N): the worker's working directory and the only place its audit.config is written.
    """
    run_dir = run_dir.resolve()
    _check_measured(run_dir, test)
    where = Phases(test, pause=pause_from_env(os.environ))
    with HeldStops() as held:  # a stop while the directory is made waits until it is marked
        directory = _fresh_compliance_dir(run_dir, test)
        try:
            mark_incomplete(directory, f"{test} started; no verdict yet")
            held.release()
            if progress is not None:
                progress.write(f"== {request.scenario.name}: compliance {test} in {directory}\n")
            job = _job(request, directory, test)
            _launch(job, directory, launch, where)
            retry = read_retry(directory)
            if retry is not None:  # LoadGen ended early: once more, sized from measured speed
                set_aside(directory, directory / FIRST_ATTEMPT, ATTEMPT_FILES)
                job = dataclasses.replace(
                    job, expected=retry, attempt=2, previous_attempt=FIRST_ATTEMPT
                )
                _launch(job, directory, launch, where)
            verdict = verify(test, run_dir, job.run_dir, request.scenario.data)
        except KeyboardInterrupt as exc:
            raise mark_stopped(directory, exc, where) from None
    mark_complete(directory)
    return verdict


def run_swap(
    request: RunRequest,
    run_dir: Path,
    *,
    launch: Launcher = launch_worker,
    progress: IO[str] | None = None,
) -> SwapVerdict:
    """The SWAP caching audit for the run in `run_dir`, in RUN/compliance/SWAP/ (a worker)."""
    run_dir = run_dir.resolve()
    _check_measured(run_dir, SWAP_TEST)
    where = Phases(SWAP_TEST, pause=pause_from_env(os.environ))
    with HeldStops() as held:
        directory = _fresh_compliance_dir(run_dir, SWAP_TEST)
        try:
            mark_incomplete(directory, "SWAP started; no verdict yet")
            held.release()
            if progress is not None:
                progress.write(f"== {request.scenario.name}: SWAP audit in {directory}\n")
            _launch(_job(request, directory, SWAP_TEST), directory, launch, where)
            verdict = read_swap_verdict(directory)
        except KeyboardInterrupt as exc:
            raise mark_stopped(directory, exc, where) from None
    mark_complete(directory)
    return verdict


def _check_measured(run_dir: Path, test: str) -> None:
    """A compliance test compares with the run's performance (and accuracy) test: both done."""
    needed = [run_dir / RESULT_FILE]
    if test == "TEST01":
        needed.append(run_dir / ACCURACY_DIR / ACCURACY_LOG)
    for path in needed:
        if not path.is_file():
            raise ResultError(
                f"{path}: missing; {test} compares with a finished run (`harness run` makes one)"
            )


def _fresh_compliance_dir(run_dir: Path, test: str) -> Path:
    root = run_dir / COMPLIANCE_DIR
    directory = root / test
    try:
        root.mkdir(exist_ok=True)
        if directory.exists():  # never overwritten: kept as TEST0x-1, TEST0x-2, ...
            number = 1
            while (root / f"{test}-{number}").exists():
                number += 1
            directory.rename(root / f"{test}-{number}")
        directory.mkdir()
    except OSError as exc:
        raise ResultError(f"{directory}: cannot make the test's directory ({exc})") from None
    return directory


def _discard_if_unmeasured(run_dir: Path) -> None:
    """A run that failed before LoadGen started leaves nothing: it measured nothing to keep.

    Bad input (a missing model, an absent device) thus writes nothing, as it did when such
    checks ran in the parent; a run that failed while measuring keeps its logs and INCOMPLETE.
    A stopped run is kept, whenever it stopped: its INCOMPLETE says why and where.
    """
    if not any(run_dir.rglob(USER_CONF)):
        shutil.rmtree(run_dir, ignore_errors=True)


def _job(request: RunRequest, run_dir: Path, test: LoadGenTest) -> Job:
    """The request's `test` in `run_dir`, its model file named from `/` (links resolved)."""
    if request.model_override is not None:
        request = dataclasses.replace(
            request, model_override=job_model_path(request.model_override)
        )
    return Job(request=request, test=test, run_dir=run_dir.resolve())


def _launch(job: Job, run_dir: Path, launch: Launcher, where: Phases) -> None:
    where.enter("launch", test=job.test)
    job.run_dir.mkdir(exist_ok=True)
    job_path = write_job(job, job.run_dir / JOB_FILE)
    where.enter("worker")
    try:
        code = launch(job_path)
    except KeyboardInterrupt as exc:  # this process's stop, passed on to the worker
        raise worker_stop(exc, job.run_dir) from None
    stopped_by = {stop.code: signum for signum, stop in STOP_SIGNALS.items()}
    if code in stopped_by:  # the worker was stopped by a signal and marked its directory
        raise worker_stop(Interrupted(stopped_by[code]), job.run_dir)
    where.enter("ended")
    if code in (0, 1):  # an outcome file was written: a result (VALID or not) or a verdict
        return
    if code > 128:  # a shell's or an init process's 128 + N: killed by signal N
        code = 128 - code
    recorded = read_incomplete(job.run_dir)
    if recorded is not None and recorded.exit_code is not None:  # the worker said why
        cause = recorded.cause.removeprefix("failed: ")
    else:  # it died before it could (the parent's own "run started" marker carries no code)
        cause = _exit_text(code)
    exit_code = code if code > 1 else RunError.exit_code
    mark_incomplete(run_dir, f"failed: {cause}", exit_code)
    raise WorkerError(f"{run_dir}: run failed: {cause}", cause, exit_code)


def _exit_text(code: int) -> str:
    return f"worker exited with code {code}" if code >= 0 else f"killed by signal {-code}"
