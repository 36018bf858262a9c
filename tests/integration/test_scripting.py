"""show/compare --json and --csv of real tiny-model runs; the regression gate fed a real slowdown.

The slowdown is genuine: tests/cheats' `slower` SUT waits after each inference in every worker
(a regression left in the timed path): 100 ms a batch of 8 in Offline, so NEW's throughput
falls to a fraction of BASE's, and 50 ms a query in SingleStream, far above its latency, by
more than any noise of this shared machine (BASE's four trials keep its interval finite).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.cli import main
from harness.errors import NOT_COMPARABLE, SLOWER
from harness.report.scripted import SHOW_COLUMNS
from harness.report.scripted_compare import COMPARE_COLUMNS
from tests.conftest import REPO, TINY_OFFLINE, TINY_SS, harness_dir, write_scenario

pytestmark = pytest.mark.slow

SCHEMAS = REPO / "harness" / "schemas"
CHEATS_PATH = REPO / "tests" / "cheats"
SLOW_US = {"offline": "100000", "ss": "50000"}
HOSTILE = '=HYPERLINK("evil.invalid","run"),+1'  # a directory name: no slash


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[dict[str, Path]]:
    """Offline: BASE (4 trials) and a slower NEW (3); SingleStream: one run each."""
    root = tmp_path_factory.mktemp("scripting")
    offline = write_scenario(root / "offline.yaml", TINY_OFFLINE)
    ss = write_scenario(root / "ss.yaml", TINY_SS)
    made: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BEYOND_TOPS_CACHE", str(model_cache))
        out = ["--out", str(root / "runs")]
        made["base"] = harness_dir(["run", str(offline), "--trials", "4", *out])
        made["ss_base"] = harness_dir(["run", str(ss), *out])
        patch.setenv("BT_CHEAT", "slower")
        patch.setenv("PYTHONPATH", f"{CHEATS_PATH}:{REPO}")
        patch.setenv("BT_SLOW_US", SLOW_US["offline"])
        made["slower"] = harness_dir(["run", str(offline), "--trials", "3", *out])
        patch.setenv("BT_SLOW_US", SLOW_US["ss"])
        made["ss_slower"] = harness_dir(["run", str(ss), *out])
    hostile = root / HOSTILE
    shutil.copytree(made["ss_base"], hostile)
    made["hostile"] = hostile
    yield made


def _schema(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return found


def _run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_show_json_is_the_schemas_and_the_results_numbers(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["show", str(runs["base"]), str(runs["ss_base"]), "--json"]
    code, out, _ = _run_cli(argv, capsys)
    assert code == 0
    document = json.loads(out)  # stdout holds the document alone
    jsonschema.validate(document, _schema("show"))
    assert (document["kind"], document["schema_version"]) == ("beyond-tops.show", 1)
    group, single = document["results"]
    assert (group["kind"], group["scenario"], group["headline"]) == (
        "trials",
        "Offline",
        "samples_per_second",
    )
    assert [r["name"] for r in group["runs"]] == ["trial-1", "trial-2", "trial-3", "trial-4"]
    recorded = [
        json.loads((runs["base"] / f"trial-{i}" / "result.json").read_text())["samples_per_second"]
        for i in (1, 2, 3, 4)
    ]
    assert [r["values"]["samples_per_second"] for r in group["runs"]] == recorded
    (throughput,) = [m for m in group["metrics"] if m["key"] == "samples_per_second"]
    assert throughput["values"] == recorded and throughput["unit"] == "samples/s"
    assert throughput["headline"] and throughput["stdev"] is not None
    assert single["kind"] == "run" and single["headline"] == "latency_ns.early_stopping_p90"
    p50_ns = json.loads((runs["ss_base"] / "result.json").read_text())["latency_ns"]["p50"]
    (p50,) = [m for m in single["metrics"] if m["key"] == "latency_ns.p50"]
    assert p50["unit"] == "ms" and p50["values"] == [pytest.approx(p50_ns / 1e6)]
    assert p50["stdev"] is None and p50["cov"] is None  # one run: no spread, not "0 %"


def test_show_csv_parses_back_to_the_json_values_and_guards_hostile_names(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["show", str(runs["base"]), str(runs["hostile"])]
    _, out, _ = _run_cli([*argv, "--json"], capsys)
    document = json.loads(out)
    code, text, _ = _run_cli([*argv, "--csv"], capsys)
    assert code == 0
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == SHOW_COLUMNS
    records = [dict(zip(SHOW_COLUMNS, row, strict=True)) for row in rows[1:]]
    expected = [
        (entry["label"], run["name"], key, value)
        for entry in document["results"]
        for run in entry["runs"]
        for key, value in run["values"].items()
    ]
    got = [(r["result"], r["run"], r["metric"], r["value"]) for r in records]
    assert len(got) == len(expected)
    for (label, run, key, value), row in zip(expected, got, strict=True):
        assert row[:3] == tuple("'" + c if c == HOSTILE else c for c in (label, run, key))
        assert (row[3] == "" and value is None) or float(row[3]) == value
    assert document["results"][1]["label"] == HOSTILE  # JSON keeps the name as data


def test_compare_json_and_csv_carry_the_gates_verdict_and_every_cell(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(runs["base"]), str(runs["slower"]), "--fail-if-slower", "5%"]
    code, out, err = _run_cli([*argv, "--json"], capsys)
    assert code == SLOWER.code
    document = json.loads(out)
    jsonschema.validate(document, _schema("compare"))
    gate = document["gate"]
    assert gate["slower"] and gate["noise"] == "interval" and gate["interval_beyond"]
    assert gate["metric"] == "samples_per_second" and gate["threshold"] == 0.05
    assert gate["line"] in err.splitlines()  # the verdict's line goes to stderr
    code, text, _ = _run_cli([*argv, "--csv"], capsys)
    assert code == SLOWER.code
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == COMPARE_COLUMNS
    assert len(rows) - 1 == sum(len(m["cells"]) for m in document["metrics"])
    (head,) = [r for r in rows[1:] if r[0] == "samples_per_second" and r[6] == "1"]
    cell = document["metrics"][0]["cells"][1]
    assert float(head[9]) == cell["value"] and float(head[10]) == cell["ratio"]


def test_a_genuinely_slower_group_fails_the_gate(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(runs["base"]), str(runs["slower"]), "--fail-if-slower", "0.05"]
    code, out, _ = _run_cli(argv, capsys)
    assert code == SLOWER.code, out
    line = out.splitlines()[-1]
    assert line.startswith("gate: SLOWER: throughput NEW/BASE ")
    assert "beyond the 5% threshold (slower below 0.950x)" in line
    assert "interval of the ratio" in line and "wholly beyond 0.950x" in line


def test_a_group_against_itself_passes(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(runs["base"]), str(runs["base"]), "--fail-if-slower", "5%"]
    code, out, _ = _run_cli(argv, capsys)
    assert code == 0
    assert out.splitlines()[-1].startswith("gate: not slower: throughput NEW/BASE 1.000x")


def test_one_run_a_side_is_judged_by_the_threshold_alone_and_says_so(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(runs["ss_base"]), str(runs["ss_slower"]), "--fail-if-slower", "5%"]
    code, out, _ = _run_cli(argv, capsys)
    assert code == SLOWER.code, out
    line = out.splitlines()[-1]
    assert line.startswith("gate: SLOWER: early-stopping p90 latency NEW/BASE ")
    assert "(slower above 1.050x)" in line and "noise: unknown" in line
    reverse = ["compare", str(runs["ss_slower"]), str(runs["ss_base"]), "--fail-if-slower", "5%"]
    code, out, _ = _run_cli(reverse, capsys)
    assert code == 0 and "gate: not slower" in out


def test_not_comparable_keeps_its_code_under_the_gate(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(runs["base"]), str(runs["ss_slower"]), "--fail-if-slower", "5%"]
    code, out, err = _run_cli([*argv, "--json"], capsys)
    assert code == NOT_COMPARABLE.code
    assert "gate: not judged: the results are not comparable" in err
    document = json.loads(out)
    jsonschema.validate(document, _schema("compare"))
    assert not document["comparable"] and document["gate"] is None and document["metrics"] == []
