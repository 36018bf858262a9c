"""A planned fleet followed: each task's state from its scheduler, polled, and its tasks stopped.

The CLI prints what these return; `note` and `say` are how it hears a line as it happens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from harness.errors import ConfigError, HarnessError
from harness.fleet.plan import FleetPlan, read_plan
from harness.fleet.scheduled import K8sScheduler, SlurmScheduler
from harness.fleet.state import Query, SchedulerView, TaskStatus, fleet_status, summary_line

MIN_INTERVAL_S = 0.2


def statuses(
    fleet: Path, note: Callable[[str], None] = lambda line: None
) -> tuple[FleetPlan, list[TaskStatus]]:
    """The fleet's plan and each task's state; `note` hears why a scheduler was not asked."""
    plan = read_plan(fleet)
    return plan, fleet_status(fleet, plan, _query(plan, note))


def _query(plan: FleetPlan, note: Callable[[str], None]) -> Query | None:
    if plan.kind == "slurm":
        from harness.fleet.slurm import views

        return lambda ids: views(ids)
    return _k8s_query(plan, note)


def _k8s_query(plan: FleetPlan, note: Callable[[str], None]) -> Query | None:
    """The Job's per-index states through the API where a cluster answers, else None."""
    scheduler = plan.scheduler
    if not isinstance(scheduler, K8sScheduler) or not scheduler.applied or not scheduler.job:
        return None
    name = scheduler.job
    try:
        from harness.fleet.k8s.cluster import job_status

        states = job_status(name, namespace=scheduler.namespace or "default")
    except HarnessError as exc:
        note(f"note: Kubernetes not reachable ({exc}); states from the task records")
        return None
    names = {"Succeeded": "COMPLETED", "Failed": "FAILED"}
    found = {
        (name, index): SchedulerView(
            state=names.get(state, state.upper()), node=None, detail=None, source="kubernetes"
        )
        for index, state in states.items()
        if state in names
    }
    return lambda ids: found


def follow(
    fleet: Path,
    interval_s: float,
    say: Callable[[str], None],
    note: Callable[[str], None] = lambda line: None,
) -> list[TaskStatus]:
    """Poll until every task has ended; `say` hears a line whenever the counts change."""
    last = ""
    while True:
        _, found = statuses(fleet, note)
        line = summary_line(found)
        if line != last:
            say(f"[{time.strftime('%H:%M:%S')}] {line}")
            last = line
        if all(s.ended for s in found):
            return found
        time.sleep(max(interval_s, MIN_INTERVAL_S))


def task_ids(fleet: Path, plan: FleetPlan, wanted: frozenset[int]) -> list[str]:
    """The Slurm task IDs (JOB_INDEX) to cancel: every submitted one, or those `wanted`."""
    scheduler = plan.scheduler
    if plan.kind != "slurm":
        job = scheduler.job if isinstance(scheduler, K8sScheduler) else None
        namespace = scheduler.namespace if isinstance(scheduler, K8sScheduler) else None
        raise ConfigError(
            f"{fleet}: a Kubernetes fleet; delete its Job: kubectl delete job {job} -n {namespace}"
        )
    submissions = scheduler.submissions if isinstance(scheduler, SlurmScheduler) else ()
    ids = [
        f"{submission.job_id}_{index}"
        for submission in submissions
        for index in submission.indices
        if not wanted or index in wanted
    ]
    unknown = wanted - {int(i.rsplit("_", 1)[1]) for i in ids}
    if unknown:
        raise ConfigError(f"--task: {sorted(unknown)} not submitted in this fleet")
    return ids
