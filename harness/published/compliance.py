"""A published result's compliance verdicts (TEST01, TEST04), read from its tree's verify files.

MLPerf's v6 trees keep each test beside its result (``<scenario>/TEST01/``), older rounds
under ``<org>/compliance/<system>/<benchmark>/<scenario>/TEST01/``. MLPerf's verify scripts
end verify_performance.txt and verify_accuracy.txt with ``TEST PASS`` or ``TEST FAIL``; a
file that says ``TEST FAIL`` anywhere has failed, whatever else it says. Each file is read as
every file of the tree is (harness.published.files: inside it, regular, bounded) and copied
beside the record; one that cannot be read, or states no verdict, is a warning naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import ResultError
from harness.published import files
from harness.published.tree import Location
from harness.records.layout import VERIFY_ACCURACY, VERIFY_PERFORMANCE
from harness.records.published import PublishedCompliance

TESTS = ("TEST01", "TEST04")
MAX_VERIFY_BYTES = 64 * 1024  # a verify file is a dozen lines
PASS, FAIL = "TEST PASS", "TEST FAIL"


def read_compliance(
    loc: Location, warnings: list[str], copies: list[tuple[Path, str]]
) -> tuple[PublishedCompliance, ...]:
    """The verdict of each compliance test the tree holds for the result, in TESTS' order."""
    found = []
    for test in TESTS:
        folder = _folder(loc, test)
        if folder is None:
            continue
        performance = _verdict(loc.root, folder, test, VERIFY_PERFORMANCE, warnings, copies)
        accuracy = _verdict(loc.root, folder, test, VERIFY_ACCURACY, warnings, copies)
        found.append(PublishedCompliance(test=test, performance=performance, accuracy=accuracy))
    return tuple(found)


def _folder(loc: Location, test: str) -> Path | None:
    """Where the tree keeps the test: beside the result (v6), else under compliance/ (v4-v5)."""
    scenario = loc.scenario_dir
    older = loc.org_dir / "compliance" / loc.system / loc.benchmark / scenario.name / test
    return next((f for f in (scenario / test, older) if os.path.isdir(f)), None)


def _verdict(
    root: Path,
    folder: Path,
    test: str,
    name: str,
    warnings: list[str],
    copies: list[tuple[Path, str]],
) -> bool | None:
    """One verify file's verdict, the file copied; None where it is absent or says none."""
    path = folder / name
    if not files.present(path):
        return None
    try:
        text = files.text_file(root, path, MAX_VERIFY_BYTES)
        lines = {line.strip() for line in text.splitlines()}
    except ResultError as exc:
        warnings.append(f"{exc}; its {test} verdict not imported")
        return None
    copies.append((path, f"{test}/{name}"))
    if FAIL in lines:
        return False
    if PASS in lines:
        return True
    warnings.append(f"{path}: states neither {PASS} nor {FAIL}; {test} has no verdict from it")
    return None
