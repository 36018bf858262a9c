"""One fleet task on its node: `harness fleet task FLEET [--index N]`.

It reads FLEET/tasks/N/task.json, makes an attempt directory named by the scheduler's IDs
(so a resubmission never overwrites an earlier one), and runs each entry's trials exactly as
`harness bench` does: a fresh worker process per LoadGen test, in the pinned image where the
node has Docker (runner auto or docker) or in the node's own install. task-result.json
records the placement (Slurm job and task IDs or the pod, and the node), each entry's run
directory or error, and the exit code; it is written when the task starts (runner
"preparing"), once its runner is ready, after each entry, and when it ends. A stop signal
is written down as the task's cause the moment it arrives (fleet.stops), so a task
cancelled at any point says why, even if it is killed outright a moment later.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

import harness
from harness.errors import STOP_SIGNALS, HarnessError, ResultError, interrupted_cause, stop_signal
from harness.execution.campaign import Campaign, run_trials
from harness.execution.pipeline import Launcher
from harness.files import atomic_write_text
from harness.fleet.placement import Placement, placement_from
from harness.fleet.plan import Entry, TaskFile, read_task, task_dir
from harness.fleet.records import TASK_RESULT_VERSION
from harness.fleet.stops import RecordedStops
from harness.records.layout import TASK_RESULT_FILE
from harness.records.request import RunRequest


@dataclass(frozen=True, kw_only=True)
class EntryOutcome:
    """What one entry of a task left: its run (or trial group) directory, or its error."""

    name: str
    scenario_path: str
    run: str | None  # relative to the attempt directory
    exit_code: int
    error: str | None = None


@dataclass(kw_only=True)
class TaskRecord:
    """task-result.json: one execution of a task, where it ran and what it left."""

    index: int
    placement: Placement
    runner: str  # "preparing" until the image (or this install) is ready to run workers
    started_utc: str
    finished_utc: str | None = None
    exit_code: int | None = None
    cause: str | None = None  # why it stopped early, when it did
    error: str | None = None  # why it could not run its entries at all, when it could not
    entries: list[EntryOutcome]
    harness_version: str = harness.__version__


def run_task(
    fleet: Path,
    index: int,
    *,
    env: Mapping[str, str] | None = None,
    stream: IO[str] | None = None,
    launcher: Launcher | None = None,
) -> int:
    """Run task `index` of `fleet` here; its exit code (0 when every entry left its runs).

    An INVALID run is a result, not a failure: the task exits 0 and the merge shows it. An
    entry that fails does not stop the ones after it; the task then exits with the first
    failure's code, so the scheduler records the task as FAILED. A stop signal (scancel's
    SIGTERM, a pod's deletion, Ctrl-C) is recorded as the task's cause the moment it comes,
    whatever the task is doing: before its worker starts, while the image is prepared, in a
    run, or while a record is written.
    """
    fleet = fleet.absolute()
    task = read_task(fleet, index)
    placement = placement_from(os.environ if env is None else env)
    attempt = _attempt_dir(task_dir(fleet, index), placement.attempt)
    record = TaskRecord(
        index=index, placement=placement, runner="preparing", started_utc=_now(), entries=[]
    )
    with RecordedStops(lambda signum: _stopped(attempt, record, signum)):
        try:
            _write(attempt, record)
            return _run(task, fleet, attempt, record, stream, launcher)
        except KeyboardInterrupt as exc:
            _stopped(attempt, record, stop_signal(exc))
            raise
        except HarnessError as exc:  # its runner could not be prepared (runner docker)
            record.error, record.exit_code, record.finished_utc = str(exc), exc.exit_code, _now()
            _write(attempt, record)
            raise


def _run(
    task: TaskFile,
    fleet: Path,
    attempt: Path,
    record: TaskRecord,
    stream: IO[str] | None,
    launcher: Launcher | None,
) -> int:
    """Prepare the runner, run every entry, record each outcome and the end."""
    runner, launch = ("given", launcher) if launcher is not None else _launcher(task, fleet, stream)
    record.runner = runner
    _write(attempt, record)
    out = stream or sys.stdout
    node = record.placement.node
    print(f"== fleet task {task.index} on {node} ({runner}): {attempt}", file=out, flush=True)
    code = 0
    for entry in task.entries:
        outcome = _run_entry(task, entry, attempt, launch, out)
        record.entries.append(outcome)
        _write(attempt, record)
        code = code or outcome.exit_code
    record.exit_code, record.finished_utc = code, _now()
    _write(attempt, record)
    return code


def _stopped(attempt: Path, record: TaskRecord, signum: int) -> None:
    """Record that a stop signal ended the task (once: the first signal names the cause)."""
    if record.cause is None:
        record.cause = interrupted_cause(signum)
        record.exit_code, record.finished_utc = STOP_SIGNALS[signum].code, _now()
    _write(attempt, record)


def _run_entry(
    task: TaskFile, entry: Entry, attempt: Path, launch: Launcher | None, out: IO[str]
) -> EntryOutcome:
    request = RunRequest(
        scenario=entry.scenario,
        scenario_path=Path(entry.scenario_path) if entry.scenario_path else None,
        profile=task.profile,
        hw=task.hw,
        label=task.label,
    )
    campaign = Campaign(
        request=request, out_root=attempt, launch=launch, compliance=_compliance(request)
    )
    name = entry.scenario.name
    before = {p.name for p in attempt.iterdir()}
    try:
        path = run_trials(campaign, entry.trials, stream=out)
    except HarnessError as exc:
        print(f"error: {name}: {exc}", file=sys.stderr, flush=True)
        run = _new_run(attempt, before)
        return EntryOutcome(
            name=name,
            scenario_path=entry.scenario_path,
            run=run,
            exit_code=exc.exit_code,
            error=str(exc),
        )
    return EntryOutcome(
        name=name,
        scenario_path=entry.scenario_path,
        run=path.relative_to(attempt).as_posix(),
        exit_code=0,
    )


def _compliance(request: RunRequest) -> tuple[Any, ...]:
    """The compliance tests MLPerf requires of the model, with the submission profile."""
    from harness.compliance.rules import required_tests

    if request.profile != "submission":
        return ()
    return required_tests(request.loadgen_key)


def _launcher(task: TaskFile, fleet: Path, stream: IO[str] | None) -> tuple[str, Launcher | None]:
    """The pinned image where the node's Docker answers (auto, docker), else this install."""
    if task.runner == "local" or (task.runner == "auto" and task.image is None):
        return "local", None  # auto: the image the user pinned, never one built on a node
    from harness.execution.containers import DockerLauncher, DockerRun

    launcher = DockerLauncher(DockerRun(hw=task.hw, results=fleet, image=task.image))
    try:
        image = launcher.prepare()
    except HarnessError as exc:
        if task.runner == "docker":
            raise
        print(f"== no container runtime here ({exc}); running in this install", file=sys.stderr)
        return "local (docker unavailable)", None
    return f"docker {image.tag}", launcher


def _attempt_dir(directory: Path, name: str) -> Path:
    """A new attempt directory: `name`, or `name-2`, ... when a task runs again by hand."""
    for number in range(1, 1000):
        path = directory / (name if number == 1 else f"{name}-{number}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise ResultError(
                f"{directory}: cannot create the task's attempt directory ({exc.strerror}); "
                "check that the fleet directory is on a shared, writable filesystem"
            ) from None
        return path
    raise ResultError(f"{directory}: 999 attempts already; plan a new fleet")


def _new_run(attempt: Path, before: set[str]) -> str | None:
    """The run directory a failed entry left (marked INCOMPLETE), if it left one."""
    runs = sorted(p.name for p in attempt.iterdir() if p.is_dir() and p.name not in before)
    return runs[-1] if runs else None


def _write(attempt: Path, record: TaskRecord) -> None:
    data = {"schema_version": TASK_RESULT_VERSION, **asdict(record)}
    atomic_write_text(attempt / TASK_RESULT_FILE, json.dumps(data, indent=2) + "\n")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
