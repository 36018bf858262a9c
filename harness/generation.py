"""A generative scenario's `generation:` block: prompts, token lengths, token-latency limits.

Its own module beside harness.config (which holds a Scenario's ``generation``), so that file
stays within its size; the same frozen, keyword-only dataclasses with range checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

PromptSource = Literal["synthetic", "text", "file"]
# Server's scheduler: rows join a running batch between steps (harness.loadgen.genbatcher),
# or the older one genai sequence per query, stepped a token each in turn
ServerBatching = Literal["continuous", "interleave"]
MAX_TOKENS = 1 << 17  # a prompt or an output: past every context length the zoo builds
MAX_ACTIVE = 256


@dataclass(frozen=True, kw_only=True)
class TokenRange:
    """A length in tokens drawn per sample, uniformly from ``min`` to ``max`` (inclusive)."""

    min: int
    max: int

    def __post_init__(self) -> None:
        if not 1 <= self.min <= self.max <= MAX_TOKENS:
            raise ValueError(f"must satisfy 1 <= min <= max <= {MAX_TOKENS}, got {self}")


@dataclass(frozen=True, kw_only=True)
class TokenLimits:
    """LoadGen's token-latency limits (ms): p99 time to first token and time per output token."""

    ttft_ms: float
    tpot_ms: float

    def __post_init__(self) -> None:
        for key in ("ttft_ms", "tpot_ms"):
            value = getattr(self, key)
            if not (math.isfinite(value) and 0 < value <= 3.6e6):
                raise ValueError(f"{key}: must be > 0 and <= 3.6e6, got {value}")


@dataclass(frozen=True, kw_only=True)
class GenerationConfig:
    """How a generative model is queried: one prompt per sample, greedy generation.

    Attributes:
        prompts: "synthetic": seeded token ids (``input_tokens`` long), meaning nothing;
            "text": the repo's real English prompts (harness.datasets.prompt_texts) through
            the model's own tokenizer (``input_tokens`` is then unused); "file": the user's
            JSONL file at ``path`` (harness.datasets.prompt_file).
        path: The JSONL prompt file (relative to the working directory, as data.dir is);
            only with prompts "file".
        input_tokens: A synthetic prompt's length.
        output_tokens: Each sample's budget of new tokens; generation ends at the budget
            or at end-of-text.
        hold_eos: End-of-text is held off until the budget (genai's min_length), so every
            sample makes exactly its budget; otherwise it is held off for 2 tokens, the
            fewest LoadGen's time per output token can use.
        limits: Server's p99 TTFT / TPOT limits; None takes mlperf.conf's, which exist only
            for MLPerf's LLM names (model.loadgen_name, e.g. llama3_1-8b): otherwise a Server
            run is refused. Ignored by SingleStream and Offline.
        interactive: Server under MLPerf's ``<model>-interactive`` config name (its tighter
            limits in mlperf.conf).
        max_active: Sequences generated at once. Offline: queries of like budgets run as one
            genai batch (harness.runtime.genai.Batch); Server: rows of one continuous batch
            (server_batching); 1 answers queries one after another.
        server_batching: Server's scheduler: "continuous" runs the
            active queries as one batch, new ones joining between decode steps
            (harness.runtime.kvbatch; token-exact with lone generation); "interleave" steps
            one genai sequence per query in turn (no batching gain: the baseline).
    """

    prompts: PromptSource = "synthetic"
    input_tokens: TokenRange = field(default_factory=lambda: TokenRange(min=16, max=64))
    output_tokens: TokenRange = field(default_factory=lambda: TokenRange(min=8, max=32))
    hold_eos: bool = False
    limits: TokenLimits | None = None
    interactive: bool = False
    max_active: int = 1
    path: str | None = None
    server_batching: ServerBatching = "continuous"

    def __post_init__(self) -> None:
        if (self.prompts == "file") != (self.path is not None):
            raise ValueError(
                "path: give a JSONL prompt file with prompts: file, and only then "
                f"(prompts is {self.prompts!r}, path is {self.path!r})"
            )
        if not 1 <= self.max_active <= MAX_ACTIVE:
            raise ValueError(f"max_active: must be 1..{MAX_ACTIVE}, got {self.max_active}")
        if self.output_tokens.min < 2:
            raise ValueError(
                "output_tokens.min: LoadGen's time per output token needs 2 or more tokens "
                f"per sample, got {self.output_tokens.min}"
            )


def check_generative(
    *,
    scenario: str,
    zoo: str | None,
    batch_size: int,
    target_qps: float | None,
    runtime_set: bool,
    data_source: str,
) -> None:
    """A scenario with a generation block: a zoo model, one sequence per query, no MultiStream.

    harness.config's Scenario calls it with its fields; a ValueError names the key.
    """
    del target_qps  # None: the pipeline's capacity search finds Server's rate
    if zoo is None:
        raise ValueError("generation: needs model.zoo (a generative zoo model directory)")
    if scenario == "MultiStream":
        raise ValueError(
            "generation: MultiStream has no generative benchmark in MLPerf; use "
            "SingleStream, Offline or Server"
        )
    if runtime_set:
        raise ValueError(
            "runtime: a generative scenario takes only runtime.intra_op_threads; "
            "onnxruntime-genai takes its other session options from the model's "
            "genai_config.json; remove the other runtime keys"
        )
    if data_source != "synthetic":
        raise ValueError(
            f"data.source: a generative scenario's prompts come from generation.prompts, "
            f"not from '{data_source}'"
        )
    if batch_size != 1:
        raise ValueError(
            f"batch_size: a generative scenario generates one sequence at a time "
            f"(Server interleaves them: generation.max_active), got {batch_size}"
        )
