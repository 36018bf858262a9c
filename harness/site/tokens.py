"""An LLM leaderboard row's token columns: p99 TTFT and TPOT with their limits, checks, accuracy.

A generative board ranks by tokens/s (harness.site.boards); beside it each row shows the p99
time to first token and time per output token (the catalogue's rows, medians over a group's
runs, ms) against the limits the run was judged by, the token checks' verdict (LoadGen's
token figures against the SUT's own counts, harness.analysis.tokens) and the accuracy against
FP32 (token agreement). A published record shows its logged TTFT and TPOT; the harness ran
neither check on it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from harness.analysis.values import metric_values, published_value_of
from harness.records.group import Group
from harness.records.metrics import TPOT_P99, TTFT_P99, Metric
from harness.records.published import PublishedResult
from harness.records.result import RunResult

NOT_RUN = "not run here (a published record)"


@dataclass(frozen=True, kw_only=True)
class TokenCells:
    """What a generative row shows beside its tokens/s."""

    ttft_p99_ms: float | None
    ttft_limit_ms: float | None
    tpot_p99_ms: float | None
    tpot_limit_ms: float | None
    checks: str  # "passed", "FAILED: ...", or why there is no verdict
    accuracy: str  # "passed: 95.6 % agreement with FP32", "NOT MEASURABLE: ...", "n/a"

    @property
    def checks_failed(self) -> bool:
        """Whether the token checks found a problem."""
        return self.checks.startswith("FAILED")


def token_cells(side: Group | PublishedResult) -> TokenCells:
    """A group's or published record's token columns."""
    if isinstance(side, PublishedResult):
        return TokenCells(
            ttft_p99_ms=_published_ms(side, TTFT_P99),
            ttft_limit_ms=None,
            tpot_p99_ms=_published_ms(side, TPOT_P99),
            tpot_limit_ms=None,
            checks=NOT_RUN,
            accuracy="n/a",
        )
    results = side.results
    first = results[0].generation if results else None
    return TokenCells(
        ttft_p99_ms=_median_ms(results, TTFT_P99),
        ttft_limit_ms=_ms(None if first is None else first.ttft_limit_ns),
        tpot_p99_ms=_median_ms(results, TPOT_P99),
        tpot_limit_ms=_ms(None if first is None else first.tpot_limit_ns),
        checks=_checks(results),
        accuracy=_accuracy(results),
    )


def limit_text(value_ms: float | None, limit_ms: float | None) -> str:
    """`12.3 / 100` (the p99 against its limit, ms); `12.3` without one; `n/a` without either."""
    if value_ms is None:
        return "n/a"
    shown = f"{value_ms:.4g}"
    return shown if limit_ms is None else f"{shown} / {limit_ms:g}"


def _checks(results: tuple[RunResult, ...]) -> str:
    problems = [p for r in results if r.generation for p in r.generation.token_problems]
    if any(r.generation is None for r in results) or not results:
        return "n/a"
    if problems:
        return f"FAILED: {problems[0]}" + (f" (+{len(problems) - 1})" if len(problems) > 1 else "")
    return "passed"


def _accuracy(results: tuple[RunResult, ...]) -> str:
    accuracy = results[0].accuracy if results else None
    if accuracy is None:
        return "n/a"
    tokens = accuracy.tokens
    if accuracy.not_measurable is not None or tokens is None:
        return accuracy.verdict
    return f"{accuracy.verdict}: {tokens.agreement * 100:.1f} % token agreement with FP32"


def _median_ms(results: tuple[RunResult, ...], metric: Metric) -> float | None:
    values = metric_values(results, metric)
    return metric.shown(statistics.median(values)) if values else None


def _published_ms(record: PublishedResult, metric: Metric) -> float | None:
    value = published_value_of(record, metric)
    return None if value is None else metric.shown(value)


def _ms(value_ns: int | None) -> float | None:
    return None if value_ns is None else value_ns / 1e6
