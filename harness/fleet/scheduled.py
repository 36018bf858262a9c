"""What fleet.json says its scheduler was told: Slurm's partition and arrays, or the Job's name.

Read as untrusted data (fleet.records' rules): each key of its type, each Slurm job ID digits
only, each name a line of text. Written in the order `harness fleet slurm|k8s` records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from harness.fleet.records import index_list, job_id, shown_text
from harness.foreign import ErrorType
from harness.strictjson import JsonObject, maybe, typed


@dataclass(frozen=True, kw_only=True)
class Submitted:
    """One job array sbatch made: its job ID, the task indices it runs, the node it pins."""

    job_id: str
    indices: tuple[int, ...]
    node: str | None


@dataclass(frozen=True, kw_only=True)
class SlurmScheduler:
    """A Slurm fleet's partition, time limit, and each array as it was submitted."""

    partition: str | None
    time_min: int | None
    submissions: tuple[Submitted, ...] = ()


@dataclass(frozen=True, kw_only=True)
class K8sScheduler:
    """A Kubernetes fleet's Job: its namespace and name, and whether it was created."""

    namespace: str | None
    job: str | None
    applied: bool = False


Scheduler: TypeAlias = SlurmScheduler | K8sScheduler


def scheduler_json(scheduler: Scheduler | None) -> JsonObject:
    """fleet.json's `scheduler` object ({} for a plan not yet handed to one)."""
    if isinstance(scheduler, SlurmScheduler):
        return {
            "partition": scheduler.partition,
            "time_min": scheduler.time_min,
            "submissions": [
                {"job_id": s.job_id, "indices": list(s.indices), "node": s.node}
                for s in scheduler.submissions
            ],
        }
    if isinstance(scheduler, K8sScheduler):
        return {
            "namespace": scheduler.namespace,
            "job": scheduler.job,
            "applied": scheduler.applied,
        }
    return {}


def parse_scheduler(value: object, kind: str, where: str, error: ErrorType) -> Scheduler | None:
    """fleet.json's `scheduler` for a fleet of `kind`, typed; None where it is absent or {}."""
    if value is None:
        return None
    data = typed(value, dict, where, error)
    texts = {
        key: None if text is None else shown_text(text, f"{where}: {key}", error)
        for key in ("partition", "namespace", "job")
        for text in (maybe(data, key, str, where, error),)
    }
    time_min = maybe(data, "time_min", int, where, error)
    applied = maybe(data, "applied", bool, where, error)
    submissions: tuple[Submitted, ...] = ()
    if "submissions" in data:
        items = typed(data["submissions"], list, f"{where}: submissions", error)
        submissions = tuple(
            _submission(item, f"{where}: submissions[{i}]", error) for i, item in enumerate(items)
        )
    if not data:
        return None
    if kind == "slurm":
        return SlurmScheduler(
            partition=texts["partition"], time_min=time_min, submissions=submissions
        )
    return K8sScheduler(namespace=texts["namespace"], job=texts["job"], applied=bool(applied))


def _submission(value: object, where: str, error: ErrorType) -> Submitted:
    item = typed(value, dict, where, error)
    node = maybe(item, "node", str, where, error)
    return Submitted(
        job_id=job_id(item.get("job_id"), f"{where}: job_id", error),
        indices=index_list(item.get("indices"), f"{where}: indices", error),
        node=None if node is None else shown_text(node, f"{where}: node", error),
    )
