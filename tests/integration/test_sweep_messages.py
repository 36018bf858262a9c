"""A real tiny-model sweep and trials group: what they print and record about doubt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import TINY_OFFLINE, TINY_SS, write_scenario

pytestmark = pytest.mark.slow


def _table_rows(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["batch", "median"])
    rows: dict[str, list[str]] = {}
    for line in lines[header + 1 :]:
        cells = line.split()
        if not cells or not cells[0].isdigit():
            break
        rows[cells[0]] = cells
    return rows


def test_a_sweep_names_what_it_skipped_and_prints_each_warning_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The tiny model's throughput stops rising within a few batch sizes whatever the memory,
    # so a sweep to 64 stops on a plateau before it (or, on a machine where it keeps rising,
    # runs 64 and skips nothing): either way it must say which requested sizes it ran.
    scenario = write_scenario(tmp_path / "s.yaml", TINY_OFFLINE)
    args = [
        "sweep",
        str(scenario),
        "--batches",
        "1,2,4,64",
        "--trials",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    sweep = Path(out.strip().splitlines()[-1])
    data = json.loads((sweep / "sweep.json").read_text())
    measured = [p["batch_size"] for p in data["points"]]
    assert data["requested_batches"] == [1, 2, 4, 64]
    assert measured + data["skipped"] == [1, 2, 4, 64]
    if data["skipped"]:
        assert data["stopped"] == "plateau" and data["skip_reason"]
        sizes = ", ".join(str(b) for b in data["skipped"])
        assert f"  skipped: batch {sizes} ({data['skip_reason']})" in out
    rows = _table_rows(out)
    assert list(rows) == ["1", "2", "4", "64"]
    assert all(rows[str(b)][-1] == "skipped" for b in data["skipped"])
    verdict = data["saturation"]
    assert verdict["batch"] == data["saturation_batch"]
    assert (verdict["caveat"] in out) if verdict["caveat"] else verdict["certain"]
    uncertain = "" if verdict["certain"] else " (uncertain)"
    assert f"sweep: saturation at batch {data['saturation_batch']}{uncertain}," in out

    warnings = {
        w
        for point in data["points"]
        for run in json.loads((sweep / point["dir"] / "trials.json").read_text())["runs"]
        for w in json.loads((sweep / point["dir"] / run / "result.json").read_text())["warnings"]
    }
    assert any(w.startswith("quick profile") for w in warnings)
    assert all(out.count(w) <= 1 for w in warnings)  # each once (grouped), never per run
    runs = 2 * len(measured)
    assert f"({runs} of {runs} runs)" in out  # the quick-profile warning, once for all runs
    # a line per run as it ran and again under the sweep's runs, one per batch, the table
    assert len(out.splitlines()) <= 2 * runs + len(measured) + 20


def test_a_trials_group_checks_the_spread_of_every_metric_in_shown_units(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", TINY_SS)
    assert main(["run", str(scenario), "--trials", "2", "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    group = Path(out.strip().splitlines()[-1])
    data = json.loads((group / "trials.json").read_text())
    assert data["schema_version"] == 3
    spreads = {s["metric"]: s for s in data["spreads"]}
    latencies = ["latency_ns.p50", "latency_ns.p90", "latency_ns.p99", "latency_ns.p999"]
    assert set(latencies) | {"samples_per_second"} <= set(spreads)
    assert all((spreads[m]["unit"], spreads[m]["scale"]) == ("ms", 1e-6) for m in latencies)
    assert spreads["latency_ns.p999"]["name"] == "p99.9 latency"
    assert "2 trials of early-stopping p90 latency (ms), lower is better (2 requested)" in out
    warning_lines = [line for line in out.splitlines() if line.startswith("  warning: ")]
    for line in warning_lines:  # a trials flag names its metric as shown; runs' are their own
        assert "latency_ns" not in line
    flagged = [s for s in spreads.values() if s["stats"]["warnings"]]
    for spread in flagged:
        assert f"  warning: {spread['name']}: {spread['stats']['warnings'][0]}" in out
