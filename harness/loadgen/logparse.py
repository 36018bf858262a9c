"""Parse LoadGen's detail log (its `:::MLLOG` JSON lines) into the numbers a result needs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ResultError

_PREFIX = ":::MLLOG "
PERCENTILES = {
    "p50": "50.00",
    "p90": "90.00",
    "p95": "95.00",
    "p97": "97.00",
    "p99": "99.00",
    "p999": "99.90",
}


@dataclass(frozen=True, kw_only=True)
class DetailLog:
    """What LoadGen logged: the last value of every key, plus its errors and warnings."""

    values: Mapping[str, Any]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    def get(self, key: str, default: Any = None) -> Any:
        """The logged value of `key`, or `default` when LoadGen did not log it."""
        return self.values.get(key, default)


def parse_detail_lines(lines: Iterable[str], source: str = "<lines>") -> DetailLog:
    """Parse detail-log lines; a malformed `:::MLLOG` line is an error naming its number."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    warnings: list[str] = []
    reasons: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.startswith(_PREFIX):
            continue
        try:
            entry = json.loads(line[len(_PREFIX) :])
            key, value = entry["key"], entry["value"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ResultError(f"{source}:{number}: not a valid :::MLLOG line") from None
        meta = entry.get("metadata") or {}
        if meta.get("is_error") or key == "error_runtime":
            errors.append(f"{key}: {value}")
        elif meta.get("is_warning"):
            warnings.append(f"{key}: {value}")
        if key == "result_invalid_reason":
            reasons.append(str(value).strip())
        values[key] = value
    if reasons:
        values["result_invalid_reason"] = reasons
    return DetailLog(values=values, errors=tuple(errors), warnings=tuple(warnings))


def parse_detail_log(path: Path) -> DetailLog:
    """Read and parse `mlperf_log_detail.txt`."""
    try:
        with path.open(encoding="utf-8") as handle:
            return parse_detail_lines(handle, str(path))
    except FileNotFoundError:
        raise ResultError(f"{path}: LoadGen wrote no detail log; the run did not start") from None


def latency_percentiles_ns(log: DetailLog) -> dict[str, int | None]:
    """p50…p99.9 latencies in ns, and LoadGen's early-stopping p90 estimate (SingleStream)."""
    out: dict[str, int | None] = {
        name: _int_or_none(log.get(f"result_{pct}_percentile_latency_ns"))
        for name, pct in PERCENTILES.items()
    }
    out["mean"] = _int_or_none(log.get("result_mean_latency_ns"))
    out["min"] = _int_or_none(log.get("result_min_latency_ns"))
    out["max"] = _int_or_none(log.get("result_max_latency_ns"))
    out["early_stopping_p90"] = _int_or_none(log.get("early_stopping_latency_ss"))
    return out


def effective_settings(log: DetailLog) -> dict[str, Any]:
    """The settings LoadGen actually used (its `effective_*` keys, prefix removed)."""
    prefix = "effective_"
    return {k[len(prefix) :]: v for k, v in sorted(log.values.items()) if k.startswith(prefix)}


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
