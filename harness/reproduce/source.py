"""What `harness reproduce` is given, checked before it is read: a finished run, group or bundle.

Grammar (issue #23): the source is a run directory (result.json and job.json), a trials group
(trials.json), a bundle (a tar whose first member is MANIFEST.json), or result.json or
trials.json named as a file. A directory marked INCOMPLETE is refused with the cause its
INCOMPLETE file records (its first line, read bounded). A run's job.json and result.json are
JSON of finite numbers in range (harness.strictjson), refused by file and key otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import ConfigError, ResultError
from harness.files import INCOMPLETE_FILE
from harness.foreign import read_text
from harness.records.layout import JOB_FILE, RESULT_FILE, SWEEP_FILE, TRIALS_FILE
from harness.strictjson import read_json

MAX_INCOMPLETE_BYTES = 64 * 1024  # a cause line and an exit code
MAX_CAUSE_CHARS = 300
ACCEPTED = (
    "a run directory, a trials group, a bundle or a published record (`harness import mlperf`)"
)


def check_source(path: Path) -> None:
    """ResultError (ConfigError for a sweep) unless `path` is something reproduce reads."""
    if path.is_file():
        if path.name in (RESULT_FILE, TRIALS_FILE):
            check_source(path.parent)
            return
        raise ResultError(
            f"{path}: not a bundle (a tar that `harness bundle` wrote); pass {ACCEPTED}"
        )
    if not path.is_dir():
        raise ResultError(f"{path}: no such file or directory; pass {ACCEPTED}")
    if (path / SWEEP_FILE).is_file():
        raise ConfigError(
            f"{path}: a batch sweep; reproduce one of its points (a bs-N directory in it)"
        )
    cause = incomplete_cause(path)
    if cause is not None:
        raise ResultError(
            f"{path}: INCOMPLETE ({cause}); a run must be finished to be reproduced: "
            "reproduce a finished run, or run this one again"
        )
    if not (path / RESULT_FILE).is_file() and not (path / TRIALS_FILE).is_file():
        raise ResultError(
            f"{path}: no {RESULT_FILE} or {TRIALS_FILE}; not {ACCEPTED}: pass what "
            "`harness run`, `bench`, `bundle` or `import mlperf` wrote"
        )
    check_numbers(path)  # a run's own files, before any reader meets an Infinity


def incomplete_cause(run_dir: Path) -> str | None:
    """The cause an INCOMPLETE marker records (its first line, bounded), or None if unmarked."""
    marker = run_dir / INCOMPLETE_FILE
    if not os.path.lexists(marker):
        return None
    try:
        lines = read_text(marker, ResultError, MAX_INCOMPLETE_BYTES).splitlines()
    except ResultError as exc:
        return f"its cause is unreadable: {exc}"
    cause = lines[0].strip() if lines and lines[0].strip() else "no cause recorded"
    return cause if len(cause) <= MAX_CAUSE_CHARS else f"{cause[:MAX_CAUSE_CHARS]}..."


def check_numbers(run_dir: Path) -> None:
    """ResultError naming the file and key of a non-finite or out-of-range number in a run."""
    for name in (JOB_FILE, RESULT_FILE):
        if os.path.lexists(run_dir / name):
            read_json(run_dir / name, ResultError)
