"""Issue #23: a fleet task stopped at any moment records its cause in task-result.json.

Real signals, sent to this process at chosen points of `run_task` (no worker is started:
the launcher and the output stream are where the signal is sent from), and to the recorder
itself while it writes.
"""

from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import STOP_SIGNALS, interrupted_cause
from harness.fleet.stops import RecordedStops
from harness.fleet.task import run_task
from tests.conftest import TINY_SS


def _fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    (tmp_path / "ss.yaml").write_text(TINY_SS)
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: stops\nprofile: quick\nscenarios: [ss.yaml]\n")
    argv = ["fleet", "slurm", str(suite), "--partition", "p", "--runner", "local"]
    assert main([*argv, "--out", str(tmp_path / "o"), "--dry-run"]) == 0
    fleet = Path(capsys.readouterr().out.strip().splitlines()[-1])
    return fleet


def _record(fleet: Path) -> dict[str, object]:
    (path,) = (fleet / "tasks" / "000").glob("*/task-result.json")
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


class _SignalOnWrite(io.StringIO):
    """A stream that sends `signum` to this process at its first write."""

    def __init__(self, signum: int) -> None:
        super().__init__()
        self.signum = signum

    def write(self, text: str) -> int:
        if self.signum:
            signum, self.signum = self.signum, 0
            os.kill(os.getpid(), signum)
        return super().write(text)


@pytest.mark.parametrize("signum", list(STOP_SIGNALS), ids=[s.name for s in STOP_SIGNALS])
def test_a_stop_before_the_worker_starts_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], signum: int
) -> None:
    fleet = _fleet(tmp_path, capsys)
    launched: list[Path] = []

    def launch(job: Path) -> int:
        launched.append(job)
        return 0

    with pytest.raises(KeyboardInterrupt):
        run_task(fleet, 0, env={}, stream=_SignalOnWrite(signum), launcher=launch)
    record = _record(fleet)
    assert record["cause"] == interrupted_cause(signum)
    assert record["exit_code"] == STOP_SIGNALS[signum].code
    assert record["finished_utc"] is not None and record["entries"] == []
    assert launched == []  # stopped before any worker


def test_a_stop_while_the_worker_runs_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _fleet(tmp_path, capsys)

    def launch(job: Path) -> int:
        os.kill(os.getpid(), signal.SIGTERM)  # scancel, while a worker would run
        return 0

    with pytest.raises(KeyboardInterrupt):
        run_task(fleet, 0, env={}, stream=io.StringIO(), launcher=launch)
    record = _record(fleet)
    assert record["cause"] == "interrupted (SIGTERM)" and record["exit_code"] == 143


def test_a_second_signal_while_the_cause_is_written_does_not_lose_it(tmp_path: Path) -> None:
    written = tmp_path / "cause.txt"

    def record(signum: int) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # held back until the cause is on disk
        written.write_text(interrupted_cause(signum))

    with pytest.raises(KeyboardInterrupt), RecordedStops(record) as stops:
        os.kill(os.getpid(), signal.SIGHUP)
    assert written.read_text() == "interrupted (SIGHUP)"
    assert stops.received == signal.SIGHUP


def test_the_handlers_before_are_put_back(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with RecordedStops(lambda signum: None):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_stop_whose_record_cannot_be_written_still_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def record(signum: int) -> None:
        raise OSError(30, "Read-only file system")

    with pytest.raises(KeyboardInterrupt), RecordedStops(record):
        os.kill(os.getpid(), signal.SIGTERM)
    assert "the task's stop was not recorded" in capsys.readouterr().err
