"""A generative scenario's grammar, its LoadGen keys, prompts, token figures and token checks."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from harness.analysis.tokens import output_tokens, token_problems
from harness.analysis.values import headline, reported
from harness.config import load_scenario
from harness.datasets.prompts import FIRST_ORDINARY_ID, synthetic_prompts
from harness.errors import ConfigError, ResultError
from harness.execution.genrecording import server_limits
from harness.generation import GenerationConfig, TokenRange
from harness.loadgen.conf import official_mlperf_conf, token_overrides
from harness.loadgen.timed import TestPlan
from harness.records.genmetrics import generative_metrics
from harness.records.loadgen_log import TokenFigures, parse_detail_lines, token_figures
from harness.records.metrics import ES_P90, THROUGHPUT, TOKENS, TPOT_P99, TTFT_P99
from harness.records.request import RunRequest
from harness.records.result import RunResult
from harness.results.migrate import upgrade
from tests.conftest import REPO, write_scenario

BASE = """
name: g
scenario: {scenario}
model: {{zoo: llm-tiny{extra_model}}}
{server}
generation:
  {generation}
"""


def _scenario(tmp_path: Path, generation: str, scenario: str = "Offline", **more: str) -> Path:
    server = "server: {target_qps: 5}" if scenario == "Server" else ""
    text = BASE.format(
        scenario=scenario,
        server=more.get("server", server),
        generation=generation,
        extra_model=more.get("extra_model", ""),
    )
    return write_scenario(tmp_path / "g.yaml", text)


def test_the_shipped_llm_scenarios_load(tmp_path: Path) -> None:
    for name in ("singlestream", "offline", "server", "interactive"):
        scenario = load_scenario(REPO / "scenarios" / f"llm-tiny-{name}.yaml")
        assert scenario.generation is not None and scenario.model.zoo == "llm-tiny"
    server = load_scenario(REPO / "scenarios" / "llm-tiny-interactive.yaml")
    assert server.generation is not None and server.generation.interactive
    real = load_scenario(REPO / "scenarios" / "smollm2-offline.yaml")
    assert real.generation is not None and real.generation.prompts == "text"


@pytest.mark.parametrize(
    ("generation", "scenario", "fragment"),
    [
        ("tempature: 0.7", "Offline", "unknown key 'generation.tempature' (allowed: "),
        ("output_tokens: {min: 1, max: 4}", "Offline", "output_tokens.min: LoadGen's time per"),
        ("output_tokens: {min: 8, max: 4}", "Offline", "must satisfy 1 <= min <= max"),
        ("prompts: json", "Offline", "generation.prompts: 'json' is not allowed"),
        ("prompts: file", "Offline", "path: give a JSONL prompt file with prompts: file"),
        ("path: p.jsonl", "Offline", "path: give a JSONL prompt file with prompts: file"),
        ("max_active: 0", "Offline", "max_active: must be 1..256"),
        ("limits: {ttft_ms: 0, tpot_ms: 5}", "Server", "ttft_ms: must be > 0"),
        ("hold_eos: true", "MultiStream", "MultiStream has no generative benchmark"),
    ],
)
def test_a_bad_generation_block_is_one_clear_error(
    tmp_path: Path, generation: str, scenario: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_scenario(_scenario(tmp_path, generation, scenario))
    assert fragment in str(caught.value) and str(tmp_path / "g.yaml") in str(caught.value)


def test_a_generative_server_may_search_its_rate_and_runs_one_sequence_per_query(
    tmp_path: Path,
) -> None:
    searched = load_scenario(_scenario(tmp_path, "hold_eos: true", "Server", server=""))
    assert searched.server.target_qps is None  # the capacity search finds it
    path = _scenario(tmp_path, "hold_eos: true")
    path.write_text(path.read_text() + "batch_size: 4\n")
    with pytest.raises(ConfigError, match="batch_size: a generative scenario generates one"):
        load_scenario(path)
    path = _scenario(tmp_path, "hold_eos: true")
    path.write_text(path.read_text() + "runtime: {intra_op_threads: 2}\n")
    assert load_scenario(path).runtime.intra_op_threads == 2  # genai's session takes it
    path = _scenario(tmp_path, "hold_eos: true")
    path.write_text(path.read_text() + "runtime: {intra_op_threads: 2, allow_spinning: false}\n")
    with pytest.raises(ConfigError, match="runtime: a generative scenario takes only runtime"):
        load_scenario(path)


def _request(path: Path) -> RunRequest:
    return RunRequest(scenario=load_scenario(path), scenario_path=path, profile="quick", hw="cpu")


def test_server_limits_come_from_the_scenario_or_mlperf_conf_never_silently(
    tmp_path: Path,
) -> None:
    own = _request(_scenario(tmp_path, "limits: {ttft_ms: 40, tpot_ms: 8}", "Server"))
    keys = token_overrides(own.scenario, own.loadgen_key)
    assert keys == {
        "use_token_latencies": 1,
        "sample_concatenate_permutation": 1,
        "target_latency": 0,
        "ttft_latency": 40.0,
        "tpot_latency": 8.0,
    }
    none = _request(_scenario(tmp_path, "hold_eos: true", "Server"))
    with pytest.raises(ConfigError, match=r"mlperf\.conf has no TTFT/TPOT limits for 'llm-tiny'"):
        token_overrides(none.scenario, none.loadgen_key)
    mlperf = _request(
        _scenario(
            tmp_path, "interactive: true", "Server", extra_model=", loadgen_name: llama3_1-8b"
        )
    )
    assert mlperf.loadgen_key == "llama3_1-8b-interactive"  # MLPerf's Interactive config name
    assert token_overrides(mlperf.scenario, mlperf.loadgen_key) == {
        "use_token_latencies": 1,
        "sample_concatenate_permutation": 1,
    }  # mlperf.conf's 500 ms / 30 ms apply as they are
    offline = _request(_scenario(tmp_path, "hold_eos: true"))
    assert "ttft_latency" not in token_overrides(offline.scenario, offline.loadgen_key)


def test_synthetic_prompts_follow_the_seed_and_the_stated_lengths() -> None:
    config = GenerationConfig(
        input_tokens=TokenRange(min=5, max=9), output_tokens=TokenRange(min=3, max=6)
    )
    a = synthetic_prompts(config, vocab=100, count=50, seed=7)
    b = synthetic_prompts(config, vocab=100, count=50, seed=7)
    c = synthetic_prompts(config, vocab=100, count=50, seed=8)
    assert all(np.array_equal(x, y) for x, y in zip(a.ids, b.ids, strict=True))
    assert a.budgets == b.budgets and a.budgets != c.budgets
    assert {len(i) for i in a.ids} == {5, 6, 7, 8, 9} and set(a.budgets) == {3, 4, 5, 6}
    assert all(
        i.dtype == np.int32 and i.min() >= FIRST_ORDINARY_ID and i.max() < 100 for i in a.ids
    )


def _log(values: dict[str, object]) -> list[str]:
    return [
        ":::MLLOG " + json.dumps({"key": k, "value": v, "metadata": {}}) for k, v in values.items()
    ]


def test_token_figures_are_read_from_the_detail_log() -> None:
    server = parse_detail_lines(
        _log(
            {
                "requested_use_token_latencies": True,
                "result_completed_tokens_per_second": 696.47,
                "result_first_token_50.00_percentile_latency_ns": 1329242,
                "result_first_token_90.00_percentile_latency_ns": 6307560,
                "result_first_token_99.00_percentile_latency_ns": 10689578,
                "result_time_per_output_token_50.00_percentile_ns": 100517,
                "result_time_per_output_token_90.00_percentile_ns": 523058,
                "result_time_per_output_token_99.00_percentile_ns": 1364253,
            }
        )
    )
    figures = token_figures(server)
    assert figures == TokenFigures(
        tokens_per_second=696.47,
        ttft_ns={"p50": 1329242, "p90": 6307560, "p99": 10689578},
        tpot_ns={"p50": 100517, "p90": 523058, "p99": 1364253},
    )
    offline = token_figures(
        parse_detail_lines(
            _log({"requested_use_token_latencies": True, "result_tokens_per_second": 2700.24})
        )
    )
    assert offline == TokenFigures(tokens_per_second=2700.24, ttft_ns=None, tpot_ns=None)
    assert token_figures(parse_detail_lines(_log({"result_samples_per_second": 5.0}))) is None


HONEST = TokenFigures(
    tokens_per_second=700.0,
    ttft_ns={"p50": 1_300_000, "p90": 6_000_000, "p99": 10_000_000},
    tpot_ns={"p50": 100_000, "p90": 500_000, "p99": 1_300_000},
)


def test_the_token_checks_pass_an_honest_run_and_name_each_cheat() -> None:
    counted = output_tokens([17, 18, 19] * 10)
    assert counted is not None and counted.mean == 18.0 and (counted.min, counted.max) == (17, 19)
    assert (
        token_problems(scenario="Server", figures=HONEST, counted=counted, span_s=540 / 700 * 1.01)
        == ()
    )
    doubled = token_problems(
        scenario="Server", figures=HONEST, counted=counted, span_s=2 * 540 / 700
    )
    assert len(doubled) == 1 and "LoadGen was told 36.00 tokens per query" in doubled[0]
    zeros = TokenFigures(
        tokens_per_second=700.0, ttft_ns={"p50": 0, "p90": 0, "p99": 0}, tpot_ns=HONEST.tpot_ns
    )
    silent = token_problems(
        scenario="SingleStream", figures=zeros, counted=counted, span_s=540 / 700
    )
    assert len(silent) == 1 and "did not report first tokens" in silent[0]
    offline = TokenFigures(tokens_per_second=700.0, ttft_ns=None, tpot_ns=None)
    assert (
        token_problems(scenario="Offline", figures=offline, counted=counted, span_s=540 / 700) == ()
    )
    short = output_tokens([1, 18])
    found = token_problems(scenario="Offline", figures=offline, counted=short, span_s=19 / 700)
    assert found == (
        "a query produced 1 token(s): LoadGen's time per output token needs 2 or more per query",
    )


def test_an_older_result_reads_with_no_generation_block() -> None:
    upgraded = upgrade({"schema_version": 7, "run_id": "x"}, 7, 9)
    assert upgraded == {
        "schema_version": 9,
        "run_id": "x",
        "label": None,
        "memory": None,
        "generation": None,
    }


def test_generative_results_are_judged_by_tokens_as_mlperf_judges_llms() -> None:
    generated = [cast(RunResult, SimpleNamespace(generation=object()))] * 2
    assert headline("Offline", generated) == TOKENS
    assert headline("Server", generated) == TOKENS
    assert reported("Server", generated)[:2] == (TTFT_P99, TPOT_P99)
    assert generative_metrics("SingleStream").headline == ES_P90  # llama3.1-8b-edge: e2e p90
    mixed = [*generated, cast(RunResult, SimpleNamespace(generation=None))]
    assert headline("Offline", mixed) == THROUGHPUT  # not every result generated
    with pytest.raises(ResultError, match="no generative metrics for scenario 'MultiStream'"):
        generative_metrics("MultiStream")


def test_the_recorded_limits_are_mlperf_conf_s_for_an_mlperf_llm_name(tmp_path: Path) -> None:
    request = _request(
        _scenario(
            tmp_path, "interactive: true", "Server", extra_model=", loadgen_name: llama3_1-8b"
        )
    )
    (tmp_path / "mlperf.conf").write_text(official_mlperf_conf())
    plan = TestPlan(
        scenario="Server",
        mode="performance",
        model_key=request.loadgen_key,
        mlperf_conf=tmp_path / "mlperf.conf",
        user_conf=tmp_path / "user.conf",
        out_dir=tmp_path,
        total_sample_count=1,
    )
    assert server_limits(request.scenario, plan) == (
        500_000_000,
        30_000_000,
        "mlperf.conf's for llama3_1-8b-interactive (MLPerf's)",
    )
    own = _request(_scenario(tmp_path, "limits: {ttft_ms: 40, tpot_ms: 8}", "Server"))
    assert server_limits(own.scenario, plan) == (
        40_000_000,
        8_000_000,
        "the scenario's generation.limits (not MLPerf's)",
    )
