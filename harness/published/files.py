"""A published result's files read from its tree: inside it, regular files only, bounded.

Grammar (issue #23). The tree is the directory that holds the division (`<tree>/closed/...`):
every file is resolved and must stay inside it (a link inside the tree is followed, one out
of it refused), be a regular file (no FIFO, socket or device) and be UTF-8 text within its
size bound. A summary log must hold LoadGen's `MLPerf Results Summary` header. A system or
measurements JSON is an object of finite numbers (harness.strictjson); each field the import
uses is text, a number, null, or a flat list or object of those, at most MAX_FIELD_CHARS
long. A refused detail log skips its result; any other refused file is an import warning
naming it (and the key), and that file is neither used nor copied.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from harness.errors import ResultError
from harness.foreign import MAX_JSON_BYTES, MAX_LOG_BYTES, inside, read_bytes, read_text
from harness.records.loadgen_log import DetailLog, parse_detail_lines
from harness.strictjson import JsonObject, loads

MAX_SUMMARY_BYTES = 1024 * 1024  # LoadGen's summary is a few KiB
MAX_ACCURACY_BYTES = MAX_JSON_BYTES
MAX_FIELD_CHARS = 4096  # one system JSON field, as text
SUMMARY_HEADER = "MLPerf Results Summary"  # LoadGen's summary always opens with it
SYSTEM_FIELDS = (
    "system_name",
    "system_type",
    "status",
    "host_processor_model_name",
    "host_processors_per_node",
    "accelerator_model_name",
    "accelerators_per_node",
    "number_of_nodes",
    "framework",
    "other_software_stack",
    "operating_system",
    "division",
)
MEASUREMENT_FIELDS = ("weight_data_types", "input_data_types")


def present(path: Path) -> bool:
    """Whether the tree has an entry at `path` (a broken link counts: reading it says why)."""
    return os.path.lexists(path)


def detail_log(root: Path, path: Path) -> DetailLog:
    """The detail log at `path`, parsed; ResultError naming it when it cannot be imported."""
    target = inside(root, path, ResultError)
    text = read_text(target, ResultError, MAX_LOG_BYTES)
    return parse_detail_lines(text.splitlines(), str(path))


def summary_log(root: Path, path: Path) -> str:
    """LoadGen's summary log at `path`; ResultError when it is not one."""
    text = read_text(inside(root, path, ResultError), ResultError, MAX_SUMMARY_BYTES)
    if not any(line.strip() == SUMMARY_HEADER for line in text.splitlines()[:10]):
        raise ResultError(
            f"{path}: not a LoadGen summary (no '{SUMMARY_HEADER}' header in its first lines)"
        )
    return text


def text_file(root: Path, path: Path, limit_bytes: int = MAX_ACCURACY_BYTES) -> str:
    """A UTF-8 text file of the tree; ResultError naming it when it cannot be read."""
    return read_text(inside(root, path, ResultError), ResultError, limit_bytes)


def json_fields(root: Path, path: Path, fields: tuple[str, ...], warnings: list[str]) -> JsonObject:
    """The `fields` of a JSON object in the tree that are well typed; one warning per other.

    Raises:
        ResultError: the file cannot be read, is not JSON within the grammar, or not an object.
    """
    text = text_file(root, path, MAX_JSON_BYTES).removeprefix("\ufeff")
    data = loads(text, str(path), ResultError)
    if not isinstance(data, dict):
        raise ResultError(f"{path}: not a JSON object")
    kept: JsonObject = {}
    for key in fields:
        if key not in data:
            continue
        problem = _field_problem(data[key])
        if problem is None:
            kept[key] = data[key]
        else:
            warnings.append(f"{path}: key {key!r} {problem}; left unknown")
    return kept


def file_bytes(root: Path, path: Path) -> bytes:
    """A file read again to be copied into a record: still inside the tree, still bounded."""
    return read_bytes(inside(root, path, ResultError), ResultError, MAX_LOG_BYTES)


def _field_problem(value: object, *, nested: bool = False) -> str | None:
    """Why a field's value is not text, a number, null or a flat list/object of those."""
    if value is None or isinstance(value, str):
        size = len(value or "")
    elif isinstance(value, bool):
        return "is true/false, not text or a number"
    elif isinstance(value, int | float):
        size = len(str(value))
    elif isinstance(value, list | Mapping) and not nested:
        items = value.values() if isinstance(value, Mapping) else value
        problems = [p for p in (_field_problem(v, nested=True) for v in items) if p]
        if problems:
            return f"holds a value that {problems[0]}"
        size = len(str(value))
    else:
        return f"is a nested {type(value).__name__}, not text or a number"
    if size > MAX_FIELD_CHARS:
        return f"is {size:,} characters long (at most {MAX_FIELD_CHARS:,})"
    return None
