"""How a report names a metric: its shown name, its unit and the scale from the stored unit."""

from __future__ import annotations

from collections.abc import Mapping

from harness.analysis.stats import Shown
from harness.results.metrics import SAMPLES_PER_SECOND, SOURCE_PREFIX

NS_TO_MS = 1e-6
# The latencies a report shows for a scenario that reports latency (never Offline's).
LATENCIES: Mapping[str, str] = {
    "latency_ns.p50": "p50 latency",
    "latency_ns.p90": "p90 latency",
    "latency_ns.p99": "p99 latency",
    "latency_ns.p999": "p99.9 latency",
    "latency_ns.early_stopping_p90": "early-stopping p90 estimate",
    "latency_ns.early_stopping_p99": "early-stopping p99 estimate",
}
# A power source's values a report shows: name, unit and whether higher is better.
SOURCE_VALUES: Mapping[str, tuple[str, str, bool]] = {
    "samples_per_second_per_watt": ("perf/W", "samples/s/W", True),
    "energy_per_inference_mj": ("energy per inference", "mJ", False),
}
# Achieved against peak, as a report shows it: name, unit and scale from the stored value.
# (Peak TFLOP/s is a constant of the hardware, not a measurement: it has no spread.)
UTILIZATION: Mapping[str, tuple[str, str, float]] = {
    "utilization.achieved_tflops": ("achieved FLOP/s", "TFLOP/s", 1.0),
    "utilization.fraction_of_peak": ("utilization of peak", "%", 100.0),
    "utilization.attainable_tflops": ("attainable FLOP/s", "TFLOP/s", 1.0),
    "utilization.fraction_of_attainable": ("utilization of attainable", "%", 100.0),
}


def shown(metric: str) -> Shown:
    """How a report shows a metric: its name, unit and the scale from its stored unit."""
    if metric in LATENCIES:
        return Shown(name=LATENCIES[metric], unit="ms", scale=NS_TO_MS)
    if metric.startswith("latency_ns."):
        return Shown(
            name=f"{metric.removeprefix('latency_ns.')} latency", unit="ms", scale=NS_TO_MS
        )
    if metric == SAMPLES_PER_SECOND:
        return Shown(name="throughput", unit="samples/s")
    if metric in UTILIZATION:
        name, unit, scale = UTILIZATION[metric]
        return Shown(name=name, unit=unit, scale=scale)
    source, _, value = metric.removeprefix(SOURCE_PREFIX).rpartition(".")
    if metric.startswith(SOURCE_PREFIX) and value in SOURCE_VALUES:
        name, unit, _ = SOURCE_VALUES[value]
        return Shown(name=f"{name} ({source})", unit=unit)
    return Shown(name=metric)


def is_higher_better(metric: str) -> bool:
    """Whether a larger value of a reported metric is the better one."""
    value = metric.rpartition(".")[2]
    if metric.startswith(SOURCE_PREFIX) and value in SOURCE_VALUES:
        return SOURCE_VALUES[value][2]
    return not metric.startswith("latency_ns.")
