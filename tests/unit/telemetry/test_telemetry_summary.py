"""summarize(): per-source figures, their methods, and null-with-a-reason for what is missing."""

from __future__ import annotations

import json
from typing import Any

from harness.records.codec import to_data as as_json
from harness.telemetry import Sample, SourceCounters, Telemetry, summarize

S = 1_000_000_000


def _telemetry(samples: list[Sample], counters: list[SourceCounters], **kw: Any) -> Telemetry:
    return Telemetry(
        window_start_ns=0,
        window_end_ns=10 * S,
        interval_s=0.5,
        samples=tuple(samples),
        counters=tuple(counters),
        **kw,
    )


def test_cpu_package_from_rapl_samples() -> None:
    samples = [Sample(t_ns=i * S // 2, source="cpu-package-0", power_w=95.0) for i in range(21)]
    t = _telemetry(samples, [SourceCounters(name="cpu-package-0", kind="cpu")])
    block = as_json(summarize(t, samples_processed=2_000, scenario="SingleStream"))["sources"][
        "cpu-package-0"
    ]
    assert block["method"] == "integrated samples @ 2 Hz"
    assert (block["energy_j"], block["avg_power_w"]) == (950.0, 95.0)
    assert block["energy_per_inference_mj"] == 475.0
    assert block["peak_temp_c"] is None and block["throttle"] is None
    assert block["violation_counters"] is None
    assert block["null_reasons"] == {
        "samples_per_second_per_watt": "reported for Offline only (this run is SingleStream)",
        "peak_temp_c": "not reported by this source",
        "throttle": "not reported by this source",
        "violation_counters": "not reported by this source",
    }


def test_a_source_without_any_reading_is_null_never_zero() -> None:
    samples = [Sample(t_ns=S, source="gpu0")]  # a gap: the read failed
    t = _telemetry(samples, [SourceCounters(name="gpu0", kind="gpu")])
    block = as_json(summarize(t, samples_processed=100, scenario="Offline"))["sources"]["gpu0"]
    for key in (
        "avg_power_w",
        "energy_j",
        "energy_per_inference_mj",
        "samples_per_second_per_watt",
    ):
        assert block[key] is None, key
    assert block["method"] is None
    assert block["null_reasons"]["energy_j"] == (
        "no energy counter and no power readings inside the window"
    )
    assert block["null_reasons"]["avg_power_w"] == block["null_reasons"]["energy_j"]
    assert block["null_reasons"]["energy_per_inference_mj"] == "no energy measured"
    assert block["null_reasons"]["samples_per_second_per_watt"] == "no average power measured"


def test_counter_beats_samples_and_names_itself() -> None:
    samples = [
        Sample(t_ns=0, source="gpu0", power_w=1.0),
        Sample(t_ns=10 * S, source="gpu0", power_w=1.0),
    ]
    counters = SourceCounters(
        name="gpu0",
        kind="gpu",
        energy_method="nvmlDeviceGetTotalEnergyConsumption",
        energy_start_mj=5_000_000.0,
        energy_end_mj=9_000_000.0,
    )
    block = as_json(
        summarize(_telemetry(samples, [counters]), samples_processed=8_000, scenario="Offline")
    )
    gpu = block["sources"]["gpu0"]
    assert (gpu["method"], gpu["energy_counter"]) == (
        "energy counter",
        "nvmlDeviceGetTotalEnergyConsumption",
    )
    assert (gpu["energy_j"], gpu["avg_power_w"]) == (4000.0, 400.0)
    assert gpu["energy_per_inference_mj"] == 500.0
    assert gpu["samples_per_second_per_watt"] == 2.0  # 800 samples/s over 400 W


def test_a_counter_that_went_backwards_is_ignored_with_a_note() -> None:
    samples = [Sample(t_ns=0, source="gpu0", power_w=200.0)]
    counters = SourceCounters(name="gpu0", kind="gpu", energy_start_mj=9.0, energy_end_mj=2.0)
    gpu = as_json(
        summarize(_telemetry(samples, [counters]), samples_processed=1, scenario="Offline")
    )
    block = gpu["sources"]["gpu0"]
    assert block["method"] == "integrated samples"
    assert block["energy_j"] == 2000.0
    assert block["notes"] == ["energy counter went backwards (9.0 -> 2.0 mJ); ignored"]


def test_no_samples_processed_and_zero_power() -> None:
    samples = [Sample(t_ns=0, source="wall", power_w=0.0)]
    t = _telemetry(samples, [SourceCounters(name="wall", kind="wall")])
    block = as_json(summarize(t, samples_processed=0, scenario="Offline"))["sources"]["wall"]
    assert block["energy_j"] == 0.0
    assert block["null_reasons"]["energy_per_inference_mj"] == "no samples processed"
    assert block["null_reasons"]["samples_per_second_per_watt"] == "average power is 0 W"


def test_the_block_says_what_is_missing_and_what_to_compare_with_mlperf() -> None:
    t = _telemetry(
        [],
        [SourceCounters(name="wall", kind="wall", logged=True)],
        unavailable=(("rapl", "permission denied"),),
        errors=(("gpu0", "gpu0: lost"),),
    )
    block = as_json(summarize(t, samples_processed=1, scenario="Offline"))
    assert block["unavailable"] == [{"source": "rapl", "reason": "permission denied"}]
    assert block["errors"] == [{"source": "gpu0", "error": "gpu0: lost"}]
    assert block["mlperf_comparable"]["source"] == "wall"
    assert block["window"] == {"start_ns": 0, "end_ns": 10 * S, "duration_s": 10.0}
    json.dumps(block)  # JSON-ready


def test_without_a_wall_meter_the_figures_are_marked_as_component_power() -> None:
    t = _telemetry([], [SourceCounters(name="gpu0", kind="gpu")])
    comparable = as_json(summarize(t, samples_processed=1, scenario="Offline"))["mlperf_comparable"]
    assert comparable["source"] is None
    assert "no wall meter" in comparable["note"]
