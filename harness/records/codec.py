"""The JSON boundary of records: records to JSON data and back, every key checked.

Decoding follows the records' type hints: a record is an object with exactly its fields'
keys (an inline field's record contributes its keys to its parent's object), ``tuple[X, ...]``
a list, ``Mapping[str, X]`` an object, ``X | None`` X or null, a Literal one of its values;
``Json`` (harness.strictjson: opaque JSON another component owns) passes through. Numbers
are kept as written (an integer where a float is expected is accepted, a bool never counts
as a number).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

from harness.errors import ResultError
from harness.records.fingerprint import Fingerprint
from harness.strictjson import Json, JsonObject

T = TypeVar("T")


class _Opaque:
    """What a record's ``Json`` hint reads as here: JSON kept as it was written."""


_KINDS: dict[type, str] = {str: "a string", int: "an integer", float: "a number", bool: "a bool"}


def to_data(value: object) -> Json:
    """JSON-ready data (dicts, lists, scalars) of a record, recursively."""
    if isinstance(value, Fingerprint):
        return value.to_dict()  # its own JSON form
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_object(value)
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"record codec: {type(value).__name__} is not JSON data")  # a record's bug


def to_object(record: object) -> JsonObject:
    """The JSON object of one record (a dataclass instance), its fields' keys in order."""
    out: JsonObject = {}
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        item = to_data(getattr(record, f.name))
        if _inline(f) and isinstance(item, dict):
            out.update(item)
        else:
            out[f.name] = item
    return out


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
    values: dict[str, object] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        kind = hints[f.name]
        if _inline(f):
            values[f.name] = from_data(kind, {k: data[k] for k in record_keys(kind)}, at)
        else:
            values[f.name] = _value(kind, data[f.name], _join(at, f.name))
    return cls(**values)


def record_keys(cls: type) -> tuple[str, ...]:
    """The JSON keys of a record's object, in order (inline records' keys in their place)."""
    hints = _hints(cls)
    keys: list[str] = []
    for f in dataclasses.fields(cls):
        keys += record_keys(hints[f.name]) if _inline(f) else [f.name]
    return tuple(keys)


def _value(kind: Any, value: object, at: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any or kind is _Opaque:
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
    raise TypeError(f"record codec: no rule for {kind!r} at {at}")  # a record's bug


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
    # ``Json`` is a recursive alias typing cannot evaluate: here it is opaque JSON.
    return typing.get_type_hints(cls, localns={"Json": _Opaque})


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
