"""The error hierarchy and its exit codes: one user-facing type, caught once by the CLI."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, MappingProxyType
from typing import Final

from harness.text import printable


class HarnessError(Exception):
    """An error the user can fix; its message is one line that says how.

    Raise a subclass: each has its own exit code in ERROR_CODES. A bare HarnessError exits
    with the generic code, never with 1, which means "LoadGen judged a finished run INVALID".
    """

    exit_code: int  # from ERROR_CODES, set below; WorkerError overrides it per instance


class ConfigError(HarnessError):
    """A scenario, suite or option is invalid."""


class ModelError(HarnessError):
    """A model file is missing, unreadable, invalid or unsupported."""


class DeviceError(HarnessError):
    """The requested hardware target or execution provider cannot be used."""


class RunError(HarnessError):
    """A benchmark run failed or was interrupted; its directory is marked incomplete."""


class PreflightError(RunError):
    """Preflight found problems and `--strict` asked for them to stop the run."""


class ResultError(HarnessError):
    """A result directory or file cannot be read or written."""


class DependencyError(HarnessError):
    """An optional dependency (an extra such as `report`) that a command needs is missing."""


class SchedulerError(HarnessError):
    """Slurm or Kubernetes refused a request, could not be reached, or is not installed."""


class ImplausibleError(HarnessError):
    """A result the physics check found IMPLAUSIBLE was to be bundled or exported."""


class BundleError(HarnessError):
    """A file given as a bundle is not one, or holds an unsafe member (a link, a `..` path)."""


class BadSignatureError(BundleError):
    """A bundle's MANIFEST.sig does not verify its MANIFEST.json: one of them was altered."""


class UntrustedKeyError(BundleError):
    """A bundle's signature is valid, but its key is not one the user said to trust."""


class TamperedFileError(BundleError):
    """A file in a bundle differs from the sha256 its signed manifest lists."""


class EditedResultError(TamperedFileError):
    """A number in a bundle's result.json differs from the LoadGen log it was read from."""


class MissingFileError(BundleError):
    """A file that a bundle's signed manifest lists is not in the bundle."""


class AddedFileError(BundleError):
    """A bundle holds a file that its signed manifest does not list."""


class CrossCheckError(BundleError):
    """Signed files of a bundle contradict each other: a named cross-check of verify failed."""


@dataclass(frozen=True, kw_only=True)
class ExitCode:
    """One exit status of `harness` and what it means, as `harness --help` prints it."""

    code: int
    meaning: str


SUCCESS: Final = ExitCode(code=0, meaning="success (every run LoadGen-VALID)")
# Reserved for a run that completed: no error class may use it.
INVALID: Final = ExitCode(
    code=1, meaning="a run finished but LoadGen judged it INVALID, or it is IMPLAUSIBLE"
)
INTERRUPTED: Final = ExitCode(
    code=130, meaning="interrupted (Ctrl-C); what it stopped is marked INCOMPLETE, by path"
)
HUNG_UP: Final = ExitCode(
    code=129, meaning="interrupted (SIGHUP); what it stopped is marked INCOMPLETE, by path"
)
TERMINATED: Final = ExitCode(
    code=143, meaning="interrupted (SIGTERM); what it stopped is marked INCOMPLETE, by path"
)
# The signals that stop a run, each exiting 128 + its number as a shell reports a death by it.
STOP_SIGNALS: Final[Mapping[int, ExitCode]] = MappingProxyType(
    {signal.SIGHUP: HUNG_UP, signal.SIGINT: INTERRUPTED, signal.SIGTERM: TERMINATED}
)
# stdout's reader went away (`harness show RUN | head`): 128 + SIGPIPE, as a shell would report.
BROKEN_PIPE: Final = ExitCode(
    code=141, meaning="stdout closed early (e.g. `| head`); output cut short"
)
# A worker process died of a bug, not of a user error (BSD's EX_SOFTWARE); it printed the trace.
CRASHED: Final = ExitCode(
    code=70, meaning="a worker crashed (a bug: its traceback is in the output; please report it)"
)
# `harness compare`: an answer, not an error (apart from the error table's codes and from
# reproduce's 30 and 31): the results differ in model or scenario, so no ratio means anything.
NOT_COMPARABLE: Final = ExitCode(
    code=33, meaning="compare: not comparable (another model or scenario); the tiers say why"
)
# `harness compare --fail-if-slower`: an answer too: NEW's headline is worse than BASE's
# beyond both the threshold and the noise (harness.analysis.regression says how).
SLOWER: Final = ExitCode(
    code=34,
    meaning="compare --fail-if-slower: the new result's headline is worse beyond the "
    "threshold and the noise",
)
# `harness fleet status` and `collect`: an answer too: a task did not complete.
FLEET_INCOMPLETE: Final = ExitCode(
    code=32, meaning="fleet status/collect: a task did not complete (FAILED, TIMEOUT, ...)"
)
# The one table of error exit codes: the classes' `exit_code`, `harness --help` and the
# README's list come from it. Every HarnessError subclass needs an entry here or one in
# SHARES_PARENT_CODE (tests/unit/test_errors.py walks the hierarchy).
ERROR_CODES: Final[Mapping[type[HarnessError], ExitCode]] = MappingProxyType(
    {
        ConfigError: ExitCode(
            code=2, meaning="bad configuration or option (scenario YAML, suite, command line)"
        ),
        ModelError: ExitCode(code=3, meaning="model file missing, invalid or unsupported"),
        DeviceError: ExitCode(
            code=4, meaning="hardware target or execution provider unknown or unavailable"
        ),
        RunError: ExitCode(
            code=5, meaning="inference failed during a run (its directory is marked INCOMPLETE)"
        ),
        ResultError: ExitCode(code=6, meaning="result directory not readable or not writable"),
        PreflightError: ExitCode(
            code=7, meaning="preflight found problems and --strict stopped the run"
        ),
        DependencyError: ExitCode(
            code=8, meaning="an optional dependency is missing (the message names the extra)"
        ),
        HarnessError: ExitCode(code=9, meaning="any other harness error (the message says why)"),
        SchedulerError: ExitCode(
            code=27, meaning="the scheduler (Slurm, Kubernetes) refused or could not be reached"
        ),
        ImplausibleError: ExitCode(
            code=29,
            meaning="bundle or submission refused: a run is IMPLAUSIBLE (faster than the "
            "machine computes)",
        ),
        # harness verify: one code per way a bundle can fail, so scripts can tell them apart
        BundleError: ExitCode(
            code=20, meaning="not a readable bundle (not a tar, no signed manifest, unsafe member)"
        ),
        BadSignatureError: ExitCode(
            code=21, meaning="bundle signature invalid: MANIFEST.json or MANIFEST.sig altered"
        ),
        UntrustedKeyError: ExitCode(
            code=22, meaning="bundle signed by a key not given with --trust (or none given)"
        ),
        TamperedFileError: ExitCode(
            code=23, meaning="a bundled file differs from its sha256 in MANIFEST.json"
        ),
        EditedResultError: ExitCode(
            code=24, meaning="a number in a bundled result.json differs from its LoadGen log"
        ),
        MissingFileError: ExitCode(
            code=25, meaning="a file MANIFEST.json lists is missing from the bundle"
        ),
        AddedFileError: ExitCode(
            code=26, meaning="the bundle holds a file MANIFEST.json does not list"
        ),
        CrossCheckError: ExitCode(
            code=28, meaning="bundled files contradict each other (the failed check is named)"
        ),
    }
)
# Subclasses, by qualified name, that deliberately exit with an ancestor's code, and why.
SHARES_PARENT_CODE: Final[Mapping[str, str]] = MappingProxyType(
    {
        "harness.execution.pipeline.WorkerError": (
            "relays the exit code of the worker process that failed"
        ),
    }
)

for _error, _entry in ERROR_CODES.items():
    _error.exit_code = _entry.code


def exit_code_of(error: type[HarnessError]) -> ExitCode:
    """The entry an error class exits with: its own, or its nearest ancestor's."""
    for cls in error.__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    raise TypeError(f"{error.__name__} is not a HarnessError")


def exit_code_table() -> str:
    """Every exit status `harness` uses, in code order, as the `--help` epilog prints it."""
    reserved = [
        SUCCESS,
        INVALID,
        NOT_COMPARABLE,
        SLOWER,
        FLEET_INCOMPLETE,
        CRASHED,
        BROKEN_PIPE,
        *STOP_SIGNALS.values(),
    ]
    entries = sorted([*reserved, *ERROR_CODES.values()], key=lambda e: e.code)
    return "exit codes:\n" + "\n".join(f"  {e.code:<4} {e.meaning}" for e in entries)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived: raised where the program is, as Ctrl-C raises KeyboardInterrupt.

    Whoever records the stop raises it again with the cause it wrote (`interrupted (SIGTERM)
    in the performance test, during LoadGen's run`) and the directories it marked INCOMPLETE,
    so the CLI's one line can name them.
    """

    def __init__(
        self, signum: int, *, cause: str | None = None, marked: Sequence[Path] = ()
    ) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.cause = cause
        self.marked = tuple(marked)


class StopSignals:
    """While entered, SIGINT, SIGTERM and SIGHUP raise Interrupted; for entry points only.

    Remembers the first signal: code that catches KeyboardInterrupt and raises a plain one
    again (LoadGen's wait) loses which signal it was. Outside the main thread it does nothing.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def ignore_more(self) -> None:
        """Ignore further stop signals until exit: the first is being recorded and reported."""
        for signum in self._previous:
            signal.signal(signum, signal.SIG_IGN)

    def __exit__(self, *exc_info: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        raise Interrupted(signum)


def stop_signal(exc: KeyboardInterrupt, received: int | None = None) -> int:
    """The signal that stopped us: the exception's own, the one received, else SIGINT."""
    if isinstance(exc, Interrupted):
        return exc.signum
    return signal.SIGINT if received is None else received


def interrupted_cause(signum: int) -> str:
    """What INCOMPLETE says of a run a signal stopped: `interrupted (SIGTERM)`."""
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    return f"interrupted ({name})"


def stopped_line(exc: KeyboardInterrupt, signum: int) -> str:
    """The CLI's line for a stop: its cause, then the directories marked, or that none was.

    A directory marked and then removed (a group left empty) is not named. Every file the
    harness writes is written whole or not at all (harness.files), so with no directory
    marked, nothing is left half-written.
    """
    stopped = exc if isinstance(exc, Interrupted) else None
    cause = (stopped.cause if stopped else None) or interrupted_cause(signum)
    marked = [str(path) for path in (stopped.marked if stopped else ()) if path.is_dir()]
    if not marked:
        return f"{cause}; no run directory was marked INCOMPLETE, and no file is half-written"
    return f"{cause}; marked INCOMPLETE: {', '.join(marked)}"


def run_reporting_errors(call: Callable[[], int]) -> int:
    """The CLI's body: a HarnessError or a stop signal becomes one line and its exit code.

    The CLI's entry point, so it installs StopSignals: SIGTERM and SIGHUP stop a run as
    Ctrl-C does; the line names the cause recorded and each directory marked INCOMPLETE.
    A second stop signal while that line is printed is ignored: the first is being reported.
    """
    with StopSignals() as stops:
        try:
            return call()
        except HarnessError as exc:
            print(f"error: {printable(str(exc))}", file=sys.stderr)  # names from foreign files
            return exc.exit_code
        except KeyboardInterrupt as exc:
            signum = stop_signal(exc, stops.received)
            stops.ignore_more()
            print(f"error: {printable(stopped_line(exc, signum))}", file=sys.stderr)
            return STOP_SIGNALS[signum].code
