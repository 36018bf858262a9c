"""A group's compliance verdicts in one record per test: TEST01, TEST04 over its runs.

Read from each run's compliance/TEST0x/verdict.json (harness.compliance.verify); a test the
model requires that no run has is "not run"; a test directory without its verdict has not
passed (its worker failed or is still running).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from harness.compliance.rules import required_tests
from harness.compliance.verify import read_passed
from harness.errors import ResultError
from harness.records.group import Group
from harness.records.job import COMPLIANCE_TESTS
from harness.records.layout import VERDICT_FILE, compliance_dir
from harness.records.trust import CheckVerdict, ComplianceCheck


def group_compliance(group: Group) -> tuple[ComplianceCheck, ...]:
    """TEST01 and TEST04 over the group's runs: FAIL if any failed, PASS only if all passed."""
    if not group.results:
        return ()
    tests = required_tests(group.results[0].loadgen_config.model_key)
    pairs = list(zip(group.runs.run_dirs, group.results, strict=True))
    ran = {t for d, _ in pairs for t in COMPLIANCE_TESTS if compliance_dir(d, t).is_dir()}
    return tuple(_compliance(test, [d for d, _ in pairs]) for test in ordered({*tests, *ran}))


def ordered(tests: Iterable[str]) -> list[str]:
    """The tests among COMPLIANCE_TESTS, in that order."""
    return [t for t in COMPLIANCE_TESTS if t in set(tests)]


def _compliance(test: str, run_dirs: Sequence[Path]) -> ComplianceCheck:
    verdicts = [_run_verdict(compliance_dir(d, test)) for d in run_dirs]
    fails = [
        f"{d.name}: {why}" for d, (v, why) in zip(run_dirs, verdicts, strict=True) if v == "FAIL"
    ]
    if fails:
        return ComplianceCheck(test=test, verdict="FAIL", detail="; ".join(fails))
    passed = sum(v == "PASS" for v, _ in verdicts)
    if passed == len(verdicts):
        return ComplianceCheck(test=test, verdict="PASS", detail=f"{passed} of {passed} runs")
    if passed:
        detail = f"run for {passed} of {len(verdicts)} runs only"
        return ComplianceCheck(test=test, verdict="not run", detail=detail)
    detail = f"run `harness compliance {test} RUN` to check it"
    return ComplianceCheck(test=test, verdict="not run", detail=detail)


def _run_verdict(directory: Path) -> tuple[CheckVerdict, str]:
    """One run's verdict of a test: from verdict.json; a directory without one did not pass."""
    if not directory.is_dir():
        return "not run", ""
    if not (directory / VERDICT_FILE).is_file():
        return "FAIL", f"no {VERDICT_FILE}: the test did not finish"
    try:
        passed = read_passed(directory)
    except ResultError as exc:
        return "FAIL", f"unreadable verdict ({exc})"
    where = f"{directory.parent.name}/{directory.name}/{VERDICT_FILE}"
    return ("PASS", "passed") if passed else ("FAIL", f"failed ({where})")
