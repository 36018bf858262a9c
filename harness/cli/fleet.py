"""`harness fleet`: one suite across many machines through Slurm or Kubernetes, then merged.

slurm and k8s plan a fleet directory (one task file per shard) and hand it to the scheduler;
`task` is what each array task or pod runs; `status` and `collect` read every task's state
and results back from the shared directory; `cancel` stops a Slurm fleet's tasks.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from harness.cli.measure import add_label_option
from harness.config import PRECISIONS, PROFILES
from harness.errors import FLEET_INCOMPLETE

P = TypeVar("P", bound=argparse.ArgumentParser)

if TYPE_CHECKING:
    from harness.fleet.launch import Launched
    from harness.fleet.state import TaskStatus

POLL_S = 5.0  # seconds between polls with --wait


def add_fleet_verb(verbs: argparse._SubParsersAction[P]) -> None:
    """`harness fleet slurm|k8s|task|status|collect|cancel`."""
    fleet = verbs.add_parser(
        "fleet",
        help="run a suite across many machines through Slurm or Kubernetes, and merge it",
        description="Plans a fleet directory on a filesystem the nodes share (one task file "
        "per shard), submits it to the scheduler you have, and merges every task's results "
        f"into one comparison. status/collect exit {FLEET_INCOMPLETE.code} when a task did not "
        "complete.",
    )
    actions = fleet.add_subparsers(dest="fleet_action", required=True, metavar="ACTION")
    _slurm_parser(actions)
    _k8s_parser(actions)
    task = actions.add_parser("task", help="run one task of a fleet here (what each node runs)")
    task.add_argument("fleet_dir", type=Path, metavar="FLEET", help="the fleet directory")
    task.add_argument(
        "--index",
        type=int,
        help="the task (default: SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)",
    )
    task.set_defaults(func=_task)
    status = actions.add_parser("status", help="each task's state and log")
    status.add_argument("fleet_dir", type=Path, metavar="FLEET", help="the fleet directory")
    _wait_options(status)
    status.set_defaults(func=_status)
    collect = actions.add_parser(
        "collect", help="merge every task's results: a table, findings and a report"
    )
    collect.add_argument("fleet_dir", type=Path, metavar="FLEET", help="the fleet directory")
    _wait_options(collect)
    collect.set_defaults(func=_collect)
    cancel = actions.add_parser("cancel", help="cancel a Slurm fleet's tasks (scancel)")
    cancel.add_argument("fleet_dir", type=Path, metavar="FLEET", help="the fleet directory")
    cancel.add_argument("--task", type=int, action="append", help="only this task (repeatable)")
    cancel.set_defaults(func=_cancel)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", help="a suite name (scenarios/NAME.yaml) or a suite file")
    parser.add_argument("--hw", default="cpu", help="hardware target (default: cpu)")
    parser.add_argument("--profile", choices=PROFILES, help="default: the suite's")
    parser.add_argument(
        "--precision", help=f"run at these precisions, e.g. fp32,int8 ({', '.join(PRECISIONS)})"
    )
    parser.add_argument("--providers", help="run on this part of the target's provider chain")
    parser.add_argument("--trials", type=int, help="trials per scenario (default: as bench)")
    parser.add_argument(
        "--shard",
        choices=("scenario", "node"),
        default="scenario",
        help="one task per node x scenario x precision (scenario, default), or one per node "
        "running the whole suite (node)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="a directory every node sees at the same path (Slurm: a shared filesystem; "
        "Kubernetes: this machine's view of the results volume); the fleet directory goes in it",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="write the fleet directory and print what would be submitted; submit nothing",
    )
    add_label_option(parser, "every run's")


def _slurm_parser(actions: argparse._SubParsersAction[P]) -> None:
    slurm = actions.add_parser("slurm", help="submit the suite as a Slurm job array")
    _common(slurm)
    slurm.add_argument("--partition", required=True, help="the Slurm partition")
    where = slurm.add_mutually_exclusive_group()
    where.add_argument(
        "--nodes", type=int, default=1, help="copies of each shard, placed by Slurm (default 1)"
    )
    where.add_argument("--nodelist", help="pin shards to these nodes: a,b,c (one array each)")
    slurm.add_argument(
        "--image", help="run workers in this image where the node has Docker (runner auto)"
    )
    slurm.add_argument(
        "--runner",
        choices=("auto", "local", "docker"),
        default="auto",
        help="auto (default): the image where the node's Docker answers, else the node's "
        "install; docker: the image or fail; local: the node's install",
    )
    slurm.add_argument("--time", type=int, default=60, help="minutes per task (default 60)")
    slurm.add_argument("--account", help="the Slurm account to charge")
    slurm.add_argument("--gpus-per-node", type=int, help="GPUs per task (GPU targets: 1)")
    slurm.add_argument(
        "--sbatch", action="append", default=[], help="one more sbatch option, e.g. --qos=high"
    )
    slurm.add_argument(
        "--harness",
        help="the command nodes run harness with (default: this install's python -m "
        "harness.cli, which must be at the same path on the nodes)",
    )
    slurm.add_argument(
        "--wait", action="store_true", help="follow the tasks until they end, then collect"
    )
    slurm.add_argument("--interval", type=float, default=POLL_S, help="seconds between polls")
    slurm.set_defaults(func=_slurm)


def _k8s_parser(actions: argparse._SubParsersAction[P]) -> None:
    k8s = actions.add_parser("k8s", help="write (and --apply) an Indexed Kubernetes Job")
    _common(k8s)
    k8s.add_argument("--image", required=True, help="the harness image the pods run")
    k8s.add_argument("--namespace", default="default", help="the Job's namespace")
    k8s.add_argument("--nodes", type=int, default=1, help="copies of each shard (default 1)")
    volume = k8s.add_mutually_exclusive_group(required=True)
    volume.add_argument("--claim", help="the results PersistentVolumeClaim (ReadWriteMany)")
    volume.add_argument("--host-path", help="the results directory on every node")
    k8s.add_argument("--mount-path", default="/results", help="where pods mount the volume")
    k8s.add_argument("--parallelism", type=int, help="pods at once (default: every shard)")
    k8s.add_argument("--cpu", help="CPU request = limit per pod, e.g. 8 (Guaranteed QoS)")
    k8s.add_argument("--memory", help="memory request = limit per pod, e.g. 32Gi")
    k8s.add_argument("--gpus", type=int, default=1, help="GPUs per pod for nvidia/rocm")
    k8s.add_argument("--backoff-limit", type=int, default=0, help="retries of a failed index")
    k8s.add_argument(
        "--node-selector",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="schedule on nodes with this label (repeatable; default: the target's GPU label)",
    )
    k8s.add_argument("--kubeconfig", help="with --apply: this kubeconfig (default: KUBECONFIG)")
    k8s.add_argument("--apply", action="store_true", help="create the Job through the API")
    k8s.set_defaults(func=_k8s)


def _wait_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true", help="poll until every task has ended")
    parser.add_argument("--interval", type=float, default=POLL_S, help="seconds between polls")


def _slurm(args: argparse.Namespace) -> int:
    from harness.cli.fleet_plan import slurm_request
    from harness.fleet.follow import follow
    from harness.fleet.launch import launch_slurm

    launched = launch_slurm(slurm_request(args), say=print)
    fleet = _planned(launched, ("submitted", "submit"))
    if args.wait and not args.dry_run:
        follow(fleet, args.interval, say=_flushed, note=_note)
        code = _write_collection(fleet)
        print(fleet)
        return code
    print(fleet)
    return 0


def _k8s(args: argparse.Namespace) -> int:
    from harness.cli.fleet_plan import k8s_request
    from harness.fleet.launch import launch_k8s

    print(_planned(launch_k8s(k8s_request(args), say=print), ("applied", "apply")))
    return 0


def _planned(launched: Launched, words: tuple[str, str]) -> Path:
    """The fleet's path; where nothing was handed on, its script (stdout) and how (stderr)."""
    if launched.unsent is not None:
        print(launched.unsent, end="")
        print(f"# not {words[0]}; to {words[1]}: {launched.how}", file=sys.stderr)
    return launched.fleet


def _flushed(line: str) -> None:
    print(line, flush=True)


def _note(line: str) -> None:
    print(line, file=sys.stderr)


def _task(args: argparse.Namespace) -> int:
    from harness.fleet.placement import task_index
    from harness.fleet.task import run_task

    return run_task(args.fleet_dir, task_index(args.index))


def _print_status(statuses: list[TaskStatus]) -> None:
    from harness.fleet.state import summary_line

    for s in statuses:
        log = "" if s.log is None else f"  log {s.log}"
        detail = f" ({s.detail})" if s.detail else ""
        print(f"task {s.index:>3} {s.state:<13} {s.node or '-':<12} {s.label}{detail}{log}")
    print(summary_line(statuses))


def _status(args: argparse.Namespace) -> int:
    from harness.fleet.follow import follow, statuses

    if args.wait:
        follow(args.fleet_dir, args.interval, say=_flushed, note=_note)
    _, found = statuses(args.fleet_dir, _note)
    _print_status(found)
    return 0 if all(s.good for s in found) else FLEET_INCOMPLETE.code


def _collect(args: argparse.Namespace) -> int:
    from harness.fleet.follow import follow

    if args.wait:
        follow(args.fleet_dir, args.interval, say=_flushed, note=_note)
    return _write_collection(args.fleet_dir)


def _write_collection(fleet: Path) -> int:
    from harness.fleet.collect import merge, render_markdown, write_merged
    from harness.fleet.follow import statuses

    merged = merge(fleet, *statuses(fleet, _note))
    markdown, data = write_merged(merged)
    print(render_markdown(merged), end="")
    if merged.groups:
        from harness.cli.inspection import _check_out_dir, _write_report
        from harness.inspect.trust import trust_of

        out = fleet / "report"
        if out.exists():
            out = fleet / f"report-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        _check_out_dir(out)
        _write_report(out, [(g, trust_of(g)) for g in merged.groups])
    print(markdown)
    print(data)
    return 0 if all(s.good for s in merged.statuses) else FLEET_INCOMPLETE.code


def _cancel(args: argparse.Namespace) -> int:
    from harness.fleet import slurm
    from harness.fleet.follow import task_ids
    from harness.fleet.plan import read_plan

    plan = read_plan(args.fleet_dir)
    ids = task_ids(args.fleet_dir, plan, frozenset(args.task or []))
    slurm.cancel(ids)
    print(f"cancelled {len(ids)} task(s)")
    return 0
