"""Where a fleet task runs: the scheduler's IDs and the node, read from its environment."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from harness.errors import ConfigError

# Set by the Kubernetes manifest through the downward API (spec.nodeName, metadata.name).
NODE_ENV = "BEYOND_TOPS_NODE_NAME"
POD_ENV = "BEYOND_TOPS_POD_NAME"
K8S_INDEX_ENV = "JOB_COMPLETION_INDEX"  # set by Kubernetes in an Indexed Job's pods
SLURM_INDEX_ENV = "SLURM_ARRAY_TASK_ID"

SchedulerName = Literal["slurm", "k8s", "none"]


@dataclass(frozen=True, kw_only=True)
class Placement:
    """The scheduler's names for one execution of a task, and the node that ran it."""

    scheduler: SchedulerName
    node: str
    job_id: str | None = None  # Slurm: this task's own job ID (SLURM_JOB_ID)
    array_job_id: str | None = None  # Slurm: the array's ID, as squeue and sacct show it
    array_task_id: int | None = None
    partition: str | None = None  # Slurm partition, or the pod's namespace
    pod: str | None = None

    @property
    def attempt(self) -> str:
        """The attempt directory's name: unique per execution, so a resubmission adds one."""
        if self.scheduler == "slurm":
            return f"slurm-{self.array_job_id or self.job_id}_{self.array_task_id}"
        if self.scheduler == "k8s":
            return f"k8s-{self.pod or self.node}"
        return "local"


def placement_from(env: Mapping[str, str]) -> Placement:
    """The placement the environment describes: Slurm's, Kubernetes', else this host."""
    if "SLURM_JOB_ID" in env:
        task = env.get(SLURM_INDEX_ENV)
        return Placement(
            scheduler="slurm",
            node=env.get("SLURMD_NODENAME") or socket.gethostname(),
            job_id=env["SLURM_JOB_ID"],
            array_job_id=env.get("SLURM_ARRAY_JOB_ID"),
            array_task_id=int(task) if task and task.isdigit() else None,
            partition=env.get("SLURM_JOB_PARTITION"),
        )
    if K8S_INDEX_ENV in env:
        return Placement(
            scheduler="k8s",
            node=env.get(NODE_ENV) or socket.gethostname(),
            pod=env.get(POD_ENV) or env.get("HOSTNAME"),
            array_task_id=int(env[K8S_INDEX_ENV]) if env[K8S_INDEX_ENV].isdigit() else None,
            partition=env.get("BEYOND_TOPS_NAMESPACE"),
        )
    return Placement(scheduler="none", node=socket.gethostname())


def task_index(given: int | None, env: Mapping[str, str] | None = None) -> int:
    """The task to run: `given`, else Slurm's array index, else Kubernetes' completion index."""
    if given is not None:
        return given
    env = os.environ if env is None else env
    for name in (SLURM_INDEX_ENV, K8S_INDEX_ENV):
        value = env.get(name)
        if value is not None:
            if not value.isdigit():
                raise ConfigError(f"{name}={value!r}: not a task index; pass --index N")
            return int(value)
    raise ConfigError(
        f"no task index: pass --index N, or run under Slurm ({SLURM_INDEX_ENV}) or "
        f"Kubernetes ({K8S_INDEX_ENV})"
    )
