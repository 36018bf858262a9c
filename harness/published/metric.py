"""A published result's MLPerf metric in its round: the catalogue names it, LoadGen's logs state it.

Which metric judges a scenario in a round is the catalogue's (harness.records.metrics:
round_headline): Server's scheduled rate up to v4.0 and its completed rate from v4.1,
SingleStream's p90 before v2.0 and its early-stopping estimate since. This module only knows
where LoadGen's logs state each of them: the detail log's key, checked against (or, where the
detail log lacks it, taken from) the summary's line. An LLM's result (one whose detail log
states tokens/s) is judged by tokens/s, as MLPerf reports it (harness.records.genmetrics),
with its TTFT and TPOT percentiles read beside (PublishedGeneration).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from harness.config import ScenarioName
from harness.errors import ResultError
from harness.records.generation import TokenPercentiles
from harness.records.genmetrics import GENERATIVE_SCENARIOS
from harness.records.layout import SUMMARY_LOG
from harness.records.loadgen_log import (
    DetailLog,
    latency_percentiles_ns,
    logged_token_figures,
)
from harness.records.metrics import (
    COMPLETED,
    ES_P90,
    ES_P99,
    P90,
    P99,
    SCHEDULED,
    THROUGHPUT,
    TOKENS,
    Metric,
    round_headline,
    scenario_metrics,
)
from harness.records.published import MainMetric, PublishedGeneration

LATENCY = "latency_ns."  # a latency's path in published.json: latency_ns.<percentile>
# Where LoadGen's logs state each metric a round judges by: (detail-log key, summary line).
# MultiStream's percentiles are per query. A summary writes a percentile "90th" (LoadGen 4)
# or "90.0th" (LoadGen 5 on), its early-stopping estimates after " * ".
LOGGED: Mapping[str, tuple[str, str]] = {
    THROUGHPUT.key: ("result_samples_per_second", "Samples per second"),
    COMPLETED.key: ("result_completed_samples_per_sec", "Completed samples per second"),
    SCHEDULED.key: ("result_scheduled_samples_per_sec", "Scheduled samples per second"),
    P90.key: ("result_90.00_percentile_latency_ns", "90th percentile latency (ns)"),
    P99.key: ("result_99.00_percentile_per_query_latency_ns", "99th percentile latency (ns)"),
    ES_P90.key: ("early_stopping_latency_ss", "Early stopping 90th percentile estimate"),
    ES_P99.key: ("early_stopping_latency_ms", "Early stopping 99th percentile estimate"),
}
# An LLM's tokens/s per scenario: Offline's "Tokens per second", the others' completed rate.
LOGGED_TOKENS: Mapping[str, tuple[str, str]] = {
    "Offline": ("result_tokens_per_second", "Tokens per second"),
    "Server": ("result_completed_tokens_per_second", "Completed tokens per second"),
    "SingleStream": ("result_completed_tokens_per_second", "Completed tokens per second"),
}
# The p99 TTFT and TPOT as the summary prints them, checked against the detail log's.
_TOKEN_LINES = (
    ("ttft_ns", "99.00 percentile first token latency (ns)"),
    ("tpot_ns", "99.00 percentile time to output token (ns)"),
)
_DETAIL_DIGITS = 6  # LoadGen's detail log writes a float with 6 significant digits


def main_metric(
    scenario: ScenarioName,
    mlperf_version: str | None,
    log: DetailLog,
    summary: str | None,
    detail: Path,
    warnings: list[str],
) -> MainMetric:
    """The round's metric of the scenario from the detail log, checked against the summary.

    Where LoadGen logged no early-stopping estimate the scenario's fallback (the percentile
    itself) stands in, with a warning. ResultError naming the detail log where neither log
    states the metric, or the round judged the scenario by a metric the catalogue lacks.
    """
    tokens = LOGGED_TOKENS.get(scenario)
    if tokens is not None and scenario in GENERATIVE_SCENARIOS and log.get(tokens[0]) is not None:
        label = f"{scenario} {TOKENS.label}"
        found = _stated(TOKENS, tokens, label, log, summary, detail, warnings)
        if found is not None:
            return found
    try:
        chosen = round_headline(scenario, mlperf_version)
    except ResultError as exc:
        raise ResultError(f"{detail}: {exc}") from None
    found = _stated(
        chosen, LOGGED[chosen.key], f"{scenario} {chosen.label}", log, summary, detail, warnings
    )
    fallback = scenario_metrics(scenario).fallback
    if found is None and fallback is not None and chosen != fallback:
        warnings.append(
            f"{detail}: no {LOGGED[chosen.key][0]} (LoadGen logged no early-stopping "
            f"estimate); the {fallback.label} stands in"
        )
        chosen = fallback
        found = _stated(
            chosen, LOGGED[chosen.key], f"{scenario} {chosen.label}", log, summary, detail, warnings
        )
    if found is None:
        key, line = LOGGED[chosen.key]
        hint = "; the round is unknown: give --mlperf-version" if mlperf_version is None else ""
        raise ResultError(
            f"{detail}: no {key} (nor '{line}' in the summary); no {scenario} {chosen.label}" + hint
        )
    return found


def generation(
    metric: MainMetric, log: DetailLog, summary: str | None, warnings: list[str]
) -> PublishedGeneration | None:
    """An LLM's token figures: its tokens/s metric, TTFT and TPOT; None for any other result.

    The p99 TTFT and TPOT are checked against the summary's lines (a warning where they differ).
    """
    if metric.name != TOKENS.published:
        return None
    figures = logged_token_figures(log)
    latencies: dict[str, TokenPercentiles | None] = {}
    for name, line in _TOKEN_LINES:
        found = getattr(figures, name)
        latencies[name] = None if found is None else TokenPercentiles(**found)
        printed = _summary_value(summary, line)
        logged = None if found is None else found["p99"]
        if printed is not None and logged is not None and not _agree(logged, *printed):
            warnings.append(f"{SUMMARY_LOG} says {line} {printed[0]:.0f}; the detail log {logged}")
    return PublishedGeneration(
        tokens_per_second=metric.value, ttft_ns=latencies["ttft_ns"], tpot_ns=latencies["tpot_ns"]
    )


def _stated(
    chosen: Metric,
    logged: tuple[str, str],
    label: str,
    log: DetailLog,
    summary: str | None,
    detail: Path,
    warnings: list[str],
) -> MainMetric | None:
    """The metric as the detail log (else the summary) states it; None where neither does.

    `logged` is where LoadGen's logs state it: the detail log's key and the summary's line.
    """
    key, line = logged
    value = log.get(key) if chosen is TOKENS else _detail_value(chosen, log)
    printed = _summary_value(summary, line)
    stated = None if printed is None else printed[0]
    if value is None and stated is None:
        return None
    raw = value if value is not None else stated
    number = _number(raw)
    if not math.isfinite(number) or number < 0:
        raise ResultError(f"{detail}: {label} is {raw!r}, not a number LoadGen writes")
    if value is None:
        warnings.append(f"{detail}: no {key}; {label} taken from {SUMMARY_LOG}'s '{line}'")
    elif printed is not None and not _agree(number, *printed, rounded=_rounded(chosen, value)):
        warnings.append(f"{SUMMARY_LOG} says {line} {printed[0]:.12g}; the detail log {number:g}")
    name = chosen.published or chosen.key
    return MainMetric(name=name, label=label, value=number, unit=chosen.value_unit)


def _rounded(chosen: Metric, value: object) -> bool:
    """Whether the detail log wrote the number to 6 significant digits.

    Any float does, and a rate (a double) that came out whole: v5.1's llama3.1-8b logs
    `"result_tokens_per_second": 142508`, 142,508 tokens/s to 6 digits. A latency in ns is a
    whole number, exact.
    """
    rate = chosen.value_unit.endswith("/s") and not isinstance(value, bool)
    return isinstance(value, float) or (rate and isinstance(value, int))


def _detail_value(chosen: Metric, log: DetailLog) -> object:
    """A latency from LoadGen's percentiles (per query for MultiStream), a rate as logged."""
    path = chosen.published or ""
    if path.startswith(LATENCY):
        return latency_percentiles_ns(log)[path.removeprefix(LATENCY)]
    return log.get(LOGGED[chosen.key][0])


def _number(raw: object) -> float:
    try:
        return float(raw)  # type: ignore[arg-type]  # a logged value, whatever it holds
    except (TypeError, ValueError):
        return math.nan


def _summary_value(text: str | None, line: str) -> tuple[float, float] | None:
    """The number on the summary's `line` ("90th" matching "90.0th" too), or None.

    With it, half a unit of its last printed digit: the rounding the summary may carry.
    """
    words = re.escape(line).replace(r"th\ percentile", r"(?:\.0)?th\ percentile")
    found = re.search(rf"^(?:\s*\*)?\s*{words}\s*:\s*([0-9.eE+\-]+)\s*$", text or "", re.M)
    if not found:
        return None
    printed = found.group(1)
    try:
        value = float(printed)
    except ValueError:
        return None
    mantissa, _, exponent = printed.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return value, 0.5 * 10.0 ** (int(exponent or 0) - decimals)  # float() read the exponent


def _agree(logged: float, printed: float, half_unit: float, *, rounded: bool = False) -> bool:
    """Whether the detail log's number rounds to what the summary printed (within 1e-9).

    A `rounded` number (a float, which the detail log writes to 6 significant digits) may be
    the coarser of the two: 50795.6 there is 50795.57 in the summary.
    """
    if rounded and logged:
        digits = math.floor(math.log10(abs(logged))) + 1 - _DETAIL_DIGITS
        half_unit = max(half_unit, 0.5 * 10.0**digits)
    return abs(logged - printed) <= half_unit + 1e-9 * max(abs(printed), 1.0)
