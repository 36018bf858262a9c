"""The background recorder with fake sources: window edges, counters, gaps, logged meters."""

from __future__ import annotations

import threading

import pytest
from telemetry_fakes import FakeLoggedSource, FakeSource, FakeViolationSource, StepClock

from harness.errors import ConfigError, DeviceError, RunError
from harness.telemetry import Reading, TelemetryRecorder
from harness.telemetry.recorder import next_tick

S = 1_000_000_000


def _wait(source: FakeSource) -> None:
    assert source.enough.wait(5), f"{source.name} was never sampled enough"


def test_samples_every_source_between_start_and_stop() -> None:
    gpu = FakeSource(
        "gpu0", readings=[Reading(power_w=300.0, temp_c=60.0)], energy=[1000.0, 4000.0]
    )
    cpu = FakeSource("cpu-package-0", "cpu", readings=[Reading(power_w=90.0)])
    recorder = TelemetryRecorder([gpu, cpu], interval_s=0.001, unavailable=[("rapl", "why")])
    assert gpu.reads == gpu.energy_reads == 0  # nothing happens before start()
    recorder.start()
    _wait(gpu)
    t = recorder.stop()
    reads = gpu.reads
    assert all(th.name != "telemetry" for th in threading.enumerate())
    assert gpu.reads == reads  # no sampling after stop()
    assert t.window_start_ns < t.window_end_ns
    assert [s.t_ns for s in t.samples] == sorted(s.t_ns for s in t.samples)
    assert all(t.window_start_ns <= s.t_ns <= t.window_end_ns for s in t.samples)
    assert len(t.samples_of("gpu0")) == gpu.reads >= 3
    assert len(t.samples_of("cpu-package-0")) == cpu.reads
    assert t.samples_of("gpu0")[0].power_w == 300.0 and t.samples_of("gpu0")[0].temp_c == 60.0
    counters = {c.name: c for c in t.counters}
    assert (counters["gpu0"].energy_start_mj, counters["gpu0"].energy_end_mj) == (1000.0, 4000.0)
    assert counters["gpu0"].power_method == "fake gpu0"
    assert gpu.energy_reads == 2
    assert t.unavailable == (("rapl", "why"),)
    assert t.interval_s == 0.001 and t.errors == ()


def test_window_edges_come_from_the_injected_clocks() -> None:
    gpu = FakeSource(signal_after=1)
    recorder = TelemetryRecorder(
        [gpu], interval_s=0.001, clock=StepClock(5 * S, 0), wall_clock=lambda: 1_700_000_000 * S
    )
    recorder.start()
    _wait(gpu)
    t = recorder.stop()
    assert (t.window_start_ns, t.window_end_ns) == (5 * S, 5 * S)
    assert t.window_start_unix_ns == 1_700_000_000 * S
    assert {s.t_ns for s in t.samples} == {5 * S}


def test_a_failing_source_leaves_gaps_and_one_error_not_a_failed_run() -> None:
    bad = FakeSource("gpu1", fail_with=DeviceError("gpu1: cannot read power: GPU is lost"))
    good = FakeSource("gpu0")
    recorder = TelemetryRecorder([bad, good], interval_s=0.001)
    recorder.start()
    _wait(bad)
    t = recorder.stop()
    assert t.errors == (("gpu1", "gpu1: cannot read power: GPU is lost"),)
    gaps = t.samples_of("gpu1")
    assert len(gaps) == bad.reads and all(s.power_w is None for s in gaps)
    assert all(s.power_w == 100.0 for s in t.samples_of("gpu0"))


def test_a_bug_in_a_source_fails_stop_loudly() -> None:
    gpu = FakeSource(fail_with=ZeroDivisionError("oops"), signal_after=1)
    recorder = TelemetryRecorder([gpu], interval_s=0.001)
    recorder.start()
    _wait(gpu)
    with pytest.raises(RunError, match="telemetry sampling failed: ZeroDivisionError"):
        recorder.stop()


def test_counter_errors_are_recorded_and_the_counter_is_missing() -> None:
    class Flaky(FakeSource):
        def energy_mj(self) -> float | None:
            raise DeviceError("gpu0: cannot read energy: timeout")

    gpu = Flaky(signal_after=1)
    recorder = TelemetryRecorder([gpu], interval_s=0.001)
    recorder.start()
    _wait(gpu)
    t = recorder.stop()
    assert t.counters[0].energy_start_mj is None and t.counters[0].energy_end_mj is None
    assert t.errors == (("gpu0", "gpu0: cannot read energy: timeout"),)


def test_violation_counters_are_read_at_both_edges() -> None:
    gpu = FakeViolationSource(signal_after=1)
    recorder = TelemetryRecorder([gpu], interval_s=0.001)
    recorder.start()
    _wait(gpu)
    t = recorder.stop()
    assert gpu.violation_reads == 2
    assert t.counters[0].violations_ns == (("power", 1_000, 251_000_000), ("thermal", 0, 0))


def test_logged_meter_is_read_after_the_window_on_the_window_clock() -> None:
    wall_clock = StepClock(1_000 * S, 10 * S)  # start at unix 1000 s, stop at unix 1010 s
    log = FakeLoggedSource(
        [(999 * S, 1.0), (1_001 * S, 400.0), (1_009 * S, 410.0), (1_011 * S, 1.0)]
    )
    gpu = FakeSource(signal_after=1)
    recorder = TelemetryRecorder(
        [gpu, log], interval_s=0.001, clock=StepClock(50 * S, 0), wall_clock=wall_clock
    )
    recorder.start()
    _wait(gpu)
    t = recorder.stop()
    assert log.asked == [(1_000 * S, 1_010 * S)]
    assert [(s.t_ns, s.power_w) for s in t.samples_of("wall")] == [(51 * S, 400.0), (59 * S, 410.0)]
    assert next(c for c in t.counters if c.name == "wall").logged


def test_a_vanished_meter_log_is_an_error_not_a_crash() -> None:
    gpu = FakeSource(signal_after=1)
    recorder = TelemetryRecorder([gpu, FakeLoggedSource([], fail=True)], interval_s=0.001)
    recorder.start()
    _wait(gpu)
    t = recorder.stop()
    assert t.errors == (("wall", "wall: meter log vanished"),)
    assert t.samples_of("wall") == ()


def test_misuse_is_refused() -> None:
    with pytest.raises(ConfigError, match="interval_s must be > 0"):
        TelemetryRecorder([], interval_s=0)
    with pytest.raises(ConfigError, match="unique names"):
        TelemetryRecorder([FakeSource("gpu0"), FakeSource("gpu0")])
    recorder = TelemetryRecorder([], interval_s=0.001)
    with pytest.raises(RuntimeError, match="before start"):
        recorder.stop()
    recorder.start()
    with pytest.raises(RuntimeError, match="twice"):
        recorder.start()
    assert recorder.stop().samples == ()


@pytest.mark.parametrize(
    ("tick", "elapsed_ms", "expected"),
    [
        (0, 3, 1),  # on time: the next tick
        (1, 200, 2),  # reads that end exactly on the next tick: sample again at once
        (2, 201, 3),  # tick 2 just passed: wait for tick 3
        (2, 530, 6),  # far behind: ticks 3, 4 and 5 are skipped, not bunched up
    ],
)
def test_next_tick_skips_missed_ticks_instead_of_drifting(
    tick: int, elapsed_ms: int, expected: int
) -> None:
    assert next_tick(tick, elapsed_ms * 1_000_000, 100 * 1_000_000) == expected
