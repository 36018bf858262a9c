"""The harness's error hierarchy: one user-facing type, caught once by the CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable


class HarnessError(Exception):
    """An error the user can fix; its message is one line that says how."""

    exit_code = 1


class ConfigError(HarnessError):
    """A scenario, suite or option is invalid."""

    exit_code = 2


class ModelError(HarnessError):
    """A model file is missing, unreadable, invalid or unsupported."""

    exit_code = 3


class DeviceError(HarnessError):
    """The requested hardware target or execution provider cannot be used."""

    exit_code = 4


class RunError(HarnessError):
    """A benchmark run failed or was interrupted; its directory is marked incomplete."""

    exit_code = 5


class ResultError(HarnessError):
    """A result directory or file cannot be read or written."""

    exit_code = 6


def run_reporting_errors(call: Callable[[], int]) -> int:
    """Run a command's body; a HarnessError or Ctrl-C becomes one line and its exit code."""
    try:
        return call()
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted; the run directory is marked INCOMPLETE", file=sys.stderr)
        return 130
