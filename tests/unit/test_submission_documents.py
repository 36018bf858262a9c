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
    SYNTHETIC_WEIGHTS,
    measurements,
    measurements_json,
    result_readme,
    src_readme,
    synthetic_weights,
    weights_statement,
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
        f"{result.precision.source_sha256}). Synthetic weights: accuracy not measurable (seeded "
        "and generated, not trained)",
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
    synthetic = text.split("\n\n")[1]  # the tiny zoo model: its statement under the title
    assert synthetic.startswith(f"**{SYNTHETIC_WEIGHTS}** (the beyond-tops zoo model 'tiny' ")
    assert text.split("\n\n")[2].startswith("**QUICK PROFILE: ")
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


def _file_scenario(path: Path) -> RunRequest:
    request = _job().request
    model = dataclasses.replace(request.scenario.model, zoo=None, generator=None, path=str(path))
    scenario = dataclasses.replace(request.scenario, model=model)
    return dataclasses.replace(request, scenario=scenario)


def test_synthetic_weights_follow_the_models_provenance_never_its_path() -> None:
    assert synthetic_weights(_job())  # a zoo model run as it is
    assert not synthetic_weights(_job(), real_weights={"tiny"})  # its zoo entry: trained
    assert not synthetic_weights(_job(model_override=Path("/models/tiny.onnx")))  # --model
    # A model file is the user's, even one the zoo wrote to its cache under a zoo name.
    cached = Path.home() / ".cache/beyond-tops/models/tiny-c6ba2ddaff04.onnx"
    request = _file_scenario(cached)
    job = Job(request=request, test="performance", run_dir=Path("/runs/r1"))
    assert not synthetic_weights(job)
    assert weights_statement(job) is None


def test_the_statement_gives_its_reason_once() -> None:
    statement = weights_statement(_job())
    assert statement == (
        "Synthetic weights: accuracy not measurable (the beyond-tops zoo model 'tiny' is "
        "generated with seeded weights, not trained: the speed is real, the outputs carry no "
        "accuracy)"
    )
    assert weights_statement(_job(), real_weights={"tiny"}) is None


def test_a_user_model_or_a_trained_zoo_model_makes_no_claim() -> None:
    entry = _entry()
    override = _job(model_override=Path("/models/resnet50_v1.onnx"))
    trained = dataclasses.replace(_plan(entry), real_weights=frozenset({"tiny"}))
    for job, plan in ((override, _plan(entry)), (_job(), trained)):
        readme = result_readme(entry, job, plan)
        data = measurements(entry, job, plan.real_weights)
        assert SYNTHETIC_WEIGHTS not in readme and "not trained" not in readme
        assert SYNTHETIC_WEIGHTS not in json.dumps(data) and "not trained" not in json.dumps(data)
    assert measurements(entry, _job(), {"tiny"})["starting_weights_filename"].endswith(
        "), with trained weights"
    )
