"""Issue #27: a fleet task runs llm-tiny scenarios; the merged table ranks them by tokens/s.

A real fleet task (`harness fleet task`, no scheduler) runs a suite of a generative Server
and Offline scenario; `fleet collect` merges it: each row's metric is the catalogue's
headline for generated results (tokens/s), and the Server row carries its p99 TTFT and TPOT
(the Offline row none: LoadGen measures neither there), in fleet-merged.json and .md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.integration.llm_runs import SCENARIO, SERVER_LIMITS

pytest.importorskip("onnxruntime_genai", reason="onnxruntime-genai is not installed (llm extra)")
pytestmark = pytest.mark.slow


def test_llm_scenarios_run_as_a_fleet_task_and_merge_by_tokens_per_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = SCENARIO.format(
        name="server",
        scenario="Server",
        extra=SERVER_LIMITS,
        server="server: {target_qps: 200}",
        trials=1,
        queries=500,
    )
    offline = SCENARIO.format(
        name="offline", scenario="Offline", extra="", server="", trials=1, queries=16
    )
    (tmp_path / "server.yaml").write_text(server)
    (tmp_path / "offline.yaml").write_text(offline)
    suite = tmp_path / "llm.yaml"
    suite.write_text("name: llm-fleet\nprofile: quick\nscenarios: [server.yaml, offline.yaml]\n")
    argv = ["fleet", "slurm", str(suite), "--partition", "p", "--nodes", "1"]
    assert main([*argv, "--runner", "local", "--out", str(tmp_path / "o"), "--dry-run"]) == 0
    fleet = Path(capsys.readouterr().out.strip().splitlines()[-1])
    for index in ("0", "1"):  # a task per scenario
        assert main(["fleet", "task", str(fleet), "--index", index]) in (0, 1)  # 1: INVALID
    capsys.readouterr()
    assert main(["fleet", "collect", str(fleet)]) == 0
    merged = json.loads((fleet / "fleet-merged.json").read_text())
    rows = {row["scenario"]: row for row in merged["rows"]}
    assert set(rows) == {"Server", "Offline"}
    for row in rows.values():
        assert row["metric"] == "token throughput (tokens/s)" and row["value"] > 0
        assert row["trials"] == 1 and row["valid"] != "-", row
    assert rows["Server"]["ttft_p99_ms"] > 0 and rows["Server"]["tpot_p99_ms"] > 0
    assert rows["Offline"]["ttft_p99_ms"] is None and rows["Offline"]["tpot_p99_ms"] is None
    table = (fleet / "fleet-merged.md").read_text()
    assert "| TTFT p99 (ms) | TPOT p99 (ms) |" in table
    (server_line,) = [line for line in table.splitlines() if "Server batch 1 |" in line]
    assert "token throughput (tokens/s)" in server_line
