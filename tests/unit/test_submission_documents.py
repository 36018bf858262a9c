"""measurements.json and the READMEs, from a result's records and its job file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from harness.config import load_scenario, scenario_to_dict
from harness.records.job import Job
from harness.records.measures import CalibrationRecord, RecipeRecord
from harness.records.request import RunRequest
from harness.records.result import ContainerImage, RunResult
from harness.results.runfile import load_result
from harness.submission.documents import (
    QUICK_LABEL,
    measurements,
    measurements_json,
    result_readme,
    src_readme,
)
from harness.submission.plan import Entry, Plan

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"
COMMIT = "55597f181825622eebf1d9151ad8455a3c141b63"  # the fixture's


def _job(**changes: object) -> Job:
    request = RunRequest(
        scenario=load_scenario(REPO / "scenarios" / "tiny-singlestream.yaml"),
        scenario_path=Path("scenarios/tiny-singlestream.yaml"),
        profile="quick",
        hw="cpu",
    )
    request = dataclasses.replace(request, **changes)  # type: ignore[arg-type]
    return Job(request=request, test="performance", run_dir=Path("/runs/r1"))


def _entry(result: RunResult | None = None) -> Entry:
    result = result or load_result(FIXTURE)
    return Entry(
        source=Path("/runs/r1"),
        run_dir=Path("/runs/r1"),
        result=result,
        benchmark="resnet",
        chosen="a single run",
    )


def _plan(entry: Entry) -> Plan:
    return Plan(division="open", org="Org", system="vm1", entries=(entry,))


def _int8(result: RunResult) -> RunResult:
    precision = dataclasses.replace(
        result.precision,
        precision="int8",
        recipe=RecipeRecord(
            method="static-qdq", params={"calibration_count": 64}, precision="int8"
        ),
        weights_dtype="int8",
        activations_dtype="uint8",
        calibration=CalibrationRecord(seed=0, count=64, indices=(1, 2), source="qsl", sha256="ab"),
    )
    return dataclasses.replace(result, precision=precision)


def test_measurements_of_an_fp32_zoo_model() -> None:
    result = load_result(FIXTURE)
    assert measurements(_entry(result), _job()) == {
        "input_data_types": "fp32",
        "retraining": "no",
        "starting_weights_filename": f"beyond-tops zoo model 'tiny' (sha256 "
        f"{result.precision.source_sha256}), generated with seeded synthetic weights, not trained",
        "weight_data_types": "fp32",
        "weight_transformations": "none",
        "model_sha256": result.model.sha256,
    }
    assert json.loads(measurements_json(_entry(result), _job())) == measurements(
        _entry(result), _job()
    )


def test_measurements_of_a_converted_model_say_how() -> None:
    result = _int8(load_result(FIXTURE))
    data = measurements(_entry(result), _job())
    assert data["weight_data_types"] == "int8" and data["input_data_types"] == "fp32"
    assert data["weight_transformations"] == (
        "static-qdq conversion to int8 with onnxruntime's tools, from the FP32 model sha256 "
        f"{result.precision.source_sha256}; calibrated on 64 samples (seed 0)"
    )


def test_a_user_model_is_named_by_its_file() -> None:
    data = measurements(_entry(), _job(model_override=Path("/models/resnet50_v1.onnx")))
    assert data["starting_weights_filename"] == "resnet50_v1.onnx"


def test_the_readme_of_a_quick_run_says_so_and_how_to_run_it_again() -> None:
    entry = _entry()
    text = result_readme(entry, _job(), _plan(entry))
    assert text.startswith("# resnet SingleStream: vm1, by beyond-tops\n\n**QUICK PROFILE: ")
    assert QUICK_LABEL in text
    assert f"git commit {COMMIT} (with uncommitted changes)" in text  # the fixture was dirty
    assert "no container image (the host's own install)" in text
    assert f"`git checkout {COMMIT}` (the run had uncommitted changes" in text
    assert "`harness run scenario.yaml --profile quick --hw cpu --trials 1`" in text
    assert "--division open --force-quick --out DIR" in text
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == json.loads(
        json.dumps(scenario_to_dict(_job().request.scenario))
    )


def test_the_readme_names_the_image_and_reruns_in_it() -> None:
    image = ContainerImage(id="sha256:0123", tag="beyond-tops/cpu:0.1.0-55597f1")
    entry = _entry(dataclasses.replace(load_result(FIXTURE), image=image))
    text = result_readme(entry, _job(), _plan(entry))
    assert "image beyond-tops/cpu:0.1.0-55597f1, ID sha256:0123" in text
    assert "--runner docker --image beyond-tops/cpu:0.1.0-55597f1`" in text


def test_src_readme_names_every_commit_once() -> None:
    entry = _entry()
    plan = Plan(division="open", org="Org", system="vm1", entries=(entry, entry))
    text = src_readme(plan)
    assert text.count(f"beyond-tops 0.1.0, git commit {COMMIT} with uncommitted changes") == 1
