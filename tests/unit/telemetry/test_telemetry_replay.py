"""A recorded H100-like trace replayed through the recorder, summarized with exact values.

The trace (tests/fixtures/telemetry/h100_thermal_throttle.csv) is 61 samples at 10 Hz over
6.0 s: 620 W, except 480 W from 2.0 s to 3.4 s during a thermal episode.

- energy (trapezoid): 19 x 62 J + 55 J (620 -> 480 W) + 14 x 48 J + 55 J + 25 x 62 J
  = 1178 + 55 + 672 + 55 + 1550 = 3510 J; the trace's energy counter says the same.
- average power 3510 J / 6 s = 585 W.
- 60,000 samples processed: 58.5 mJ per inference, 10,000 samples/s, 10,000 / 585 per W.
- sw_thermal_slowdown from 2.0 s to 3.5 s: 1.5 s of 6 s = 0.25 of the window;
  hw_thermal_slowdown from 2.5 s to 3.0 s: 0.5 s = 1/12.
- violation counters: thermal 1.5 s (0.25); power 40 ms (1/150), a power-brake event between
  samples at 4.23 s that no sample shows: the reason the counters are read.
- peak temperature 87.0 C at 2.0 s.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from telemetry_fakes import FIXTURES, ReplayClock, ReplaySource, load_trace

from harness.records.codec import to_data as as_json
from harness.telemetry import (
    Telemetry,
    TelemetryRecorder,
    read_telemetry_csv,
    summarize,
    write_telemetry_csv,
)

TRACE = FIXTURES / "h100_thermal_throttle.csv"
S = 1_000_000_000


def _replay() -> Telemetry:
    clock = ReplayClock(load_trace(TRACE))
    gpu = ReplaySource(clock)
    recorder = TelemetryRecorder(
        [gpu], interval_s=0.1, clock=clock, wall_clock=lambda: 1_700_000_000 * S
    )
    ended = threading.Event()

    def last() -> None:  # stop when the trace ends, as LoadGen's test would
        recorder.request_stop()
        ended.set()

    gpu.on_last = last
    recorder.start()
    # stop() asks the thread to finish at once: call it only once the trace was read to its
    # end (on a loaded machine the thread can be seconds of trace behind this one).
    assert ended.wait(120), "the replay never reached the trace's last row"
    return recorder.stop()


@pytest.fixture(scope="module")
def telemetry() -> Telemetry:
    return _replay()


def test_every_row_is_sampled_once_inside_the_window(telemetry: Telemetry) -> None:
    assert (telemetry.window_start_ns, telemetry.window_end_ns) == (0, 6 * S)
    assert [s.t_ns for s in telemetry.samples] == [i * S // 10 for i in range(61)]
    assert telemetry.counters[0].energy_start_mj == 123_456_789
    assert telemetry.counters[0].energy_end_mj == 126_966_789


def test_offline_summary_has_exact_energy_efficiency_and_throttle_shares(
    telemetry: Telemetry,
) -> None:
    gpu = as_json(summarize(telemetry, samples_processed=60_000, scenario="Offline"))["sources"][
        "gpu0"
    ]
    assert gpu["method"] == "energy counter"
    assert gpu["energy_counter"] == "trace energy_mj"
    assert gpu["energy_j"] == 3510.0
    assert gpu["avg_power_w"] == 585.0
    assert gpu["energy_per_inference_mj"] == 58.5
    assert gpu["samples_per_second_per_watt"] == round(10_000 / 585, 6) == 17.094017
    assert gpu["peak_temp_c"] == 87.0
    assert gpu["throttle"] == {"hw_thermal_slowdown": 0.083333, "sw_thermal_slowdown": 0.25}
    assert gpu["violation_counters"] == {
        "power": {"time_s": 0.04, "share": 0.006667},
        "thermal": {"time_s": 1.5, "share": 0.25},
    }
    assert gpu["power_samples"] == 61 and gpu["sample_rate_hz"] == 10.0
    assert gpu["null_reasons"] == {}


def test_integrating_the_samples_gives_the_counter_s_energy(telemetry: Telemetry) -> None:
    counters = telemetry.counters[0]
    without_counter = Telemetry(
        window_start_ns=telemetry.window_start_ns,
        window_end_ns=telemetry.window_end_ns,
        interval_s=telemetry.interval_s,
        samples=telemetry.samples,
        counters=(type(counters)(name=counters.name, kind=counters.kind),),
    )
    gpu = as_json(summarize(without_counter, samples_processed=60_000, scenario="SingleStream"))
    block = gpu["sources"]["gpu0"]
    assert block["method"] == "integrated samples @ 10 Hz"
    assert block["energy_j"] == 3510.0
    assert block["energy_per_inference_mj"] == 58.5
    assert block["samples_per_second_per_watt"] is None
    assert block["null_reasons"]["samples_per_second_per_watt"] == (
        "reported for Offline only (this run is SingleStream)"
    )


def test_the_csv_round_trip_summarizes_the_same(telemetry: Telemetry, tmp_path: Path) -> None:
    path = tmp_path / "telemetry.csv"
    write_telemetry_csv(telemetry, path)
    again = read_telemetry_csv(path)
    assert again == telemetry
    assert summarize(again, samples_processed=60_000, scenario="Offline") == summarize(
        telemetry, samples_processed=60_000, scenario="Offline"
    )
