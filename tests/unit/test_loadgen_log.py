"""LoadGen detail-log parsing against real logs of the tiny model (tests/fixtures/loadgen)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ResultError
from harness.records.loadgen_log import (
    DetailLog,
    effective_settings,
    latency_percentiles_ns,
    parse_detail_lines,
    parse_detail_log,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "loadgen"
SEEDS = {
    "qsl_rng_seed": 2085463073848966840,
    "sample_index_rng_seed": 2747215439041700203,
    "schedule_rng_seed": 16159082839903944936,
}


def _fixture(name: str) -> DetailLog:
    return parse_detail_log(FIXTURES / name / "mlperf_log_detail.txt")


def _line(key: str, value: Any, *, is_error: bool = False, is_warning: bool = False) -> str:
    entry = {
        "key": key,
        "value": value,
        "time_ms": 1.0,
        "namespace": "mlperf::logging",
        "event_type": "POINT_IN_TIME",
        "metadata": {"is_error": is_error, "is_warning": is_warning},
    }
    return ":::MLLOG " + json.dumps(entry) + "\n"


# --- the three real fixtures ------------------------------------------------------------------


def test_singlestream_valid() -> None:
    log = _fixture("singlestream-valid")
    assert log.get("result_validity") == "VALID"
    assert log.get("result_min_duration_met") is True
    assert log.get("result_min_queries_met") is True
    assert log.get("early_stopping_met") is True
    assert log.get("result_invalid_reason") is None
    assert log.errors == ()
    assert log.warnings == ()
    assert log.get("num_errors") == 0
    assert log.get("result_query_count") == 5599
    assert log.get("result_qps_with_loadgen_overhead") == pytest.approx(2798.92)
    assert log.get("result_qps_without_loadgen_overhead") == pytest.approx(2827.87)
    assert latency_percentiles_ns(log) == {
        "p50": 352503,
        "p90": 394596,
        "p95": 413574,
        "p97": 426783,
        "p99": 453773,
        "p999": 1345936,
        "mean": 353623,
        "min": 295278,
        "max": 3153046,
        "early_stopping_p90": 396889,
        "early_stopping_p99": 468085,  # past 662 queries: the p99 estimate too
    }


def test_offline_valid() -> None:
    log = _fixture("offline-valid")
    assert log.get("result_validity") == "VALID"
    assert log.get("result_samples_per_second") == pytest.approx(2125.13)
    assert log.get("result_invalid_reason") is None
    # the second run in one process: LoadGen flags the repeated user.conf as an error
    assert log.errors == (
        "error_invalid_config: Multiple conf files are used. This is not valid for official "
        "submission.",
    )
    assert log.get("num_errors") == 1
    assert latency_percentiles_ns(log) == {
        "p50": 1367353497,
        "p90": 3040915607,
        "p95": 3463736657,
        "p97": 3628805969,
        "p99": 3791783949,
        "p999": 3876943232,
        "mean": 1485811189,
        "min": 7724296,
        "max": 3876943232,
        "early_stopping_p90": None,  # Offline has no early-stopping estimate
        "early_stopping_p99": None,
    }


def test_singlestream_invalid() -> None:
    log = _fixture("singlestream-invalid")
    assert log.get("result_validity") == "INVALID"
    assert log.get("result_min_duration_met") is False
    assert log.get("result_invalid_reason") == [
        "Decrease the expected latency so the loadgen pre-generates more queries."
    ]
    assert len(log.errors) == 1
    assert log.errors[0].startswith(
        "error_runtime: Ending early: Ran out of generated queries to issue before the minimum "
        "query count and test duration were reached."
    )
    assert log.warnings == ()
    percentiles = latency_percentiles_ns(log)
    assert percentiles["p50"] == 1352
    assert percentiles["p90"] == 1623
    assert percentiles["p99"] == 3765
    assert percentiles["early_stopping_p90"] == 1732


@pytest.mark.parametrize(
    ("name", "scenario", "min_duration_ms", "min_query_count", "performance_sample_count"),
    [
        ("singlestream-valid", "SingleStream", 2000, 100, 128),
        ("offline-valid", "Offline", 2000, 1, 128),
        ("singlestream-invalid", "SingleStream", 1000, 100, 100),
    ],
)
def test_effective_settings(
    name: str,
    scenario: str,
    min_duration_ms: int,
    min_query_count: int,
    performance_sample_count: int,
) -> None:
    settings = effective_settings(_fixture(name))
    assert settings["scenario"] == scenario
    assert settings["test_mode"] == "PerformanceOnly"
    assert settings["min_duration_ms"] == min_duration_ms
    assert settings["min_query_count"] == min_query_count
    assert settings["performance_sample_count"] == performance_sample_count
    for key, seed in SEEDS.items():
        assert settings[key] == seed
    assert not any(key.startswith("effective_") for key in settings)
    assert list(settings) == sorted(settings)
    # requested_* and result_* keys are not settings
    assert "requested_min_duration_ms" not in settings
    assert "validity" not in settings


def test_effective_settings_offline_samples_per_query() -> None:
    settings = effective_settings(_fixture("offline-valid"))
    assert settings["samples_per_query"] == 8239
    assert settings["target_qps"] == pytest.approx(3745.12)


# --- parse_detail_lines on hand-written lines -------------------------------------------------


def test_non_mllog_lines_are_ignored() -> None:
    lines = [
        "some banner printed by LoadGen\n",
        "\n",
        _line("result_validity", "VALID"),
        "  :::MLLOG indented, so not a log line\n",
        ":::MLLOGX not the prefix either\n",
        "random { json-ish } text\n",
    ]
    log = parse_detail_lines(lines)
    assert dict(log.values) == {"result_validity": "VALID"}
    assert log.errors == ()
    assert log.warnings == ()


def test_fixture_with_noise_lines_parses_the_same(tmp_path: Path) -> None:
    original = FIXTURES / "singlestream-valid" / "mlperf_log_detail.txt"
    noisy = tmp_path / "mlperf_log_detail.txt"
    lines = original.read_text(encoding="utf-8").splitlines(keepends=True)
    noisy.write_text(
        "".join(f"noise {i}\n{line}" for i, line in enumerate(lines)) + "trailing\n",
        encoding="utf-8",
    )
    assert parse_detail_log(noisy) == parse_detail_log(original)


def test_last_value_wins_and_reasons_accumulate() -> None:
    log = parse_detail_lines(
        [
            _line("result_validity", "VALID"),
            _line("result_invalid_reason", " first reason "),
            _line("result_validity", "INVALID"),
            _line("result_invalid_reason", "second reason"),
        ]
    )
    assert log.get("result_validity") == "INVALID"
    assert log.get("result_invalid_reason") == ["first reason", "second reason"]


def test_errors_and_warnings_are_classified() -> None:
    log = parse_detail_lines(
        [
            _line("error_runtime", "boom"),  # an error even without the metadata flag
            _line("error_invalid_config", "bad conf", is_error=True),
            _line("warning_generic_message", "careful", is_warning=True),
            _line("generic_message", "just info"),
        ]
    )
    assert log.errors == ("error_runtime: boom", "error_invalid_config: bad conf")
    assert log.warnings == ("warning_generic_message: careful",)
    assert log.get("generic_message") == "just info"


def test_loadgen_informational_warnings_are_notes_not_warnings() -> None:
    grew = "Logging allocation detected: tid: 789 reserved_entries: 1024 max_entries: 2460"
    log = parse_detail_lines(
        [
            _line("warning_generic_message", grew, is_warning=True),
            _line("warning_generic_message", "careful", is_warning=True),
        ]
    )
    assert log.warnings == ("warning_generic_message: careful",)
    assert log.notes == (f"warning_generic_message: {grew}",)


def test_get_default() -> None:
    log = parse_detail_lines([])
    assert log.get("result_validity") is None
    assert log.get("result_validity", "UNKNOWN") == "UNKNOWN"
    assert latency_percentiles_ns(log) == dict.fromkeys(
        (
            "p50",
            "p90",
            "p95",
            "p97",
            "p99",
            "p999",
            "mean",
            "min",
            "max",
            "early_stopping_p90",
            "early_stopping_p99",
        )
    )
    assert effective_settings(log) == {}


@pytest.mark.parametrize(
    "bad",
    [
        ":::MLLOG {not json\n",
        ':::MLLOG {"value": 1}\n',
        ':::MLLOG {"key": "x"}\n',
        ":::MLLOG [1, 2]\n",
        ":::MLLOG \n",
    ],
    ids=["not-json", "no-key", "no-value", "list", "empty"],
)
def test_malformed_mllog_line_names_its_number(bad: str) -> None:
    lines = [_line("a", 1), "plain text\n", bad, _line("b", 2)]
    with pytest.raises(ResultError) as info:
        parse_detail_lines(lines, "detail.txt")
    assert str(info.value) == "detail.txt:3: not a valid :::MLLOG line"
    assert info.value.exit_code == 6


def test_malformed_line_in_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_log_detail.txt"
    lines = (FIXTURES / "offline-valid" / "mlperf_log_detail.txt").read_text().splitlines()
    lines[41] = lines[41][:50]  # cut line 42 in the middle of its JSON
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ResultError, match=re.escape(f"{path}:42: not a valid :::MLLOG line")):
        parse_detail_log(path)


def test_missing_detail_log(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_log_detail.txt"
    with pytest.raises(ResultError) as info:
        parse_detail_log(path)
    assert str(info.value) == f"{path}: LoadGen wrote no detail log; the run did not start"
    assert info.value.exit_code == 6


def test_empty_detail_log(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_log_detail.txt"
    path.write_text("", encoding="utf-8")
    log = parse_detail_log(path)
    assert dict(log.values) == {}
    assert log.errors == ()
