"""The fleet's JSON records read as untrusted data: bounded, finite, and typed before use.

A fleet directory lives on a shared filesystem that every node (and everyone with access)
writes, so fleet.json, task.json and each task-result.json are read as foreign files: a
regular file of at most harness.foreign.MAX_JSON_BYTES, UTF-8 JSON holding one object and no
NaN or Infinity, each key of the expected type. Every refusal names the file and the key.
A run named in a task record is a relative path with no `..`, resolved inside its attempt.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NoReturn, TypeVar

from harness.errors import HarnessError, ResultError
from harness.fleet.grammar import check_text, escaped
from harness.foreign import MAX_JSON_BYTES, ErrorType, read_text
from harness.strictjson import (
    Format,
    Json,
    JsonObject,
    check_versioned,
    maybe,
    shown_kind,
    typed,
    want,
)

TASK_RESULT_VERSION = 1  # of task-result.json, written by harness.fleet.task
TASK_RESULT = Format(
    what="a beyond-tops task record",
    newest=TASK_RESULT_VERSION,
    oldest=1,
    older_fix="run the task again",
)
T = TypeVar("T")


def load_object(path: Path, error: ErrorType, what: str, fix: str) -> JsonObject:
    """The JSON object in `path`; anything else is one `error` naming the file and the fix."""
    if not path.exists() and not path.is_symlink():
        raise error(f"{path}: no such {what} file; {fix}")
    text = read_text(path, error, MAX_JSON_BYTES)
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as exc:
        raise error(f"{path}: not a readable JSON {what} file ({exc}); {fix}") from None
    except RecursionError:
        raise error(f"{path}: not a readable JSON {what} file (nested too deep); {fix}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object, got {shown_kind(data)}; {fix}")
    return data


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number (a finite number is)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows to {value}, not a finite number")
    return value


def job_id(value: object, where: str, error: ErrorType) -> str:
    """A Slurm job ID: digits only (it is passed to squeue, sacct and scancel)."""
    text = value if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    if text is None or not text.isascii() or not text.isdigit():
        raise error(f"{where}: {shown_kind(value)} is not a Slurm job ID (digits)")
    return text


def index_list(value: object, where: str, error: ErrorType) -> tuple[int, ...]:
    """A list of task indices: whole numbers >= 0."""
    items = typed(value, list, where, error)
    indices = tuple(typed(item, int, f"{where}[{i}]", error) for i, item in enumerate(items))
    if any(index < 0 for index in indices):
        raise error(f"{where}: task indices are >= 0, got {list(indices)}")
    return indices


# ---- task-result.json ----


@dataclass(frozen=True, kw_only=True)
class EntryRecord:
    """One entry's outcome as task-result.json has it."""

    name: str
    run: str | None  # relative to the attempt directory; checked, never leaves it
    exit_code: int | None
    error: str | None


@dataclass(frozen=True, kw_only=True)
class TaskRecordView:
    """A task-result.json, typed: where the attempt ran, how it ended, what each entry left."""

    scheduler: str
    node: str | None
    job_id: str | None  # Slurm: this task's own job ID
    array_job_id: str | None
    partition: str | None
    started_utc: str
    finished_utc: str | None
    exit_code: int | None
    cause: str | None
    entries: tuple[EntryRecord, ...]
    error: str | None = None  # the task's own failure, before any entry ran

    @property
    def job(self) -> str | None:
        """The job ID to ask the scheduler about: the array's, else the task's own."""
        return self.array_job_id or self.job_id


def read_task_record(path: Path) -> TaskRecordView:
    """A task-result.json, typed; a ResultError names the file and the key otherwise.

    The fleet's readers catch it: a damaged record makes only its own task's row say so.
    """
    data = load_object(path, ResultError, "task record", "the task wrote it; run it again")
    check_versioned(data, str(path), TASK_RESULT, ResultError)
    return parse_task_record(data, str(path))


def parse_task_record(data: Mapping[str, Json], where: str) -> TaskRecordView:
    """The typed view of a task record's data: each key of its type, absent ones empty."""
    placement = maybe(data, "placement", dict, where, ResultError) or {}
    at = f"{where}: placement"
    entries = maybe(data, "entries", list, where, ResultError) or []
    job = placement.get("job_id")
    array = placement.get("array_job_id")
    return TaskRecordView(
        scheduler=maybe(placement, "scheduler", str, at, ResultError) or "none",
        node=_text(maybe(placement, "node", str, at, ResultError), f"{at}: node"),
        job_id=None if job is None else job_id(job, f"{at}: job_id", ResultError),
        array_job_id=None if array is None else job_id(array, f"{at}: array_job_id", ResultError),
        partition=_text(maybe(placement, "partition", str, at, ResultError), f"{at}: partition"),
        started_utc=want(data, "started_utc", str, where, ResultError),
        finished_utc=maybe(data, "finished_utc", str, where, ResultError),
        exit_code=maybe(data, "exit_code", int, where, ResultError),
        cause=_text(maybe(data, "cause", str, where, ResultError), f"{where}: cause"),
        entries=tuple(_entry(e, f"{where}: entries[{i}]") for i, e in enumerate(entries)),
        error=_escaped(maybe(data, "error", str, where, ResultError)),
    )


def _entry(value: object, where: str) -> EntryRecord:
    item = typed(value, dict, where, ResultError)
    run = maybe(item, "run", str, where, ResultError)
    error = maybe(item, "error", str, where, ResultError)
    return EntryRecord(
        name=shown_text(want(item, "name", str, where, ResultError), f"{where}: name", ResultError),
        run=None if run is None else relative_run(run, f"{where}: run"),
        exit_code=maybe(item, "exit_code", int, where, ResultError),
        error=_escaped(error),
    )


def relative_run(run: str, where: str) -> str:
    """A run named by a record: relative, without `..`, one line; ResultError otherwise."""
    path = PurePosixPath(run)
    if not run or path.is_absolute() or ".." in path.parts or "\\" in run:
        raise ResultError(
            f"{where}: {run!r} leads out of the attempt directory; a run is named "
            "relative to it (e.g. 20260101T000000Z-tiny-Offline-abc123)"
        )
    _text(run, where)
    return run


def _escaped(message: str | None) -> str | None:
    """A message a record carries: kept, its control characters made harmless."""
    return None if message is None else escaped(message)


def _text(value: str | None, where: str) -> str | None:
    """A string shown on a line of status: no control character."""
    return None if value is None else shown_text(value, where, ResultError)


def shown_text(value: str, where: str, error: ErrorType) -> str:
    """A string shown on a line of status, checked: no control character; else `error`."""
    try:
        return check_text(where, value)
    except HarnessError as exc:
        raise error(str(exc)) from None
