"""Trial statistics, sweep control with a fake measure, and Welch's t-test, with exact numbers."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest
from scipy import stats as scipy_stats

from harness.analysis.sweep import plateaued, run_sweep, saturation_batch, sweep_batches
from harness.analysis.trials import trial_stats
from harness.analysis.welch import significant, welch_t_test
from harness.errors import ConfigError, ResultError
from harness.records.codec import from_data, to_data, to_object
from harness.records.sweep import SweepLimit, SweepPoint
from harness.records.trials import TrialStats


def test_median_best_mean_sample_stdev_and_cov() -> None:
    s = trial_stats([100.0, 102.0, 98.0], requested=3, higher_is_better=True)
    assert (s.median, s.best, s.mean, s.stdev, s.cov) == (100.0, 102.0, 100.0, 2.0, 0.02)
    assert s.values == (100.0, 102.0, 98.0) and s.warnings == ()
    assert trial_stats([100.0, 102.0, 98.0], requested=3, higher_is_better=False).best == 98.0


def test_one_value_has_no_spread_and_says_fewer_trials_than_asked() -> None:
    s = trial_stats([5.0], requested=3, higher_is_better=True)
    assert (s.median, s.best, s.mean, s.stdev, s.cov) == (5.0, 5.0, 5.0, 0.0, 0.0)
    assert s.warnings == (
        "only 1 of 3 requested trials produced a value; "
        "the statistics rest on fewer trials than asked",
    )


def test_cov_at_the_limit_warns_with_the_numbers() -> None:
    s = trial_stats([95.0, 100.0, 105.0], requested=3, higher_is_better=True)
    assert s.cov == 0.05
    assert s.warnings == (
        "spread too large to trust: CoV 5.0 % >= 5 % over 3 trials (mean 100.00, stdev 5.00)",
    )
    assert trial_stats([96.0, 100.0, 104.0], requested=3, higher_is_better=True).warnings == ()


def test_an_outlier_is_more_than_half_off_the_median() -> None:
    exactly_half = trial_stats([100.0, 100.0, 150.0], requested=3, higher_is_better=True)
    assert not [w for w in exactly_half.warnings if "outlier" in w]
    s = trial_stats([100.0, 100.0, 151.0], requested=3, higher_is_better=True)
    assert s.warnings[1] == (
        "trial 3 is an outlier: 151.00 is 51.0 % off the median 100.00 (limit 50 %)"
    )


def test_limits_are_parameters() -> None:
    s = trial_stats([100.0, 120.0], requested=2, higher_is_better=True, cov_limit=0.2)
    assert s.warnings == ()
    s = trial_stats([100.0, 100.0, 120.0], requested=3, higher_is_better=True, outlier_limit=0.1)
    assert s.warnings[-1].startswith("trial 3 is an outlier: 120.00 is 20.0 % off")


def test_large_numbers_print_whole() -> None:
    s = trial_stats([2_000_000.0, 3_000_000.0], requested=2, higher_is_better=False)
    assert s.warnings == (
        "spread too large to trust: CoV 28.3 % >= 5 % over 2 trials "
        "(mean 2,500,000, stdev 707,107)",
    )


def test_no_values_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        trial_stats([], requested=3, higher_is_better=True)


def test_dict_round_trip_and_malformed_input() -> None:
    s = trial_stats([1.0, 2.0, 4.0], requested=5, higher_is_better=False)
    assert from_data(TrialStats, to_data(s)) == s
    data = to_object(s)
    del data["median"]
    with pytest.raises(ResultError, match="stats: missing key"):
        from_data(TrialStats, data, "stats")


# --- sweep control ---------------------------------------------------------------------------


def _stats(value: float) -> TrialStats:
    return trial_stats([value], requested=1, higher_is_better=True)


def _points(medians: Mapping[int, float]) -> list[SweepPoint]:
    return [SweepPoint(batch_size=b, stats=_stats(v)) for b, v in medians.items()]


class FakeOOMError(Exception):
    pass


class FakeMeasure:
    """Throughput per batch from a table; raises FakeOOMError from `oom_at` on."""

    def __init__(self, table: Mapping[int, float], oom_at: int | None = None) -> None:
        self.table, self.oom_at, self.calls = table, oom_at, list[int]()

    def __call__(self, batch: int) -> TrialStats:
        self.calls.append(batch)
        if self.oom_at is not None and batch >= self.oom_at:
            raise FakeOOMError(f"CUDA out of memory at batch {batch}\nTried to allocate 2.00 GiB")
        return _stats(self.table[batch])


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, FakeOOMError)


def test_batches_are_geometric_up_to_the_maximum() -> None:
    assert list(sweep_batches()) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert list(sweep_batches(start=3, factor=2, max_batch=20)) == [3, 6, 12]
    assert list(sweep_batches(start=8, factor=4, max_batch=8)) == [8]
    with pytest.raises(ConfigError, match="factor >= 2"):
        list(sweep_batches(factor=1))


def test_plateau_needs_two_points_in_a_row_under_3_percent_above_the_best() -> None:
    assert not plateaued(_points({1: 100, 2: 101}))  # too few points to tell
    assert plateaued(_points({1: 100, 2: 102, 4: 104}))  # +2 %, then +2 % over the best
    assert not plateaued(_points({1: 100, 2: 102, 4: 105.06}))  # 105.06 / 102 = +3 %: rises
    assert not plateaued(_points({1: 100, 2: 90, 4: 110}))  # one dip, then a new best
    # The gain is measured against the best so far, not the previous point: 203 is +6.8 %
    # over the dip (190) but only +1.5 % over the best (200), so this has plateaued.
    assert plateaued(_points({1: 100, 2: 200, 4: 190, 8: 203}))
    assert plateaued(_points({1: 100, 2: 100, 4: 100}), steps=2)
    assert not plateaued(_points({1: 100, 2: 100, 4: 100}), steps=3)


def test_saturation_is_the_smallest_batch_at_95_percent_of_the_best() -> None:
    assert saturation_batch(_points({1: 100, 2: 190, 4: 300, 8: 310, 16: 312})) == 4
    assert saturation_batch(_points({1: 190, 2: 200})) == 1  # exactly 95 %
    assert saturation_batch(_points({1: 189.9, 2: 200})) == 2
    assert saturation_batch([]) is None
    assert saturation_batch(_points({1: 0.0})) is None


def test_a_saturating_series_stops_at_the_plateau() -> None:
    measure = FakeMeasure({1: 100, 2: 200, 4: 380, 8: 400, 16: 405, 32: 406, 64: 407})
    out = run_sweep(measure, batches=sweep_batches(), is_oom=_is_oom)
    assert measure.calls == [1, 2, 4, 8, 16, 32]
    assert [p.batch_size for p in out.points] == [1, 2, 4, 8, 16, 32]
    assert (out.stopped, out.saturation_batch, out.best_batch, out.limit) == (
        "plateau",
        8,  # 400 >= 0.95 * 406 = 385.7; 380 is not
        32,
        None,
    )


def test_out_of_memory_ends_the_sweep_with_the_points_so_far() -> None:
    measure = FakeMeasure({b: 100.0 * b for b in (1, 2, 4, 8)}, oom_at=16)
    out = run_sweep(measure, batches=sweep_batches(), is_oom=_is_oom)
    assert measure.calls == [1, 2, 4, 8, 16]
    assert [p.batch_size for p in out.points] == [1, 2, 4, 8]
    assert out.stopped == "out_of_memory"
    assert out.limit == SweepLimit(batch_size=16, error="CUDA out of memory at batch 16")
    assert to_data(out.limit) == {"batch_size": 16, "error": "CUDA out of memory at batch 16"}
    assert (out.saturation_batch, out.best_batch) == (8, 8)


def test_out_of_memory_at_the_first_batch_measures_nothing() -> None:
    out = run_sweep(FakeMeasure({}, oom_at=1), batches=[1, 2], is_oom=_is_oom)
    assert (out.points, out.saturation_batch, out.best_batch) == ((), None, None)
    assert out.stopped == "out_of_memory"


def test_other_errors_propagate() -> None:
    def broken(batch: int) -> TrialStats:
        raise RuntimeError("driver crashed")

    with pytest.raises(RuntimeError, match="driver crashed"):
        run_sweep(broken, batches=[1, 2], is_oom=_is_oom)


def test_a_noisy_series_survives_single_dips() -> None:
    table = {1: 100, 2: 150, 4: 140, 8: 200, 16: 203, 32: 260, 64: 262, 128: 265, 256: 300}
    measure = FakeMeasure(table)
    out = run_sweep(measure, batches=sweep_batches(), is_oom=_is_oom)
    # 4 dips and 16 gains 1.5 %: each alone does not stop it; 64 and 128 (+0.8 %, +1.1 % over
    # the best so far) do.
    assert measure.calls == [1, 2, 4, 8, 16, 32, 64, 128]
    assert (out.stopped, out.saturation_batch, out.best_batch) == ("plateau", 32, 128)


def test_a_series_still_rising_stops_at_the_last_batch() -> None:
    out = run_sweep(
        FakeMeasure({b: 10.0 * b for b in (1, 2, 4, 8)}),
        batches=sweep_batches(max_batch=8),
        is_oom=_is_oom,
    )
    assert (out.stopped, out.saturation_batch, out.best_batch) == ("max_batch", 8, 8)


def test_sweep_parameters_are_passed_on() -> None:
    measure = FakeMeasure({1: 100, 2: 110, 4: 120, 8: 130})
    out = run_sweep(measure, batches=[1, 2, 4, 8], is_oom=_is_oom, min_gain=0.1, steps=1)
    assert (out.stopped, [p.batch_size for p in out.points]) == ("plateau", [1, 2, 4])


# --- Welch's t-test --------------------------------------------------------------------------


def test_welch_matches_the_textbook_formula() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0]
    # means 3 and 6, sample variances 2.5 and 10, n = 5: se = sqrt(0.5 + 2) = sqrt(2.5)
    t_expected = -3.0 / math.sqrt(2.5)
    df = (0.5 + 2.0) ** 2 / (0.5**2 / 4 + 2.0**2 / 4)  # Welch-Satterthwaite: 5.882...
    p_expected = 2 * scipy_stats.t.sf(abs(t_expected), df)
    t, p = welch_t_test(a, b)
    assert t == pytest.approx(t_expected, rel=1e-12)
    assert p == pytest.approx(p_expected, rel=1e-9)
    assert p == pytest.approx(0.10753, abs=1e-5)
    assert significant(a, b) is False
    assert significant(a, b, alpha=0.2) is True


def test_welch_without_any_variance() -> None:
    assert welch_t_test([3.0, 3.0], [3.0, 3.0]) == (0.0, 1.0)
    assert welch_t_test([3.0, 3.0], [4.0, 4.0]) == (-math.inf, 0.0)
    assert significant([3.0, 3.0], [4.0, 4.0]) is True


def test_welch_with_one_constant_side_gives_no_warning() -> None:
    t, p = welch_t_test([5.0, 5.0, 5.0], [1.0, 2.0, 3.0])
    assert t == pytest.approx(3.0 / math.sqrt(1.0 / 3), rel=1e-12)
    assert 0 < p < 0.05


def test_one_trial_is_not_enough_to_tell() -> None:
    assert significant([1.0], [2.0, 3.0]) is None
    assert significant([1.0, 2.0], []) is None
    with pytest.raises(ValueError, match="two values on each side"):
        welch_t_test([1.0], [2.0, 3.0])
