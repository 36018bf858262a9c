"""LoadGen's early-stopping results for TTFT and TPOT: read from its detail log, kept, shown.

The texts are LoadGen 6.0.17's own, from real llm-tiny runs on this machine: SingleStream
states p90 and p99 estimates; Server only its verdict; Offline writes empty strings.
"""

from __future__ import annotations

import pytest

from harness.errors import ResultError
from harness.records.generation import TokenPercentiles
from harness.records.loadgen_log import DetailLog, token_early_stopping
from harness.report.tokens import _percentiles
from harness.results.migrate import upgrade

SINGLE_STREAM = (
    " * Processed at least 64 queries (2848).  * Would discard 246 highest latency queries.  "
    "* Early stopping 90.0th percentile estimate: 4595286  "
    "* Early stopping 99.0th percentile estimate: 12956204"
)


def _log(**values: object) -> DetailLog:
    return DetailLog(values=values, errors=(), warnings=(), source="mlperf_log_detail.txt")


def test_single_stream_states_p90_and_p99_estimates() -> None:
    found = token_early_stopping(_log(early_stopping_ttft_result=SINGLE_STREAM), "ttft")
    assert found is not None
    assert (found.p90_ns, found.p99_ns) == (4_595_286, 12_956_204)
    assert found.text.startswith("* Processed at least 64 queries (2848). * Would discard")


def test_server_states_a_verdict_and_offline_nothing() -> None:
    server = token_early_stopping(_log(early_stopping_tpot_result=" * Run successful."), "tpot")
    assert server is not None and server.text == "* Run successful."
    assert server.p90_ns is None and server.p99_ns is None
    assert token_early_stopping(_log(early_stopping_tpot_result=""), "tpot") is None
    assert token_early_stopping(_log(), "ttft") is None


@pytest.mark.parametrize("value", [12, ["* Run successful."], "x" * 1001])
def test_an_edited_result_is_refused_by_key(value: object) -> None:
    with pytest.raises(ResultError, match="early_stopping_ttft_result"):
        token_early_stopping(_log(early_stopping_ttft_result=value), "ttft")


def test_the_summary_shows_the_estimates_beside_the_plain_percentiles() -> None:
    plain = {"p50": 1_000_000, "p90": 4_000_000, "p99": 9_000_000}
    estimated = TokenPercentiles(
        **plain, early_stopping_p90=4_595_286, early_stopping_p99=12_956_204, early_stopping="x"
    )
    assert _percentiles("TTFT", estimated) == (
        "TTFT p50 1.000 ms p90 4.000 ms p99 9.000 ms "
        "(LoadGen early-stopping estimates p90 4.595 ms p99 12.956 ms)"
    )
    verdict = TokenPercentiles(**plain, early_stopping="* Run successful.")
    assert _percentiles("TPOT", verdict).endswith("(LoadGen early stopping: Run successful.)")
    assert _percentiles("TPOT", TokenPercentiles(**plain)).endswith("p99 9.000 ms")


def test_an_older_result_reads_with_no_token_early_stopping() -> None:
    old = {"schema_version": 10, "generation": {"ttft_ns": {"p50": 1, "p90": 2, "p99": 3}}}
    new = upgrade(old, 10, 13)
    assert new["schema_version"] == 13
    assert new["generation"]["ttft_ns"] == {
        "p50": 1,
        "p90": 2,
        "p99": 3,
        "early_stopping_p90": None,
        "early_stopping_p99": None,
        "early_stopping": None,
    }
    assert "early_stopping" not in old["generation"]["ttft_ns"]  # the steps copy
    assert upgrade({"schema_version": 12, "generation": None}, 12, 13)["generation"] is None
