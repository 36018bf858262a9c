"""Energy per output token: the arithmetic, a counter wrap, the window's gaps, "not measured".

Also the readers: an older result migrates with the new values null, the spread over trials
covers them, and the capacity peak states them (or why not).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from telemetry_fakes import FIXTURES, StepClock

from harness.analysis.spread import metric_spreads
from harness.records.capacity import Capacity, RateTried
from harness.records.generation import GenerationRecord
from harness.records.result import RunResult
from harness.records.telemetry import SourceSummary, SourceUnavailable
from harness.results.capacity import capacity_lines
from harness.results.migrate import migrate_10_to_11
from harness.results.runfile import load_result
from harness.telemetry.base import SourceCounters, Telemetry
from harness.telemetry.pertoken import TokenSpan, per_token, token_window
from harness.telemetry.rapl import rapl_sources
from harness.telemetry.summary import summarize

S = 1_000_000_000
MAX_RANGE_UJ = 262_143_328_850


def test_per_token_is_energy_over_tokens_and_its_inverse() -> None:
    reasons: dict[str, str] = {}
    # 12.5 J over 2,500 tokens: 5 mJ per token, 200 tokens per joule
    assert per_token(12.5, 2500, reasons) == (5.0, 200.0)
    assert reasons == {}


@pytest.mark.parametrize(
    ("energy_j", "tokens", "why"),
    [
        (None, 10, "not measured: no energy counter and no power readings inside the window"),
        (3.0, 0, "not measured: the SUT generated no output tokens in the window"),
        (0.0, 10, "not measured: the source's energy over the window is 0 J"),
    ],
)
def test_no_figure_says_not_measured_and_why(energy_j: float | None, tokens: int, why: str) -> None:
    reasons = {"energy_j": "no energy counter and no power readings inside the window"}
    assert per_token(energy_j, tokens, reasons) == (None, None)
    assert reasons["energy_per_token_mj"] == reasons["tokens_per_joule"] == why


def _telemetry(start_mj: float, end_mj: float) -> Telemetry:
    return Telemetry(
        window_start_ns=10 * S,
        window_end_ns=14 * S,
        interval_s=0.1,
        samples=(),
        counters=(
            SourceCounters(
                name="cpu-package-0", kind="cpu", energy_start_mj=start_mj, energy_end_mj=end_mj
            ),
        ),
    )


def test_summary_adds_per_token_figures_and_the_windows_gaps() -> None:
    first_issue_ns = 10 * S + 2_500_000
    span = TokenSpan(output_tokens=400, first_issue_ns=first_issue_ns, last_completion_ns=13 * S)
    summary = summarize(
        _telemetry(1_000.0, 9_000.0), samples_processed=40, scenario="Offline", tokens=span
    )
    source = summary.sources["cpu-package-0"]
    assert source.energy_j == 8.0  # 8,000 mJ
    assert (source.energy_per_token_mj, source.tokens_per_joule) == (20.0, 50.0)
    assert source.energy_per_inference_mj == 200.0  # unchanged beside it
    assert summary.tokens is not None
    assert (summary.tokens.issue_gap_ms, summary.tokens.completion_gap_ms) == (2.5, 1000.0)
    assert summary.tokens.output_tokens == 400 and summary.tokens.not_measured is None


def test_a_model_without_tokens_has_no_per_token_figures() -> None:
    summary = summarize(_telemetry(0.0, 5_000.0), samples_processed=10, scenario="Offline")
    assert summary.tokens is None
    source = summary.sources["cpu-package-0"]
    assert (source.energy_per_token_mj, source.tokens_per_joule) == (None, None)
    assert "energy_per_token_mj" not in source.null_reasons


@pytest.mark.parametrize(
    ("first_s", "last_s", "why"),
    [
        (9, 13, "LoadGen's first issue came 1000.000 ms before the telemetry window opened"),
        (11, 15, "LoadGen's last completion came 1000.000 ms after the telemetry window closed"),
    ],
)
def test_a_window_that_misses_part_of_loadgens_gives_no_figure(
    first_s: int, last_s: int, why: str
) -> None:
    """The cheat: the same energy over more tokens than the window saw made would flatter."""
    span = TokenSpan(output_tokens=400, first_issue_ns=first_s * S, last_completion_ns=last_s * S)
    summary = summarize(
        _telemetry(1_000.0, 9_000.0), samples_processed=40, scenario="Offline", tokens=span
    )
    source = summary.sources["cpu-package-0"]
    assert (source.energy_per_token_mj, source.tokens_per_joule) == (None, None)
    assert source.null_reasons["energy_per_token_mj"] == f"not measured: {why}"
    assert summary.tokens is not None and summary.tokens.not_measured is not None
    assert why in summary.tokens.not_measured


def test_a_window_that_missed_part_of_loadgens_has_a_negative_gap() -> None:
    span = TokenSpan(output_tokens=5, first_issue_ns=9 * S, last_completion_ns=15 * S)
    window = token_window(
        span, window_start_ns=10 * S, window_end_ns=14 * S, per_source_mj={}, unavailable=()
    )
    assert (window.issue_gap_ms, window.completion_gap_ms) == (-1000.0, -1000.0)


def test_a_wrapped_rapl_counter_gives_the_true_delta_per_token(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "rapl-2socket", tmp_path, dirs_exist_ok=True)
    energy = tmp_path / "sys/class/powercap/intel-rapl:0/energy_uj"
    energy.write_text(f"{MAX_RANGE_UJ - 3_000_000}\n")
    sources, _ = rapl_sources(tmp_path, clock=StepClock(0, S))
    package = sources[0]
    start = package.energy_mj()
    energy.write_text("5000000\n")  # wrapped: 3 J to the top, 5 J after it
    end = package.energy_mj()
    counters = SourceCounters(
        name=package.name, kind="cpu", energy_start_mj=start, energy_end_mj=end
    )
    t = dataclasses.replace(_telemetry(start, end), counters=(counters,))
    span = TokenSpan(output_tokens=1_000, first_issue_ns=11 * S, last_completion_ns=13 * S)
    source = summarize(t, samples_processed=1, scenario="Offline", tokens=span).sources[
        package.name
    ]
    assert source.energy_j == pytest.approx(8.0, abs=1e-9)
    assert source.energy_per_token_mj == 8.0  # 8,000,000 µJ / 1,000 tokens
    assert source.tokens_per_joule == 125.0


def test_no_source_says_not_measured_with_each_reason() -> None:
    span = TokenSpan(output_tokens=5, first_issue_ns=11 * S, last_completion_ns=13 * S)
    missing = (
        SourceUnavailable(source="rapl", reason="no RAPL: /sys/class/powercap does not exist"),
        SourceUnavailable(source="wall", reason="no external meter given"),
    )
    window = token_window(
        span, window_start_ns=10 * S, window_end_ns=14 * S, per_source_mj={}, unavailable=missing
    )
    assert window.not_measured == (
        "not measured: rapl: no RAPL: /sys/class/powercap does not exist; "
        "wall: no external meter given"
    )
    idle = token_window(
        span,
        window_start_ns=10 * S,
        window_end_ns=14 * S,
        per_source_mj={"cpu-package-0": None},
        unavailable=missing,
    )
    assert idle.not_measured == "not measured: no source measured energy per token (cpu-package-0)"
    zero = "the source's energy over the window is 0 J"
    said = token_window(
        span,
        window_start_ns=10 * S,
        window_end_ns=14 * S,
        per_source_mj={"cpu-package-0": None},
        unavailable=missing,
        source_reasons={"cpu-package-0": f"not measured: {zero}"},
    )
    assert said.not_measured == (
        "not measured: no source measured energy per token "
        "(cpu-package-0: the source's energy over the window is 0 J)"
    )


def test_schema_10_results_read_with_null_per_token_values() -> None:
    old = {
        "schema_version": 10,
        "telemetry": {"sources": {"cpu-package-0": {"energy_j": 1.0}}, "errors": []},
    }
    new = migrate_10_to_11(old)
    assert new["schema_version"] == 11
    assert new["telemetry"] == {
        "sources": {
            "cpu-package-0": {
                "energy_j": 1.0,
                "energy_per_token_mj": None,
                "tokens_per_joule": None,
            }
        },
        "errors": [],
        "tokens": None,
    }
    assert old["telemetry"]["sources"]["cpu-package-0"] == {"energy_j": 1.0}  # not mutated


def _generative(result: RunResult, mj: float) -> RunResult:
    """A result as a generative run measuring `mj` per token on its first source."""
    generation = GenerationRecord(
        engine="onnxruntime-genai",
        prompts="synthetic",
        max_active=1,
        tokens_per_second=100.0,
        ttft_ns=None,
        tpot_ns=None,
        output_tokens_per_query=None,
        output_tokens=None,
        ttft_limit_ns=None,
        tpot_limit_ns=None,
        limits_source=None,
        token_problems=(),
    )
    assert result.telemetry is not None
    source = SourceSummary(
        kind="cpu",
        method="energy counter",
        energy_counter="RAPL energy_uj",
        power_method=None,
        power_samples=0,
        sample_rate_hz=None,
        avg_power_w=None,
        energy_j=None,
        energy_per_inference_mj=None,
        samples_per_second_per_watt=None,
        peak_temp_c=None,
        throttle=None,
        violation_counters=None,
        notes=(),
        null_reasons={},
        energy_per_token_mj=mj,
        tokens_per_joule=1000 / mj,
    )
    sources = {"cpu-package-0": source}
    telemetry = dataclasses.replace(result.telemetry, sources=sources)
    return dataclasses.replace(result, generation=generation, telemetry=telemetry)


def test_the_spread_over_trials_covers_energy_per_token() -> None:
    trials = Path(__file__).resolve().parents[2] / "fixtures/reports/trials-epyc"
    results = [
        _generative(load_result(trials / f"trial-{i}"), mj)
        for i, mj in zip((1, 2, 3), (5.0, 5.0, 9.0), strict=True)
    ]
    spreads = {s.metric: s for s in metric_spreads(results, requested=3)}
    per_token_key = "telemetry.sources.cpu-package-0.energy_per_token_mj"
    assert per_token_key in spreads
    assert "telemetry.sources.cpu-package-0.tokens_per_joule" in spreads
    stats = spreads[per_token_key].stats
    assert stats.values == (5.0, 5.0, 9.0) and stats.median == 5.0


def _tried(**energy: object) -> RateTried:
    return RateTried(
        directory=".",
        target_qps=4.0,
        valid=True,
        tokens_per_second=120.0,
        ttft_p99_ns=None,
        tpot_p99_ns=None,
        goodput=None,
        **energy,  # type: ignore[arg-type]
    )


def test_the_capacity_peak_states_its_energy_per_token_or_why_not() -> None:
    measured = _tried(
        energy_per_token_mj={"cpu-package-0": 4.0}, tokens_per_joule={"cpu-package-0": 250.0}
    )
    lines = capacity_lines(
        Capacity(search_qps=5.0, search_steps=(), tried=(measured,), peak=measured)
    )
    expected = "cpu-package-0 4.000 mJ/token, 250.00 tokens/J"
    assert lines[-1] == f"  capacity: energy at the peak: {expected}"
    why = "not measured: rapl: no RAPL"
    bare = _tried(energy_not_measured=why)
    lines = capacity_lines(Capacity(search_qps=5.0, search_steps=(), tried=(bare,), peak=bare))
    assert lines[-1] == f"  capacity: energy at the peak: {why}"
