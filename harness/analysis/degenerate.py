"""Whether an FP32 reference can judge accuracy at all.

A model that answers alike for every input cannot show that a SUT computed anything: scoring
against such a reference would pass a SUT that ran the model once and returned that output
for every query. The accuracy verdict is then "not measurable", with this reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

# One class answering more than this share of the reference's top-1 answers: not measurable.
MAX_CLASS_SHARE: Final = 0.5


def degenerate_reference(
    reference: Mapping[int, np.ndarray], *, kind: str, what: str = "the FP32 reference"
) -> str | None:
    """Why the reference's outputs cannot tell a computing SUT from a constant one, else None.

    Args:
        reference: The FP32 model's output per scored sample.
        kind: ``classifier`` (scores, or a class index per sample) or ``tensor``.
        what: What the outputs are, for the reason.

    Returns:
        For a classifier, when one class is the top-1 answer of more than MAX_CLASS_SHARE of
        the samples; for any kind, when every sample's output is identical. None otherwise.
    """
    if not reference:
        return None
    outputs = np.stack([np.asarray(reference[k]).reshape(-1) for k in sorted(reference)])
    count = len(outputs)
    if kind == "classifier":
        indices = outputs.dtype.kind in "iu" and outputs.shape[1] == 1
        top1 = outputs[:, 0] if indices else outputs.argmax(axis=1)
        classes, counts = np.unique(top1, return_counts=True)
        most = int(counts.argmax())
        if counts[most] > MAX_CLASS_SHARE * count:
            return (
                f"{what} answers class {int(classes[most])} for {int(counts[most])} "
                f"of {count} samples (more than {MAX_CLASS_SHARE:.0%}): its answers do not "
                "depend on the input (synthetic weights?), so agreement with it shows nothing"
            )
    if count > 1 and bool(np.all(outputs == outputs[0])):
        return (
            f"{what} gives one output for all {count} samples: it does not depend on the "
            "input, so agreement with it shows nothing"
        )
    return None
