"""`harness fleet slurm|k8s`: plan a fleet directory whole, then hand it to the scheduler.

Every option and suite value is checked against its grammar (harness.fleet.grammar) before
anything is written; the fleet directory is then planned beside its name and moved into place
only when complete (harness.fleet.staging), so a refused plan leaves nothing behind.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import ConfigError, SchedulerError

if TYPE_CHECKING:
    from harness.fleet.k8s.spec import K8sJobSpec, ResultsVolume
    from harness.fleet.plan import Entry, FleetPlan, TaskSpec
    from harness.fleet.slurm import SlurmOptions, Submission
    from harness.fleet.staging import Staging


def suite_entries(args: argparse.Namespace) -> tuple[str, str, list[Entry]]:
    """The suite's scenarios resolved as `harness bench` resolves them: name, profile, entries."""
    from harness.cli.measure import _find_suite, _job
    from harness.execution.campaign import trials_count
    from harness.fleet.grammar import check_suite_name
    from harness.fleet.plan import Entry

    if args.trials is not None and args.trials < 1:
        raise ConfigError(f"--trials: must be >= 1, got {args.trials}")
    suite, base = _find_suite(args.suite)
    check_suite_name(args.suite, suite.name)
    profile = args.profile or suite.profile
    resolve = argparse.Namespace(
        hw=args.hw,
        strict=False,
        out=args.out,
        runner="local",
        image=None,
        cache=None,
        launcher=None,
        providers=args.providers,
        batch_size=None,
    )
    precisions = [p.strip() for p in (args.precision or "").split(",") if p.strip()] or [None]
    entries = []
    for name in suite.scenarios:
        for precision in precisions:
            job = _job(base / name, resolve, profile, precision=precision)
            entries.append(
                Entry(
                    scenario=job.scenario,
                    scenario_path=str(base / name),
                    trials=trials_count(job, args.trials),
                )
            )
    return suite.name, profile, entries


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shards:
    """What a plan resolved before writing anything: the suite, its entries, the fleet's path."""

    suite: str
    profile: str
    entries: list[Entry]
    tasks: int  # how many the plan will have
    final: Path


def resolve(args: argparse.Namespace, nodes: list[str], replicas: int) -> Shards:
    """The suite resolved and its shards checked; the fleet's path chosen; nothing written."""
    from harness.fleet.plan import plan_tasks
    from harness.fleet.staging import final_path

    if replicas < 1:
        raise ConfigError(f"--nodes: must be >= 1, got {replicas}")
    suite, profile, entries = suite_entries(args)
    tasks = plan_tasks(entries, shard_by=args.shard, nodes=nodes, replicas=replicas)  # checks
    return Shards(
        suite=suite,
        profile=profile,
        entries=entries,
        tasks=len(tasks),
        final=final_path(args.out, suite),
    )


def fill(
    args: argparse.Namespace, shards: Shards, staging: Staging, kind: str, nodes: list[str]
) -> FleetPlan:
    """Stage the models and plan the tasks in the staging directory; the plan."""
    from harness.config import as_profile
    from harness.fleet.plan import FleetPlan, plan_tasks
    from harness.fleet.staging import stage_models

    staged = stage_models(staging.work, shards.entries)
    replicas = 1 if nodes else args.nodes
    tasks: tuple[TaskSpec, ...] = plan_tasks(
        staged, shard_by=args.shard, nodes=nodes, replicas=replicas
    )
    return FleetPlan(
        kind="slurm" if kind == "slurm" else "k8s",
        suite=shards.suite,
        hw=args.hw,
        profile=as_profile(shards.profile),
        runner=getattr(args, "runner", "local"),
        image=args.image,
        shard_by=args.shard,
        tasks=tasks,
    )


def slurm_options(args: argparse.Namespace) -> tuple[SlurmOptions, list[str], list[str]]:
    """The sbatch options, the pinned nodes and the harness command, each checked."""
    from harness.fleet import slurm
    from harness.fleet.grammar import check_harness, check_image, check_path, expand_nodelist

    nodes = [] if args.nodelist is None else expand_nodelist("--nodelist", args.nodelist)
    if args.image is not None:
        check_image("--image", args.image)
    check_path("--out", str(args.out.absolute()), sbatch=True)
    harness_cmd = (
        check_harness(args.harness) if args.harness else [sys.executable, "-m", "harness.cli"]
    )
    gpus = args.gpus_per_node
    if gpus is None and args.hw != "cpu":
        gpus = 1
    options = slurm.SlurmOptions(
        partition=args.partition,
        time_min=args.time,
        account=args.account,
        gpus_per_node=gpus,
        extra=tuple(args.sbatch),
    )
    return options, nodes, harness_cmd


def plan_slurm(args: argparse.Namespace) -> Path:
    """Plan a Slurm fleet and submit it (or, with --dry-run, print its script); its path."""
    from harness.fleet import slurm
    from harness.fleet.plan import write_plan
    from harness.fleet.staging import planned

    options, nodes, harness_cmd = slurm_options(args)
    shards = resolve(args, nodes, 1 if nodes else args.nodes)
    with planned(shards.final) as staging:
        plan = fill(args, shards, staging, "slurm", nodes)
        fleet = staging.final
        script = slurm.render_script(fleet, plan, options, harness_cmd)
        submissions = slurm.plan_submissions(plan)
        scheduler = {"partition": args.partition, "time_min": args.time, "submissions": []}
        plan = dataclasses.replace(plan, scheduler=scheduler)
        write_plan(staging.work, plan)
        slurm.write_scripts(staging.work, fleet, script, submissions)
    if args.dry_run:
        print(script, end="")
        print(f"# not submitted; to submit: sh {fleet / slurm.SUBMIT_FILE}", file=sys.stderr)
        return fleet
    _submit(fleet, plan, submissions)
    return fleet


def _submit(fleet: Path, plan: FleetPlan, submissions: list[Submission]) -> None:
    """Each array with sbatch; fleet.json records each job ID as it is made."""
    from harness.fleet import slurm
    from harness.fleet.plan import save_plan

    scheduler = dict(plan.scheduler)
    for number, submission in enumerate(submissions):
        try:
            (done,) = slurm.submit(fleet, [submission])
        except SchedulerError as exc:
            left = "" if number == 0 else f" ({number} of {len(submissions)} arrays submitted)"
            raise SchedulerError(
                f"{exc}{left}; the fleet is planned: its sbatch lines are in "
                f"{fleet / slurm.SUBMIT_FILE}"
            ) from None
        scheduler["submissions"] = [
            *scheduler["submissions"],
            {"job_id": done.job_id, "indices": list(done.indices), "node": done.node},
        ]
        save_plan(fleet, dataclasses.replace(plan, scheduler=scheduler))  # each, as it is made
        where = f" on {done.node}" if done.node else ""
        print(f"submitted job {done.job_id}: tasks {slurm.array_spec(done.indices)}{where}")


def plan_k8s(args: argparse.Namespace) -> Path:
    """Plan a Kubernetes fleet and write its Job (and, with --apply, create it); its path."""
    from harness.files import atomic_write_text
    from harness.fleet.grammar import check_image, check_path
    from harness.fleet.k8s.cluster import apply_job
    from harness.fleet.k8s.job import build_job, manifest_yaml
    from harness.fleet.k8s.spec import ResultsVolume, dns_label_like
    from harness.fleet.k8s.validate import validate_manifest
    from harness.fleet.plan import save_plan, write_plan
    from harness.fleet.staging import planned

    for option in ("--host-path", "--mount-path"):
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None:
            check_path(option, value)
    check_image("--image", args.image)
    volume = ResultsVolume(claim=args.claim, host_path=args.host_path, mount_path=args.mount_path)
    args.runner = "local"  # in a pod, workers run in the pod's own image
    shards = resolve(args, [], args.nodes)
    fleet = shards.final
    name = dns_label_like(f"bt-{fleet.name}")
    spec = _job_spec(
        args, volume, name, f"{args.mount_path.rstrip('/')}/{fleet.name}", shards.tasks
    )
    job = build_job(spec)
    text = manifest_yaml(job)
    manifest = fleet / "job.yaml"
    validate_manifest(text, where=str(manifest))
    scheduler = {"namespace": args.namespace, "job": name, "applied": False}
    with planned(fleet) as staging:
        plan = dataclasses.replace(fill(args, shards, staging, "k8s", []), scheduler=scheduler)
        write_plan(staging.work, plan)
        atomic_write_text(staging.work / manifest.name, text)
    if args.dry_run or not args.apply:
        print(text, end="")
        print(f"# not applied; to apply: kubectl apply -f {manifest}", file=sys.stderr)
        return fleet
    try:
        created = apply_job(job, namespace=args.namespace, kubeconfig=args.kubeconfig)
    except SchedulerError as exc:
        raise SchedulerError(f"{exc}; the fleet is planned: kubectl apply -f {manifest}") from None
    save_plan(fleet, dataclasses.replace(plan, scheduler={**scheduler, "applied": True}))
    print(f"created Job {created} in namespace {args.namespace}")
    return fleet


def _job_spec(
    args: argparse.Namespace, volume: ResultsVolume, name: str, fleet_dir: str, tasks: int
) -> K8sJobSpec:
    from harness.fleet.k8s.spec import K8sJobSpec

    return K8sJobSpec(
        name=name,
        namespace=args.namespace,
        image=args.image,
        hw=args.hw,
        completions=tasks,
        parallelism=tasks if args.parallelism is None else args.parallelism,
        fleet_dir=fleet_dir,
        volume=volume,
        gpus=args.gpus,
        cpu=args.cpu,
        memory=args.memory,
        backoff_limit=args.backoff_limit,
        node_selector=selector(args.node_selector),
    )


def selector(pairs: list[str]) -> dict[str, str] | None:
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
