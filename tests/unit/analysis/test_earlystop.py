from pathlib import Path

import pytest

from harness.analysis.earlystop import (
    allowed_overs,
    confirm_step,
    min_passing_queries,
    queries_for_share,
)
from harness.records.loadgen_log import parse_detail_log

FIXTURES = Path(__file__).parents[2] / "fixtures" / "loadgen"


def test_the_fewest_queries_match_loadgens_own_log() -> None:
    # LoadGen's summary: "Not enough queries processed for 99.0th percentile early stopping
    # estimate (would need to process at least 662 total queries)", and ~460 with none over.
    summary = (FIXTURES / "singlestream-invalid" / "mlperf_log_summary.txt").read_text()
    assert "at\n least 662 total queries" in summary
    assert min_passing_queries(1) == 662
    assert min_passing_queries(0) == 459


def test_a_500_query_run_allows_nothing_over_the_bound() -> None:
    # Why the old 500-query confirmation failed at a p99 of 168.8 ms under a 200 ms bound:
    # one query over is already too many, so it was judged at its p99.8.
    assert allowed_overs(500) == 0
    assert allowed_overs(458) == -1
    assert allowed_overs(662) == 1
    assert allowed_overs(1453) == 6  # 0.4 %: judged near its p99.6


def test_longer_runs_approach_the_nominal_share() -> None:
    counts = [queries_for_share(s) for s in (0.3, 0.4, 0.5)]
    assert counts == sorted(counts) and counts[1] == 1453
    for share, count in zip((0.3, 0.4, 0.5), counts, strict=True):
        assert allowed_overs(count) >= share * 0.01 * count
        assert allowed_overs(count - 1) < share * 0.01 * (count - 1)
    with pytest.raises(ValueError, match="share"):
        queries_for_share(1.0)


def test_the_rule_gives_loadgens_verdict_on_a_recorded_server_run() -> None:
    # A real confirming run (mobilenet_v2 on a loaded 2-core machine, 300 ms bound): 500
    # queries, 60 over; LoadGen said early stopping NOT met and "would need to run at least
    # 7553 more queries". The same numbers come out of the rule here.
    log = parse_detail_log(FIXTURES / "server-confirm-invalid" / "mlperf_log_detail.txt")
    queries, overs = log.get("result_query_count"), log.get("result_overlatency_query_count")
    assert (queries, overs) == (500, 60)
    assert log.get("early_stopping_met") is False
    assert "at least 7553 more queries" in log.get("early_stopping_result")
    assert min_passing_queries(overs) == queries + 7553
    assert allowed_overs(queries) < overs
    # 12 % over: the queue ran away, so the next confirmation steps down 30 %, not 10 %.
    assert confirm_step(overs, queries) == 0.7
    assert confirm_step(5, queries) == 0.9 and confirm_step(20, queries) == 0.8
    assert confirm_step(None, queries) == 0.9


def test_a_500_query_run_under_the_bound_at_p99_is_invalid_for_one_query_over() -> None:
    # The pattern, recorded: the old fourth confirmation (mobilenet_v2, 5.859 QPS, 300
    # ms bound, loaded machine) had p99 257 ms yet was INVALID: one query over, and LoadGen
    # "would need to run at least 162 more queries". The new confirmation length allows six.
    log = parse_detail_log(FIXTURES / "server-confirm-one-over" / "mlperf_log_detail.txt")
    queries, overs = log.get("result_query_count"), log.get("result_overlatency_query_count")
    assert (queries, overs) == (500, 1)
    assert log.get("result_99.00_percentile_latency_ns") < log.get("effective_target_latency_ns")
    assert log.get("early_stopping_met") is False and log.get("result_validity") == "INVALID"
    assert "at least 162 more queries" in log.get("early_stopping_result")
    assert min_passing_queries(overs) == queries + 162
    assert allowed_overs(queries) < overs <= allowed_overs(queries_for_share(0.4))
