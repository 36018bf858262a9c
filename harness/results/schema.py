"""The JSON Schemas of harness/schemas: the first way a file's data breaks one, in one line."""

from __future__ import annotations

import functools
import importlib.resources
import json
from typing import Any

from harness.errors import DependencyError


def schema_problem(data: object, schema_file: str) -> str | None:
    """The first way ``data`` breaks ``harness/schemas/<schema_file>``, in one line, or None.

    The schema says more than the records' type hints (ranges, enums, patterns): a value that
    decodes but the schema refuses is refused on load, with the key path that is wrong.
    """
    jsonschema = _jsonschema()
    error = jsonschema.exceptions.best_match(_validator(schema_file).iter_errors(data))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    message = error.message.splitlines()[0] if error.message else "invalid"
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{where.lstrip('.') or 'the file'}: {message}"


@functools.cache
def _validator(schema_file: str) -> Any:
    folder = importlib.resources.files("harness").joinpath("schemas")
    schema = json.loads(folder.joinpath(schema_file).read_text(encoding="utf-8"))
    return _jsonschema().validators.validator_for(schema)(schema)


def _jsonschema() -> Any:
    try:
        import jsonschema  # type: ignore[import-untyped]  # here: a runtime dep, a slow import
    except ImportError:
        raise DependencyError(
            "jsonschema is not installed; it checks result files: pip install 'jsonschema>=4.20'"
        ) from None
    return jsonschema
