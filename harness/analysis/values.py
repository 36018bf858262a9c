"""Metric values read from results, and each scenario's metrics for a set of results (pure).

What a metric is (its label, unit, direction, the headline per scenario) is the catalogue's,
harness.records.metrics; this module reads a metric's value where the catalogue says it is:
from a RunResult along its key's path, from a published record along its `published` path.
One rule for absent values: a result whose value is None (not measured, not applicable, or a
metric its format does not hold yet) contributes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.errors import ResultError
from harness.records.genmetrics import generative_metrics
from harness.records.metrics import (
    P90,
    P99,
    PER_INFERENCE,
    PER_TOKEN,
    PER_TOKEN_VALUES,
    PER_WATT,
    THROUGHPUT,
    Metric,
    ScenarioMetrics,
    bound_latency,
    metric,
    per_source,
    scenario_metrics,
)
from harness.records.published import PublishedResult
from harness.records.result import RunResult

Getter = Callable[[RunResult], float | None]

# Keys the campaign and the reproduction verdict name (they will ask for `headline` instead).
SAMPLES_PER_SECOND = THROUGHPUT.key
LATENCY_P90 = P90.key
LATENCY_P99 = P99.key
_ENERGY = (PER_INFERENCE, PER_WATT)


def value_of(result: RunResult, which: Metric | str) -> float | None:
    """A result's value of a metric (a catalogue row or its key); None where it has none."""
    row = metric(which) if isinstance(which, str) else which
    return _walk(result, row.steps, row.key)


def published_value_of(record: PublishedResult, which: Metric) -> float | None:
    """A published record's value of a metric; None where an imported result has none."""
    if which.published is None:
        return None
    return _walk(record, tuple(which.published.split(".")), which.key)


def metric_getter(key: str) -> Getter:
    """The getter of a metric's key; ResultError for a key that is not a metric."""
    row = metric(key)
    return lambda result: value_of(result, row)


def metric_values(results: Sequence[RunResult], which: Metric | str) -> list[float]:
    """The metric's value in each result that has one (None: skipped), in order."""
    row = metric(which) if isinstance(which, str) else which
    return [v for v in (value_of(r, row) for r in results) if v is not None]


def source_metric(source: str, name: str) -> str:
    """The key of one power source's value, e.g. its energy per inference."""
    return per_source(source, name).key


def source_names(results: Sequence[RunResult]) -> list[str]:
    """The power sources any of the results measured, sorted by name."""
    return sorted({name for r in results if r.telemetry for name in r.telemetry.sources})


def telemetry_metrics(results: Sequence[RunResult]) -> list[Metric]:
    """Energy per inference and samples/s per watt of each power source any result measured.

    Where any result generated tokens: its energy per output token and tokens per joule too.
    """
    values: tuple[str, ...] = _ENERGY
    if any(r.generation is not None for r in results):
        values = (*_ENERGY, *PER_TOKEN_VALUES)
    return [per_source(name, value) for name in source_names(results) for value in values]


def energy_metrics(
    scenario: str, results: Sequence[RunResult], *, generative: bool | None = None
) -> list[Metric]:
    """Each power source's value that suits the scenario (the catalogue's `energy`).

    A generative model's: energy per output token and tokens per joule.
    """
    wanted = catalogue_for(scenario, results, generative=generative).energy
    values = PER_TOKEN_VALUES if wanted == PER_TOKEN else (wanted,)
    return [per_source(name, value) for name in source_names(results) for value in values]


def catalogue_for(
    scenario: str, results: Sequence[RunResult] = (), *, generative: bool | None = None
) -> ScenarioMetrics:
    """The scenario's metrics for these results: a generative model's where each one generated.

    `generative` decides instead where the caller knows more (published LLM records beside
    the results, or no local result at all).
    """
    if generative is None:
        generative = bool(results) and all(r.generation is not None for r in results)
    return generative_metrics(scenario) if generative else scenario_metrics(scenario)


def headline(
    scenario: str, results: Sequence[RunResult] = (), *, generative: bool | None = None
) -> Metric:
    """MLPerf's metric of the scenario for these results: its fallback where none has it."""
    found = catalogue_for(scenario, results, generative=generative)
    if found.fallback is not None and results and not metric_values(results, found.headline):
        return found.fallback
    return found.headline


def reported(
    scenario: str, results: Sequence[RunResult] = (), *, generative: bool | None = None
) -> tuple[Metric, ...]:
    """MLPerf's other metrics of the scenario; Server's latency at its bound's percentile.

    The bound's percentile is the lowest any result's LoadGen logged (p99 where none did).
    """
    found = catalogue_for(scenario, results, generative=generative)
    if not found.at_bound:
        return found.reported
    percentiles = {r.server.latency_percentile for r in results if r.server is not None}
    known = {99.0 if p is None else p for p in percentiles} or {99.0}
    return (bound_latency(min(known)), *found.reported[1:])


def _walk(start: object, steps: tuple[str, ...], key: str) -> float | None:
    """The number at the end of `steps` (attributes, or keys of a mapping); None if absent."""
    value: object = start
    for step in steps:
        if value is None:
            return None
        value = value.get(step) if isinstance(value, Mapping) else getattr(value, step, None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ResultError(f"metric {key}: holds {type(value).__name__}, not a number")
    return float(value)
