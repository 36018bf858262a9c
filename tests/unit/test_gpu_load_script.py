"""scripts/gpu_load_telemetry.py end to end, with a wall meter standing in for the GPU source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "gpu_load_telemetry.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True, check=False
    )


def test_idle_load_with_a_meter_writes_the_three_fixture_files(tmp_path: Path) -> None:
    out, marker = tmp_path / "out", tmp_path / "shell-ran"
    done = run(
        str(out), "--hw", "cpu", "--load", "idle", "--seconds", "0.5", "--interval-ms", "20",
        "--external-command", "echo", f"42.5 W; touch {marker}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not marker.exists()  # an argv, run without a shell
    assert "echo (argv sha256 " in (out / "telemetry.csv").read_text()
    assert "touch" not in (out / "telemetry.csv").read_text()
    assert (out / "telemetry.csv").read_text().count("\n") > 5
    checked = json.loads((out / "check.json").read_text())
    wall = checked["sources"]["wall"]
    assert checked["load"] == "idle" and wall["power_samples"] > 5
    assert abs(wall["integrated_energy_j"] - 42.5 * 0.5) < 42.5 * 0.2  # 42.5 W over ~0.5 s
    assert wall["counter_energy_j"] is None  # a wall meter has no energy counter
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sources"]["wall"]["avg_power_w"] == 42.5


def test_an_output_directory_in_use_is_refused(tmp_path: Path) -> None:
    (tmp_path / "old.csv").write_text("x")
    done = run(str(tmp_path), "--hw", "cpu", "--load", "idle", "--seconds", "0.1")
    assert done.returncode == 1 and "not empty" in done.stderr
