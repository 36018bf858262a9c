"""The strict YAML loader: no repeated or non-string keys, and dataclasses built key by key."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from harness.errors import ConfigError
from harness.text import UNSAFE_OR_NEWLINE, printable

T = typing.TypeVar("T")


def read_yaml(path: Path) -> Any:
    """The YAML document in `path`; a missing file, bad text or YAML is a one-line ConfigError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; list them with `ls scenarios/`") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save the scenario as UTF-8 YAML") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: constructs no objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}:{where}: {problem}") from None


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, minus what hides typos: repeated keys and non-string keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)  # resolve `<<` merges first, as SafeLoader does
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise yaml.constructor.ConstructorError(
                    problem=f"key {key!r} is not a string; quote it",
                    problem_mark=key_node.start_mark,
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    problem=f"duplicate key '{key}'; give each key once",
                    problem_mark=key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_as(path: Path, cls: type[T]) -> T:
    """The dataclass `cls` built from the YAML mapping in `path`, checked key by key."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    return build_from(cls, data, str(path), "")


def build_from(cls: type[T], data: Mapping[str, Any], where: str, prefix: str) -> T:
    """`cls` from `data` by its type hints; errors name `where` and the key after `prefix`.

    Unknown and missing keys, values of the wrong type and the dataclass's own ValueErrors
    (its range checks) are all one-line ConfigErrors.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(str(k) for k in set(data) - set(fields))
    if unknown:
        allowed = ", ".join(sorted(fields))
        raise ConfigError(f"{where}: unknown key '{prefix}{unknown[0]}' (allowed: {allowed})")
    missing = [
        name
        for name, f in fields.items()
        if name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where}: missing required key '{prefix}{missing[0]}'")
    kwargs = {k: _coerce(hints[k], v, where, f"{prefix}{k}") for k, v in data.items()}
    try:
        return cls(**kwargs)
    except ValueError as exc:
        message = str(exc)
        raise ConfigError(
            f"{where}: {prefix}{message}" if prefix else f"{where}: {message}"
        ) from None


def _coerce(tp: Any, value: Any, where: str, key: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _coerce(inner[0], value, where, key)
        if isinstance(value, tuple(inner)):
            return _finite(value, where, key)
        names = ", ".join(a.__name__ for a in inner)
        raise ConfigError(f"{where}: {key}: expected one of {names}, got {_kind(value)} {value!r}")
    if origin is Literal:
        if value not in args:
            allowed = ", ".join(str(a) for a in args)
            raise ConfigError(f"{where}: {key}: {value!r} is not allowed (allowed: {allowed})")
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: {key}: expected a mapping, got {_kind(value)}")
        return build_from(tp, value, where, f"{key}.")  # type: ignore[arg-type]
    if origin in (Mapping, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: {key}: expected a mapping, got {_kind(value)}")
        return {str(k): _coerce(args[1], v, where, f"{key}.{k}") for k, v in value.items()}
    if origin is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: {key}: expected a list, got {_kind(value)}")
        return tuple(_coerce(args[0], v, where, f"{key}[{i}]") for i, v in enumerate(value))
    return _scalar(tp, value, where, key)


def _scalar(tp: Any, value: Any, where: str, key: str) -> Any:
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
    }
    if tp not in ok:
        raise TypeError(f"config type {tp!r} is not supported by the loader")
    if not ok[tp]:
        raise ConfigError(f"{where}: {key}: expected {tp.__name__}, got {_kind(value)} {value!r}")
    if tp is str and (bad := UNSAFE_OR_NEWLINE.search(value)):
        shown = printable(bad.group(), newlines=False)
        raise ConfigError(
            f"{where}: {key}: holds the control character {shown}; "
            "write it without control, bidi or newline characters"
        )
    return _finite(float(value), where, key) if tp is float else value


def _finite(value: Any, where: str, key: str) -> Any:
    """`value`, unless it is a float NaN or infinity (YAML's .nan, .inf)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: {key}: must be a finite number, got {value}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
