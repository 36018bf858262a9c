"""The facts beside a result that say how far to trust it, read from its files.

Compliance verdicts (RUN/compliance/TEST0x/verdict.json), a reproduction's verdict
(reproduction.json in its group), a group's INCOMPLETE marker, the bundle a result was opened
from, and each run's physics check where its result records one. harness.analysis.trust
builds the one Trust record of them; show, report, compare and the site all call `trust_of`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from harness.analysis.trust import group_trust, published_trust
from harness.compliance.rules import required_tests
from harness.compliance.verify import read_passed
from harness.errors import ResultError
from harness.files import read_incomplete
from harness.inspect.opener import Opened, Side
from harness.records.group import Group
from harness.records.job import COMPLIANCE_TESTS
from harness.records.layout import REPRODUCTION_FILE, VERDICT_FILE, compliance_dir
from harness.records.published import PublishedResult
from harness.records.result import RunResult
from harness.records.trust import (
    BundleCheck,
    CheckVerdict,
    ComplianceCheck,
    Plausibility,
    ReproductionCheck,
    Trust,
    TrustFacts,
)
from harness.reproduce.record import read_reproduction
from harness.reproduce.verdict import Reproduction

# Reproduction verdicts by the resolved path of what they reproduced (a run, group, bundle).
Reproductions = Mapping[Path, ReproductionCheck]


def trust_of(side: Side, opened: Opened | None = None, found: Reproductions | None = None) -> Trust:
    """The side's trust: its files' facts, the bundle it was opened from, a verdict about it.

    `found`: reproductions of other results (the site's whole tree), by what they reproduced.
    """
    bundle = bundle_check(opened)
    if isinstance(side, PublishedResult):
        facts = TrustFacts(bundle=bundle, compliance=published_compliance(side))
        return published_trust(side, facts)
    own = reproduction_check(side.path)
    about = None
    if found:
        sources = [side.path, *([opened.path] if opened is not None else [])]
        about = next((found[p.resolve()] for p in sources if p.resolve() in found), None)
    facts = TrustFacts(
        bundle=bundle,
        compliance=group_compliance(side),
        reproduction=about or own,
        incomplete=_marker(side),
        plausibility=tuple(plausibility_of(r) for r in side.results),
    )
    return group_trust(side, facts)


def bundle_check(opened: Opened | None) -> BundleCheck | None:
    """What opening a bundle checked: its signature and files (always), its signer's key."""
    if opened is None or opened.bundle is None:
        return None
    b = opened.bundle
    return BundleCheck(
        name=opened.path.name, verified=b.verified, signer=b.signer_fingerprint, trusted=b.trusted
    )


def group_compliance(group: Group) -> tuple[ComplianceCheck, ...]:
    """TEST01 and TEST04 over the group's runs: FAIL if any failed, PASS only if all passed."""
    if not group.results:
        return ()
    tests = required_tests(group.results[0].loadgen_config.model_key)
    pairs = list(zip(group.runs.run_dirs, group.results, strict=True))
    ran = {t for d, _ in pairs for t in COMPLIANCE_TESTS if compliance_dir(d, t).is_dir()}
    return tuple(_compliance(test, [d for d, _ in pairs]) for test in _ordered({*tests, *ran}))


def _ordered(tests: Iterable[str]) -> list[str]:
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


def published_compliance(record: PublishedResult) -> tuple[ComplianceCheck, ...]:
    """The published record's TEST verdicts where it states them; else each "unknown"."""
    stated = getattr(record, "compliance", None)  # added by the published import, if present
    tests = _ordered(required_tests(record.model))
    if not isinstance(stated, Mapping):
        return tuple(
            ComplianceCheck(test=t, verdict="unknown", detail="not in the record") for t in tests
        )
    out = []
    for test in _ordered({*tests, *(str(k) for k in stated)}):
        value = stated.get(test)
        verdict: CheckVerdict = (
            "PASS"
            if value in (True, "PASS", "passed")
            else "FAIL"
            if value in (False, "FAIL", "failed")
            else "unknown"
        )
        out.append(
            ComplianceCheck(test=test, verdict=verdict, detail="as the published tree states")
        )
    return tuple(out)


def reproduction_check(group_dir: Path) -> ReproductionCheck | None:
    """The verdict a reproduction group holds about what it reproduced, or None."""
    reproduction = read_reproduction_of(group_dir)
    return None if reproduction is None else as_check(reproduction)


def read_reproduction_of(group_dir: Path) -> Reproduction | None:
    """reproduction.json in a group, read; None where there is none or it cannot be read."""
    path = group_dir / REPRODUCTION_FILE
    if not path.is_file():
        return None
    try:
        return read_reproduction(path)
    except ResultError:
        return None


def as_check(rep: Reproduction) -> ReproductionCheck:
    """A reproduction's verdict in one line: the ratio and tolerance, or its first reason."""
    ratio = (
        "" if rep.ratio is None else f"ratio {rep.ratio:.3f} (tolerance {rep.tolerance * 100:g} %)"
    )
    why = rep.reasons[0] if rep.reasons else ""
    of = rep.bundle.path if rep.bundle is not None else rep.recorded_path
    signer = ""
    if rep.bundle is not None:
        trusted = "trusted" if rep.bundle.trusted else "NOT checked"
        signer = f", bundle signer {rep.bundle.signer_fingerprint[:16]} {trusted}"
    parts = [p for p in (ratio, why) if p]
    return ReproductionCheck(
        verdict=rep.verdict, detail=f"of {Path(of).name}: {'; '.join(parts)}{signer}"
    )


def reproductions_in(groups: Iterable[Group]) -> dict[Path, ReproductionCheck]:
    """Each reproduction group's verdict by the resolved path of what it reproduced."""
    found: dict[Path, ReproductionCheck] = {}
    for group in groups:
        rep = read_reproduction_of(group.path)
        if rep is not None:
            source = rep.bundle.path if rep.bundle is not None else rep.recorded_path
            found[Path(source).resolve()] = as_check(rep)
    return found


def plausibility_of(result: RunResult) -> Plausibility | None:
    """The run's physics check where its result records one (`plausibility`), else None."""
    recorded = getattr(result, "plausibility", None)
    if recorded is None:
        return None
    verdict = str(getattr(recorded, "verdict", recorded))
    reason = str(getattr(recorded, "reason", "") or "; ".join(getattr(recorded, "reasons", ())))
    if verdict.upper() == "IMPLAUSIBLE":
        return Plausibility(verdict="IMPLAUSIBLE", reason=reason)
    if verdict.lower() in ("plausible", "ok", "passed"):
        return Plausibility(verdict="plausible", reason=reason)
    return Plausibility(verdict="unknown", reason=reason)


def _marker(group: Group) -> str | None:
    """The cause a group's own INCOMPLETE marker gives (a trials group or sweep stopped)."""
    if group.kind == "run":
        return None
    found = read_incomplete(group.path)
    return None if found is None else found.cause
