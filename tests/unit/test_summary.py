"""The printed summary, against a golden file rendered from a checked-in result.json."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.records.telemetry import SourceSummary
from harness.report.summary import render_summary
from harness.results.runfile import load_result

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "tiny-singlestream"


def _source(avg_power_w: float | None, energy_per_inference_mj: float | None) -> SourceSummary:
    return SourceSummary(
        kind="gpu",
        method=None,
        energy_counter=None,
        power_method=None,
        power_samples=0,
        sample_rate_hz=None,
        avg_power_w=avg_power_w,
        energy_j=None,
        energy_per_inference_mj=energy_per_inference_mj,
        samples_per_second_per_watt=None,
        peak_temp_c=None,
        throttle=None,
        violation_counters=None,
        notes=(),
        null_reasons={},
    )


def test_summary_matches_the_golden_file() -> None:
    result = load_result(FIXTURE)  # a schema-2 file: migrated on load, shown as before
    expected = (FIXTURE / "summary.txt").read_text()
    assert render_summary(result, "RUN_DIR") + "\n" == expected


def test_power_row_shows_each_source_and_energy_per_inference() -> None:
    result = load_result(FIXTURE)
    assert result.telemetry is not None
    sources = {"gpu0": _source(585.0, 58.5), "cpu-package-0": _source(None, None)}
    telemetry = dataclasses.replace(result.telemetry, sources=sources)
    text = render_summary(dataclasses.replace(result, telemetry=telemetry))
    assert "  power       gpu0 585.0 W, 58.50 mJ/inference; cpu-package-0 n/a" in text


def test_quick_results_say_they_are_not_submission_valid() -> None:
    text = render_summary(load_result(FIXTURE))
    assert "quick profile - NOT submission-valid" in text.splitlines()[1]
