"""A fleet's tasks run by hand with `harness fleet task`, then merged: no scheduler needed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import FLEET_INCOMPLETE
from tests.conftest import REPO, TINY_SS, harness_dir


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
    assert main(["fleet", "collect", str(fleet)]) == FLEET_INCOMPLETE.code
    out = capsys.readouterr().out
    merged = json.loads((fleet / "fleet-merged.json").read_text())
    assert [t["state"] for t in merged["tasks"]] == ["COMPLETED", "NOT SUBMITTED"]
    row = merged["rows"][0]
    assert row["trials"] == 2 and row["spread_cov"] is not None and row["value"] > 0
    assert row["run"].startswith("tasks/000/local-2/")
    assert "| 1 | - | NOT SUBMITTED |" in out
    assert (fleet / "report" / "report.html").is_file()
    # collecting again keeps the first report
    assert main(["fleet", "collect", str(fleet)]) == FLEET_INCOMPLETE.code
    assert len(list(fleet.glob("report*"))) == 2


# --- a task stopped at any moment records its cause (issue #23) --------------------------------

# A run long enough to be caught in each of its states; a stopped one ends at once.
LONG_SS = TINY_SS.replace("min_duration_ms: 1000", "min_duration_ms: 60000")


def _attempt(fleet: Path) -> Path | None:
    found = [p for p in (fleet / "tasks" / "000").iterdir() if p.is_dir()]
    return found[0] if found else None


def _recorded(fleet: Path) -> bool:
    attempt = _attempt(fleet)
    return attempt is not None and (attempt / "task-result.json").is_file()


def _run_started(fleet: Path) -> bool:
    attempt = _attempt(fleet)
    return attempt is not None and any(p.is_dir() for p in attempt.iterdir())


def _in_loadgen(fleet: Path) -> bool:
    attempt = _attempt(fleet)
    return attempt is not None and any(attempt.glob("*/user.conf"))


MOMENTS = {"recorded": _recorded, "run-started": _run_started, "in-loadgen": _in_loadgen}


def _wait_for(what: Callable[[], bool], proc: subprocess.Popen[bytes], deadline_s: float) -> None:
    """Poll `what` until it holds; fail if the process ends first or the deadline passes."""
    deadline = time.monotonic() + deadline_s
    while not what():
        assert proc.poll() is None, "the task ended before the state was reached"
        assert time.monotonic() < deadline, "the state was never reached"
        time.sleep(0.02)


def _planned(root: Path, *extra: str) -> Path:
    (root / "ss.yaml").write_text(LONG_SS)
    suite = root / "s.yaml"
    suite.write_text("name: stopped\nprofile: quick\nscenarios: [ss.yaml]\n")
    argv = ["fleet", "slurm", str(suite), "--partition", "p", *extra]
    return harness_dir([*argv, "--out", str(root / "o"), "--dry-run"])


def _task(fleet: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "harness.cli", "fleet", "task", str(fleet), "--index", "0"]
    with (fleet.parent / "task.log").open("wb") as log:  # the child keeps its own copy
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.timeout(300)
def test_a_task_stopped_in_any_state_records_its_cause(
    tmp_path: Path, model_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "BEYOND_TOPS_CACHE": str(model_cache)}
    fleets = {}
    for moment in MOMENTS:
        (tmp_path / moment).mkdir()
        fleets[moment] = _planned(tmp_path / moment, "--runner", "local")
    procs = {moment: _task(fleet, env) for moment, fleet in fleets.items()}
    try:
        for moment, proc in procs.items():
            _wait_for(lambda m=moment: MOMENTS[m](fleets[m]), proc, 180)  # type: ignore[misc]
            proc.send_signal(signal.SIGTERM)
        codes = {moment: proc.wait(timeout=60) for moment, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for moment, fleet in fleets.items():
        log = (fleet.parent / "task.log").read_text(errors="replace")
        assert codes[moment] == 143, (moment, log)
        assert "Traceback" not in log, log
        attempt = _attempt(fleet)
        assert attempt is not None
        record = json.loads((attempt / "task-result.json").read_text())
        assert record["cause"] == "interrupted (SIGTERM)", (moment, record)
        assert record["exit_code"] == 143 and record["finished_utc"] is not None
    assert main(["fleet", "status", str(fleets["recorded"])]) == FLEET_INCOMPLETE.code
    assert "CANCELLED" in capsys.readouterr().out


@pytest.mark.timeout(120)
def test_a_task_stopped_while_its_image_is_prepared_records_its_cause(tmp_path: Path) -> None:
    """The Docker daemon never answers: the task waits in its runner's preparation."""
    fleet = _planned(tmp_path, "--runner", "docker", "--image", "bt:never-pulled")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as daemon:
        daemon.bind(str(tmp_path / "docker.sock"))
        daemon.listen(4)
        daemon.settimeout(0.05)
        env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'docker.sock'}"}
        proc = _task(fleet, env)
        connections: list[socket.socket] = []

        def asked() -> bool:  # the task has connected to the daemon: it is preparing
            with contextlib.suppress(TimeoutError):
                connections.append(daemon.accept()[0])
            return bool(connections)

        try:
            _wait_for(asked, proc, 60)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for connection in connections:
                connection.close()
    assert code == 143, (fleet.parent / "task.log").read_text()
    attempt = _attempt(fleet)
    assert attempt is not None
    record = json.loads((attempt / "task-result.json").read_text())
    assert record["runner"] == "preparing" and record["entries"] == []
    assert record["cause"] == "interrupted (SIGTERM)" and record["exit_code"] == 143


@pytest.mark.timeout(120)
def test_a_task_whose_runner_cannot_be_prepared_records_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _planned(tmp_path, "--runner", "docker", "--image", "bt:never-pulled")
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'no-daemon.sock'}"}
    code = _task(fleet, env).wait(timeout=90)
    err = (fleet.parent / "task.log").read_text()
    assert code not in (0, 143) and err.count("error:") == 1, err
    attempt = _attempt(fleet)
    assert attempt is not None
    record = json.loads((attempt / "task-result.json").read_text())
    assert record["exit_code"] == code and record["finished_utc"] is not None
    assert record["error"] and record["cause"] is None and record["runner"] == "preparing"
    assert main(["fleet", "status", str(fleet)]) == FLEET_INCOMPLETE.code
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("task   0"))
    assert "FAILED" in line and record["error"] in line
