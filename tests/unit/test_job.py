"""The job file: written by a parent, read by a worker, exactly what ran."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import load_scenario
from harness.errors import ConfigError
from harness.records.job import JOB_SCHEMA_VERSION, Expected, Job, job_to_dict, read_job, write_job
from tests.conftest import REPO, TINY_SS, write_scenario


def a_job(tmp_path: Path, **changes: object) -> Job:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    fields: dict[str, object] = {
        "scenario": scenario,
        "scenario_path": "s.yaml",
        "profile": "quick",
        "hw": "cpu",
        "test": "performance",
        "run_dir": tmp_path / "run",
    }
    return Job(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_job_reads_back_exactly_as_written(tmp_path: Path) -> None:
    job = a_job(
        tmp_path,
        expected=Expected(latency_ns=1.5e6, samples_per_second=640.0),
        attempt=2,
        previous_attempt="attempt-1",
        model_override=tmp_path / "m.onnx",
        strict=True,
    )
    path = write_job(job, tmp_path / "job.json")
    assert read_job(path) == job
    assert json.loads(path.read_text())["schema_version"] == JOB_SCHEMA_VERSION


def test_a_newer_job_file_says_to_upgrade(tmp_path: Path) -> None:
    data = job_to_dict(a_job(tmp_path)) | {"schema_version": JOB_SCHEMA_VERSION + 1}
    (tmp_path / "job.json").write_text(json.dumps(data))
    with pytest.raises(
        ConfigError, match=rf"job\.json: job schema_version {JOB_SCHEMA_VERSION + 1} .*upgrade"
    ):
        read_job(tmp_path / "job.json")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"test": "compliance"}, r"test: 'compliance' is not allowed \(allowed: performance"),
        ({"profile": "fast"}, r"profile: 'fast' is not allowed"),
        ({"hw": None, "run_dir": None}, r"job\.json: missing key 'hw'"),
        ({"strict": "no"}, r"strict: expected true or false, got a string 'no'"),  # not truthy
        ({"attempt": True}, r"attempt: expected a whole number, got true or false True"),
        ({"attempt": "2"}, r"attempt: expected a whole number, got a string '2'"),
        ({"hw": ["cpu"]}, r"hw: expected a string, got a list"),
        ({"run_dir": 7}, r"run_dir: expected a string, got a whole number 7"),
    ],
)
def test_a_bad_job_file_is_one_line_naming_the_key(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    data = {k: v for k, v in job_to_dict(a_job(tmp_path)).items() if k not in change}
    data |= {k: v for k, v in change.items() if v is not None}
    (tmp_path / "job.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        read_job(tmp_path / "job.json")


def test_a_job_with_a_non_finite_number_names_its_key(tmp_path: Path) -> None:
    text = json.dumps(job_to_dict(a_job(tmp_path))).replace('"attempt": 1', '"attempt": 1e999')
    (tmp_path / "job.json").write_text(text)
    with pytest.raises(ConfigError, match=r"job\.json: attempt is Infinity, not a finite number"):
        read_job(tmp_path / "job.json")


def test_the_scenario_inside_is_checked_as_strictly_as_yaml(tmp_path: Path) -> None:
    data = job_to_dict(a_job(tmp_path))
    data["scenario"]["batchsize"] = 4
    (tmp_path / "job.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"scenario: unknown key 'batchsize'"):
        read_job(tmp_path / "job.json")


def test_the_worker_refuses_a_missing_job_file_with_its_code(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness.execution.worker", str(tmp_path / "none.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == ConfigError.exit_code
    assert done.stderr.strip() == f"error: {tmp_path / 'none.json'}: no such job file"
    assert done.stdout == ""
