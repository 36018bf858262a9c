"""The JSON boundary of result records: records to JSON data and back, every key checked.

Decoding follows the records' type hints: a record is an object with exactly its fields'
keys (an inline field's record contributes its keys to its parent's object), ``tuple[X, ...]``
a list, ``Mapping[str, X]`` an object, ``X | None`` X or null, a Literal one of its values;
``Any`` passes through. Numbers are kept as written (an integer where a float is expected is
accepted, a bool never counts as a number).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

from harness.errors import DependencyError, ResultError
from harness.fingerprint.fingerprint import Fingerprint

T = TypeVar("T")
_KINDS: dict[type, str] = {str: "a string", int: "an integer", float: "a number", bool: "a bool"}


def to_data(value: object) -> Any:
    """JSON-ready data (dicts, lists, scalars) of a record, recursively."""
    if isinstance(value, Fingerprint):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = to_data(getattr(value, f.name))
            if _inline(f):
                out.update(item)
            else:
                out[f.name] = item
        return out
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    return value


def from_data(cls: type[T], data: object, at: str = "") -> T:
    """The record ``cls`` read from JSON data; ResultError names the first key that is wrong.

    ``at`` is the dotted path of ``data`` within its file, for the message.
    """
    if not isinstance(data, Mapping):
        raise ResultError(f"{at or 'the file'}: expected an object, got {_kind_of(data)}")
    keys = record_keys(cls)
    unknown = sorted(set(data) - set(keys))
    missing = [k for k in keys if k not in data]
    if unknown or missing:
        parts = [f"unknown key(s) {', '.join(unknown)}"] if unknown else []
        parts += [f"missing key(s) {', '.join(missing)}"] if missing else []
        raise ResultError(f"{at or 'the file'}: {'; '.join(parts)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        kind = hints[f.name]
        if _inline(f):
            values[f.name] = from_data(kind, {k: data[k] for k in record_keys(kind)}, at)
        else:
            values[f.name] = _value(kind, data[f.name], _join(at, f.name))
    return cls(**values)


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


def record_keys(cls: type) -> tuple[str, ...]:
    """The JSON keys of a record's object, in order (inline records' keys in their place)."""
    hints = _hints(cls)
    keys: list[str] = []
    for f in dataclasses.fields(cls):
        keys += record_keys(hints[f.name]) if _inline(f) else [f.name]
    return tuple(keys)


def _value(kind: Any, value: object, at: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        return _union(typing.get_args(kind), value, at)
    if origin is Literal:
        allowed = typing.get_args(kind)
        if value not in allowed or isinstance(value, bool):
            raise ResultError(f"{at}: {value!r} is not one of {', '.join(map(repr, allowed))}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):  # tuples: a producer's data, not JSON's
            raise ResultError(f"{at}: expected a list, got {_kind_of(value)}")
        item = typing.get_args(kind)[0]
        return tuple(_value(item, v, f"{at}[{i}]") for i, v in enumerate(value))
    if origin is Mapping:
        if not isinstance(value, Mapping):
            raise ResultError(f"{at}: expected an object, got {_kind_of(value)}")
        item = typing.get_args(kind)[1]
        return {str(k): _value(item, v, _join(at, str(k))) for k, v in value.items()}
    if kind is Fingerprint:
        return _fingerprint(value, at)
    if dataclasses.is_dataclass(kind):
        return from_data(kind, value, at)  # type: ignore[arg-type]
    if kind in _KINDS:
        if not _is(kind, value):
            raise ResultError(f"{at}: expected {_KINDS[kind]}, got {_kind_of(value)}")
        return value
    raise TypeError(f"result codec: no rule for {kind!r} at {at}")  # a record's bug


def _union(arms: tuple[Any, ...], value: object, at: str) -> Any:
    if value is None:
        if type(None) in arms:
            return None
        raise ResultError(f"{at}: is null; expected a value")
    rest = [a for a in arms if a is not type(None)]
    if len(rest) == 1:
        return _value(rest[0], value, at)
    if all(a in _KINDS for a in rest) and any(_is(a, value) for a in rest):
        return value  # a scalar of one of several kinds (LoadGen settings)
    raise ResultError(f"{at}: {_kind_of(value)} is not allowed here")


def _is(kind: type, value: object) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _fingerprint(value: object, at: str) -> Fingerprint:
    if not isinstance(value, Mapping):
        raise ResultError(f"{at}: expected an object, got {_kind_of(value)}")
    try:
        return Fingerprint.from_dict(value)
    except ResultError as exc:
        raise ResultError(f"{at}: {exc}") from None


def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _inline(f: dataclasses.Field[Any]) -> bool:
    return f.metadata.get("json") == "inline"


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    for kind, name in _KINDS.items():
        if isinstance(value, kind):
            return name
    return "a list" if isinstance(value, list) else "an object"
