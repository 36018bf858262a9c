"""Where the generative capacity search starts: capsearch's share of the back-to-back rate."""

from __future__ import annotations

import pytest

from harness.analysis import capsearch

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
from harness.execution.genpeaksearch import generative_start_qps


def test_the_search_starts_at_capsearch_s_share_of_the_back_to_back_rate() -> None:
    # 5 ms a whole generation: 200 generations/s back to back, the ceiling's estimate
    assert generative_start_qps(5e6) == pytest.approx(200.0 * capsearch.START_SHARE)
    assert generative_start_qps(5e6) == capsearch.start_qps(200.0)
    assert generative_start_qps(1e12) == 0.1  # a slow model still starts above 0 QPS


@pytest.mark.parametrize("median_ns", [0.0, -1.0, float("nan")])
def test_a_warm_up_without_a_duration_is_refused(median_ns: float) -> None:
    with pytest.raises(ValueError, match="a generation takes > 0 ns"):
        generative_start_qps(median_ns)
