"""Compliance verdicts read from published trees: both layouts, every file hostile until read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.errors import ResultError
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from harness.published.tree import find_locations
from harness.records.published import PublishedCompliance, PublishedResult
from tests.unit.test_published_import import V41, fixed_now

ORG = "closed/UntetherAI"
SS = f"{ORG}/results/h13_u2_preview/resnet50/singlestream"
# MLPerf v4.x-v5.x keep compliance beside results/; v6 inside the result's scenario directory.
OLDER = f"{ORG}/compliance/h13_u2_preview/resnet50/singlestream"
PERF_PASS = "reference score = 1\ntest score = 1\nTEST PASS\n"
PERF_FAIL = "reference score = 1\ntest score = 0.8\nTEST FAIL\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(V41, root / "closed")
    return root


def _write(folder: Path, **texts: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / f"verify_{name}.txt").write_text(text)


def _import(tree: Path) -> PublishedResult:
    imported = import_mlperf(tree / SS, tree.parent / "out", now=fixed_now)
    (written,) = imported.written
    return load_published(written)


def test_verdicts_are_read_from_the_older_layout_and_copied(tree: Path) -> None:
    _write(tree / OLDER / "TEST01", performance=PERF_PASS, accuracy="TEST PASS\n")
    _write(tree / OLDER / "TEST04", performance=PERF_FAIL)
    record = _import(tree)
    assert record.compliance == (
        PublishedCompliance(test="TEST01", performance=True, accuracy=True),
        PublishedCompliance(test="TEST04", performance=False, accuracy=None),
    )
    assert [c.verdict for c in record.compliance] == ["TEST01 PASS", "TEST04 FAIL (performance)"]
    assert {"TEST01/verify_performance.txt", "TEST04/verify_performance.txt"} <= set(record.files)
    assert record.import_warnings == ()


def test_a_v6_tree_keeps_them_beside_the_result_and_its_logs_are_no_result(tree: Path) -> None:
    results = len(find_locations(tree)[0])
    test01 = tree / SS / "TEST01"
    _write(test01, performance=PERF_FAIL, accuracy="TEST PASS\n")
    shutil.copytree(tree / SS / "performance", test01 / "performance")  # the test's own logs
    found, problems = find_locations(tree)
    assert problems == [] and len(found) == results  # TEST01/performance is no further result
    (verdict,) = _import(tree).compliance
    assert verdict == PublishedCompliance(test="TEST01", performance=False, accuracy=True)
    assert verdict.passed is False


def test_a_pass_line_added_after_a_failure_does_not_make_it_pass(tree: Path) -> None:
    _write(tree / OLDER / "TEST04", performance=PERF_FAIL + "TEST PASS\n")
    (verdict,) = _import(tree).compliance
    assert verdict.performance is False and verdict.verdict == "TEST04 FAIL (performance)"


def test_a_file_without_a_verdict_is_no_verdict_and_says_so(tree: Path) -> None:
    _write(tree / OLDER / "TEST01", performance="reference score = 1\nTEST PASSED, honest\n")
    record = _import(tree)
    (verdict,) = record.compliance
    assert verdict.passed is None and verdict.verdict == "TEST01 no verdict"
    (warning,) = record.import_warnings
    assert warning.endswith(
        "verify_performance.txt: states neither TEST PASS nor TEST FAIL; "
        "TEST01 has no verdict from it"
    )


def test_a_verify_file_linked_out_of_the_tree_is_neither_read_nor_copied(
    tree: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("TEST PASS\n")
    folder = tree / OLDER / "TEST01"
    folder.mkdir(parents=True)
    (folder / "verify_performance.txt").symlink_to(outside)
    record = _import(tree)
    assert record.compliance == (
        PublishedCompliance(test="TEST01", performance=None, accuracy=None),
    )
    assert not any(name.startswith("TEST01/") for name in record.files)
    assert any("TEST01 verdict not imported" in w for w in record.import_warnings)


def test_a_record_imported_before_verdicts_were_read_reads_with_none(tree: Path) -> None:
    imported = import_mlperf(tree / SS, tree.parent / "out", now=fixed_now)
    (written,) = imported.written
    path = written / "published.json"
    data = json.loads(path.read_text())
    del data["compliance"]
    path.write_text(json.dumps({**data, "schema_version": 2}))
    assert load_published(written).compliance == ()
    path.write_text(json.dumps({**data, "schema_version": 3}))  # a version-3 file must have it
    with pytest.raises(ResultError, match=r"not a published record \(.*compliance"):
        load_published(written)
