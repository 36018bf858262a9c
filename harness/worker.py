"""A worker: `python -m harness.worker JOB.json` runs one LoadGen test and leaves its outcome.

The outcome is a file in the job's run directory, never a line on stdout: result.json for a
performance test (exit 0 when LoadGen judged it VALID, 1 when INVALID), accuracy/accuracy.json
for an accuracy test, retry.json when a first attempt must be re-run at the speed it measured,
or INCOMPLETE with the cause and the exit code.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from harness.errors import (
    CRASHED,
    STOP_SIGNALS,
    HarnessError,
    StopSignals,
    interrupted_cause,
    stop_signal,
)
from harness.files import atomic_write_text, mark_complete, mark_incomplete
from harness.job import Expected, Job, read_job

RETRY_FILE = "retry.json"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job file named on the command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m harness.worker JOB.json", file=sys.stderr)
        return 2
    try:
        job = read_job(Path(args[0]))
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    with StopSignals() as stops:  # SIGTERM and SIGHUP stop LoadGen as Ctrl-C does
        return execute(job, stops=stops)


def execute(job: Job, *, stops: StopSignals | None = None) -> int:
    """Run one job in this process and write its outcome; returns the exit code."""
    try:
        return _outcome(job)
    except KeyboardInterrupt as exc:
        signum = stop_signal(exc, None if stops is None else stops.received)
        code = STOP_SIGNALS[signum].code
        mark_incomplete(job.run_dir, interrupted_cause(signum), code)
        return code
    except HarnessError as exc:
        mark_incomplete(job.run_dir, f"failed: {exc}", exc.exit_code)
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug: keep its trace for the report, and mark the run
        traceback.print_exc()
        mark_incomplete(job.run_dir, f"crashed: {type(exc).__name__}: {exc}", CRASHED.code)
        return CRASHED.code


def read_retry(run_dir: Path) -> Expected | None:
    """The expectation a first attempt asked to be re-run with, if it asked."""
    path = run_dir / RETRY_FILE
    if not path.is_file():
        return None
    return Expected(**json.loads(path.read_text(encoding="utf-8")))


def _outcome(job: Job) -> int:
    # The runner imports LoadGen and onnxruntime: only a worker process pays for that.
    from harness.loadgen.conf import Expectation
    from harness.results.runfile import write_result
    from harness.runner import run_accuracy_test, run_performance

    if job.test == "accuracy":
        run_accuracy_test(job, progress=sys.stderr)
        return 0
    outcome = run_performance(job, progress=sys.stderr)
    if isinstance(outcome, Expectation):  # LoadGen's run was sized too small: ask for a re-run
        atomic_write_text(job.run_dir / RETRY_FILE, json.dumps(vars(outcome)) + "\n")
        return 0
    write_result(outcome, job.run_dir)
    mark_complete(job.run_dir)
    return 0 if outcome.valid else 1


if __name__ == "__main__":
    sys.exit(main())
