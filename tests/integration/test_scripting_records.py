"""show/compare --json and --csv of checked-in results: published MLPerf records, a fixture run."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.cli import main
from harness.errors import SLOWER
from harness.published.importer import import_mlperf
from harness.report.scripted import SHOW_COLUMNS
from tests.conftest import REPO
from tests.unit.test_published_import import FIXTURES, fixed_now

LOCAL_FIXTURE = REPO / "tests" / "fixtures" / "results" / "tiny-singlestream-v3"
SCHEMAS = REPO / "harness" / "schemas"


def _schema(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return found


@pytest.fixture
def records(tmp_path: Path) -> dict[str, Path]:
    """The fixture tree's three results imported: SingleStream (UntetherAI), two Offline."""
    written = import_mlperf(FIXTURES, tmp_path / "imports", now=fixed_now).written
    return {p.name.split("-")[2] + "-" + p.name.rsplit("-", 1)[1]: p for p in written}


def test_show_json_of_published_records_and_a_run_fits_the_schema(
    records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(records["Intel-Offline"]), str(records["UntetherAI-SingleStream"])]
    assert main(["show", *paths, str(LOCAL_FIXTURE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, _schema("show"))
    intel, untether, local = document["results"]
    assert intel["kind"] == "published" and intel["runs"] == []
    assert intel["published"]["org"] == "Intel" and intel["headline"] == "samples_per_second"
    (head,) = [m for m in intel["metrics"] if m["headline"]]
    assert head["values"] == [head["median"]] and head["stdev"] is None
    # a published SingleStream result is judged by its round's headline (v4.1: early stopping)
    assert untether["headline"] == "latency_ns.early_stopping_p90"
    assert local["kind"] == "run" and len(local["runs"]) == 1


def test_show_csv_of_a_published_record_has_a_row_per_metric(
    records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(records["Intel-Offline"]), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["results"]
    assert main(["show", str(records["Intel-Offline"]), "--csv"]) == 0
    header, *rows = list(csv.reader(io.StringIO(capsys.readouterr().out, newline="")))
    assert tuple(header) == SHOW_COLUMNS
    assert [(r[7], float(r[12])) for r in rows] == [
        (m["key"], m["median"]) for m in entry["metrics"]
    ]
    assert all(r[3] == r[4] == "" for r in rows)  # no runs: its run columns are empty


def test_the_gate_on_published_records_judges_by_the_threshold_alone(
    records: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # UntetherAI's Offline ResNet-50 at 334,462 samples/s, Intel's at 25,290: one value a side
    base, new = records["UntetherAI-Offline"], records["Intel-Offline"]
    argv = ["compare", str(base), str(new), "--fail-if-slower", "5%", "--json"]
    assert main(argv) == SLOWER.code
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    jsonschema.validate(document, _schema("compare"))
    gate = document["gate"]
    assert document["comparable"] and gate["slower"]
    assert gate["noise"] == "unknown" and gate["interval"] is None
    assert gate["ratio"] == pytest.approx(25289.6 / 334462.0)
    assert "noise: unknown" in captured.err and gate["line"] in captured.err.splitlines()
    assert main(["compare", str(new), str(base), "--fail-if-slower", "5%"]) == 0
    assert "gate: not slower: throughput NEW/BASE 13.225x" in capsys.readouterr().out


def test_show_json_of_a_shipped_bundle_names_its_origin_and_keeps_stdout_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shipped = REPO / "results" / "published"
    bundle = shipped / "2026-12-01-resnet50-open-2core-epyc-kvm-Offline.bundle.tar"
    key = shipped / "beyond-tops-founders.pub"
    assert main(["show", str(bundle), "--trust", str(key), "--json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # the signer's line went to stderr
    jsonschema.validate(document, _schema("show"))
    (entry,) = document["results"]
    assert entry["origin"] == f"bundle {bundle.name}: verified, signer trusted"
    assert entry["path"].startswith(f"{bundle}: ")  # not the temporary directory it was opened in
    assert entry["scenario"] == "Offline" and entry["headline"] == "samples_per_second"
    assert "signer trusted" in captured.err
