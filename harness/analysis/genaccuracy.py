"""A generative model's accuracy: its greedy tokens against the FP32 model's on the same prompts.

Token agreement (the share of positions, up to the shorter output, where both chose the same
token), the first divergent position per prompt, and ROUGE-L. ROUGE-L is the LCS-based F1 over
token ids, written here rather than taken from ``rouge-score``: that library splits English
text into lower-case alphanumeric words and drops everything else, which leaves nothing of a
seeded model's byte-level text, and its pins (nltk, absl-py) would join every image for one
function. Over token ids the score means the same for every tokenizer.

The verdict passes at ``AGREEMENT_THRESHOLD`` of positions; FP32 is the reference itself.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np

from harness.errors import ResultError
from harness.foreign import MAX_LOG_BYTES
from harness.records.accuracy import Accuracy, Fp32Agreement, TokenAgreement
from harness.strictjson import read_json

# 0.9: FP16 (onnxruntime's float16 converter, float32 at the graph's edges) agreed with
# FP32 on 0.96 to 1.0 of positions on llm-tiny and 1.0 on smollm2-135m-instruct; a scrambled
# or fixed-token model agrees on a few percent. A greedy decoder that diverges once keeps
# diverging (its context differs), so 0.9 allows a late divergence in some prompts, not an
# early one in most. INT4 (harness.runtime.nbits: 32-weight blocks along K, each with its own
# float minimum) agrees on 1.0 on smollm2-135m-instruct, whose weights came from a Q4_1 file
# and come back exactly; llm-tiny's seeded Gaussian weights lose 8 % rms to any 4-bit grid and
# its top-2 logit gap is below that error: 0.14, FAILED (README, Precision and accuracy).
AGREEMENT_THRESHOLD: Final = 0.9
REFERENCE_ITSELF: Final = (
    "the reference itself: FP32 outputs are what the other precisions' tokens are judged against"
)
CRITERION: Final = (
    f"greedy token agreement with FP32 >= {AGREEMENT_THRESHOLD} over the same prompts "
    "(positions up to the shorter output)"
)


TOKEN_BYTES: Final = 4  # the SUT answers int32 token ids (harness.loadgen.gensut)
_HEX: Final = re.compile(r"(?:[0-9A-Fa-f]{8})*")


def logged_tokens(path: Path) -> dict[int, list[int]]:
    """Each sample's token ids as the SUT returned them, from LoadGen's mlperf_log_accuracy.json.

    The file is read bounded and strictly: a list of ``{"qsl_idx": int, "data": hex}`` entries,
    each ``data`` whole int32 ids. A sample logged twice keeps its first answer.

    Raises:
        ResultError: naming the file and the entry that is not such.
    """
    entries = read_json(path, ResultError, MAX_LOG_BYTES)
    if not isinstance(entries, list):
        raise ResultError(f"{path}: expected a JSON list of LoadGen responses")
    tokens: dict[int, list[int]] = {}
    for at, entry in enumerate(entries):
        index = entry.get("qsl_idx") if isinstance(entry, dict) else None
        data = entry.get("data") if isinstance(entry, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise ResultError(f"{path}: entry {at}: qsl_idx {index!r} is not a sample index")
        if not isinstance(data, str) or not _HEX.fullmatch(data):
            raise ResultError(
                f"{path}: entry {at} (sample {index}): data is not whole int32 token ids in hex"
            )
        ids = np.frombuffer(bytes.fromhex(data), dtype="<i4")
        tokens.setdefault(index, [int(t) for t in ids])
    return tokens


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common subsequence of ``a`` and ``b``."""
    if len(b) > len(a):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for x in a:
        previous = 0  # row[j - 1] of the line above
        for j, y in enumerate(b, start=1):
            above = row[j]
            row[j] = previous + 1 if x == y else max(row[j], row[j - 1])
            previous = above
    return row[len(b)]


def rouge_l(candidate: Sequence[int], reference: Sequence[int]) -> float:
    """ROUGE-L F1 (beta 1) of ``candidate`` against ``reference``; 1.0 when both are empty."""
    if not candidate and not reference:
        return 1.0
    common = lcs_length(candidate, reference)
    if common == 0:
        return 0.0
    precision, recall = common / len(candidate), common / len(reference)
    return 2 * precision * recall / (precision + recall)


def first_divergence(candidate: Sequence[int], reference: Sequence[int]) -> int:
    """The first position where the two differ; the shorter length where none does."""
    shorter = min(len(candidate), len(reference))
    for i in range(shorter):
        if candidate[i] != reference[i]:
            return i
    return shorter


def token_agreement(
    outputs: Sequence[Sequence[int]], references: Sequence[Sequence[int]]
) -> TokenAgreement:
    """The agreement of ``outputs`` with ``references`` (the FP32 model's), prompt by prompt."""
    if len(outputs) != len(references) or not outputs:
        raise ValueError(f"{len(outputs)} outputs against {len(references)} references")
    equal = positions = 0
    for out, ref in zip(outputs, references, strict=True):
        shorter = min(len(out), len(ref))
        positions += shorter
        equal += sum(1 for i in range(shorter) if out[i] == ref[i])
    divergences = tuple(first_divergence(o, r) for o, r in zip(outputs, references, strict=True))
    scores = [rouge_l(o, r) for o, r in zip(outputs, references, strict=True)]
    return TokenAgreement(
        prompts=len(outputs),
        positions=positions,
        agreement=round(equal / positions, 6) if positions else 0.0,
        first_divergence=divergences,
        median_first_divergence=float(statistics.median(divergences)),
        rouge_l=round(statistics.fmean(scores), 6),
        threshold=AGREEMENT_THRESHOLD,
    )


def generative_accuracy(tokens: TokenAgreement | None) -> Accuracy:
    """The accuracy block: scored against FP32, or (``tokens`` None) FP32 itself."""
    agreement = Fp32Agreement(
        kind="tokens",
        count=0 if tokens is None else tokens.prompts,
        top1_agreement=None if tokens is None else tokens.agreement,
        max_abs_error=None,
        mean_abs_error=None,
        cosine_similarity=None,
        min_cosine_similarity=None,
    )
    if tokens is None:
        return Accuracy(
            samples=0,
            against_fp32=agreement,
            against_labels=None,
            passed=False,
            criterion=CRITERION,
            reference="the FP32 model itself",
            not_measurable=REFERENCE_ITSELF,
        )
    return Accuracy(
        samples=tokens.prompts,
        against_fp32=agreement,
        against_labels=None,
        passed=tokens.agreement >= tokens.threshold,
        criterion=CRITERION,
        reference="the FP32 model's greedy tokens on the same prompts",
        tokens=tokens,
    )
