"""Parse LoadGen's detail log (its `:::MLLOG` JSON lines) into the numbers a result needs.

A log may come from a tree or a bundle we did not write: it is read as a regular file of at
most MAX_LOG_BYTES of UTF-8 (harness.foreign), each value holds only finite numbers in the
64-bit range (harness.strictjson), and a number read from it must be one: every refusal is a
ResultError naming the file (and line or key).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import ResultError
from harness.foreign import MAX_LOG_BYTES, read_text
from harness.records.generation import TokenEarlyStopping
from harness.strictjson import INT_MAX, INT_MIN, bad_number

_PREFIX = ":::MLLOG "
PERCENTILES = {
    "p50": "50.00",
    "p90": "90.00",
    "p95": "95.00",
    "p97": "97.00",
    "p99": "99.00",
    "p999": "99.90",
}


# Warnings LoadGen logs that only inform: its trace buffer for a thread grew ("Logging
# allocation detected: tid: ... reserved_entries: ... max_entries: ..."), which the busiest
# published systems log by the dozen.
INFORMATIONAL: tuple[str, ...] = ("Logging allocation detected",)


@dataclass(frozen=True, kw_only=True)
class DetailLog:
    """What LoadGen logged: the last value of every key, plus its errors and warnings.

    `notes` are what LoadGen flags as warnings but only informs of (INFORMATIONAL): they
    say nothing about the result and are counted apart from the warnings.
    """

    values: Mapping[str, Any]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...] = ()
    source: str = field(default="<lines>", compare=False)  # the file errors name

    def get(self, key: str, default: Any = None) -> Any:
        """The logged value of `key`, or `default` when LoadGen did not log it."""
        return self.values.get(key, default)


def parse_detail_lines(lines: Iterable[str], source: str = "<lines>") -> DetailLog:
    """Parse detail-log lines; a malformed `:::MLLOG` line is an error naming its number."""
    values: dict[str, Any] = {}
    errors: list[str] = []
    warnings: list[str] = []
    notes: list[str] = []
    reasons: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.startswith(_PREFIX):
            continue
        try:
            entry = json.loads(line[len(_PREFIX) :])
            key, value = entry["key"], entry["value"]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError):
            raise ResultError(f"{source}:{number}: not a valid :::MLLOG line") from None
        _check_numbers(key, value, f"{source}:{number}")
        meta = entry.get("metadata") or {}
        if meta.get("is_error") or key == "error_runtime":
            errors.append(f"{key}: {value}")
        elif meta.get("is_warning"):
            informational = isinstance(value, str) and value.startswith(INFORMATIONAL)
            (notes if informational else warnings).append(f"{key}: {value}")
        if key == "result_invalid_reason":
            reasons.append(str(value).strip())
        values[key] = value
    if reasons:
        values["result_invalid_reason"] = reasons
    return DetailLog(
        values=values,
        errors=tuple(errors),
        warnings=tuple(warnings),
        notes=tuple(notes),
        source=source,
    )


def _check_numbers(key: object, value: object, where: str) -> None:
    found = bad_number(value)
    if found is not None:
        at, problem = found
        name = key if at == "the value" else f"{key}{'' if at[0] == '[' else '.'}{at}"
        raise ResultError(
            f"{where}: {str(name)[:80]} {problem}; LoadGen writes no such value: the log was "
            "edited or damaged"
        )


def parse_detail_log(path: Path) -> DetailLog:
    """Read and parse `mlperf_log_detail.txt` (a regular file, bounded; see the module)."""
    if not os.path.lexists(path):
        raise ResultError(f"{path}: LoadGen wrote no detail log; the run did not start")
    text = read_text(path, ResultError, MAX_LOG_BYTES)
    return parse_detail_lines(text.splitlines(), str(path))


def latency_percentiles_ns(log: DetailLog) -> dict[str, int | None]:
    """p50…p99.9 latencies in ns, and LoadGen's early-stopping estimates.

    MultiStream's are per query (LoadGen's ``per_query`` keys), as MLPerf scores it; its
    early-stopping p99 estimate is logged as 0 when early stopping was not met (None here).
    """
    query = "_per_query" if log.get("result_50.00_percentile_per_query_latency_ns") else ""
    stat = "_query" if query else ""
    out: dict[str, int | None] = {
        name: logged_int(log, f"result_{pct}_percentile{query}_latency_ns")
        for name, pct in PERCENTILES.items()
    }
    out["mean"] = logged_int(log, f"result_mean{stat}_latency_ns")
    out["min"] = logged_int(log, f"result_min{stat}_latency_ns")
    out["max"] = logged_int(log, f"result_max{stat}_latency_ns")
    out["early_stopping_p90"] = logged_int(log, "early_stopping_latency_ss")
    out["early_stopping_p99"] = logged_int(log, "early_stopping_latency_ms") or None
    return out


def logged_int(log: DetailLog, key: str) -> int | None:
    """A whole number LoadGen logged under `key` (None if absent); ResultError if not one."""
    value = log.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and INT_MIN <= value <= INT_MAX:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ResultError(
        f"{log.source}: {key} is {_shown(value)}, not a whole number in the 64-bit range; {_EDITED}"
    )


def logged_float(log: DetailLog, key: str) -> float | None:
    """A number LoadGen logged under `key` (None if absent); ResultError if not a finite one."""
    value = log.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
    raise ResultError(f"{log.source}: {key} is {_shown(value)}, not a number; {_EDITED}")


_EDITED = "LoadGen writes one: the log was edited or damaged"


def _shown(value: object) -> str:
    return f"{value!r:.60}"


def samples_per_second(log: DetailLog) -> float | None:
    """Samples/s: Offline's, Server's completed rate, SingleStream's QPS, or MultiStream's.

    SingleStream has one sample per query; MultiStream's is its samples per query over the
    mean query latency. Here, beside the log it reads, so that result building and bundle
    verification (which checks result.json against the log) derive it the same way.
    """
    for key in ("result_samples_per_second", "result_completed_samples_per_sec"):
        if log.get(key) is not None:
            return logged_float(log, key)
    per_query = logged_float(log, "effective_samples_per_query")
    mean_ns = logged_float(log, "result_mean_query_latency_ns")
    if log.get("effective_scenario") == "MultiStream" and per_query and mean_ns:
        return per_query * 1e9 / mean_ns
    return logged_float(log, "result_qps_with_loadgen_overhead")


def effective_settings(log: DetailLog) -> dict[str, Any]:
    """The settings LoadGen actually used (its `effective_*` keys, prefix removed)."""
    prefix = "effective_"
    return {k[len(prefix) :]: v for k, v in sorted(log.values.items()) if k.startswith(prefix)}


@dataclass(frozen=True, kw_only=True)
class TokenFigures:
    """LoadGen's token figures (use_token_latencies): tokens/s, TTFT and TPOT percentiles (ns).

    Offline logs only ``result_tokens_per_second``; the others log
    ``result_completed_tokens_per_second`` and the ``result_first_token_*`` and
    ``result_time_per_output_token_*`` percentiles. None where LoadGen logged none.
    """

    tokens_per_second: float | None
    ttft_ns: Mapping[str, int | None] | None
    tpot_ns: Mapping[str, int | None] | None


TOKEN_PERCENTILES = ("p50", "p90", "p99")
# LoadGen 6.0.17's token early-stopping text: "* Early stopping 90.0th percentile estimate: N"
_TOKEN_ESTIMATE = re.compile(r"Early stopping (90|99)\.0th percentile estimate: (\d{1,19})\b")
MAX_EARLY_STOPPING_CHARS = 1000  # LoadGen writes under 300


def token_early_stopping(log: DetailLog, which: str) -> TokenEarlyStopping | None:
    """``early_stopping_{which}_result`` (which: ttft or tpot); None where absent or empty."""
    key = f"early_stopping_{which}_result"
    value = log.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_EARLY_STOPPING_CHARS:
        raise ResultError(f"{log.source}: {key} is {_shown(value)}, not LoadGen's text; {_EDITED}")
    estimates = {int(p): int(ns) for p, ns in _TOKEN_ESTIMATE.findall(value)}
    return TokenEarlyStopping(
        text=" ".join(value.split()), p90_ns=estimates.get(90), p99_ns=estimates.get(99)
    )


def token_figures(log: DetailLog) -> TokenFigures | None:
    """The token figures of a run with token latencies; None for a run without them."""
    if log.get("requested_use_token_latencies") is not True:
        return None
    return logged_token_figures(log)


def logged_token_figures(log: DetailLog) -> TokenFigures:
    """The token figures the log states, whatever it says of use_token_latencies (None: absent).

    A published log is read so: what it states is what it ranks by.
    """
    rate = logged_float(log, "result_tokens_per_second")
    if rate is None:
        rate = logged_float(log, "result_completed_tokens_per_second")
    ttft = {
        p: logged_int(log, f"result_first_token_{PERCENTILES[p]}_percentile_latency_ns")
        for p in TOKEN_PERCENTILES
    }
    tpot = {
        p: logged_int(log, f"result_time_per_output_token_{PERCENTILES[p]}_percentile_ns")
        for p in TOKEN_PERCENTILES
    }
    return TokenFigures(
        tokens_per_second=rate,
        ttft_ns=None if all(v is None for v in ttft.values()) else ttft,
        tpot_ns=None if all(v is None for v in tpot.values()) else tpot,
    )
