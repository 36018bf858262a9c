"""benchmarks/server.py's reading of a run: only a rate LoadGen called VALID is a peak."""

from __future__ import annotations

import argparse
import heapq
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.queueing import ceiling_qps
from harness.records.layout import QUERY_LATENCIES_FILE
from harness.telemetry.latencies import QueryLatencies, write_query_latencies

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import server  # noqa: E402  (benchmarks/server.py)

INVALID = ROOT / "tests/fixtures/loadgen/server-confirm-invalid/result.json"


def _run_dir(tmp_path: Path, *, last_valid: bool) -> Path:
    """A run with one confirmation set aside (the recorded INVALID one) and a last one."""
    run_dir = tmp_path / "run"
    (run_dir / "confirm-1").mkdir(parents=True)
    shutil.copy(INVALID, run_dir / "confirm-1" / "result.json")
    data = json.loads(INVALID.read_text())
    data["server"]["target_qps"] = 6.678
    data["server"]["overlatency_queries"] = 0 if last_valid else 3
    data.update(valid=last_valid, invalid_reasons=[] if last_valid else ["Reduce target QPS"])
    (run_dir / "result.json").write_text(json.dumps(data))
    return run_dir


def test_an_invalid_last_confirmation_is_no_peak(tmp_path: Path) -> None:
    confirms = server.confirms_of(_run_dir(tmp_path, last_valid=False))
    assert [(c.qps, c.valid, c.overs) for c in confirms] == [(9.54, False, 60), (6.678, False, 3)]
    assert confirms[0].p99_ms is not None and confirms[0].p99_ms > 300  # the recorded miss
    assert server.confirmed_peak(confirms) is None


def test_a_valid_last_confirmation_is_the_peak(tmp_path: Path) -> None:
    confirms = server.confirms_of(_run_dir(tmp_path, last_valid=True))
    assert server.confirmed_peak(confirms) == 6.678
    lines = server.describe(
        server.ServerRun(
            layout=server.Layout(1, 2),
            peak_qps=6.678,
            costs_ms={"1": 58.0},
            ceiling_qps=10.0,
            start_qps=5.0,
            found_qps=10.6,
            steps=["5.000 QPS: within the bound"],
            confirms=confirms,
            batches={"1": 500},
        ),
        reference=10.0,
    )
    assert "found 10.6 QPS in 1 steps: 5.000 QPS: within the bound" in lines[1]
    assert "confirm 1: 9.54 QPS -> INVALID" in lines[2]
    assert "confirm 2: 6.678 QPS -> VALID" in lines[3]
    assert "/ one-at-a-time ceiling 0.668" in lines[4]


def _two_workers(peak: float | None, confirms: list[server.Confirm]) -> server.ServerRun:
    """A 2x1 layout's run as the evening's ResNet-50 rounds had it (75 ms a query)."""
    return server.ServerRun(
        layout=server.Layout(2, 1),
        peak_qps=peak,
        costs_ms={"1": 75.0},
        ceiling_qps=13.4,
        start_qps=9.4,
        found_qps=12.2,
        steps=[],
        confirms=confirms,
        batches={"1": 1453},
    )


def _round(peak: float | None, ceiling: float) -> server.Round:
    return server.Round(
        offline_sps=25.4,
        single_p50_ms=40.0,
        servers=[_two_workers(peak, [])],
        reference_ceiling_qps=ceiling,
    )


def _summary(rounds: list[server.Round], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    args = argparse.Namespace(model="resnet50", bound_ms=200.0)
    code = server.summarise(rounds, [server.Layout(2, 1)], args)
    return code, capsys.readouterr().out


def test_a_round_without_a_confirmed_peak_misses_the_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Last session's three rounds: two confirmed (0.593, 0.671), one with none. Counting only
    # the confirmed rounds read "meets the 0.6 target" at a median of 0.632.
    code, out = _summary([_round(8.325, 14.04), _round(8.428, 12.56), _round(None, 12.14)], capsys)
    assert code == 1
    assert "(rounds: 0.593, 0.671, none); MISSES the 0.6 target" in out
    assert "ceiling median 0.593" in out


def test_every_round_confirmed_at_the_target_meets_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _summary([_round(8.8, 14.0), _round(8.5, 12.6), _round(8.0, 12.1)], capsys)
    assert code == 0
    assert "(rounds: 0.629, 0.675, 0.661); meets the 0.6 target" in out
    assert "best layout: 2x1 (peak / ceiling 0.661)" in out


def _stamped(run_dir: Path, batch_sizes: dict[str, int]) -> None:
    """The recorded INVALID run with 500 one-query batches and their stamps: 2 FIFO workers."""
    run_dir.mkdir(parents=True)
    data = json.loads(INVALID.read_text())
    data["server"]["batch_sizes"] = batch_sizes
    (run_dir / "result.json").write_text(json.dumps(data))
    rng = np.random.default_rng(3)
    issue = np.cumsum(rng.exponential(1e9 / 9.0, 500)).astype(np.int64)
    free_at, done = [0, 0], []
    for arrival in issue.tolist():
        start = max(arrival, heapq.heappop(free_at))
        heapq.heappush(free_at, start + 75_000_000)
        done.append(start + 75_000_000)
    record = QueryLatencies(
        scenario="Server",
        query=np.arange(500),
        issue_ns=issue,
        complete_ns=np.asarray(done),
        samples=np.ones(500, dtype=np.int64),
    )
    write_query_latencies(record, run_dir / QUERY_LATENCIES_FILE)


def test_a_confirmation_gets_what_an_ideal_dispatcher_could_confirm(tmp_path: Path) -> None:
    _stamped(tmp_path / "run", {"1": 500})
    (confirm,) = server.confirms_of(tmp_path / "run", bound_ms=200.0, workers=2)
    # 500 queries allow none over the bound (early stopping): 75 ms fixed on 2 workers.
    assert confirm.capacity_qps is not None
    assert 0.5 * ceiling_qps(75.0, 200.0, servers=2) < confirm.capacity_qps
    assert confirm.capacity_qps <= ceiling_qps(75.0, 200.0, servers=2)
    lines = server.describe(_two_workers(6.0, [confirm]), 12.0)
    assert f"an ideal dispatcher on its own service times: {confirm.capacity_qps:g} QPS" in lines[2]
    assert f"(median) {6.0 / confirm.capacity_qps:.3f}" in lines[-1]


def test_batches_of_several_queries_have_no_dispatcher_capacity(tmp_path: Path) -> None:
    _stamped(tmp_path / "run", {"1": 324, "2": 88})  # services do not follow from the stamps
    (confirm,) = server.confirms_of(tmp_path / "run", bound_ms=200.0, workers=2)
    assert confirm.capacity_qps is None
    assert server.confirms_of(tmp_path / "run")[0].capacity_qps is None  # no bound given
