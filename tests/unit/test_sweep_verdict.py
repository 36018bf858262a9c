"""The sweep's verdict with fixed numbers: batches it skipped and why, and how sure it is."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.analysis.sweep import failed_sweep, run_sweep, saturation_verdict
from harness.analysis.trials import trial_stats
from harness.records.sweep import SweepPoint
from harness.records.trials import TrialStats

Table = Mapping[int, Sequence[float]]


class FakeOOMError(Exception):
    """What the fake measure raises from its `oom_at` batch on."""


def _stats(values: Sequence[float]) -> TrialStats:
    return trial_stats(values, requested=len(values), higher_is_better=True)


def _points(table: Table) -> list[SweepPoint]:
    return [SweepPoint(batch_size=b, stats=_stats(v)) for b, v in table.items()]


def _measure(table: Table, oom_at: int | None = None) -> Callable[[int], TrialStats]:
    def measure(batch: int) -> TrialStats:
        if oom_at is not None and batch >= oom_at:
            raise FakeOOMError(f"out of memory at batch {batch}")
        return _stats(table[batch])

    return measure


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, FakeOOMError)


def test_a_plateau_names_the_requested_batches_it_skipped_and_why() -> None:
    table = {1: [100.0], 2: [200.0], 4: [201.0], 8: [199.0]}
    out = run_sweep(_measure(table), batches=[1, 2, 4, 8, 16, 32, 64], is_oom=_is_oom)
    assert out.stopped == "plateau"
    assert out.requested == (1, 2, 4, 8, 16, 32, 64)
    assert out.skipped == (16, 32, 64)
    assert out.skip_reason == (
        "throughput had plateaued: batch 4 and 8 did not beat the best median before them by 3 %"
    )


def test_running_out_of_memory_skips_the_batches_after_it() -> None:
    table = {1: [100.0], 2: [150.0]}
    out = run_sweep(_measure(table, oom_at=4), batches=[1, 2, 4, 8, 16], is_oom=_is_oom)
    assert (out.stopped, out.skipped) == ("out_of_memory", (8, 16))
    assert out.skip_reason == "batch 4 ran out of memory"


def test_a_sweep_that_ran_every_batch_skipped_none() -> None:
    table = {1: [100.0], 2: [150.0], 4: [250.0]}
    out = run_sweep(_measure(table), batches=[1, 2, 4], is_oom=_is_oom)
    assert (out.stopped, out.skipped, out.skip_reason) == ("max_batch", (), None)


def test_a_failed_point_skips_the_rest_with_its_error() -> None:
    out = failed_sweep(_points({1: [100.0, 101.0]}), 2, "failed: device lost", [1, 2, 4, 8])
    assert (out.skipped, out.skip_reason) == ((4, 8), "batch 2 failed: failed: device lost")


def test_issue_16_a_wide_later_point_makes_the_saturation_point_uncertain() -> None:
    # Problem 4: batch 2 was named the saturation point although batch 4's CoV was 18 % and
    # its range covered batch 2's median.
    points = _points({1: [300.0, 305.0, 310.0], 2: [500.0, 510.0, 520.0], 4: [420.0, 480.0, 600.0]})
    assert points[2].stats.cov > 0.15 and 420.0 <= points[1].stats.median <= 600.0
    verdict = saturation_verdict(points)
    assert (verdict.batch, verdict.earliest, verdict.latest) == (2, 2, None)
    assert not verdict.certain
    assert verdict.caveat == (
        "saturation at batch 2 is uncertain: the trials' ranges put it anywhere from batch 2 "
        "to beyond batch 4 (the last run); batch 4's trials (420.00-600.00 samples/s, "
        "CoV 18.3 %) overlap batch 2's (500.00-520.00)"
    )


def test_a_tight_plateau_is_a_certain_saturation_point() -> None:
    table = {1: [100.0, 101.0], 2: [300.0, 303.0], 4: [500.0, 505.0], 8: [502.0, 507.0]}
    verdict = saturation_verdict(_points(table))
    assert (verdict.batch, verdict.earliest, verdict.latest) == (4, 4, 4)
    assert verdict.certain and verdict.caveat is None


def test_an_earlier_point_within_reach_moves_the_earliest_bound() -> None:
    table = {1: [100.0, 101.0], 2: [400.0, 490.0], 4: [500.0, 505.0], 8: [502.0, 507.0]}
    verdict = saturation_verdict(_points(table))
    assert (verdict.batch, verdict.earliest, verdict.latest) == (4, 2, 4)
    assert verdict.caveat is not None
    assert verdict.caveat == (
        "saturation at batch 4 is uncertain: the trials' ranges put it anywhere from batch 2 "
        "to batch 4; batch 2's trials (400.00-490.00 samples/s, CoV 14.3 %) reach 95 % of the "
        "best"
    )


def test_one_trial_per_batch_leaves_the_spread_unknown() -> None:
    verdict = saturation_verdict(_points({1: [100.0], 2: [300.0], 4: [301.0]}))
    assert (verdict.batch, verdict.certain) == (2, False)
    assert verdict.caveat == (
        "saturation at batch 2 is uncertain: batch 1, 2, 4 ran one trial, so its spread is unknown"
    )


def test_no_points_no_verdict() -> None:
    verdict = saturation_verdict([])
    assert (verdict.batch, verdict.certain, verdict.caveat) == (None, False, "nothing finished")
