"""Where Server's peak search starts: capsearch.START_SHARE of its workers' queueing ceiling."""

from harness.analysis import capsearch
from harness.analysis.queueing import ceiling_qps
from harness.execution.peaksearch import search_start_qps


def test_the_search_starts_one_step_under_the_ceiling() -> None:
    # The ResNet-50 costs (batch 1: 27 ms, 2: 54 ms) at a 200 ms bound: the old start
    # (an eighth of batch 2 back to back) was 4.6 QPS, three doublings below the ceiling.
    costs = {1: 27.0, 2: 54.0}
    start = search_start_qps(costs, 200.0, 1)
    ceiling = ceiling_qps(27.0, 200.0)
    assert start == round(ceiling * capsearch.START_SHARE, 3)
    # 0.5-1.0x the ceiling (where CPU SUTs land) is one STEP either side of the start.
    assert start / capsearch.STEP < 0.6 * ceiling and start * capsearch.STEP > 0.9 * ceiling


def test_more_workers_start_higher() -> None:
    costs = {1: 50.0}
    assert search_start_qps(costs, 200.0, 2) > 2 * search_start_qps(costs, 200.0, 1)
