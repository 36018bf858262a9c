"""What a stop signal interrupted: the phase a run was in, its cause, the directories marked.

A stop signal (SIGINT, SIGTERM, SIGHUP) may come at any moment of a run. The parent
(`harness.execution.pipeline`) knows its phase before and between workers, each worker
(`harness.execution.worker`) its own from its start to its result; whichever the signal stops writes
INCOMPLETE with `interrupted (SIGTERM) <phase>` and exits 128 + N, and the Interrupted that
carries the cause up names each directory marked, for the CLI's one line.

Moments a signal must not split (a directory made but not yet marked, a worker started but
not yet held) are covered by HeldStops: the signal waits, blocked, and is raised once they
are released.

Test hook, for a phase no file shows from outside (model preparation, warm-up, the result's
writing): with BEYOND_TOPS_PAUSE_AT=TEST:PHASE (TEST one of harness.records.job.TESTS, PHASE one of
PHASES) and BEYOND_TOPS_PAUSE_FILE=PATH, the process entering that phase writes its pid to
PATH and waits there for a stop signal, while PATH exists and at most PAUSE_S; removing PATH
lets it go on (to pause again the next time it enters the phase). Unset, it costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, cast

from harness.errors import (
    STOP_SIGNALS,
    ConfigError,
    Interrupted,
    interrupted_cause,
    stop_signal,
)
from harness.files import atomic_write_text, mark_incomplete, read_incomplete
from harness.records.job import TESTS
from harness.records.layout import RESULT_FILE

Phase = Literal["launch", "worker", "start", "prepare", "warmup", "loadgen", "write", "ended"]
# What INCOMPLETE says of each phase, after `interrupted (SIGTERM) `; {test} names the test.
PHASES: Final[Mapping[Phase, str]] = MappingProxyType(
    {
        "launch": "before the {test}'s worker started",  # the parent, writing its job file
        "worker": "in the {test}",  # the parent, while a worker that recorded no phase runs
        "start": "in the {test}, while its worker started",  # loading the runtime
        "prepare": "in the {test}, while preparing the model",
        "warmup": "in the {test}, during warm-up",
        "loadgen": "in the {test}, during LoadGen's run",
        "write": "in the {test}, while writing its result",
        "ended": "after the {test}'s worker ended",  # the parent, reading its outcome
    }
)
_TEST_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {"accuracy": "accuracy test", "performance": "performance test", "find_peak": "peak search"}
)
PAUSE_AT_ENV = "BEYOND_TOPS_PAUSE_AT"
PAUSE_FILE_ENV = "BEYOND_TOPS_PAUSE_FILE"
PAUSE_S = 120  # the longest a paused phase waits for its signal before it goes on
PAUSE_POLL_S = 0.05  # how often a paused phase looks whether its marker was removed


@dataclass(frozen=True, kw_only=True)
class Pause:
    """The test hook: stop at `phase` of `test`, say so in `marker`, wait for a signal."""

    test: str
    phase: Phase
    marker: Path

    def wait(self) -> None:
        """Write this process's pid to the marker, then wait while it is there, at most PAUSE_S.

        A stop signal raises here; a test that removes the marker lets the run go on.
        """
        atomic_write_text(self.marker, f"{os.getpid()}\n")
        deadline = time.monotonic() + PAUSE_S
        while self.marker.exists() and time.monotonic() < deadline:
            time.sleep(PAUSE_POLL_S)


def pause_from_env(env: Mapping[str, str]) -> Pause | None:
    """The pause BEYOND_TOPS_PAUSE_AT asks for; None when unset; ConfigError when malformed."""
    value = env.get(PAUSE_AT_ENV)
    if not value:
        return None
    test, _, phase = value.partition(":")
    if test not in TESTS or phase not in PHASES:
        raise ConfigError(
            f"{PAUSE_AT_ENV}: {value!r} is not TEST:PHASE (tests: {', '.join(TESTS)}; "
            f"phases: {', '.join(PHASES)}); unset it outside tests"
        )
    marker = env.get(PAUSE_FILE_ENV)
    if not marker:
        raise ConfigError(f"{PAUSE_AT_ENV} needs {PAUSE_FILE_ENV}: the file to write on pausing")
    return Pause(test=test, phase=cast(Phase, phase), marker=Path(marker))


class Phases:
    """Where a run is, for the cause a stop signal records; where the test hook pauses."""

    def __init__(self, test: str, phase: Phase = "launch", pause: Pause | None = None) -> None:
        self.test, self.phase, self._pause = test, phase, pause

    def enter(self, phase: Phase, test: str | None = None) -> None:
        """Now in `phase` (of `test`, when that changes); the hook's pause waits here."""
        self.test = test or self.test
        self.phase = phase
        pause = self._pause
        if pause is not None and (pause.test, pause.phase) == (self.test, phase):
            pause.wait()

    def cause(self, signum: int) -> str:
        """`interrupted (SIGTERM) in the performance test, during LoadGen's run`."""
        test = _TEST_NAMES.get(self.test, f"compliance test {self.test}")
        return f"{interrupted_cause(signum)} {PHASES[self.phase].format(test=test)}"


class HeldStops:
    """Stop signals blocked in this thread until released; one that comes meanwhile waits.

    A mask is per thread and a child process inherits it: the CLI's parent runs no other
    thread, and a worker started while they are held unblocks them (`unblock=True`) once its
    handlers are installed, so a signal sent while it started is raised there as Interrupted,
    neither lost nor fatal.
    """

    def __init__(self, *, unblock: bool = False) -> None:
        self._previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        self._unblock, self._held = unblock, True

    def release(self) -> None:
        """Restore the mask (or unblock); a signal that came while held is raised here."""
        if self._held:
            self._held = False
            if self._unblock:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            else:
                signal.pthread_sigmask(signal.SIG_SETMASK, self._previous)

    def __enter__(self) -> HeldStops:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Hold stop signals while a stop is recorded; a second one meanwhile is dropped."""
    held = HeldStops()
    try:
        yield
    finally:
        with contextlib.suppress(KeyboardInterrupt):  # the first stop is the one reported
            held.release()


def mark_stopped(
    directory: Path, exc: KeyboardInterrupt, where: Phases, signum: int | None = None
) -> Interrupted:
    """Mark `directory` INCOMPLETE with the stop's cause; the Interrupted to raise for it.

    The cause is the one already recorded below (a worker's, with its phase), else where the
    caller was; `signum` when the exception lost it (LoadGen's wait raises a plain one). A
    result.json there goes: INCOMPLETE and a result never lie side by side.
    """
    signum = stop_signal(exc, signum)
    cause = (exc.cause if isinstance(exc, Interrupted) else None) or where.cause(signum)
    with recording():
        if not directory.is_dir():  # removed meanwhile: nothing to mark, nothing to name
            return Interrupted(signum, cause=cause, marked=_marked(exc))
        try:
            (directory / RESULT_FILE).unlink(missing_ok=True)
            mark_incomplete(directory, cause, STOP_SIGNALS[signum].code)
        except OSError as error:  # unwritable now: say so, and name no directory as marked
            print(f"warning: {directory}: not marked INCOMPLETE ({error})", file=sys.stderr)
            return Interrupted(signum, cause=cause, marked=_marked(exc))
    return Interrupted(signum, cause=cause, marked=(directory, *_marked(exc)))


def worker_stop(exc: KeyboardInterrupt, run_dir: Path) -> Interrupted:
    """A stop that reached a worker's parent: with the cause the worker recorded, if it did."""
    try:
        recorded = read_incomplete(run_dir)
    except (OSError, UnicodeDecodeError):  # a marker not ours to read: the parent's phase
        recorded = None
    cause = recorded.cause if recorded and recorded.cause.startswith("interrupted (") else None
    return Interrupted(stop_signal(exc), cause=cause or _cause(exc), marked=_marked(exc))


def stop_cause(exc: KeyboardInterrupt) -> tuple[str, int]:
    """The cause recorded for a stop (or the signal's bare one), and its exit code."""
    signum = stop_signal(exc)
    return _cause(exc) or interrupted_cause(signum), STOP_SIGNALS[signum].code


def also_marked(exc: KeyboardInterrupt, directory: Path) -> Interrupted:
    """The stop to raise once `directory` is marked for it too: naming it after the others."""
    cause, _ = stop_cause(exc)
    return Interrupted(stop_signal(exc), cause=cause, marked=(*_marked(exc), directory))


def _cause(exc: KeyboardInterrupt) -> str | None:
    return exc.cause if isinstance(exc, Interrupted) else None


def _marked(exc: KeyboardInterrupt) -> tuple[Path, ...]:
    return exc.marked if isinstance(exc, Interrupted) else ()
