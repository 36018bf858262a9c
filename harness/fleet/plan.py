"""A fleet's plan: its shards (tasks), the file each task runs, and the fleet directory.

A fleet directory, on a filesystem every node shares (Slurm) or on the Job's results volume
(Kubernetes), holds everything a task needs and everything it leaves::

    FLEET/fleet.json              the plan: suite, target, tasks, scheduler and submissions
    FLEET/tasks/007/task.json     task 7's file: resolved scenarios, profile, trials, target
    FLEET/tasks/007/<attempt>/    one execution of it (slurm-<job>_<task>, k8s-<pod>, ...):
                                  task-result.json and the runs, as `harness bench` makes them
    FLEET/models/                 model files the scenarios named by path, copied once
    FLEET/logs/                   the scheduler's stdout/stderr of each task

Paths inside are relative to FLEET, so the directory reads the same wherever it is mounted.
Every node may write the directory, so its files are read as foreign ones (fleet.records):
bounded, typed key by key, and a model path must stay inside FLEET.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

import harness
from harness.config import (
    PROFILES,
    ProfileName,
    Scenario,
    scenario_from_dict,
    scenario_to_dict,
)
from harness.errors import ConfigError, ResultError
from harness.files import atomic_write_text
from harness.fleet.grammar import check_image, check_name, check_suite_name, check_text
from harness.fleet.records import load_object
from harness.fleet.scheduled import Scheduler, parse_scheduler, scheduler_json
from harness.foreign import inside
from harness.records.layout import FLEET_FILE, TASK_FILE, TASKS_DIR
from harness.records.runlabel import check_label
from harness.strictjson import Format, Json, JsonObject, check_versioned, maybe, typed, want

FLEET_SCHEMA_VERSION = 1
TASK_SCHEMA_VERSION = 1
FLEET_FORMAT = Format(
    what="a beyond-tops fleet file",
    newest=FLEET_SCHEMA_VERSION,
    oldest=1,
    older_fix="plan it again",
)
TASK_FORMAT = Format(
    what="a beyond-tops task file",
    newest=TASK_SCHEMA_VERSION,
    oldest=1,
    older_fix="plan it again",
)
MAX_TASKS = 10_000  # Slurm's default MaxArraySize is 1001; a larger fleet is a typo

ShardBy = Literal["scenario", "node"]
SHARD_BY: tuple[ShardBy, ...] = ("scenario", "node")
Runner = Literal["auto", "local", "docker"]
RUNNERS: tuple[Runner, ...] = ("auto", "local", "docker")
SchedulerKind = Literal["slurm", "k8s"]
SCHEDULER_KINDS: tuple[SchedulerKind, ...] = ("slurm", "k8s")
C = TypeVar("C", bound=str)  # one of a closed set of names


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One resolved scenario a task runs, as `harness run` would, with its trials."""

    scenario: Scenario
    scenario_path: str  # the file it came from, for the record
    trials: int


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """One shard: what one array task (or one Job index) runs."""

    index: int
    node: str | None  # the node it is pinned to (--nodelist), None where the scheduler picks
    replica: int  # 1..N with --nodes N: the copies of one shard
    entries: tuple[Entry, ...]

    @property
    def label(self) -> str:
        """A short name for tables: the entries' scenario names, and the pin or the copy."""
        names = "+".join(entry.scenario.name for entry in self.entries)
        where = f"@{self.node}" if self.node else f"#{self.replica}"
        return f"{names} {where}"


@dataclass(frozen=True, kw_only=True)
class FleetPlan:
    """The whole fleet: where it runs, its tasks, and what the scheduler was told."""

    kind: SchedulerKind
    suite: str
    hw: str
    profile: ProfileName
    runner: Runner
    image: str | None
    shard_by: ShardBy
    tasks: tuple[TaskSpec, ...]
    created_utc: str = ""
    harness_version: str = harness.__version__
    # What the scheduler needs and was told: partition, submissions (Slurm); namespace, Job (k8s)
    scheduler: Scheduler | None = None
    label: str | None = None  # --label of every run (harness.records.runlabel)


def plan_tasks(
    entries: Sequence[Entry],
    *,
    shard_by: ShardBy,
    nodes: Sequence[str] = (),
    replicas: int = 1,
) -> tuple[TaskSpec, ...]:
    """The fleet's shards: per node (pinned) or per copy, each entry alone or the whole suite."""
    if not entries:
        raise ConfigError("the suite names no scenario; list at least one")
    if len(set(nodes)) != len(nodes):
        raise ConfigError(f"--nodelist: names a node twice ({', '.join(nodes)}); name each once")
    places: list[tuple[str | None, int]] = (
        [(node, 1) for node in nodes] if nodes else [(None, r) for r in range(1, replicas + 1)]
    )
    groups = [tuple(entries)] if shard_by == "node" else [(entry,) for entry in entries]
    tasks = [
        TaskSpec(index=0, node=node, replica=replica, entries=group)
        for node, replica in places
        for group in groups
    ]
    if len(tasks) > MAX_TASKS:
        raise ConfigError(
            f"{len(tasks)} tasks: more than {MAX_TASKS}; use fewer nodes or --shard node"
        )
    return tuple(replace(task, index=i) for i, task in enumerate(tasks))


def task_dir(fleet: Path, index: int) -> Path:
    """Where task `index` keeps its file and its attempts."""
    return fleet / TASKS_DIR / f"{index:03d}"


def write_plan(fleet: Path, plan: FleetPlan) -> None:
    """fleet.json and every task's task.json, atomically; fleet.json last (it names them)."""
    for task in plan.tasks:
        directory = task_dir(fleet, task.index)
        directory.mkdir(exist_ok=True)
        atomic_write_text(directory / TASK_FILE, _dump(_task_dict(task, plan)))
    save_plan(fleet, plan)


def save_plan(fleet: Path, plan: FleetPlan) -> None:
    """fleet.json again (after a submission added its job IDs), atomically."""
    atomic_write_text(fleet / FLEET_FILE, _dump(_plan_dict(plan)))


def read_plan(fleet: Path) -> FleetPlan:
    """A fleet directory's plan; every problem is one line naming fleet.json and the key."""
    path = fleet / FLEET_FILE
    data = load_object(
        path, ResultError, "fleet", "pass a directory `harness fleet slurm|k8s` made"
    )
    check_versioned(data, str(path), FLEET_FORMAT, ResultError)
    at = str(path)
    try:
        tasks = want(data, "tasks", list, at, ResultError)
        return FleetPlan(
            kind=_choice(data, "kind", SCHEDULER_KINDS, path),
            suite=check_suite_name(at, want(data, "suite", str, at, ResultError)),
            hw=check_name(f"{at}: hw", want(data, "hw", str, at, ResultError), "a target"),
            profile=_choice(data, "profile", PROFILES, path),
            runner=_choice(data, "runner", RUNNERS, path),
            image=maybe(data, "image", str, at, ResultError),
            shard_by=_choice(data, "shard_by", SHARD_BY, path),
            tasks=tuple(_task_from(t, f"{at}: tasks[{i}]") for i, t in enumerate(tasks)),
            created_utc=maybe(data, "created_utc", str, at, ResultError) or "",
            harness_version=maybe(data, "harness_version", str, at, ResultError) or "",
            scheduler=parse_scheduler(
                data.get("scheduler"), str(data.get("kind")), f"{at}: scheduler", ResultError
            ),
            label=check_label(maybe(data, "label", str, at, ResultError), f"{at}: label"),
        )
    except ConfigError as exc:  # a damaged scenario: the fleet file is damaged, not an option
        raise ResultError(f"{exc}; the fleet file is damaged") from None


@dataclass(frozen=True, kw_only=True)
class TaskFile:
    """What a task reads: its entries, the target and how to run them."""

    index: int
    hw: str
    profile: ProfileName
    runner: Runner
    image: str | None
    entries: tuple[Entry, ...]
    label: str | None = None


def read_task(fleet: Path, index: int) -> TaskFile:
    """Task `index`'s file, with model paths resolved inside FLEET as this node sees it."""
    path = task_dir(fleet, index) / TASK_FILE
    fix = f"pass an index the fleet has (see {fleet / FLEET_FILE})"
    data = load_object(path, ResultError, "task", fix)
    check_versioned(data, str(path), TASK_FORMAT, ResultError)
    try:
        spec = _task_from(data, str(path))
        image = maybe(data, "image", str, str(path), ConfigError)
        return TaskFile(
            index=spec.index,
            hw=want(data, "hw", str, str(path), ConfigError),
            profile=_choice(data, "profile", PROFILES, path),
            runner=_choice(data, "runner", RUNNERS, path),
            image=None if image is None else check_image(f"{path}: image", image),
            entries=tuple(
                _resolve_model(entry, fleet, f"{path}: entries[{i}]")
                for i, entry in enumerate(spec.entries)
            ),
            label=check_label(maybe(data, "label", str, str(path), ConfigError), f"{path}: label"),
        )
    except ResultError as exc:
        raise ConfigError(f"{exc}; plan the fleet again") from None


def _resolve_model(entry: Entry, fleet: Path, where: str) -> Entry:
    """A staged model's path (relative to FLEET) as a path here, which must stay in FLEET."""
    path = entry.scenario.model.path
    if path is None:
        return entry
    if PurePosixPath(path).is_absolute():
        raise ConfigError(
            f"{where}: scenario.model.path: {path!r} is absolute; a planned fleet names its "
            "models relative to itself (models/...): plan the fleet again"
        )
    try:
        found = inside(fleet, Path(path), ConfigError)
    except ConfigError as exc:
        raise ConfigError(f"{where}: scenario.model.path: {exc}") from None
    model = replace(entry.scenario.model, path=str(found))
    return replace(entry, scenario=replace(entry.scenario, model=model))


def _task_dict(task: TaskSpec, plan: FleetPlan) -> JsonObject:
    return {
        "schema_version": TASK_SCHEMA_VERSION,
        "harness_version": plan.harness_version,
        "hw": plan.hw,
        "profile": plan.profile,
        "runner": plan.runner,
        "image": plan.image,
        "label": plan.label,
        **_spec_dict(task),
    }


def _spec_dict(task: TaskSpec) -> JsonObject:
    return {
        "index": task.index,
        "node": task.node,
        "replica": task.replica,
        "entries": [
            {
                "scenario_path": e.scenario_path,
                "trials": e.trials,
                "scenario": scenario_to_dict(e.scenario),
            }
            for e in task.entries
        ],
    }


def _plan_dict(plan: FleetPlan) -> JsonObject:
    return {
        "schema_version": FLEET_SCHEMA_VERSION,
        "harness_version": plan.harness_version,
        "created_utc": plan.created_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kind": plan.kind,
        "suite": plan.suite,
        "hw": plan.hw,
        "profile": plan.profile,
        "runner": plan.runner,
        "image": plan.image,
        "shard_by": plan.shard_by,
        "label": plan.label,
        "scheduler": scheduler_json(plan.scheduler),
        "tasks": [_spec_dict(task) for task in plan.tasks],
    }


def _task_from(data: Json, where: str) -> TaskSpec:
    task = typed(data, dict, where, ResultError)
    entries = []
    for i, item in enumerate(want(task, "entries", list, where, ResultError)):
        at = f"{where}: entries[{i}]"
        entry = typed(item, dict, at, ResultError)
        trials = want(entry, "trials", int, at, ResultError)
        if trials < 1:
            raise ResultError(f"{at}: trials: expected a whole number >= 1, got {trials!r}")
        scenario = scenario_from_dict(entry.get("scenario"), f"{at}: scenario")
        check_text(f"{at}: scenario: name", scenario.name)  # status prints it
        entries.append(
            Entry(
                scenario=scenario,
                scenario_path=maybe(entry, "scenario_path", str, at, ResultError) or "",
                trials=trials,
            )
        )
    node = maybe(task, "node", str, where, ResultError)
    index = want(task, "index", int, where, ResultError)
    if index < 0:
        raise ResultError(f"{where}: index: expected a whole number >= 0, got {index}")
    return TaskSpec(
        index=index,
        node=None if node is None else check_name(f"{where}: node", node, "a node name"),
        replica=maybe(task, "replica", int, where, ResultError) or 1,
        entries=tuple(entries),
    )


def _choice(data: JsonObject, key: str, allowed: tuple[C, ...], path: Path) -> C:
    value = data.get(key)
    for choice in allowed:
        if choice == value:
            return choice
    names = ", ".join(str(a) for a in allowed)
    raise ResultError(f"{path}: {key}: {value!r} is not one of {names}")


def _dump(data: JsonObject) -> str:
    return json.dumps(data, indent=2) + "\n"
