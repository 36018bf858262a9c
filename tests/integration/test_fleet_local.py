"""A fleet's tasks run by hand with `harness fleet task`, then merged: no scheduler needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.fleet import FLEET_INCOMPLETE
from tests.conftest import TINY_SS


def test_tasks_run_by_hand_are_recorded_merged_and_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ss.yaml").write_text(TINY_SS)
    suite = tmp_path / "s.yaml"
    suite.write_text("name: by-hand\nprofile: quick\nscenarios: [ss.yaml]\n")
    argv = ["fleet", "slurm", str(suite), "--partition", "p", "--nodes", "2", "--trials", "2"]
    assert main([*argv, "--runner", "local", "--out", str(tmp_path / "o"), "--dry-run"]) == 0
    fleet = Path(capsys.readouterr().out.strip().splitlines()[-1])

    assert main(["fleet", "task", str(fleet), "--index", "0"]) == 0
    assert main(["fleet", "task", str(fleet), "--index", "0"]) == 0  # again: a second attempt
    attempts = sorted(p.name for p in (fleet / "tasks" / "000").iterdir() if p.is_dir())
    assert attempts == ["local", "local-2"]
    record = json.loads((fleet / "tasks" / "000" / "local-2" / "task-result.json").read_text())
    assert record["placement"]["scheduler"] == "none" and record["exit_code"] == 0
    assert record["runner"] == "local"
    (entry,) = record["entries"]
    assert entry["name"] == "tiny-ss-test" and entry["error"] is None
    trials = json.loads(
        (fleet / "tasks" / "000" / "local-2" / entry["run"] / "trials.json").read_text()
    )
    assert len(trials["runs"]) == 2
    capsys.readouterr()

    # task 1 never ran: collect merges task 0, names task 1 and exits non-zero
    assert main(["fleet", "collect", str(fleet)]) == FLEET_INCOMPLETE
    out = capsys.readouterr().out
    merged = json.loads((fleet / "fleet-merged.json").read_text())
    assert [t["state"] for t in merged["tasks"]] == ["COMPLETED", "NOT SUBMITTED"]
    row = merged["rows"][0]
    assert row["trials"] == 2 and row["spread_cov"] is not None and row["value"] > 0
    assert row["run"].startswith("tasks/000/local-2/")
    assert "| 1 | - | NOT SUBMITTED |" in out
    assert (fleet / "report" / "report.html").is_file()
    # collecting again keeps the first report
    assert main(["fleet", "collect", str(fleet)]) == FLEET_INCOMPLETE
    assert len(list(fleet.glob("report*"))) == 2
