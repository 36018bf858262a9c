"""The manifest checked against the Kubernetes API's JSON schema: offline and strict."""

from __future__ import annotations

import json
import re
from typing import Any, Final

import yaml

from harness.errors import ConfigError
from harness.fleet.k8s.extra import one_line, require

# The schema checked against: the API level of the pinned client (kubernetes==37.0.2 is
# generated from OpenAPI release-1.37), so the schema knows every field the models can set.
KUBERNETES_VERSION: Final = "1.37.0"
# The oldest cluster the Job is meant for: every field build_job sets is GA there (the newest,
# backoffLimitPerIndex, since 1.33); the tests validate against its schema too.
OLDEST_KUBERNETES_VERSION: Final = "1.33.0"


def validate_manifest(
    text: str, *, where: str, kubernetes_version: str = KUBERNETES_VERSION
) -> None:
    """Check a manifest against the API schema of `kubernetes_version`, offline and strictly.

    Raises:
        ConfigError: one line naming `where`, the field's path and what is wrong with it.
    """
    kv = require("kubernetes_validate", "kubernetes-validate")  # untyped: no py.typed
    _check_version(kubernetes_version, kv.utils.all_versions())
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not YAML ({one_line(str(exc))})") from None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(key), str) for key in ("apiVersion", "kind")
    ):
        raise ConfigError(f"{where}: not a Kubernetes object (it needs apiVersion and kind)")
    try:
        kv.validate(data, kubernetes_version, strict=True)
    except kv.ValidationError as exc:
        raise ConfigError(f"{where}: {_describe(exc)} (Kubernetes {exc.version} schema)") from None
    except kv.SchemaNotFoundError as exc:
        raise ConfigError(f"{where}: {exc.message}; is its apiVersion right?") from None


def _check_version(version: str, known: list[str]) -> None:
    def minor(text: str) -> tuple[int, ...]:
        match = re.fullmatch(r"v?([0-9]+)\.([0-9]+)(\.[0-9]+)?", text)
        return (int(match[1]), int(match[2])) if match else ()

    if not minor(known[0]) <= minor(version) <= minor(known[-1]) or not minor(version):
        raise ConfigError(
            f"Kubernetes version {version!r}: kubernetes-validate has the schemas of "
            f"{known[0]} to {known[-1]}; pick one of those"
        )


def _describe(exc: Any) -> str:
    """`path: problem` for a schema error; an unknown field is named in the path itself."""
    if exc.validator == "additionalProperties" and isinstance(exc.instance, dict):
        known = exc.schema.get("properties", {})
        unknown = sorted(str(key) for key in exc.instance if key not in known)
        if unknown:
            return f"{field_path([*exc.absolute_path, unknown[0]])}: unknown field"
    return f"{field_path(exc.absolute_path) or '(the document)'}: {one_line(exc.message)}"


def field_path(parts: Any) -> str:
    """A JSON path as people write it: spec.containers[0].resources.limits["nvidia.com/gpu"]."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(str(part))}]"
    return text
