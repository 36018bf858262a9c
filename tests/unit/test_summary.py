"""The printed summary, against a golden file rendered from a checked-in result.json."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.report.summary import render_summary
from harness.result import load_result

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "results" / "tiny-singlestream"


def test_summary_matches_the_golden_file() -> None:
    result = load_result(FIXTURE)
    expected = (FIXTURE / "summary.txt").read_text()
    assert render_summary(result, "RUN_DIR") + "\n" == expected


def test_power_row_shows_each_source_and_energy_per_inference() -> None:
    result = load_result(FIXTURE)
    telemetry = {
        **dict(result.telemetry or {}),
        "sources": {
            "gpu0": {"avg_power_w": 585.0, "energy_per_inference_mj": 58.5},
            "cpu-package-0": {"avg_power_w": None, "energy_per_inference_mj": None},
        },
    }
    text = render_summary(dataclasses.replace(result, telemetry=telemetry))
    assert "  power       gpu0 585.0 W, 58.50 mJ/inference; cpu-package-0 n/a" in text


def test_quick_results_say_they_are_not_submission_valid() -> None:
    text = render_summary(load_result(FIXTURE))
    assert "quick profile - NOT submission-valid" in text.splitlines()[1]
