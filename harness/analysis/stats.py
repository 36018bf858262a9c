"""The statistics in one import: trials (analysis.trials), sweeps (analysis.sweep), Welch's test.

Each responsibility has its module; this one re-exports their names, and the catalogue's
number formats, for the code that imported them from here before the split. New code
imports the module itself.
"""

from __future__ import annotations

from harness.analysis.sweep import (
    SaturationVerdict,
    StopReason,
    SweepLimit,
    SweepOutcome,
    SweepPoint,
    best_batch,
    failed_sweep,
    plateaued,
    run_sweep,
    saturation_batch,
    saturation_verdict,
    sweep_batches,
)
from harness.analysis.trials import MetricSpread, TrialStats, trial_stats
from harness.analysis.welch import SCIPY_MISSING, significant, welch_t_test
from harness.records.metrics import number, percent

__all__ = [
    "SCIPY_MISSING",
    "MetricSpread",
    "SaturationVerdict",
    "StopReason",
    "SweepLimit",
    "SweepOutcome",
    "SweepPoint",
    "TrialStats",
    "best_batch",
    "failed_sweep",
    "number",
    "percent",
    "plateaued",
    "run_sweep",
    "saturation_batch",
    "saturation_verdict",
    "significant",
    "sweep_batches",
    "trial_stats",
    "welch_t_test",
]
