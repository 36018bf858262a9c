"""result.json's numbers against real LoadGen detail logs, with values copied from the logs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.bundle.numbers import Discrepancy, check_run, describe_all, discrepancies
from harness.errors import ResultError
from harness.records.loadgen_log import parse_detail_log
from tests.conftest import REPO

LOGS = REPO / "tests" / "fixtures" / "loadgen"


def _singlestream() -> dict[str, Any]:
    """What a result.json of the singlestream-valid log holds (numbers copied by hand)."""
    return {
        "valid": True,
        "submission_valid": False,
        "loadgen_errors": [],
        "samples_per_second": 2798.92,
        "qps_with_loadgen_overhead": 2798.92,
        "qps_without_loadgen_overhead": 2827.87,
        "latency_ns": {
            "p50": 352503,
            "p90": 394596,
            "p99": 453773,
            "p999": 1345936,
            "mean": 353623,
            "min": 295278,
            "max": 3153046,
            "early_stopping_p90": 396889,
            "early_stopping_p99": 468085,
        },
        "settings": {
            "scenario": "SingleStream",
            "min_duration_ms": 2000,
            "min_query_count": 100,
            "performance_sample_count": 128,
            "schedule_rng_seed": 16159082839903944936,
            "performance_issue_same": False,
            "target_qps": 5899.46,
        },
        "server": None,
    }


def _log(name: str) -> Any:
    return parse_detail_log(LOGS / name / "mlperf_log_detail.txt")


def test_a_result_as_logged_has_no_discrepancy() -> None:
    assert discrepancies(_singlestream(), _log("singlestream-valid")) == []


@pytest.mark.parametrize(
    ("key", "edited", "logged"),
    [
        ("samples_per_second", 9999.0, 2798.92),
        ("qps_without_loadgen_overhead", 2900.0, 2827.87),
        ("valid", False, True),
        ("latency_ns.p90", 200000, 394596),
        ("latency_ns.early_stopping_p99", None, 468085),
        ("settings.min_duration_ms", 600000, 2000),
        ("settings.performance_issue_same", 0, False),  # a bool is not the number 0
        ("settings.schedule_rng_seed", 16159082839903944937, 16159082839903944936),
        ("loadgen_errors", ["x"], []),
    ],
)
def test_each_edited_value_is_named_with_both_values(
    key: str, edited: object, logged: object
) -> None:
    result = _singlestream()
    head, _, rest = key.partition(".")
    if rest:
        result[head][rest] = edited
    else:
        result[key] = edited
    found = discrepancies(result, _log("singlestream-valid"))
    assert found == [Discrepancy(key=key, recorded=edited, logged=logged)]
    assert describe_all(found).startswith(f"{key} is {json.dumps(edited)} but mlperf_log_detail")


def test_keys_a_result_does_not_hold_are_not_compared() -> None:
    result = _singlestream()
    del result["latency_ns"]["early_stopping_p99"], result["settings"]
    assert discrepancies(result, _log("singlestream-valid")) == []


def test_submission_valid_cannot_outrank_an_invalid_log() -> None:
    log = _log("singlestream-invalid")
    result = {"valid": False, "submission_valid": True, "samples_per_second": 367778.0}
    assert discrepancies(result, log) == [
        Discrepancy(key="submission_valid", recorded=True, logged=False)
    ]


def test_offline_throughput_and_loadgen_errors_come_from_the_log() -> None:
    log = _log("offline-valid")
    error = (
        "error_invalid_config: Multiple conf files are used. "
        "This is not valid for official submission."
    )
    assert discrepancies({"samples_per_second": 2125.13, "loadgen_errors": [error]}, log) == []
    found = discrepancies({"samples_per_second": 2125.13, "loadgen_errors": []}, log)
    assert [d.key for d in found] == ["loadgen_errors"]


def test_several_discrepancies_are_counted() -> None:
    result = _singlestream()
    result["samples_per_second"] = 1.0
    result["latency_ns"]["p50"] = 1
    text = describe_all(discrepancies(result, _log("singlestream-valid")))
    assert text.endswith("(and 1 more: latency_ns.p50)")


def test_check_run_reads_the_log_beside_the_result(tmp_path: Path) -> None:
    shutil.copy(LOGS / "singlestream-valid" / "mlperf_log_detail.txt", tmp_path)
    result = _singlestream() | {"samples_per_second": 31.77}
    (tmp_path / "result.json").write_text(json.dumps(result))
    assert [d.key for d in check_run(tmp_path / "result.json")] == ["samples_per_second"]
    (tmp_path / "result.json").write_text("[1, 2]")
    assert check_run(tmp_path / "result.json") == []  # no numbers: the sha256 speaks
    (tmp_path / "mlperf_log_detail.txt").unlink()
    (tmp_path / "result.json").write_text(json.dumps(result))
    with pytest.raises(ResultError, match=r"result\.json: no mlperf_log_detail\.txt beside it"):
        check_run(tmp_path / "result.json")  # a result whose numbers have no source is refused
