"""benchmarks/server.py's reading of a run: only a rate LoadGen called VALID is a peak."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pytest

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


def _round(peak: float | None, ceiling: float) -> server.Round:
    run = server.ServerRun(
        layout=server.Layout(2, 1),
        peak_qps=peak,
        costs_ms={"1": 75.0},
        ceiling_qps=13.4,
        start_qps=9.4,
        found_qps=12.2,
        steps=[],
        confirms=[],
        batches={"1": 1453},
    )
    return server.Round(
        offline_sps=25.4, single_p50_ms=40.0, servers=[run], reference_ceiling_qps=ceiling
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
