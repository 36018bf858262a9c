"""Server's batching policy: derived from the bound and measured batch costs, never tuned."""

from __future__ import annotations

import pytest

from harness.loadgen.batching import compiled_batches, derive_policy

MS = 1_000_000


@pytest.mark.parametrize(
    ("batch", "sizes"),
    [(1, [1]), (2, [1, 2]), (6, [1, 2, 4, 6]), (8, [1, 2, 4, 8]), (9, [1, 2, 4, 8, 9])],
)
def test_compiled_batches_are_powers_of_two_up_to_the_batch(batch: int, sizes: list[int]) -> None:
    assert compiled_batches(batch) == sizes


def test_a_cpu_where_batching_gains_nothing_never_holds_a_query() -> None:
    # ResNet-50 FP32 on this 2-core VM: ~45 ms per image at any batch.
    costs = {1: 45 * MS, 2: 92 * MS, 4: 185 * MS, 8: 370 * MS}
    policy = derive_policy(costs, 200 * MS, None)
    assert policy.max_wait_ms == 0.0
    # 2 x 45 ms fits 160 ms (80 % of 200), 2 x 92 ms does not: one image per batch.
    assert policy.max_batch == 1
    assert "hold 0 ms" in policy.how and "1: 45.00 ms" in policy.how
    looser = derive_policy(costs, 300 * MS, None)  # 2 x 92 fits 240: as cheap per sample
    assert (looser.max_batch, looser.max_wait_ms) == (2, 0.0)


def test_a_gpu_like_cost_curve_holds_for_what_is_left_after_two_batches() -> None:
    costs = {1: 2 * MS, 2: 2.2 * MS, 4: 2.6 * MS, 8: 3.4 * MS}
    policy = derive_policy(costs, 15 * MS, None)
    assert policy.max_batch == 8
    # 80 % of 15 ms = 12 ms, minus two batch-8 runs (6.8 ms) = 5.2 ms, capped at one run.
    assert policy.max_wait_ms == pytest.approx(3.4)
    loose = derive_policy(costs, 100 * MS, None)
    assert loose.max_wait_ms == pytest.approx(3.4)  # never more than one batch's cost
    tight = derive_policy(costs, 9 * MS, None)
    assert tight.max_batch == 8 and tight.max_wait_ms == pytest.approx(0.4)


def test_a_batch_that_is_dearer_per_sample_is_not_gathered() -> None:
    costs = {1: 0.5 * MS, 2: 1.2 * MS, 4: 3.8 * MS, 8: 12 * MS}  # like the tiny model here
    policy = derive_policy(costs, 50 * MS, None)
    assert policy.max_batch == 1 and policy.max_wait_ms == 0.0


def test_the_scenarios_max_wait_wins_but_the_batch_is_still_derived() -> None:
    costs = {1: 45 * MS, 2: 92 * MS, 4: 185 * MS}
    policy = derive_policy(costs, 300 * MS, 7.5)
    assert (policy.max_batch, policy.max_wait_ms) == (2, 7.5)
    assert "from the scenario's server.max_wait_ms" in policy.how


def test_when_no_batch_fits_batch_one_is_kept() -> None:
    policy = derive_policy({1: 40 * MS, 2: 80 * MS}, 50 * MS, None)
    assert (policy.max_batch, policy.max_wait_ms) == (1, 0.0)
