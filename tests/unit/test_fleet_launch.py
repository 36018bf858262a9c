"""Fleet orchestration from typed requests (harness.fleet.launch, follow, scheduled): no CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.errors import ConfigError, ResultError
from harness.fleet.follow import task_ids
from harness.fleet.launch import ResolvedSuite, SlurmRequest, SuiteRequest, launch_slurm
from harness.fleet.plan import Entry, read_plan
from harness.fleet.scheduled import (
    K8sScheduler,
    SlurmScheduler,
    Submitted,
    parse_scheduler,
    scheduler_json,
)
from tests.conftest import TINY_OFFLINE, TINY_SS
from tests.unit.test_fleet import _entry, _plan


def _request(tmp_path: Path, resolved: list[str]) -> SlurmRequest:
    def resolve() -> ResolvedSuite:
        resolved.append("suite")
        entries = (_entry(tmp_path, TINY_SS, "ss"), _entry(tmp_path, TINY_OFFLINE, "off"))
        return ResolvedSuite(name="pair", profile="quick", entries=entries)

    suite = SuiteRequest(
        resolve=resolve, hw="cpu", shard_by="scenario", out=tmp_path / "out", dry_run=True
    )
    return SlurmRequest(
        suite=suite,
        partition="p",
        nodes=2,
        nodelist=None,
        image=None,
        runner="local",
        time_min=30,
        account=None,
        gpus_per_node=None,
        sbatch=("--qos=high",),
        harness="harness",
    )


def test_a_dry_run_plans_the_fleet_from_a_typed_request(tmp_path: Path) -> None:
    resolved: list[str] = []
    said: list[str] = []
    launched = launch_slurm(_request(tmp_path, resolved), said.append)
    assert resolved == ["suite"] and said == []  # nothing submitted, nothing said
    assert launched.unsent is not None and launched.unsent.startswith("#!/bin/bash")
    assert "#SBATCH --qos=high" in launched.unsent
    assert launched.how == f"sh {launched.fleet / 'submit.sh'}"
    plan = read_plan(launched.fleet)
    assert (plan.suite, plan.kind, len(plan.tasks)) == ("pair", "slurm", 4)  # 2 copies x 2
    assert plan.scheduler == SlurmScheduler(partition="p", time_min=30)
    data = json.loads((launched.fleet / "fleet.json").read_text())
    assert data["scheduler"] == {"partition": "p", "time_min": 30, "submissions": []}


def test_the_options_are_checked_before_the_suite_is_resolved(tmp_path: Path) -> None:
    resolved: list[str] = []
    request = _request(tmp_path, resolved)
    bad = dataclasses.replace(request, nodelist=",")
    with pytest.raises(ConfigError, match="--nodelist"):
        launch_slurm(bad, print)
    assert resolved == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kind", "scheduler", "data"),
    [
        (
            "slurm",
            SlurmScheduler(
                partition="gpu",
                time_min=60,
                submissions=(Submitted(job_id="17", indices=(0, 2), node="n1"),),
            ),
            {
                "partition": "gpu",
                "time_min": 60,
                "submissions": [{"job_id": "17", "indices": [0, 2], "node": "n1"}],
            },
        ),
        (
            "k8s",
            K8sScheduler(namespace="bench", job="bt-x", applied=True),
            {"namespace": "bench", "job": "bt-x", "applied": True},
        ),
        ("slurm", None, {}),
    ],
)
def test_the_scheduler_record_is_written_and_read_back_unchanged(
    kind: str, scheduler: SlurmScheduler | K8sScheduler | None, data: dict[str, object]
) -> None:
    assert scheduler_json(scheduler) == data
    assert parse_scheduler(data, kind, "fleet.json: scheduler", ResultError) == scheduler


def test_a_damaged_submission_names_its_key() -> None:
    data = {"submissions": [{"job_id": "1;rm", "indices": [0]}]}
    with pytest.raises(ResultError, match=r"submissions\[0\]: job_id: .* not a Slurm job ID"):
        parse_scheduler(data, "slurm", "fleet.json: scheduler", ResultError)


def test_cancel_names_every_submitted_task_or_those_asked(tmp_path: Path) -> None:
    entries: list[Entry] = [_entry(tmp_path, TINY_SS, "ss")]
    plan = _plan(entries, replicas=3)
    submitted = (Submitted(job_id="5", indices=(0, 1), node=None),)
    scheduler = SlurmScheduler(partition="p", time_min=1, submissions=submitted)
    slurm_plan = dataclasses.replace(plan, scheduler=scheduler)
    assert task_ids(tmp_path, slurm_plan, frozenset()) == ["5_0", "5_1"]
    assert task_ids(tmp_path, slurm_plan, frozenset({1})) == ["5_1"]
    with pytest.raises(ConfigError, match=r"--task: \[2\] not submitted"):
        task_ids(tmp_path, slurm_plan, frozenset({2}))
    k8s_plan = dataclasses.replace(
        plan, kind="k8s", scheduler=K8sScheduler(namespace="ns", job="j")
    )
    with pytest.raises(ConfigError, match="kubectl delete job j -n ns"):
        task_ids(tmp_path, k8s_plan, frozenset())


def test_each_array_submitted_is_recorded_as_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.fleet import slurm

    made: list[str] = []

    def submit(fleet: Path, submissions: list[slurm.Submission]) -> list[slurm.Submission]:
        (one,) = submissions
        made.append(str(len(made) + 40))
        return [dataclasses.replace(one, job_id=made[-1])]

    monkeypatch.setattr(slurm, "submit", submit)
    request = _request(tmp_path, [])
    pinned = dataclasses.replace(
        request, nodelist="a,b", suite=dataclasses.replace(request.suite, dry_run=False)
    )
    said: list[str] = []
    launched = launch_slurm(pinned, said.append)
    assert launched.unsent is None
    assert said == ["submitted job 40: tasks 0-1 on a", "submitted job 41: tasks 2-3 on b"]
    data = json.loads((launched.fleet / "fleet.json").read_text())
    assert data["scheduler"]["submissions"] == [
        {"job_id": "40", "indices": [0, 1], "node": "a"},
        {"job_id": "41", "indices": [2, 3], "node": "b"},
    ]
