"""result.json: a RunResult's versioned JSON form, its writer and its loader (with migrations)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from harness.errors import ResultError
from harness.files import atomic_write_text, read_incomplete
from harness.records.codec import from_data, to_object
from harness.records.layout import RESULT_FILE
from harness.records.result import RunResult
from harness.records.runlabel import LABEL_GRAMMAR, label_problem
from harness.results.migrate import OLDEST_READABLE, upgrade
from harness.results.schema import schema_problem
from harness.strictjson import Format, Json, JsonObject, check_versioned, read_json

SCHEMA_VERSION = 13  # history: harness.results.migrate
RESULT = Format(
    what="a beyond-tops result",
    newest=SCHEMA_VERSION,
    oldest=OLDEST_READABLE,
    older_fix="re-run it",
)
SCHEMA_FILE = "result.schema.json"  # the current schema_version's, in harness/schemas


def to_dict(result: RunResult) -> JsonObject:
    """JSON-ready data of a result, schema_version first."""
    return {"schema_version": SCHEMA_VERSION, **to_object(result)}


def from_dict(data: Mapping[str, Json], source: str = "result") -> RunResult:
    """A result from JSON data of any readable schema_version (older ones are migrated).

    Raises:
        ResultError: naming ``source``, when the version is unknown or newer, or a key is
            absent, unknown or of the wrong kind; the message says what to do.
    """
    version = check_versioned(dict(data), source, RESULT, ResultError).version
    current = upgrade(data, version, SCHEMA_VERSION)
    problem = None
    try:
        result = from_data(RunResult, {k: v for k, v in current.items() if k != "schema_version"})
    except ResultError as exc:
        problem = str(exc)
    # Migrated data is current data: the current schema checks what the records cannot.
    problem = problem or schema_problem(current, SCHEMA_FILE) or _label_problem(current)
    if problem is not None:
        raise ResultError(f"{source}: not a schema_version {version} result ({problem}); re-run it")
    return result


def _label_problem(data: Mapping[str, Json]) -> str | None:
    """A label that --label would refuse (an edited file): a problem, never shown."""
    label = data.get("label")
    problem = label_problem(label) if isinstance(label, str) else None
    return None if problem is None else f"label: {problem}; a label is {LABEL_GRAMMAR}"


def to_json(result: RunResult) -> str:
    """Serialise a result as indented JSON."""
    data = to_dict(result)
    try:
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:  # JSON has no NaN or infinity; Python would write `NaN` regardless
        raise ResultError(
            f"result {result.run_id}: {_non_finite(data) or 'a value'} is not a finite number; "
            "not written"
        ) from None


def _non_finite(data: object, at: str = "") -> str | None:
    """The key path of the first NaN or infinity in JSON data, or None."""
    if isinstance(data, float) and not math.isfinite(data):
        return at or "the result"
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        found = _non_finite(
            value, f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}".lstrip(".")
        )
        if found is not None:
            return found
    return None


def write_result(result: RunResult, run_dir: Path) -> Path:
    """Write result.json atomically: readers see the whole file or none."""
    path = run_dir / RESULT_FILE
    atomic_write_text(path, to_json(result))
    return path


def load_result(run_dir: Path) -> RunResult:
    """Read a run directory's result.json (or the file itself), migrating older versions.

    The file may come from another machine (a shared tree, a site's input): it is read as
    foreign JSON, bounded, with finite numbers only (harness.strictjson).
    """
    path = run_dir / RESULT_FILE if run_dir.is_dir() else run_dir
    marker = read_incomplete(path.parent)
    if marker is not None:
        raise ResultError(f"{path.parent}: run is incomplete ({marker.cause}); run it again")
    if not path.exists():
        raise ResultError(f"{path}: no such result; pass a run directory under results/runs/")
    data = read_json(path, ResultError)
    if not isinstance(data, dict):
        raise ResultError(f"{path}: no schema_version; not a beyond-tops result")
    return from_dict(data, str(path))
