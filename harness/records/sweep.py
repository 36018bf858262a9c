"""A batch-size sweep's records: its points, its limit, the saturation verdict, the outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.records.trials import TrialStats

StopReason = Literal["plateau", "out_of_memory", "max_batch", "error"]


@dataclass(frozen=True, kw_only=True)
class SweepPoint:
    """One batch size of a sweep and its throughput (samples/s) over trials."""

    batch_size: int
    stats: TrialStats


@dataclass(frozen=True, kw_only=True)
class SweepLimit:
    """The batch size that ran out of memory (or failed), and the error's first line."""

    batch_size: int
    error: str


@dataclass(frozen=True, kw_only=True)
class SaturationVerdict:
    """Where throughput saturates by the medians, and whether the trials' spread allows it.

    `earliest` and `latest` bound the saturation point that the trials' ranges (min..max)
    allow, instead of the medians; `latest` is None when no measured batch is surely
    saturated. `certain` when both equal `batch` and every point ran two trials or more;
    otherwise `caveat` says why not, in one line.
    """

    batch: int | None
    earliest: int | None
    latest: int | None
    certain: bool
    caveat: str | None


@dataclass(frozen=True, kw_only=True)
class SweepOutcome:
    """What a sweep measured, why it stopped and which requested batch sizes it skipped."""

    points: tuple[SweepPoint, ...]
    saturation_batch: int | None
    best_batch: int | None
    stopped: StopReason
    limit: SweepLimit | None
    requested: tuple[int, ...] = ()
    skipped: tuple[int, ...] = ()  # requested batch sizes after the one it stopped at
    skip_reason: str | None = None  # why they were skipped; None when none were
    verdict: SaturationVerdict | None = None
