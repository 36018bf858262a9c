"""LoadGen's early-stopping results for TTFT and TPOT: read from its detail log, kept, shown.

The texts are LoadGen 6.0.17's own, from real llm-tiny runs on this machine: SingleStream
states p90 and p99 estimates; Server only its verdict; Offline writes empty strings. They sit
in the generation block beside TTFT and TPOT (not in TokenPercentiles, which published
records share: a published log keeps no such estimate).
"""

from __future__ import annotations

import pytest

from harness.errors import ResultError
from harness.records.generation import TokenEarlyStopping, TokenPercentiles
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
    plain = TokenPercentiles(p50=1_000_000, p90=4_000_000, p99=9_000_000)
    estimated = TokenEarlyStopping(text="x", p90_ns=4_595_286, p99_ns=12_956_204)
    assert _percentiles("TTFT", plain, estimated) == (
        "TTFT p50 1.000 ms p90 4.000 ms p99 9.000 ms "
        "(LoadGen early-stopping estimates p90 4.595 ms p99 12.956 ms)"
    )
    verdict = TokenEarlyStopping(text="* Run successful.", p90_ns=None, p99_ns=None)
    assert _percentiles("TPOT", plain, verdict).endswith(
        "(LoadGen early stopping: Run successful.)"
    )
    assert _percentiles("TPOT", plain).endswith("p99 9.000 ms")


def test_an_older_result_reads_with_no_token_early_stopping() -> None:
    old = {"schema_version": 10, "generation": {"tokens_per_second": 1.0}}
    new = upgrade(old, 10, 12)
    assert new["schema_version"] == 12
    assert new["generation"] == {
        "tokens_per_second": 1.0,
        "ttft_early_stopping": None,
        "tpot_early_stopping": None,
    }
    assert "ttft_early_stopping" not in old["generation"]  # the steps copy
    assert upgrade({"schema_version": 11, "generation": None}, 11, 12)["generation"] is None
