"""JSON from files we did not write: finite numbers in range, bounded nesting, errors by key.

Grammar (issue #23): a number is finite (no `NaN`, `Infinity`, nor a literal such as `1e999`
that overflows to one) and an integer lies in -2**63 .. 2**64-1 (what a 64-bit field of
LoadGen or of a record holds); values nest at most MAX_DEPTH deep. Every refusal is the
caller's HarnessError naming the file and the key path (`latency_ns.p90`, `files[3].size`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from harness.errors import HarnessError
from harness.foreign import MAX_JSON_BYTES, read_text

MAX_DEPTH = 32  # a result.json nests 5 deep; json itself fails near 1000 with RecursionError
INT_MIN, INT_MAX = -(2**63), 2**64 - 1

ErrorType = type[HarnessError]
# What json.loads returns and json.dumps takes, precisely: records' to_dict/from_dict boundaries.
Json: TypeAlias = "str | int | float | bool | list[Json] | dict[str, Json] | None"
JsonObject: TypeAlias = "dict[str, Json]"
T = TypeVar("T")
_KINDS = {str: "a string", int: "a whole number", bool: "true or false", list: "a list"}
_KINDS[dict] = "a mapping"


def bad_number(data: object) -> tuple[str, str] | None:
    """(key path, what is wrong) of the first non-finite or out-of-range number, or None.

    What is wrong reads after the key: `is NaN, not a finite number`, `is 1e+30, out of the
    64-bit range`, `nests more than 32 levels deep`.
    """
    stack: list[tuple[object, str, int]] = [(data, "", 0)]
    while stack:
        value, at, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return _short(at), f"is {_show(value)}, not a finite number"
        if isinstance(value, int) and not isinstance(value, bool):
            if not INT_MIN <= value <= INT_MAX:
                return _short(at), f"is {value:.3g}, out of the 64-bit range"
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                return _short(at), f"nests more than {MAX_DEPTH} levels deep"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in reversed(list(items)):
                stack.append((item, _join(at, key), depth + 1))
    return None


def loads(text: str, source: str, error: ErrorType) -> Any:
    """Parse JSON text; `error` naming `source` (and the key) for what the grammar refuses."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise error(f"{source}: nests more than {MAX_DEPTH} levels deep; not a record") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4300 digits
        raise error(f"{source}: not readable JSON ({_first_line(exc)})") from None
    found = bad_number(data)
    if found is not None:
        key, problem = found
        raise error(
            f"{source}: {key} {problem}; JSON records hold no such value: the file was edited "
            "or damaged"
        )
    return data


def read_json(path: Path, error: ErrorType, limit_bytes: int = MAX_JSON_BYTES) -> Any:
    """A regular file's JSON (UTF-8, a leading BOM allowed), bounded, checked as `loads`."""
    text = read_text(path, error, limit_bytes)
    return loads(text.removeprefix("\ufeff"), str(path), error)


# --- versioned formats: one reader checks kind, version and the oldest version read ---


@dataclass(frozen=True, kw_only=True)
class Format:
    """A versioned JSON format of ours as its reader checks it (harness.cli.versions lists it).

    `what` names a file of the format in messages ("a beyond-tops result"). `kind` is the
    value `kind_key` must hold, when the format names itself. `unversioned` is the version
    of files written before the format had a version key (absent: such a file is refused).
    `older_fix` says what to do with a file older than `oldest`.
    """

    what: str
    newest: int
    oldest: int
    kind: str | None = None
    kind_key: str = "kind"
    version_key: str = "schema_version"
    unversioned: int | None = None
    older_fix: str = "write it again with this beyond-tops"

    def reads(self) -> str:
        """The versions read, as messages say them: `3`, or `1 to 3`."""
        if self.oldest == self.newest:
            return str(self.newest)
        return f"{self.oldest} to {self.newest}"


@dataclass(frozen=True)
class Versioned:
    """A versioned file's JSON object and the version it was written in."""

    data: JsonObject
    version: int


def read_versioned(
    path: Path, fmt: Format, error: ErrorType, *, missing: str | None = None
) -> Versioned:
    """A file of `fmt`: bounded strict JSON (`read_json`) checked by `check_versioned`.

    `missing`, if given, is what the error says after the path when there is no such file.
    """
    if missing is not None and not path.exists() and not path.is_symlink():
        raise error(f"{path}: {missing}")
    return check_versioned(read_json(path, error), str(path), fmt, error)


def check_versioned(data: Json, source: str, fmt: Format, error: ErrorType) -> Versioned:
    """`data` if it is an object of `fmt`'s kind in a version this reads; else `error`.

    Each refusal names `source` and says what to do: a newer version, to upgrade; an older
    one, `fmt.older_fix`.
    """
    if not isinstance(data, dict):
        raise error(f"{source}: not {fmt.what} (expected a JSON object, got {shown_kind(data)})")
    if fmt.kind is not None and data.get(fmt.kind_key, _absent(fmt)) != fmt.kind:
        raise error(f"{source}: not {fmt.what} ({fmt.kind_key} is not {fmt.kind!r})")
    key = fmt.version_key
    version = data.get(key, fmt.unversioned)
    if not isinstance(version, int) or isinstance(version, bool):
        raise error(f"{source}: no {key}; not {fmt.what}")
    if version > fmt.newest:
        raise error(
            f"{source}: {key} {version} was written by a newer beyond-tops "
            f"(this one reads {fmt.reads()}); upgrade beyond-tops"
        )
    if version < fmt.oldest:
        raise error(
            f"{source}: {key} {version} is older than this beyond-tops reads "
            f"({fmt.reads()}); {fmt.older_fix}"
        )
    return Versioned(data, version)


def _absent(fmt: Format) -> str | None:
    """What a file without the kind key counts as: the kind, for files written before it."""
    return fmt.kind if fmt.unversioned is not None else None


def _short(at: str) -> str:
    """A key path as a message shows it: `the value` for the top, at most 80 characters."""
    if not at:
        return "the value"
    return at if len(at) <= 80 else f"{at[:77]}..."


def _join(at: str, key: object) -> str:
    if isinstance(key, int):
        return f"{at}[{key}]"
    name = str(key)[:64]  # a hostile key stays short in the message
    return f"{at}.{name}" if at else name


def _show(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# --- typed access to a parsed record: each key checked before use, named when wrong ---


def want(data: Mapping[str, object], key: str, kind: type[T], where: str, error: ErrorType) -> T:
    """`data[key]`, which must be of `kind` (bool is no whole number); else `error`."""
    if key not in data:
        raise error(f"{where}: missing key {key!r}")
    return typed(data[key], kind, f"{where}: {key}", error)


def maybe(
    data: Mapping[str, object], key: str, kind: type[T], where: str, error: ErrorType
) -> T | None:
    """`data[key]` of `kind`, or None when it is absent or null."""
    value = data.get(key)
    return None if value is None else typed(value, kind, f"{where}: {key}", error)


def typed(value: object, kind: type[T], where: str, error: ErrorType) -> T:
    """`value` if it is of `kind`; else `error` naming `where`, the kind and what it got."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise error(f"{where}: expected {_KINDS.get(kind, kind.__name__)}, got {shown_kind(value)}")
    return value


def shown_kind(value: object) -> str:
    """A value as a message names it: its kind and, cut to 60 characters, its repr."""
    if value is None:
        return "null"
    text = repr(value)
    shown = text if len(text) <= 60 else text[:57] + "..."
    return f"{_KINDS.get(type(value), type(value).__name__)} {shown}"
