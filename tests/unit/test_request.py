"""The run request: one model-name rule, LoadGen's key, and one record from the CLI to job.json."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.config import load_scenario, model_name
from harness.loadgen.conf import user_conf_overrides
from harness.records.job import Job, read_job, write_job
from harness.records.request import Expectation, RunRequest
from tests.conftest import TINY_SS, write_scenario


@pytest.fixture
def request_(tmp_path: Path) -> RunRequest:
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_SS))
    return RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )


def test_a_zoo_model_is_named_by_the_zoo(request_: RunRequest) -> None:
    assert request_.model_name == request_.scenario.model.name == "tiny"
    assert request_.loadgen_key == "tiny"


def test_a_model_file_is_named_by_its_stem(request_: RunRequest) -> None:
    model = dataclasses.replace(
        request_.scenario.model, zoo=None, generator=None, path="models/bert.onnx"
    )
    assert model_name(model) == model.name == "bert"
    scenario = dataclasses.replace(request_.scenario, model=model)
    assert dataclasses.replace(request_, scenario=scenario).model_name == "bert"


def test_an_override_names_the_run_and_loadgen_gets_a_key_it_can_read(
    request_: RunRequest,
) -> None:
    override = dataclasses.replace(request_, model_override=Path("/m/my model.v2.onnx"))
    assert override.model_name == "my model.v2"  # the run directory sanitises it itself
    assert override.loadgen_key == "my_model.v2"  # LoadGen's parser splits on whitespace
    named = dataclasses.replace(request_.scenario.model, loadgen_name="resnet50")
    scenario = dataclasses.replace(request_.scenario, model=named)
    assert dataclasses.replace(override, scenario=scenario).loadgen_key == "resnet50"


def test_the_request_travels_whole_through_job_json(request_: RunRequest, tmp_path: Path) -> None:
    request = dataclasses.replace(request_, model_override=tmp_path / "m.onnx", strict=True)
    expected = Expectation(latency_ns=2.5e6, samples_per_second=400.0)
    job = Job(request=request, test="performance", run_dir=tmp_path / "run", expected=expected)
    back = read_job(write_job(job, tmp_path / "job.json"))
    assert back.request == request and back.expected == expected


def test_loadgen_sizes_its_run_from_the_same_expectation(request_: RunRequest) -> None:
    expected = Expectation(latency_ns=4_000_000.0, samples_per_second=250.0)
    overrides = user_conf_overrides(request_.scenario, "quick", expected)
    assert overrides["target_latency"] == 2.0  # half the expected latency, in ms
