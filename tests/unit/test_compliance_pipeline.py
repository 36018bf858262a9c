"""The parent side of a compliance test, with scripted workers: its directory, re-runs, failures.

Real compliance workers (LoadGen under audit.config) run in tests/integration/.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import cli
from harness.compliance.outcome import ComplianceRun, write_outcome
from harness.config import load_scenario
from harness.errors import ResultError
from harness.execution.campaign import Campaign, run_trials
from harness.execution.pipeline import WorkerError, run_compliance
from harness.execution.worker import enter_own_directory
from harness.files import mark_complete, read_incomplete
from harness.records.job import Job, read_job, request_of_run, write_job
from harness.records.request import RunRequest
from tests.conftest import REPO, TINY_SS, write_scenario
from tests.unit.test_compliance_verify import A, B, C, accuracy_log, detail_log

Step = Callable[[Job], int]
# One response per sample, of three classes: an accuracy run whose answers follow its input.
RESPONSES = [(0, A), (1, B), (2, C)]


class Workers:
    """Plays one scripted worker per launch and keeps the jobs it was handed."""

    def __init__(self, *steps: Step) -> None:
        self.steps, self.jobs = list(steps), []

    def __call__(self, job_path: Path) -> int:
        job = read_job(job_path)
        self.jobs.append(job)
        return self.steps.pop(0)(job)


def compliance_ok(speed: float = 1.0) -> Step:
    """A compliance worker that finished: LoadGen's logs under the audit settings, outcome.json."""

    def step(job: Job) -> int:
        test = job.test
        assert test in ("TEST01", "TEST04")
        detail_log(job.run_dir / "mlperf_log_detail.txt", score=1e6 / speed, test=test)
        accuracy_log(job.run_dir / "mlperf_log_accuracy.json", RESPONSES)
        run = ComplianceRun(
            test=test,
            cwd=str(job.run_dir),
            audit_config_sha256="0" * 64,
            response_dtype="float32",
            output_kind="classifier",
            completed_samples=100,
        )
        write_outcome(run, job.run_dir)
        mark_complete(job.run_dir)
        return 0

    return step


def undersized(job: Job) -> int:
    (job.run_dir / "mlperf_log_detail.txt").write_text("first attempt")
    (job.run_dir / "retry.json").write_text('{"latency_ns": 1000.0, "samples_per_second": 9.0}')
    return 0


@pytest.fixture
def measured_run(tmp_path: Path) -> tuple[RunRequest, Path]:
    """A finished run: its performance job, result, detail log and accuracy log."""
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    run_request = RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )
    run_dir = tmp_path / "run"
    job = Job(request=run_request, test="performance", run_dir=run_dir)
    write_job(job, (run_dir / "job.json"))
    (run_dir / "result.json").write_text("{}")
    detail_log(run_dir / "mlperf_log_detail.txt", score=1e6)
    accuracy_log(run_dir / "accuracy" / "mlperf_log_accuracy.json", RESPONSES)
    return run_request, run_dir


def test_a_test_runs_in_a_fresh_directory_of_its_own_and_is_verified(
    measured_run: tuple[RunRequest, Path],
) -> None:
    run_request, run_dir = measured_run
    workers = Workers(compliance_ok())
    verdict = run_compliance(run_request, run_dir, "TEST01", launch=workers)
    directory = run_dir.resolve() / "compliance" / "TEST01"
    (job,) = workers.jobs
    assert (job.test, job.run_dir) == ("TEST01", directory)
    assert read_job(directory / "job.json") == job  # the record of what ran
    assert verdict.passed and verdict.directory == directory
    assert (directory / "verify_accuracy.txt").is_file()
    assert read_incomplete(directory) is None and read_incomplete(run_dir) is None


def test_a_second_run_of_a_test_keeps_the_first(measured_run: tuple[RunRequest, Path]) -> None:
    run_request, run_dir = measured_run
    run_compliance(run_request, run_dir, "TEST04", launch=Workers(compliance_ok(speed=2.0)))
    again = run_compliance(run_request, run_dir, "TEST04", launch=Workers(compliance_ok()))
    compliance = run_dir / "compliance"
    assert sorted(p.name for p in compliance.iterdir()) == ["TEST04", "TEST04-1"]
    earlier = json.loads((compliance / "TEST04-1" / "verdict.json").read_text())
    assert earlier["passed"] is False and again.passed  # twice as fast, then as fast


def test_a_run_that_ended_early_is_run_again_at_the_measured_speed(
    measured_run: tuple[RunRequest, Path],
) -> None:
    run_request, run_dir = measured_run
    workers = Workers(undersized, compliance_ok())
    run_compliance(run_request, run_dir, "TEST04", launch=workers)
    second = workers.jobs[1]
    assert (second.attempt, second.previous_attempt) == (2, "attempt-1")
    assert second.expected is not None and second.expected.samples_per_second == 9.0
    first = run_dir / "compliance" / "TEST04" / "attempt-1"
    assert (first / "mlperf_log_detail.txt").read_text() == "first attempt"


def test_a_failed_worker_marks_its_test_not_the_run(measured_run: tuple[RunRequest, Path]) -> None:
    run_request, run_dir = measured_run

    def crashed(job: Job) -> int:
        (job.run_dir / "INCOMPLETE").write_text("crashed: boom\nexit_code: 70\n")
        return 70

    with pytest.raises(WorkerError, match="run failed: crashed: boom"):
        run_compliance(run_request, run_dir, "TEST04", launch=Workers(crashed))
    recorded = read_incomplete(run_dir / "compliance" / "TEST04")
    assert recorded is not None and recorded.exit_code == 70
    assert read_incomplete(run_dir) is None  # the measured run is still whole


def test_a_test_needs_a_finished_run(measured_run: tuple[RunRequest, Path]) -> None:
    run_request, run_dir = measured_run
    (run_dir / "accuracy" / "mlperf_log_accuracy.json").unlink()
    with pytest.raises(ResultError, match=r"mlperf_log_accuracy\.json: missing; TEST01 compares"):
        run_compliance(run_request, run_dir, "TEST01", launch=Workers())
    (run_dir / "result.json").unlink()
    with pytest.raises(ResultError, match=r"result\.json: missing"):
        run_compliance(run_request, run_dir, "TEST04", launch=Workers())
    assert not (run_dir / "compliance").exists()


def test_the_request_of_a_run_is_its_performance_jobs(
    measured_run: tuple[RunRequest, Path], tmp_path: Path
) -> None:
    run_request, run_dir = measured_run
    assert request_of_run(run_dir) == run_request
    with pytest.raises(
        ResultError, match=r"not a run directory \(no job\.json\); name a run, or a trial-N"
    ):
        request_of_run(tmp_path)


def test_a_compliance_worker_works_in_its_directory_with_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # restored after the test
    monkeypatch.setenv("BEYOND_TOPS_CACHE", "cache")
    text = TINY_SS.replace("model: {zoo: tiny}", "model: {path: models/m.onnx}").replace(
        "data: {total_sample_count: 64}", "data: {source: npy, dir: data}"
    )
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", text))
    directory = tmp_path / "run" / "compliance" / "TEST04"
    directory.mkdir(parents=True)
    request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")
    job = Job(request=request, test="TEST04", run_dir=Path("run/compliance/TEST04"))
    moved = enter_own_directory(job)
    assert Path(os.getcwd()) == directory and moved.run_dir == directory
    assert moved.request.scenario.model.path == str(tmp_path / "models" / "m.onnx")
    assert moved.request.scenario.data.dir == str(tmp_path / "data")
    assert os.environ["BEYOND_TOPS_CACHE"] == str(tmp_path / "cache")


def test_the_submission_profile_runs_the_tests_mlperf_requires(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)

    def job(name: str, profile: str) -> Any:
        args = cli._parser().parse_args(["bench", "--out", str(tmp_path)])
        return cli._campaign(Path(f"scenarios/{name}.yaml"), args, profile)

    assert job("resnet50-offline", "submission").compliance == ("TEST01", "TEST04")
    assert job("bert-singlestream", "submission").compliance == ("TEST01",)
    assert job("tiny-singlestream", "submission").compliance == ()
    assert job("resnet50-offline", "quick").compliance == ()


def test_a_campaign_runs_its_compliance_tests_after_each_run(tmp_path: Path) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    run_request = RunRequest(scenario=scenario, scenario_path=None, profile="quick", hw="cpu")

    def accuracy(job: Job) -> int:
        accuracy_log(job.run_dir / "mlperf_log_accuracy.json", RESPONSES)
        (job.run_dir / "user.conf").write_text("")
        return 0

    def performance(job: Job) -> int:
        (job.run_dir / "result.json").write_text(
            (REPO / "tests/fixtures/reports/trials-xeon/trial-1/result.json").read_text()
        )
        detail_log(job.run_dir / "mlperf_log_detail.txt", score=1e6)
        mark_complete(job.run_dir)
        return 0

    workers = Workers(accuracy, performance, compliance_ok(), compliance_ok(speed=3.0))
    campaign = Campaign(
        request=run_request,
        out_root=tmp_path / "runs",
        launch=workers,
        compliance=("TEST01", "TEST04"),
    )
    run_dir = run_trials(campaign, 1)
    assert [j.test for j in workers.jobs] == ["accuracy", "performance", "TEST01", "TEST04"]
    from harness.cli.measure import _group_status

    assert _group_status(run_dir) == 1  # TEST04 failed: the run is not submission-ready
    (run_dir / "compliance" / "TEST04" / "verdict.json").write_text(
        json.dumps({"schema_version": 1, "passed": True})
    )
    assert _group_status(run_dir) == 0


def test_the_verb_refuses_what_is_not_a_run_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["compliance", "TEST04", str(tmp_path)]) == ResultError.exit_code
    err = capsys.readouterr().err.strip()
    assert err == (
        f"error: {tmp_path}: not a run directory (no job.json); name a run, or a trial-N of a group"
    )


def test_an_unverified_test_has_not_passed(measured_run: tuple[RunRequest, Path]) -> None:
    from harness.compliance.verify import compliance_passed

    run_request, run_dir = measured_run
    with pytest.raises(WorkerError):
        run_compliance(run_request, run_dir, "TEST04", launch=Workers(lambda job: 70))
    assert compliance_passed(run_dir) is False
