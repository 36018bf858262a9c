"""compare --fail-if-slower's rule with exact numbers: threshold, direction, and the noise."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

import pytest

from harness.analysis.compare import Cell, Comparison, Row
from harness.analysis.regression import judge, parse_threshold
from harness.analysis.welch import ratio_interval
from harness.cli import main
from harness.errors import ConfigError, ResultError
from harness.records.metrics import ES_P90, THROUGHPUT, Metric
from harness.report.regression import regression_line


def _comparison(metric: Metric, base: Sequence[float], new: Sequence[float]) -> Comparison:
    """Two sides on one headline, their cells as harness.analysis.compare makes them."""
    first = statistics.median(base)
    value = statistics.median(new)
    cells = (
        Cell(values=tuple(base), value=first, ratio=1.0, p_value=None, significant=None),
        Cell(
            values=tuple(new),
            value=value,
            ratio=value / first,
            p_value=None,
            significant=None,
            interval=ratio_interval(base, new),
        ),
    )
    return Comparison(
        labels=("base", "new"),
        info=(),
        rows=(Row(metric=metric, cells=cells, headline=True),),
        problems=(),
        hardware=(),
        environment=(),
        alpha=0.05,
        scenarios=("Offline", "Offline"),
    )


@pytest.mark.parametrize(
    ("text", "fraction"),
    [("5%", 0.05), ("0.05", 0.05), (" 12.5% ", 0.125), (".1", 0.1), ("0", 0.0), ("99.9%", 0.999)],
)
def test_a_threshold_is_a_percentage_or_a_fraction(text: str, fraction: float) -> None:
    assert parse_threshold(text) == pytest.approx(fraction)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "-5%",
        "nan",
        "inf",
        "100%",
        "1",
        "5",
        "1e-2",
        "5%%",
        "0x5",
        "5 %",
        chr(0x665) + "%",  # an Arabic-Indic five
        "1.5",
        "x" * 99,
    ],
)
def test_hostile_thresholds_are_refused_in_one_line(text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_threshold(text)
    message = str(refused.value)
    assert message.startswith("--fail-if-slower ") and "\n" not in message
    assert "(5%) or a fraction below 1 (0.05)" in message
    assert len(message) < 200


def test_a_bare_number_above_one_suggests_the_percentage() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 5%\?"):
        parse_threshold("5")


def test_a_clear_slowdown_beyond_the_threshold_and_the_noise_is_slower() -> None:
    verdict = judge(_comparison(THROUGHPUT, [100, 101, 99], [80, 81, 79]), 0.05)
    assert verdict.ratio == pytest.approx(0.8)
    assert verdict.limit == pytest.approx(0.95)
    assert verdict.noise == "interval" and verdict.interval_beyond is True
    assert verdict.slower
    line = regression_line(verdict)
    assert line.startswith("gate: SLOWER: throughput NEW/BASE 0.800x, beyond the 5% threshold")
    assert "(slower below 0.950x)" in line and "wholly beyond 0.950x" in line


def test_a_slowdown_past_the_threshold_but_inside_the_noise_passes() -> None:
    # ratio 0.9 is past 0.95, but trials this spread cannot tell it from no change
    verdict = judge(_comparison(THROUGHPUT, [100, 120, 80], [90, 110, 70]), 0.05)
    assert verdict.ratio == pytest.approx(0.9)
    assert verdict.noise == "interval" and verdict.interval_beyond is False
    assert not verdict.slower
    assert "not wholly beyond 0.950x" in regression_line(verdict)


def test_a_small_significant_slowdown_within_the_threshold_passes() -> None:
    verdict = judge(_comparison(THROUGHPUT, [100, 100.1, 99.9], [97, 97.1, 96.9]), 0.05)
    assert verdict.interval_beyond is False and not verdict.slower
    assert "within the 5% threshold" in regression_line(verdict)


def test_latency_is_slower_when_it_rises() -> None:
    base = [1_000_000, 1_010_000, 990_000]
    slower = judge(_comparison(ES_P90, base, [1_200_000, 1_210_000, 1_190_000]), 0.05)
    assert slower.slower and slower.limit == pytest.approx(1.05)
    assert "(slower above 1.050x)" in regression_line(slower)
    faster = judge(_comparison(ES_P90, base, [800_000, 810_000, 790_000]), 0.05)
    assert not faster.slower


def test_one_value_a_side_the_threshold_alone_decides_and_says_so() -> None:
    slower = judge(_comparison(THROUGHPUT, [100], [90]), 0.05)
    assert slower.noise == "unknown" and slower.interval is None and slower.slower
    assert "noise: unknown" in regression_line(slower)
    assert not judge(_comparison(THROUGHPUT, [100], [97]), 0.05).slower


def test_an_unbounded_interval_is_too_noisy_to_call_slower() -> None:
    verdict = judge(_comparison(THROUGHPUT, [1, 100], [10, 11]), 0.05)
    assert verdict.noise == "unbounded" and not verdict.slower
    assert "unbounded" in regression_line(verdict)


def test_nothing_to_judge_is_an_error_not_a_pass() -> None:
    empty = _comparison(THROUGHPUT, [100], [90])
    no_value = Row(
        metric=THROUGHPUT,
        cells=(
            empty.rows[0].cells[0],
            Cell(values=(), value=None, ratio=None, p_value=None, significant=None),
        ),
        headline=True,
    )
    with pytest.raises(ResultError, match="new has no value of throughput"):
        judge(dataclasses.replace(empty, rows=(no_value,)), 0.05)


@pytest.mark.parametrize("value", ["-5%", "abc", "150%", "5"])
def test_the_cli_refuses_a_hostile_threshold_before_reading_anything(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "no/such/a", "no/such/b", f"--fail-if-slower={value}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("error: --fail-if-slower ")


def test_the_gate_needs_exactly_base_and_new(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "a", "b", "c", "--fail-if-slower", "5%"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "exactly two results, BASE then NEW (got 3)" in line
