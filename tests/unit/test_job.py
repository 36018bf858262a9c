"""The job file: written by a parent, read by a worker, exactly what ran."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness.config import load_scenario
from harness.errors import ConfigError
from harness.records.generators import GENERATOR_VERSIONS, UNRECORDED_GENERATOR
from harness.records.job import JOB_SCHEMA_VERSION, Job, job_to_dict, read_job, write_job
from harness.records.request import Expectation, LoadGenPins, RunRequest
from tests.conftest import REPO, TINY_SS, write_scenario


def a_job(tmp_path: Path, **changes: object) -> Job:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    request = RunRequest(scenario=scenario, scenario_path=Path("s.yaml"), profile="quick", hw="cpu")
    fields: dict[str, object] = {
        "request": request,
        "test": "performance",
        "run_dir": tmp_path / "run",
    }
    return Job(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_job_reads_back_exactly_as_written(tmp_path: Path) -> None:
    base = a_job(tmp_path)
    request = dataclasses.replace(
        base.request, model_override=tmp_path / "m.onnx", strict=True, label="<b> & $(x)"
    )
    job = dataclasses.replace(
        base,
        request=request,
        expected=Expectation(latency_ns=1.5e6, samples_per_second=640.0),
        attempt=2,
        previous_attempt="attempt-1",
    )
    path = write_job(job, tmp_path / "job.json")
    assert read_job(path) == job
    assert json.loads(path.read_text())["schema_version"] == JOB_SCHEMA_VERSION


def test_the_job_file_keeps_its_format(tmp_path: Path) -> None:
    """The request's fields lie flat beside the test's, in this order (reproduce reads them)."""
    request = dataclasses.replace(
        a_job(tmp_path).request, model_override=Path("/models/m.onnx"), strict=True
    )
    job = Job(
        request=request,
        test="performance",
        run_dir=Path("/results/run"),
        expected=Expectation(latency_ns=2000.0, samples_per_second=99.5),
        attempt=2,
        previous_attempt="attempt-1",
    )
    data = json.loads(write_job(job, tmp_path / "job.json").read_text())
    scenario = data.pop("scenario")
    assert data == {
        "schema_version": JOB_SCHEMA_VERSION,
        "harness_version": harness.__version__,
        "test": "performance",
        "run_dir": "/results/run",
        "hw": "cpu",
        "profile": "quick",
        "strict": True,
        "label": None,
        "model_override": "/models/m.onnx",
        "scenario_path": "s.yaml",
        "expected": {"latency_ns": 2000.0, "samples_per_second": 99.5},
        "attempt": 2,
        "previous_attempt": "attempt-1",
    }
    assert list(data) == list(job_to_dict(job))[:-1]  # the scenario last
    assert scenario["name"] == request.scenario.name


def test_a_published_results_pins_read_back_and_are_checked(tmp_path: Path) -> None:
    """reproduce of a published result: its seeds (64-bit) and user.conf keys travel in job.json."""
    pins = LoadGenPins(
        conf=(("min_duration", 600000), ("target_latency_percentile", 0.99)),
        seeds=(("qsl_rng_seed", 2085463073848966840), ("schedule_rng_seed", 16159082839903944936)),
        source="records/v4.1-closed-x",
    )
    base = a_job(tmp_path)
    job = dataclasses.replace(base, request=dataclasses.replace(base.request, pins=pins))
    path = write_job(job, tmp_path / "job.json")
    assert read_job(path) == job
    assert list(json.loads(path.read_text()))[-2:] == ["pins", "scenario"]
    assert "pins" not in job_to_dict(base)  # a job without them is written as before
    for bad, message in (
        ({"conf": {"min_duration": "long"}, "seeds": {}, "source": ""}, "conf: min_duration"),
        ({"conf": {}, "seeds": {"qsl_rng_seed": -1}, "source": ""}, "seeds: qsl_rng_seed"),
        ({"conf": {}, "seeds": {}, "source": "", "x": 1}, "unknown key 'x'"),
    ):
        (tmp_path / "bad.json").write_text(json.dumps(job_to_dict(job) | {"pins": bad}))
        with pytest.raises(ConfigError, match=message):
            read_job(tmp_path / "bad.json")


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ({"latency_ns": 1.0}, r"expected: missing key 'samples_per_second'"),
        ({"latency_ns": "fast", "samples_per_second": 1.0}, r"latency_ns: expected a number"),
        ({"latency_ns": 1.0, "samples_per_second": 1.0, "qps": 2}, r"unknown key 'qps'"),
        ([1.0, 2.0], r"expected: expected a mapping, got a list"),
    ],
)
def test_a_bad_expectation_is_one_line_naming_the_key(
    tmp_path: Path, expected: object, message: str
) -> None:
    data = job_to_dict(a_job(tmp_path)) | {"expected": expected}
    (tmp_path / "job.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        read_job(tmp_path / "job.json")


def test_a_newer_job_file_says_to_upgrade(tmp_path: Path) -> None:
    data = job_to_dict(a_job(tmp_path)) | {"schema_version": JOB_SCHEMA_VERSION + 1}
    (tmp_path / "job.json").write_text(json.dumps(data))
    with pytest.raises(
        ConfigError,
        match=rf"job\.json: schema_version {JOB_SCHEMA_VERSION + 1} was written by a newer .*upg",
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


def test_a_zoo_job_states_its_generator_version(tmp_path: Path) -> None:
    """An unset generator is today's, written into job.json: the job says what it ran."""
    job = a_job(tmp_path)
    assert job.request.scenario.model.generator == GENERATOR_VERSIONS["tiny"]
    data = json.loads(write_job(job, tmp_path / "job.json").read_text())
    assert data["scenario"]["model"]["generator"] == GENERATOR_VERSIONS["tiny"]
    assert read_job(tmp_path / "job.json") == job


def test_a_job_file_without_a_generator_ran_version_1(tmp_path: Path) -> None:
    """Job files written before generators were versioned (the shipped bundles) ran version 1."""
    data = job_to_dict(a_job(tmp_path))
    scenario = data["scenario"]
    assert isinstance(scenario, dict) and isinstance(scenario["model"], dict)
    del scenario["model"]["generator"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert read_job(path).request.scenario.model.generator == UNRECORDED_GENERATOR == 1
    scenario["model"]["generator"] = 1  # chosen on purpose: kept
    path.write_text(json.dumps(data))
    assert read_job(path).request.scenario.model.generator == 1
