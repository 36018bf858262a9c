"""runtime.intra_op_threads reaches generative sessions: genai's and the continuous batch's.

genai reads the overlay's keys strictly (an unknown one fails the load), so a model that loads
and generates under it took the key; the continuous batch's session reports its own options.
"""

from __future__ import annotations

import json

import pytest

from harness.datasets.prompts import synthetic_prompts
from harness.execution.genexact import greedy
from harness.generation import GenerationConfig, TokenRange
from harness.models.llm.store import generative_model_dir
from harness.runtime.genai import GenaiModel, session_overlay
from harness.runtime.kvbatch import ContinuousBatch

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow

GENERATION = GenerationConfig(
    input_tokens=TokenRange(min=8, max=16), output_tokens=TokenRange(min=4, max=8), hold_eos=True
)


def test_the_overlay_names_the_decoder_threads_only_when_set() -> None:
    assert json.loads(session_overlay(0)) == {"model": {}}
    assert json.loads(session_overlay(1, pad_token_id=5)) == {
        "model": {"pad_token_id": 5, "decoder": {"session_options": {"intra_op_num_threads": 1}}}
    }


def test_one_thread_generates_the_same_tokens_and_the_batch_session_takes_it() -> None:
    directory = generative_model_dir("llm-tiny")
    vocab = int(json.loads((directory / "genai_config.json").read_text())["model"]["vocab_size"])
    prompts = synthetic_prompts(GENERATION, vocab=vocab, count=3, seed=0)
    default, one = GenaiModel(directory), GenaiModel(directory, intra_op_threads=1)
    for index in range(prompts.count):
        assert greedy(one, prompts, index, True) == greedy(default, prompts, index, True)
    batch = ContinuousBatch(directory, intra_op_threads=1)
    assert batch._session.get_session_options().intra_op_num_threads == 1
    assert ContinuousBatch(directory)._session.get_session_options().intra_op_num_threads == 0
