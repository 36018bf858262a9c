"""The records layer: producers return records, and a record's JSON form decodes back to it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.analysis.trials import trial_stats
from harness.errors import ResultError
from harness.records.codec import from_data, to_data, to_object
from harness.records.measures import RecipeRecord
from harness.records.sweep import SweepLimit, SweepPoint
from harness.records.telemetry import TelemetrySummary
from harness.records.trials import TrialStats
from harness.telemetry import Sample, SourceCounters, Telemetry, summarize

S = 1_000_000_000
HARNESS = Path(__file__).resolve().parents[2] / "harness"


def _telemetry() -> Telemetry:
    samples = [Sample(t_ns=i * S, source="gpu0", power_w=100.0, temp_c=60.0) for i in range(11)]
    return Telemetry(
        window_start_ns=0,
        window_end_ns=10 * S,
        interval_s=1.0,
        samples=tuple(samples),
        counters=(SourceCounters(name="gpu0", kind="gpu", violations_ns=(("power", 0, S),)),),
        unavailable=(("rapl", "permission denied"),),
    )


def test_the_telemetry_summary_is_a_record_whose_json_reads_back() -> None:
    summary = summarize(_telemetry(), samples_processed=1_000, scenario="Offline")
    assert isinstance(summary, TelemetrySummary)
    data = json.loads(json.dumps(to_data(summary)))
    assert from_data(TelemetrySummary, data, "telemetry") == summary
    gpu = data["sources"]["gpu0"]
    assert list(gpu)[-2:] == ["notes", "null_reasons"]
    assert gpu["violation_counters"] == {"power": {"time_s": 1.0, "share": 0.1}}
    assert gpu["null_reasons"] == {"throttle": "not reported by this source"}


def test_null_reasons_follow_the_record_s_field_order() -> None:
    t = Telemetry(
        window_start_ns=0,
        window_end_ns=10 * S,
        interval_s=1.0,
        samples=(),
        counters=(SourceCounters(name="cpu", kind="cpu"),),
    )
    reasons = summarize(t, samples_processed=1, scenario="SingleStream").sources["cpu"]
    assert list(reasons.null_reasons) == [
        "avg_power_w",
        "energy_j",
        "energy_per_inference_mj",
        "samples_per_second_per_watt",
        "peak_temp_c",
        "throttle",
        "violation_counters",
    ]


def test_trial_and_sweep_records_go_through_the_codec_only() -> None:
    stats = trial_stats([1.0, 2.0, 4.0], requested=3, higher_is_better=True)
    point = SweepPoint(batch_size=4, stats=stats)
    assert from_data(SweepPoint, to_data(point)) == point
    assert to_object(SweepLimit(batch_size=8, error="oom")) == {"batch_size": 8, "error": "oom"}
    assert not hasattr(TrialStats, "to_dict") and not hasattr(TrialStats, "from_dict")
    with pytest.raises(ResultError, match=r"stats\.values\[1\]: expected a number, got a string"):
        from_data(TrialStats, {**to_object(stats), "values": [1.0, "2"]}, "stats")


def test_opaque_json_in_a_record_is_kept_as_written() -> None:
    params = {"per_channel": True, "nodes": ["a", "b"], "nested": {"k": [1, 2.5, None]}}
    data = {"method": "static", "params": params, "precision": "int8"}
    recipe = from_data(RecipeRecord, data, "precision.recipe")
    assert recipe.params == params and to_data(recipe) == data


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    found |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return found


def test_analysis_never_imports_the_result_files() -> None:
    for path in sorted((HARNESS / "analysis").glob("*.py")):
        reached = {m for m in _imports(path) if m.startswith("harness.results")}
        assert not reached, f"{path.name} imports {sorted(reached)}"


def test_the_records_import_nothing_above_them() -> None:
    below = ("harness.records", "harness.strictjson", "harness.config", "harness.errors")
    below += ("harness.files", "harness.foreign", "harness.text", "harness.hardware")
    below += ("harness.paths", "harness.gitstate", "harness.strictyaml")
    for path in sorted((HARNESS / "records").glob("*.py")):
        above = {m for m in _imports(path) if m.startswith("harness.") and not m.startswith(below)}
        assert not above, f"records/{path.name} imports {sorted(above)}"
