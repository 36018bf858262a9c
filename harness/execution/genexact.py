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

import numpy as np

from harness.analysis.accuracy import read_accuracy_log
from harness.errors import RunError

MAX_ACCURACY_LOG_BYTES = 64 << 20  # llm-tiny's log is a few KiB; a larger one is not read


def served_tokens(path: Path) -> dict[int, list[int]]:
    """Each sample's logged token ids (its first response), from LoadGen's accuracy log."""
    if path.is_file() and path.stat().st_size > MAX_ACCURACY_LOG_BYTES:
        raise RunError(f"{path}: larger than {MAX_ACCURACY_LOG_BYTES} bytes; not read")
    served: dict[int, list[int]] = {}
    for index, data in read_accuracy_log(path):
        if len(data) % 4:
            raise RunError(f"{path}: sample {index}'s response is not int32 token ids")
        served.setdefault(index, [int(t) for t in np.frombuffer(data, dtype=np.int32)])
    return served


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
