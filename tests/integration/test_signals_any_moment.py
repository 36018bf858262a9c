"""Issue #23: a stop signal at any moment of `harness run` or `bench` records its cause.

Each test starts the real CLI in a process of its own, waits for a STATE of the run (never a
fixed time) and sends SIGTERM, SIGINT or SIGHUP; then it checks what the user is left with:
the signal's exit code, one `error:` line naming the directory marked, INCOMPLETE holding
`interrupted (SIGNAL) <phase>` and the exit code, no result.json, no temp file, and nothing
written outside --out.

The states: LoadGen's detail log appearing in the run directory (the performance test's
LoadGen run) and a job.json appearing (a worker about to start) are files the harness
writes anyway. Model preparation, warm-up and the result's writing leave no file to wait
for, so those tests use the documented hook in harness/stopping.py: BEYOND_TOPS_PAUSE_AT
makes the process entering that phase write its pid to BEYOND_TOPS_PAUSE_FILE and wait there
for the signal.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.errors import STOP_SIGNALS, interrupted_cause
from harness.files import INCOMPLETE_FILE, read_incomplete
from harness.records.layout import RESULT_FILE
from harness.stopping import PAUSE_AT_ENV, PAUSE_FILE_ENV
from tests.conftest import REPO, TINY_OFFLINE, write_scenario
from tests.integration.test_bad_input_corpus import _error_lines, _snapshot

pytestmark = pytest.mark.slow

# Offline stops within a second of its signal (a stopped SUT completes its one query empty);
# the long minimum duration keeps LoadGen running until the test's signal comes.
LONG_OFFLINE = TINY_OFFLINE.replace("min_duration_ms: 1000", "min_duration_ms: 120000")
STATE_DEADLINE_S = 240  # a loaded 2-core machine builds the model and starts LoadGen slowly
STOP_DEADLINE_S = 120  # from the signal to the CLI's exit
OUT = "out"

State = Callable[[Path], bool]  # given the case's root, whether the awaited state is reached


@dataclass(frozen=True)
class Stopped:
    """What a stopped CLI left: its exit code, stderr, and the files before and after."""

    root: Path
    code: int
    err: str
    before: dict[str, bytes | None]
    after: dict[str, bytes | None]


def _start(root: Path, argv: list[str], pause: str | None) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in (PAUSE_AT_ENV, PAUSE_FILE_ENV)}
    if pause is not None:
        env.update({PAUSE_AT_ENV: pause, PAUSE_FILE_ENV: str(root / "paused")})
    with (root / "stderr.txt").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.cli", *argv],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            process_group=0,  # the signal reaches the CLI alone, as `kill PID` sends it
        )


def _wait_for(state: State, root: Path, proc: subprocess.Popen[bytes]) -> None:
    """Poll for `state` until it holds; fail if the CLI ends first or the deadline passes."""
    deadline = time.monotonic() + STATE_DEADLINE_S
    while not state(root):
        if proc.poll() is not None:
            err = (root / "stderr.txt").read_text(errors="replace")
            pytest.fail(f"the CLI ended ({proc.returncode}) before the awaited state: {err}")
        if time.monotonic() > deadline:
            pytest.fail(f"no awaited state within {STATE_DEADLINE_S} s")
        time.sleep(0.05)


def stop_at(
    root: Path,
    argv: list[str],
    state: State,
    signum: int,
    *,
    pause: str | None = None,
    target: Callable[[Path, int], int] = lambda root, pid: pid,
) -> Stopped:
    """Run the CLI, send `signum` once `state` holds, and collect what it left."""
    before = _snapshot(root)
    proc = _start(root, argv, pause)
    try:
        _wait_for(state, root, proc)
        os.kill(target(root, proc.pid), signum)
        code = proc.wait(timeout=STOP_DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = (root / "stderr.txt").read_text(errors="replace")
    after = {k: v for k, v in _snapshot(root).items() if k not in ("stderr.txt", "paused")}
    return Stopped(root, code, err, before, after)


def paused(root: Path) -> bool:
    """The hook's marker: the process entering the awaited phase waits for its signal."""
    return (root / "paused").is_file()


def loadgen_running(root: Path) -> bool:
    """LoadGen's detail log in a run directory: the performance test's LoadGen run began."""
    return any(p.stat().st_size > 0 for p in (root / OUT).glob("*/mlperf_log_detail.txt"))


def job_written(root: Path) -> bool:
    """A job file: the parent is about to start (or is starting) the accuracy test's worker."""
    return any((root / OUT).glob("*/accuracy/job.json"))


def paused_pid(root: Path, _parent: int) -> int:
    """The pid the hook wrote: the worker itself, to stop it alone."""
    return int((root / "paused").read_text())


def run_argv(root: Path, text: str = TINY_OFFLINE) -> list[str]:
    scenario = write_scenario(root / "s.yaml", text)
    return ["run", str(scenario), "--out", str(root / OUT)]


def bench_argv(root: Path) -> list[str]:
    write_scenario(root / "s.yaml", TINY_OFFLINE.replace("trials: 1", "trials: 2"))
    suite = write_scenario(root / "suite.yaml", "name: two\nprofile: quick\nscenarios: [s.yaml]\n")
    return ["bench", str(suite), "--out", str(root / OUT)]


def assert_stopped(stopped: Stopped, signum: int, phase: str, marked: list[Path]) -> None:
    """The whole contract: code, one line naming each directory, INCOMPLETE, no leftovers."""
    code = STOP_SIGNALS[signum].code
    assert stopped.code == code == 128 + signum, stopped.err
    assert "Traceback" not in stopped.err, stopped.err
    cause = f"{interrupted_cause(signum)} {phase}"
    lines = _error_lines(stopped.err)
    assert len(lines) == 1, stopped.err
    assert lines[0].startswith(f"error: {cause}; marked INCOMPLETE: "), lines[0]
    for directory in marked:
        assert str(directory) in lines[0], lines[0]
        recorded = read_incomplete(directory)
        assert recorded is not None, f"{directory}: no INCOMPLETE"
        assert recorded.cause.endswith(cause) and recorded.exit_code == code, recorded
        assert not (directory / RESULT_FILE).exists(), "a result beside INCOMPLETE"
    assert {k: stopped.after[k] for k in stopped.before} == stopped.before
    new = {k for k in stopped.after if k not in stopped.before}
    assert all(k == OUT or k.startswith(f"{OUT}/") for k in new), sorted(new)
    assert not fnmatch.filter(stopped.after, "*.tmp"), fnmatch.filter(stopped.after, "*.tmp")


def only_run(root: Path) -> Path:
    (run_dir,) = (root / OUT).iterdir()
    return run_dir


PAUSED_PHASES = [
    ("accuracy:launch", signal.SIGTERM, "before the accuracy test's worker started"),
    ("accuracy:start", signal.SIGINT, "in the accuracy test, while its worker started"),
    ("accuracy:prepare", signal.SIGHUP, "in the accuracy test, while preparing the model"),
    ("performance:launch", signal.SIGINT, "before the performance test's worker started"),
    ("performance:prepare", signal.SIGTERM, "in the performance test, while preparing the model"),
    ("performance:warmup", signal.SIGHUP, "in the performance test, during warm-up"),
    ("performance:write", signal.SIGTERM, "in the performance test, while writing its result"),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("pause", "signum", "phase"), PAUSED_PHASES, ids=[case[0] for case in PAUSED_PHASES]
)
def test_run_stopped_at_a_phase_records_it(
    pause: str, signum: int, phase: str, tmp_path: Path
) -> None:
    stopped = stop_at(tmp_path, run_argv(tmp_path), paused, signum, pause=pause)
    assert_stopped(stopped, signum, phase, [only_run(tmp_path)])


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "signum", list(STOP_SIGNALS), ids=[signal.Signals(s).name for s in STOP_SIGNALS]
)
def test_run_stopped_in_loadgen_records_it(signum: int, tmp_path: Path) -> None:
    stopped = stop_at(tmp_path, run_argv(tmp_path, LONG_OFFLINE), loadgen_running, signum)
    run_dir = only_run(tmp_path)
    assert_stopped(stopped, signum, "in the performance test, during LoadGen's run", [run_dir])
    assert (run_dir / "mlperf_log_summary.txt").is_file()  # LoadGen ended and wrote its logs


@pytest.mark.timeout(600)
def test_a_worker_stopped_alone_stops_its_parent_with_its_cause(tmp_path: Path) -> None:
    """SIGTERM to the worker only (an OOM guard, an operator's `kill`): the parent follows."""
    argv = run_argv(tmp_path)
    stopped = stop_at(
        tmp_path, argv, paused, signal.SIGTERM, pause="performance:warmup", target=paused_pid
    )
    phase = "in the performance test, during warm-up"
    assert_stopped(stopped, signal.SIGTERM, phase, [only_run(tmp_path)])


@pytest.mark.timeout(600)
def test_run_stopped_as_its_first_worker_starts_records_a_phase(tmp_path: Path) -> None:
    """The moment a job file appears, whatever the parent or its worker was doing then."""
    stopped = stop_at(tmp_path, run_argv(tmp_path), job_written, signal.SIGTERM)
    run_dir = only_run(tmp_path)
    recorded = read_incomplete(run_dir)
    assert recorded is not None
    phases = (
        "before the accuracy test's worker started",
        "in the accuracy test",  # Popen returned; the worker's own record then replaces it
        "in the accuracy test, while its worker started",
        "in the accuracy test, while preparing the model",
    )
    phase = recorded.cause.removeprefix("interrupted (SIGTERM) ")
    assert phase in phases, recorded
    assert_stopped(stopped, signal.SIGTERM, phase, [run_dir])


@pytest.mark.timeout(900)
def test_bench_stopped_in_its_second_trial_marks_the_trial_and_the_group(tmp_path: Path) -> None:
    """trial-1 pauses in its warm-up and is let go on; trial-2, paused there, is stopped."""

    def second_trial_paused(root: Path) -> bool:
        if not paused(root):
            return False
        if not any((root / OUT).glob("*/trial-2")):
            (root / "paused").unlink()  # trial-1's pause: let it go on
            return False
        return True

    argv = bench_argv(tmp_path)
    stopped = stop_at(
        tmp_path, argv, second_trial_paused, signal.SIGTERM, pause="performance:warmup"
    )
    (group,) = (tmp_path / OUT).iterdir()
    phase = "in the performance test, during warm-up"
    assert_stopped(stopped, signal.SIGTERM, phase, [group / "trial-2", group])
    recorded = read_incomplete(group)
    assert recorded is not None and recorded.cause.startswith("trial-2 interrupted (SIGTERM)")
    assert (group / "trial-1" / RESULT_FILE).is_file()  # the finished trial is kept whole
    assert not (group / "trial-1" / INCOMPLETE_FILE).exists()
