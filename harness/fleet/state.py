"""Each fleet task's state: the scheduler's word where it has one, else the task's own record.

A task that failed never hides the others: every planned task gets a line, with the path of
its log. Slurm's states are shown as Slurm names them (COMPLETED, FAILED, TIMEOUT,
OUT_OF_MEMORY, CANCELLED, PENDING, RUNNING, ...). Where the scheduler no longer remembers a
task (no accounting), its task-result.json decides: COMPLETED or FAILED by its exit code,
CANCELLED when a stop signal ended it, LOST when it started and never recorded an end
(killed, out of time or memory, or its node died), UNKNOWN when it never started, DAMAGED
when its record cannot be read as one (the detail names the file and the key).

Records are read as foreign files (fleet.records): a task's directory, its attempts and
their records must stay inside the fleet directory, and a damaged record only ever changes
its own task's line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.fleet.plan import FleetPlan, task_dir
from harness.fleet.records import TaskRecordView, read_task_record
from harness.fleet.scheduled import SlurmScheduler
from harness.fleet.tree import check_tree
from harness.foreign import inside
from harness.records.layout import LOGS_DIR, TASK_RESULT_FILE

# The states in which a task has ended well; every other ended state is a failure.
GOOD_STATES = frozenset({"COMPLETED"})
ACTIVE = frozenset(
    {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "STARTED"}
)


@dataclass(frozen=True, kw_only=True)
class SchedulerView:
    """What a scheduler says of one task (a Slurm array task, a Job index)."""

    state: str
    node: str | None
    detail: str | None  # exit code, pending reason
    source: str
    job_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class TaskStatus:
    """One task's line in `harness fleet status` and `collect`."""

    index: int
    label: str
    state: str
    node: str | None
    source: str  # squeue, scontrol, sacct, jobcomp, kubernetes, task-result, none
    detail: str | None
    log: Path | None
    attempt: Path | None  # its latest attempt directory
    record: TaskRecordView | None  # that attempt's task-result.json
    problems: tuple[str, ...] = ()  # records of its attempts that could not be read

    @property
    def ended(self) -> bool:
        """Whether it can no longer change."""
        return self.state not in ACTIVE

    @property
    def good(self) -> bool:
        """Whether it ended well, with every record of it readable."""
        return self.state in GOOD_STATES and not self.problems


# What a scheduler knows: job IDs to query -> {(job ID, index): view}
Query = Callable[[list[str]], Mapping[tuple[str, int], SchedulerView]]


@dataclass(frozen=True, kw_only=True)
class Attempts:
    """What a task's directory holds: its latest readable attempt, and the damaged records."""

    latest: tuple[Path, TaskRecordView] | None
    problems: tuple[str, ...]


def fleet_status(fleet: Path, plan: FleetPlan, query: Query | None = None) -> list[TaskStatus]:
    """Every planned task's status, in index order."""
    found = {task.index: read_attempts(task_dir(fleet, task.index), fleet) for task in plan.tasks}
    owners = _job_ids(plan, {index: a.latest for index, a in found.items()})
    views = query(sorted({j for ids in owners.values() for j in ids})) if query and owners else {}
    statuses = []
    for task in plan.tasks:
        attempt, record = found[task.index].latest or (None, None)
        problems = found[task.index].problems
        view = next(
            (
                views[(j, task.index)]
                for j in owners.get(task.index, [])
                if (j, task.index) in views
            ),
            None,
        )
        state, source, detail, node = _decide(view, record, submitted=task.index in owners)
        if state == "STARTED" and query is not None and task.index in owners:
            state = "LOST"  # the scheduler was asked and no longer lists it
            detail = "started, never recorded an end, and the scheduler no longer lists it: "
            detail += "killed (time, memory, node failure?); see its log"
        if problems:  # a damaged record: its task never counts as done, and says why
            if record is None and view is None:
                state, source, detail = "DAMAGED", "task-result", None
            detail = "; ".join(d for d in (detail, f"damaged record: {problems[0]}") if d)
        statuses.append(
            TaskStatus(
                index=task.index,
                label=task.label,
                state=state,
                node=node,
                source=source,
                detail=detail,
                log=_log(fleet, view, task.index, owners.get(task.index, [])),
                attempt=attempt,
                record=record,
                problems=problems,
            )
        )
    return statuses


def read_attempts(directory: Path, fleet: Path) -> Attempts:
    """A task's attempts (in `directory`, in `fleet`): the latest started, the records refused."""
    found: list[tuple[str, str, Path, TaskRecordView]] = []
    problems: list[str] = []
    try:
        if directory.is_dir() or directory.is_symlink():
            inside(fleet, directory.relative_to(fleet), ResultError)
        paths = sorted(directory.glob(f"*/{TASK_RESULT_FILE}")) if directory.is_dir() else []
    except ResultError as exc:
        return Attempts(latest=None, problems=(str(exc),))
    for path in paths:
        try:
            inside(directory, path.relative_to(directory), ResultError)
            record = read_task_record(path)
            _check_runs(path.parent, record)
        except ResultError as exc:
            problems.append(str(exc))
            continue
        found.append((record.started_utc, path.parent.name, path.parent, record))
    if not found:
        return Attempts(latest=None, problems=tuple(problems))
    _, _, attempt, record = max(found, key=lambda item: (item[0], item[1]))
    return Attempts(latest=(attempt, record), problems=tuple(problems))


def _check_runs(attempt: Path, record: TaskRecordView) -> None:
    """Each run a record names, where it exists, must lie inside its attempt, links and all."""
    for i, entry in enumerate(record.entries):
        run = None if entry.run is None else attempt / entry.run
        if run is None or not (run.exists() or run.is_symlink()):
            continue  # a run that is not there is the merge's note, not a damaged record
        try:
            check_tree(inside(attempt, run.relative_to(attempt), ResultError), attempt)
        except ResultError as exc:
            raise ResultError(f"{attempt / TASK_RESULT_FILE}: entries[{i}]: run: {exc}") from None


def _job_ids(
    plan: FleetPlan, latest: Mapping[int, tuple[Path, TaskRecordView] | None]
) -> dict[int, list[str]]:
    """Per task, the job IDs to ask about: its latest attempt's first, then the submission's."""
    owners: dict[int, list[str]] = {}
    for index, found in latest.items():
        job = found[1].job if found else None
        if job:
            owners.setdefault(index, []).append(job)
    scheduler = plan.scheduler
    for submission in scheduler.submissions if isinstance(scheduler, SlurmScheduler) else ():
        job = submission.job_id
        for index in submission.indices if job else ():
            if job not in owners.setdefault(index, []):
                owners[index].append(job)
    return owners


def _decide(
    view: SchedulerView | None, record: TaskRecordView | None, *, submitted: bool
) -> tuple[str, str, str | None, str | None]:
    """(state, source, detail, node) from the scheduler's view and the task's record."""
    node = None if record is None else record.node
    error = _first_error(record)
    if view is not None:
        detail = "; ".join(d for d in (view.detail, error) if d) or None
        return view.state, view.source, detail, view.node or node
    if record is None:
        return ("UNKNOWN" if submitted else "NOT SUBMITTED"), "none", None, None
    if record.finished_utc is None:
        return "STARTED", "task-result", "no end recorded: running, or killed", node
    if record.cause:
        return "CANCELLED", "task-result", record.cause, node
    if record.exit_code == 0:
        return "COMPLETED", "task-result", None, node
    code = record.exit_code
    return "FAILED", "task-result", f"exit {code}" + (f": {error}" if error else ""), node


def _first_error(record: TaskRecordView | None) -> str | None:
    if record is not None and record.error:
        return record.error
    for entry in record.entries if record is not None else ():
        if entry.error:
            return f"{entry.name}: {entry.error}"
    return None


def _log(fleet: Path, view: SchedulerView | None, index: int, jobs: list[str]) -> Path | None:
    """Slurm's output file of the task (logs/JOB_INDEX.out), where it exists."""
    candidates = [view.job_id] if view is not None and view.job_id else []
    candidates += jobs
    for job in candidates:
        path = fleet / LOGS_DIR / f"{job}_{index}.out"
        if path.is_file():
            return path
    return None


def summary_line(statuses: list[TaskStatus]) -> str:
    """A count of the tasks per state, e.g. `3 task(s): 2 COMPLETED, 1 FAILED`."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status.state] = counts.get(status.state, 0) + 1
    parts = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    return f"{len(statuses)} task(s): {parts}"
