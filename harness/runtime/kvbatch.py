"""Continuous batching over the generated Llama decoders: rows join and leave between steps.

onnxruntime-genai 0.18 fixes a Generator's batch when it starts, and its Engine (which adds and
drops sequences) runs the plain-op decoders harness.models.llm writes but does not give a lone
run's tokens there (README: Generative models); these decoders have a concatenated KV cache.
So this runs that decoder itself, in onnxruntime: one step feeds every active row its last
token at its own position, with an attention mask that hides the cache columns the row does
not own. A new row is prefilled alone (batch 1, exactly as a
lone generation) and its cache copied into the batch; a finished row's cache is dropped; the
cache is repacked (each row's columns to the left) when holes would grow it past ``SLACK``.

Greedy, as genai's config for these models says (top_k 1): the argmax, end-of-text held off
for a row's first ``min_new_tokens`` tokens (genai's min_length), a row ending at its budget or
at end-of-text. A test compares every token with genai's one-at-a-time generation.

The execution provider is genai_config.json's (CPU, or CUDA where it names cuda); the cache
lives in host memory between steps (numpy), which a GPU pays for in copies: a device-resident
cache (I/O binding) is the next step there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort

from harness.errors import RunError
from harness.records.layout import GENAI_CONFIG

SLACK = 32  # cache columns a row may leave unused before the cache is repacked


@dataclass(frozen=True)
class _Decoder:
    """What genai_config.json says about the decoder's file and inputs."""

    path: Path
    layers: int
    eos_ids: frozenset[int]
    cuda: bool


def _decoder(directory: Path) -> _Decoder:
    try:
        model = json.loads((directory / GENAI_CONFIG).read_text())["model"]
        decoder = model["decoder"]
        eos = model["eos_token_id"]
        providers = decoder.get("session_options", {}).get("provider_options", [])
        return _Decoder(
            path=directory / str(decoder["filename"]),
            layers=int(decoder["num_hidden_layers"]),
            eos_ids=frozenset(int(e) for e in (eos if isinstance(eos, list) else [eos])),
            cuda=any("cuda" in entry for entry in providers if isinstance(entry, dict)),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RunError(f"{directory}: not a generated decoder for batching: {exc!r}") from exc


@dataclass
class Row:
    """One sequence in the batch: its key (the caller's), budget and the tokens made so far."""

    key: int
    budget: int
    min_new_tokens: int
    length: int  # tokens in the cache: the prompt and every token made but the last
    tokens: list[int] = field(default_factory=list)
    ended_by_eos: bool = False

    @property
    def done(self) -> bool:
        """Whether the row ended: its budget, or end-of-text once allowed."""
        return self.ended_by_eos or len(self.tokens) >= self.budget


class ContinuousBatch:
    """Rows generated together, a token each per ``step``; ``admit`` adds one between steps."""

    def __init__(self, directory: Path, *, intra_op_threads: int = 0) -> None:
        self.directory = directory
        self._spec = _decoder(directory)
        providers = ["CUDAExecutionProvider"] if self._spec.cuda else []
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads  # 0: one per physical core
        # no spinning between steps: the waiting threads would starve LoadGen's issue thread
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(self._spec.path), options, providers=[*providers, "CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise RunError(f"{self._spec.path}: onnxruntime could not load it: {exc}") from exc
        past = next(i for i in self._session.get_inputs() if i.name.startswith("past_key_values"))
        self._dtype = np.float16 if "float16" in past.type else np.float32
        self._kv_heads, self._head_dim = int(past.shape[1]), int(past.shape[3])
        self._outputs = ["logits"] + [
            f"present.{i}.{kind}" for i in range(self._spec.layers) for kind in ("key", "value")
        ]
        self.rows: list[Row] = []
        self._cache: list[np.ndarray] = []  # per layer key, value: rows x heads x width x dim
        self._owned = np.zeros((0, 0), dtype=bool)  # rows x width: the row's own columns

    def clear(self) -> None:
        """Drops every row (after a failure)."""
        self.rows, self._cache = [], []
        self._owned = np.zeros((0, 0), dtype=bool)

    def _run(
        self, ids: np.ndarray, positions: np.ndarray, mask: np.ndarray, past: list[np.ndarray]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        feeds: dict[str, np.ndarray] = {
            "input_ids": ids.astype(np.int64),
            "attention_mask": mask.astype(np.int64),
            "position_ids": positions.astype(np.int64),
        }
        for i in range(self._spec.layers):
            feeds[f"past_key_values.{i}.key"] = past[2 * i]
            feeds[f"past_key_values.{i}.value"] = past[2 * i + 1]
        try:
            out = self._session.run(self._outputs, feeds)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise RunError(f"{self.directory}: generation failed: {exc}") from exc
        return np.asarray(out[0])[:, -1, :].astype(np.float32), [np.asarray(a) for a in out[1:]]

    def _choose(self, row: Row, logits: np.ndarray) -> int:
        if len(row.tokens) < row.min_new_tokens:
            logits = logits.copy()
            logits[list(self._spec.eos_ids)] = np.finfo(np.float32).min
        token = int(np.argmax(logits))
        row.tokens.append(token)
        if token in self._spec.eos_ids:
            row.ended_by_eos = True
        return token

    def admit(
        self, key: int, prompt: np.ndarray, *, max_new_tokens: int, min_new_tokens: int
    ) -> Row:
        """Prefills ``prompt`` alone and adds it as a row; its first token is made."""
        if max_new_tokens < 1 or not 0 <= min_new_tokens <= max_new_tokens or len(prompt) < 1:
            raise RunError(
                f"{self.directory}: a row needs a prompt, max_new_tokens >= 1 and "
                f"0 <= min_new_tokens <= max, got {max_new_tokens}, {min_new_tokens}"
            )
        length = len(prompt)
        empty = np.zeros((1, self._kv_heads, 0, self._head_dim), dtype=self._dtype)
        logits, present = self._run(
            np.asarray(prompt)[None, :],
            np.arange(length)[None, :],
            np.ones((1, length), dtype=bool),
            [empty] * (2 * self._spec.layers),
        )
        row = Row(key=key, budget=max_new_tokens, min_new_tokens=min_new_tokens, length=length)
        self._choose(row, logits[0])
        if not row.done:
            self._join(row, present)
        return row

    def _join(self, row: Row, present: list[np.ndarray]) -> None:
        width = max(self._owned.shape[1], row.length)
        self._widen(width)
        owned = np.zeros((1, width), dtype=bool)
        owned[0, : row.length] = True
        grown = []
        for layer, mine in enumerate(present):
            padded = np.zeros((1, *mine.shape[1:2], width, mine.shape[3]), dtype=self._dtype)
            padded[:, :, : row.length] = mine
            grown.append(np.concatenate([self._cache[layer], padded]) if self.rows else padded)
        self._cache = grown
        self._owned = np.concatenate([self._owned, owned]) if self.rows else owned
        self.rows.append(row)

    def _widen(self, width: int) -> None:
        if not self.rows or self._owned.shape[1] >= width:
            return
        extra = width - self._owned.shape[1]
        self._owned = np.pad(self._owned, ((0, 0), (0, extra)))
        self._cache = [np.pad(c, ((0, 0), (0, 0), (0, extra), (0, 0))) for c in self._cache]

    def step(self) -> list[Row]:
        """A token for every row; the finished rows leave the batch and are returned."""
        if not self.rows:
            return []
        last = np.asarray([[row.tokens[-1]] for row in self.rows])
        positions = np.asarray([[row.length] for row in self.rows])
        mask = np.concatenate([self._owned, np.ones((len(self.rows), 1), dtype=bool)], axis=1)
        logits, self._cache = self._run(last, positions, mask, self._cache)
        self._owned = mask
        for row, row_logits in zip(self.rows, logits, strict=True):
            row.length += 1
            self._choose(row, row_logits)
        finished = [row for row in self.rows if row.done]
        if finished:
            keep = np.asarray([not row.done for row in self.rows])
            self.rows = [row for row in self.rows if not row.done]
            self._owned = self._owned[keep]
            self._cache = [c[keep] for c in self._cache]
        if self.rows and self._owned.shape[1] > max(r.length for r in self.rows) + SLACK:
            self._repack()
        return finished

    def _repack(self) -> None:
        """Each row's own columns moved to the left, in order; the width shrinks to the longest."""
        width = max(row.length for row in self.rows)
        order = np.argsort(~self._owned, axis=1, kind="stable")[:, :width]  # owned first
        owned = np.take_along_axis(self._owned, order, axis=1)
        index = order[:, None, :, None]
        self._cache = [np.take_along_axis(c, index, axis=2) for c in self._cache]
        keep = owned[:, None, :, None]
        self._cache = [np.where(keep, c, 0).astype(self._dtype) for c in self._cache]
        self._owned = owned
