"""The accuracy test's score: agreement with the FP32 model, accuracy against labels, verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class Fp32Agreement:
    """How closely the outputs match the FP32 source model's on the same samples.

    ``top1_agreement`` is None for tensor outputs; the error metrics are None for classifiers
    that output a class index. Cosines are means (and minimum) over samples.
    """

    kind: Literal["classifier", "tensor", "tokens"]
    count: int
    top1_agreement: float | None
    max_abs_error: float | None
    mean_abs_error: float | None
    cosine_similarity: float | None
    min_cosine_similarity: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenAgreement:
    """A generative model's greedy outputs against the FP32 model's, prompt by prompt.

    ``agreement``: the share of positions (up to the shorter output, over all prompts) where
    both chose the same token. ``first_divergence``: per prompt, the first position where they
    differ (the compared length where none does); ``rouge_l``: the mean ROUGE-L F1 over token
    ids. ``threshold``: the agreement the verdict asks for.
    """

    prompts: int
    positions: int
    agreement: float
    first_divergence: tuple[int, ...]
    median_first_divergence: float
    rouge_l: float
    threshold: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ClosedDivision:
    """MLPerf's closed-division rule: accuracy must reach ``fraction`` of the FP32 reference."""

    accuracy: float
    reference: float
    fraction: float
    target: float
    passed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelAccuracy:
    """Top-k accuracy against the dataset's labels, and the FP32 model's on the same samples."""

    count: int
    label_offset: int
    top1: float | None
    top5: float | None
    fp32_top1: float | None
    fp32_top5: float | None
    closed_division: ClosedDivision


@dataclass(frozen=True, slots=True, kw_only=True)
class Accuracy:
    """LoadGen's AccuracyOnly pass, scored against FP32 (and labels when the data has them).

    ``not_measurable``: why the FP32 reference cannot judge the outputs (it answers alike for
    every input); ``passed`` is then False and the verdict reads "not measurable". None: the
    reference was found to depend on its input (results before schema 6 were not checked).
    """

    samples: int
    against_fp32: Fp32Agreement
    against_labels: LabelAccuracy | None
    passed: bool
    criterion: str
    reference: str
    not_measurable: str | None = None
    tokens: TokenAgreement | None = None  # generative models only (schema 10)

    @property
    def verdict(self) -> Literal["passed", "FAILED", "NOT MEASURABLE"]:
        """The verdict in words, as show, report and accuracy.txt print it."""
        if self.not_measurable is not None:
            return "NOT MEASURABLE"
        return "passed" if self.passed else "FAILED"
