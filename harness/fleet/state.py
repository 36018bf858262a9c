"""Each fleet task's state: the scheduler's word where it has one, else the task's own record.

A task that failed never hides the others: every planned task gets a line, with the path of
its log. Slurm's states are shown as Slurm names them (COMPLETED, FAILED, TIMEOUT,
OUT_OF_MEMORY, CANCELLED, PENDING, RUNNING, ...). Where the scheduler no longer remembers a
task (no accounting), its task-result.json decides: COMPLETED or FAILED by its exit code,
CANCELLED when a stop signal ended it, LOST when it started and never recorded an end
(killed, out of time or memory, or its node died), UNKNOWN when it never started.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.fleet.plan import LOGS_DIR, TASK_RESULT_FILE, FleetPlan, task_dir

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
    record: Mapping[str, Any] | None  # that attempt's task-result.json

    @property
    def ended(self) -> bool:
        """Whether it can no longer change."""
        return self.state not in ACTIVE

    @property
    def good(self) -> bool:
        """Whether it ended well."""
        return self.state in GOOD_STATES


# What a scheduler knows: job IDs to query -> {(job ID, index): view}
Query = Callable[[list[str]], Mapping[tuple[str, int], SchedulerView]]


def fleet_status(fleet: Path, plan: FleetPlan, query: Query | None = None) -> list[TaskStatus]:
    """Every planned task's status, in index order."""
    latest = {task.index: latest_attempt(task_dir(fleet, task.index)) for task in plan.tasks}
    owners = _job_ids(plan, latest)
    views = query(sorted({j for ids in owners.values() for j in ids})) if query and owners else {}
    statuses = []
    for task in plan.tasks:
        attempt, record = latest[task.index] or (None, None)
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
        statuses.append(
            TaskStatus(
                index=task.index,
                label=task.label,
                state=state,
                node=node,
                source=source,
                detail=detail,
                log=_log(fleet, view, record, task.index, owners.get(task.index, [])),
                attempt=attempt,
                record=record,
            )
        )
    return statuses


def latest_attempt(directory: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The task's most recently started attempt and its task-result.json."""
    found: list[tuple[str, str, Path, Mapping[str, Any]]] = []
    for path in sorted(directory.glob(f"*/{TASK_RESULT_FILE}")) if directory.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written, or damaged: the scheduler's word stands
        if isinstance(data, dict):
            found.append((str(data.get("started_utc", "")), path.parent.name, path.parent, data))
    if not found:
        return None
    _, _, attempt, record = max(found, key=lambda item: (item[0], item[1]))
    return attempt, record


def _job_ids(
    plan: FleetPlan, latest: Mapping[int, tuple[Path, Mapping[str, Any]] | None]
) -> dict[int, list[str]]:
    """Per task, the job IDs to ask about: its latest attempt's first, then the submission's."""
    owners: dict[int, list[str]] = {}
    for index, found in latest.items():
        placement = (found[1].get("placement") or {}) if found else {}
        job = placement.get("array_job_id") or placement.get("job_id")
        if job:
            owners.setdefault(index, []).append(str(job))
    for submission in plan.scheduler.get("submissions", []):
        job = submission.get("job_id")
        for index in submission.get("indices", []) if job else []:
            if str(job) not in owners.setdefault(int(index), []):
                owners[int(index)].append(str(job))
    return owners


def _decide(
    view: SchedulerView | None, record: Mapping[str, Any] | None, *, submitted: bool
) -> tuple[str, str, str | None, str | None]:
    """(state, source, detail, node) from the scheduler's view and the task's record."""
    node = None if record is None else (record.get("placement") or {}).get("node")
    error = _first_error(record)
    if view is not None:
        detail = "; ".join(d for d in (view.detail, error) if d) or None
        return view.state, view.source, detail, view.node or node
    if record is None:
        return ("UNKNOWN" if submitted else "NOT SUBMITTED"), "none", None, None
    code = record.get("exit_code")
    if record.get("finished_utc") is None:
        return "STARTED", "task-result", "no end recorded: running, or killed", node
    if record.get("cause"):
        return "CANCELLED", "task-result", str(record["cause"]), node
    if code == 0:
        return "COMPLETED", "task-result", None, node
    return "FAILED", "task-result", f"exit {code}" + (f": {error}" if error else ""), node


def _first_error(record: Mapping[str, Any] | None) -> str | None:
    for entry in (record or {}).get("entries", []):
        if entry.get("error"):
            return f"{entry.get('name')}: {entry['error']}"
    return None


def _log(
    fleet: Path,
    view: SchedulerView | None,
    record: Mapping[str, Any] | None,
    index: int,
    jobs: list[str],
) -> Path | None:
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
