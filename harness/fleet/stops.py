"""A task's stop signals recorded the moment they come, before anything else is undone.

scancel sends SIGTERM and, KillWait seconds later (30 s by default, 2 s on the CI cluster),
SIGKILL. Whatever the task is doing when SIGTERM comes (reading its file, preparing the
image, waiting for a worker, writing its record), the cause must be on disk before the
SIGKILL: so the handler writes it first (a second stop signal meanwhile waits for it: Python
runs handlers in the main thread, nested), and only then raises Interrupted for the usual
unwinding (workers stopped, runs marked).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from harness.errors import STOP_SIGNALS, HarnessError, Interrupted

Record = Callable[[int], None]  # writes the cause of a stop by this signal


class RecordedStops:
    """While entered (in the main thread), SIGINT, SIGTERM and SIGHUP are recorded, then raised.

    The handlers in place before are put back on exit (the CLI's StopSignals, in `harness`).
    """

    def __init__(self, record: Record) -> None:
        self._record = record
        self.received: int | None = None
        self._recording = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> RecordedStops:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._recording:
            return  # a second signal while the first is written: the first is raised after
        if self.received is None:
            self.received = signum
            self._recording = True
            try:
                self._record(signum)
            except (OSError, HarnessError) as exc:  # the record's directory went away
                print(f"note: the task's stop was not recorded: {exc}", file=sys.stderr)
            finally:
                self._recording = False
        raise Interrupted(signum)
