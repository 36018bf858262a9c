"""The submission tree on disk: built whole in a temporary directory, then renamed into place.

```
<division>/<org>/systems/<system>.json
<division>/<org>/src/README.md
<division>/<org>/results/<system>/<benchmark>/<Scenario>/
    performance/run_1/   mlperf_log_summary.txt, mlperf_log_detail.txt
    accuracy/            LoadGen's logs, mlperf_log_accuracy.json (truncated), accuracy.txt
    TEST01/, TEST04/     when the run has compliance/TEST0x (see COMPLIANCE_FILES)
    measurements.json, user.conf, mlperf.conf, README.md
```
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path

from harness.compliance.verify import read_passed
from harness.errors import ResultError
from harness.files import INCOMPLETE_FILE, atomic_write_bytes, atomic_write_text
from harness.records.job import read_job
from harness.records.layout import (
    ACCURACY_DIR,
    ACCURACY_LOG,
    ACCURACY_TXT,
    BASELINE_ACCURACY,
    COMPLIANCE_ACCURACY,
    COMPLIANCE_DIR,
    DETAIL_LOG,
    JOB_FILE,
    MEASUREMENTS_FILE,
    MLPERF_CONF,
    PERFORMANCE_RUN,
    README_FILE,
    SUMMARY_LOG,
    USER_CONF,
    VERIFY_ACCURACY,
    VERIFY_PERFORMANCE,
)
from harness.submission.accuracy_txt import (
    compliance_accuracy_txt,
    file_sha256,
    render_accuracy_txt,
    truncated_log,
)
from harness.submission.documents import (
    measurements_json,
    result_readme,
    src_readme,
    weights_statement,
)
from harness.submission.plan import COMPLIANCE_TESTS, GENERATIVE_BENCHMARKS, Entry, Plan

# In a run directory, `harness compliance` (harness.compliance.verify) leaves each test in
# COMPLIANCE_DIR: compliance/TEST01/, compliance/TEST04/ (older attempts, TEST0x-N, are not
# exported). A compliance test's files in the run directory -> their place under
# <Scenario>/<TEST0x>/, as MLPerf's run_verification.py lays them out. TEST01's accuracy log
# gets the export's treatment (hash, truncation) separately.
COMPLIANCE_FILES: Mapping[str, str] = {
    VERIFY_ACCURACY: VERIFY_ACCURACY,
    VERIFY_PERFORMANCE: VERIFY_PERFORMANCE,
    SUMMARY_LOG: f"{PERFORMANCE_RUN}/{SUMMARY_LOG}",
    DETAIL_LOG: f"{PERFORMANCE_RUN}/{DETAIL_LOG}",
    # Only when TEST01's outputs differ: the accuracy of both logs, scored alike.
    BASELINE_ACCURACY: f"{ACCURACY_DIR}/{BASELINE_ACCURACY}",
    COMPLIANCE_ACCURACY: f"{ACCURACY_DIR}/{COMPLIANCE_ACCURACY}",
}


def write_tree(plan: Plan, system: Mapping[str, str], out: Path) -> list[str]:
    """Write the tree at ``out``, which must not exist or be empty; return notes for the user.

    Nothing appears at ``out`` unless the whole tree was written.

    Raises:
        ResultError: ``out`` is a file or not empty, or cannot be created; a run directory
            lacks a file the tree needs; a compliance test is incomplete.
    """
    _refuse_existing(out)
    tmp = _temporary_beside(out)
    try:
        notes = _fill(plan, system, tmp)
        _move_into_place(tmp, out)
    except BaseException:  # the partial tree goes on any exit, including Ctrl-C
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return notes


def scenario_dir(root: Path, plan: Plan, entry: Entry) -> Path:
    """A result's directory within a tree rooted at ``root``."""
    return (
        root / plan.division / plan.org / "results" / plan.system / entry.benchmark / entry.scenario
    )


def _fill(plan: Plan, system: Mapping[str, str], root: Path) -> list[str]:
    org = root / plan.division / plan.org
    atomic_write_text(org / "systems" / f"{plan.system}.json", json.dumps(system, indent=2) + "\n")
    atomic_write_text(org / "src" / README_FILE, src_readme(plan))
    notes: list[str] = []
    for entry in plan.entries:
        notes += _write_result(plan, entry, scenario_dir(root, plan, entry))
    return notes


def compliance_verdicts(plan: Plan, entry: Entry) -> dict[str, bool]:
    """Each compliance test the run has for the export, to whether it passed.

    Raises:
        ResultError: a test failed and the division is closed.
    """
    run = entry.run_dir
    return {
        test: _compliance_verdict(source, plan.division)
        for test in COMPLIANCE_TESTS.get(entry.benchmark, ())
        if (source := run / COMPLIANCE_DIR / test).is_dir()
    }


def _write_result(plan: Plan, entry: Entry, target: Path) -> list[str]:
    run = entry.run_dir
    job = read_job(run / JOB_FILE)
    for name in (SUMMARY_LOG, DETAIL_LOG):
        _copy(run / name, target / PERFORMANCE_RUN / name, run)
    statement = weights_statement(job, plan.real_weights)
    _write_accuracy(entry, target / ACCURACY_DIR, statement)
    for name in (USER_CONF, MLPERF_CONF):
        _copy(run / name, target / name, run)
    atomic_write_text(target / MEASUREMENTS_FILE, measurements_json(entry, job, plan.real_weights))
    notes = []
    verdicts = compliance_verdicts(plan, entry)
    for test in COMPLIANCE_TESTS.get(entry.benchmark, ()):
        if test in verdicts:
            _write_compliance(run / COMPLIANCE_DIR / test, target / test)
            if not verdicts[test]:
                notes.append(
                    f"{entry.benchmark} {entry.scenario}: compliance {test} FAILED (see "
                    f"{test}/{VERIFY_PERFORMANCE}); exported because the open division does "
                    f"not require compliance, and said so in its {README_FILE}"
                )
        elif plan.division == "closed":
            notes.append(
                f"{entry.benchmark} {entry.scenario}: {run} has no {COMPLIANCE_DIR}/{test}; "
                f"MLPerf's checker reports it missing (run `harness compliance {test} {run}`)"
            )
    atomic_write_text(target / README_FILE, result_readme(entry, job, plan, verdicts))
    if entry.quick:
        notes.append(f"{entry.benchmark} {entry.scenario}: a quick-profile run, labelled as such")
    return notes


def _write_accuracy(entry: Entry, target: Path, statement: str | None) -> None:
    source = entry.run_dir / ACCURACY_DIR
    for name in (SUMMARY_LOG, DETAIL_LOG):
        _copy(source / name, target / name, entry.run_dir)
    log = _existing(source / ACCURACY_LOG, entry.run_dir)
    digest = file_sha256(log)
    atomic_write_bytes(target / ACCURACY_LOG, truncated_log(log))
    text = render_accuracy_txt(
        entry.result.accuracy,
        digest,
        statement,
        generative=entry.benchmark in GENERATIVE_BENCHMARKS,
    )
    atomic_write_text(target / ACCURACY_TXT, text)


def _compliance_verdict(source: Path, division: str) -> bool:
    """Whether the test in `source` passed; a failed one is refused in the closed division."""
    if (source / INCOMPLETE_FILE).exists():
        return False  # _write_compliance refuses it, naming its cause
    passed = read_passed(source)
    if not passed and division == "closed":
        raise ResultError(
            f"{source}: compliance {source.name} failed (see its {VERIFY_PERFORMANCE}); a "
            f"closed submission needs it to pass: run `harness compliance {source.name} "
            f"{source.parent.parent}` again on a quiet machine, or export to the open division"
        )
    return passed


def _write_compliance(source: Path, target: Path) -> None:
    incomplete = source / INCOMPLETE_FILE
    if incomplete.exists():
        cause = incomplete.read_text(encoding="utf-8").strip().splitlines()[:1]
        raise ResultError(
            f"{source}: the compliance test is incomplete ({cause[0] if cause else 'no cause'}); "
            "run it again"
        )
    for name, place in COMPLIANCE_FILES.items():
        if (source / name).is_file():  # a file the test did not leave stays missing
            _copy(source / name, target / place, source)
    log = source / ACCURACY_LOG
    if source.name == "TEST01" and log.is_file():
        atomic_write_bytes(target / ACCURACY_DIR / ACCURACY_LOG, truncated_log(log))
        atomic_write_text(
            target / ACCURACY_DIR / ACCURACY_TXT, compliance_accuracy_txt(file_sha256(log))
        )


def _existing(path: Path, run: Path) -> Path:
    if not path.is_file():
        raise ResultError(f"{path}: missing; {run} is not a complete run directory (run it again)")
    return path


def _copy(source: Path, target: Path, run: Path) -> None:
    try:
        data = _existing(source, run).read_bytes()
    except OSError as exc:
        raise ResultError(f"{source}: cannot read it ({exc.strerror})") from None
    atomic_write_bytes(target, data)


def _refuse_existing(out: Path) -> None:
    if out.is_file() or out.is_symlink():
        raise ResultError(f"{out}: is a file; pass a new directory as --out")
    if out.is_dir() and any(out.iterdir()):
        raise ResultError(
            f"{out}: exists and is not empty; a submission tree is never overwritten, "
            "pass a new --out"
        )


def _temporary_beside(out: Path) -> Path:
    """A new directory next to ``out`` (same filesystem: the final rename is atomic).

    Made with mkdir, not mkdtemp, so that it gets the umask's mode rather than 0700.
    """
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):
            tmp = out.parent / f".{out.name}.{secrets.token_hex(4)}.tmp"
            try:
                tmp.mkdir()
            except FileExistsError:
                continue
            return tmp
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ResultError(
            f"{out.parent}: cannot create the tree there ({reason}); pass a writable --out"
        ) from None
    raise ResultError(f"{out.parent}: could not find a free temporary name; pass another --out")


def _move_into_place(tmp: Path, out: Path) -> None:
    try:
        os.rename(tmp, out)  # replaces an empty directory; fails on anything else
    except OSError as exc:
        raise ResultError(
            f"{out}: cannot put the tree there ({exc.strerror}); pass a new --out"
        ) from None
