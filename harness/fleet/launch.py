"""Plan a fleet directory whole, then hand it to Slurm or Kubernetes: typed requests in.

Every option and suite value is checked against its grammar (harness.fleet.grammar) before
anything is written; the fleet directory is then planned beside its name and moved into place
only when complete (harness.fleet.staging), so a refused plan leaves nothing behind. The CLI
parses the options into a SlurmRequest or K8sRequest and prints what these return.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.config import as_profile
from harness.errors import ConfigError, SchedulerError
from harness.fleet import slurm
from harness.fleet.grammar import check_harness, check_image, check_path, expand_nodelist
from harness.fleet.k8s.spec import K8sJobSpec, ResultsVolume, dns_label_like
from harness.fleet.plan import (
    Entry,
    FleetPlan,
    Runner,
    SchedulerKind,
    ShardBy,
    plan_tasks,
    save_plan,
    write_plan,
)
from harness.fleet.scheduled import K8sScheduler, SlurmScheduler, Submitted
from harness.fleet.staging import Staging, final_path, planned, stage_models
from harness.records.layout import K8S_MANIFEST


@dataclass(frozen=True, kw_only=True)
class ResolvedSuite:
    """A suite's scenarios resolved as `harness bench` resolves them."""

    name: str
    profile: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True, kw_only=True)
class SuiteRequest:
    """What every fleet plan asks: the suite (resolved when the plan gets to it), and where."""

    resolve: Callable[[], ResolvedSuite]  # checks the suite's files; called after the options
    hw: str
    shard_by: ShardBy
    out: Path  # the fleet directory goes in it
    dry_run: bool
    label: str | None = None  # --label: every run's (harness.records.runlabel)


@dataclass(frozen=True, kw_only=True)
class SlurmRequest:
    """`harness fleet slurm`: the suite as one job array per pinned node (or one array)."""

    suite: SuiteRequest
    partition: str
    nodes: int  # copies of each shard, where no nodelist pins them
    nodelist: str | None
    image: str | None
    runner: Runner
    time_min: int
    account: str | None
    gpus_per_node: int | None
    sbatch: tuple[str, ...]
    harness: str | None  # the command nodes run harness with


@dataclass(frozen=True, kw_only=True)
class K8sRequest:
    """`harness fleet k8s`: the suite as one Indexed Job, written and, with apply, created."""

    suite: SuiteRequest
    image: str
    namespace: str
    nodes: int
    volume: ResultsVolume
    parallelism: int | None
    cpu: str | None
    memory: str | None
    gpus: int
    backoff_limit: int
    node_selector: tuple[str, ...]  # KEY=VALUE
    kubeconfig: str | None
    apply: bool


@dataclass(frozen=True, kw_only=True)
class Launched:
    """A planned fleet: its directory, and the script or manifest where nothing was handed on."""

    fleet: Path
    unsent: str | None  # the sbatch script or Job manifest, where it was not submitted
    how: str  # how to submit or apply it by hand


@dataclass(frozen=True, kw_only=True)
class _Shards:
    suite: ResolvedSuite
    tasks: int  # how many the plan will have
    final: Path


def _shards(request: SuiteRequest, nodes: list[str], replicas: int) -> _Shards:
    """The suite resolved and its shards checked; the fleet's path chosen; nothing written."""
    if replicas < 1:
        raise ConfigError(f"--nodes: must be >= 1, got {replicas}")
    suite = request.resolve()
    tasks = plan_tasks(suite.entries, shard_by=request.shard_by, nodes=nodes, replicas=replicas)
    return _Shards(suite=suite, tasks=len(tasks), final=final_path(request.out, suite.name))


def _fill(
    request: SuiteRequest,
    shards: _Shards,
    staging: Staging,
    plan: tuple[SchedulerKind, Runner, str | None],
    places: tuple[list[str], int],
) -> FleetPlan:
    """Stage the models and plan the tasks in the staging directory; the plan."""
    kind, runner, image = plan
    nodes, replicas = places
    staged = stage_models(staging.work, shards.suite.entries)
    tasks = plan_tasks(staged, shard_by=request.shard_by, nodes=nodes, replicas=replicas)
    return FleetPlan(
        kind=kind,
        suite=shards.suite.name,
        hw=request.hw,
        profile=as_profile(shards.suite.profile),
        runner=runner,
        image=image,
        shard_by=request.shard_by,
        tasks=tasks,
        label=request.label,
    )


def slurm_options(request: SlurmRequest) -> tuple[slurm.SlurmOptions, list[str], list[str]]:
    """The sbatch options, the pinned nodes and the harness command, each checked."""
    nodes = [] if request.nodelist is None else expand_nodelist("--nodelist", request.nodelist)
    if request.image is not None:
        check_image("--image", request.image)
    check_path("--out", str(request.suite.out.absolute()), sbatch=True)
    harness_cmd = (
        check_harness(request.harness) if request.harness else [sys.executable, "-m", "harness.cli"]
    )
    gpus = request.gpus_per_node
    if gpus is None and request.suite.hw != "cpu":
        gpus = 1
    options = slurm.SlurmOptions(
        partition=request.partition,
        time_min=request.time_min,
        account=request.account,
        gpus_per_node=gpus,
        extra=request.sbatch,
    )
    return options, nodes, harness_cmd


def launch_slurm(request: SlurmRequest, say: Callable[[str], None]) -> Launched:
    """Plan a Slurm fleet and submit it (not with dry_run); `say` hears each array submitted."""
    options, nodes, harness_cmd = slurm_options(request)
    replicas = 1 if nodes else request.nodes
    shards = _shards(request.suite, nodes, replicas)
    with planned(shards.final) as staging:
        plan = _fill(
            request.suite,
            shards,
            staging,
            ("slurm", request.runner, request.image),
            (nodes, replicas),
        )
        fleet = staging.final
        script = slurm.render_script(fleet, plan, options, harness_cmd)
        submissions = slurm.plan_submissions(plan)
        scheduler = SlurmScheduler(partition=request.partition, time_min=request.time_min)
        plan = dataclasses.replace(plan, scheduler=scheduler)
        write_plan(staging.work, plan)
        slurm.write_scripts(staging.work, fleet, script, submissions)
    how = f"sh {fleet / slurm.SUBMIT_FILE}"
    if request.suite.dry_run:
        return Launched(fleet=fleet, unsent=script, how=how)
    _submit(fleet, (plan, scheduler), submissions, say)
    return Launched(fleet=fleet, unsent=None, how=how)


def _submit(
    fleet: Path,
    planned_as: tuple[FleetPlan, SlurmScheduler],
    submissions: list[slurm.Submission],
    say: Callable[[str], None],
) -> None:
    """Each array with sbatch; fleet.json records each job ID as it is made."""
    plan, scheduler = planned_as
    for number, submission in enumerate(submissions):
        try:
            (done,) = slurm.submit(fleet, [submission])
        except SchedulerError as exc:
            left = "" if number == 0 else f" ({number} of {len(submissions)} arrays submitted)"
            raise SchedulerError(
                f"{exc}{left}; the fleet is planned: its sbatch lines are in "
                f"{fleet / slurm.SUBMIT_FILE}"
            ) from None
        made = Submitted(job_id=done.job_id or "", indices=tuple(done.indices), node=done.node)
        scheduler = dataclasses.replace(scheduler, submissions=(*scheduler.submissions, made))
        save_plan(fleet, dataclasses.replace(plan, scheduler=scheduler))  # each, as it is made
        where = f" on {done.node}" if done.node else ""
        say(f"submitted job {done.job_id}: tasks {slurm.array_spec(done.indices)}{where}")


def launch_k8s(request: K8sRequest, say: Callable[[str], None]) -> Launched:
    """Plan a Kubernetes fleet and write its Job (and, with apply, create it)."""
    from harness.files import atomic_write_text
    from harness.fleet.k8s.cluster import apply_job
    from harness.fleet.k8s.job import build_job, manifest_yaml
    from harness.fleet.k8s.validate import validate_manifest

    volume = request.volume
    for option, value in (("--host-path", volume.host_path), ("--mount-path", volume.mount_path)):
        if value is not None:
            check_path(option, value)
    check_image("--image", request.image)
    shards = _shards(request.suite, [], request.nodes)
    fleet = shards.final
    name = dns_label_like(f"bt-{fleet.name}")
    job = build_job(
        _job_spec(request, name, f"{volume.mount_path.rstrip('/')}/{fleet.name}", shards.tasks)
    )
    text = manifest_yaml(job)
    manifest = fleet / K8S_MANIFEST
    validate_manifest(text, where=str(manifest))
    scheduler = K8sScheduler(namespace=request.namespace, job=name, applied=False)
    with planned(fleet) as staging:
        # in a pod, workers run in the pod's own image
        filled = _fill(
            request.suite, shards, staging, ("k8s", "local", request.image), ([], request.nodes)
        )
        plan = dataclasses.replace(filled, scheduler=scheduler)
        write_plan(staging.work, plan)
        atomic_write_text(staging.work / manifest.name, text)
    how = f"kubectl apply -f {manifest}"
    if request.suite.dry_run or not request.apply:
        return Launched(fleet=fleet, unsent=text, how=how)
    try:
        created = apply_job(job, namespace=request.namespace, kubeconfig=request.kubeconfig)
    except SchedulerError as exc:
        raise SchedulerError(f"{exc}; the fleet is planned: {how}") from None
    applied = dataclasses.replace(scheduler, applied=True)
    save_plan(fleet, dataclasses.replace(plan, scheduler=applied))
    say(f"created Job {created} in namespace {request.namespace}")
    return Launched(fleet=fleet, unsent=None, how=how)


def _job_spec(request: K8sRequest, name: str, fleet_dir: str, tasks: int) -> K8sJobSpec:
    return K8sJobSpec(
        name=name,
        namespace=request.namespace,
        image=request.image,
        hw=request.suite.hw,
        completions=tasks,
        parallelism=tasks if request.parallelism is None else request.parallelism,
        fleet_dir=fleet_dir,
        volume=request.volume,
        gpus=request.gpus,
        cpu=request.cpu,
        memory=request.memory,
        backoff_limit=request.backoff_limit,
        node_selector=selector(request.node_selector),
    )


def selector(pairs: tuple[str, ...]) -> dict[str, str] | None:
    """--node-selector KEY=VALUE pairs; None (the target's default) when none was given."""
    if not pairs:
        return None
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--node-selector: {pair!r} is not KEY=VALUE")
        found[key] = value
    return found
