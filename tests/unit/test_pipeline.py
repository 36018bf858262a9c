"""The parent side of the job protocol, with a scripted launcher standing in for workers.

Real workers run in tests/integration; here each launch plays one worker's outcome (files in
its run directory and an exit code), so every branch of the protocol is exercised exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.campaign import is_out_of_memory
from harness.config import load_scenario
from harness.files import mark_complete, mark_incomplete, read_incomplete
from harness.job import Expected, read_job
from harness.pipeline import RunSpec, WorkerError, run_one
from tests.conftest import TINY_SS, write_scenario

Step = Callable[[Path], int]  # one worker's behaviour: given its run directory, its exit code


class ScriptedLauncher:
    """Plays one scripted worker per launch and keeps the jobs it was handed."""

    def __init__(self, *steps: Step) -> None:
        self.steps, self.jobs = list(steps), []

    def __call__(self, job_path: Path) -> int:
        job = read_job(job_path)
        self.jobs.append(job)
        return self.steps.pop(0)(job.run_dir)


def accuracy_ok(run_dir: Path) -> int:
    (run_dir / "user.conf").write_text("")
    (run_dir / "accuracy.json").write_text("{}")
    return 0


def result(valid: bool) -> Step:
    def step(run_dir: Path) -> int:
        (run_dir / "user.conf").write_text("")
        (run_dir / "mlperf_log_detail.txt").write_text("attempt log")
        (run_dir / "result.json").write_text(json.dumps({"valid": valid}))
        mark_complete(run_dir)
        return 0 if valid else 1

    return step


def retry(run_dir: Path) -> int:
    (run_dir / "user.conf").write_text("first")
    (run_dir / "mlperf_log_detail.txt").write_text("first attempt log")
    (run_dir / "retry.json").write_text('{"latency_ns": 2000.0, "samples_per_second": 99.0}')
    return 0


def fails(cause: str, code: int, *, measured: bool) -> Step:
    def step(run_dir: Path) -> int:
        if measured:
            (run_dir / "user.conf").write_text("")
        mark_incomplete(run_dir, f"failed: {cause}", code)
        return code

    return step


@pytest.fixture
def spec(tmp_path: Path) -> RunSpec:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    return RunSpec(scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu")


def test_accuracy_then_performance_each_from_its_own_job_file(
    spec: RunSpec, tmp_path: Path
) -> None:
    launch = ScriptedLauncher(accuracy_ok, result(valid=True))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert run_one(spec, run_dir, launch=launch) == run_dir
    assert [(j.test, j.run_dir) for j in launch.jobs] == [
        ("accuracy", (run_dir / "accuracy").resolve()),
        ("performance", run_dir.resolve()),
    ]
    assert read_job(run_dir / "job.json") == launch.jobs[1]  # the record of what ran
    assert read_job(run_dir / "accuracy" / "job.json") == launch.jobs[0]
    assert launch.jobs[1].scenario == spec.scenario and launch.jobs[1].expected is None
    assert read_incomplete(run_dir) is None


def test_an_invalid_run_is_an_outcome_not_a_failure(spec: RunSpec, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_one(spec, run_dir, launch=ScriptedLauncher(accuracy_ok, result(valid=False)))
    assert json.loads((run_dir / "result.json").read_text()) == {"valid": False}


def test_a_first_attempt_sized_too_small_is_set_aside_and_run_again(
    spec: RunSpec, tmp_path: Path
) -> None:
    launch = ScriptedLauncher(accuracy_ok, retry, result(valid=True))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_one(spec, run_dir, launch=launch)
    second = launch.jobs[2]
    assert (second.attempt, second.previous_attempt) == (2, "attempt-1")
    assert second.expected == Expected(latency_ns=2000.0, samples_per_second=99.0)
    first = run_dir / "attempt-1"
    assert (first / "mlperf_log_detail.txt").read_text() == "first attempt log"
    assert read_job(first / "job.json").attempt == 1
    assert (first / "retry.json").is_file() and not (run_dir / "retry.json").exists()
    assert (run_dir / "mlperf_log_detail.txt").read_text() == "attempt log"
    assert (run_dir / "accuracy" / "accuracy.json").is_file()  # the accuracy test stays


def test_a_failure_while_measuring_keeps_the_logs_and_the_cause(
    spec: RunSpec, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(accuracy_ok, fails("inference failed: device lost", 5, measured=True))
    with pytest.raises(WorkerError) as err:
        run_one(spec, run_dir, launch=launch)
    assert (err.value.cause, err.value.exit_code) == ("inference failed: device lost", 5)
    assert str(err.value) == f"{run_dir}: run failed: inference failed: device lost"
    recorded = read_incomplete(run_dir)
    assert recorded is not None and recorded.exit_code == 5
    assert "device lost" in recorded.cause


def test_a_failure_before_measuring_writes_nothing(spec: RunSpec, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    launch = ScriptedLauncher(fails("HW=nvidia: no device", 4, measured=False))
    with pytest.raises(WorkerError) as err:
        run_one(spec, run_dir, launch=launch)
    assert err.value.exit_code == 4 and len(launch.jobs) == 1  # the performance test never ran
    assert not run_dir.exists()


def test_a_worker_killed_by_the_kernel_is_named_so(spec: RunSpec, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(WorkerError) as err:
        run_one(spec, run_dir, launch=ScriptedLauncher(accuracy_ok, lambda _: -9))
    assert err.value.cause == "killed by signal 9" and is_out_of_memory(err.value)
    assert err.value.exit_code == 5


def test_ctrl_c_in_a_worker_stops_the_parent_and_marks_the_run(
    spec: RunSpec, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(KeyboardInterrupt):
        run_one(spec, run_dir, launch=ScriptedLauncher(accuracy_ok, fails("x", 130, measured=True)))
    recorded = read_incomplete(run_dir)
    assert recorded is not None and (recorded.cause, recorded.exit_code) == (
        "interrupted (Ctrl-C)",
        130,
    )


def test_a_worker_that_exits_0_without_a_result_fails_the_run(
    spec: RunSpec, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(WorkerError, match="left no result"):
        run_one(spec, run_dir, launch=ScriptedLauncher(accuracy_ok, accuracy_ok))
