"""Label sets in label_accuracy, and a precision's agreement with FP32 on the full output."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.accuracy import label_accuracy
from harness.analysis.precision_agreement import (
    compare_precision,
    render_markdown,
    top5_overlap,
)
from harness.errors import ResultError


def _scores(*top: int, classes: int = 10) -> np.ndarray:
    """Scores whose ranking starts with ``top`` (descending)."""
    row = np.zeros(classes, dtype=np.float32)
    for rank, cls in enumerate(top):
        row[cls] = 1.0 - rank * 0.1
    return row


def test_a_label_set_counts_any_of_its_classes() -> None:
    outputs = {0: _scores(3, 1), 1: _scores(7, 2), 2: _scores(5, 6)}
    labels = {0: frozenset({2, 3}), 1: frozenset({2}), 2: 9}
    scores = label_accuracy(outputs, labels, top_k=(1, 2))
    assert scores["top1"] == pytest.approx(1 / 3)  # only sample 0's top-1 is in its set
    assert scores["top2"] == pytest.approx(2 / 3)  # sample 1's second class is in its set


def test_a_label_set_follows_the_label_offset() -> None:
    outputs = {0: _scores(4), 1: _scores(2)}
    scores = label_accuracy(outputs, {0: frozenset({3, 8}), 1: 1}, top_k=(1,), label_offset=1)
    assert scores["top1"] == 1.0


def test_class_index_outputs_score_against_sets() -> None:
    outputs = {0: np.array([4], np.int64), 1: np.array([0], np.int64)}
    scores = label_accuracy(outputs, {0: frozenset({4, 5}), 1: frozenset({1})})
    assert scores["top1"] == 0.5 and scores["top5"] is None


def test_top5_overlap_counts_shared_classes() -> None:
    reference = {0: _scores(0, 1, 2, 3, 4), 1: _scores(5, 6, 7, 8, 9)}
    outputs = {0: _scores(0, 1, 2, 3, 9), 1: _scores(5, 6, 7, 8, 9)}
    assert top5_overlap(outputs, reference) == pytest.approx((4 / 5 + 1) / 2)


def test_top5_overlap_needs_every_reference() -> None:
    with pytest.raises(ResultError, match="sample 1 has no FP32 output"):
        top5_overlap({1: _scores(0)}, {0: _scores(0)})


def test_a_precision_row_against_fp32_and_labels() -> None:
    reference = {0: _scores(0, 1, 2, 3, 4), 1: _scores(5, 6, 7, 8, 9)}
    outputs = {0: _scores(1, 0, 2, 3, 4), 1: reference[1].copy()}
    outputs[1][9] += 0.25
    row = compare_precision("int8", outputs, reference, {0: frozenset({0}), 1: frozenset({5})})
    assert row.top1_agreement == 0.5 and row.top5_overlap == 1.0
    assert row.max_abs_error == pytest.approx(0.25)
    assert row.mean_abs_error == pytest.approx((0.1 + 0.1 + 0.25) / 20)
    assert row.top1_labels == 0.5 and row.top5_labels == 1.0
    table = render_markdown([row])
    assert "| int8 | 50.0 % / 100.0 % | 50.0 % | 100.0 % | 2.50e-01 |" in table
