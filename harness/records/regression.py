"""The regression gate's verdict: is the new result's headline worse than the base's?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# How the noise was judged: "interval", the confidence interval of the ratio (trials on both
# sides); "unknown", one value on a side, so the threshold alone decides; "unbounded", the
# interval has no finite bounds (the base's mean is not clear of zero), so nothing is slower.
NoiseRule = Literal["interval", "unknown", "unbounded"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Regression:
    """The headline of NEW against BASE, judged against a threshold and the noise.

    ``ratio`` is NEW's median over BASE's (the headline's stored values); ``limit`` the ratio
    past which NEW is worse by more than ``threshold`` (a fraction): 1 - threshold for a
    metric where higher is better, 1 + threshold where lower is. ``interval`` is the ratio's
    confidence interval at ``confidence`` (None where the noise is unknown; a bound of None:
    unbounded). ``interval_beyond``: the whole interval lies beyond the limit (None where there
    is no interval). ``slower``: beyond the limit, and (with trials on both sides) the whole
    interval beyond it too.
    """

    metric: str  # the catalogue's key of the headline
    label: str
    unit: str
    higher_is_better: bool
    base: str  # the sides' labels
    new: str
    base_value: float
    new_value: float
    threshold: float
    ratio: float
    limit: float
    interval: tuple[float | None, float | None] | None
    confidence: float
    noise: NoiseRule
    interval_beyond: bool | None  # the whole interval beyond the limit; None: no interval
    slower: bool
