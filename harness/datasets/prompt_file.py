"""A user's JSONL prompt file: a sample a line, ``{"prompt": text}`` or ``{"input_ids": [...]}``.

A line may add ``"max_new_tokens"`` (2 or more: LoadGen's time per output token needs two);
otherwise its budget is drawn from ``generation.output_tokens`` as for the other sources.
The file is hostile input: a bounded read of a regular UTF-8 file, strict JSON per line, only
the keys above, token ids below the model's vocabulary; any problem is one ConfigError naming
``file:line`` and the key. Blank lines are skipped. The lines are cycled to the sample count.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.errors import ConfigError
from harness.foreign import read_text
from harness.generation import MAX_TOKENS, GenerationConfig
from harness.strictjson import loads

MAX_PROMPT_FILE_BYTES = 64 * 1024 * 1024
MAX_PROMPT_LINES = 1 << 20
KEYS = ("prompt", "input_ids", "max_new_tokens")


def file_prompts(
    config: GenerationConfig,
    path: Path,
    *,
    encode: Callable[[str], np.ndarray],
    vocab: int,
    count: int,
    seed: int,
) -> tuple[tuple[np.ndarray, ...], tuple[int, ...], str]:
    """Per sample: its token ids and budget, cycled from ``path``'s lines; and a description."""
    text = read_text(path, ConfigError, MAX_PROMPT_FILE_BYTES)
    rng = np.random.default_rng(seed)
    out = config.output_tokens
    ids: list[np.ndarray] = []
    budgets: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(ids) >= MAX_PROMPT_LINES:
            raise ConfigError(f"{path}:{number}: more than {MAX_PROMPT_LINES:,} prompts")
        where = f"{path}:{number}"
        prompt, budget = _line(line, where, encode=encode, vocab=vocab)
        ids.append(prompt)
        budgets.append(budget if budget else int(rng.integers(out.min, out.max + 1)))
    if not ids:
        raise ConfigError(f"{path}: no prompts; give one JSON object per line")
    lengths = sorted(len(i) for i in ids)
    described = (
        f"file: {len(ids)} prompts from {path} ({lengths[0]}-{lengths[-1]} tokens), cycled to "
        f"{count} samples; {min(budgets)}-{max(budgets)} new tokens each (seed {seed})"
    )
    chosen = tuple(ids[i % len(ids)] for i in range(count))
    return chosen, tuple(budgets[i % len(ids)] for i in range(count)), described


def _line(
    line: str, where: str, *, encode: Callable[[str], np.ndarray], vocab: int
) -> tuple[np.ndarray, int]:
    """One line's prompt ids and its budget (0: none given)."""
    data = loads(line, where, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f'{where}: expected a JSON object such as {{"prompt": "..."}}')
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: {unknown[0]}: unknown key (allowed: {', '.join(KEYS)})")
    if ("prompt" in data) == ("input_ids" in data):
        raise ConfigError(f"{where}: give exactly one of 'prompt' (text) or 'input_ids'")
    if "prompt" in data:
        text = data["prompt"]
        if not isinstance(text, str) or not text:
            raise ConfigError(f"{where}: prompt: must be a non-empty string")
        prompt = np.ascontiguousarray(encode(text), dtype=np.int32)
    else:
        prompt = _ids(data["input_ids"], where, vocab)
    if not 1 <= len(prompt) <= MAX_TOKENS:
        raise ConfigError(f"{where}: prompt: {len(prompt)} tokens (must be 1..{MAX_TOKENS})")
    budget = data.get("max_new_tokens", 0)
    if "max_new_tokens" in data and (
        isinstance(budget, bool) or not isinstance(budget, int) or not 2 <= budget <= MAX_TOKENS
    ):
        raise ConfigError(
            f"{where}: max_new_tokens: must be an integer 2..{MAX_TOKENS} (LoadGen's time per "
            f"output token needs 2 or more), got {budget!r}"
        )
    return prompt, int(budget)


def _ids(value: object, where: str, vocab: int) -> np.ndarray:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: input_ids: must be a non-empty list of token ids")
    for token in value:
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
            raise ConfigError(
                f"{where}: input_ids: {token!r} is not a token id of this model (0..{vocab - 1})"
            )
    return np.asarray(value, dtype=np.int32)
