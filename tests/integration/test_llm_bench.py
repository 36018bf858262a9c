"""benchmarks/llm.py's measurements on llm-tiny: the bare loop, benchmark_e2e's, the harness's.

Each runs for real (genai, LoadGen) and gives positive figures that agree with how they are
made: benchmark_e2e's step count and token arithmetic, its wall clock holding its timed parts,
the harness run on benchmark_e2e's own prompt file. No timing is judged.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

og = pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm)")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import genai_e2e  # noqa: E402  (benchmarks/genai_e2e.py)
import llm  # noqa: E402  (benchmarks/llm.py)

from harness.datasets.prompts import synthetic_prompts  # noqa: E402
from harness.models.llm.store import generative_model_dir  # noqa: E402

pytestmark = pytest.mark.slow


def _model() -> og.Model:
    return og.Model(str(generative_model_dir("llm-tiny")))


def test_the_bare_loop_gives_positive_figures() -> None:
    directory = generative_model_dir("llm-tiny")
    vocab = int(json.loads((directory / "genai_config.json").read_text())["model"]["vocab_size"])
    prompts = synthetic_prompts(llm.GENERATION, vocab=vocab, count=4, seed=0)
    figures = llm.plain_run(og.Model(str(directory)), prompts, 0.0)
    assert figures.tokens_per_second > 0 and figures.ttft_ms > 0 and figures.tpot_ms > 0
    # a token after the first takes a step, the first a prefill too: TPOT below the mean query
    query_ms = 1e3 * np.mean(prompts.budgets) / figures.tokens_per_second
    assert figures.tpot_ms < query_ms
    assert figures.query_p50_ms > 0 and 0 < figures.gap_mean_ms < figures.query_mean_ms


def test_benchmark_e2e_counts_its_steps_and_tokens_as_the_script_does() -> None:
    model = _model()
    tokenizer = og.Tokenizer(model)
    prompt = genai_e2e.e2e_prompt(model, tokenizer, 8)
    assert prompt
    e2e = genai_e2e.run_e2e(model, tokenizer, prompt, generation_length=6, repetitions=3, warmup=1)
    assert e2e.prompt_tokens == len(tokenizer.encode(prompt))
    assert e2e.max_length == e2e.prompt_tokens + 6 and e2e.batch_size == 1
    assert e2e.token_generation_steps == 3 * 5  # each repetition: the first token, then 5 steps
    for value in (e2e.tokenization_ms, e2e.prompt_ms, e2e.first_sampling_ms, e2e.wall_clock_s):
        assert value > 0
    assert e2e.token_generation_p50_ms > 0 and e2e.token_generation_ms > 0
    assert e2e.ttft_ms == pytest.approx(e2e.prompt_ms + e2e.first_sampling_ms)
    # the script's wall-clock throughput counts the prompt's tokens; the new tokens' does not
    ratio = e2e.wall_clock_tokens_per_second / e2e.generated_tokens_per_second
    assert ratio == pytest.approx(e2e.max_length / 6)
    assert e2e.prompt_tokens_per_second == pytest.approx(1e3 * e2e.prompt_tokens / e2e.prompt_ms)
    # a repetition's wall clock holds its timed parts (means over the same repetitions)
    parts_ms = e2e.tokenization_ms + e2e.ttft_ms + 5 * e2e.token_generation_ms
    assert e2e.wall_clock_s * 1e3 >= 0.99 * parts_ms


def test_the_harness_runs_benchmark_e2e_s_prompt_and_the_ratios_are_formed(
    tmp_path: Path,
) -> None:
    model = _model()
    setup = llm.e2e_setup(model, tmp_path, 8, 4)
    line = json.loads(setup.prompt_file.read_text())
    assert line["max_new_tokens"] == 4 and len(line["input_ids"]) >= 1
    generation = llm.e2e_generation(setup.prompt_file, 4)
    single = llm.harness_run("SingleStream", "llm-tiny", 0.3, tmp_path, generation)
    offline = llm.harness_run("Offline", "llm-tiny", 0.3, tmp_path, generation)
    assert single.ttft_ms > 0 and single.tpot_ms > 0 and single.span_s > 0
    assert offline.tokens_per_second > 0 and offline.span_s > 0
    assert offline.query_p50_ms > 0 and 0 < offline.gap_mean_ms < offline.query_mean_ms
    assert math.isnan(offline.ttft_ms)  # LoadGen measures no first token in Offline
    e2e = genai_e2e.run_e2e(
        model, og.Tokenizer(model), setup.prompt, generation_length=4, repetitions=2, warmup=1
    )
    ratios = llm.ratios_of(offline, single, llm.e2e_figures(e2e))
    assert len(ratios) == len(llm.TARGETS) and all(r > 0 and math.isfinite(r) for r in ratios)


def test_the_minimal_loadgen_sut_answers_every_query_with_its_tokens() -> None:
    """(d)'s floor: LoadGen's own figures on the bare loop; Offline counts every output token."""
    import lg_floor  # benchmarks/lg_floor.py

    directory = generative_model_dir("llm-tiny")
    vocab = int(json.loads((directory / "genai_config.json").read_text())["model"]["vocab_size"])
    prompts = synthetic_prompts(llm.GENERATION, vocab=vocab, count=4, seed=0)
    model = og.Model(str(directory))
    query_s = lg_floor.query_seconds(model, prompts)
    assert query_s > 0
    single = lg_floor.floor_run(model, prompts, "SingleStream", 0.3, query_s)
    offline = lg_floor.floor_run(model, prompts, "Offline", 0.3, query_s)
    assert 0 < single.tpot_ms < single.ttft_ms  # a token after the first is a step, no prefill
    # Offline's rate is LoadGen's count of the tokens the SUT handed back over LoadGen's
    # window, which holds the SUT's own span: never above the SUT's count over that span
    assert offline.answered_tokens >= len(prompts.budgets) * min(prompts.budgets)
    own_rate = offline.answered_tokens / offline.span_s
    assert 0 < offline.tokens_per_second <= 1.01 * own_rate
    assert math.isnan(offline.ttft_ms) or offline.ttft_ms > 0
