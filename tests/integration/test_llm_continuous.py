"""Server's continuous batching on llm-tiny: real LoadGen runs, real onnxruntime decode steps.

Queries join a running batch between decode steps (the SUT's own stamps show a query starting
while another is mid-generation, and the batch log counts them); every token served equals
the same prompt generated alone by onnxruntime-genai (batching must not change tokens); the
concurrency distribution reaches result.json and show. Two cheating schedulers (truncating
and dropping rows, tests/cheats/sitecustomize.py) are caught.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from harness.datasets.prompts import synthetic_prompts
from harness.execution.genexact import served_tokens
from harness.generation import GenerationConfig, TokenRange
from harness.models.llm.variants import generative_variant
from harness.runtime.genai import GenaiModel
from harness.runtime.kvbatch import ContinuousBatch
from tests.conftest import REPO, write_scenario

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

MAX_ACTIVE = 4
SCENARIO = f"""
name: llm-tiny-continuous
scenario: Server
model: {{zoo: llm-tiny}}
trials: 1
generation:
  input_tokens: {{min: 8, max: 40}}
  output_tokens: {{min: 6, max: 20}}
  hold_eos: true
  limits: {{ttft_ms: 200, tpot_ms: 50}}
  max_active: {MAX_ACTIVE}
server: {{target_qps: 120}}
data: {{total_sample_count: 32}}
warmup: {{min_queries: 4, min_duration_ms: 0}}
quick: {{min_duration_ms: 1500, min_query_count: 120, performance_sample_count: 32}}
"""
CHEATS_PATH = REPO / "tests" / "cheats"


def _run(tmp: Path, cheat: str | None = None) -> tuple[int, Path | None]:
    path = write_scenario(tmp / "server.yaml", SCENARIO)
    with pytest.MonkeyPatch.context() as patch:
        if cheat is not None:
            patch.setenv("BT_CHEAT", cheat)
            patch.setenv("PYTHONPATH", f"{CHEATS_PATH}:{REPO}")
        code = main(["run", str(path), "--out", str(tmp / "runs")])
    found = [p.parent for p in (tmp / "runs").rglob("result.json") if p.parent.name != "accuracy"]
    return code, (found[0] if found else None)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, dict[str, Any]]:
    code, run = _run(tmp_path_factory.mktemp("continuous"))
    assert run is not None
    return code, run, json.loads((run / "result.json").read_text())


def test_queries_join_a_running_batch(served: tuple[int, Path, dict[str, Any]]) -> None:
    _, run, result = served
    generation = result["generation"]
    assert generation["token_problems"] == []
    assert "continuous batch" in generation["engine"]
    batch = generation["concurrency"]
    assert batch["scheduler"] == "continuous"
    assert len(batch["histogram"]) == MAX_ACTIVE + 1
    assert sum(batch["histogram"]) == batch["steps"] > 0
    assert 2 <= batch["max"] <= MAX_ACTIVE and batch["histogram"][0] == 0
    assert batch["p50"] <= batch["p90"] <= batch["p99"] <= batch["max"]
    assert 0 < batch["joined_running"] <= batch["admitted"]
    # the SUT's stamps: a query began generating while another was between tokens
    with np.load(run / "token_times.npz") as times:
        start, first, end = times["start_ns"], times["first_ns"], times["end_ns"]
    joined = (start[:, None] > first[None, :]) & (start[:, None] < end[None, :])
    assert joined.any()
    # and got its first token before that other query ended: it did not wait for the batch
    assert (joined & (first[:, None] < end[None, :])).any()


def test_served_tokens_equal_one_at_a_time_generation(
    served: tuple[int, Path, dict[str, Any]],
) -> None:
    code, run, result = served
    tokens = served_tokens(run / "accuracy" / "mlperf_log_accuracy.json")
    assert len(tokens) == 32
    model = GenaiModel(generative_variant("llm-tiny", "fp32").directory)
    config = GenerationConfig(
        input_tokens=TokenRange(min=8, max=40), output_tokens=TokenRange(min=6, max=20)
    )
    prompts = synthetic_prompts(config, vocab=512, count=32, seed=0)
    assert result["generation"]["prompts"] == prompts.description
    for index, got in tokens.items():
        budget = prompts.budgets[index]
        lone = model.start(prompts.ids[index], max_new_tokens=budget, min_new_tokens=budget)
        while not lone.done:
            lone.step()
        assert got == lone.tokens, index
    assert code in (0, 1)  # VALID or not by LoadGen's limits on a busy machine; never an error


def test_show_prints_the_concurrency_distribution(
    served: tuple[int, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, run, result = served
    capsys.readouterr()
    assert main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    batch = result["generation"]["concurrency"]
    assert f"max {batch['max']} over {batch['steps']} steps" in out
    assert f"{batch['joined_running']} of {batch['admitted']} queries joined" in out


def test_rows_joining_between_steps_keep_their_lone_tokens() -> None:
    """Admissions at every third step, mixed budgets and end-of-text rules, with repacking."""
    directory = generative_variant("llm-tiny", "fp32").directory
    model, batch = GenaiModel(directory), ContinuousBatch(directory)
    rng = np.random.default_rng(3)
    prompts = [
        rng.integers(3, 511, size=int(rng.integers(4, 60))).astype(np.int32) for _ in range(24)
    ]
    budgets = [int(rng.integers(2, 48)) for _ in prompts]
    least = [b if i % 2 else 2 for i, b in enumerate(budgets)]
    out: dict[int, list[int]] = {}
    step, admitted, widest = 0, 0, 0
    while admitted < len(prompts) or batch.rows:
        if admitted < len(prompts) and (step % 3 == 0 or not batch.rows):
            row = batch.admit(
                admitted,
                prompts[admitted],
                max_new_tokens=budgets[admitted],
                min_new_tokens=least[admitted],
            )
            if row.done:
                out[row.key] = row.tokens
            admitted += 1
        widest = max(widest, len(batch.rows))
        out.update({row.key: row.tokens for row in batch.step()})
        step += 1
    assert widest >= 4
    for i, prompt in enumerate(prompts):
        lone = model.start(prompt, max_new_tokens=budgets[i], min_new_tokens=least[i])
        while not lone.done:
            lone.step()
        assert out[i] == lone.tokens, i


@pytest.mark.parametrize(
    ("cheat", "caught"),
    [
        ("truncate-row", "differ from one-at-a-time greedy generation"),
        ("drop-row", "differ from one-at-a-time greedy generation"),
    ],
)
def test_a_scheduler_that_truncates_or_drops_rows_is_caught(
    tmp_path: Path, cheat: str, caught: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _run(tmp_path, cheat)
    assert code != 0
    assert caught in capsys.readouterr().err
