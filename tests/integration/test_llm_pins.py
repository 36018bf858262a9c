"""A generative run applies its request's LoadGen pins, as the CNN runner does.

`pins` (harness.records.request.LoadGenPins) are the LoadGen settings and RNG seeds a
reproduction holds fixed: conf keys written last in user.conf, seeds set on LoadGen's
TestSettings (harness.loadgen.plan.write_test_confs, their one home). A real llm-tiny
Offline run under pins must hand them to LoadGen: its detail log's effective settings,
recorded in result.json, are the pinned ones, not the harness's or mlperf.conf's; and so must
every step of a generative Server peak search (each its own LoadGen run).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.analysis.accuracy import write_accuracy_block
from harness.analysis.genaccuracy import generative_accuracy
from harness.config import load_scenario
from harness.execution import genrunner
from harness.execution.genpeaksearch import run_generative_peak_search
from harness.loadgen.conf import official_mlperf_conf
from harness.records.job import Job
from harness.records.layout import ACCURACY_DIR, DETAIL_LOG, PEAK_SEARCH_DIR, STEP_PREFIX, USER_CONF
from harness.records.loadgen_log import effective_settings, parse_detail_log
from harness.records.request import Expectation, LoadGenPins, RunRequest
from harness.records.result import RunResult
from harness.stopping import Phases
from tests.conftest import write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

SCENARIO = """
name: llm-tiny-pinned
scenario: Offline
model: {zoo: llm-tiny}
generation:
  input_tokens: {min: 8, max: 16}
  output_tokens: {min: 4, max: 8}
  hold_eos: true
  max_active: 4
data: {total_sample_count: 24}
warmup: {min_queries: 2, min_duration_ms: 0}
quick: {min_duration_ms: 200, min_query_count: 8, performance_sample_count: 16}
"""
SEEDS = (("qsl_rng_seed", 1234567), ("sample_index_rng_seed", 7654321))
# Not the quick profile's: min_duration 200 ms and performance_sample_count 16
CONF = (("min_duration", 250), ("performance_sample_count_override", 24))


def test_a_generative_run_applies_its_pins(tmp_path: Path) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "pinned.yaml", SCENARIO))
    pins = LoadGenPins(conf=CONF, seeds=SEEDS, source="published detail log")
    request = RunRequest(
        scenario=scenario, scenario_path=None, profile="quick", hw="cpu", pins=pins
    )
    run_dir = tmp_path / "run"
    (run_dir / ACCURACY_DIR).mkdir(parents=True)
    write_accuracy_block(generative_accuracy(None), run_dir / ACCURACY_DIR)  # FP32: itself
    job = Job(request=request, test="performance", run_dir=run_dir)
    out = genrunner.run_generative(job, phases=Phases("performance", "start"))
    if isinstance(out, Expectation):  # LoadGen's first attempt was sized too small
        job = dataclasses.replace(job, expected=out, attempt=2)
        out = genrunner.run_generative(job, phases=Phases("performance", "start"))
    assert isinstance(out, RunResult)

    assert "llm-tiny.Offline.min_duration = 250" in (run_dir / USER_CONF).read_text()
    settings = out.settings
    assert settings["min_duration_ms"] == 250
    assert settings["performance_sample_count"] == 24
    assert settings["qsl_rng_seed"] == 1234567
    assert settings["sample_index_rng_seed"] == 7654321
    # The seed left unpinned is mlperf.conf's own
    official = official_mlperf_conf()
    assert f"schedule_rng_seed = {settings['schedule_rng_seed']}" in official


SERVER = """
name: llm-tiny-pinned-search
scenario: Server
model: {zoo: llm-tiny}
generation:
  input_tokens: {min: 8, max: 16}
  output_tokens: {min: 4, max: 8}
  hold_eos: true
  limits: {ttft_ms: 200, tpot_ms: 50}
  max_active: 3
data: {total_sample_count: 24}
warmup: {min_queries: 4, min_duration_ms: 0}
quick: {min_duration_ms: 200, min_query_count: 16, performance_sample_count: 16}
"""


def test_each_step_of_a_generative_peak_search_applies_its_pins(tmp_path: Path) -> None:
    scenario = load_scenario(write_scenario(tmp_path / "search.yaml", SERVER))
    pins = LoadGenPins(conf=CONF, seeds=SEEDS, source="published detail log")
    request = RunRequest(
        scenario=scenario, scenario_path=None, profile="quick", hw="cpu", pins=pins
    )
    run_dir = tmp_path / PEAK_SEARCH_DIR
    run_dir.mkdir()
    job = Job(request=request, test="performance", run_dir=run_dir)
    search = run_generative_peak_search(job, phases=Phases("performance", "start"))
    steps = sorted(run_dir.glob(f"{STEP_PREFIX}*"))
    assert len(steps) == len(search.steps) >= 2
    for step in steps:
        settings = effective_settings(parse_detail_log(step / DETAIL_LOG))
        assert settings["min_duration_ms"] == 250
        assert settings["performance_sample_count"] == 24
        assert (settings["qsl_rng_seed"], settings["sample_index_rng_seed"]) == (1234567, 7654321)
