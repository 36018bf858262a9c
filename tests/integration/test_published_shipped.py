"""The ResNet-50 result shipped in results/published/: what it says, and that it is what ran.

Its tree is the export of the runs in its two signed bundles: opened (verified against the
shipped public key) and exported again, they give the shipped files byte for byte. Every
result states its synthetic weights; SingleStream keeps its failed TEST01 and TEST04 (the
recorded verify files say TEST FAIL); MLPerf's checker passes the tree as
check-submission.txt records; `harness import mlperf` and `show` carry all of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.bundle.open import open_bundle
from harness.errors import DependencyError
from harness.models.zoo import ZOO
from harness.published.importer import import_mlperf
from harness.published.record import load_published
from harness.records.published import PublishedCompliance
from harness.submission.checker import find_checker, run_checker
from harness.submission.documents import SYNTHETIC_WEIGHTS
from harness.submission.export import ExportRequest, export_submission
from harness.submission.system import load_description
from tests.conftest import REPO, harness_printed
from tests.unit.test_published_import import fixed_now

pytestmark = pytest.mark.slow
PUBLISHED = REPO / "results" / "published"
NAME = "2026-12-01-resnet50-open-2core-epyc-kvm"
TREE = PUBLISHED / NAME
ORG = TREE / "open" / "beyond-tops"
SYSTEM = "2core-epyc-kvm-onnxruntime-cpu"
RESULTS = ORG / "results" / SYSTEM / "resnet"
SCENARIOS = ("SingleStream", "Offline")
CHECK_FILE = "check-submission.txt"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_tree_is_its_signed_bundles_exported_again(tmp_path: Path) -> None:
    runs = []
    for scenario in SCENARIOS:
        bundle = PUBLISHED / f"{NAME}-{scenario}.bundle.tar"
        opened = open_bundle(bundle, tmp_path / scenario, (PUBLISHED / "beyond-tops-founders.pub",))
        assert opened.verified and opened.trusted
        (run,) = opened.run_dirs
        runs.append(run)
    request = ExportRequest(
        sources=tuple(runs),
        division="open",
        org="beyond-tops",
        system=SYSTEM,
        out=tmp_path / "tree",
        description=load_description(PUBLISHED / "system-description.2core-epyc-kvm.yaml"),
        real_weights=frozenset(name for name, model in ZOO.items() if not model.synthetic),
    )
    exported = export_submission(request)
    shipped = _files(TREE)
    assert shipped.pop(CHECK_FILE)
    assert _files(exported.root) == shipped  # every file, byte for byte: nothing else changed


def test_every_result_states_its_synthetic_weights() -> None:
    system = json.loads((ORG / "systems" / f"{SYSTEM}.json").read_text())
    assert system["sw_notes"].startswith(
        "Measured with beyond-tops 0.1.0. resnet SingleStream "
        f"and resnet Offline: {SYNTHETIC_WEIGHTS} (the beyond-"
    )
    for scenario in SCENARIOS:
        readme = (RESULTS / scenario / "README.md").read_text().split("\n")
        assert readme[0] == f"# resnet {scenario}: {SYSTEM}, by beyond-tops"
        assert readme[2].startswith(
            f"**{SYNTHETIC_WEIGHTS}** (the beyond-tops zoo model 'resnet50'"
        )
        accuracy = (RESULTS / scenario / "accuracy" / "accuracy.txt").read_text().splitlines()
        assert accuracy[0].startswith(f"{SYNTHETIC_WEIGHTS} (")
        assert accuracy[2].startswith("hash=")  # the checker's line, still there
        measured = json.loads((RESULTS / scenario / "measurements.json").read_text())
        assert SYNTHETIC_WEIGHTS in measured["starting_weights_filename"]


def test_singlestream_keeps_its_failed_compliance_tests() -> None:
    verdicts = {
        (scenario, test): (RESULTS / scenario / test / "verify_performance.txt")
        .read_text()
        .splitlines()[-1]
        for scenario in SCENARIOS
        for test in ("TEST01", "TEST04")
    }
    assert verdicts == {
        ("SingleStream", "TEST01"): "TEST FAIL",
        ("SingleStream", "TEST04"): "TEST FAIL",
        ("Offline", "TEST01"): "TEST PASS",
        ("Offline", "TEST04"): "TEST PASS",
    }
    readme = (RESULTS / "SingleStream" / "README.md").read_text()
    for test in ("TEST01", "TEST04"):
        assert (
            f"- compliance {test}: **TEST FAIL** (the open division does not require it)" in readme
        )
    system = json.loads((ORG / "systems" / f"{SYSTEM}.json").read_text())
    assert system["sw_notes"].endswith(
        "Compliance: resnet SingleStream TEST01 FAIL, TEST04 FAIL; "
        "resnet Offline TEST01 PASS, TEST04 PASS."
    )


def test_mlperfs_checker_passes_it_as_recorded(tmp_path: Path) -> None:
    recorded = (TREE / CHECK_FILE).read_text()
    assert "INFO SUMMARY: submission looks OK" in recorded and recorded.endswith("== exit code 0\n")
    try:
        checker = find_checker()
    except DependencyError as exc:
        pytest.skip(f"no MLPerf checker here: {exc}")
    copy = tmp_path / NAME
    shutil.copytree(TREE, copy)
    (copy / CHECK_FILE).unlink()
    outcome = run_checker(checker, copy, extra_args=["--skip-dataset-size-check"])
    assert outcome.passed and outcome.errors == []
    assert outcome.output == recorded


def test_import_and_show_carry_the_statement_and_the_verdicts(tmp_path: Path) -> None:
    imported = import_mlperf(TREE, tmp_path / "records", now=fixed_now)
    assert imported.skipped == () and imported.notes == ()  # TEST0x/ is no result to skip
    records = {load_published(w).scenario: load_published(w) for w in imported.written}
    assert sorted(records) == sorted(SCENARIOS)
    for record in records.values():
        assert record.accuracy is not None and record.accuracy.startswith(f"{SYNTHETIC_WEIGHTS} (")
        assert record.harness_precision == "fp32" and record.import_warnings == ()
    assert records["SingleStream"].compliance == (
        PublishedCompliance(test="TEST01", performance=False, accuracy=True),
        PublishedCompliance(test="TEST04", performance=False, accuracy=None),
    )
    assert all(c.passed for c in records["Offline"].compliance)
    (single,) = [w for w in imported.written if w.name.endswith("SingleStream")]
    shown = harness_printed(["show", str(single)]).splitlines()
    statement = records["SingleStream"].accuracy
    assert f"  accuracy        {statement}" in shown
    assert "  compliance      TEST01 FAIL (performance); TEST04 FAIL (performance)" in shown


def test_the_sites_entry_page_shows_the_statement_and_the_failures(tmp_path: Path) -> None:
    imported = import_mlperf(TREE, tmp_path / "records", now=fixed_now)
    assert len(imported.written) == 2
    harness_printed(["site", str(tmp_path / "records"), "--out", str(tmp_path / "site")])
    pages = [p.read_text() for p in (tmp_path / "site" / "entries").glob("*/report/report.html")]
    assert len(pages) == 2 and all(f"{SYNTHETIC_WEIGHTS} (the beyond-tops zoo" in p for p in pages)
    failed = "TEST01 FAIL (performance); TEST04 FAIL (performance)"
    assert sorted(failed in p for p in pages) == [False, True]  # SingleStream's page alone
