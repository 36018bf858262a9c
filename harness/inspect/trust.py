"""The facts beside a result that say how far to trust it, read from its files.

Compliance verdicts (RUN/compliance/TEST0x/verdict.json), a reproduction's verdict
(reproduction.json in its group), a group's INCOMPLETE marker, the bundle a result was opened
from, and each run's physics check where its result records one. harness.analysis.trust
builds the one Trust record of them; show, report, compare and the site all call `trust_of`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from harness.analysis.trust import group_trust, plausibility_of, published_trust
from harness.compliance.rules import required_tests
from harness.compliance.summary import group_compliance, ordered
from harness.errors import ResultError
from harness.files import read_incomplete
from harness.inspect.opener import Opened, Side
from harness.records.group import Group
from harness.records.layout import REPRODUCTION_FILE
from harness.records.published import PublishedResult
from harness.records.trust import (
    BundleCheck,
    CheckVerdict,
    ComplianceCheck,
    ReproductionCheck,
    Trust,
    TrustFacts,
)
from harness.reproduce.record import read_reproduction
from harness.reproduce.verdict import Reproduction

# How a caller judges a side it opened (trust_of, or a test's own).
Judge = Callable[[Side, Opened | None], Trust]


def trust_of(side: Side, opened: Opened | None = None) -> Trust:
    """The side's trust: its files' facts and the bundle it was opened from (`opened`)."""
    bundle = bundle_check(opened)
    if isinstance(side, PublishedResult):
        facts = TrustFacts(bundle=bundle, compliance=published_compliance(side))
        return published_trust(side, facts)
    facts = TrustFacts(
        bundle=bundle,
        compliance=group_compliance(side),
        reproduction=reproduction_check(side.path),
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


def published_compliance(record: PublishedResult) -> tuple[ComplianceCheck, ...]:
    """The published record's TEST verdicts as its tree states them; "unknown" where not.

    The tests the benchmark needs come first; a record imported before the verdicts were
    read (published.json before version 3) states none.
    """
    stated = {c.test: c for c in record.compliance}
    out = []
    for test in ordered({*required_tests(record.model), *stated}):
        found = stated.get(test)
        if found is None:
            out.append(ComplianceCheck(test=test, verdict="unknown", detail="not in the tree"))
            continue
        verdict: CheckVerdict = (
            "unknown" if found.passed is None else "PASS" if found.passed else "FAIL"
        )
        out.append(ComplianceCheck(test=test, verdict=verdict, detail=found.verdict))
    return tuple(out)


def reproduction_check(group_dir: Path) -> ReproductionCheck | None:
    """The verdict a reproduction group holds about what it reproduced, or None.

    A reproduction.json this version cannot read is shown as such, never passed over.
    """
    path = group_dir / REPRODUCTION_FILE
    if not path.is_file():
        return None
    try:
        return as_check(read_reproduction(path))
    except ResultError as exc:
        return ReproductionCheck(verdict=f"unreadable {REPRODUCTION_FILE}", detail=str(exc))


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


def _marker(group: Group) -> str | None:
    """The cause a group's own INCOMPLETE marker gives (a trials group or sweep stopped)."""
    if group.kind == "run":
        return None
    found = read_incomplete(group.path)
    return None if found is None else found.cause
