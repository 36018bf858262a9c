"""llm-tiny under LoadGen through `harness run`: token figures present, consistent, checked.

Each scenario is a real run: LoadGen with token latencies, onnxruntime-genai generating,
the generative SUT reporting first tokens and token counts. The SUT's own per-query times
(token_times.npz) are an independent account that LoadGen's figures must agree with:
tokens/s within 2 % of the tokens made over the span from first issue to last answer; TTFT
p50 and TPOT p50 within 15 % (+0.5 ms and +0.05 ms: LoadGen stamps a query when it schedules
it, the SUT when its issue callback runs) of those recomputed per query from the SUT's times,
TPOT = (latency - TTFT) / (tokens - 1). Two cheating SUTs
(tests/cheats/sitecustomize.py) that LoadGen calls VALID are refused by the token checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from tests.conftest import REPO, write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

SCENARIO = """
name: llm-tiny-{name}
scenario: {scenario}
model: {{zoo: llm-tiny}}
trials: 1
generation:
  input_tokens: {{min: 8, max: 40}}
  output_tokens: {{min: 6, max: 20}}
  hold_eos: true
  {extra}
{server}
data: {{total_sample_count: 32}}
warmup: {{min_queries: 4, min_duration_ms: 0}}
quick: {{min_duration_ms: 1500, min_query_count: 24, performance_sample_count: 32}}
"""
EXTRA = {
    "SingleStream": "",
    "Offline": "",
    "Server": "limits: {ttft_ms: 200, tpot_ms: 50}\n  max_active: 3",
    "Interactive": "limits: {ttft_ms: 100, tpot_ms: 25}\n  interactive: true",
}
CHEATS_PATH = REPO / "tests" / "cheats"


def _run(tmp: Path, kind: str, cheat: str | None = None) -> tuple[int, Path, dict[str, Any]]:
    scenario = "Server" if kind == "Interactive" else kind
    server = "server: {target_qps: 30}" if scenario == "Server" else ""
    text = SCENARIO.format(name=kind.lower(), scenario=scenario, extra=EXTRA[kind], server=server)
    path = write_scenario(tmp / f"{kind}.yaml", text)
    with pytest.MonkeyPatch.context() as patch:
        if cheat is not None:
            patch.setenv("BT_CHEAT", cheat)
            patch.setenv("PYTHONPATH", f"{CHEATS_PATH}:{REPO}")
        code = main(["run", str(path), "--out", str(tmp / "runs")])
    (group,) = (tmp / "runs").iterdir()
    (run,) = [p.parent for p in group.rglob("result.json")]
    return code, run, json.loads((run / "result.json").read_text())


@pytest.fixture(scope="module", params=["SingleStream", "Offline", "Server", "Interactive"])
def honest(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, int, Path, dict[str, Any]]:
    kind = str(request.param)
    return (kind, *_run(tmp_path_factory.mktemp(kind), kind))


def _times(run: Path) -> dict[str, np.ndarray]:
    with np.load(run / "token_times.npz") as data:
        return {k: data[k] for k in data.files}


def test_token_figures_are_present_and_pass_their_checks(
    honest: tuple[str, int, Path, dict[str, Any]],
) -> None:
    kind, code, run, result = honest
    gen = result["generation"]
    assert gen["token_problems"] == []
    assert gen["tokens_per_second"] > 0
    # Server batches continuously: onnxruntime decode steps, genai's tokenizer (genbatcher)
    engine = "continuous batch" if kind in ("Server", "Interactive") else "onnxruntime-genai 0.18"
    assert engine in gen["engine"]
    out = gen["output_tokens"]
    assert 6 <= out["min"] <= out["max"] <= 20  # hold_eos: every sample makes its budget
    assert out["queries"] == len(_times(run)["tokens"])
    if kind == "Offline":
        assert gen["ttft_ns"] is None and gen["tpot_ns"] is None
        assert gen["ttft_early_stopping"] is None and gen["tpot_early_stopping"] is None
        assert result["valid"] and code == 0
    else:
        for block in ("ttft_ns", "tpot_ns"):
            assert 0 < gen[block]["p50"] <= gen[block]["p90"] <= gen[block]["p99"]
        # LoadGen's early-stopping results, kept beside: estimates in SingleStream only
        early = [gen["ttft_early_stopping"], gen["tpot_early_stopping"]]
        if kind == "SingleStream":
            for found in early:
                assert 0 < found["p90_ns"] <= found["p99_ns"]
                assert "99.0th percentile estimate" in found["text"]
        else:  # Server: a verdict, for one latency at least (6.0.17)
            assert all(e is None or e["p99_ns"] is None for e in early)
            assert any(e and e["text"].startswith("* Run ") for e in early), early
    assert result["settings"]["sample_concatenate_permutation"] is True  # equal issue, as MLPerf
    detail = (run / "mlperf_log_detail.txt").read_text()
    assert '"key": "requested_use_token_latencies", "value": true' in detail
    key = "result_tokens_per_second" if kind == "Offline" else "result_first_token_99.00"
    assert key in detail


def test_tokens_per_second_is_the_tokens_made_over_the_run(
    honest: tuple[str, int, Path, dict[str, Any]],
) -> None:
    _, _, run, result = honest
    times = _times(run)
    span_s = (times["end_ns"].max() - times["issue_ns"].min()) / 1e9
    counted = times["tokens"].sum() / span_s
    assert result["generation"]["tokens_per_second"] == pytest.approx(counted, rel=0.02)
    told = result["generation"]["output_tokens_per_query"]
    assert told == pytest.approx(times["tokens"].mean(), rel=0.05)


def test_ttft_and_tpot_agree_with_the_sut_s_own_times(
    honest: tuple[str, int, Path, dict[str, Any]],
) -> None:
    kind, _, run, result = honest
    if kind == "Offline":
        pytest.skip("LoadGen measures no first token in Offline")
    times = _times(run)
    latency = times["end_ns"] - times["issue_ns"]
    ttft = times["first_ns"] - times["issue_ns"]
    assert (ttft < latency).all()  # the first token comes before the end, in every query
    gen, lat = result["generation"], result["latency_ns"]
    assert gen["ttft_ns"]["p50"] < lat["p50"] and gen["ttft_ns"]["p99"] <= lat["max"]
    tpot = (latency - ttft) / (times["tokens"] - 1)
    assert gen["ttft_ns"]["p50"] == pytest.approx(np.median(ttft), rel=0.15, abs=5e5)
    assert gen["tpot_ns"]["p50"] == pytest.approx(np.median(tpot), rel=0.15, abs=5e4)


def test_server_and_interactive_limits_are_the_scenario_s_and_logged(
    honest: tuple[str, int, Path, dict[str, Any]],
) -> None:
    kind, _, run, result = honest
    if kind not in ("Server", "Interactive"):
        pytest.skip("limits apply to Server and Interactive")
    gen = result["generation"]
    ttft_ms, tpot_ms = (200, 50) if kind == "Server" else (100, 25)
    assert (gen["ttft_limit_ns"], gen["tpot_limit_ns"]) == (ttft_ms * 10**6, tpot_ms * 10**6)
    assert "not MLPerf's" in gen["limits_source"]
    key = "llm-tiny-interactive" if kind == "Interactive" else "llm-tiny"
    assert result["loadgen_config"]["model_key"] == key
    user_conf = (run / "user.conf").read_text()
    assert f"{key}.Server.ttft_latency = {ttft_ms}" in user_conf
    assert f"{key}.Server.tpot_latency = {tpot_ms}" in user_conf


@pytest.mark.parametrize(
    ("kind", "cheat", "caught"),
    [
        ("SingleStream", "token-count", "token counts reported to LoadGen are wrong"),
        # Server: LoadGen 6.0.17 itself crashes (SIGSEGV) in SingleStream without a first token
        ("Server", "no-first-token", "no time to first token"),
    ],
)
def test_a_sut_that_misreports_tokens_is_invalid(
    tmp_path: Path, kind: str, cheat: str, caught: str
) -> None:
    code, _, result = _run(tmp_path, kind, cheat)
    problems = result["generation"]["token_problems"]
    assert any(caught in p for p in problems), problems
    assert not result["valid"] and code == 1
    assert any(caught in r for r in result["invalid_reasons"])
