"""A converted model's full output against its FP32 source's, sample by sample (pure).

What the README's precision table shows for a classifier with real weights: top-1 agreement,
top-5 overlap (the share of the FP32 top-5 classes found in the converted model's top-5), the
largest and mean absolute difference of the softmax over every class, and the top-1/top-5
against the labels, of each precision on the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.accuracy import agreement, label_accuracy
from harness.analysis.labels import Label
from harness.errors import ResultError

TOP_K = 5


@dataclass(frozen=True, kw_only=True)
class PrecisionAgreement:
    """One precision's outputs against FP32's on the same samples, and against the labels."""

    precision: str
    samples: int
    top1_agreement: float
    top5_overlap: float
    max_abs_error: float
    mean_abs_error: float
    top1_labels: float | None
    top5_labels: float | None


def top5_overlap(outputs: Mapping[int, np.ndarray], reference: Mapping[int, np.ndarray]) -> float:
    """Mean over samples of |top-5(output) ∩ top-5(FP32)| / 5.

    Raises:
        ResultError: If there are no outputs, or a sample has no reference.
    """
    if not outputs:
        raise ResultError("precision agreement: no outputs to compare")
    shares = []
    for index, got in outputs.items():
        if index not in reference:
            raise ResultError(f"precision agreement: sample {index} has no FP32 output")
        mine, theirs = _top(got), _top(reference[index])
        shares.append(len(mine & theirs) / TOP_K)
    return float(np.mean(shares))


def _top(scores: np.ndarray) -> set[int]:
    flat = np.asarray(scores, dtype=np.float64).reshape(-1)
    return {int(i) for i in np.argsort(-flat, kind="stable")[:TOP_K]}


def compare_precision(
    precision: str,
    outputs: Mapping[int, np.ndarray],
    reference: Mapping[int, np.ndarray],
    labels: Mapping[int, Label] | None = None,
) -> PrecisionAgreement:
    """One precision's row of the table; the errors are over every element of the output."""
    fp32 = agreement(outputs, reference, kind="classifier")
    scored = label_accuracy(outputs, labels) if labels is not None else {}
    top1, top5 = scored.get("top1"), scored.get("top5")
    return PrecisionAgreement(
        precision=precision,
        samples=fp32.count,
        top1_agreement=float(fp32.top1_agreement or 0.0),
        top5_overlap=top5_overlap(outputs, reference),
        max_abs_error=float(fp32.max_abs_error or 0.0),
        mean_abs_error=float(fp32.mean_abs_error or 0.0),
        top1_labels=None if top1 is None else float(top1),
        top5_labels=None if top5 is None else float(top5),
    )


def render_markdown(rows: Sequence[PrecisionAgreement]) -> str:
    """The rows as the README's Markdown table."""
    lines = [
        "| precision | top-1 / top-5 vs labels | top-1 agreement with FP32 | top-5 overlap "
        "| max abs softmax error | mean abs softmax error |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.precision} | {_pct(row.top1_labels)} / {_pct(row.top5_labels)} "
            f"| {_pct(row.top1_agreement)} | {_pct(row.top5_overlap)} "
            f"| {row.max_abs_error:.2e} | {row.mean_abs_error:.2e} |"
        )
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f} %"
