"""Where Server's peak search starts: half the queueing ceiling of its workers."""

from harness.analysis.queueing import ceiling_qps
from harness.execution.runner import search_start_qps


def test_the_search_starts_at_half_the_ceiling_one_doubling_below_it() -> None:
    # The ResNet-50 costs (batch 1: 27 ms, 2: 54 ms) at a 200 ms bound: the old start
    # (an eighth of batch 2 back to back) was 4.6 QPS, three doublings below the ceiling.
    costs = {1: 27.0, 2: 54.0}
    start = search_start_qps(costs, 200.0, 1)
    assert start == round(ceiling_qps(27.0, 200.0) / 2, 3)
    assert 2 / 54.0 * 1000 / 8 < start < ceiling_qps(27.0, 200.0) < 2 * start * 1.01


def test_more_workers_start_higher() -> None:
    costs = {1: 50.0}
    assert search_start_qps(costs, 200.0, 2) > 2 * search_start_qps(costs, 200.0, 1)
