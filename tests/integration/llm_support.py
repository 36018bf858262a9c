"""Greedy generation two ways: genai with its KV cache, and plain onnxruntime recomputing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest

og = pytest.importorskip(
    "onnxruntime_genai", reason="onnxruntime-genai is not installed (the llm extra; `make venv`)"
)

Logits = npt.NDArray[np.float32]


def genai_greedy(
    model_dir: Path, ids: list[int], new_tokens: int
) -> tuple[list[int], list[Logits]]:
    """genai's greedy tokens and, for each, the logits it was chosen from."""
    model = og.Model(str(model_dir))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + new_tokens)
    generator = og.Generator(model, params)
    generator.append_tokens(np.asarray(ids, dtype=np.int32))
    tokens: list[int] = []
    logits: list[Logits] = []
    while not generator.is_done():
        logits.append(np.asarray(generator.get_logits(), dtype=np.float32).reshape(-1))
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens, logits


def recompute_greedy(
    model_dir: Path, ids: list[int], new_tokens: int
) -> tuple[list[int], list[Logits]]:
    """The same loop in plain onnxruntime: no cache, the whole sequence every step."""
    decoder = json.loads((model_dir / "genai_config.json").read_text())["model"]["decoder"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(
        str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    shape = (1, decoder["num_key_value_heads"], 0, decoder["head_size"])
    empty = np.zeros(shape, dtype=np.float32)
    past = {
        f"past_key_values.{i}.{kind}": empty
        for i in range(decoder["num_hidden_layers"])
        for kind in ("key", "value")
    }
    sequence = list(ids)
    tokens: list[int] = []
    logits: list[Logits] = []
    for _ in range(new_tokens):
        n = len(sequence)
        feed = {
            "input_ids": np.asarray([sequence], dtype=np.int64),
            "attention_mask": np.ones((1, n), dtype=np.int64),
            "position_ids": np.arange(n, dtype=np.int64)[None, :],
            **past,
        }
        last = session.run(["logits"], feed)[0][0, -1]
        logits.append(last)
        tokens.append(int(np.argmax(last)))
        sequence.append(tokens[-1])
    return tokens, logits


def encode(model_dir: Path, text: str) -> list[int]:
    """genai's tokenizer's ids for ``text``."""
    tokenizer = og.Tokenizer(og.Model(str(model_dir)))
    return [int(i) for i in tokenizer.encode(text)]


def decode(model_dir: Path, ids: list[int]) -> str:
    """genai's tokenizer's text for ``ids``."""
    tokenizer = og.Tokenizer(og.Model(str(model_dir)))
    return str(tokenizer.decode(np.asarray(ids, dtype=np.int32)))


def genai_greedy_batch(model_dir: Path, prompts: list[str], new_tokens: int) -> list[list[int]]:
    """genai's greedy continuations of ``prompts`` as one padded batch."""
    model = og.Model(str(model_dir))
    batch = og.Tokenizer(model).encode_batch(prompts)
    params = og.GeneratorParams(model)
    params.set_search_options(
        max_length=int(batch.shape()[1]) + new_tokens, batch_size=len(prompts)
    )
    generator = og.Generator(model, params)
    generator.append_tokens(batch)
    while not generator.is_done():
        generator.generate_next_token()
    return [[int(t) for t in generator.get_sequence(i)][-new_tokens:] for i in range(len(prompts))]
