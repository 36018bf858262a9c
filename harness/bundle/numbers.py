"""A result.json's numbers against the LoadGen detail log they were read from.

result.json takes its verdict, throughput, latencies and settings from mlperf_log_detail.txt
(harness.execution.recording); reading the log again tells an edited number from a measured one,
even in a bundle whose manifest was made after the edit. Numbers that have no source in the
log (power, utilization) are protected by the manifest's sha256 alone.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ResultError
from harness.foreign import read_text
from harness.records.layout import DETAIL_LOG
from harness.records.loadgen_log import (
    DetailLog,
    effective_settings,
    latency_percentiles_ns,
    logged_float,
    logged_int,
    parse_detail_log,
    samples_per_second,
)
from harness.strictjson import JsonObject, bad_number

_ABSENT = object()


@dataclass(frozen=True, kw_only=True)
class Discrepancy:
    """A result.json key whose value is not the one LoadGen logged."""

    key: str
    recorded: object
    logged: object

    def describe(self) -> str:
        """`samples_per_second is 9999.0 but the log says 31.77`."""
        return f"{self.key} is {_show(self.recorded)} but {DETAIL_LOG} logs {_show(self.logged)}"


def logged_values(result: JsonObject, log: DetailLog) -> dict[str, object]:
    """What each log-derived key of result.json must hold, by dotted key."""
    values: dict[str, object] = {
        "valid": log.get("result_validity") == "VALID" and not _token_problems(result),
        "samples_per_second": samples_per_second(log),
        "qps_with_loadgen_overhead": logged_float(log, "result_qps_with_loadgen_overhead"),
        "qps_without_loadgen_overhead": logged_float(log, "result_qps_without_loadgen_overhead"),
        "loadgen_errors": list(log.errors),
    }
    values.update({f"latency_ns.{k}": v for k, v in latency_percentiles_ns(log).items()})
    values.update({f"settings.{k}": v for k, v in effective_settings(log).items()})
    if isinstance(result.get("server"), Mapping):
        values.update(_server_values(log))
    return values


def discrepancies(result: JsonObject, log: DetailLog) -> list[Discrepancy]:
    """Every log-derived value of result.json that differs from the log; keys it lacks are skipped.

    Submission validity needs more than the log (the profile, the accuracy check), but the
    log bounds it: no INVALID run and no run with LoadGen errors is submission-valid.
    """
    found: list[Discrepancy] = []
    for key, logged in logged_values(result, log).items():
        recorded = _lookup(result, key)
        if recorded is not _ABSENT and not _same(recorded, logged):
            found.append(Discrepancy(key=key, recorded=recorded, logged=logged))
    loadgen_ok = log.get("result_validity") == "VALID" and not log.errors
    if result.get("submission_valid") is True and not loadgen_ok:
        found.append(Discrepancy(key="submission_valid", recorded=True, logged=False))
    return found


def check_run(result_path: Path) -> list[Discrepancy]:
    """The discrepancies of a result.json with the detail log beside it.

    A result.json that is not a JSON object has no numbers to compare: its sha256 speaks.

    Raises:
        ResultError: no detail log beside it (a result whose numbers have no source cannot
            be vouched for), the detail log is not one LoadGen wrote, or result.json is not
            UTF-8 or holds a number JSON has not (NaN, Infinity, 1e999), named by its key.
    """
    log_path = result_path.with_name(DETAIL_LOG)
    if not os.path.lexists(log_path):
        raise ResultError(
            f"{result_path}: no {DETAIL_LOG} beside it; a result without the LoadGen log its "
            "numbers were read from cannot be checked: bundle the whole run directory"
        )
    result = _result_data(result_path)
    if result is None:
        return []
    return discrepancies(result, parse_detail_log(log_path))


def _result_data(path: Path) -> JsonObject | None:
    """result.json's object (bounded, regular file), None if not one; bad numbers refused."""
    text = read_text(path, ResultError)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    found = bad_number(data)
    if found is not None:
        key, problem = found
        raise ResultError(
            f"{path}: {key} {problem}; beyond-tops writes no such value: the file was edited"
        )
    return data if isinstance(data, dict) else None


def describe_all(found: list[Discrepancy]) -> str:
    """The first discrepancy in words, and how many more there are, by key."""
    text = found[0].describe()
    if len(found) > 1:
        text += f" (and {len(found) - 1} more: {', '.join(d.key for d in found[1:])})"
    return text


def _token_problems(result: JsonObject) -> bool:
    """Whether a generative run's token checks made it INVALID (the tokens check redoes them)."""
    generation = result.get("generation")
    return isinstance(generation, Mapping) and bool(generation.get("token_problems"))


def _server_values(log: DetailLog) -> dict[str, object]:
    met, early = log.get("result_perf_constraints_met"), log.get("early_stopping_met")
    return {
        "server.scheduled_samples_per_second": logged_float(
            log, "result_scheduled_samples_per_sec"
        ),
        "server.completed_samples_per_second": logged_float(
            log, "result_completed_samples_per_sec"
        ),
        "server.latency_bound_ns": logged_int(log, "effective_target_latency_ns"),
        "server.overlatency_queries": logged_int(log, "result_overlatency_query_count"),
        "server.latency_constraint_met": None if met is None else bool(met),
        "server.early_stopping_met": None if early is None else bool(early),
    }


def _lookup(result: JsonObject, key: str) -> object:
    head, _, rest = key.partition(".")
    value = result.get(head, _ABSENT)
    if not rest or value is _ABSENT:
        return value
    return value.get(rest, _ABSENT) if isinstance(value, Mapping) else _ABSENT


def _same(recorded: object, logged: object) -> bool:
    """Equal, with bools told from numbers and floats compared to 1e-9 (JSON round trips)."""
    if isinstance(recorded, bool) or isinstance(logged, bool):
        return type(recorded) is type(logged) and recorded == logged
    if isinstance(recorded, int) and isinstance(logged, int):
        return recorded == logged
    if isinstance(recorded, (int, float)) and isinstance(logged, (int, float)):
        return math.isclose(recorded, logged, rel_tol=1e-9, abs_tol=1e-12)
    return recorded == logged


def _show(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
