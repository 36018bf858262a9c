"""benchmarks/server.py's reading of a run: only a rate LoadGen called VALID is a peak."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

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
