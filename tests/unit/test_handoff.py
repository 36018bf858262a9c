"""retry.json and peak.json: versioned, read back exactly, refused by name when foreign."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.handoff import (
    SCHEMA_VERSION,
    PeakSearch,
    read_peak,
    read_retry,
    write_peak,
    write_retry,
)
from harness.records.layout import RETRY_FILE
from harness.records.request import Expectation


def test_both_files_carry_their_kind_and_version_and_read_back(tmp_path: Path) -> None:
    write_retry(tmp_path, Expectation(latency_ns=2.5e6, samples_per_second=40.0))
    write_peak(tmp_path, PeakSearch(found_qps=12.8, start_qps=4.39, steps=["4.39", "8.2"]))
    retry = json.loads((tmp_path / RETRY_FILE).read_text())
    peak = json.loads((tmp_path / "peak.json").read_text())
    assert (retry["kind"], retry["schema_version"]) == ("beyond-tops retry", SCHEMA_VERSION)
    assert (peak["kind"], peak["schema_version"]) == ("beyond-tops peak search", SCHEMA_VERSION)
    assert read_retry(tmp_path) == Expectation(latency_ns=2.5e6, samples_per_second=40.0)
    assert read_peak(tmp_path) == PeakSearch(found_qps=12.8, start_qps=4.39, steps=["4.39", "8.2"])


def test_files_written_before_versions_still_read(tmp_path: Path) -> None:
    (tmp_path / RETRY_FILE).write_text('{"latency_ns": 2000.0, "samples_per_second": 99.0}')
    assert read_retry(tmp_path) == Expectation(latency_ns=2000.0, samples_per_second=99.0)
    assert read_retry(tmp_path / "none") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"kind": "beyond-tops retry", "found_qps": 1}', "not a beyond-tops peak search file"),
        ('{"schema_version": 9, "found_qps": 1}', r"9 .* newer .* reads 0 to 1\); upgrade"),
        ('{"found_qps": 1e999, "start_qps": 1, "steps": []}', "found_qps is Infinity"),
        ('{"found_qps": "12", "start_qps": 1, "steps": []}', "found_qps: expected a finite"),
        ('{"found_qps": 12, "start_qps": 1, "steps": [1]}', "steps: expected a list of strings"),
        ("[1]", "expected a JSON object"),
        ('{"found_qps": 1, "start_qps": 1, "steps": [], "runs": 2.5}', "runs: expected a whole"),
        ('{"found_qps": 1, "start_qps": 1, "steps": [], "runs": true}', "runs: expected a whole"),
        ('{"found_qps": 1, "start_qps": 1, "steps": [], "runs": -1}', "runs: expected a whole"),
        (
            '{"found_qps": 1, "start_qps": 1, "steps": [], "failed_qps": "x"}',
            "failed_qps: expected",
        ),
    ],
)
def test_a_damaged_or_foreign_peak_file_is_refused_by_name(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "peak.json").write_text(text)
    with pytest.raises(ResultError, match=message):
        read_peak(tmp_path)


def test_a_peak_search_keeps_its_hold_and_older_files_read_without_one(tmp_path: Path) -> None:
    search = PeakSearch(found_qps=12.8, start_qps=6.2, steps=["6.2"], max_wait_ms=7.24)
    write_peak(tmp_path, search)
    assert read_peak(tmp_path) == search
    write_peak(tmp_path, PeakSearch(found_qps=12.8, start_qps=6.2, steps=["6.2"]))
    assert "max_wait_ms" not in (tmp_path / "peak.json").read_text()
    assert read_peak(tmp_path).max_wait_ms is None


def test_a_peak_search_keeps_its_run_count_and_failed_rate(tmp_path: Path) -> None:
    search = PeakSearch(found_qps=12.8, start_qps=9.0, steps=["9", "11.7"], runs=5, failed_qps=13.6)
    write_peak(tmp_path, search)
    assert read_peak(tmp_path) == search
    write_peak(tmp_path, PeakSearch(found_qps=12.8, start_qps=6.2, steps=[]))
    assert read_peak(tmp_path).runs is None and read_peak(tmp_path).failed_qps is None
