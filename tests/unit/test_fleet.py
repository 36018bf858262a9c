"""Fleet planning, Slurm's scripts and answers, placements and task states (no scheduler)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import load_scenario
from harness.errors import ConfigError, ResultError, SchedulerError
from harness.fleet import slurm
from harness.fleet.placement import placement_from, task_index
from harness.fleet.plan import (
    Entry,
    FleetPlan,
    plan_tasks,
    read_plan,
    read_task,
    task_dir,
    write_plan,
)
from harness.fleet.scheduled import K8sScheduler, SlurmScheduler, Submitted
from harness.fleet.staging import final_path, planned, stage_models
from harness.fleet.state import SchedulerView, fleet_status, summary_line
from tests.conftest import TINY_OFFLINE, TINY_SS


def _entry(tmp_path: Path, text: str, name: str) -> Entry:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return Entry(scenario=load_scenario(path), scenario_path=str(path), trials=2)


@pytest.fixture
def entries(tmp_path: Path) -> list[Entry]:
    return [_entry(tmp_path, TINY_SS, "ss"), _entry(tmp_path, TINY_OFFLINE, "off")]


def create_fleet_dir(out: Path, suite: str) -> Path:
    """An empty fleet directory, made as `harness fleet slurm|k8s` makes one."""
    final = final_path(out, suite)
    with planned(final):
        pass
    return final


def _plan(entries: Sequence[Entry], **kw: object) -> FleetPlan:
    tasks = plan_tasks(entries, shard_by=kw.pop("shard_by", "scenario"), **kw)  # type: ignore[arg-type]
    return FleetPlan(
        kind="slurm",
        suite="t",
        hw="cpu",
        profile="quick",
        runner="local",
        image=None,
        shard_by="scenario",
        tasks=tasks,
    )


def test_shards_per_node_and_scenario_or_per_node(entries: list[Entry]) -> None:
    tasks = plan_tasks(entries, shard_by="scenario", nodes=["a", "b"])
    assert [(t.index, t.node, t.entries[0].scenario.name) for t in tasks] == [
        (0, "a", "tiny-ss-test"),
        (1, "a", "tiny-offline-test"),
        (2, "b", "tiny-ss-test"),
        (3, "b", "tiny-offline-test"),
    ]
    whole = plan_tasks(entries, shard_by="node", replicas=3)
    assert [(t.node, t.replica, len(t.entries)) for t in whole] == [
        (None, 1, 2),
        (None, 2, 2),
        (None, 3, 2),
    ]
    assert whole[1].label == "tiny-ss-test+tiny-offline-test #2"


def test_a_node_named_twice_or_no_scenario_is_refused(entries: list[Entry]) -> None:
    with pytest.raises(ConfigError, match="--nodelist: names a node twice"):
        plan_tasks(entries, shard_by="scenario", nodes=["a", "a"])
    with pytest.raises(ConfigError, match="names no scenario"):
        plan_tasks([], shard_by="scenario")


def test_plan_and_task_files_round_trip_with_staged_models(
    tmp_path: Path, entries: list[Entry]
) -> None:
    model = tmp_path / "net.onnx"
    model.write_bytes(b"model bytes")
    by_path = _entry(
        tmp_path, TINY_SS.replace("model: {zoo: tiny}", f"model: {{path: {model}}}"), "p"
    )
    fleet = create_fleet_dir(tmp_path / "out", "t")
    staged = stage_models(fleet, [*entries, by_path, by_path])
    assert staged[2].scenario.model.path == staged[3].scenario.model.path
    relative = str(staged[2].scenario.model.path)
    assert relative.startswith("models/") and relative.endswith("/net.onnx")
    assert (fleet / relative).read_bytes() == b"model bytes"
    plan = _plan(staged, nodes=["n1"])
    write_plan(fleet, plan)
    assert read_plan(fleet).tasks == plan.tasks
    task = read_task(fleet, 2)
    assert task.entries[0].scenario.model.path == str(fleet / relative)  # as this node sees it
    assert task.entries[0].trials == 2 and task.hw == "cpu"


def test_a_missing_model_or_damaged_fleet_file_is_one_line(tmp_path: Path) -> None:
    gone = _entry(
        tmp_path, TINY_SS.replace("model: {zoo: tiny}", "model: {path: /no/such.onnx}"), "g"
    )
    fleet = create_fleet_dir(tmp_path / "out", "t")
    with pytest.raises(ConfigError, match=r"model.path: /no/such.onnx is not a file"):
        stage_models(fleet, [gone])
    (fleet / "fleet.json").write_text("{not json")
    with pytest.raises(ResultError, match=r"fleet.json: not a readable JSON fleet file"):
        read_plan(fleet)
    (fleet / "fleet.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(
        ResultError,
        match=r"schema_version 99 was written by a newer beyond-tops \(this one reads 1\); upgrade",
    ):
        read_plan(fleet)
    with pytest.raises(ResultError, match="no such task file"):
        read_task(fleet, 5)


def test_array_spec_compresses_runs() -> None:
    assert slurm.array_spec([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert slurm.array_spec([3]) == "3"


def test_the_script_asks_for_whole_nodes_and_runs_the_task(
    tmp_path: Path, entries: list[Entry]
) -> None:
    plan = _plan(entries, nodes=["a", "b"])
    options = slurm.SlurmOptions(
        partition="gpu", time_min=30, gpus_per_node=2, account="lab", extra=("--qos=high",)
    )
    script = slurm.render_script(tmp_path, plan, options, ["/opt/bt/bin/harness"])
    for line in (
        "#SBATCH --partition=gpu",
        "#SBATCH --account=lab",
        "#SBATCH --exclusive",
        "#SBATCH --time=30",
        "#SBATCH --gpus-per-node=2",
        "#SBATCH --qos=high",
        f"#SBATCH --output={tmp_path}/logs/%A_%a.out",
        f"exec /opt/bt/bin/harness fleet task {tmp_path}",
    ):
        assert line in script.splitlines()
    submissions = slurm.plan_submissions(plan)
    assert [(s.node, s.indices) for s in submissions] == [("a", (0, 1)), ("b", (2, 3))]
    assert submissions[1].command(tmp_path / "fleet.sbatch") == [
        "sbatch",
        "--parsable",
        "--array=2-3",
        "--nodelist=b",
        str(tmp_path / "fleet.sbatch"),
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"time_min": 0}, "--time: whole minutes >= 1"),
        ({"gpus_per_node": 0}, "--gpus-per-node: must be >= 1"),
        ({"extra": ("qos=high",)}, "--sbatch: 'qos=high' is not one sbatch option"),
    ],
)
def test_bad_slurm_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        slurm.SlurmOptions(partition="p", **kwargs)  # type: ignore[arg-type]


def _answers(table: dict[str, tuple[int, str, str]]) -> slurm.Run:
    """A fake of Slurm's tools: the first key that the command line starts with answers."""

    def run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        line = " ".join(command)
        for prefix, (code, out, err) in table.items():
            if line.startswith(prefix):
                return subprocess.CompletedProcess(list(command), code, out, err)
        return subprocess.CompletedProcess(list(command), 1, "", "Invalid job id specified")

    return run


JOBCOMP = (
    "JobId=30 UserId=root(0) GroupId=root(0) Name=bt JobState=COMPLETED Partition=debug "
    "NodeList=node1 NodeCnt=1 ArrayJobId=30 ArrayTaskId=0 DerivedExitCode=0:0 ExitCode=0:0 \n"
    "JobId=31 UserId=root(0) Name=bt JobState=CANCELLED Partition=debug NodeList=(null) "
    "ArrayJobId=30 ArrayTaskId=1 DerivedExitCode=0:0 ExitCode=0:0 \n"
    "JobId=29 UserId=root(0) Name=other JobState=FAILED NodeList=node2 ExitCode=3:0 \n"
)


def test_states_come_from_squeue_then_scontrol_then_the_jobcomp_log(tmp_path: Path) -> None:
    log = tmp_path / "jobcomp.txt"
    log.write_text(JOBCOMP)
    run = _answers(
        {
            "squeue": (0, "41|3|RUNNING|node7|None\n41|4|PENDING||Resources\n", ""),
            "scontrol -o show job 41": (
                0,
                "JobId=42 ArrayJobId=41 ArrayTaskId=0 JobName=bt JobState=COMPLETED "
                "Reason=None ExitCode=0:0 ReqNodeList=(null) NodeList=node5\n"
                "JobId=43 ArrayJobId=41 ArrayTaskId=1 JobState=OUT_OF_MEMORY "
                "Reason=OutOfMemory ExitCode=0:125 NodeList=node6\n"
                "JobId=41 ArrayJobId=41 ArrayTaskId=3 JobState=RUNNING NodeList=node7\n",
                "",
            ),
            "sacct -n": (1, "", "sacct: error: Slurm accounting storage is disabled"),
            "scontrol show config": (
                0,
                f"JobCompHost             = localhost\nJobCompLoc              = {log}\n"
                "JobCompType             = jobcomp/filetxt\n",
                "",
            ),
        }
    )
    states = slurm.query(["41", "30"], run)
    assert states[("41", 3)].state == "RUNNING" and states[("41", 3)].source == "squeue"
    assert states[("41", 4)].reason == "Resources" and states[("41", 4)].node is None
    assert states[("41", 0)].state == "COMPLETED" and states[("41", 0)].node == "node5"
    assert states[("41", 1)].state == "OUT_OF_MEMORY" and states[("41", 1)].exit_code == "0:125"
    assert states[("30", 0)] == slurm.TaskState(
        state="COMPLETED", node="node1", exit_code="0:0", reason=None, source="jobcomp"
    )
    assert states[("30", 1)].state == "CANCELLED" and states[("30", 1)].node is None
    assert ("29", 0) not in states and len(states) == 6
    views = slurm.views(["41"], run)
    assert views[("41", 1)].detail == "exit 0:125, OutOfMemory"
    running = slurm.TaskState(state="RUNNING", node=None, exit_code=None, reason=None, source="x")
    assert not running.ended


def test_accounting_answers_for_forgotten_arrays() -> None:
    run = _answers(
        {"sacct -n": (0, "30_0|COMPLETED|0:0|node1\n30_1|CANCELLED by 0|0:15|None assigned\n", "")}
    )
    states = slurm.query(["30"], run)
    assert states[("30", 0)].source == "sacct" and states[("30", 0)].node == "node1"
    assert states[("30", 1)].state == "CANCELLED" and states[("30", 1)].node is None


def test_a_refused_submission_is_one_line() -> None:
    run = _answers({"sbatch": (1, "", "sbatch: error: invalid partition specified: nope\n")})
    with pytest.raises(SchedulerError, match="invalid partition specified: nope"):
        slurm.submit(Path("/f"), [slurm.Submission(indices=(0,), node=None)], run)
    odd = _answers({"sbatch": (0, "Submitted batch job 5\n", "")})
    with pytest.raises(SchedulerError, match="not a job ID"):
        slurm.submit(Path("/f"), [slurm.Submission(indices=(0,), node=None)], odd)


def test_placement_and_index_from_the_environment() -> None:
    env = {
        "SLURM_JOB_ID": "57",
        "SLURM_ARRAY_JOB_ID": "55",
        "SLURM_ARRAY_TASK_ID": "2",
        "SLURMD_NODENAME": "gpu03",
        "SLURM_JOB_PARTITION": "h200",
    }
    placed = placement_from(env)
    assert (placed.scheduler, placed.node, placed.job_id, placed.array_job_id) == (
        "slurm",
        "gpu03",
        "57",
        "55",
    )
    assert placed.attempt == "slurm-55_2" and placed.partition == "h200"
    pod = placement_from(
        {"JOB_COMPLETION_INDEX": "4", "BEYOND_TOPS_NODE_NAME": "n9", "BEYOND_TOPS_POD_NAME": "p-4"}
    )
    assert (pod.scheduler, pod.node, pod.attempt, pod.array_task_id) == ("k8s", "n9", "k8s-p-4", 4)
    assert placement_from({}).scheduler == "none"
    assert task_index(None, env) == 2
    assert task_index(7, env) == 7
    with pytest.raises(ConfigError, match="no task index: pass --index N"):
        task_index(None, {})
    with pytest.raises(ConfigError, match="SLURM_ARRAY_TASK_ID='x'"):
        task_index(None, {"SLURM_ARRAY_TASK_ID": "x"})


def _record(fleet: Path, index: int, attempt: str, **fields: object) -> None:
    directory = task_dir(fleet, index) / attempt
    directory.mkdir(parents=True)
    data = {
        "schema_version": 1,
        "index": index,
        "placement": {"scheduler": "slurm", "node": "n1", "array_job_id": "9"},
        "started_utc": "2026-12-01T10:00:00Z",
        "finished_utc": "2026-12-01T10:01:00Z",
        "exit_code": 0,
        "cause": None,
        "entries": [],
        **fields,
    }
    (directory / "task-result.json").write_text(json.dumps(data))


def test_a_task_state_is_the_schedulers_else_its_own_record(
    tmp_path: Path, entries: list[Entry]
) -> None:
    fleet = create_fleet_dir(tmp_path / "out", "t")
    plan = _plan(entries, replicas=3)  # 6 tasks
    submitted = Submitted(job_id="9", indices=(0, 1, 2, 3, 4), node=None)
    scheduler = SlurmScheduler(partition=None, time_min=None, submissions=(submitted,))
    plan = dataclasses.replace(plan, scheduler=scheduler)
    write_plan(fleet, plan)
    _record(fleet, 0, "slurm-9_0")
    _record(fleet, 1, "slurm-9_1", exit_code=3, entries=[{"name": "x", "error": "bad model"}])
    _record(fleet, 2, "slurm-9_2", finished_utc=None, exit_code=None)
    _record(fleet, 3, "slurm-9_3", exit_code=143, cause="interrupted (SIGTERM)")
    (fleet / "logs" / "9_0.out").write_text("log\n")
    views = {
        ("9", 0): SchedulerView(
            state="COMPLETED", node="n1", detail=None, source="sacct", job_id="9"
        )
    }
    statuses = fleet_status(fleet, plan, lambda ids: views)
    assert [(s.state, s.source) for s in statuses] == [
        ("COMPLETED", "sacct"),
        ("FAILED", "task-result"),
        ("LOST", "task-result"),
        ("CANCELLED", "task-result"),
        ("UNKNOWN", "none"),
        ("NOT SUBMITTED", "none"),
    ]
    assert statuses[0].log == fleet / "logs" / "9_0.out" and statuses[1].log is None
    assert statuses[1].detail == "exit 3: x: bad model"
    assert summary_line(statuses).startswith("6 task(s): 1 CANCELLED, 1 COMPLETED, 1 FAILED")
    # without a scheduler to ask (a Kubernetes fleet off-cluster), a started task may still run
    assert fleet_status(fleet, plan, None)[2].state == "STARTED"


def test_dry_run_writes_the_fleet_and_submits_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fleet", "slurm", "smoke", "--partition", "p", "--nodelist", "a,b", "--shard", "node"]
    assert main([*argv, "--out", str(tmp_path), "--dry-run", "--harness", "harness"]) == 0
    out = capsys.readouterr().out
    fleet = Path(out.strip().splitlines()[-1])
    assert out.startswith("#!/bin/bash")
    assert f"exec harness fleet task {fleet}" in out
    submit = (fleet / "submit.sh").read_text()
    assert f"sbatch --parsable --array=0 --nodelist=a {fleet}/fleet.sbatch" in submit
    assert f"sbatch --parsable --array=1 --nodelist=b {fleet}/fleet.sbatch" in submit
    assert read_plan(fleet).scheduler == SlurmScheduler(partition="p", time_min=60)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "0"], "--nodes: must be >= 1"),
        (["--nodelist", ","], "--nodelist: ',' names no node"),
        (["--trials", "0"], "--trials: must be >= 1"),
        (["--time", "0"], "--time: whole minutes >= 1"),
    ],
)
def test_bad_fleet_options_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    base = ["fleet", "slurm", "smoke", "--partition", "p", "--out", str(tmp_path / "o")]
    assert main([*base, *argv, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and message in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_k8s_writes_a_valid_indexed_job_over_the_results_volume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    argv = ["fleet", "k8s", "smoke", "--image", "bt:cpu", "--claim", "bt-results"]
    assert main([*argv, "--nodes", "2", "--out", str(tmp_path)]) == 0
    fleet = Path(capsys.readouterr().out.strip().splitlines()[-1])
    job = yaml.safe_load((fleet / "job.yaml").read_text())
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == 4
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["image"] == "bt:cpu"
    assert container["command"] == ["harness", "fleet", "task", f"/results/{fleet.name}"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "bt-results"
    plan = read_plan(fleet)
    assert plan.kind == "k8s" and plan.runner == "local" and len(plan.tasks) == 4
    assert plan.scheduler == K8sScheduler(
        namespace="default", job=job["metadata"]["name"], applied=False
    )
    # --apply without a reachable cluster: one line, the scheduler's exit code, the plan kept
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main([*argv, "--out", str(tmp_path), "--apply"]) == 27
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert "kubectl apply -f" in err  # the planned fleet is kept, and says how to apply it
