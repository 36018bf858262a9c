"""Offline's batches (harness.runtime.genai.Batch): each row is what its prompt makes alone.

llm-tiny under onnxruntime-genai: prompts of different lengths (right-padded) and budgets in
one batch give, row by row, the tokens of a lone greedy generation, ending at the row's
budget (or at end-of-text once allowed); a prompt holding the pad id is not batched.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.errors import RunError
from harness.models.llm.store import generative_model_dir

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")

from harness.runtime.genai import GenaiModel


@pytest.fixture(scope="module")
def tiny(model_cache: Path) -> GenaiModel:
    return GenaiModel(generative_model_dir("llm-tiny", root=model_cache))


def _alone(model: GenaiModel, prompt: np.ndarray, budget: int, hold_eos: bool) -> list[int]:
    sequence = model.start(prompt, max_new_tokens=budget, min_new_tokens=budget if hold_eos else 2)
    while not sequence.done:
        sequence.step()
    return sequence.tokens


@pytest.mark.parametrize("hold_eos", [True, False])
def test_each_row_equals_its_prompt_generated_alone(tiny: GenaiModel, hold_eos: bool) -> None:
    rng = np.random.default_rng(3)
    prompts = [rng.integers(3, 512, size=n).astype(np.int32) for n in (5, 40, 17, 1)]
    budgets = [9, 3, 24, 12]
    batch = tiny.start_batch(prompts, budgets=budgets, hold_eos=hold_eos)
    ended: list[int] = []
    while not batch.done:
        ended += batch.step()
    assert sorted(ended) == [0, 1, 2, 3]
    alone = [_alone(tiny, p, b, hold_eos) for p, b in zip(prompts, budgets, strict=True)]
    assert batch.tokens == alone
    if hold_eos:
        assert [len(t) for t in batch.tokens] == budgets
    assert ended.index(1) < ended.index(0) < ended.index(2)  # shorter budgets end first


def test_a_prompt_holding_the_pad_id_runs_alone_not_batched(tiny: GenaiModel) -> None:
    padded = np.asarray([5, tiny.pad_id, 7], dtype=np.int32)
    assert not tiny.batchable(padded) and tiny.batchable(padded[:1])
    with pytest.raises(RunError, match="holds the pad id"):
        tiny.start_batch([padded, padded[:1]], budgets=[3, 3], hold_eos=True)
    alone = tiny.start_batch([padded], budgets=[4], hold_eos=True)
    while not alone.done:
        alone.step()
    assert alone.tokens == [_alone(tiny, padded, 4, True)]


def test_a_directory_without_its_genai_config_is_one_run_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=r"could not load it: genai_config\.json"):
        GenaiModel(tmp_path)
    (tmp_path / "genai_config.json").write_text('{"model": {"eos_token_id": 2}}')
    with pytest.raises(RunError, match="pad_token_id"):
        GenaiModel(tmp_path)
