"""The one accessor for metrics that trials, sweeps and comparisons read from results.

A metric name is what trials.json records and reports show: ``samples_per_second``,
``latency_ns.p90``, ``utilization.achieved_tflops``, or a power source's value,
``telemetry.sources.<source>.energy_per_inference_mj``. One rule for absent values: a
result whose value is None (not measured, not applicable) contributes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.errors import ResultError
from harness.results.measures import SourceSummary
from harness.results.records import RunResult

Getter = Callable[[RunResult], float | None]
SourceGetter = Callable[[SourceSummary], float | None]

SAMPLES_PER_SECOND = "samples_per_second"
LATENCY_P90 = "latency_ns.p90"
LATENCY_P99 = "latency_ns.p99"
SOURCE_PREFIX = "telemetry.sources."

METRICS: Mapping[str, Getter] = {
    SAMPLES_PER_SECOND: lambda r: r.samples_per_second,
    "latency_ns.p50": lambda r: r.latency_ns.p50,
    LATENCY_P90: lambda r: r.latency_ns.p90,
    "latency_ns.p95": lambda r: r.latency_ns.p95,
    "latency_ns.p97": lambda r: r.latency_ns.p97,
    LATENCY_P99: lambda r: r.latency_ns.p99,
    "latency_ns.p999": lambda r: r.latency_ns.p999,
    "latency_ns.mean": lambda r: r.latency_ns.mean,
    "latency_ns.min": lambda r: r.latency_ns.min,
    "latency_ns.max": lambda r: r.latency_ns.max,
    "latency_ns.early_stopping_p90": lambda r: r.latency_ns.early_stopping_p90,
    "latency_ns.early_stopping_p99": lambda r: r.latency_ns.early_stopping_p99,
    "accuracy.against_fp32.top1_agreement": lambda r: r.accuracy.against_fp32.top1_agreement,
    "accuracy.against_fp32.cosine_similarity": lambda r: r.accuracy.against_fp32.cosine_similarity,
    "accuracy.against_labels.top1": lambda r: (
        None if r.accuracy.against_labels is None else r.accuracy.against_labels.top1
    ),
    "utilization.achieved_tflops": lambda r: r.utilization.achieved_tflops,
    "utilization.peak_tflops": lambda r: r.utilization.peak_tflops,
    "utilization.fraction_of_peak": lambda r: r.utilization.fraction_of_peak,
    "utilization.attainable_tflops": lambda r: r.utilization.attainable_tflops,
    "utilization.fraction_of_attainable": lambda r: r.utilization.fraction_of_attainable,
    "warmup.samples_per_second": lambda r: r.warmup.samples_per_second,
}
SOURCE_METRICS: Mapping[str, SourceGetter] = {
    "avg_power_w": lambda s: s.avg_power_w,
    "energy_j": lambda s: s.energy_j,
    "energy_per_inference_mj": lambda s: s.energy_per_inference_mj,
    "samples_per_second_per_watt": lambda s: s.samples_per_second_per_watt,
    "peak_temp_c": lambda s: s.peak_temp_c,
}


def source_metric(source: str, name: str) -> str:
    """The metric name of one power source's value, e.g. its energy per inference."""
    if name not in SOURCE_METRICS:
        raise ResultError(f"unknown power-source metric {name!r}; known: {_known(SOURCE_METRICS)}")
    return f"{SOURCE_PREFIX}{source}.{name}"


def metric_getter(metric: str) -> Getter:
    """The getter of a metric name; ResultError for a name that is not a metric."""
    getter = METRICS.get(metric)
    if getter is not None:
        return getter
    source, _, name = metric.removeprefix(SOURCE_PREFIX).rpartition(".")
    if metric.startswith(SOURCE_PREFIX) and source and name in SOURCE_METRICS:
        return _source_getter(source, SOURCE_METRICS[name])
    raise ResultError(
        f"unknown metric {metric!r}; known: {_known(METRICS)}, "
        f"and {SOURCE_PREFIX}<source>.<{'|'.join(SOURCE_METRICS)}>"
    )


def metric_values(results: Sequence[RunResult], metric: str) -> list[float]:
    """The metric's value in each result that has one (None: skipped), in order."""
    getter = metric_getter(metric)
    return [float(v) for v in map(getter, results) if v is not None]


def _source_getter(source: str, value: SourceGetter) -> Getter:
    def getter(result: RunResult) -> float | None:
        if result.telemetry is None or source not in result.telemetry.sources:
            return None
        return value(result.telemetry.sources[source])

    return getter


def _known(table: Mapping[str, object]) -> str:
    return ", ".join(table)
