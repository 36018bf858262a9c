"""The onnxruntime-genai seam: a model directory loaded, prompts tokenized, greedy steps.

The only module importing onnxruntime_genai (an import-linter contract says so). Greedy
search only: the model directory's genai_config.json sets it (harness.models.llm). genai's
errors become RunError here, naming the directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime_genai as og

from harness.errors import RunError
from harness.packages import required_version
from harness.records.layout import GENAI_CONFIG
from harness.runtime.targets import GENAI_PROVIDERS as GENAI_PROVIDERS


def genai_version() -> str:
    """The installed onnxruntime-genai's version."""
    return required_version("onnxruntime-genai")


def session_overlay(intra_op_threads: int, *, pad_token_id: int | None = None) -> str:
    """genai_config.json's overlay: the decoder session's intra-op threads, the pad id.

    0 threads leaves onnxruntime's default; no pad id leaves the file's. genai 0.18 accepts
    no session config entries here, so its spinning stays onnxruntime's default (on).
    """
    model: dict[str, object] = {}
    if pad_token_id is not None:
        model["pad_token_id"] = pad_token_id
    if intra_op_threads:
        model["decoder"] = {"session_options": {"intra_op_num_threads": intra_op_threads}}
    return json.dumps({"model": model})


class GenaiModel:
    """A generative model directory (model.onnx, genai_config.json, tokenizer) loaded once."""

    def __init__(
        self, directory: Path, *, provider: str = "cpu", intra_op_threads: int = 0
    ) -> None:
        """A model directory, loaded with genai's provider name ("cpu", "cuda").

        ``intra_op_threads``: the scenario's runtime.intra_op_threads (0: onnxruntime's
        default, one per physical core).
        """
        self.directory = directory
        self.provider = provider
        try:
            model = json.loads((directory / GENAI_CONFIG).read_text())["model"]
            eos = model["eos_token_id"]
            self.eos_ids = frozenset(int(e) for e in (eos if isinstance(eos, list) else [eos]))
            self.pad_id = int(model["pad_token_id"])
            vocab = int(model["vocab_size"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RunError(
                f"{directory}: onnxruntime-genai could not load it: genai_config.json: {exc!r}"
            ) from exc
        # genai masks the pad id in a prompt; where it doubles as end-of-text (SmolLM2's
        # <|im_end|>, which chat prompts hold), batches pad with the last id instead
        if self.pad_id in self.eos_ids:
            self.pad_id = vocab - 1
        try:
            config = og.Config(str(directory))
            config.overlay(session_overlay(intra_op_threads, pad_token_id=self.pad_id))
            if provider != "cpu":
                config.clear_providers()
                config.append_provider(provider)
            self._model = og.Model(config)
            self._tokenizer = og.Tokenizer(self._model)
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{directory}: onnxruntime-genai could not load it: {exc}") from exc

    def batchable(self, prompt: np.ndarray) -> bool:
        """Whether ``prompt`` can share a padded batch: it holds no pad id."""
        return not bool(np.any(prompt == self.pad_id))

    def encode(self, text: str) -> np.ndarray:
        """The prompt's token ids (int32), as the model's own tokenizer splits it."""
        return np.asarray(self._tokenizer.encode(text), dtype=np.int32)

    def decode(self, ids: np.ndarray) -> str:
        """Token ids back to text."""
        return str(self._tokenizer.decode(np.asarray(ids, dtype=np.int32)))

    def start(self, prompt: np.ndarray, *, max_new_tokens: int, min_new_tokens: int) -> Sequence:
        """A greedy generation of at most ``max_new_tokens`` after ``prompt``.

        ``min_new_tokens`` holds end-of-text off until that many tokens are out (genai's
        min_length), so a sample's output length can be fixed.
        """
        return Sequence(self, prompt, max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens)

    def start_batch(
        self, prompts: list[np.ndarray], *, budgets: list[int], hold_eos: bool
    ) -> Batch:
        """Greedy generations of ``prompts`` as one batch (``Batch``)."""
        return Batch(self, prompts, budgets=budgets, hold_eos=hold_eos)

    def generator(self, total: int, minimum: int, batch_size: int = 1) -> og.Generator:
        """A genai Generator whose sequences end at ``total`` tokens, not before ``minimum``."""
        params = og.GeneratorParams(self._model)
        params.set_search_options(max_length=total, min_length=minimum, batch_size=batch_size)
        return og.Generator(self._model, params)


class Sequence:
    """One prompt's generation, a token per step; the prompt is prefilled on the first.

    A step only makes the token: ``tokens`` reads them back from genai when asked (the SUT
    asks for the first and, at the end, for all), since fetching each token on its step costs
    ~3 % of a small model's step.
    """

    def __init__(
        self, model: GenaiModel, prompt: np.ndarray, *, max_new_tokens: int, min_new_tokens: int
    ) -> None:
        if max_new_tokens < 1 or not 0 <= min_new_tokens <= max_new_tokens:
            raise RunError(
                f"{model.directory}: max_new_tokens {max_new_tokens} and min_new_tokens "
                f"{min_new_tokens} must satisfy 0 <= min <= max and max >= 1"
            )
        self._model = model
        self._prompt = np.ascontiguousarray(prompt, dtype=np.int32)
        length = len(self._prompt)
        self._total, self._minimum = length + max_new_tokens, length + min_new_tokens
        self._generator: og.Generator | None = None

    def step(self) -> None:
        """Makes the next token (the first step prefills the prompt)."""
        try:
            if self._generator is None:
                self._generator = self._model.generator(self._total, self._minimum)
                self._generator.append_tokens(self._prompt)
            self._generator.generate_next_token()
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{self._model.directory}: generation failed: {exc}") from exc

    def first(self) -> int:
        """Prefills the prompt and makes the first token; returns it (one read of one token)."""
        try:
            generator = self._model.generator(self._total, self._minimum)
            generator.append_tokens(self._prompt)
            generator.generate_next_token()
            self._generator = generator
            return int(generator.get_next_tokens()[0])
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{self._model.directory}: generation failed: {exc}") from exc

    def finish(self, stopped: Callable[[], bool]) -> bool:
        """Makes the rest of the tokens after ``first``; False if ``stopped()`` said so first.

        One tight loop over genai's own calls, as a bare genai loop runs: on a small model a
        Python call per token (``step``, ``done``) costs a few per cent of each token.
        """
        generator = self._generator
        if generator is None:
            raise RunError(f"{self._model.directory}: finish() before first()")
        step, ended = generator.generate_next_token, generator.is_done
        try:
            while not ended():
                if stopped():
                    return False
                step()
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{self._model.directory}: generation failed: {exc}") from exc
        return True

    def output(self) -> np.ndarray:
        """The tokens made after the prompt (int32), read from genai at once."""
        if self._generator is None:
            return np.zeros(0, dtype=np.int32)
        try:
            sequence = self._generator.get_sequence(0)
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{self._model.directory}: generation failed: {exc}") from exc
        return np.ascontiguousarray(sequence[len(self._prompt) :], dtype=np.int32)

    @property
    def tokens(self) -> list[int]:
        """Every token made so far (read from genai: once per query, not per step)."""
        if self._generator is None:
            return []
        try:
            sequence = self._generator.get_sequence(0)
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{self._model.directory}: generation failed: {exc}") from exc
        return [int(t) for t in sequence[len(self._prompt) :]]

    @property
    def done(self) -> bool:
        """Whether the sequence ended (its budget, or end-of-text once allowed)."""
        return self._generator is not None and bool(self._generator.is_done())


class Batch:
    """Prompts generated together, a token each per step, right-padded with the pad id.

    genai 0.18 masks the pad id, so each row continues its prompt as it would alone (a test
    compares): right padding, since left-padded rows differ from their lone runs there. A
    row ends at its budget, or at end-of-text once 2 tokens are out (unless ``hold_eos``);
    the batch steps until every row ended. A prompt holding the pad id runs alone.
    """

    def __init__(
        self, model: GenaiModel, prompts: list[np.ndarray], *, budgets: list[int], hold_eos: bool
    ) -> None:
        if not prompts or len(budgets) != len(prompts) or min(budgets) < 2:
            raise RunError(f"{model.directory}: a batch needs prompts and budgets of 2 or more")
        if len(prompts) > 1 and not all(model.batchable(p) for p in prompts):
            raise RunError(f"{model.directory}: a batched prompt holds the pad id {model.pad_id}")
        self._model, self._budgets = model, budgets
        width = max(len(p) for p in prompts)
        self._ids = np.full((len(prompts), width), model.pad_id, dtype=np.int32)
        for row, prompt in enumerate(prompts):
            self._ids[row, : len(prompt)] = prompt
        longest = max(budgets)
        self._width, self._total = width, width + longest
        self._minimum = width + (longest if hold_eos else 2)
        self._hold_eos = hold_eos
        self._generator: og.Generator | None = None
        self._steps = 0
        # held end-of-text: each row ends at its budget, so no token is read per step
        self._ending: dict[int, list[int]] = {}
        for row, budget in enumerate(budgets):
            self._ending.setdefault(budget, []).append(row)
        self._next_end = min(budgets)  # the step at which the next rows end
        self.tokens: list[list[int]] = [[] for _ in prompts]
        self.ended = [False] * len(prompts)
        self._going = len(prompts)

    def step(self) -> list[int]:
        """A token for every row still going (the first step prefills); the rows that ended.

        A row's ``tokens`` are complete once it ended (with end-of-text held, they are read
        from genai then; else each step's tokens are read to find end-of-text).
        """
        try:
            if self._generator is None:
                self._generator = self._model.generator(
                    self._total, self._minimum, batch_size=len(self._budgets)
                )
                self._generator.append_tokens(self._ids)
            self._generator.generate_next_token()
            self._steps += 1
            if not self._hold_eos:
                return self._scan(self._generator.get_next_tokens())
            if self._steps < self._next_end:
                return []
            finished = self._ending.pop(self._steps)
            for row in finished:
                made = self._generator.get_sequence(row)
                self.tokens[row] = [int(t) for t in made[self._width :][: self._steps]]
                self.ended[row] = True
            self._going -= len(finished)
            self._next_end = min(self._ending, default=self._steps)
            return finished
        except Exception as exc:  # genai raises bare RuntimeErrors
            raise RunError(f"{self._model.directory}: generation failed: {exc}") from exc

    def _scan(self, made: np.ndarray) -> list[int]:
        """Each row's token of this step; the rows that reached their budget or end-of-text."""
        finished: list[int] = []
        for row, tokens in enumerate(self.tokens):
            if self.ended[row]:
                continue
            tokens.append(int(made[row]))
            eos = tokens[-1] in self._model.eos_ids and len(tokens) >= 2
            if len(tokens) >= self._budgets[row] or eos:
                self.ended[row] = True
                finished.append(row)
        self._going -= len(finished)
        return finished

    @property
    def done(self) -> bool:
        """Whether every row ended."""
        return self._going == 0
