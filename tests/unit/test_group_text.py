"""One text per group: what a campaign ends with is what `show` prints of the same directory."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from harness.cli import main
from harness.config import load_scenario
from harness.execution.campaign import Campaign, run_batch_sweep, run_trials
from harness.records.request import RunRequest
from harness.report.text import render_group
from harness.results.groupfile import read_sweep
from harness.results.groups import load_group
from tests.conftest import TINY_OFFLINE, write_scenario
from tests.unit.test_sweep_printout import REPORTS, TableLauncher


def _campaign(tmp_path: Path) -> Campaign:
    """Trials of TINY_OFFLINE, each run the sweep fixture's result (tiny-offline-sweep)."""
    scenario = load_scenario(write_scenario(tmp_path / "s.yaml", TINY_OFFLINE))
    request = RunRequest(
        scenario=scenario, scenario_path=tmp_path / "s.yaml", profile="quick", hw="cpu"
    )
    return Campaign(request=request, out_root=tmp_path / "runs", launch=TableLauncher())


def _shown(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    return capsys.readouterr().out


def test_a_trials_group_ends_its_campaign_as_show_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = io.StringIO()
    group = run_trials(_campaign(tmp_path), 2, batch_size=4, stream=stream)
    shown = _shown(group, capsys)
    # after each run's summary, the group as show prints it, less the run warnings the runs'
    # summaries printed already (each warning once a command; the count still holds them)
    before, block = stream.getvalue().rstrip("\n").rsplit("\n\n", 1)
    kept = block.splitlines()
    assert [line for line in shown.splitlines() if line in kept] == kept
    left_out = [line for line in shown.splitlines() if line not in kept]
    assert left_out, "the runs' quick-profile warning is said once, by the first run"
    for line in left_out:
        assert line == "  warnings, each once:" or line.strip().rsplit(" (", 1)[0] in before
    lines = _without_trust(shown)
    assert "  trust       quick profile: quick profile | LoadGen VALID" in shown
    assert "| ⚠ spread" in shown and "  check       " not in shown  # its warning is below
    assert lines[0] == f"{group}: trials group, tiny-offline-sweep: Offline"
    assert lines[1] == "  2 trials of throughput (samples/s), higher is better (2 requested)"
    assert lines[3].split() == ["200.0", "240.0", "200.0", "56.6", "28.3", "%"]
    assert "  warning: throughput: spread too large to trust: CoV 28.3 % " in shown
    assert lines[-3:-2] == ["  runs:"]
    assert lines[-2].split()[:5] == ["trial-1", "VALID", "throughput", "160.0", "samples/s"]


def test_a_sweep_ends_its_campaign_as_show_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = io.StringIO()
    sweep = run_batch_sweep(_campaign(tmp_path), 2, batches=[1, 2, 4, 8, 64], stream=stream)
    shown = _shown(sweep, capsys)
    assert stream.getvalue().endswith("\n" + shown)  # after a line per run and per batch
    lines = _without_trust(shown)
    assert "  trust       quick profile: quick profile | LoadGen VALID" in shown
    assert lines[:2] == [
        f"{sweep}: sweep group, tiny-offline-sweep: Offline",
        "  batch sweep: 4 of 5 requested batch sizes run (8 runs)",
    ]
    assert "  sweep: saturation at batch 2 (uncertain), best at batch 2, stopped: plateau" in lines
    assert lines[-9] == "  runs:" and lines[-1].split()[:2] == ["bs-8/trial-2", "VALID"]


def _without_trust(shown: str) -> list[str]:
    """The lines of a group's text but its trust (tested in tests/unit/test_trust.py)."""
    return [line for line in shown.splitlines() if not line.startswith(("  trust ", "  check "))]


def test_a_sweep_is_drawn_from_its_sweep_file() -> None:
    group = load_group(REPORTS / "sweep-h100")
    with pytest.raises(ValueError, match=r"sweep\.json"):
        render_group(group, "sweep-h100")
    text = render_group(group, "sweep-h100", read_sweep(REPORTS / "sweep-h100" / "sweep.json"))
    assert "  batch sweep: 5 of 5 requested batch sizes run (6 runs)" in text


def test_a_run_group_is_its_summary() -> None:
    run = load_group(REPORTS / "sweep-h100" / "bs-8")
    text = render_group(run, "bs-8")
    assert text.splitlines()[0].endswith(", batch 8") and text.endswith("  run dir     bs-8")
