"""query_latencies.npz against LoadGen's logged percentiles: the rule, exact at its edges."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from harness.bundle.latencies import (
    SHORT_BY_NS,
    SHORT_BY_SHARE,
    latencies_ns,
    latency_problem,
    read_columns,
)
from harness.errors import ResultError
from harness.records.loadgen_log import DetailLog, latency_percentiles_ns, parse_detail_log
from harness.telemetry.latencies import QueryLatencies, write_query_latencies
from tests.conftest import REPO

LOGS = REPO / "tests" / "fixtures" / "loadgen"
Ints = np.ndarray


def _log(name: str) -> DetailLog:
    return parse_detail_log(LOGS / name / "mlperf_log_detail.txt")


def _as_logged(
    log: DetailLog, shift_ns: dict[str, int] | None = None, everywhere_ns: int = 0
) -> dict[str, Ints]:
    """One row per query whose sorted latencies hold the logged p50, p90, p99 where LoadGen
    takes them (element floor(n x p)), each moved by `shift_ns`, all by `everywhere_ns`."""
    shift = shift_ns or {}
    logged = latency_percentiles_ns(log)
    count = int(log.get("result_query_count"))
    latencies = np.full(count, int(logged["min"] or 0), dtype=np.int64)
    for name, share in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        latencies[int(count * share) :] = int(logged[name] or 0) + shift.get(name, 0)
    latencies += everywhere_ns
    issue = np.arange(count, dtype=np.int64) * 10_000_000
    return {
        "query": np.arange(count, dtype=np.int64),
        "issue_ns": issue,
        "complete_ns": issue + latencies,
        "samples": np.ones(count, dtype=np.int64),
    }


def test_percentiles_as_logged_pass() -> None:
    log = _log("singlestream-valid")
    assert latency_problem(_as_logged(log), log) is None


def test_one_nanosecond_above_loadgens_percentile_is_refused() -> None:
    log = _log("singlestream-valid")
    problem = latency_problem(_as_logged(log, {"p90": 1}), log)
    assert problem is not None
    assert problem.startswith("its p90 is 394597 ns, but LoadGen's p90 is 394596 ns")


def test_short_of_loadgens_by_more_than_its_bookkeeping_is_refused() -> None:
    """Every latency 50 us short passes (SingleStream's allowance, the p50's here); 1 ns more
    is refused at the p50. The p99 alone may fall 15 % short (a loaded machine's stamps)."""
    log = _log("singlestream-valid")
    allowed = int(max(SHORT_BY_NS["SingleStream"], SHORT_BY_SHARE["p50"] * 352503))
    assert allowed == 50_000
    assert latency_problem(_as_logged(log, everywhere_ns=-allowed), log) is None
    problem = latency_problem(_as_logged(log, everywhere_ns=-allowed - 1), log)
    assert problem is not None and problem.startswith(f"its p50 is {352503 - allowed - 1} ns")
    assert SHORT_BY_SHARE["p99"] * 453773 > SHORT_BY_NS["SingleStream"] > 0.05 * 453773


def test_a_fast_singlestream_runs_latencies_halved_are_refused() -> None:
    """A 0.3 ms query halved falls 0.15 ms short: past SingleStream's allowance, which is
    smaller than Offline's (the bookkeeping of one sample, not of thousands)."""
    log = _log("singlestream-valid")
    columns = _as_logged(log)
    columns["complete_ns"] = (
        columns["issue_ns"] + (columns["complete_ns"] - columns["issue_ns"]) // 2
    )
    problem = latency_problem(columns, log)
    assert problem is not None and problem.startswith("its p50 is 176251 ns")
    assert SHORT_BY_NS["SingleStream"] < 352503 // 2


def test_a_query_left_out_is_refused() -> None:
    log = _log("singlestream-valid")
    columns = {name: column[1:] for name, column in _as_logged(log).items()}
    assert latency_problem(columns, log) == "holds 5598 queries, but result_query_count is 5599 in"


def test_offline_latencies_are_per_sample_from_the_querys_issue() -> None:
    columns = {
        "query": np.array([7, 7, 7], dtype=np.int64),
        "issue_ns": np.array([100, 150, 180], dtype=np.int64),
        "complete_ns": np.array([1100, 2100, 3100], dtype=np.int64),
        "samples": np.array([2, 1, 3], dtype=np.int64),
    }
    per_sample, queries = latencies_ns(columns, per_query=False)
    assert queries == 1 and per_sample.tolist() == [1000, 1000, 2000, 3000, 3000, 3000]
    per_query, _ = latencies_ns(columns, per_query=True)
    assert per_query.tolist() == [3000]


def test_the_file_written_by_the_harness_reads_back(tmp_path: Path) -> None:
    record = QueryLatencies(
        scenario="SingleStream",
        query=np.arange(3, dtype=np.int64),
        issue_ns=np.array([0, 10, 20], dtype=np.int64),
        complete_ns=np.array([5, 16, 27], dtype=np.int64),
        samples=np.ones(3, dtype=np.int64),
    )
    write_query_latencies(record, tmp_path / "q.npz")
    columns = read_columns(tmp_path / "q.npz")
    assert columns["complete_ns"].tolist() == [5, 16, 27]


def test_a_pickle_or_an_extra_member_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.npz"
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(json.dumps({"format": 1})), query=np.zeros(1, np.int64))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr("evil.npy", b"x")
    path.write_bytes(buffer.getvalue())
    with pytest.raises(ResultError, match=re.escape("q.npz: holds ['evil.npy', 'header.npy'")):
        read_columns(path)
    names = ("query", "issue_ns", "complete_ns", "samples")
    arrays = {name: np.zeros(1, np.int64) for name in names}
    np.savez(path, header=np.array(json.dumps({"format": 1})), **arrays | {"samples": [{}]})
    with pytest.raises(ResultError, match=r"not a query_latencies\.npz"):
        read_columns(path)


def test_server_latencies_are_bounded_above_only() -> None:
    """Server times a query from its scheduled arrival: one issued late is late for the SUT."""
    ss = _log("singlestream-valid")
    log = DetailLog(
        values={**ss.values, "effective_scenario": "Server"},
        errors=ss.errors,
        warnings=ss.warnings,
    )
    assert latency_problem(_as_logged(log, everywhere_ns=-290_000), log) is None
    problem = latency_problem(_as_logged(log, {"p99": 1}), log)
    assert problem is not None and problem.endswith("(it may be at most that) in")
