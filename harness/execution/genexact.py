"""Batching must not change tokens: the SUT's logged outputs against one-at-a-time generation.

Server's continuous batch (harness.loadgen.genbatcher) runs its own decode loop, so the
accuracy job checks it: the tokens LoadGen logged for each sample (mlperf_log_accuracy.json,
int32 ids) must equal the same model's greedy generation of that prompt alone, for the first
``count`` samples logged. A scheduler that drops, truncates or alters a sequence fails the job
with the sample and the first position that differs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.analysis.genaccuracy import logged_tokens
from harness.datasets.prompts import Prompts
from harness.errors import ResultError, RunError
from harness.runtime.genai import GenaiModel


def served_tokens(path: Path) -> dict[int, list[int]]:
    """Each sample's logged token ids (its first response), read bounded and strictly."""
    try:
        return logged_tokens(path)
    except ResultError as exc:
        raise RunError(str(exc)) from None


def greedy(model: GenaiModel, prompts: Prompts, index: int, hold_eos: bool) -> list[int]:
    """The greedy tokens of prompt ``index`` within its budget, generated alone."""
    budget = prompts.budgets[index]
    sequence = model.start(
        prompts.ids[index], max_new_tokens=budget, min_new_tokens=budget if hold_eos else 2
    )
    sequence.step()
    while not sequence.done:
        sequence.step()
    return list(sequence.tokens)


def check_served(
    path: Path, *, lone: Callable[[int], list[int]], count: int, all_indices: int
) -> int:
    """Raises RunError where a logged sample's tokens differ from ``lone(index)``.

    ``all_indices``: the samples LoadGen must have logged (AccuracyOnly issues every one).
    Returns how many samples were compared.
    """
    served = served_tokens(path)
    missing = sorted(set(range(all_indices)) - set(served))
    if missing:
        raise RunError(
            f"{path}: the SUT answered no tokens for sample(s) {missing[:8]}: a query was "
            "dropped or answered empty"
        )
    compared = sorted(served)[:count]
    for index in compared:
        want, got = lone(index), served[index]
        if got != want:
            at = next(
                (n for n, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            raise RunError(
                f"{path}: sample {index}: the served tokens differ from one-at-a-time greedy "
                f"generation at position {at} ({len(got)} tokens served, {len(want)} alone): "
                "the scheduler changed, truncated or dropped tokens"
            )
    return len(compared)
