"""Server's concurrency record (harness.loadgen.genbatcher.BatchLog) and its schema step."""

from __future__ import annotations

from harness.loadgen.genbatcher import BatchLog
from harness.results.migrate import migrate_12_to_13, upgrade


def test_the_concurrency_record_counts_steps_by_rows() -> None:
    log = BatchLog(step_rows=[1, 2, 2, 3, 3, 3, 3, 3, 3, 3], admitted_into=[0, 1, 2, 0, 2])
    record = log.record(max_active=4)
    assert record is not None
    assert record.histogram == (0, 1, 2, 7, 0)  # index b: steps that ran b rows
    assert sum(record.histogram) == record.steps == 10
    assert (record.p50, record.p90, record.p99, record.max) == (3, 3, 3, 3)
    assert record.mean == 2.6
    assert (record.admitted, record.joined_running) == (5, 3)
    assert BatchLog().record(max_active=4) is None  # no decode step: no distribution


def test_an_older_result_reads_with_no_concurrency() -> None:
    old = {"schema_version": 10, "generation": {"max_active": 4}}
    new = upgrade(old, 10, 13)
    assert new["schema_version"] == 13
    assert new["generation"] == {
        "max_active": 4,
        "ttft_early_stopping": None,
        "tpot_early_stopping": None,
        "concurrency": None,
    }
    assert "concurrency" not in old["generation"]  # the step copies
    assert migrate_12_to_13({"schema_version": 12, "generation": None})["generation"] is None
