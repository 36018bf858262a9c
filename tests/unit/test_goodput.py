"""Goodput from the SUT's stamps, and the generative confirmation's next rate."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.earlystop import generative_confirm_rate
from harness.analysis.goodput import goodput

MS = 1_000_000


def test_goodput_counts_only_queries_within_both_limits() -> None:
    issue = np.array([0, 100, 200, 300]) * MS
    start = issue + np.array([0, 5, 10, 0]) * MS
    first = issue + np.array([10, 80, 10, 10]) * MS  # query 1: TTFT 80 ms, over 50
    tokens = np.array([11, 11, 11, 11])
    end = first + np.array([100, 100, 300, 100]) * MS  # query 2: TPOT 30 ms, over 20
    figures = goodput(
        issue_ns=issue,
        first_ns=first,
        end_ns=end,
        tokens=tokens,
        start_ns=start,
        ttft_limit_ns=50 * MS,
        tpot_limit_ns=20 * MS,
    )
    assert figures is not None
    assert (figures.queries, figures.good) == (4, 2)
    assert figures.span_s == pytest.approx(0.51)  # first issue (0) to last end (510 ms)
    assert figures.goodput_qps == pytest.approx(2 / 0.51)
    assert figures.queue_delay_ns == (0, 10 * MS, 10 * MS)


def test_no_queries_no_goodput() -> None:
    empty = np.array([], dtype=np.int64)
    assert (
        goodput(
            issue_ns=empty,
            first_ns=empty,
            end_ns=empty,
            tokens=empty,
            ttft_limit_ns=1,
            tpot_limit_ns=1,
        )
        is None
    )


def test_a_queue_that_grew_steps_to_what_the_sut_completed() -> None:
    assert generative_confirm_rate(200.0, 200.0, 198.0) == pytest.approx(180.0)  # kept up
    assert generative_confirm_rate(200.0, 200.0, 100.0) == pytest.approx(90.0)  # ran away
    assert generative_confirm_rate(200.0, None, None) == pytest.approx(180.0)
