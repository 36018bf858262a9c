"""The error hierarchy and its exit codes: one user-facing type, caught once by the CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


class HarnessError(Exception):
    """An error the user can fix; its message is one line that says how.

    Raise a subclass: each has its own exit code in ERROR_CODES. A bare HarnessError exits
    with the generic code, never with 1, which means "LoadGen judged a finished run INVALID".
    """

    exit_code: int  # from ERROR_CODES, set below; ChildRunError overrides it per instance


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


@dataclass(frozen=True, kw_only=True)
class ExitCode:
    """One exit status of `harness` and what it means, as `harness --help` prints it."""

    code: int
    meaning: str


SUCCESS: Final = ExitCode(code=0, meaning="success (every run LoadGen-VALID)")
# Reserved for a run that completed: no error class may use it.
INVALID: Final = ExitCode(code=1, meaning="a run finished but LoadGen judged it INVALID")
INTERRUPTED: Final = ExitCode(
    code=130, meaning="interrupted (Ctrl-C); the run directory is marked INCOMPLETE"
)
# A worker process died of a bug, not of a user error (BSD's EX_SOFTWARE); it printed the trace.
CRASHED: Final = ExitCode(
    code=70, meaning="a worker crashed (a bug: its traceback is in the output; please report it)"
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
        DeviceError: ExitCode(code=4, meaning="hardware target or execution provider unavailable"),
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
    }
)
# Subclasses, by qualified name, that deliberately exit with an ancestor's code, and why.
SHARES_PARENT_CODE: Final[Mapping[str, str]] = MappingProxyType(
    {
        # (campaign's ChildRunError is another name for it)
        "harness.pipeline.WorkerError": "relays the exit code of the worker process that failed",
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
    reserved = [SUCCESS, INVALID, CRASHED, INTERRUPTED]
    entries = sorted([*reserved, *ERROR_CODES.values()], key=lambda e: e.code)
    return "exit codes:\n" + "\n".join(f"  {e.code:<4} {e.meaning}" for e in entries)


def run_reporting_errors(call: Callable[[], int]) -> int:
    """Run a command's body; a HarnessError or Ctrl-C becomes one line and its exit code."""
    try:
        return call()
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted; the run directory is marked INCOMPLETE", file=sys.stderr)
        return INTERRUPTED.code
