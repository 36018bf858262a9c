"""The JSON boundary of result records: strict decoding, inline records, schema agreement."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from harness.errors import ResultError
from harness.records import accuracy, measures, memory, telemetry
from harness.records import result as run_records
from harness.records.codec import from_data, record_keys, to_data
from harness.records.result import Latencies, LoadGenOutcome, RunResult
from harness.results.migrate import fill_accuracy, migrate_2_to_3
from harness.results.runfile import load_result, to_dict

TINY = Path(__file__).resolve().parents[2] / "fixtures" / "results" / "tiny-singlestream"
LATENCY: dict[str, object] = dict.fromkeys(record_keys(Latencies))


def test_records_round_trip_through_json_data() -> None:
    result = load_result(TINY)
    data = json.loads(json.dumps(to_data(result)))
    assert from_data(RunResult, data) == result


def test_an_inline_record_contributes_its_keys_to_its_parent() -> None:
    keys = record_keys(RunResult)
    assert "outcome" not in keys
    outcome = list(record_keys(LoadGenOutcome))
    at = keys.index("scenario_name") + 1
    assert list(keys[at : at + len(outcome)]) == outcome  # in its place, after scenario_name


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({**LATENCY, "p90": "1"}, "latency_ns.p90: expected an integer, got a string"),
        ({**LATENCY, "p90": True}, "latency_ns.p90: expected an integer, got a bool"),
        ({**LATENCY, "p90": 1.5}, "latency_ns.p90: expected an integer, got a number"),
        ({**LATENCY, "p99_9": 1}, "latency_ns: unknown key(s) p99_9"),
        ({k: v for k, v in LATENCY.items() if k != "max"}, "latency_ns: missing key(s) max"),
        ([], "latency_ns: expected an object, got a list"),
    ],
)
def test_decoding_names_the_first_wrong_key(value: object, message: str) -> None:
    with pytest.raises(ResultError) as info:
        from_data(Latencies, value, "latency_ns")
    assert str(info.value) == message


def test_integers_are_numbers_but_bools_are_not() -> None:
    window = from_data(run_records.MeasuredWindow, {"duration_s": 2})
    assert window.duration_s == 2
    with pytest.raises(ResultError, match="duration_s: expected a number, got a bool"):
        from_data(run_records.MeasuredWindow, {"duration_s": False})


def test_literals_tuples_mappings_and_nulls_are_checked() -> None:
    data = to_data(load_result(TINY))
    cases: list[tuple[str, Any, str]] = [
        (
            "scenario",
            "Batch",
            "scenario: 'Batch' is not one of 'SingleStream', 'MultiStream', 'Server', 'Offline'",
        ),
        ("warnings", "one", "warnings: expected a list, got a string"),
        ("warnings", ["ok", 3], "warnings[1]: expected a string, got an integer"),
        ("batch_size", None, "batch_size: expected an integer, got null"),
        ("settings", {"scenario": None}, "settings.scenario: is null; expected a value"),
        ("settings", {"scenario": [1]}, "settings.scenario: a list is not allowed here"),
        ("fingerprint", {"complete": True}, "fingerprint: fingerprint: fingerprint_id, missing"),
    ]
    for key, value, message in cases:
        with pytest.raises(ResultError) as info:
            from_data(RunResult, {**data, key: value})
        assert str(info.value).startswith(message), key


def test_every_record_in_the_json_schema_has_exactly_its_keys(
    result_schema: dict[str, Any],
) -> None:
    defs = result_schema["$defs"]
    classes = [
        cls
        for module in (run_records, accuracy, measures, telemetry, memory)
        for cls in vars(module).values()
        if dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
    ]
    assert len(classes) >= 25
    for cls in classes:
        if cls is RunResult:
            schema = result_schema
            keys = ("schema_version", *record_keys(cls))
        elif cls is LoadGenOutcome:
            continue  # inline: its keys are RunResult's
        else:
            schema, keys = defs[cls.__name__], record_keys(cls)
        assert schema["required"] == list(keys), cls.__name__
        assert list(schema["properties"]) == list(keys), cls.__name__
        assert schema["additionalProperties"] is False, cls.__name__


def test_the_schema_accepts_what_the_writer_writes(result_schema: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    data = to_dict(load_result(TINY))
    jsonschema.validate(data, result_schema, format_checker=jsonschema.FormatChecker())
    data["utilization"]["utilization"] = 0.5  # the schema-2 name
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, result_schema)


# --- migration --------------------------------------------------------------------------------


def test_migration_2_to_3_renames_and_fills_without_touching_its_input() -> None:
    v2 = json.loads((TINY / "result.json").read_text())
    before = json.dumps(v2)
    del v2["accuracy"]["against_fp32"]["top1_agreement"]
    v3 = migrate_2_to_3(v2)
    assert v3["schema_version"] == 3
    assert "utilization" not in v3["utilization"]
    assert v3["utilization"]["fraction_of_peak"] == json.loads(before)["utilization"]["utilization"]
    assert v3["runtime"]["cuda_graphs"] is False
    assert v3["accuracy"]["against_fp32"]["top1_agreement"] is None
    assert "top1_agreement" not in v2["accuracy"]["against_fp32"]  # the input is unchanged
    assert v2["schema_version"] == 2


def test_fill_accuracy_gives_tensor_and_labelled_blocks_every_key() -> None:
    tensor = {
        "samples": 4,
        "against_fp32": {"kind": "tensor", "count": 4, "cosine_similarity": 0.999},
        "against_labels": {"count": 4, "label_offset": 0, "top1": 0.75},
    }
    filled = fill_accuracy(tensor)
    assert filled["against_fp32"]["top1_agreement"] is None
    assert filled["against_fp32"]["cosine_similarity"] == 0.999
    assert filled["against_labels"]["top5"] is None
    assert "top5" not in tensor["against_labels"]


def test_type_hints_of_every_record_resolve() -> None:
    for module in (run_records, accuracy, measures, telemetry):
        for cls in vars(module).values():
            if dataclasses.is_dataclass(cls) and isinstance(cls, type):
                typing.get_type_hints(cls)
