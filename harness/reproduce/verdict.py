"""The verdict of a reproduction (pure): the recorded value against the reproduction's trials.

REPRODUCED: the recorded value (a group's median) lies within the tolerance of the
reproduction's median, every trial finished and LoadGen judged each VALID. NOT COMPARABLE:
what ran differs from the record (model, precision, LoadGen's effective settings).
NOT REPRODUCED: anything else. Hardware and software differences never decide; they are
listed as explanations.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import harness
from harness.analysis.trials import trial_stats
from harness.analysis.values import headline, metric_values
from harness.analysis.welch import welch_t_test
from harness.config import ScenarioName
from harness.records.metrics import TPOT_P99, TTFT_P99, Metric
from harness.records.result import RunResult
from harness.reproduce.checks import Settings, comparability_problems, explanations
from harness.reproduce.codes import VERDICT_CODES, Verdict
from harness.reproduce.tolerance import Tolerance, ToleranceKey

ALPHA = 0.05  # Welch's significance level, as `harness compare` uses it


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """One side: its results, the effective settings LoadGen logged for each, its failures.

    ``failures`` are trials that left no result (INCOMPLETE, with the cause); ``requested``
    the trials asked for.
    """

    path: str
    results: tuple[RunResult, ...]
    settings: tuple[Settings, ...]
    requested: int
    failures: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.settings) != len(self.results):
            raise ValueError("settings: one mapping per result, in the same order")


@dataclass(frozen=True, slots=True, kw_only=True)
class Spread:
    """The reproduction's trials: each value, min, median, max and coefficient of variation."""

    values: tuple[float, ...]
    min: float
    median: float
    max: float
    cov: float


@dataclass(frozen=True, slots=True, kw_only=True)
class WelchTest:
    """Welch's t-test of recorded against reproduced trials; None where it cannot run."""

    t_statistic: float | None  # None also when infinite: neither side varies, the means differ
    p_value: float | None
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BundleRecord:
    """The bundle the recorded runs came from, and what its signature check said."""

    path: str
    signer_fingerprint: str
    verified: bool
    trusted: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Reproduction:
    """The verdict and everything it rests on; reproduction.json holds it.

    Values are in ``unit`` (samples/s, or ns for latencies). ``ratio`` is recorded over the
    reproduction's median, ``deviation`` their distance relative to that median; both None
    when a side has no value. ``welch`` is set for NOT REPRODUCED.
    """

    verdict: Verdict
    harness_version: str
    scenario: ScenarioName
    scenario_name: str
    metric: str
    unit: str
    higher_is_better: bool
    tolerance_key: ToleranceKey
    tolerance: float
    recorded_path: str
    recorded_values: tuple[float, ...]
    recorded_value: float | None
    reproduced_path: str
    reproduced_requested: int
    reproduced: Spread | None
    ratio: float | None
    deviation: float | None
    welch: WelchTest | None
    reasons: tuple[str, ...]
    explanations: tuple[str, ...]
    bundle: BundleRecord | None = None

    @property
    def exit_code(self) -> int:
        """The verdict's exit code (VERDICT_CODES)."""
        return VERDICT_CODES[self.verdict].code


def metric_of(scenario: ScenarioName, results: Sequence[RunResult] = ()) -> Metric:
    """The metric a scenario is judged by: MLPerf's, as the catalogue says for every output."""
    return headline(scenario, results)


def tolerance_key(metric: Metric) -> ToleranceKey:
    """Which tolerance applies: throughput's to a rate, latency's to a latency."""
    return "throughput" if metric.higher_is_better else "latency"


def judge(recorded: Evidence, reproduced: Evidence, tolerance: Tolerance) -> Reproduction:
    """The verdict on `reproduced` against `recorded`; Welch's t-test when NOT REPRODUCED.

    Raises:
        ValueError: `recorded` holds no result (a caller's bug: nothing to reproduce).
        DependencyError: the t-test is needed and scipy (the `report` extra) is missing.
    """
    if not recorded.results:
        raise ValueError("judge needs at least one recorded result")
    first = recorded.results[0]
    metric = metric_of(first.scenario, recorded.results)
    recorded_values = tuple(metric_values(recorded.results, metric.key))
    reproduced_values = tuple(metric_values(reproduced.results, metric.key))
    recorded_value = statistics.median(recorded_values) if recorded_values else None
    spread = _spread(reproduced_values, reproduced.requested, metric.higher_is_better)
    ratio, deviation = _distance(recorded_value, spread)
    limit = tolerance.fraction(tolerance_key(metric))
    problems, failures = _problems(recorded, reproduced, metric), _failures(reproduced, metric)
    verdict, reasons = _decide(problems, failures, deviation, limit, metric)
    welch = _welch(recorded_values, reproduced_values) if verdict == "NOT REPRODUCED" else None
    return Reproduction(
        verdict=verdict,
        harness_version=harness.__version__,
        scenario=first.scenario,
        scenario_name=first.scenario_name,
        metric=metric.key,
        unit=metric.value_unit,
        higher_is_better=metric.higher_is_better,
        tolerance_key=tolerance_key(metric),
        tolerance=limit,
        recorded_path=recorded.path,
        recorded_values=recorded_values,
        recorded_value=recorded_value,
        reproduced_path=reproduced.path,
        reproduced_requested=reproduced.requested,
        reproduced=spread,
        ratio=ratio,
        deviation=deviation,
        welch=welch,
        reasons=tuple(reasons),
        explanations=_explanations(recorded, reproduced),
    )


def _spread(values: Sequence[float], requested: int, higher_is_better: bool) -> Spread | None:
    if not values:
        return None
    stats = trial_stats(values, requested=max(requested, 1), higher_is_better=higher_is_better)
    return Spread(
        values=stats.values, min=min(values), median=stats.median, max=max(values), cov=stats.cov
    )


def _distance(recorded: float | None, spread: Spread | None) -> tuple[float | None, float | None]:
    if recorded is None or spread is None or spread.median == 0:
        return None, None
    return recorded / spread.median, abs(recorded - spread.median) / abs(spread.median)


def _problems(recorded: Evidence, reproduced: Evidence, metric: Metric) -> list[str]:
    """Why the two cannot be compared, each line once."""
    first, settings = recorded.results[0], recorded.settings[0]
    lines: dict[str, None] = {}
    if not metric_values(recorded.results, metric.key):
        lines[f"the recorded run has no {metric.key} value"] = None
    for result, logged in zip(reproduced.results, reproduced.settings, strict=True):
        for line in comparability_problems(first, result, settings, logged):
            lines.setdefault(line, None)
    return list(lines)


def _failures(reproduced: Evidence, metric: Metric) -> list[str]:
    """Trials that do not count: INVALID per LoadGen, INCOMPLETE, without a value, missing."""
    lines: list[str] = []
    for result in reproduced.results:
        if not result.valid:
            why = "; ".join(result.outcome.invalid_reasons) or "no reason logged"
            lines.append(f"{result.run_id} is INVALID per LoadGen ({why})")
        if not metric_values([result], metric.key):
            lines.append(f"{result.run_id} has no {metric.key} value")
    lines += reproduced.failures
    done, asked = len(reproduced.results), reproduced.requested
    if done < asked:
        lines.append(f"only {done} of {asked} trials left a result")
    return lines


def _decide(
    problems: Sequence[str],
    failures: Sequence[str],
    deviation: float | None,
    limit: float,
    metric: Metric,
) -> tuple[Verdict, list[str]]:
    if problems:
        return "NOT COMPARABLE", [*problems, *failures]
    if deviation is not None and deviation > limit:
        outside = (
            f"the recorded {metric.label} is {deviation * 100:.1f} % from the reproduction's "
            f"median, outside the {tolerance_key(metric)} tolerance of {limit * 100:g} %"
        )
        return "NOT REPRODUCED", [*failures, outside]
    if failures or deviation is None:
        return "NOT REPRODUCED", [*failures] or ["no value to compare"]
    return "REPRODUCED", []


def _welch(recorded: Sequence[float], reproduced: Sequence[float]) -> WelchTest:
    if len(recorded) < 2 or len(reproduced) < 2:
        return WelchTest(
            t_statistic=None,
            p_value=None,
            note=f"Welch's t-test needs >= 2 trials on each side (recorded {len(recorded)}, "
            f"reproduced {len(reproduced)})",
        )
    t_statistic, p_value = welch_t_test(recorded, reproduced)
    significant = "significant" if p_value < ALPHA else "not significant"
    note = f"{significant} at {ALPHA * 100:g} %"
    if not math.isfinite(t_statistic):
        note += " (neither side varies; their means differ)"
    return WelchTest(
        t_statistic=t_statistic if math.isfinite(t_statistic) else None,
        p_value=p_value,
        note=note,
    )


def _explanations(recorded: Evidence, reproduced: Evidence) -> tuple[str, ...]:
    """A recorded run LoadGen judged INVALID, the trials' LoadGen errors, the differences."""
    invalid = [
        f"the recorded {result.run_id} was INVALID per LoadGen"
        for result in recorded.results
        if not result.valid
    ]
    errors = [
        f"{result.run_id}: LoadGen error: {error}"
        for result in reproduced.results
        for error in result.outcome.loadgen_errors
    ]
    tokens = _token_latencies(recorded.results, reproduced.results)
    return (*invalid, *errors, *tokens, *explanations(recorded.results[0], reproduced.results))


def _token_latencies(recorded: Sequence[RunResult], reproduced: Sequence[RunResult]) -> list[str]:
    """A generative Server's p99 TTFT and TPOT, recorded against reproduced, with the limits.

    tokens/s decides the verdict; a trial is VALID only where both limits held, and these
    lines show how near each side came to them.
    """
    first = recorded[0].generation
    if first is None or recorded[0].scenario != "Server":
        return []
    lines = []
    for row, limit_ns in ((TTFT_P99, first.ttft_limit_ns), (TPOT_P99, first.tpot_limit_ns)):
        was, now = metric_values(recorded, row), metric_values(reproduced, row)
        shown = [f"{row.format(statistics.median(v))} ms" if v else "n/a" for v in (was, now)]
        bound = "" if limit_ns is None else f" (limit {row.format(limit_ns)} ms)"
        lines.append(f"{row.label}: recorded {shown[0]}, reproduced median {shown[1]}{bound}")
    return lines
