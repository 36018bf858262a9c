"""Energy math with exact values: integration, wraparound, throttle shares, counter checks."""

from __future__ import annotations

import pytest

from harness.telemetry.energy import (
    average_power_w,
    counter_delta,
    counter_power_mismatch,
    hold_spans,
    sample_rate_hz,
    throttle_shares,
    trapezoid_j,
    window_energy_j,
)

S = 1_000_000_000


def test_trapezoid_of_a_ramp_and_a_plateau() -> None:
    # 100 W -> 300 W over 2 s (400 J), then 300 W for 1 s (300 J)
    assert trapezoid_j([(0, 100.0), (2 * S, 300.0), (3 * S, 300.0)]) == 700.0


def test_trapezoid_of_fewer_than_two_points_is_zero() -> None:
    assert trapezoid_j([]) == 0.0
    assert trapezoid_j([(5, 80.0)]) == 0.0


def test_window_energy_holds_the_edge_values_out_to_the_window() -> None:
    # samples at 1 s and 3 s inside a 0..4 s window: 100 W held back to 0, 200 W held on to 4
    points = [(1 * S, 100.0), (3 * S, 200.0)]
    assert window_energy_j(points, 0, 4 * S) == 100.0 + 300.0 + 200.0


def test_window_energy_of_a_constant_power_is_power_times_duration() -> None:
    points = [(t * S // 10, 250.0) for t in range(3, 17)]
    assert window_energy_j(points, 0, 2 * S) == 500.0


def test_window_energy_ignores_points_outside_the_window() -> None:
    points = [(-S, 9999.0), (0, 50.0), (S, 50.0), (3 * S, 9999.0)]
    assert window_energy_j(points, 0, 2 * S) == 100.0


def test_window_energy_without_points_is_none_not_zero() -> None:
    assert window_energy_j([], 0, S) is None
    assert window_energy_j([(5 * S, 10.0)], 0, S) is None


def test_counter_delta_without_wrap() -> None:
    assert counter_delta(1_000.0, 4_500.0, 262_143_328_850) == 3_500.0


def test_counter_delta_across_one_wrap() -> None:
    # RAPL's energy_uj wraps to 0 after max_energy_range_uj
    assert counter_delta(262_143_328_000, 1_150, 262_143_328_850) == 2_000


def test_counter_delta_that_went_back_without_a_range_is_none() -> None:
    assert counter_delta(5.0, 3.0, None) is None


def test_hold_spans_cover_the_window_exactly() -> None:
    spans = hold_spans([2, 5, 7], 0, 10)
    assert spans == [(0, 5), (5, 7), (7, 10)]
    assert sum(b - a for a, b in spans) == 10


def test_throttle_shares_are_time_weighted() -> None:
    # window 0..10 s: thermal active 2..6 s, power 4..6 s
    points = [
        (0, ()),
        (2 * S, ("thermal",)),
        (4 * S, ("power", "thermal")),
        (6 * S, ()),
        (8 * S, ()),
    ]
    assert throttle_shares(points, 0, 10 * S) == {"power": 0.2, "thermal": 0.4}


def test_throttle_first_reading_stands_for_the_window_start_and_last_for_its_end() -> None:
    points = [(1 * S, ("idle",)), (3 * S, ()), (9 * S, ("power",))]
    assert throttle_shares(points, 0, 10 * S) == {"idle": 0.3, "power": 0.1}


def test_throttle_unreported_readings_keep_the_last_known_state() -> None:
    points = [(0, ("power",)), (5 * S, None), (8 * S, ())]
    assert throttle_shares(points, 0, 10 * S) == {"power": 0.8}


def test_throttle_never_reported_is_none_and_never_active_is_empty() -> None:
    assert throttle_shares([(0, None), (S, None)], 0, 2 * S) is None
    assert throttle_shares([(0, ()), (S, ())], 0, 2 * S) == {}


def test_average_power_and_rate() -> None:
    assert average_power_w(3510.0, 6 * S) == 585.0
    assert average_power_w(1.0, 0) is None
    assert sample_rate_hz([0, S // 10, 2 * S // 10, 3 * S // 10]) == pytest.approx(10.0)
    assert sample_rate_hz([0, 4 * S]) == 0.25
    assert sample_rate_hz([7]) is None


def test_counter_agreeing_with_power_is_trusted() -> None:
    # 250 J in 0.5 s is 500 W
    assert counter_power_mismatch(250_000.0, S // 2, 480.0) is None


def test_counter_disagreeing_with_power_is_not_trusted() -> None:
    reason = counter_power_mismatch(50_000.0, S // 2, 500.0)
    assert reason == "energy counter says 100.0 W but power readings say 500.0 W over 0.5 s"


def test_idle_counter_within_the_absolute_tolerance_is_trusted() -> None:
    # 12 W by the counter against 8 W readings: 50 % off, but within 5 W
    assert counter_power_mismatch(6_000.0, S // 2, 8.0) is None


def test_stuck_counter_is_not_trusted() -> None:
    assert counter_power_mismatch(0.0, S, 300.0) == "energy counter did not advance in 1 s"
