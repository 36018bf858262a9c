"""Worker: `python -m harness.execution.worker JOB.json` runs one LoadGen test, leaves its outcome.

The outcome is a file in the job's run directory, never a line on stdout: result.json for a
performance test (exit 0 when LoadGen judged it VALID, 1 when INVALID), accuracy/accuracy.json
for an accuracy test, outcome.json for a compliance test (which runs in its own directory, as
its working directory), retry.json when a first attempt must be re-run at the speed it
measured, or INCOMPLETE with the cause and the exit code.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from harness.errors import (
    CRASHED,
    STOP_SIGNALS,
    ConfigError,
    HarnessError,
    RunError,
    StopSignals,
    stop_signal,
)
from harness.files import mark_complete, mark_incomplete
from harness.handoff import write_peak, write_retry
from harness.paths import CACHE_ENV
from harness.records.job import AUDIT_TESTS, COMPLIANCE_TESTS, Job, read_job
from harness.records.request import Expectation
from harness.stopping import HeldStops, Phases, mark_stopped, pause_from_env


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job file named on the command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m harness.execution.worker JOB.json", file=sys.stderr)
        return 2
    # SIGTERM and SIGHUP stop LoadGen as Ctrl-C does. The parent started this process with
    # them held (pipeline.launch_worker); they stay held until execute can record one.
    with StopSignals() as stops:
        held = HeldStops(unblock=True)
        try:
            job = read_job(Path(args[0]))
            phases = Phases(job.test, "start", pause_from_env(os.environ))
        except HarnessError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code  # a stop still held dies with this process: it was moot
        return execute(job, stops=stops, phases=phases, held=held)


def execute(
    job: Job,
    *,
    stops: StopSignals | None = None,
    phases: Phases | None = None,
    held: HeldStops | None = None,
) -> int:
    """Run one job in this process and write its outcome; returns the exit code.

    A stop signal at any moment marks the job's directory with the phase it came in;
    `held`, the stop signals held until now, are released once that is assured.
    """
    phases = phases or Phases(job.test, "start")
    try:
        if held is not None:
            held.release()  # one sent while this process started is raised here
        return _outcome(job, phases)
    except KeyboardInterrupt as exc:
        signum = stop_signal(exc, None if stops is None else stops.received)
        mark_stopped(job.run_dir, exc, phases, signum)
        return STOP_SIGNALS[signum].code
    except HarnessError as exc:  # the parent prints it, from INCOMPLETE, once
        mark_incomplete(job.run_dir, f"failed: {exc}", exc.exit_code)
        return exc.exit_code
    except MemoryError as exc:  # numpy's "Unable to allocate 4 TiB ...", an allocator's own
        detail = str(exc) or "MemoryError"
        request = job.request
        model = request.model_override or request.scenario.model.path or request.scenario.model.zoo
        cause = (
            f"{model}: out of memory in the {job.test} test ({detail}); lower batch_size or "
            "the model's dims, free memory, or use a larger machine"
        )
        mark_incomplete(job.run_dir, f"failed: {cause}", HarnessError.exit_code)
        return HarnessError.exit_code
    except Exception as exc:  # a bug: keep its trace for the report, and mark the run
        traceback.print_exc()
        mark_incomplete(job.run_dir, f"crashed: {type(exc).__name__}: {exc}", CRASHED.code)
        return CRASHED.code


def _outcome(job: Job, phases: Phases) -> int:
    phases.enter("start")
    # The runner imports LoadGen and onnxruntime: only a worker process pays for that.
    from harness.execution.peaksearch import run_peak_search
    from harness.execution.runner import run_accuracy_test, run_performance
    from harness.results.runfile import write_result

    if job.request.scenario.generation is not None:
        return _generative(job, phases)
    if job.test == "accuracy":
        run_accuracy_test(job, progress=sys.stderr, phases=phases)
        return 0
    if job.test in COMPLIANCE_TESTS:
        return _compliance(job, phases)
    if job.test in AUDIT_TESTS:
        return _swap(job, phases)
    if job.test == "find_peak":
        search = run_peak_search(job, progress=sys.stderr, phases=phases)
        phases.enter("write")
        write_peak(job.run_dir, search)
        mark_complete(job.run_dir)
        return 0
    outcome = run_performance(job, progress=sys.stderr, phases=phases)  # ends in "write"
    if isinstance(outcome, Expectation):
        return _ask_rerun(job, outcome)
    write_result(outcome, job.run_dir)
    mark_complete(job.run_dir)
    return 0 if outcome.valid else 1


def _generative(job: Job, phases: Phases) -> int:
    """A generative model's job (harness.execution.genrunner): accuracy, peak search or timed."""
    from harness.execution.genpeaksearch import run_generative_peak_search
    from harness.execution.genrunner import run_generative, run_generative_accuracy
    from harness.results.runfile import write_result

    if job.test == "accuracy":
        run_generative_accuracy(job, phases=phases)
        return 0
    if job.test == "find_peak":
        search = run_generative_peak_search(job, progress=sys.stderr, phases=phases)
        phases.enter("write")
        write_peak(job.run_dir, search)
        mark_complete(job.run_dir)
        return 0
    if job.test != "performance":
        raise ConfigError(
            f"{job.test}: not run for generative models yet (accuracy and performance are)"
        )
    outcome = run_generative(job, progress=sys.stderr, phases=phases)
    if isinstance(outcome, Expectation):
        return _ask_rerun(job, outcome)
    write_result(outcome, job.run_dir)
    mark_complete(job.run_dir)
    return 0 if outcome.valid else 1


def _ask_rerun(job: Job, expected: Expectation) -> int:
    """LoadGen's run was sized too small: leave the expectation to re-run with (retry.json)."""
    write_retry(job.run_dir, expected)
    return 0


def _compliance(job: Job, phases: Phases) -> int:
    """A compliance test, with its own directory as the working directory LoadGen sees.

    LoadGen looks for audit.config in its working directory; this worker's is the one
    directory where the test's audit.config lies, so no other test can read it.
    """
    from harness.compliance.outcome import write_outcome
    from harness.execution.runner import run_compliance

    job = enter_own_directory(job)
    outcome = run_compliance(job, progress=sys.stderr, phases=phases)
    if isinstance(outcome, Expectation):
        return _ask_rerun(job, outcome)
    phases.enter("write")
    write_outcome(outcome, job.run_dir)
    mark_complete(job.run_dir)
    return 0


def _swap(job: Job, phases: Phases) -> int:
    """The SWAP caching audit, in its own directory as a compliance test is; 1 if it failed."""
    from harness.execution.swaprun import run_swap_audit

    job = enter_own_directory(job)
    check = run_swap_audit(job, progress=sys.stderr, phases=phases)
    mark_complete(job.run_dir)
    return 0 if check.passed else 1


def enter_own_directory(job: Job) -> Job:
    """Work in the job's directory (its parent made it); the job, its files named from `/`.

    Relative paths (the model file, the data directory, the cache in BEYOND_TOPS_CACHE) name
    files from the directory the worker started in; they keep naming them after the move.
    """
    scenario = job.request.scenario
    model, data = scenario.model, scenario.data
    if model.path is not None:
        model = dataclasses.replace(model, path=os.path.abspath(model.path))
    if data.dir is not None:
        data = dataclasses.replace(data, dir=os.path.abspath(data.dir))
    cache = os.environ.get(CACHE_ENV)
    if cache and not os.path.isabs(cache):
        os.environ[CACHE_ENV] = os.path.abspath(cache)
    run_dir = job.run_dir.absolute()
    try:
        os.chdir(run_dir)
    except OSError as exc:
        raise RunError(
            f"{run_dir}: cannot work in the compliance test's directory ({exc.strerror}); "
            "run `harness compliance` again"
        ) from None
    moved = dataclasses.replace(scenario, model=model, data=data)
    request = dataclasses.replace(job.request, scenario=moved)
    return dataclasses.replace(job, request=request, run_dir=run_dir)


if __name__ == "__main__":
    sys.exit(main())
