"""Slurm: the sbatch script, its submission as job arrays, and each array task's state.

Written against Slurm's command-line tools (sbatch, squeue, scontrol, sacct), which every
cluster has, rather than a library: submitit pickles Python callables into scripts a person
cannot read or resubmit by hand, and it learns a job's end only from `sacct`, so without
slurmdbd it waits for ever on a job that died (seen on a single-node cluster); pyslurm must
be compiled against the cluster's own libslurm version. A task's state is read from squeue
while it is queued or running, from `scontrol show job` while slurmctld remembers it
(MinJobAge, 300 s by default), then from `sacct` (accounting) or jobcomp/filetxt's log.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError, SchedulerError
from harness.files import atomic_write_text
from harness.fleet.grammar import (
    check_name,
    check_path,
    check_sbatch_option,
    check_suite_name,
    log_pattern,
    sbatch_quote,
)
from harness.fleet.plan import FleetPlan
from harness.fleet.state import SchedulerView
from harness.records.layout import LOGS_DIR

SCRIPT_FILE = "fleet.sbatch"
SUBMIT_FILE = "submit.sh"
DEFAULT_TIME_MIN = 60
COMMAND_TIMEOUT_S = 60
# States in which a task may still change; everything else is where it ended.
ACTIVE_STATES = frozenset(
    {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
)
ENDED_STATES = ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL")

Run = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True, kw_only=True)
class SlurmOptions:
    """What the sbatch script asks of Slurm; each value checked by fleet.grammar."""

    partition: str | None
    time_min: int = DEFAULT_TIME_MIN
    account: str | None = None
    gpus_per_node: int | None = None  # for GPU targets; --exclusive alone gives no GRES
    exclusive: bool = True  # a benchmark shares its node with nothing
    extra: tuple[str, ...] = ()  # more `#SBATCH` options, as given (e.g. --constraint=h200)

    def __post_init__(self) -> None:
        if self.time_min < 1:
            raise ConfigError(f"--time: whole minutes >= 1, got {self.time_min}")
        if self.gpus_per_node is not None and self.gpus_per_node < 1:
            raise ConfigError(f"--gpus-per-node: must be >= 1, got {self.gpus_per_node}")
        if self.partition is not None:
            check_name("--partition", self.partition, "a partition name")
        if self.account is not None:
            check_name("--account", self.account, "an account name")
        for option in self.extra:
            check_sbatch_option(option)


@dataclass(frozen=True, kw_only=True)
class Submission:
    """One sbatch call: an array over some task indices, pinned to a node or not."""

    indices: tuple[int, ...]
    node: str | None
    job_id: str | None = None  # the array's job ID, once submitted

    def command(self, script: Path) -> list[str]:
        """The sbatch command line that submits it."""
        command = ["sbatch", "--parsable", f"--array={array_spec(self.indices)}"]
        if self.node is not None:
            command.append(f"--nodelist={check_name('--nodelist', self.node, 'a node name')}")
        return [*command, str(script)]


@dataclass(frozen=True, kw_only=True)
class TaskState:
    """What Slurm says of one array task."""

    state: str  # COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, CANCELLED, RUNNING, PENDING, ...
    node: str | None
    exit_code: str | None  # Slurm's "code:signal"
    reason: str | None  # why it is pending, or Slurm's reason for the end
    source: str  # squeue, scontrol, sacct or jobcomp

    @property
    def ended(self) -> bool:
        """Whether it can no longer change."""
        return self.state not in ACTIVE_STATES


def render_script(
    fleet: Path, plan: FleetPlan, options: SlurmOptions, harness: Sequence[str]
) -> str:
    """The sbatch script every array task runs: readable, and resubmittable by hand.

    Every value in it was checked by fleet.grammar, and is quoted all the same: with
    sbatch_quote in `#SBATCH` lines (which sbatch splits itself), shlex in shell lines.
    """
    _check_values(fleet, plan, harness)
    tasks = shlex.quote(str(fleet / "tasks"))
    lines = [
        "#!/bin/bash",
        f"# beyond-tops fleet {shlex.quote(fleet.name)}: suite {plan.suite} on {plan.hw}, "
        f"{len(plan.tasks)} task(s), one per {_shard_words(plan)}.",
        f"# Each array task runs `harness fleet task` for its index: {tasks}/NNN/task.json.",
        f"# Submitted by {SUBMIT_FILE} beside this file; resubmit one task by hand with",
        f"#   sbatch --array=INDEX [--nodelist=NODE] {shlex.quote(str(fleet / SCRIPT_FILE))}",
        *_directives(fleet, plan, options),
        "set -euo pipefail",
        f"exec {shlex.join([*harness, 'fleet', 'task', str(fleet)])}",
        "",
    ]
    return "\n".join(lines)


def _directives(fleet: Path, plan: FleetPlan, options: SlurmOptions) -> list[str]:
    """The `#SBATCH` block: one option a line, each value one sbatch word."""
    pairs: list[tuple[str, str | None]] = [("--job-name", f"beyond-tops-{plan.suite}")]
    pairs += [("--partition", options.partition), ("--account", options.account)]
    pairs += [("--nodes", "1"), ("--ntasks", "1")]
    lines = [f"#SBATCH {name}={sbatch_quote(value)}" for name, value in pairs if value]
    if options.exclusive:
        lines.append("#SBATCH --exclusive")
    lines.append(f"#SBATCH --time={options.time_min}")
    if options.gpus_per_node is not None:
        lines.append(f"#SBATCH --gpus-per-node={options.gpus_per_node}")
    lines += [f"#SBATCH {check_sbatch_option(option)}" for option in options.extra]
    output = log_pattern(str(fleet / LOGS_DIR))
    return [*lines, f"#SBATCH --output={sbatch_quote(output)}", "#SBATCH --open-mode=append"]


def _check_values(fleet: Path, plan: FleetPlan, harness: Sequence[str]) -> None:
    """Every value the script holds, against its grammar (again: defence in depth)."""
    check_path("fleet directory", str(fleet), sbatch=True)
    check_suite_name("the suite", plan.suite)
    check_name("--hw", plan.hw, "a hardware target")
    for word in harness:
        check_path("--harness", word, sbatch=True)
    for task in plan.tasks:
        if task.node is not None:
            check_name("--nodelist", task.node, "a node name")


def plan_submissions(plan: FleetPlan) -> list[Submission]:
    """One array per pinned node (sbatch pins a whole job, not its tasks), else one array."""
    by_node: dict[str | None, list[int]] = {}
    for task in plan.tasks:
        by_node.setdefault(task.node, []).append(task.index)
    return [Submission(indices=tuple(ix), node=node) for node, ix in by_node.items()]


def render_submit(fleet: Path, submissions: Sequence[Submission]) -> str:
    """submit.sh: the sbatch lines, as `harness fleet slurm` runs them, each word quoted."""
    script = fleet / SCRIPT_FILE
    check_path("fleet directory", str(fleet), sbatch=True)
    lines = [
        "#!/bin/sh",
        "# The submissions of this fleet, one sbatch per array; rerun to resubmit.",
        "set -e",
    ]
    lines += [shlex.join(s.command(script)) for s in submissions]
    return "\n".join(lines) + "\n"


def write_scripts(
    directory: Path, fleet: Path, script: str, submissions: Sequence[Submission]
) -> None:
    """fleet.sbatch and submit.sh into `directory` (the fleet `fleet`, or its staging)."""
    for name, text in ((SCRIPT_FILE, script), (SUBMIT_FILE, render_submit(fleet, submissions))):
        atomic_write_text(directory / name, text)
        (directory / name).chmod(0o755)


def submit(
    fleet: Path, submissions: Sequence[Submission], run: Run | None = None
) -> list[Submission]:
    """Submit each array with sbatch; the submissions with their job IDs."""
    run = run or _run
    done = []
    for submission in submissions:
        result = _call(run, submission.command(fleet / SCRIPT_FILE))
        job_id = result.stdout.strip().split(";")[0]
        if not job_id.isdigit():
            raise SchedulerError(f"sbatch answered {result.stdout.strip()!r}, not a job ID")
        done.append(Submission(indices=submission.indices, node=submission.node, job_id=job_id))
    return done


def cancel(job_ids: Iterable[str], run: Run | None = None) -> None:
    """Scancel the given job or array task IDs (`123` or `123_4`)."""
    ids = list(job_ids)
    if ids:
        _call(run or _run, ["scancel", *ids])


def query(job_ids: Sequence[str], run: Run | None = None) -> dict[tuple[str, int], TaskState]:
    """Each array task's state, keyed by (array job ID, task index), from what Slurm knows."""
    run = run or _run
    states: dict[tuple[str, int], TaskState] = {}
    if not job_ids:
        return states
    states.update(_squeue(job_ids, run))
    states.update({k: v for k, v in _scontrol(job_ids, run).items() if k not in states})
    missing = [j for j in job_ids if not any(k[0] == j for k in states)]
    if missing:
        for key, value in _sacct(missing, run).items():
            states.setdefault(key, value)
    return states


def _squeue(job_ids: Sequence[str], run: Run) -> dict[tuple[str, int], TaskState]:
    result = run(["squeue", "-h", "-r", "-j", ",".join(job_ids), "-o", "%F|%K|%T|%N|%r"])
    states = {}
    for line in result.stdout.splitlines() if result.returncode == 0 else []:
        parts = line.strip().split("|")
        if len(parts) != 5 or not parts[1].isdigit():
            continue
        states[(parts[0], int(parts[1]))] = TaskState(
            state=parts[2],
            node=parts[3] or None,
            exit_code=None,
            reason=None if parts[4] in ("None", "") else parts[4],
            source="squeue",
        )
    return states


_FIELD = re.compile(r"(\w+)=(\S*)")


def _scontrol(job_ids: Sequence[str], run: Run) -> dict[tuple[str, int], TaskState]:
    states = {}
    for job_id in job_ids:
        result = run(["scontrol", "-o", "show", "job", job_id])
        for line in result.stdout.splitlines() if result.returncode == 0 else []:
            fields = dict(_FIELD.findall(line))
            task = fields.get("ArrayTaskId", "")
            if not task.isdigit():
                continue  # a pending array's "0-2": squeue listed those one by one
            array = fields.get("ArrayJobId") or fields.get("JobId", job_id)
            states[(array, int(task))] = TaskState(
                state=fields.get("JobState", "UNKNOWN"),
                node=_node(fields.get("NodeList")),
                exit_code=fields.get("ExitCode"),
                reason=None if fields.get("Reason") in (None, "None") else fields.get("Reason"),
                source="scontrol",
            )
    return states


def _sacct(job_ids: Sequence[str], run: Run) -> dict[tuple[str, int], TaskState]:
    """Accounting (slurmdbd), else the jobcomp/filetxt log, for jobs slurmctld has forgotten."""
    fields = ["-n", "-P", "-X", "-j", ",".join(job_ids), "-o", "JobID,State,ExitCode,NodeList"]
    result = run(["sacct", *fields])
    if result.returncode != 0:  # "Slurm accounting storage is disabled"
        return _jobcomp(job_ids, run)
    states = {}
    for line in result.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or "_" not in parts[0]:
            continue
        array, _, task = parts[0].partition("_")
        if not task.isdigit():
            continue
        states[(array, int(task))] = TaskState(
            state=parts[1].split()[0],  # "CANCELLED by 0"
            node=_node(parts[3]),
            exit_code=parts[2] or None,
            reason=None,
            source="sacct",
        )
    return states


def _jobcomp(job_ids: Sequence[str], run: Run) -> dict[tuple[str, int], TaskState]:
    """Array tasks from jobcomp/filetxt's log, read directly.

    `sacct -c` (22.05) cannot select array tasks: it prints each task's own job ID, matches
    `-j ARRAY` to the last task only and complains "Unknown type ArrayJobId"; the log's lines
    carry ArrayJobId= and ArrayTaskId=. A job ID can recur after slurmctld's state is reset:
    the last line wins.
    """
    config = dict(_SETTING.findall(run(["scontrol", "show", "config"]).stdout))
    path = Path(config.get("JobCompLoc", ""))
    if config.get("JobCompType") != "jobcomp/filetxt" or not path.is_file():
        return {}
    wanted = set(job_ids)
    states = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}  # on a login node the controller's log may not be readable
    for line in lines:
        fields = dict(_FIELD.findall(line))
        array, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId", "")
        if array in wanted and task.isdigit():
            states[(str(array), int(task))] = TaskState(
                state=fields.get("JobState", "UNKNOWN"),
                node=_node(fields.get("NodeList")),
                exit_code=fields.get("ExitCode"),
                reason=None,
                source="jobcomp",
            )
    return states


_SETTING = re.compile(r"^(\w+)\s*=\s*(\S*)", re.MULTILINE)


def _node(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "None assigned") else value


def array_spec(indices: Sequence[int]) -> str:
    """Slurm's --array syntax for `indices`: runs as ranges, "0-2,5,7-8"."""
    ordered = sorted(set(indices))
    parts: list[str] = []
    start = prev = ordered[0]
    for index in [*ordered[1:], None]:
        if index is not None and index == prev + 1:
            prev = index
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if index is not None:
            start = prev = index
    return ",".join(parts)


def _shard_words(plan: FleetPlan) -> str:
    place = "pinned node" if any(t.node for t in plan.tasks) else "copy"
    return f"{place} x scenario" if plan.shard_by == "scenario" else f"{place} (whole suite)"


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    if shutil.which(command[0]) is None:
        raise SchedulerError(
            f"{command[0]}: not found; run on a Slurm login node, or install Slurm's client tools"
        )
    try:
        return subprocess.run(
            list(command), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise SchedulerError(
            f"{command[0]}: no answer in {COMMAND_TIMEOUT_S} s; is slurmctld up (`scontrol ping`)?"
        ) from None


def _call(run: Run, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    result = run(command)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        last = re.sub(r"^\w+: error: ", "", last)  # "sbatch: error: ...": one error line
        raise SchedulerError(f"{shlex.join(command)}: {last}")
    return result


def views(job_ids: list[str], run: Run | None = None) -> dict[tuple[str, int], SchedulerView]:
    """What Slurm says of each array task of `job_ids`, as the fleet's status reads it."""
    found = {}
    for (job, index), task in query(job_ids, run).items():
        details = []
        if task.exit_code not in (None, "0:0"):
            details.append(f"exit {task.exit_code}")
        if task.reason:
            details.append(task.reason)
        found[(job, index)] = SchedulerView(
            state=task.state,
            node=task.node,
            detail=", ".join(details) or None,
            source=task.source,
            job_id=job,
        )
    return found
