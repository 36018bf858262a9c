"""harness/stopping.py: phases and causes, held signals, the pause hook's grammar."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from harness import stopping
from harness.errors import STOP_SIGNALS, ConfigError, Interrupted, StopSignals, stopped_line
from harness.files import Incomplete, mark_incomplete, read_incomplete
from harness.stopping import (
    PAUSE_AT_ENV,
    PAUSE_FILE_ENV,
    HeldStops,
    Pause,
    Phases,
    also_marked,
    mark_stopped,
    pause_from_env,
    recording,
    stop_cause,
    worker_stop,
)

DEADLINE_S = 30  # for a helper thread to see a state


def test_an_unset_pause_is_none() -> None:
    assert pause_from_env({}) is None
    assert pause_from_env({PAUSE_AT_ENV: ""}) is None


def test_a_pause_names_a_test_a_phase_and_its_marker(tmp_path: Path) -> None:
    env = {PAUSE_AT_ENV: "TEST04:loadgen", PAUSE_FILE_ENV: str(tmp_path / "m")}
    assert pause_from_env(env) == Pause(test="TEST04", phase="loadgen", marker=tmp_path / "m")


@pytest.mark.parametrize(
    "value",
    [
        "performance",
        "performance:",
        ":warmup",
        "bogus:warmup",
        "performance:nap",
        "performance:warmup:again",
        "performance:warmup\ntouch x",
        " performance:warmup",
        "PERFORMANCE:WARMUP",
    ],
)
def test_a_malformed_pause_is_refused_by_name(value: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        pause_from_env({PAUSE_AT_ENV: value, PAUSE_FILE_ENV: str(tmp_path / "m")})
    message = str(refused.value)
    assert message.startswith(f"{PAUSE_AT_ENV}: {value!r} is not TEST:PHASE")
    assert "performance" in message and "warmup" in message and "\n" not in message


def test_a_pause_without_its_marker_file_is_refused() -> None:
    with pytest.raises(ConfigError, match=f"{PAUSE_AT_ENV} needs {PAUSE_FILE_ENV}"):
        pause_from_env({PAUSE_AT_ENV: "accuracy:prepare"})


@pytest.mark.parametrize(
    ("test", "phase", "says"),
    [
        ("accuracy", "launch", "before the accuracy test's worker started"),
        ("performance", "worker", "in the performance test"),
        ("performance", "start", "in the performance test, while its worker started"),
        ("find_peak", "prepare", "in the peak search, while preparing the model"),
        ("TEST01", "warmup", "in the compliance test TEST01, during warm-up"),
        ("TEST04", "loadgen", "in the compliance test TEST04, during LoadGen's run"),
        ("performance", "write", "in the performance test, while writing its result"),
        ("accuracy", "ended", "after the accuracy test's worker ended"),
    ],
)
def test_each_phase_says_where_the_stop_came(test: str, phase: stopping.Phase, says: str) -> None:
    assert Phases(test, phase).cause(signal.SIGTERM) == f"interrupted (SIGTERM) {says}"
    assert Phases(test, phase).cause(signal.SIGINT) == f"interrupted (Ctrl-C) {says}"


def test_a_phase_pauses_only_where_the_hook_says(tmp_path: Path) -> None:
    marker = tmp_path / "paused"
    phases = Phases("accuracy", pause=Pause(test="performance", phase="warmup", marker=marker))
    phases.enter("warmup")  # the accuracy test's: no pause
    phases.enter("prepare", test="performance")
    assert not marker.exists() and (phases.test, phases.phase) == ("performance", "prepare")

    def let_go() -> None:  # waits for the pause's state, then removes its marker
        deadline = time.monotonic() + DEADLINE_S
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(marker.read_text())
        marker.unlink()

    seen: list[str] = []
    helper = threading.Thread(target=let_go)
    helper.start()
    phases.enter("warmup")  # pauses until the marker goes
    helper.join(DEADLINE_S)
    assert seen == [f"{os.getpid()}\n"] and phases.phase == "warmup"


def test_a_stop_signal_ends_a_pause(tmp_path: Path) -> None:
    marker = tmp_path / "paused"
    phases = Phases("performance", pause=Pause(test="performance", phase="write", marker=marker))
    main = threading.main_thread().ident
    assert main is not None

    def stop() -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        if marker.exists():  # only while paused, inside StopSignals: never to pytest itself
            signal.pthread_kill(main, signal.SIGHUP)

    helper = threading.Thread(target=stop)
    with StopSignals(), pytest.raises(Interrupted) as stopped:
        helper.start()
        phases.enter("write")
    helper.join(DEADLINE_S)
    assert stopped.value.signum == signal.SIGHUP
    assert phases.cause(signal.SIGHUP).endswith("while writing its result")


def test_held_stops_wait_until_released() -> None:
    with StopSignals():
        held = HeldStops()
        signal.raise_signal(signal.SIGTERM)  # pending: nothing is raised here
        with pytest.raises(Interrupted) as stopped:
            held.release()
        held.release()  # once only
    assert stopped.value.signum == signal.SIGTERM
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_held_stops_inherited_are_unblocked_by_a_worker() -> None:
    outer = HeldStops()  # what a worker inherits from its parent
    try:
        inner = HeldStops(unblock=True)
        inner.release()
        assert not set(signal.pthread_sigmask(signal.SIG_BLOCK, set())) & set(STOP_SIGNALS)
    finally:
        outer.release()


def test_a_second_stop_while_one_is_recorded_is_dropped() -> None:
    with StopSignals():
        with recording():
            signal.raise_signal(signal.SIGINT)
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_a_stopped_directory_is_marked_and_loses_its_result(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text("{}")
    stopped = mark_stopped(tmp_path, Interrupted(signal.SIGHUP), Phases("performance", "write"))
    cause = "interrupted (SIGHUP) in the performance test, while writing its result"
    assert read_incomplete(tmp_path) == Incomplete(cause=cause, exit_code=129)
    assert not (tmp_path / "result.json").exists()
    assert (stopped.signum, stopped.cause, stopped.marked) == (signal.SIGHUP, cause, (tmp_path,))


def test_a_plain_keyboard_interrupt_takes_the_signal_received(tmp_path: Path) -> None:
    stopped = mark_stopped(tmp_path, KeyboardInterrupt(), Phases("accuracy"), signal.SIGTERM)
    assert stopped.cause == "interrupted (SIGTERM) before the accuracy test's worker started"


def test_a_worker_cause_is_taken_a_parent_marker_is_not(tmp_path: Path) -> None:
    mark_incomplete(tmp_path, "run started; no result yet")
    assert worker_stop(Interrupted(signal.SIGTERM), tmp_path).cause is None
    cause = "interrupted (SIGTERM) in the performance test, during warm-up"
    mark_incomplete(tmp_path, cause, 143)
    assert worker_stop(Interrupted(signal.SIGTERM), tmp_path).cause == cause
    parent = mark_stopped(tmp_path, worker_stop(Interrupted(signal.SIGTERM), tmp_path), Phases("x"))
    assert parent.cause == cause  # the parent records the worker's phase, not its own


def test_each_directory_marked_is_named_once_it_exists(tmp_path: Path) -> None:
    run, group, gone = tmp_path / "group" / "trial-2", tmp_path / "group", tmp_path / "gone"
    run.mkdir(parents=True)
    stop = also_marked(
        also_marked(Interrupted(signal.SIGTERM, cause="c", marked=[run]), group), gone
    )
    assert stop.marked == (run, group, gone) and stop_cause(stop) == ("c", 143)
    assert stopped_line(stop, signal.SIGTERM) == f"c; marked INCOMPLETE: {run}, {group}"
    assert stopped_line(KeyboardInterrupt(), signal.SIGINT) == (
        "interrupted (Ctrl-C); no run directory was marked INCOMPLETE, and no file is half-written"
    )


def test_a_directory_removed_meanwhile_is_not_made_again_nor_named(tmp_path: Path) -> None:
    gone = tmp_path / "run"
    stopped = mark_stopped(gone, Interrupted(signal.SIGTERM), Phases("performance", "loadgen"))
    assert not gone.exists() and stopped.marked == ()
    assert stopped.cause == "interrupted (SIGTERM) in the performance test, during LoadGen's run"


def test_a_directory_that_cannot_be_marked_is_not_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "INCOMPLETE").mkdir()  # a marker that cannot be replaced
    stopped = mark_stopped(tmp_path, Interrupted(signal.SIGINT), Phases("accuracy", "prepare"))
    assert stopped.marked == ()
    assert f"warning: {tmp_path}: not marked INCOMPLETE" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["INCOMPLETE"]  # no temp file left


def test_a_worker_marker_that_cannot_be_read_leaves_the_parent_phase(tmp_path: Path) -> None:
    (tmp_path / "INCOMPLETE").write_bytes(b"interrupted (\xff\xfe)\n")  # not UTF-8
    assert worker_stop(Interrupted(signal.SIGTERM), tmp_path).cause is None
    stopped = mark_stopped(
        tmp_path, worker_stop(Interrupted(signal.SIGTERM), tmp_path), Phases("accuracy", "worker")
    )
    assert stopped.cause == "interrupted (SIGTERM) in the accuracy test"
