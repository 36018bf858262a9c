"""Fleet runs through a real Slurm: `.ci/slurm-up.sh` brings up a single-node cluster.

Outside CI the tests skip when no Slurm answers here; in CI (CI=true) a missing Slurm fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import FLEET_INCOMPLETE
from tests.conftest import TINY_OFFLINE, TINY_SS

pytestmark = pytest.mark.timeout(600)


def _slurm_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return result.returncode == 0 and any(
        s.strip("*~#") in ("idle", "mixed", "allocated", "completing")
        for s in result.stdout.split()
    )


@pytest.fixture(scope="module", autouse=True)
def _slurm() -> None:
    if _slurm_up():
        return
    if os.environ.get("CI") == "true":
        pytest.fail("CI: no Slurm answers; .ci/run must run .ci/slurm-up.sh first")
    pytest.skip("no Slurm cluster here (bring one up with .ci/slurm-up.sh)")


def _suite(tmp_path: Path, scenarios: dict[str, str]) -> Path:
    names = []
    for name, text in scenarios.items():
        (tmp_path / f"{name}.yaml").write_text(text)
        names.append(f"{name}.yaml")
    suite = tmp_path / "fleet-suite.yaml"
    suite.write_text(
        "name: fleet-test\nprofile: quick\nscenarios:\n" + "".join(f"  - {n}\n" for n in names)
    )
    return suite


def _fleet_dir(out: str) -> Path:
    return Path(out.strip().splitlines()[-1])


def test_three_tasks_one_with_a_bad_model_are_merged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not an ONNX model")
    bad_scenario = TINY_SS.replace("name: tiny-ss-test", "name: bad-model").replace(
        "model: {zoo: tiny}", f"model: {{path: {bad}}}"
    )
    suite = _suite(tmp_path, {"ss": TINY_SS, "offline": TINY_OFFLINE, "bad": bad_scenario})
    shared = tmp_path / "shared"
    argv = ["fleet", "slurm", str(suite), "--partition", "debug", "--time", "5"]
    assert main([*argv, "--out", str(shared)]) == 0
    fleet = _fleet_dir(capsys.readouterr().out)
    assert (fleet / "fleet.sbatch").read_text().count("#SBATCH --exclusive") == 1
    plan = json.loads((fleet / "fleet.json").read_text())
    assert [s["indices"] for s in plan["scheduler"]["submissions"]] == [[0, 1, 2]]

    code = main(["fleet", "collect", str(fleet), "--wait", "--interval", "1"])
    out = capsys.readouterr().out
    assert code == FLEET_INCOMPLETE.code, out
    merged = json.loads((fleet / "fleet-merged.json").read_text())
    states = {t["index"]: t["state"] for t in merged["tasks"]}
    assert states == {0: "COMPLETED", 1: "COMPLETED", 2: "FAILED"}
    failed = merged["tasks"][2]
    assert failed["log"] == f"logs/{plan['scheduler']['submissions'][0]['job_id']}_2.out"
    assert "bad.onnx" in (fleet / failed["log"]).read_text()  # the worker's one-line error
    rows = {r["task"]: r for r in merged["rows"]}
    assert rows[0]["metric"] == "early-stopping p90 latency (ms)" and rows[0]["value"] > 0
    assert rows[1]["metric"] == "throughput (samples/s)" and rows[1]["value"] > 0
    assert rows[0]["valid"] == "yes" and rows[0]["node"] == "localhost"
    assert rows[2]["value"] is None and "bad.onnx" in rows[2]["note"]
    # each task recorded its Slurm IDs and node
    record = json.loads(
        next((fleet / "tasks" / "000").glob("slurm-*/task-result.json")).read_text()
    )
    assert record["placement"]["scheduler"] == "slurm"
    assert record["placement"]["array_task_id"] == 0
    assert record["placement"]["node"] == "localhost"
    assert record["exit_code"] == 0
    # one comparison table and one report of the runs that finished
    assert "| 2 | localhost | FAILED |" in (fleet / "fleet-merged.md").read_text()
    report = (fleet / "report" / "report.md").read_text()
    assert "localhost task 0: tiny-ss-test" in report
    assert "localhost task 1: tiny-offline-test" in report


def test_cancelled_tasks_are_reported_as_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = TINY_SS.replace("min_duration_ms: 1000", "min_duration_ms: 60000")
    suite = _suite(tmp_path, {"slow": slow, "ss": TINY_SS})
    argv = ["fleet", "slurm", str(suite), "--partition", "debug", "--time", "5"]
    assert main([*argv, "--out", str(tmp_path / "shared")]) == 0
    fleet = _fleet_dir(capsys.readouterr().out)
    # Cancel the moment task 0 has recorded its start (task 1 waits behind it: --exclusive on
    # one node), wherever it then is (issue #23): no sleep that assumes it reached LoadGen.
    deadline = time.monotonic() + 120
    while not list((fleet / "tasks" / "000").glob("slurm-*/task-result.json")):
        assert time.monotonic() < deadline, "task 0 never started"
        time.sleep(0.05)
    assert main(["fleet", "cancel", str(fleet)]) == 0
    code = main(["fleet", "status", str(fleet), "--wait", "--interval", "1"])
    out = capsys.readouterr().out
    assert code == FLEET_INCOMPLETE.code
    lines = [line for line in out.splitlines() if line.startswith("task ")]
    assert [line.split()[2] for line in lines] == ["CANCELLED", "CANCELLED"], out
    record = json.loads(
        next((fleet / "tasks" / "000").glob("slurm-*/task-result.json")).read_text()
    )
    assert record["cause"] is not None and "SIGTERM" in record["cause"]
    assert record["exit_code"] == 143
    assert not list((fleet / "tasks" / "001").glob("slurm-*"))  # never started
    assert main(["fleet", "collect", str(fleet)]) == FLEET_INCOMPLETE.code
    rows = json.loads((fleet / "fleet-merged.json").read_text())["rows"]
    assert [r["state"] for r in rows] == ["CANCELLED", "CANCELLED"]


def test_a_partition_slurm_refuses_is_one_line_and_the_plan_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, {"ss": TINY_SS})
    argv = ["fleet", "slurm", str(suite), "--partition", "no-such-partition"]
    assert main([*argv, "--out", str(tmp_path / "shared")]) == 27
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "invalid partition" in err.lower()
    (fleet,) = (tmp_path / "shared").iterdir()
    assert f"sbatch lines are in {fleet}/submit.sh" in err
    assert json.loads((fleet / "fleet.json").read_text())["scheduler"]["submissions"] == []


def test_a_fleet_under_an_odd_path_runs_and_logs_where_it_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #23: sbatch reads the quoted #SBATCH lines as written; no part of the path runs."""
    odd = tmp_path / "odd $(touch PWNED) `touch PWNED` q'uo\"te ;#x 100%A"
    suite = _suite(tmp_path, {"ss": TINY_SS})
    argv = ["fleet", "slurm", str(suite), "--partition", "debug", "--time", "5"]
    assert main([*argv, "--out", str(odd / "shared")]) == 0
    fleet = _fleet_dir(capsys.readouterr().out)
    assert main(["fleet", "collect", str(fleet), "--wait", "--interval", "1"]) == 0
    merged = json.loads((fleet / "fleet-merged.json").read_text())
    (task,) = merged["tasks"]
    job = json.loads((fleet / "fleet.json").read_text())["scheduler"]["submissions"][0]["job_id"]
    assert task["state"] == "COMPLETED" and task["log"] == f"logs/{job}_0.out"
    assert "== fleet task 0" in (fleet / task["log"]).read_text()
    assert not list(tmp_path.rglob("PWNED")) and not list(Path("/").glob("PWNED"))
