"""show/compare --csv's writer and the JSON Schemas of --json, held to the records they describe."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.records import scripting
from harness.records.codec import record_keys
from harness.report.csvtext import csv_text
from harness.report.scripted import SHOW_COLUMNS, SHOW_FORMAT
from harness.report.scripted_compare import COMPARE_COLUMNS, COMPARE_FORMAT

SCHEMAS = Path(__file__).resolve().parents[3] / "harness" / "schemas"


def _schema(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return found


def _parsed(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize(
    "hostile",
    ['=HYPERLINK("http://evil.invalid","x")', "+1+1", "-2+3", "@SUM(A1)", "=cmd|' /C calc'!A0"],
)
def test_a_text_cell_a_spreadsheet_would_run_is_quoted_as_text(hostile: str) -> None:
    text = csv_text(("label", "value"), [(hostile, 1.5)])
    assert _parsed(text)[1] == [f"'{hostile}", "1.5"]


def test_numbers_stay_numbers_and_text_round_trips_with_rfc4180_quoting() -> None:
    awkward = 'a, "quoted"\nsecond line'
    text = csv_text(("a", "b", "c", "d", "e"), [(awkward, -3.5, None, True, 7)])
    assert text.endswith("\r\n") and text.startswith("a,b,c,d,e\r\n")
    assert _parsed(text)[1] == [awkward, "-3.5", "", "true", "7"]


def test_a_control_character_is_shown_not_sent() -> None:
    text = csv_text(("label",), [("\x1b]0;pwned\x07run",)])
    assert "\x1b" not in text and _parsed(text)[1] == ["\\x1b]0;pwned\\x07run"]


def test_a_row_of_the_wrong_width_is_a_bug() -> None:
    with pytest.raises(ValueError, match="2 cells under 3 columns"):
        csv_text(("a", "b", "c"), [(1, 2)])


@pytest.mark.parametrize(
    ("name", "version", "record", "defs"),
    [
        ("show", SHOW_FORMAT, scripting.ShowDocument, {"entry": scripting.ShowEntry}),
        ("compare", COMPARE_FORMAT, scripting.CompareDocument, {}),
    ],
)
def test_each_schema_is_valid_and_names_its_records_keys(
    name: str, version: int, record: type, defs: dict[str, type]
) -> None:
    schema = _schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"] == {"const": version}
    assert schema["required"] == list(record_keys(record))
    for key, cls in {**defs, "metric": scripting.MetricSummary, "run": scripting.RunEntry}.items():
        if name == "show":
            assert schema["$defs"][key]["required"] == list(record_keys(cls)), key


def test_compare_schema_holds_the_cells_and_gate_keys() -> None:
    props = _schema("compare")["properties"]
    metric = props["metrics"]["items"]
    assert metric["required"] == list(record_keys(scripting.CompareMetric))
    cell = metric["properties"]["cells"]["items"]
    assert cell["required"] == list(record_keys(scripting.CompareCell))
    gate = next(arm for arm in props["gate"]["oneOf"] if arm.get("type") == "object")
    assert gate["required"] == list(record_keys(scripting.GateEntry))


def test_the_schemas_describe_the_csv_columns() -> None:
    assert ", ".join(SHOW_COLUMNS) in _schema("show")["description"]
    assert ", ".join(COMPARE_COLUMNS) in _schema("compare")["description"]
