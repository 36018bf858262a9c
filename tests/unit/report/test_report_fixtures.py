"""The report fixtures are real-shaped: schema-valid results and consistent statistics."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from golden import REPO, REPORTS

from harness.analysis.trials import trial_stats
from harness.records.metrics import metric as shown
from harness.results.groups import load_group
from harness.results.runfile import load_result, to_dict

SCHEMA_V2 = REPO / "harness" / "schemas" / "result.v2.schema.json"


def test_every_fixture_result_is_schema_2_and_migrates_to_a_valid_3(
    result_schema: dict[str, Any],
) -> None:
    v2 = json.loads(SCHEMA_V2.read_text())
    paths = sorted(REPORTS.rglob("result.json"))
    assert len(paths) == 11
    for path in paths:
        data = json.loads(path.read_text())
        assert data["schema_version"] == 2  # kept at 2: they test the migration too
        jsonschema.validate(data, v2)
        jsonschema.validate(to_dict(load_result(path)), result_schema)


def test_stored_statistics_are_what_trial_stats_computes() -> None:
    for name in ("trials-epyc", "trials-xeon"):
        runs = load_group(REPORTS / name).runs
        assert runs.stats is not None and runs.metric is not None
        again = trial_stats(
            runs.stats.values,
            requested=runs.requested,
            higher_is_better=False,
            shown=shown(runs.metric),
        )
        assert runs.stats == again
    sweep = load_group(REPORTS / "sweep-h100").sweep
    assert sweep is not None
    for point in sweep.points:
        values = [r.samples_per_second or 0.0 for r in point.runs.results]
        assert point.stats == trial_stats(values, requested=len(values), higher_is_better=True)
